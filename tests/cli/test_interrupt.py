"""Ctrl-C in any command: one line that says what is kept, exit code 130, no traceback;
also when it lands inside a DuckDB query (DuckDB then raises its own error, and the
clean-up after it another), and what the line says is true of the command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
import typer
from typer.testing import CliRunner

from veribench.cli import grammar
from veribench.cli.common import friendly_errors
from veribench.cli.main import COMMANDS, app
from veribench.store.sql import arrow_view

HERE = Path(__file__).resolve().parent
RAID = HERE.parent / "data" / "public" / "raid" / "train.csv"


def test_ctrl_c_gives_one_line_and_exit_130(capsys):
    @friendly_errors
    def cmd() -> None:
        raise KeyboardInterrupt

    with pytest.raises(typer.Exit) as e:
        cmd()
    assert e.value.exit_code == 130
    err = capsys.readouterr().err.strip()
    assert err.startswith("interrupted:") and "\n" not in err and "Traceback" not in err


def _interrupted_in_a_transaction() -> BaseException:
    """DuckDB's own exceptions for a query interrupted inside a transaction, then a view
    unregistered after it (``store.sql.arrow_view``'s ``finally``): the second one, whose
    context is the first."""
    con = duckdb.connect()
    con.execute("BEGIN")
    done = threading.Event()

    def interrupt() -> None:  # until the query ends (an interrupt before it starts does nothing)
        while not done.wait(0.05):
            con.interrupt()

    try:
        with arrow_view(con, pa.table({"x": [1]})) as view:
            threading.Thread(target=interrupt, daemon=True).start()
            con.execute(f"SELECT count(*) FROM {view} t, range(1000000000000) r WHERE r.range + t.x < 0")
    except Exception as e:
        return e
    finally:
        done.set()
        con.close()
    raise AssertionError("the query was not interrupted")


def test_a_duckdb_interrupt_is_an_interrupt():
    e = _interrupted_in_a_transaction()
    assert type(e).__name__ == "TransactionException" and "aborted" in str(e), repr(e)
    assert type(e.__context__).__name__ == "InterruptException", repr(e.__context__)
    assert grammar.is_interrupt(e) and grammar.is_interrupt(e.__context__)
    # SIGINT inside a query: DuckDB raises RuntimeError("Query interrupted"), and the
    # clean-up after it fails with the interrupt as its context (the reported traceback)
    query = RuntimeError("Query interrupted")
    cleanup = duckdb.TransactionException("TransactionContext Error: Current transaction is aborted")
    cleanup.__context__ = query
    assert grammar.is_interrupt(query) and grammar.is_interrupt(cleanup)
    caused = ValueError("wrapped")
    caused.__cause__ = KeyboardInterrupt()
    assert grammar.is_interrupt(caused)
    for other in (RuntimeError("Query failed"), duckdb.TransactionException("aborted"), ValueError("x")):
        assert not grammar.is_interrupt(other), other


def test_an_interrupt_inside_duckdb_ends_a_command_with_130(monkeypatch):
    """The class, in process: any command whose DuckDB query is interrupted (here `plan fpr`,
    made to raise the real exception chain) prints the interrupt line, exit 130, never
    `internal error`."""
    from veribench.cli import plan

    e = _interrupted_in_a_transaction()

    def boom(*a, **k):
        raise e

    monkeypatch.setattr(plan.planning, "wilson_interval_at", boom)
    r = CliRunner().invoke(app, ["plan", "fpr", "--n", "100"])
    assert r.exit_code == 130, r.output
    assert r.stderr.strip().splitlines() == [f"interrupted: {grammar.INTERRUPT_NOTES['']}"], r.stderr
    monkeypatch.setattr(plan.planning, "wilson_interval_at", lambda *a, **k: (_ for _ in ()).throw(
        RuntimeError("Query interrupted")))
    r = CliRunner().invoke(app, ["plan", "fpr", "--n", "100"])
    assert r.exit_code == 130 and "internal error" not in r.output, r.output


def test_each_command_says_what_ctrl_c_keeps():
    tops = set(COMMANDS)
    for key in grammar.INTERRUPT_NOTES:
        assert not key or key.split()[0] in tops, key  # every entry names a real command
    assert "all or nothing" in grammar.interrupt_note("import raid")
    assert "all or nothing" in grammar.interrupt_note("import jsonl")
    assert "batch of scores" in grammar.interrupt_note("score")
    assert "batch of scores" in grammar.interrupt_note("cycle rescore")
    for cmd in ("protocol commit", "publish", "log verify", "write withdraw", "import-x"):
        note = grammar.interrupt_note(cmd)
        assert note == grammar.INTERRUPT_NOTES[""] and "batch" not in note, cmd


def _ctrl_c(mode: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run ``args`` in a child (``slow_insert.py``: one INSERT made slow), press Ctrl-C
    (SIGINT) once that INSERT runs, and return what the child did."""
    env = dict(os.environ)
    src = HERE.parents[1] / "src"
    env["PYTHONPATH"] = os.pathsep.join(x for x in (str(src), env.get("PYTHONPATH")) if x)
    env["VERIBENCH_PROGRESS_INTERVAL"] = "60"
    p = subprocess.Popen([sys.executable, str(HERE / "slow_insert.py"), mode, *args], cwd=cwd, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err: list[str] = []
    try:
        assert p.stderr is not None
        for line in p.stderr:
            err.append(line)
            if line.strip() == "READY":
                break
        time.sleep(0.3)  # inside the INSERT now
        p.send_signal(signal.SIGINT)
        out, rest = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    return subprocess.CompletedProcess(p.args, p.returncode, out, "".join(err) + rest)


def _count(ws: Path, table: str) -> int:
    con = duckdb.connect(str(ws / "veribench.duckdb"), read_only=True)
    try:
        return int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        con.close()


def _verified(ws: Path) -> None:
    r = CliRunner().invoke(app, ["log", "verify", "-w", str(ws)])
    assert r.exit_code == 0, r.output


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    """A workspace holding five documents (what was stored before)."""
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": f"d{i}", "text": f"Document number {i} of the base.",
                                        "label": "human"}) + "\n" for i in range(5)))
    ws = tmp_path / "ws"
    r = CliRunner().invoke(app, ["import", "jsonl", str(docs), "-w", str(ws), "-q"])
    assert r.exit_code == 0, r.output
    return ws


def test_ctrl_c_inside_an_insert_of_an_import(workspace: Path, tmp_path: Path):
    """SIGINT while DuckDB inserts a streamed import's documents: exit 130, the import's
    line (all or nothing), and the workspace as it was: its five documents, a log that
    verifies."""
    r = _ctrl_c("import", ["import", "raid", str(RAID), "-w", str(workspace)], tmp_path)
    assert r.returncode == 130, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip() and x.strip() != "READY"]
    assert lines == [f"interrupted: {grammar.interrupt_note('import raid')}"], r.stderr
    assert "Traceback" not in r.stderr and "error:" not in r.stderr
    assert _count(workspace, "documents") == 5 and _count(workspace, "imports") == 1
    _verified(workspace)


def test_ctrl_c_inside_an_insert_of_a_scoring_run(workspace: Path, tmp_path: Path):
    """SIGINT while DuckDB inserts a scoring run's second batch: exit 130, the scoring line,
    and the first batch (zippy's 128 texts) kept, logged, found by the next run."""
    texts = tmp_path / "texts.jsonl"
    texts.write_text("".join(json.dumps({"id": f"t{i}", "text": f"Text number {i}: " + "some words " * (i % 7 + 1)})
                             + "\n" for i in range(300)))
    out = tmp_path / "scores.jsonl"
    args = ["score", "-d", "zippy", "-i", str(texts), "-o", str(out), "-w", str(workspace), "--no-progress"]
    r = _ctrl_c("score", args, tmp_path)
    assert r.returncode == 130, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip() and x.strip() != "READY"]
    assert lines == [f"interrupted: {grammar.interrupt_note('score')}"], r.stderr
    assert _count(workspace, "scores") == 128 and not out.exists()
    _verified(workspace)
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0 and "128 from cache, 172 scored" in r.output, r.output
