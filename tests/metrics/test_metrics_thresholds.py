"""Decision thresholds, confusion counts, balanced accuracy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sklearn.metrics import balanced_accuracy_score, confusion_matrix

from veribench.metrics import (
    FLAG_RULE,
    UndefinedMetricWarning,
    balanced_accuracy,
    confusion,
    fit_threshold,
    flag,
    threshold_at_fpr,
    tpr_at_fpr,
)


@st.composite
def labelled_scores(draw):
    n = draw(st.integers(2, 50))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    assume(0 < y.sum() < n)
    s = np.array(draw(st.lists(st.integers(0, 12), min_size=n, max_size=n)), dtype=float) / 12
    return y, s


def test_flag_rule_is_strict():
    assert FLAG_RULE == "score > threshold"
    assert flag([0.4, 0.5, 0.6], 0.5).tolist() == [False, False, True]


@given(labelled_scores(), st.lists(st.floats(-1, 2, allow_nan=False), min_size=2, max_size=10))
@settings(max_examples=150, deadline=None)
def test_flag_counts_monotone_in_threshold(data, ts):
    y, s = data
    ts = sorted(ts)
    counts = [confusion(y, flag(s, t)) for t in ts]
    for a, b in zip(counts, counts[1:]):
        assert b["tp"] <= a["tp"] and b["fp"] <= a["fp"]
        assert b["tn"] >= a["tn"] and b["fn"] >= a["fn"]
    for c in counts:
        assert c["tp"] + c["fn"] == y.sum() and c["fp"] + c["tn"] == (1 - y).sum()


@given(labelled_scores())
@settings(max_examples=150, deadline=None)
def test_best_balanced_accuracy_threshold_brute_force(data):
    y, s = data
    t = fit_threshold(y, s, rule="best_balanced_accuracy")
    assert t in s  # an exact data value
    def ba(c):  # plain definition: (TPR + TNR) / 2 with flag = score > c
        f = s > c
        return (f[y == 1].mean() + (~f[y == 0]).mean()) / 2

    best = max(ba(c) for c in np.unique(s))
    assert ba(t) == pytest.approx(best)
    # tie rule: no larger candidate reaches the same balanced accuracy
    for c in np.unique(s[s > t]):
        assert ba(c) < best - 1e-12
    # order invariance
    perm = np.random.default_rng(0).permutation(len(y))
    assert fit_threshold(y[perm], s[perm]) == t


@given(labelled_scores(), st.sampled_from([0.0, 0.05, 0.1, 0.3]))
@settings(max_examples=100, deadline=None)
def test_target_fpr_threshold_is_tpr_at_fpr_threshold(data, target):
    y, s = data
    t = fit_threshold(y, s, rule="target_fpr", target_fpr=target)
    assert t == tpr_at_fpr(y, s, target).threshold
    assert np.mean(s[y == 0] > t) <= target + 1e-12
    t2, fp, n = threshold_at_fpr(s[y == 0], target)
    assert (t2, fp, n) == (t, int(np.sum(s[y == 0] > t)), int((y == 0).sum()))


def test_threshold_on_logits_not_stepped():
    # logits far from any 0.5 grid: the RAID failure mode; exact quantile still works
    rng = np.random.default_rng(1)
    h = rng.normal(-30, 0.001, 100)
    t, fp, n = threshold_at_fpr(h, 0.05)
    assert fp == 5 and n == 100 and t == np.sort(h)[-6]


def test_confusion_matches_sklearn():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 500)
    f = rng.random(500) < 0.4
    tn, fp, fn, tp = confusion_matrix(y, f).ravel()
    assert confusion(y, f) == {"tp": tp, "fp": fp, "tn": tn, "fn": fn}
    assert confusion(np.where(y == 1, "ai", "human"), f) == confusion(y, f)


def test_balanced_accuracy():
    assert balanced_accuracy(0.8, 0.1) == pytest.approx(0.85)
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 300)
    f = rng.random(300) < 0.5
    c = confusion(y, f)
    tpr, fpr = c["tp"] / (c["tp"] + c["fn"]), c["fp"] / (c["fp"] + c["tn"])
    assert balanced_accuracy(tpr, fpr) == pytest.approx(balanced_accuracy_score(y, f))
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(balanced_accuracy(None, 0.1))
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(balanced_accuracy(0.5, float("nan")))
    with pytest.raises(ValueError):
        balanced_accuracy(1.2, 0.0)


def test_fit_threshold_undefined_and_errors():
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(fit_threshold([1, 1], [0.2, 0.3]))
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(fit_threshold([1, 1], [0.2, 0.3], rule="target_fpr", target_fpr=0.05))
    with pytest.raises(ValueError, match="unknown threshold rule"):
        fit_threshold([0, 1], [0.2, 0.3], rule="youden")
    with pytest.raises(ValueError, match="needs target_fpr"):
        fit_threshold([0, 1], [0.2, 0.3], rule="target_fpr")
    with pytest.raises(ValueError, match="non-finite"):
        fit_threshold([0, 1], [0.2, float("nan")])
