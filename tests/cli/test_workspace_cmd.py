"""``veribench workspace migrate -w WS`` on a workspace made before schema versions
(tests/data/workspace-v1), and the refusal that names it; progress lines when the output
is not a terminal."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from tests.conftest import TEST_DATA
from veribench.cli.main import app
from veribench.store import schema


def _v1(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    with gzip.open(TEST_DATA / "workspace-v1" / "veribench.duckdb.gz", "rb") as src, \
            open(ws / "veribench.duckdb", "wb") as dst:
        shutil.copyfileobj(src, dst)
    return ws


def test_a_reading_command_refuses_an_old_workspace_and_migrate_brings_it_forward(tmp_path):
    ws = _v1(tmp_path)
    runner = CliRunner()
    r = runner.invoke(app, ["log", "verify", "-w", str(ws)])
    assert r.exit_code == 1, r.output
    err = [x for x in r.stderr.splitlines() if x.startswith("error:")]
    assert len(err) == 1 and f"schema version 1 and this veribench reads version {schema.VERSION}" in err[0]
    assert f"veribench workspace migrate -w {ws}" in err[0] and "Traceback" not in r.output
    r = runner.invoke(app, ["workspace", "migrate", "-w", str(ws)])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0] == f"workspace {ws}: migrated from schema version 1 to {schema.VERSION}"
    assert any("logged import" in x for x in lines[1:]), lines  # the migration's own notes
    r = runner.invoke(app, ["workspace", "migrate", "-w", str(ws)])
    assert r.exit_code == 0 and "the current one; nothing to migrate" in r.stdout
    r = runner.invoke(app, ["log", "verify", "-w", str(ws), "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["ok"] is True, r.output


def test_migrate_brings_the_app_stores_in_the_folder_forward_too(tmp_path):
    """The version-1 rating and writing stores (tests/data/rubric_stores) beside a version-1
    workspace: one `workspace migrate` brings all three to their current versions, and the
    reading commands that refused the old rating store then work."""
    import sqlite3

    from veribench.rubric import db as rubric_db
    from veribench.rubric import schema as rubric_schema
    from veribench.rubric.write import db as write_db
    from veribench.rubric.write import schema as write_schema

    ws = _v1(tmp_path)
    stores = TEST_DATA / "rubric_stores"
    (ws / rubric_db.FILE_NAME).write_bytes(gzip.decompress((stores / "rating-v1.sqlite.gz").read_bytes()))
    (ws / write_db.FILE_NAME).write_bytes(gzip.decompress((stores / "writing-v1.sqlite.gz").read_bytes()))
    r = CliRunner().invoke(app, ["workspace", "migrate", "-w", str(ws)])
    assert r.exit_code == 0, r.output
    for name, want in ((rubric_db.FILE_NAME, rubric_schema.VERSION), (write_db.FILE_NAME, write_schema.VERSION)):
        con = sqlite3.connect(ws / name)
        assert con.execute("PRAGMA user_version").fetchone()[0] == want, name
        con.close()
    r = CliRunner().invoke(app, ["rate", "editors", "list", "-w", str(ws)])
    assert r.exit_code == 0, r.output


def test_long_commands_print_a_line_every_few_seconds_off_a_terminal(tmp_path):
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"id": i, "text": f"Text number {i} says something about trains and rain."})
                           + "\n" for i in range(100)))
    args = ["score", "-d", "zippy", "-i", str(inp), "-o", str(tmp_path / "o.jsonl"), "-w", str(tmp_path / "ws")]
    r = CliRunner().invoke(app, args, env={"VERIBENCH_PROGRESS_INTERVAL": "0.02"})
    assert r.exit_code == 0, r.output
    lines = [x for x in r.stderr.splitlines() if x.startswith("score")]
    assert any(x.startswith("score > scoring zippy") and "/100 texts" in x for x in lines), r.stderr
    assert lines[-1].startswith("score: done in "), lines
    r = CliRunner().invoke(app, [*args[:-2], "-w", str(tmp_path / "ws2"), "--no-progress"],
                           env={"VERIBENCH_PROGRESS_INTERVAL": "0.02"})
    assert r.exit_code == 0 and not [x for x in r.stderr.splitlines() if x.startswith("score")], r.stderr


def test_reading_rate_commands_never_migrate_an_app_store(tmp_path):
    """`rate results|export|editors list` only read: an older rating store is refused with the
    command that migrates it, and its file is left byte for byte as it was."""
    from veribench.rubric import db as rubric_db

    ws = tmp_path / "ws"
    ws.mkdir()
    store = ws / rubric_db.FILE_NAME
    store.write_bytes(gzip.decompress((TEST_DATA / "rubric_stores" / "rating-v1.sqlite.gz").read_bytes()))
    before = store.read_bytes()
    for cmd in (["rate", "results"], ["rate", "export", "-o", str(tmp_path / "x.csv")], ["rate", "editors", "list"]):
        r = CliRunner().invoke(app, [*cmd, "-w", str(ws)])
        assert r.exit_code == 1, (cmd, r.output)
        err = [x for x in r.stderr.splitlines() if x.startswith("error:")]
        assert len(err) == 1 and f"veribench workspace migrate -w {ws}" in err[0], (cmd, r.stderr)
        assert store.read_bytes() == before, cmd
