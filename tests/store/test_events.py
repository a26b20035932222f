"""The workspace's hash-chained event log: every write is logged, and any edit made with plain SQL
(the journalist's ``UPDATE protocols SET committed_at = ...``) is found by ``veribench log verify``."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veribench.store import events as ev
from veribench.store import schema, writes
from veribench.store.logcheck import verify_workspace

PROTO = """[protocol]
name = "log-test"
tag = "LOG-1"
[selection]
corpora = ["liang2023"]
[[detectors]]
name = "GPTZero"
rule = { field = "ai_probability", op = ">", threshold = 0.5 }
"""


@pytest.fixture(scope="module")
def liang_ws(tmp_path_factory, liang_dir):
    """A workspace with the Liang corpus imported, a protocol committed and one run (built once)."""
    from veribench.commit import commit
    from veribench.corpus.importers.liang2023 import import_liang2023
    from veribench.evaluate import evaluate_workspace
    from veribench.protocol.model import load_protocol
    from veribench.store import Workspace

    d = tmp_path_factory.mktemp("logws")
    p = d / "p.toml"
    p.write_text(PROTO)
    with Workspace(d / "ws") as ws:
        import_liang2023(ws, liang_dir)
        commit(ws, p)
        evaluate_workspace(ws, load_protocol(p))
    return d / "ws"


@pytest.fixture()
def ws(liang_ws, tmp_path):
    import shutil

    from veribench.store import Workspace

    shutil.copytree(liang_ws, tmp_path / "ws")
    w = Workspace(tmp_path / "ws")
    yield w
    w.close()


def test_every_write_is_logged_and_verifies(ws):
    rep = verify_workspace(ws)
    assert rep.ok, rep.lines()
    assert rep.counts == {"documents": 490, "scores": 3423, "submissions": 3430, "protocols": 1, "commitments": 1,
                          "specs": 7, "runs": 1, "imports": 1}
    types = [e["type"] for e in ev.read_events(ws.con)]
    assert types[0] == "import" and types.count("scan_batch") == 7 and types[-2:] == ["protocol_commit", "run"]
    run = json.loads(ws.query("SELECT results FROM runs")[0][0])["run"]
    assert run["chain_head"]["seq"] == len(types) - 1  # the head it ran at: the event before its own


@pytest.mark.parametrize("sql,check", [
    ("UPDATE protocols SET committed_at = '2020-01-01'", "protocols: event"),
    ("UPDATE protocols SET name = 'other'", "protocols: event"),
    ("UPDATE protocols SET content = replace(content, '0.5', '0.9')", "do not hash to the committed SHA-256"),
    ("UPDATE documents SET label = 'ai' WHERE doc_id = (SELECT min(doc_id) FROM documents WHERE label = 'human')",
     "document row differs from what its import logged"),
    ("UPDATE documents SET subgroup = 'x' WHERE doc_id = (SELECT min(doc_id) FROM documents)", "documents:"),
    ("DELETE FROM documents WHERE doc_id = (SELECT min(doc_id) FROM documents)", "(deleted)"),
    ("INSERT INTO documents (doc_id, text_sha256, label) VALUES ('forged', '" + "0" * 64 + "', 'human')",
     "not covered by the log"),
    ("UPDATE scores SET raw = 0.5, ai_probability = 0.5 WHERE text_sha256 = (SELECT min(text_sha256) FROM scores)",
     "score row differs from what its scan batch logged"),
    ("UPDATE scores SET scanned_at = '2020-01-01' WHERE text_sha256 = (SELECT min(text_sha256) FROM scores)",
     "scores:"),
    ("UPDATE submissions SET submitted_sha256 = '" + "1" * 64 + "' WHERE doc_id = (SELECT min(doc_id) FROM submissions)",
     "link differs"),
    ("UPDATE runs SET results = replace(results, '\"tag\": \"LOG-1\"', '\"tag\": \"LOG-X\"')", "runs:"),
    ("UPDATE events SET payload = replace(payload, 'GPTZero', 'GPTZer0') WHERE type = 'scan_batch'",
     "payload differs from its recorded SHA-256"),
    ("UPDATE events SET logged_at = '2020-01-01T00:00:00.000000Z' WHERE type = 'protocol_commit'", "chain:"),
    ("DELETE FROM events WHERE seq = 3", "sequence number 4 where 3 was expected"),
    ("UPDATE log_items SET leaf = '" + "2" * 64 + "' WHERE rowid = 5", "items:"),
    # two detectors' names swapped: every score of one would be printed as the other's
    ("UPDATE specs SET name = CASE name WHEN 'GPTZero' THEN 'ZeroGPT' WHEN 'ZeroGPT' THEN 'GPTZero' ELSE name END",
     "detector spec row does not match its hash"),
    ("UPDATE specs SET settings = '{\"threshold\": 0.9}' WHERE name = 'GPTZero'", "specs:"),
    ("UPDATE commitments SET record = replace(record, '2026', '2020')", "stored commitment record differs"),
    # a run's per-document rows (what `export scores --run` writes) are covered by its event
    ("UPDATE run_rows SET flagged = NOT flagged WHERE doc_id = (SELECT min(doc_id) FROM run_rows WHERE flagged)",
     "per-document rows differ from what the run event logged"),
    ("UPDATE run_rows SET threshold = 0.9", "run_rows:"),
    ("DELETE FROM run_rows WHERE doc_id = (SELECT min(doc_id) FROM run_rows)", "(489 stored, 490 logged"),
    ("INSERT INTO run_rows (run_id, doc_id, detector) VALUES ('ghost-run', 'd', 'x')",
     "per-document rows of a run that is not stored"),
    # the import a document belongs to is how publish reaches it
    ("UPDATE documents SET import_id = 'zz' WHERE doc_id = (SELECT min(doc_id) FROM documents)",
     "is not the import that logged the document"),
    ("UPDATE documents SET kind = 'poem' WHERE doc_id = (SELECT min(doc_id) FROM documents)",
     "one of label, arm, kind, subgroup, corpus"),
])
def test_edits_with_plain_sql_are_found(ws, sql, check):
    ws.con.execute(sql)
    rep = verify_workspace(ws)
    assert not rep.ok
    assert check in "\n".join(rep.lines()), rep.lines()


def test_run_event_records_the_rows_digest(ws):
    run = ev.read_events(ws.con, types=("run",))[0]
    n, digest = ev.run_rows_digest(ws.con, run["payload"]["run_id"])
    assert run["payload"]["n_rows"] == n == 490 and run["payload"]["rows_sha256"] == digest


def test_cli_log_verify_exit_codes(liang_ws, tmp_path):
    import shutil

    from typer.testing import CliRunner

    from veribench.cli.main import app
    from veribench.store import Workspace

    w = tmp_path / "ws"
    shutil.copytree(liang_ws, w)
    r = CliRunner().invoke(app, ["log", "verify", "--workspace", str(w), "--json", str(tmp_path / "v.json")])
    assert r.exit_code == 0 and r.output.startswith("[ok] event log")
    assert json.loads((tmp_path / "v.json").read_text())["ok"] is True
    with Workspace(w) as x:
        x.con.execute("UPDATE protocols SET committed_at = '2020-01-01'")
    r = CliRunner().invoke(app, ["log", "verify", "--workspace", str(w)])
    assert r.exit_code == 1 and "[FAIL]" in r.output and "committed_at 2020-01-01" in r.output
    r = CliRunner().invoke(app, ["log", "verify", "--workspace", str(tmp_path / "nope")])
    assert r.exit_code == 1 and "no workspace here" in r.output and not (tmp_path / "nope").exists()


def test_log_show_lists_events(liang_ws):
    from typer.testing import CliRunner

    from veribench.cli.main import app

    r = CliRunner().invoke(app, ["log", "show", "--workspace", str(liang_ws), "--type", "protocol_commit"])
    assert r.exit_code == 0 and "protocol_commit" in r.output and "log-test" in r.output


def test_a_repeated_score_is_not_logged_twice(workspace):
    from veribench.records import ScoreResult
    from veribench.spec import Spec

    spec = Spec("detector", "d", "1")
    writes.put_scores(workspace, spec, [("a" * 64, ScoreResult(raw=0.1, ai_probability=0.1))])
    writes.put_scores(workspace, spec, [("a" * 64, ScoreResult(raw=0.9, ai_probability=0.9))])  # ignored: a stored call stays
    assert [e["payload"].get("n_score") for e in ev.read_events(workspace.con)] == [1]
    writes.put_scores(workspace, spec, [("a" * 64, ScoreResult(raw=0.7, ai_probability=0.7))], replace=True)
    assert verify_workspace(workspace).ok  # the replacement is logged as a new leaf, the latest


# -- properties of the chain ---------------------------------------------------------------

def _chain(payloads):
    prev, out = ev.GENESIS, []
    for i, p in enumerate(payloads, 1):
        at = f"2026-01-01T00:00:{i:02d}.000000Z"
        ps = ev.payload_digest(p)
        h = ev.event_hash(i, at, "import", ps, prev)
        out.append({"seq": i, "at": at, "type": "import", "payload": p, "payload_sha256": ps, "prev": prev, "hash": h})
        prev = h
    return out


payload = st.dictionaries(st.text(min_size=1, max_size=5), st.one_of(st.integers(), st.text(max_size=5),
                                                                      st.floats(allow_nan=False, allow_infinity=False)),
                          max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.lists(payload, min_size=2, max_size=12), st.data())
def test_any_single_edit_of_any_event_is_found(payloads, data):
    chain = _chain(payloads)
    assert ev.check_chain(chain)[0] == []
    i = data.draw(st.integers(0, len(chain) - 1))
    field = data.draw(st.sampled_from(["seq", "at", "type", "payload", "payload_sha256", "prev", "hash", "drop",
                                       "swap"]))
    e = chain[i]
    if field == "seq":
        e["seq"] += 1
    elif field == "at":
        e["at"] = "2025-12-31T23:59:59.000000Z"
    elif field == "type":
        e["type"] = "run"
    elif field == "payload":
        e["payload"] = {**e["payload"], "x": data.draw(st.integers())}
    elif field in ("payload_sha256", "prev", "hash"):
        e[field] = "f" * 64 if e[field] != "f" * 64 else "e" * 64
    elif field == "drop":
        chain.pop(i)
        if not chain:
            return
    else:
        j = (i + 1) % len(chain)
        if i == j:
            return
        chain[i], chain[j] = chain[j], chain[i]
    found, _ = ev.check_chain(chain)
    # a dropped last event leaves a valid shorter chain: the published head (run event) catches that
    assert found or (field == "drop" and i == len(chain))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(min_size=32, max_size=32), max_size=30), st.randoms())
def test_items_digest_ignores_order_only(leaves, rnd):
    hexes = [b.hex() for b in leaves]
    shuffled = list(hexes)
    rnd.shuffle(shuffled)
    assert ev.items_digest(hexes) == ev.items_digest(shuffled)
    if hexes:
        changed = list(hexes)
        changed[0] = ("0" if changed[0][0] != "0" else "1") + changed[0][1:]
        assert ev.items_digest(changed) != ev.items_digest(hexes)
        assert ev.items_digest(hexes[1:]) != ev.items_digest(hexes)


def test_leaf_forms_are_stable():
    """The leaf definitions are part of the bundle format: pinned here."""
    import hashlib

    # sha256 of the canonical JSON array, computed here without veribench
    assert ev.link_leaf("d", "s", "t") == hashlib.sha256(b'["d","s","t"]').hexdigest()
    assert ev.score_leaf("s", "t", "ok", 0.25, "p_ai", "higher_ai", 0.25, "AI", "v1", "2023-04-06T00:00:00Z") == \
        hashlib.sha256(b'["s","t","ok",0.25,"p_ai","higher_ai",0.25,"AI","v1","2023-04-06T00:00:00.000000Z",null]'
                       ).hexdigest()
    hz = {"invisible": 2, "confusables": 0, "degenerate_repetition": False, "distinct_word_trigram_ratio": 0.5}
    assert ev.score_leaf("s", "t", "ok", None, "p_ai", "higher_ai", None, None, None, None, hz) == \
        hashlib.sha256(b'["s","t","ok",null,"p_ai","higher_ai",null,null,null,null,{"confusables":0,'
                       b'"degenerate_repetition":false,"distinct_word_trigram_ratio":0.5,"invisible":2}]').hexdigest()
    a = ev.score_leaf("s", "t", "ok", 1, "p_ai", "higher_ai", 1, None, None, "2023-04-06T00:00:00Z")
    b = ev.score_leaf("s", "t", "ok", 1.0, "p_ai", "higher_ai", 1.0, None, None, "2023-04-06T00:00:00.000000+00:00")
    assert a == b  # an integer score and its float, one time in two spellings: one leaf
    assert ev.doc_leaf("d", "h", "human", None, None, None, None, None, '{"a": "1"}', None, None) == \
        ev.doc_leaf("d", "h", "human", None, None, None, None, None, {"a": "1"}, None, None) == hashlib.sha256(
            b'{"arm":null,"corpus":null,"doc_id":"d","generation":null,"group_key":null,"kind":null,"label":"human",'
            b'"provenance":null,"subgroup":null,"tags":{"a":"1"},"text_sha256":"h"}').hexdigest()


flat = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                 st.text(), st.dictionaries(st.text(max_size=3), st.one_of(st.text(max_size=3), st.integers()),
                                            max_size=3))


strs = st.one_of(st.none(), st.text())
nums = st.one_of(st.none(), st.integers(-10**6, 10**6), st.floats())


hazards = st.one_of(st.none(), st.fixed_dictionaries({"confusables": st.integers(0, 99), "invisible": st.integers(0, 9),
                                                      "degenerate_repetition": st.booleans(),
                                                      "distinct_word_trigram_ratio": st.one_of(st.none(), st.floats(
                                                          0, 1))}))


@settings(max_examples=300, deadline=None)
@given(st.text(), st.text(), strs, nums, strs, strs, nums, strs, strs, st.text(), st.text(), hazards)
def test_fast_leaf_encoding_is_canonical_json(h, t, status, raw, scale, dirn, p, vd, vv, did, sub, hz):
    """The per-row leaf encoders equal SHA-256 of canonical JSON exactly (escapes, floats, unicode)."""
    import hashlib
    import math

    from veribench.hashing import canonical_json

    # integers are stored as doubles; a non-finite value is stored as null
    f = lambda x: None if x is None or not math.isfinite(float(x)) else float(x)  # noqa: E731
    want = canonical_json([h, t, status, f(raw), scale, dirn, f(p), vd, vv, "2023-04-06T00:00:00.000000Z", hz])
    assert ev.score_leaf(h, t, status, raw, scale, dirn, p, vd, vv, "2023-04-06T00:00:00Z", hz) == \
        hashlib.sha256(want.encode()).hexdigest()
    if hz is not None:  # its canonical text, as a bundle carries it, gives the same leaf
        assert ev.score_leaf(h, t, status, raw, scale, dirn, p, vd, vv, "2023-04-06T00:00:00Z",
                             canonical_json(hz)) == hashlib.sha256(want.encode()).hexdigest()
    assert ev.link_leaf(did, h, sub) == hashlib.sha256(canonical_json([did, h, sub]).encode()).hexdigest()


@given(st.datetimes(min_value=__import__("datetime").datetime(1900, 1, 1),
                    timezones=st.just(__import__("datetime").timezone.utc)))
def test_utc_text_round_trips(dt):
    t = ev.utc_text(dt)
    assert ev.utc_text(t) == t and ev.parse_utc(t) == dt


def test_a_workspace_without_a_log_is_a_clear_failure(tmp_path):
    import duckdb

    from veribench.store import Workspace
    from veribench.store.migrations import SchemaVersionError

    (tmp_path / "old").mkdir()
    con = duckdb.connect(str(tmp_path / "old" / "veribench.duckdb"))
    con.execute("CREATE TABLE documents (doc_id VARCHAR, corpus VARCHAR, text VARCHAR, text_sha256 VARCHAR NOT NULL, "
                "label VARCHAR NOT NULL, arm VARCHAR, kind VARCHAR, subgroup VARCHAR, tags JSON, group_key VARCHAR, "
                "provenance JSON, generation JSON, import_id VARCHAR)")
    con.execute("INSERT INTO documents (doc_id, text_sha256, label) VALUES ('d1', 'ab', 'human')")
    con.close()
    # read-only: refused with one line naming both versions and the command that migrates it
    with pytest.raises(SchemaVersionError, match=rf"schema version 1 .* reads version {schema.VERSION}: run `veribench workspace migrate"):
        Workspace(tmp_path / "old", read_only=True)
    # migrated (read-write open): the log now exists, and the row stored before it is named as not covered
    with Workspace(tmp_path / "old") as w:
        rep = verify_workspace(w)
    assert not rep.ok and "document row is not covered by the log" in rep.lines()[0]


def test_batched_leaves_give_the_event_append_event_gives(workspace):
    """An import's leaves in pages (a streamed corpus): same digest, count and leaf rows as
    one list; the digest is :func:`items_digest` of the leaves whatever the pages' order."""
    import hashlib
    import random

    from veribench.store import events as ev

    leaves = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(2_500)]
    leaves += ["00" * 32, "ff" * 32, "00" * 31 + "01", "01" + "00" * 31]  # extremes of byte order
    items = [(f"d{i}", None, lf) for i, lf in enumerate(leaves)]
    rng = random.Random(3)
    shuffled = items[:]
    rng.shuffle(shuffled)
    pages = [shuffled[i:i + 97] for i in range(0, len(shuffled), 97)]
    with workspace.transaction() as con:
        a = ev.append_event(con, "import", {"import_id": "x"}, items={"doc": items})
        b = ev.append_event_batched(con, "import", {"import_id": "x"}, "doc", iter(pages))
        c = ev.append_event_batched(con, "import", {"import_id": "empty"}, "doc", iter([[], []]))
    assert a["payload"]["doc_sha256"] == b["payload"]["doc_sha256"] == ev.items_digest(leaves)
    assert b["payload"]["n_doc"] == len(leaves) and b["seq"] == a["seq"] + 1
    assert c["payload"] == {"import_id": "empty", "n_doc": 0, "doc_sha256": ev.items_digest([])}
    got = workspace.query("SELECT seq, count(*) FROM log_items GROUP BY seq ORDER BY seq")
    assert got == [(a["seq"], len(leaves)), (b["seq"], len(leaves))]
    found, head = ev.check_chain(ev.read_events(workspace.con))
    assert found == [] and head["seq"] == c["seq"]
