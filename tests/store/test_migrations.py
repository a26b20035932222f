"""Workspace schema versions: a workspace made before versions were recorded (kept in
tests/data/workspace-v1, made by veribench at f6c21e4) migrates forward in one transaction,
or is refused with one line naming both versions and the command to run."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import duckdb
import pytest

from veribench.store import Workspace, migrations, schema
from veribench.store.logcheck import verify_workspace

V1 = Path(__file__).resolve().parents[1] / "data" / "workspace-v1"
#: What the fixture holds (tests/data/workspace-v1/README.md).
V1_COUNTS = {"documents": 235, "scores": 246, "imports": 3, "protocols": 1, "runs": 1}


def _copy_v1(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "veribench.duckdb").write_bytes(gzip.decompress((V1 / "veribench.duckdb.gz").read_bytes()))
    shutil.copytree(V1 / "commitments", ws / "commitments")
    return ws


def _dump(db: Path) -> dict[str, list[tuple]]:
    """Every row of every table, sorted (the tables as a migration must keep them)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        names = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                           "WHERE table_schema = 'main' ORDER BY 1").fetchall()]
        return {n: sorted(con.execute(f"SELECT * FROM {n}").fetchall(), key=repr) for n in names}
    finally:
        con.close()


def test_the_fixture_is_version_1_and_fails_log_verify(tmp_path):
    """What the migration fixes: the streamed RAID import of version 1 left 223 documents
    outside the log."""
    ws = _copy_v1(tmp_path)
    con = duckdb.connect(str(ws / "veribench.duckdb"), read_only=True)
    assert schema.stored_version(con) == 1
    counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in V1_COUNTS}
    logged = {json.loads(p)["import_id"] for (p,) in con.execute("SELECT payload FROM events WHERE type = 'import'"
                                                                 ).fetchall()}
    raid = con.execute("SELECT import_id FROM imports WHERE kind = 'raid'").fetchone()[0]
    con.close()
    assert counts == V1_COUNTS
    assert raid not in logged


def test_read_only_open_of_version_1_is_refused_in_one_line(tmp_path):
    ws = _copy_v1(tmp_path)
    before = (ws / "veribench.duckdb").read_bytes()
    with pytest.raises(migrations.SchemaVersionError) as e:
        Workspace(ws, read_only=True)
    msg = str(e.value)
    assert "\n" not in msg
    assert "schema version 1" in msg and f"reads version {schema.VERSION}" in msg
    assert f"veribench workspace migrate -w {ws}" in msg
    assert (ws / "veribench.duckdb").read_bytes() == before


def test_version_1_migrates_in_one_open_keeping_every_row(tmp_path):
    ws = _copy_v1(tmp_path)
    before = _dump(ws / "veribench.duckdb")
    with Workspace(ws) as w:
        assert w.migration_notes[0] == f"migrated workspace {ws} from schema version 1 to {schema.VERSION}"
        assert any("logged import raid-" in n and "(223 documents" in n for n in w.migration_notes)
        assert schema.stored_version(w.con) == schema.VERSION
        rep = verify_workspace(w)
        assert rep.ok, rep.lines()
        assert rep.counts["documents"] == 235
        # step 3 -> 4: every stored text's language, identified by the import's own function
        assert any(n.startswith("identified the language of 235 stored document(s) (lingua") for n in w.migration_notes)
        langs = dict(w.query("SELECT language, count(*) FROM document_languages GROUP BY 1"))
        assert sum(langs.values()) == 235 and langs.get("en", 0) >= 230
    after = _dump(ws / "veribench.duckdb")
    for table, rows in before.items():
        if table in ("events", "log_items"):
            assert set(rows) <= set(after[table]), table  # the log only grows
        else:
            assert after[table] == rows, table
    assert set(after) == set(schema.TABLES)
    # the new import event covers exactly the RAID documents, and says who logged them
    ev = [json.loads(r[3]) for r in after["events"] if r[2] == "import"]
    mig = [p for p in ev if p.get("logged_by") == "migration 1->2"]
    assert len(mig) == 1 and mig[0]["n_doc"] == 223 and mig[0]["kind"] == "raid"
    # a second open changes nothing
    with Workspace(ws) as w:
        assert w.migration_notes == []
    assert _dump(ws / "veribench.duckdb") == after


def test_a_migrated_workspace_publishes_a_bundle_that_verifies(tmp_path):
    """After the migration the workspace's log covers every row: a new run under the same
    committed protocol publishes, and the bundle verifies. The run made by version 1 is
    refused: 223 of its documents were logged only by the migration, after it, so it
    cannot be re-derived from rows the log held when it ran."""
    from veribench.bundles.publish import publish
    from veribench.bundles.verify import verify_bundle
    from veribench.errors import InputError
    from veribench.evaluate import evaluate_workspace
    from veribench.protocol.model import load_protocol

    ws = _copy_v1(tmp_path)
    proto = tmp_path / "v1.toml"
    shutil.copy(V1 / "v1.toml", proto)
    with Workspace(ws) as w:
        old = w.query("SELECT run_id FROM runs")[0][0]
        with pytest.raises(InputError, match="does not re-derive from its rows"):
            publish(w, old, tmp_path / "old-bundle")
        res = evaluate_workspace(w, load_protocol(proto), allow_scoring=False)
        assert res["run"]["n_documents"] == 235
        pub = publish(w, res["run"]["run_id"], tmp_path / "bundle")
    rep = verify_bundle(pub.out)
    assert rep.ok, rep.lines()


def test_a_failed_migration_leaves_the_workspace_as_it_was(tmp_path, monkeypatch):
    ws = _copy_v1(tmp_path)
    before = _dump(ws / "veribench.duckdb")

    def broken(con):
        migrations._v1_to_v2(con)
        raise RuntimeError("disk full")

    monkeypatch.setitem(migrations.STEPS, 1, broken)
    with pytest.raises(RuntimeError, match="disk full"):
        Workspace(ws)
    monkeypatch.undo()
    assert _dump(ws / "veribench.duckdb") == before


def test_a_newer_workspace_is_refused_in_one_line_read_write_or_not(tmp_path):
    ws = tmp_path / "ws"
    with Workspace(ws) as w:
        schema.set_version(w.con, schema.VERSION + 1)
    for ro in (False, True):
        with pytest.raises(migrations.SchemaVersionError) as e:
            Workspace(ws, read_only=ro)
        assert "\n" not in str(e.value)
        assert f"schema version {schema.VERSION + 1}, newer than this veribench's {schema.VERSION}" in str(e.value)


def test_a_new_workspace_has_every_table_and_the_current_version(tmp_path):
    with Workspace(tmp_path / "ws") as w:
        assert schema.table_names(w.con) == set(schema.TABLES)
        assert schema.stored_version(w.con) == schema.VERSION
        assert w.migration_notes == []


def test_read_only_open_never_creates_a_workspace(tmp_path):
    from veribench.errors import VeribenchError

    for kw in ({"read_only": True}, {"create": False}):
        with pytest.raises(VeribenchError, match="no workspace at"):
            Workspace(tmp_path / "nows", **kw)
        assert not (tmp_path / "nows").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(VeribenchError, match="is a file, not a folder"):
        Workspace(tmp_path / "file")


@pytest.mark.parametrize("value", ["abc", "2.5", "", "0", "-1", " 2"])
def test_a_damaged_version_is_refused_in_one_line(tmp_path, value):
    """A ``schema_meta`` version no veribench writes (not a whole number from 1) is a damaged
    or edited file: refused read-only and read-write, one line, never taken for a version."""
    ws = tmp_path / "ws"
    with Workspace(ws) as w:
        w.con.execute("UPDATE schema_meta SET value = ? WHERE key = 'version'", [value])
    before = (ws / "veribench.duckdb").read_bytes()
    for ro in (True, False):
        with pytest.raises(schema.SchemaVersionError) as e:
            Workspace(ws, read_only=ro)
        assert "\n" not in str(e.value) and "which no veribench writes" in str(e.value) and repr(value) in str(e.value)
    assert (ws / "veribench.duckdb").read_bytes() == before


def test_version_2_migrates_to_keep_replaced_rows(tmp_path):
    """Step 2 -> 3 adds ``replaced_leaves``; a key replaced before it is counted in a note
    (its older value cannot be shown in a bundle), and the workspace still verifies."""
    from tests.bundles.bundle_helpers import store_documents
    from veribench.corpus.document import Document
    from veribench.records import ScoreResult
    from veribench.spec import Spec
    from veribench.store import writes

    ws = tmp_path / "ws"
    with Workspace(ws) as w:
        d = Document(id="m0", text="a text", label="human")
        store_documents(w, [d], "D", [ScoreResult(raw=0.2, ai_probability=0.2)])
        writes.put_scores(w, Spec("detector", "D", "v1"), [(d.text_sha256, ScoreResult(raw=0.6, ai_probability=0.6))],
                          replace=True)
        w.con.execute("DROP TABLE replaced_leaves")
        schema.set_version(w.con, 2)
    with Workspace(ws) as w:
        assert w.migration_notes[0] == f"migrated workspace {ws} from schema version 2 to {schema.VERSION}"
        assert any("1 logged key(s)" in n and "cannot be published" in n for n in w.migration_notes)
        assert schema.table_names(w.con) == set(schema.TABLES)
        assert verify_workspace(w).ok
