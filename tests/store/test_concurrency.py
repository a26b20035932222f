"""Workspaces shared by several commands (docs/concurrency.md), with real processes.

- A second writer gets one line naming the process that holds the workspace, never a
  ``_duckdb.IOException`` traceback; once the holder is gone the same command works.
- ``veribench rate serve`` runs as a real server process while editors submit readings over
  HTTP, and at the same time ``rate results``, ``rate export``, ``rate editors add``,
  ``report``, ``export scores`` and even an import (a DuckDB writer) all succeed.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src"), "VERIBENCH_LOCK_WAIT": "0.5"}
CLI = [sys.executable, "-m", "veribench.cli.main"]


def run(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=ENV, timeout=timeout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


HOLD = """
import sys, time
from veribench.store import Workspace
ws = Workspace(sys.argv[1])
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
ws.close()
"""


def test_second_writer_gets_one_line_naming_the_holder(tmp_path):
    ws = tmp_path / "ws"
    doc = tmp_path / "d.jsonl"
    doc.write_text(json.dumps({"id": "a", "text": "Some text here.", "label": "human"}) + "\n")
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(ws), "60"], stdout=subprocess.PIPE, text=True,
                              env=ENV)
    try:
        assert holder.stdout.readline().strip() == "holding"
        for args in (["import", "jsonl", str(doc), "-w", str(ws)],  # a writer
                     ["export", "scores", "-o", str(tmp_path / "s.csv"), "-w", str(ws)]):  # a reader
            p = run(*args)
            assert p.returncode == 1, (args, p.stdout, p.stderr)
            lines = [x for x in p.stderr.splitlines() if x.strip()]
            assert len(lines) == 1 and "Traceback" not in p.stderr and "IOException" not in p.stderr, p.stderr
            assert f"is in use by process {holder.pid}" in lines[0]
            assert "-c" in lines[0] and "docs/concurrency.md" in lines[0]
    finally:
        holder.kill()
        holder.wait()
    p = run("import", "jsonl", str(doc), "-w", str(ws), "-q")
    assert p.returncode == 0, p.stderr


def test_holder_named_as_a_veribench_command(tmp_path):
    """When a veribench command holds the workspace, the message shows its command line."""
    from veribench.store.workspace import _holder

    msg = f'IO Error: Could not set lock on file "x": Conflicting lock is held in /usr/bin/python3 (PID {os.getpid()})'
    me = _holder(msg)
    assert me.startswith(f"process {os.getpid()} (")
    assert _holder("no pid here") == "another process"


@pytest.fixture()
def served(tmp_path, liang_dir, data_dir):
    """A workspace with the Liang corpus and a July 2026 rubric load, served by `veribench rate serve`."""
    from veribench.corpus.importers import import_liang2023
    from veribench.rubric import loaders, store
    from veribench.store import Workspace

    ws = tmp_path / "ws"
    with Workspace(ws) as w:
        import_liang2023(w, liang_dir)
    db = store.open_rubric(ws)
    toks = {e: store.add_editor(db, e) for e in ("alice", "bob")}
    store.add_pairs(db, loaders.pairs_from_cycle(data_dir / "humanizerbench" / "July 2026", 6)[0])
    store.ensure_assignments(db)
    db.close()
    port = free_port()
    srv = subprocess.Popen([*CLI, "rate", "serve", "-w", str(ws), "--port", str(port)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=ENV)
    url = f"http://127.0.0.1:{port}"
    t0 = time.time()
    while True:
        try:
            if httpx.get(f"{url}/login", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert srv.poll() is None, srv.stderr.read()
        assert time.time() - t0 < 60, "server did not start"
        time.sleep(0.1)
    yield ws, url, toks, srv
    srv.terminate()
    srv.wait(timeout=30)


def test_commands_work_while_the_rating_app_serves(served, tmp_path):
    ws, url, toks, srv = served
    errors: list[str] = []
    done = []

    def editor(name: str) -> None:
        h = {"authorization": f"Bearer {toks[name]}"}
        try:
            with httpx.Client(base_url=url, headers=h, timeout=60) as c:
                for a in c.get("/api/assignments").json()["assignments"]:
                    r = c.post(f"/api/read/{a['blind_id']}", json={"claims": ["one", "two"], "found": [0, 1],
                                                                    "score": 4 if name == "alice" else 5})
                    if r.status_code != 200:
                        errors.append(f"{name}: {r.status_code} {r.text}")
                    done.append(name)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(f"{name}: {e!r}")

    readers = [threading.Thread(target=editor, args=(e,)) for e in toks]
    for t in readers:
        t.start()
    # while the editors submit: every other command, each in its own process
    doc = tmp_path / "more.jsonl"
    doc.write_text(json.dumps({"id": "new-1", "text": "A new text imported while the app serves.",
                               "label": "human"}) + "\n")
    cmds = {
        "rate results": ["rate", "results", "-w", str(ws), "--format", "json"],
        "rate export": ["rate", "export", "-w", str(ws), "--out", str(tmp_path / "ratings.csv")],
        "export scores": ["export", "scores", "-w", str(ws), "-o", str(tmp_path / "scores.csv")],
        "report": ["report", "-w", str(ws), "-o", str(tmp_path / "site"), "--no-verify"],
        "import (a DuckDB writer)": ["import", "jsonl", str(doc), "-w", str(ws), "-q"],
        "rate editors add": ["rate", "editors", "add", "carol", "-w", str(ws)],
    }
    out = {}
    for name, args in cmds.items():
        p = run(*args)
        assert p.returncode == 0, (name, p.stdout, p.stderr)
        assert "Traceback" not in p.stderr
        out[name] = p
    for t in readers:
        t.join(timeout=120)
    assert not errors, errors
    assert srv.poll() is None  # still serving
    res = json.loads(out["rate results"].stdout)
    assert res["overall"]["outputs"] == 6
    assert (tmp_path / "ratings.csv").read_text().startswith("blind_id,")
    assert (tmp_path / "site" / "index.html").is_file()
    assert len((tmp_path / "scores.csv").read_text().splitlines()) == 1 + 490 * 7  # documents x detectors
    # the editor added by another process signs in on the running server at once
    carol = out["rate editors add"].stdout.strip().splitlines()[-1]
    r = httpx.get(f"{url}/api/assignments", headers={"authorization": f"Bearer {carol}"})
    assert r.status_code == 200 and r.json()["editor"] == "carol"
    # after the readings: results and the report see all twelve
    p = run("rate", "results", "-w", str(ws), "--format", "json")
    doc = json.loads(p.stdout)
    assert doc["overall"]["outputs_complete"] == 6 and sum(t["reads"] for t in doc["tools"]) == 12
    p = run("report", "-w", str(ws), "-o", str(tmp_path / "site2"), "--no-verify")
    assert p.returncode == 0, p.stderr
    ratings = json.loads(next((tmp_path / "site2" / "data").glob("ratings-*.json")).read_text())
    assert sum(r["reads"] for r in ratings["rows"]) == 12
    # the server never held the DuckDB file: a writer opens it while it still serves
    from veribench.store import Workspace

    with Workspace(ws, wait=0) as w:
        assert w.query("SELECT count(*) FROM documents WHERE doc_id = 'new-1'") == [(1,)]
