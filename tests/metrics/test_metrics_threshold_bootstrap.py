"""TPR at a fixed FPR with the threshold refitted in every resample (issue 14): the point
estimate is the metrics layer's, the interval equals a plain bootstrap loop written here,
and it is wider than an interval that treats the threshold as known."""

from __future__ import annotations

import json
import math

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
    """The documented stream (issue 25) re-derived by hand, one replicate at a time: per
    replicate the threshold is ``sorted(human)[ceil(nh * V) - 1]`` for the b-th of the
    ``rng.beta(kth + 1, nh - kth, n_boot)`` draws, the AI count the b-th of the
    ``rng.binomial(na, p)`` draws with p counted by a Python loop (score > threshold)."""
    rng = np.random.default_rng(seed)
    hum = sorted(s[y == 0].tolist())
    ai = s[y == 1].tolist()
    f = min(int(np.floor(target * len(hum) + 1e-9)), len(hum) - 1)
    kth = len(hum) - 1 - f
    v = rng.beta(kth + 1, len(hum) - kth, n_boot)
    thr = [hum[min(max(math.ceil(len(hum) * x), 1), len(hum)) - 1] for x in v.tolist()]
    p = np.array([sum(a > t for a in ai) / len(ai) for t in thr])
    reps = rng.binomial(len(ai), p) / len(ai)
    return np.quantile(reps, [alpha / 2, 1 - alpha / 2])


def resampling_reference(hum, ai, target, n_boot, rng):
    """The bootstrap as it was computed before issue 25 (kept here as the reference, not in
    the package): resample every text of both classes with replacement (``integers`` in
    blocks of replicates), refit the threshold as the (f+1)-th largest resampled human score
    (``np.partition``) and count the resampled AI scores strictly above it. O(B n).
    Returns (thresholds, TPRs), one per replicate."""
    hum, ai = np.asarray(hum, float), np.asarray(ai, float)
    nh, na = hum.size, ai.size
    kth = nh - 1 - min(int(np.floor(target * nh + 1e-9)), nh - 1)
    per = max(1, (1 << 20) // max(nh, na))
    thr, tpr = np.empty(n_boot), np.empty(n_boot)
    done = 0
    while done < n_boot:
        r = min(per, n_boot - done)
        hi = rng.integers(0, nh, size=(r, nh))
        ai_idx = rng.integers(0, na, size=(r, na))
        t = np.partition(hum[hi], kth, axis=1)[:, kth]
        thr[done:done + r] = t
        tpr[done:done + r] = np.count_nonzero(ai[ai_idx] > t[:, None], axis=1) / na
        done += r
    return thr, tpr


@pytest.mark.parametrize("target", [0.01, 0.05, 0.2])
def test_interval_matches_the_documented_stream_and_point_matches_metrics_layer(target):
    y, s = _data()
    r = tpr_at_fpr_interval(y, s, target, n_boot=400, seed=11)
    point = tpr_at_fpr(y, s, target)
    assert (r.tpr, r.threshold, r.achieved_fpr) == (point.tpr, point.threshold, point.achieved_fpr)
    lo, hi = plain_refit_bootstrap(y, s, target, 400, 11)
    # same draws, same arithmetic up to the order of float operations in the quantile: 1e-12
    assert r.lo == pytest.approx(min(lo, r.tpr), abs=1e-12)
    assert r.hi == pytest.approx(max(hi, r.tpr), abs=1e-12)
    assert (r.seed, r.n_boot, r.n_valid, r.method) == (11, 400, 400, METHOD)
    assert r.n_false_positives_allowed == int(np.floor(target * 200 + 1e-9))
    json.dumps(r.to_dict(), allow_nan=False)


def test_large_classes_and_the_two_class_form():
    """Large classes (the old code drew them in several blocks); the two-array form gives
    the same interval."""
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
