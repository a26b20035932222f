"""Mixed-text metrics: word/character boundaries, SemEval-2024 Task 8 subtask C's MAE against
its official scorer's logic (re-implemented here on files in its format), sentence-level
AUROC and F1 against scikit-learn, WindowDiff / Pk through NLTK on worked examples."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import f1_score, roc_auc_score

from veribench.metrics import segmentation as seg

SUBTASK_C = Path(__file__).resolve().parents[1] / "data" / "public" / "semeval" / "subtaskC"


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.text(alphabet="ab\n.", max_size=4), min_size=1, max_size=12),
       last=st.text(alphabet="ab.", min_size=1, max_size=3), data=st.data())
def test_word_and_character_boundaries_round_trip(words, last, data):
    words = words + [last]  # a text ends in a word (else its end is also the start of an empty word)
    text = " ".join(words)  # empty words come from double spaces, as in split(" ")
    b = data.draw(st.integers(0, len(words)))
    c = seg.boundary_char(text, b)
    assert seg.boundary_word(text, c) == b
    if b < len(words):
        assert text[c:] == " ".join(words[b:])
    # human part + " " + machine part, as the task builds its texts: the label is the human word count
    assert seg.boundary_word(text, c) == (len(" ".join(words[:b]).split(" ")) if b else 0)


def test_boundary_inside_a_word_counts_the_word_as_human():
    text = "one two three"
    assert seg.boundary_word(text, 5) == 2 and seg.boundary_word(text, 4) == 1
    with pytest.raises(ValueError):
        seg.boundary_char(text, 4)


def official_subtask_c_mae(pred_path: Path, gold_path: Path) -> float:
    """SemEval-2024 Task 8 subtask C's scorer (``subtaskC/scorer/scorer.py`` ``evaluate``),
    re-implemented: read both JSONL files, merge on id, mean of |gold - pred|."""
    pred = pd.read_json(pred_path, lines=True)[["id", "label"]]
    gold = pd.read_json(gold_path, lines=True)[["id", "label"]]
    merged = pred.merge(gold, on="id", suffixes=("_pred", "_gold"))
    return float(np.mean(merged.apply(lambda r: abs(r["label_gold"] - r["label_pred"]), axis=1).values))


def test_boundary_mae_equals_the_official_scorer(workspace):
    from veribench.corpus.importers.semeval import import_semeval

    import_semeval(workspace, SUBTASK_C / "subtaskC_test.jsonl", gold=SUBTASK_C / "subtaskC_test_gold.jsonl",
                   progress=False)
    # gold boundaries from the stored character segments, predictions from the submission file
    gold = {}
    for _, text, segments, prov in workspace.query("SELECT doc_id, text, s.segments, provenance FROM documents "
                                                   "JOIN document_segments s USING (doc_id)"):
        s = json.loads(segments)
        gold[json.loads(prov)["semeval_id"]] = seg.boundary_word(text, s[1]["start"])
    preds = [json.loads(x) for x in (SUBTASK_C / "predictions.jsonl").read_text().splitlines()]
    ours = seg.boundary_mae([gold[p["id"]] for p in preds], [p["label"] for p in preds])
    assert ours == official_subtask_c_mae(SUBTASK_C / "predictions.jsonl", SUBTASK_C / "subtaskC_test_gold.jsonl")
    assert ours > 0


def test_boundary_mae_refuses_bad_input():
    with pytest.raises(ValueError):
        seg.boundary_mae([1, 2], [1])
    with pytest.raises(ValueError):
        seg.boundary_mae([1.5], [1])
    with pytest.warns(UserWarning):
        assert np.isnan(seg.boundary_mae([], []))


def test_sentence_spans_and_labels():
    text = "First one.  Second one!\nThird (yes.) fourth? \"Fifth.\" End"
    spans = seg.sentence_spans(text)
    assert [text[a:b] for a, b in spans] == ["First one.", "Second one!", "Third (yes.)", "fourth?", "\"Fifth.\"",
                                             "End"]
    cut = text.index("Third")
    lab = seg.span_labels(spans, [{"start": 0, "end": cut + 2, "label": "human"},
                                  {"start": cut + 2, "end": len(text), "label": "ai"}])
    assert lab.tolist() == [0, 0, 1, 1, 1, 1]


def test_sentence_level_auroc_and_f1_equal_scikit_learn():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 200)
    s = np.round(rng.random(200) + 0.4 * y, 2)
    out = seg.sentence_scores_metrics(y, s, threshold=0.7)
    assert out["auroc"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert out["f1"] == pytest.approx(f1_score(y, s > 0.7))
    assert (out["n"], out["n_ai"]) == (200, int(y.sum()))
    none = seg.sentence_scores_metrics(np.ones(3), [0.1, 0.2, 0.3])
    assert none["auroc"] is None and none["reason"] == "no human sentences" and none["f1"] is None


def test_windowdiff_and_pk_worked_examples():
    # 10 words, gold boundary before word 5, prediction before word 6; k = 10 / (2 * 2) -> 2 (rounded 2.5)
    assert seg.boundary_string(10, [5]) == "0000100000"
    assert seg.default_window(10, 1) == 2
    assert seg.windowdiff([5], [5], 10) == 0.0 and seg.pk([5], [5], 10) == 0.0
    # windows of 2 over 9 positions: gold 0000100000 vs 0000010000 differ in windows 3 and 5 -> 2/9
    assert seg.windowdiff([5], [6], 10) == pytest.approx(2 / 9)
    # Pk (NLTK counts windows holding any boundary in one segmentation but not the other): also 2 of 9
    assert seg.pk([5], [6], 10) == pytest.approx(2 / 9)
    # a missed boundary vs a boundary everywhere
    assert seg.windowdiff([5], [], 10) == pytest.approx(2 / 9)
    assert 0.0 <= seg.windowdiff([3, 7], list(range(1, 10)), 10) <= 1.0


def test_locate_sentences():
    text = "Alpha beta.  Gamma\tdelta. Alpha beta."
    spans, missing = seg.locate_sentences(text, [{"text": "Alpha beta.", "raw": 1}, {"text": "Gamma delta.", "raw": 2},
                                                 {"text": "Not here."}, {"text": "Alpha beta.", "raw": 3}])
    assert [(text[s["start"]:s["end"]], s["raw"]) for s in spans] == [
        ("Alpha beta.", 1), ("Gamma\tdelta.", 2), ("Alpha beta.", 3)]
    assert spans[2]["start"] == text.rindex("Alpha") and missing == 1
