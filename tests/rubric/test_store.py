"""Loading pairs, blind ids, editors and tokens, assignment rules, and refusal of bad readings."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.rubric.rubric_helpers import real_pairs
from veribench.errors import InputError
from veribench.rubric import loaders, results, store
from veribench.rubric import schema as rubric_schema
from veribench.rubric.store import Pair, RatingError


def _synthetic(n_tools: int = 2, per_tool: int = 3) -> list[Pair]:
    out = []
    for t in range(n_tools):
        for i in range(per_tool):
            out.append(Pair(pair_key=f"k{t}-{i}", tool=f"tool{t}", input_text=f"Input {i} says one thing. And another.",
                            output_text=f"Output {i} of {t} says a thing. It adds more. Then ends."))
    return out


def _editors(ws, *names) -> dict[str, str]:
    return {n: store.add_editor(ws, n) for n in names}


def test_load_real_cycles_both_months(workspace, july_dir, june_dir):
    pairs, rep = loaders.pairs_from_cycle(july_dir)
    assert rep["tests"] == 429 and rep["pairs"] == 429 and rep["skipped"] == {}
    assert len({p.tool for p in pairs}) == 13
    assert all(p.input_text.strip() and p.output_text.strip() for p in pairs)
    june, rep2 = loaders.pairs_from_cycle(june_dir, limit=26)
    assert rep2["pairs"] == 390 and len(june) == 26
    # the limited subset is fixed (same on rerun) and spread over tools
    again, _ = loaders.pairs_from_cycle(june_dir, limit=26)
    assert [p.pair_key for p in june] == [p.pair_key for p in again]
    assert len({p.tool for p in june}) >= 8
    assert store.add_pairs(workspace, june) == {"added": 26, "already_loaded": 0}
    assert store.add_pairs(workspace, june[:5]) == {"added": 0, "already_loaded": 5}
    rows = store.db(workspace).query("SELECT blind_id, tool, output_text, output_sentences, output_words FROM rubric_items")
    assert len(rows) == 26
    for bid, tool, text, sents, n in rows:
        assert re.fullmatch(r"r-[a-z2-9]{10}", bid)
        assert tool not in bid
        sents = json.loads(sents)
        assert sents and all(s in text for s in sents)
        assert n == sum(1 for t in text.split() if any(c.isalnum() for c in t))


def test_blind_ids_reveal_neither_tool_nor_order(workspace):
    pairs = [Pair(pair_key=f"k{i:03d}", tool=f"tool{i % 3}", input_text="In.", output_text="Out.") for i in range(60)]
    store.add_pairs(workspace, pairs)
    rows = store.db(workspace).query("SELECT blind_id, pair_key, tool FROM rubric_items ORDER BY blind_id")
    keys = [k for _, k, _ in rows]
    assert keys != sorted(keys)  # blind-id order is not load order
    # no tool's outputs cluster in blind-id order: every tool shows up among the first 20
    assert len({t for _, _, t in rows[:20]}) == 3
    assert len({b for b, _, _ in rows}) == 60


def test_bad_cycle_bundle_names_file_record_field(tmp_path):
    d = tmp_path / "cyc"
    d.mkdir()
    (d / "samples.json").write_text("[]")
    (d / "tests.json").write_text(json.dumps([{"id": "t1", "humanizer_slug": "x", "output_text": "o",
                                                "sample_id": "s9", "status": "complete"}]))
    with pytest.raises(InputError) as e:
        loaders.pairs_from_cycle(d)
    assert e.value.record == "t1" and e.value.field == "input_text" and "tests.json" in e.value.file
    (d / "tests.json").write_text("{not json")
    with pytest.raises(InputError, match="malformed JSON"):
        loaders.pairs_from_cycle(d)
    with pytest.raises(InputError, match="not found"):
        loaders.pairs_from_cycle(tmp_path / "nope")
    # failed or empty runs are skipped and counted, not loaded
    (d / "samples.json").write_text(json.dumps([{"id": "s1", "input_text": "The input."}]))
    (d / "tests.json").write_text(json.dumps([
        {"id": "a", "sample_id": "s1", "humanizer_slug": "x", "output_text": "Out.", "status": "complete"},
        {"id": "b", "sample_id": "s1", "humanizer_slug": "x", "output_text": "", "status": "complete"},
        {"id": "c", "sample_id": "s1", "humanizer_slug": "x", "output_text": None, "status": "failed"}]))
    pairs, rep = loaders.pairs_from_cycle(d)
    assert [p.pair_id for p in pairs] == ["a"] and pairs[0].input_text == "The input."
    assert rep["skipped"] == {"empty output": 1, "status failed": 1}


def test_pairs_from_workspace(workspace):
    workspace.con.execute(
        "INSERT INTO documents (doc_id, text, text_sha256, label, tags) VALUES "
        "('in1', 'Source text here.', 'x', 'ai', '{}'), "
        "('out1', 'Rewritten text.', 'y', 'ai-edited-human', '{\"humanizer\": \"hz\", \"input_doc_id\": \"in1\"}')")
    pairs, rep = loaders.pairs_from_workspace(workspace)
    assert [(p.tool, p.input_text, p.output_text) for p in pairs] == [("hz", "Source text here.", "Rewritten text.")]


def test_tokens_are_stored_hashed_and_authenticate(workspace, tmp_path):
    toks = _editors(workspace, "alice", "bob")
    assert all(len(t) >= 43 for t in toks.values())  # 32 random bytes, url-safe base64
    stored = [r[0] for r in store.db(workspace).query("SELECT token_sha256 FROM rubric_editors")]
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in stored)
    assert store.editor_for_token(workspace, toks["alice"]) == "alice"
    assert store.editor_for_token(workspace, "wrong") is None and store.editor_for_token(workspace, "") is None
    workspace.con.execute("CHECKPOINT")
    raw = (workspace.path / "veribench.duckdb").read_bytes()
    assert toks["alice"].encode() not in raw and toks["bob"].encode() not in raw
    with pytest.raises(InputError, match="already exists"):
        store.add_editor(workspace, "Alice")
    with pytest.raises(InputError, match="editor name"):
        store.add_editor(workspace, "../x")
    store.add_pairs(workspace, [Pair("k", "sneaky", "In.", "Out.")])
    with pytest.raises(InputError, match="name of a tool"):
        store.add_editor(workspace, "Sneaky")


@settings(max_examples=200, deadline=None)
@given(n_items=st.integers(1, 40), n_editors=st.integers(2, 7), data=st.data())
def test_plan_two_distinct_editors_per_output_and_balanced_loads(n_items, n_editors, data):
    editors = [f"ed{e}" for e in range(n_editors)]
    items = [f"r-{i:04d}" for i in range(n_items)]
    new = store.plan_assignments(editors, items, [])
    assert len(new) == 2 * n_items
    per_item = Counter(b for b, _, _ in new)
    assert set(per_item.values()) == {2}
    assert len({(b, e) for b, e, _ in new}) == len(new)  # never the same editor twice
    assert {frozenset(n for b2, _, n in new if b2 == b) for b in per_item} == {frozenset({1, 2})}
    load = Counter(e for _, e, _ in new)
    counts = [load.get(e, 0) for e in editors]
    assert max(counts) - min(counts) <= 1
    assert store.plan_assignments(editors, items, new) == []  # complete: nothing more to do
    # third reads go to an editor not yet on the output, least loaded first
    gaps = data.draw(st.lists(st.sampled_from(items), unique=True, max_size=n_items))
    third = store.plan_assignments(editors, items, new, gaps)
    if n_editors >= 3:
        assert sorted(b for b, _, _ in third) == sorted(gaps) and all(n == 3 for _, _, n in third)
        for b, e, _ in third:
            assert e not in {e2 for b2, e2, _ in new if b2 == b}
    else:
        assert third == []


def test_assignments_in_the_workspace(workspace):
    store.add_pairs(workspace, [Pair(f"k{i}", f"t{i % 4}", "In.", "Out.") for i in range(7)])
    store.add_editor(workspace, "ed0")
    # one editor: each output gets its one possible reader and waits for a second
    assert store.ensure_assignments(workspace) == {"assigned": 7, "third_reads_assigned": 0}
    assert store.assignment_status(workspace)["outputs_short_of_readers"] == 7
    for e in ("ed1", "ed2"):
        store.add_editor(workspace, e)
    assert store.ensure_assignments(workspace) == {"assigned": 7, "third_reads_assigned": 0}
    rows = store.db(workspace).query("SELECT blind_id, editor, read_no FROM rubric_assignments")
    assert Counter(b for b, _, _ in rows).most_common()[-1][1] == 2
    load = Counter(e for _, e, _ in rows)
    assert load["ed0"] == 7 and abs(load["ed1"] - load["ed2"]) <= 1
    assert store.ensure_assignments(workspace) == {"assigned": 0, "third_reads_assigned": 0}


def _read(ws, editor, bid, score, found=None, marks=(), claims=("c1", "c2")):
    """One reading; by default every claim is found (no fault caps the score)."""
    found = range(len(claims)) if found is None else found
    a = store.assignment(ws, editor, bid)
    if a["claims"] is None:
        store.save_claims(ws, editor, bid, list(claims), store.issue_form(ws, editor, bid, "claims"))
    return store.submit_reading(ws, editor, bid, score=score, found=found, marks=marks,
                                form_token=store.issue_form(ws, editor, bid, "rating"))


def test_gap_of_two_assigns_a_blind_third_read(workspace):
    store.add_pairs(workspace, _synthetic(1, 2))
    _editors(workspace, "alice", "bob")
    store.ensure_assignments(workspace)
    b1, b2 = sorted(r[0] for r in store.db(workspace).query("SELECT blind_id FROM rubric_items"))
    assert _read(workspace, "alice", b1, 5)["third_read_assigned"] is False
    assert _read(workspace, "bob", b1, 4)["third_read_assigned"] is False  # gap 1 stands
    _read(workspace, "alice", b2, 4)
    # gap 2 and no free editor yet: waits, and is picked up once an editor is added
    assert _read(workspace, "bob", b2, 2)["third_read_assigned"] is False
    assert store.assignment_status(workspace)["third_reads_waiting_for_an_editor"] == 1
    store.add_editor(workspace, "carol")
    assert store.ensure_assignments(workspace) == {"assigned": 0, "third_reads_assigned": 1}
    assert store.assignments_for(workspace, "carol") == [{"blind_id": b2, "state": "claims"}]
    assert store.db(workspace).query("SELECT read_no FROM rubric_assignments WHERE editor='carol'") == [(3,)]
    # with carol present from the start the third read is assigned as the gap opens
    store.add_pairs(workspace, [Pair("extra", "tool0", "In. Two.", "Out. Two.")])
    store.ensure_assignments(workspace)
    b3 = [a["blind_id"] for a in store.assignments_for(workspace, "carol") if a["blind_id"] != b2]
    assert b3  # carol (least loaded) gets a first read of the new output
    other = [e for e, in store.db(workspace).query("SELECT editor FROM rubric_assignments WHERE blind_id=? AND editor<>'carol'",
                                         [b3[0]])][0]
    _read(workspace, "carol", b3[0], 1)
    r = _read(workspace, other, b3[0], 3)
    assert r["third_read_assigned"] is True
    third = [e for e, n in store.db(workspace).query("SELECT editor, read_no FROM rubric_assignments WHERE blind_id=?",
                                           [b3[0]]) if n == 3]
    assert third and third[0] not in ("carol", other)


def test_bad_readings_are_refused_and_change_nothing(workspace):
    store.add_pairs(workspace, _synthetic(1, 1))
    _editors(workspace, "alice", "bob", "carol")
    store.ensure_assignments(workspace)
    (bid,) = [r[0] for r in store.db(workspace).query("SELECT blind_id FROM rubric_items")]
    ed = store.db(workspace).query("SELECT editor FROM rubric_assignments ORDER BY editor")[0][0]
    outsider = ({"alice", "bob", "carol"} - {e for e, in store.db(workspace).query("SELECT editor FROM rubric_assignments")}).pop()
    store.save_claims(workspace, ed, bid, ["c1", "c2"], store.issue_form(workspace, ed, bid, "claims"))
    tok = store.issue_form(workspace, ed, bid, "rating")

    def snapshot():
        return (store.db(workspace).query("SELECT * FROM rubric_ratings ORDER BY 1, 2"),
                store.db(workspace).query("SELECT * FROM rubric_marks ORDER BY 1, 2, 3, 5"))

    before = snapshot()
    for bad in (0, 6, "4.5", "", "five", None, True, 3.5):
        with pytest.raises(RatingError, match="whole number from 1 to 5") as e:
            store.submit_reading(workspace, ed, bid, score=bad, found=[], marks=[], form_token=tok)
        assert e.value.status == 400
    n_sent = len(store.get_item(workspace, bid)["sentences"])
    for bad_mark in (f"{n_sent}:synonym_misfire", "-1:synonym_misfire", "x:synonym_misfire",
                     {"sentence": "A sentence that is not there.", "class": "fragment_run_on"}):
        with pytest.raises(RatingError, match="not in the output"):
            store.submit_reading(workspace, ed, bid, score=3, found=[], marks=[bad_mark], form_token=tok)
    with pytest.raises(RatingError, match="unknown mark class"):
        store.submit_reading(workspace, ed, bid, score=3, found=[], marks=["0:typo"], form_token=tok)
    with pytest.raises(RatingError, match="ticked claim 3 does not exist"):
        store.submit_reading(workspace, ed, bid, score=3, found=[2], marks=[], form_token=tok)
    with pytest.raises(RatingError) as e:
        store.submit_reading(workspace, outsider, bid, score=3, found=[], marks=[], form_token=tok)
    assert e.value.status == 404
    with pytest.raises(RatingError, match="not issued for this page"):
        store.submit_reading(workspace, ed, bid, score=3, found=[0, 1], marks=[],
                             form_token=store.issue_form(workspace, ed, bid, "claims"))
    assert snapshot() == before
    # the same form, now valid, is accepted once; its replay is refused and changes nothing
    sent = store.get_item(workspace, bid)["sentences"][0]
    store.submit_reading(workspace, ed, bid, score="2", found=["0"],
                         marks=["0:synonym_misfire", {"sentence": sent, "class": "invented_fact"}], form_token=tok)
    after = snapshot()
    assert after[0][0][3] == 2 and len(after[1]) == 2
    with pytest.raises(RatingError, match="replayed form") as e:
        store.submit_reading(workspace, ed, bid, score=5, found=[0, 1], marks=[], form_token=tok)
    assert e.value.status == 409
    with pytest.raises(RatingError, match="already rated"):
        store.submit_reading(workspace, ed, bid, score=5, found=[0, 1], marks=[],
                             form_token=store.issue_form(workspace, ed, bid, "rating"))
    with pytest.raises(RatingError, match="already listed"):
        store.save_claims(workspace, ed, bid, ["other"], store.issue_form(workspace, ed, bid, "claims"))
    assert snapshot() == after


def test_real_pairs_load_with_readability(workspace, july_tests):
    from veribench.text.words import fk_grade

    pairs = real_pairs(july_tests, [("notegpt", 1)])
    store.add_pairs(workspace, pairs)
    (read,) = store.db(workspace).query("SELECT readability FROM rubric_items")[0]
    read = json.loads(read)
    import textstat

    assert read["fk_grade_input"] == round(textstat.flesch_kincaid_grade(pairs[0].input_text), 2)
    assert read["fk_grade_delta"] == pytest.approx(fk_grade(pairs[0].output_text) - fk_grade(pairs[0].input_text),
                                                   abs=0.011)


def test_rebalance_moves_only_unstarted_work(workspace):
    store.add_pairs(workspace, [Pair(f"k{i}", f"t{i % 3}", "In. More.", "Out. More.") for i in range(9)])
    for e in ("alice", "bob"):
        store.add_editor(workspace, e)
    store.ensure_assignments(workspace)
    started = store.assignments_for(workspace, "alice")[0]["blind_id"]
    _read(workspace, "alice", started, 4)
    store.add_editor(workspace, "carol")
    assert store.ensure_assignments(workspace)["assigned"] == 0
    moved = store.rebalance(workspace)
    rows = store.db(workspace).query("SELECT blind_id, editor FROM rubric_assignments")
    load = Counter(e for _, e in rows)
    assert moved == 6 and sorted(load.values()) == [6, 6, 6]
    assert Counter(b for b, _ in rows) == Counter({b: 2 for b, _ in rows})
    assert len(set(rows)) == 18  # still never the same editor twice
    assert (started, "alice") in rows  # started work stays with its reader
    assert store.rebalance(workspace) == 0


def test_sentence_split_keeps_list_items_and_abbreviations_whole():
    from veribench.text.words import split_sentences

    text = ("**10 Tips**\n1. Avoid new shoes. Seriously, don't.\n2. Plan (and stick to it)\n"
            "She ran 10. Then she rested, e.g. on Sunday. Dr. Li agreed! \"Really?\" he asked.")
    assert split_sentences(text) == [
        "**10 Tips**", "1. Avoid new shoes.", "Seriously, don't.", "2. Plan (and stick to it)", "She ran 10.",
        "Then she rested, e.g. on Sunday.", "Dr. Li agreed!", "\"Really?\"", "he asked."]


def test_rubric_tables_kept_in_the_duckdb_file_by_earlier_versions_are_copied(tmp_path, july_tests):
    """A workspace from before the SQLite store: its rubric rows move to rubric.sqlite on first
    use (the DuckDB copy is left as it was); a read-only reader sees them without writing a file."""
    from veribench.rubric.db import FILE_NAME
    from veribench.store import Workspace

    src = tmp_path / "new"
    db = store.open_rubric(src)
    store.add_pairs(db, real_pairs(july_tests, [("humbot", 2)]))
    token = store.add_editor(db, "alice")
    store.ensure_assignments(db)
    legacy = {t: (db.query(f"SELECT * FROM {t}")) for t in ("rubric_items", "rubric_editors", "rubric_assignments",
                                                           "rubric_meta")}
    db.close()
    old = tmp_path / "old"
    with Workspace(old) as ws:  # write the rows where earlier versions kept them
        for t in rubric_schema.LEGACY_DUCKDB_TABLES:
            ws.con.execute(rubric_schema.create_sql(t))
        for t, rows in legacy.items():
            for r in rows:
                ws.con.execute(f"INSERT INTO {t} VALUES ({', '.join('?' * len(r))})", list(r))
    with Workspace(old, read_only=True) as ro:
        assert [r["tool"] for r in results.tool_results(ro)] == ["humbot"]
    assert not (old / FILE_NAME).exists()  # the read-only reader wrote nothing
    db = store.open_rubric(old)
    assert store.editor_for_token(db, token) == "alice"
    assert sorted(db.query("SELECT blind_id, editor FROM rubric_assignments")) == \
        sorted((b, e) for b, e, *_ in legacy["rubric_assignments"])
    db.close()
    assert (old / FILE_NAME).exists()
    with Workspace(old, read_only=True) as ro:  # the DuckDB copy is untouched
        assert ro.query("SELECT count(*) FROM rubric_items") == [(2,)]
