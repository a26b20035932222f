"""Shared test fixtures: the real data kept in this repository, and scratch workspaces.

Every test runs from a fresh clone with nothing beside it. The data the tests read lives
in ``tests/data/`` (cases, HumanizerBench cycles, fast-detect-gpt sets; see
``tests/data/ATTRIBUTION.md``) and in the demo corpora shipped as package data
(``src/veribench/data/demo/``, see its ``ATTRIBUTION.md``). A
``shared/`` folder beside the checkout is never needed; ``shared_extra`` yields it only
when it exists (``VERIBENCH_EXTRA_DATA`` to put it elsewhere), for optional extra checks.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TEST_DATA = REPO / "tests" / "data"
DEMO_DATA = REPO / "src" / "veribench" / "data" / "demo"
OPTIONAL_SHARED = Path(os.environ.get("VERIBENCH_EXTRA_DATA", REPO.parent.joinpath("shared")))

# Tests never touch a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Converted model checkpoints (SmolLM2's GGUF de-quantised once) go to a cache folder of
# the test runs, never the user's own cache; it is kept between runs (safe to delete).
# Timed progress lines ("verify: working, 6 s") come every few seconds, so on a loaded
# machine they would land in the output a test reads, and only there (a class of flaky
# failure seen in CI at load 12). Tests run with one line a day; the tests of the lines set
# their own interval.
os.environ.setdefault("VERIBENCH_PROGRESS_INTERVAL", "86400")
os.environ.setdefault("VERIBENCH_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"veribench-test-cache-{os.getuid()}"))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """Real corpora kept in the repository: ``fastdetectgpt/`` (five full sets) and
    ``humanizerbench/`` (the June and July 2026 cycles)."""
    return TEST_DATA


@pytest.fixture(scope="session")
def cases_dir() -> Path:
    """The cases behind shipped failures (``tests/data/cases/README.md``)."""
    return TEST_DATA / "cases"


@pytest.fixture(scope="session")
def liang_dir() -> Path:
    """The Liang et al. 2023 layout (``Human_Data/``, ``GPT_Data/``), shipped as demo package data."""
    return DEMO_DATA / "liang2023"


@pytest.fixture(scope="session")
def demo_data() -> Path:
    """The demo data shipped in the package: ``liang2023/``, ``fastdetectgpt/``, ``protocols/``."""
    return DEMO_DATA


@pytest.fixture(scope="session")
def shared_extra() -> Path:
    """The optional ``shared/`` folder beside the checkout; skips when it is absent."""
    if not OPTIONAL_SHARED.is_dir():
        pytest.skip(f"optional extra: no shared/ folder at {OPTIONAL_SHARED}")
    return OPTIONAL_SHARED


@pytest.fixture()
def workspace(tmp_path: Path):
    """A fresh, empty workspace in a temporary folder."""
    from veribench.store import Workspace

    ws = Workspace(tmp_path / "ws")
    yield ws
    ws.close()
