"""Aggregation: the rubric's per-100-words example, the 2-of-3 rule, medians, Krippendorff's
alpha against a plain implementation, and ratings.csv."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veribench.rubric import results, rules, store
from veribench.rubric.store import Pair

REPO = Path(__file__).resolve().parents[2]


def plain_ordinal_alpha(units: list[tuple[int, int]]) -> float:
    """Krippendorff's alpha, ordinal metric, two coders, no missing values, written out from
    the coincidence matrix (Krippendorff 2011, section C/E): alpha = 1 - (n-1) * sum o_ck d_ck /
    sum n_c n_k d_ck with d_ck = (sum_{g=c..k} n_g - (n_c + n_k)/2)^2."""
    vals = range(1, 6)
    o = {(c, k): 0.0 for c in vals for k in vals}
    for a, b in units:
        o[(a, b)] += 1
        o[(b, a)] += 1
    n_c = {c: sum(o[(c, k)] for k in vals) for c in vals}
    n = sum(n_c.values())

    def d(c, k):
        lo, hi = min(c, k), max(c, k)
        return (sum(n_c[g] for g in range(lo, hi + 1)) - (n_c[c] + n_c[k]) / 2) ** 2

    num = sum(o[(c, k)] * d(c, k) for c in vals for k in vals)
    den = sum(n_c[c] * n_c[k] * d(c, k) for c in vals for k in vals)
    return 1 - (n - 1) * num / den


def test_rubric_example_per_100_words():
    # "a 600-word output with six marked errors and a 300-word output with three both read as 1.0"
    assert results.errors_per_100_words(6, 600) == 1.0
    assert results.errors_per_100_words(3, 300) == 1.0
    assert results.errors_per_100_words(6 + 3, 600 + 300) == 1.0
    assert results.errors_per_100_words(1, 0) is None


def test_rubric_example_through_the_workspace(workspace):
    """The same example end to end: two outputs of one tool, 600 and 300 words, with 6 and 3
    writing errors that both readers marked."""
    def text(n_words: int, n_sent: int) -> str:
        per = n_words // n_sent
        return " ".join(" ".join(["word"] * (per - 1)) + " end." for _ in range(n_sent))

    store.add_pairs(workspace, [Pair("long", "toolx", "Input.", text(600, 10)),
                                Pair("short", "toolx", "Input.", text(300, 5))])
    for e in ("alice", "bob"):
        store.add_editor(workspace, e)
    store.ensure_assignments(workspace)
    items = {w: b for b, w in store.db(workspace).query("SELECT blind_id, output_words FROM rubric_items")}
    assert sorted(items) == [300, 600]
    for words, n_err in ((600, 6), (300, 3)):
        b = items[words]
        marks = [f"{i}:{rules.WRITING_CLASSES[i % 6]}" for i in range(n_err)]
        for e in ("alice", "bob"):
            store.save_claims(workspace, e, b, ["c"], None, require_form=False)
            store.submit_reading(workspace, e, b, score=4, found=[0], marks=marks, form_token=None, require_form=False)
    outs = {o["output_words"]: o for o in results.output_results(workspace)}
    assert outs[600]["errors_per_100_words"] == 1.0 and outs[300]["errors_per_100_words"] == 1.0
    (t,) = results.tool_results(workspace)
    assert t["errors_per_100_words_total"] == 1.0 and t["output_words"] == 900


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5)), min_size=2, max_size=30))
def test_alpha_matches_plain_implementation(units):
    a, note = results.ordinal_alpha([u[0] for u in units], [u[1] for u in units])
    if len({v for u in units for v in u}) < 2:
        assert a is None and "no variation" in note
    else:
        assert a == pytest.approx(plain_ordinal_alpha(units), abs=1e-9)


def test_alpha_published_value_and_missing():
    # Krippendorff's worked example via the package's docs is nominal/interval; here a small
    # ordinal case by hand: units (1,1),(2,3),(3,3),(5,4) -> see plain_ordinal_alpha
    units = [(1, 1), (2, 3), (3, 3), (5, 4)]
    a, _ = results.ordinal_alpha([1, 2, 3, 5, None], [1, 3, 3, 4, 2])  # the last unit lacks a pair
    assert a == pytest.approx(plain_ordinal_alpha(units))
    assert results.ordinal_alpha([3], [4]) == (None, "needs at least 2 outputs with both first reads (has 1)")


def _setup(workspace):
    """Three outputs of two tools, three editors; returns blind ids by key."""
    pairs = [
        Pair("a1", "toolA", "Claim one. Claim two. Claim three.",
             "First sentence here. Second sentence follows. Third one ends."),          # 9 words
        Pair("a2", "toolA", "Only claim.", "One two three four five. Six seven eight nine ten. Eleven."),  # 11
        Pair("b1", "toolB", "Other claim.", "Alpha beta gamma. Delta epsilon."),        # 5 words
    ]
    store.add_pairs(workspace, pairs)
    for e in ("alice", "bob"):
        store.add_editor(workspace, e)
    store.ensure_assignments(workspace)
    store.add_editor(workspace, "carol")
    return dict(store.db(workspace).query("SELECT pair_key, blind_id FROM rubric_items"))


def _rate(ws, e, b, score, claims, found, marks):
    store.save_claims(ws, e, b, claims, None, require_form=False)
    return store.submit_reading(ws, e, b, score=score, found=found, marks=marks, form_token=None, require_form=False)


def test_aggregates_match_hand_computed(workspace):
    ids = _setup(workspace)
    a1, a2, b1 = ids["a1"], ids["a2"], ids["b1"]
    # a1: 4 and 3 (gap 1 stands; bob's one dropped claim caps his score at 3); sentence 0
    # synonym misfire marked by both -> counts; sentence 1 fragment by alice only -> does not count
    _rate(workspace, "alice", a1, 4, ["c1", "c2", "c3"], [0, 1, 2], ["0:synonym_misfire", "1:fragment_run_on"])
    _rate(workspace, "bob", a1, 3, ["c1", "c2"], [0], ["0:synonym_misfire"])
    # a2: 4 and 2 -> third read by carol (3); broken reference on sentence 2 by alice and carol -> counts
    _rate(workspace, "alice", a2, 4, ["c"], [0], ["2:broken_reference"])
    r = _rate(workspace, "bob", a2, 2, ["c", "d"], [], ["0:invented_fact", "1:invented_fact",
                                                       "1:changed_number_name_date"])
    assert r == {"dropped_claims": 2, "invented_facts": 2, "changed_facts": 1, "third_read_assigned": True}
    assert store.assignments_for(workspace, "carol") == [{"blind_id": a2, "state": "claims"}]
    # before the third read, a2 is incomplete and left out of the means
    t = {x["tool"]: x for x in results.tool_results(workspace)}
    assert t["toolA"]["outputs_complete"] == 1 and t["toolA"]["meaning_score_mean"] == 3.5
    _rate(workspace, "carol", a2, 3, ["c"], [0], ["2:broken_reference", "0:invented_fact"])
    # b1: 3 and 3, no marks
    _rate(workspace, "alice", b1, 3, ["x"], [0], [])
    _rate(workspace, "bob", b1, 3, ["x"], [0], [])

    t = {x["tool"]: x for x in results.tool_results(workspace)}
    A, B = t["toolA"], t["toolB"]
    # per-output medians: a1 score 3.5, a2 median(4,2,3)=3 -> mean 3.25
    assert A["meaning_score_mean"] == 3.25 and A["outputs_complete"] == 2 and A["reads"] == 5
    # dropped: a1 reads 0,1 -> 0.5; a2 reads 0,2,0 -> 0; invented a1 0,0 -> 0; a2 0,2,1 -> 1
    assert A["dropped_claims_total"] == 0.5 and A["dropped_claims_mean"] == 0.25
    assert A["invented_facts_total"] == 1.0 and A["changed_facts_total"] == 0.0  # a2 changed 0,1,0 -> 0
    assert A["output_words"] == 20
    assert A["writing_errors"] == {**dict.fromkeys(rules.WRITING_CLASSES, 0), "synonym_misfire": 1,
                                   "broken_reference": 1}
    assert A["errors_per_100_words"]["synonym_misfire"] == pytest.approx(100 / 20)
    assert A["errors_per_100_words"]["fragment_run_on"] == 0.0
    assert A["errors_per_100_words_total"] == pytest.approx(200 / 20)
    assert A["third_reads"] == 1 and A["third_reads_done"] == 1 and B["third_reads"] == 0
    assert A["krippendorff_alpha_ordinal"] == pytest.approx(plain_ordinal_alpha([(4, 3), (4, 2)]))
    assert B["krippendorff_alpha_ordinal"] is None and "has 1" in B["alpha_note"]
    assert B["meaning_score_mean"] == 3.0 and B["errors_per_100_words_total"] == 0.0
    doc = results.results_document(workspace)
    assert doc["overall"]["krippendorff_alpha_ordinal"] == pytest.approx(
        plain_ordinal_alpha([(4, 3), (4, 2), (3, 3)]))

    # ratings.csv
    text = results.write_ratings_csv(workspace)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0].keys()) == results.RATINGS_COLUMNS
    reads = {(r["blind_id"], r["editor"]) for r in rows}
    assert len(reads) == 7
    carol = [r for r in rows if r["editor"] == "carol"]
    assert {r["third_read"] for r in carol} == {"true"} and {r["read_no"] for r in carol} == {"3"}
    assert {r["third_read"] for r in rows if r["editor"] != "carol"} == {"false"}
    a1_sents = store.get_item(workspace, a1)["sentences"]
    syn = [r for r in rows if r["blind_id"] == a1 and r["mark_class"] == "synonym_misfire"]
    assert len(syn) == 2 and {r["sentence_text"] for r in syn} == {a1_sents[0]}
    assert {r["mark_counted"] for r in syn} == {"true"} and {r["mark_readers"] for r in syn} == {"2"}
    frag = [r for r in rows if r["mark_class"] == "fragment_run_on"]
    assert [(r["editor"], r["mark_counted"], r["sentence_text"]) for r in frag] == [("alice", "false", a1_sents[1])]
    dropped = [r for r in rows if r["blind_id"] == a1 and r["editor"] == "bob" and r["mark_class"] == "dropped_claim"]
    assert [(r["mark_source"], r["sentence_text"]) for r in dropped] == [("claim", "c2")]
    b1_rows = [r for r in rows if r["blind_id"] == b1]
    assert len(b1_rows) == 2 and all(r["mark_class"] == "" and r["score"] == "3" for r in b1_rows)
    assert "tool" not in rows[0] and "toolA" not in text
    un = list(csv.DictReader(io.StringIO(results.write_ratings_csv(workspace, unblind=True))))
    assert {(r["blind_id"], r["tool"]) for r in un} == {(a1, "toolA"), (a2, "toolA"), (b1, "toolB")}


def test_schema_doc_lists_every_column_and_results_key(workspace):
    doc = (REPO / "docs" / "ratings-schema.md").read_text(encoding="utf-8")
    for col in results.RATINGS_COLUMNS:
        assert re.search(rf"^\| `{col}` \|", doc, re.M), col
    _setup(workspace)
    (t, *_) = results.tool_results(workspace)
    for key in t:
        assert re.search(rf"^\| `{key}` \|", doc, re.M), key
    assert results.SCHEMA_ID in doc


def test_alpha_interval_matches_a_plain_bootstrap_loop():
    """Issue 28: alpha's 95% interval is a percentile bootstrap over units; reference: a loop
    written here with the same generator, the plain coincidence-matrix alpha on each resample."""
    import numpy as np

    first = [1, 2, 3, 5, 4, 2, 3, 4, 5, 1, 2, 3, 4, 4, 2, None]
    second = [1, 3, 3, 4, 4, 2, 2, 5, 5, 2, 2, 4, 4, 3, 1, 2]
    units = [(a, b) for a, b in zip(first, second) if a is not None]
    ci, why = results.alpha_interval(first, second, seed=4, n_resamples=300)
    rng = np.random.default_rng(4)
    reps = []
    for _ in range(300):
        draw = [units[i] for i in rng.integers(0, len(units), size=len(units))]
        if len({v for u in draw for v in u}) > 1:
            reps.append(plain_ordinal_alpha(draw))
    assert why is None
    assert ci == pytest.approx(list(np.percentile(reps, [2.5, 97.5])), abs=1e-9)
    a, _ = results.ordinal_alpha(first, second)
    assert ci[0] < a < ci[1]


def test_alpha_interval_null_with_reason_when_alpha_undefined():
    assert results.alpha_interval([3, 3, 3], [3, 3, 3]) == (None, "all scores are equal: no variation, alpha is "
                                                                   "undefined")
    f = results.alpha_fields([3], [4])
    assert f["krippendorff_alpha_ci_95"] is None and "at least 2 outputs" in f["krippendorff_alpha_ci_95_reason"]
