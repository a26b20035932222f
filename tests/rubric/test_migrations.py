"""The apps' stores under the workspace's rule: a schema module and a version each, migrations
in one transaction, one-line refusals. The version-1 stores are real ones, made by veribench
at commit f6c21e4 through its command line and HTTP interfaces
(``tests/data/rubric_stores/README.md``); their rows are read here with the standard
library's ``sqlite3``, never through the code under test."""

from __future__ import annotations

import gzip
import hashlib
import re
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from veribench.cli.main import app as cli_app
from veribench.errors import VeribenchError
from veribench.rubric import db as rubric_db
from veribench.rubric import migrations as rubric_migrations
from veribench.rubric import results, store
from veribench.rubric import schema as rubric_schema
from veribench.rubric import sqlite_store as sq
from veribench.rubric.stores import migrate_stores
from veribench.rubric.write import db as write_db
from veribench.rubric.write import migrations as write_migrations
from veribench.rubric.write import schema as write_schema
from veribench.rubric.write import store as write_store
from veribench.store import Workspace
from veribench.store.migrations import SchemaVersionError

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "rubric_stores"

#: Rows per table of the two fixtures, as ``tests/data/rubric_stores/README.md`` states them
#: (counted when they were made).
RATING_COUNTS = {"rubric_assignments": 9, "rubric_editors": 3, "rubric_forms": 2, "rubric_items": 4,
                 "rubric_marks": 3, "rubric_meta": 1, "rubric_ratings": 3, "rubric_sessions": 1}
WRITING_COUNTS = {"write_forms": 7, "write_invitations": 4, "write_meta": 1, "write_prompts": 1,
                  "write_revisions": 30, "write_sessions": 3, "write_submissions": 1, "write_withdrawals": 1}

#: (fixture, file name in the workspace, expected counts, schema module, migrations module, name in messages)
STORES = {
    "rating": ("rating-v1.sqlite.gz", rubric_db.FILE_NAME, RATING_COUNTS, rubric_schema, rubric_migrations,
               "rating store"),
    "writing": ("writing-v1.sqlite.gz", write_db.FILE_NAME, WRITING_COUNTS, write_schema, write_migrations,
                "writing store"),
}


def _open(kind: str, folder: Path):
    """Open a store the way the apps and commands do (read-write)."""
    return store.open_rubric(folder) if kind == "rating" else write_db.open_store(folder)


def _unpack(kind: str, folder: Path) -> Path:
    gz, name, *_ = STORES[kind]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(gzip.decompress((FIXTURES / gz).read_bytes()))
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _dump(path: Path) -> dict:
    """Everything a store holds, read independently: its version, each table's columns
    (``PRAGMA table_info``), unique indexes, foreign keys, and all rows in a fixed order."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        out: dict = {"user_version": con.execute("PRAGMA user_version").fetchone()[0], "tables": {}}
        for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall():
            idx = sorted((r[2], r[3]) for r in con.execute(f"PRAGMA index_list({t})").fetchall())
            out["tables"][t] = {
                "columns": con.execute(f"PRAGMA table_info({t})").fetchall(),
                "unique": [(u, [c[2] for c in con.execute(f"PRAGMA index_info('{name}')").fetchall()])
                           for name, u in idx],
                "foreign_keys": con.execute(f"PRAGMA foreign_key_list({t})").fetchall(),
                "rows": sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr),
            }
        return out
    finally:
        con.close()


def _set_user_version(path: Path, v: int) -> None:
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {v}")
    con.close()


@pytest.mark.parametrize("kind", STORES)
def test_a_store_made_before_versions_migrates_to_version_2_with_every_row_kept(tmp_path, kind):
    _, _, counts, schema_mod, _, what = STORES[kind]
    path = _unpack(kind, tmp_path / "ws")
    before = _dump(path)
    assert before["user_version"] == 0  # made before versions were recorded
    assert {t: len(v["rows"]) for t, v in before["tables"].items()} == counts
    assert set(before["tables"]) == set(schema_mod.TABLES)

    with _open(kind, tmp_path / "ws") as db:
        assert db.migration_notes == [f"migrated {what} {path} from schema version 1 to 2"]
    after = _dump(path)
    assert after["user_version"] == schema_mod.VERSION == 2
    assert after["tables"] == before["tables"]  # every row, column, key and constraint as it was


def _raw(path: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_the_migrated_rating_store_serves_todays_code(tmp_path):
    path = _unpack("rating", tmp_path / "ws")
    per_tool = {t: (n, r) for t, n, r in _raw(path, (
        "SELECT i.tool, count(DISTINCT i.blind_id), count(r.blind_id) FROM rubric_items i "
        "LEFT JOIN rubric_ratings r ON r.blind_id = i.blind_id GROUP BY i.tool"))}
    [(gap_output,)] = _raw(path, "SELECT blind_id FROM rubric_ratings GROUP BY blind_id HAVING max(score) - min(score) >= 2")
    with store.open_rubric(tmp_path / "ws") as db:
        st = store.assignment_status(db)
        assert (st["outputs"], st["editors"]) == (4, 3)
        assert sorted(e["editor"] for e in store.list_editors(db)) == ["alice", "bob", "carol"]
        assert {r["tool"]: (r["outputs"], r["reads"]) for r in results.tool_results(db)} == per_tool
        # alice scored 5 and bob 2 on one output: the third read given then is still there
        assert sum(r["third_reads"] for r in results.tool_results(db)) == 1
        assert sorted(e for (e,) in db.query("SELECT editor FROM rubric_assignments WHERE blind_id = ?",
                                              [gap_output])) == ["alice", "bob", "carol"]
        # the session secret the app made at f6c21e4 is the one it keeps using
        assert store.session_secret(db) == _raw(path, "SELECT value FROM rubric_meta WHERE key = 'session_secret'")[0][0]


def test_the_migrated_writing_store_serves_todays_code(tmp_path):
    path = _unpack("writing", tmp_path / "ws")
    [(inv, revisions, words)] = _raw(path, "SELECT s.invitation_id, count(*), s.words FROM write_submissions s "
                                           "JOIN write_revisions r USING (invitation_id) GROUP BY 1, 3")
    with write_db.open_store(tmp_path / "ws") as db:
        rows = write_store.list_invitations(db)
        assert sorted(r["state"] for r in rows) == ["invited", "started", "submitted", "withdrawn"]
        [pending] = write_store.pending_submissions(db)
        assert pending["invitation"]["invitation_id"] == inv and pending["submission"]["words"] == words
        ev = write_store.evidence_for(db, inv)
        assert (ev["revisions"], ev["words"]) == (revisions, words)
        assert write_store.session_secret(db) == _raw(
            path, "SELECT value FROM write_meta WHERE key = 'session_secret'")[0][0]


@pytest.mark.parametrize("kind", STORES)
def test_a_second_open_changes_nothing(tmp_path, kind):
    path = _unpack(kind, tmp_path / "ws")
    _open(kind, tmp_path / "ws").close()
    digest, dump = _sha(path), _dump(path)
    for _ in range(2):
        with _open(kind, tmp_path / "ws") as db:
            assert db.migration_notes == []
        assert _sha(path) == digest
        assert _dump(path) == dump


@pytest.mark.parametrize("kind", STORES)
def test_a_new_store_has_exactly_the_tables_of_the_stores_made_before(tmp_path, kind):
    """The schema module restates the old definitions: columns, types, keys, uniques and
    foreign keys come out the same as in the store veribench made at f6c21e4."""
    old = _dump(_unpack(kind, tmp_path / "old"))
    _open(kind, tmp_path / "new").close()
    new = _dump(tmp_path / "new" / STORES[kind][1])
    assert new["user_version"] == 2
    assert all(t.pop("rows") == [] for t in new["tables"].values())
    for t in old["tables"].values():
        t.pop("rows")
    assert new["tables"] == old["tables"]


@pytest.mark.parametrize("kind", STORES)
def test_a_newer_store_is_refused_with_one_line_and_left_as_it_is(tmp_path, kind):
    _, name, _, _, _, what = STORES[kind]
    path = _unpack(kind, tmp_path / "ws")
    _set_user_version(path, 3)
    digest = _sha(path)
    with pytest.raises(SchemaVersionError) as e:
        _open(kind, tmp_path / "ws")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg == (f"{what} {path} has schema version 3, newer than this veribench's 2: upgrade veribench "
                   "(pip install -U veribench) to open it")
    assert _sha(path) == digest


@pytest.mark.parametrize(("kind", "argv"), [("rating", ["rate", "editors", "list"]),
                                            ("writing", ["write", "status"])])
def test_the_command_line_refuses_a_newer_store_in_one_line(tmp_path, kind, argv):
    path = _unpack(kind, tmp_path / "ws")
    _set_user_version(path, 7)
    r = CliRunner().invoke(cli_app, [*argv, "-w", str(tmp_path / "ws")])
    assert r.exit_code == 1, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    assert "schema version 7, newer than this veribench's 2" in lines[0]
    assert "Traceback" not in r.output and isinstance(r.exception, SystemExit)


def test_an_older_rating_store_beside_a_read_only_workspace_is_refused_and_names_the_command(tmp_path):
    ws_dir = tmp_path / "ws"
    Workspace(ws_dir).close()
    path = _unpack("rating", ws_dir)
    digest = _sha(path)
    expected = (f"rating store {path} has schema version 1 and this veribench reads version 2: run "
                f"`veribench workspace migrate -w {ws_dir}` to migrate it (one transaction; keep a copy if an older "
                "veribench must still read it)")
    with Workspace(ws_dir, read_only=True) as ro, pytest.raises(SchemaVersionError) as e:
        results.tool_results(ro)
    assert str(e.value) == expected
    with pytest.raises(SchemaVersionError) as e:
        store.open_rubric(ws_dir, read_only=True)
    assert str(e.value) == expected
    assert _sha(path) == digest
    # what that command runs for the apps' stores: both are migrated, nothing is created
    assert migrate_stores(ws_dir) == [f"migrated rating store {path} from schema version 1 to 2"]
    assert not (ws_dir / write_db.FILE_NAME).exists()
    with store.open_rubric(ws_dir) as rw:
        expected_results = results.tool_results(rw)
    with Workspace(ws_dir, read_only=True) as ro:
        assert results.tool_results(ro) == expected_results
    assert len(expected_results) == 3


def test_migrate_stores_brings_both_stores_forward(tmp_path):
    ws_dir = tmp_path / "ws"
    rating, writing = _unpack("rating", ws_dir), _unpack("writing", ws_dir)
    assert migrate_stores(ws_dir) == [f"migrated rating store {rating} from schema version 1 to 2",
                                      f"migrated writing store {writing} from schema version 1 to 2"]
    assert _dump(rating)["user_version"] == _dump(writing)["user_version"] == 2
    assert migrate_stores(ws_dir) == []
    assert migrate_stores(tmp_path / "empty") == [] and not (tmp_path / "empty").exists()


@pytest.mark.parametrize("kind", STORES)
def test_a_failure_mid_migration_leaves_the_file_unchanged(tmp_path, kind, monkeypatch):
    """The step runs, deletes rows and then fails as a full disk would: the transaction rolls
    back, so the file keeps its bytes, its rows and version 1, and the error is one line."""
    _, _, _, schema_mod, mig, what = STORES[kind]
    path = _unpack(kind, tmp_path / "ws")
    digest, dump = _sha(path), _dump(path)
    real = mig.STEPS[1]

    def failing(con):
        real(con)
        for t in reversed(schema_mod.TABLES):  # children before parents (foreign keys)
            con.execute(f"DELETE FROM {t}")
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setitem(mig.STEPS, 1, failing)
    with pytest.raises(VeribenchError) as e:
        _open(kind, tmp_path / "ws")
    assert str(e.value) == (f"{what} {path}: cannot bring schema version 1 to 2 (database or disk is full); "
                            "nothing was changed")
    assert _sha(path) == digest and _dump(path) == dump
    monkeypatch.setitem(mig.STEPS, 1, real)
    with _open(kind, tmp_path / "ws") as db:  # the next open migrates it
        assert db.migration_notes
    assert _dump(path)["tables"] == dump["tables"]


@pytest.mark.parametrize("kind", STORES)
def test_a_failure_after_the_version_is_written_rolls_it_back_too(tmp_path, kind, monkeypatch):
    path = _unpack(kind, tmp_path / "ws")
    digest = _sha(path)

    def set_then_fail(con, version):
        con.execute(f"PRAGMA user_version = {int(version)}")
        raise KeyboardInterrupt

    monkeypatch.setattr(sq, "set_version", set_then_fail)
    with pytest.raises(KeyboardInterrupt):
        _open(kind, tmp_path / "ws")
    assert _sha(path) == digest and _dump(path)["user_version"] == 0


@pytest.mark.parametrize("kind", STORES)
def test_two_opens_at_once_migrate_once(tmp_path, kind, monkeypatch):
    """The second opener (its own connection, as another process has) waits for the first
    one's migration under SQLite's write lock, then finds the store current."""
    _, _, _, _, mig, what = STORES[kind]
    path = _unpack(kind, tmp_path / "ws")
    dump = _dump(path)
    real, inside = mig.STEPS[1], threading.Event()

    def slow(con):
        inside.set()
        time.sleep(0.5)
        return real(con)

    monkeypatch.setitem(mig.STEPS, 1, slow)
    notes: dict[str, list[str]] = {}

    def first():
        with _open(kind, tmp_path / "ws") as db:
            notes["first"] = db.migration_notes

    t = threading.Thread(target=first)
    t.start()
    assert inside.wait(10)
    with _open(kind, tmp_path / "ws") as db:
        notes["second"] = db.migration_notes
    t.join(10)
    assert notes == {"first": [f"migrated {what} {path} from schema version 1 to 2"], "second": []}
    after = _dump(path)
    assert after["user_version"] == 2 and after["tables"] == dump["tables"]


@pytest.mark.parametrize("kind", STORES)
def test_a_file_that_is_not_the_store_is_refused_in_one_line(tmp_path, kind):
    _, name, _, _, _, what = STORES[kind]
    folder = tmp_path / "ws"
    folder.mkdir()
    other = folder / name
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE notes (x TEXT)")  # another program's database under the store's name
    con.close()
    digest = _sha(other)
    with pytest.raises(VeribenchError) as e:
        _open(kind, folder)
    assert str(e.value) == f"{other}: not a veribench {what} (its tables are notes; move it away or name another workspace)"
    assert _sha(other) == digest
    other.write_bytes(b"this is not a database, just text that happens to be long enough " * 20)
    with pytest.raises(VeribenchError) as e:
        _open(kind, folder)
    assert "\n" not in str(e.value) and str(other) in str(e.value) and "not a database" in str(e.value)


def test_legacy_rubric_rows_are_copied_in_the_transaction_that_makes_the_store(tmp_path, july_tests):
    """Rubric rows kept in the workspace's DuckDB file (before the SQLite store) come over when
    the store is made; an empty rubric.sqlite left by an interrupted first open is a store
    not yet made, so the copy still happens."""
    from tests.rubric.rubric_helpers import real_pairs

    src = store.open_rubric(tmp_path / "new")
    store.add_pairs(src, real_pairs(july_tests, [("humbot", 2)]))
    legacy = {t: src.query(f"SELECT * FROM {t}") for t in ("rubric_items", "rubric_meta")}
    src.close()
    old = tmp_path / "old"
    with Workspace(old) as ws:
        for t in rubric_schema.LEGACY_DUCKDB_TABLES:
            ws.con.execute(rubric_schema.create_sql(t))
        for t, rows in legacy.items():
            for r in rows:
                ws.con.execute(f"INSERT INTO {t} VALUES ({', '.join('?' * len(r))})", list(r))
    (old / rubric_db.FILE_NAME).write_bytes(b"")
    with store.open_rubric(old) as db:
        assert db.query("SELECT count(*) FROM rubric_items") == [(2,)]
        assert db.migration_notes == []
    assert _dump(old / rubric_db.FILE_NAME)["user_version"] == 2


def test_create_table_appears_only_in_the_schema_modules():
    """Within the apps (``rubric/``), tables are created only by the two schema modules."""
    root = Path(rubric_schema.__file__).parent
    found = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                   if re.search(r"CREATE\s+TABLE", p.read_text(encoding="utf-8"), flags=re.I))
    assert found == ["schema.py", "write/schema.py"]
