"""Fixtures for the report tests: the real Liang et al. (2023) run, the two shared
HumanizerBench cycles, and the site built from them (once per session)."""

from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from veribench.cli.main import app


def _import_liang(ws_dir: Path, liang_dir: Path) -> None:
    """``veribench import liang2023 DIR --workspace WS``."""
    r = CliRunner().invoke(app, ["import", "liang2023", str(liang_dir), "--workspace", str(ws_dir)])
    assert r.exit_code == 0, r.output


@contextmanager
def _shared(tmp_path_factory, name: str):
    """A folder shared by all pytest-xdist workers of this session, built by the first one
    (under a file lock); yields (path, already_built)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # .../pytest-N/popen-gwK -> .../pytest-N, common to the session's workers
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            path = root / name
            done = path / ".complete"
            yield path, done.exists()
            done.parent.mkdir(parents=True, exist_ok=True)
            done.touch()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def liang_ws(tmp_path_factory, liang_dir) -> Path:
    """A workspace holding the Liang corpus and one evaluation run of it (``veribench evaluate``)."""
    with _shared(tmp_path_factory, "report-liang") as (root, built):
        ws = root / "ws"
        if not built:
            _build_liang(ws, liang_dir)
    return ws


def _build_liang(ws: Path, liang_dir: Path) -> None:
    _import_liang(ws, liang_dir)
    r = CliRunner().invoke(app, ["evaluate", "--workspace", str(ws), "--json", str(ws.parent / "out.json"),
                                 "--no-score", "--quiet"])
    assert r.exit_code == 0, r.output


@pytest.fixture(scope="session")
def cycles_dir(data_dir) -> Path:
    return data_dir / "humanizerbench"


@pytest.fixture(scope="session")
def site(tmp_path_factory, liang_ws, cycles_dir) -> Path:
    """The report of the Liang run and both shared cycles, built through the CLI."""
    with _shared(tmp_path_factory, "report-site") as (root, built):
        out = root / "report"
        if not built:
            r = CliRunner().invoke(app, ["report", "-w", str(liang_ws), str(cycles_dir), "--out", str(out)])
            assert r.exit_code == 0, r.output
    return out


def _cli(args: list[str]) -> str:
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r.output


#: The cheap attacks the demo adds (issue 13), on the fast-detect-gpt AI texts.
DEMO_ATTACKS = ("homoglyph", "zero_width_space", "article_deletion")


@pytest.fixture(scope="session")
def demo_ws(tmp_path_factory) -> Path:
    """The demo, as a user runs it: ``veribench demo --no-models`` (the Liang essays with seven
    commercial detectors' recorded outputs, the fast-detect-gpt pairs, ZipPy run locally, under
    the bundled committed protocol), then three cheap attacks on the fast-detect-gpt AI texts
    and ``veribench evaluate`` again under the same protocol, which scores them."""
    with _shared(tmp_path_factory, "report-demo") as (root, built):
        ws = root / "ws"
        if not built:
            _cli(["demo", "--workspace", ws, "--out", root / "demo-out", "--no-models"])
            for a in DEMO_ATTACKS:
                _cli(["attack", a, "--workspace", ws, "--corpus", "fastdetectgpt", "--label", "ai", "--seed", "1"])
            from veribench.cli.demo import demo_data_dir

            name = json.loads((root / "demo-out" / "results.json").read_text())["run"]["protocol"]["path"]
            _cli(["evaluate", "--workspace", ws, "--protocol", demo_data_dir() / "protocols" / name, "--quiet"])
    return ws


@pytest.fixture(scope="session")
def demo_out(demo_ws) -> Path:
    """The report folder ``veribench demo --no-models`` wrote (before the extra attacks and
    evaluation of :func:`demo_ws`): the report site, with the tables beside it."""
    return demo_ws.parent / "demo-out"


@pytest.fixture(scope="session")
def demo_results(tmp_path_factory, demo_ws) -> Path:
    """The demo run's results with the issue-14/18 keys computed from its stored rows
    (``phase2.augment``; the Liang TOEFL against US-essay gap declared as in docs/statistics.md)."""
    from tests.report.phase2 import LIANG_GAP, augment
    from veribench.evaluate import latest_run
    from veribench.store import Workspace

    with _shared(tmp_path_factory, "report-demo-stats") as (root, built):
        f = root / "demo-stats.json"
        if not built:
            root.mkdir(parents=True, exist_ok=True)
            with Workspace(demo_ws, read_only=True) as ws:
                res = latest_run(ws)
                # evaluate writes the issue-14/18 keys itself (the demo protocol declares the
                # Liang gap); phase2 fills them only for a run recorded without them
                if not res.get("gaps"):
                    res = augment(ws, res, gaps=[LIANG_GAP])
                f.write_text(json.dumps(res), encoding="utf-8")
    return f


@pytest.fixture(scope="session")
def demo_site(tmp_path_factory, demo_ws, demo_results, cycles_dir) -> Path:
    """The report of the demo workspace, of its results with the statistics keys, and of both
    shared cycles, built through the CLI."""
    with _shared(tmp_path_factory, "report-demo-site") as (root, built):
        out = root / "report"
        if not built:
            _cli(["report", demo_results, "-w", demo_ws, cycles_dir, "--out", out])
    return out
