"""TPR at a fixed FPR with the threshold refitted in every resample (issue 14): the point
estimate is the metrics layer's, the interval equals a plain bootstrap loop written here,
and it is wider than an interval that treats the threshold as known."""

from __future__ import annotations

import json

import numpy as np
import pytest

from veribench.metrics import UndefinedMetricWarning, tpr_at_fpr, wilson
from veribench.metrics.threshold_bootstrap import METHOD, tpr_at_fpr_interval


def _data(seed=7, n_h=200, n_a=150):
    rng = np.random.default_rng(seed)
    y = np.concatenate([np.zeros(n_h, np.int8), np.ones(n_a, np.int8)])
    s = np.concatenate([rng.normal(0, 1, n_h), rng.normal(1.8, 1, n_a)])
    return y, s


def plain_refit_bootstrap(y, s, target, n_boot, seed, alpha=0.05):
    """Resample humans then AI texts in blocks of R = 2**20 // max(n_h, n_a) replicates
    (one ``integers`` call per class and block: the documented stream), refit the
    threshold of each replicate as the (f+1)-th largest resampled human score with
    f = floor(target * n_h), and count the resampled AI scores strictly above it."""
    rng = np.random.default_rng(seed)
    hum = np.sort(s[y == 0])  # each class in ascending order: the interval ignores the texts' order
    ai = np.sort(s[y == 1])
    f = min(int(np.floor(target * hum.size + 1e-9)), hum.size - 1)
    per = max(1, (1 << 20) // max(hum.size, ai.size))
    reps = []
    while len(reps) < n_boot:
        r = min(per, n_boot - len(reps))
        hidx = rng.integers(0, hum.size, (r, hum.size))
        aidx = rng.integers(0, ai.size, (r, ai.size))
        for b in range(r):
            t = sorted(hum[hidx[b]].tolist(), reverse=True)[f]
            reps.append(sum(v > t for v in ai[aidx[b]].tolist()) / ai.size)
    return np.quantile(reps, [alpha / 2, 1 - alpha / 2])


@pytest.mark.parametrize("target", [0.01, 0.05, 0.2])
def test_interval_matches_plain_loop_and_point_matches_metrics_layer(target):
    y, s = _data()
    r = tpr_at_fpr_interval(y, s, target, n_boot=400, seed=11)
    point = tpr_at_fpr(y, s, target)
    assert (r.tpr, r.threshold, r.achieved_fpr) == (point.tpr, point.threshold, point.achieved_fpr)
    lo, hi = plain_refit_bootstrap(y, s, target, 400, 11)
    assert r.lo == pytest.approx(min(lo, r.tpr), abs=1e-12)
    assert r.hi == pytest.approx(max(hi, r.tpr), abs=1e-12)
    assert (r.seed, r.n_boot, r.n_valid, r.method) == (11, 400, 400, METHOD)
    assert r.n_false_positives_allowed == int(np.floor(target * 200 + 1e-9))
    json.dumps(r.to_dict(), allow_nan=False)


def test_blocks_of_replicates_and_the_two_class_form():
    """Large classes are drawn in several blocks (same stream as the plain loop); the
    two-array form gives the same interval."""
    from veribench.metrics.threshold_bootstrap import tpr_at_fpr_interval_scores

    y, s = _data(n_h=6000, n_a=300)
    r = tpr_at_fpr_interval(y, s, 0.01, n_boot=400, seed=3)
    lo, hi = plain_refit_bootstrap(y, s, 0.01, 400, 3)
    assert (r.lo, r.hi) == (pytest.approx(min(lo, r.tpr), abs=1e-12), pytest.approx(max(hi, r.tpr), abs=1e-12))
    assert tpr_at_fpr_interval_scores(s[y == 0], s[y == 1], 0.01, n_boot=400, seed=3) == r


def test_seeded_and_reproducible():
    y, s = _data()
    a = tpr_at_fpr_interval(y, s, 0.05, n_boot=300, seed=1)
    b = tpr_at_fpr_interval(y, s, 0.05, n_boot=300, seed=1)
    c = tpr_at_fpr_interval(y, s, 0.05, n_boot=300, seed=2)
    assert a == b
    assert (a.lo, a.hi) != (c.lo, c.hi)


def test_wider_than_an_interval_that_treats_the_threshold_as_known():
    """The threshold at 1% FPR on 200 human texts is the 3rd-largest human score: its
    uncertainty dominates. The Wilson interval on k/n (threshold known) is much narrower."""
    y, s = _data(n_h=200, n_a=400)
    r = tpr_at_fpr_interval(y, s, 0.01, n_boot=1000, seed=0)
    point = tpr_at_fpr(y, s, 0.01)
    w = wilson(point.k, point.n)
    assert (r.hi - r.lo) > 1.3 * (w.hi - w.lo)


def test_undefined_and_bad_input():
    with pytest.warns(UndefinedMetricWarning, match="no human texts"):
        r = tpr_at_fpr_interval([1, 1, 1], [0.1, 0.5, 0.9], 0.05, n_boot=10)
    assert r.tpr is None and r.lo is None and r.hi is None and r.reason == "no human texts"
    with pytest.warns(UndefinedMetricWarning, match="no AI texts"):
        r = tpr_at_fpr_interval([0, 0], [0.1, 0.5], 0.05, n_boot=10)
    assert r.reason == "no AI texts"
    with pytest.raises(ValueError, match="n_boot"):
        tpr_at_fpr_interval([0, 1], [0.1, 0.5], 0.05, n_boot=0)
    with pytest.raises(ValueError, match="target_fpr"):
        tpr_at_fpr_interval([0, 1], [0.1, 0.5], 1.5)
    with pytest.raises(ValueError, match="non-finite"):
        tpr_at_fpr_interval([0, 1], [0.1, float("nan")], 0.05)


def test_the_interval_does_not_depend_on_the_order_of_the_texts():
    """Found by the evaluation's property test: with tied scores, a resample stream drawn in
    document order gave [0, 0.525] in one order and [0, 0] in another."""
    hum, ai = np.array([0.1, 0.1, 0.0]), np.array([0.1])
    from veribench.metrics.threshold_bootstrap import tpr_at_fpr_interval_scores

    ref = tpr_at_fpr_interval_scores(hum, ai, 0.05, n_boot=200, seed=3)
    for perm in ([2, 0, 1], [0, 2, 1], [1, 2, 0]):
        got = tpr_at_fpr_interval_scores(hum[perm], ai, 0.05, n_boot=200, seed=3)
        assert (got.tpr, got.lo, got.hi) == (ref.tpr, ref.lo, ref.hi)
    y, s = _data()
    rng = np.random.default_rng(0)
    p = rng.permutation(y.size)
    a, b = tpr_at_fpr_interval(y, s, 0.05, n_boot=300, seed=1), tpr_at_fpr_interval(y[p], s[p], 0.05, n_boot=300, seed=1)
    assert (a.lo, a.hi) == (b.lo, b.hi)
