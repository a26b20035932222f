"""``veribench publish`` writes into a staging folder and renames it into place; a publish killed
midway leaves ``.<out>.publishing-<pid>`` behind, and the next ``publish`` removes it - only
when its process is gone, never the staging folder of a publish still running (issue 24, item 13).

The killed publish is a real process (``python -c``, the CLI's own ``app``) stopped with
SIGKILL from here while it writes its tables: no cleanup of any kind runs in it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bundles.bundle_helpers import verify
from tests.processes import child, sigkill

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process ids and SIGKILL are POSIX")

#: A publish whose tables step announces the staging folder, then waits to be killed.
STALLED = """
import sys, time
from veribench.bundles import publish as p
from veribench.cli.main import app

def stall(results, stage):
    print(stage, flush=True)
    time.sleep(600)

p.write_outputs = stall
app(["publish", "--workspace", sys.argv[1], "--run", "LIANG-BUNDLE-2", "--out", sys.argv[2], "--no-progress"])
"""

SRC = Path(__file__).resolve().parents[2] / "src"


def _killed_publish(ws: Path, out: Path) -> Path:
    """Start a publish of ``ws`` to ``out`` in another process, kill it (SIGKILL) once it is
    writing into its staging folder; returns that folder (left behind)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    with child([sys.executable, "-c", STALLED, str(ws), str(out)], env) as p:
        assert p.stdout is not None
        line = p.stdout.readline().strip()
        assert line, p.stderr.read() if p.stderr else ""
        stage = Path(line)
        assert stage.is_dir() and stage.name == f".{out.name}.publishing-{p.pid}", stage
        sigkill(p)
    return stage


def test_a_killed_publish_leaves_staging_that_the_next_publish_removes(liang_built, cli_run, tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(liang_built[0], ws)
    site = tmp_path / "site"
    site.mkdir()
    (site / "LICENSE").write_text("CC BY 4.0\n", encoding="utf-8")
    first = _killed_publish(ws, site / "q4")
    assert (first / "log/events.jsonl").is_file() and not (first / "manifest.json").exists()  # killed midway
    assert not (site / "q4").exists()
    # the next publish (killed too) already removes the first one's leftover
    second = _killed_publish(ws, site / "q4-again")
    assert not first.exists() and second.is_dir()
    # a publish still running (a live process of this machine) keeps its staging folder
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        running = site / f".q4-other.publishing-{alive.pid}"
        (running / "log").mkdir(parents=True)
        (site / f".q4-link.publishing-{2**22 + 7}").symlink_to(running)  # a link is never a staging folder
        # named like a leftover of a process that is gone (ids above Linux's pid_max), but holding
        # something publish never writes: kept, and said
        mine = site / f".thesis.publishing-{2**22 + 9}"
        (mine / "log").mkdir(parents=True)
        (mine / "thesis.docx").write_bytes(b"PK\x03\x04 draft")
        code, out = cli_run("publish", "--workspace", ws, "--run", "LIANG-BUNDLE-2", "--out", site / "q4",
                            "--no-progress")
        assert code == 0, out
        pid = second.name.rsplit("-", 1)[1]
        assert not second.exists()
        assert f"note: removed {second}, the staging folder of publish process {pid}, which is gone" in out, out
        assert (running / "log").is_dir() and str(running) not in out
        assert (site / f".q4-link.publishing-{2**22 + 7}").is_symlink()
        assert (mine / "thesis.docx").read_bytes() == b"PK\x03\x04 draft"
        assert f"note: kept {mine}: named like a staging folder of publish process {2**22 + 9}" in out, out
        assert (site / "LICENSE").read_text(encoding="utf-8") == "CC BY 4.0\n"
        assert sorted(x.name for x in site.iterdir()) == sorted(
            ["LICENSE", "q4", running.name, f".q4-link.publishing-{2**22 + 7}", mine.name])
    finally:
        alive.kill()
        alive.wait()
    assert verify(site / "q4").ok
    # the next publish also removes what the now-finished process left
    code, out = cli_run("publish", "--workspace", ws, "--run", "LIANG-BUNDLE-2", "--out", site / "q4-b",
                        "--no-progress")
    assert code == 0 and f"note: removed {running}" in out and not running.exists(), out


def test_a_failed_publish_removes_its_own_staging_folder(liang_built, cli_run, tmp_path, monkeypatch):
    """A publish that fails (not killed) removes its staging folder itself and writes no bundle."""
    from veribench.bundles import publish as p

    def broken(results, stage):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(p, "write_outputs", broken)
    from veribench.store import Workspace

    out = tmp_path / "q4"
    with Workspace(liang_built[0]) as w, pytest.raises(OSError):
        p.publish(w, "LIANG-BUNDLE-2", out)
    assert list(tmp_path.iterdir()) == []
