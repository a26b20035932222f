"""Shared test fixtures: the real data in ../shared, and scratch workspaces."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("VERIBENCH_SHARED", REPO.parent / "shared"))

# Tests never touch a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The read-only ``shared/`` folder beside the checkout (real corpora, cases, specs)."""
    if not SHARED.is_dir():
        pytest.fail(f"shared data folder not found at {SHARED}; set VERIBENCH_SHARED")
    return SHARED


@pytest.fixture(scope="session")
def data_dir(shared_dir: Path) -> Path:
    return shared_dir / "data"


@pytest.fixture(scope="session")
def cases_dir(shared_dir: Path) -> Path:
    return shared_dir / "cases"


@pytest.fixture()
def workspace(tmp_path: Path):
    """A fresh, empty workspace in a temporary folder."""
    from veribench.store import Workspace

    ws = Workspace(tmp_path / "ws")
    yield ws
    ws.close()
