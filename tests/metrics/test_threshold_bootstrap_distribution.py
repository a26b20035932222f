"""The O(B log n) bootstrap of the TPR at a fixed FPR (issue 25) has the law of the plain
resampling loop it replaced: two-sample KS tests over many replicates, on several class
sizes, targets and tie patterns, and interval coverage in a simulation.

False-failure bounds. Every random draw is seeded, so each test is deterministic; the bounds
below say how unlikely a failure would be for an arbitrary seed if the construction is exact.

* KS: a test fails when scipy's two-sample KS p-value is below ``P_MIN`` = 1e-6. For
  continuous laws the p-value is (asymptotically) uniform under equality; with ties the
  statistic is a supremum over fewer points than after breaking the ties at random (a
  continuous law equal for both samples), so the p-value is conservative: P(fail) <= 1e-6 per
  test, <= 2.6e-5 over the 26 KS tests of this file (12 cases x threshold and TPR, 2 grouped).
* Coverage: given a data set the two intervals are independent and identically distributed
  (same bootstrap law, independent draws), so the pairs (fast covers, plain covers) are
  exchangeable and, among discordant data sets, "fast only" is Binomial(discordant, 1/2):
  McNemar's exact test (scipy ``binomtest``), failing below 1e-6, so P(fail) <= 1e-6.
  The simulation also requires each method to cover in more than 320 of the 400 data sets
  (observed: 387 fast, 383 plain); if the true coverage is at least 0.9, P(<= 320) <= 1.7e-9
  (binomial CDF).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest, ks_2samp, norm

from tests.metrics.test_metrics_threshold_bootstrap import resampling_reference
from veribench.metrics.threshold_bootstrap import (
    replicate_tprs,
    replicate_tprs_grouped,
    threshold_replicates,
    tpr_at_fpr_interval_groups,
    tpr_at_fpr_interval_scores,
)

P_MIN = 1e-6
N_REP = 20_000


def _case(name, seed=0):
    rng = np.random.default_rng(seed)
    if name == "continuous":
        return rng.normal(0, 1, 50), rng.normal(1, 1, 30)
    if name == "continuous-large":
        return rng.normal(0, 1, 200), rng.normal(1.5, 1, 80)
    if name == "heavy-ties":  # five distinct values shared by both classes
        return rng.integers(0, 5, 60).astype(float), rng.integers(1, 6, 40).astype(float)
    if name == "top-ties":  # the human maximum repeated: the threshold rests on a tie
        return np.r_[rng.normal(0, 1, 30), np.full(8, 3.0)], np.r_[rng.normal(2, 1, 20), np.full(5, 3.0)]
    if name == "all-equal":
        return np.full(20, 0.5), np.full(15, 0.5)
    if name == "humans-equal":
        return np.full(20, 0.5), rng.normal(0.5, 0.2, 15)
    if name == "one-human":
        return np.array([0.3]), rng.normal(0.3, 0.3, 7)
    if name == "tiny":
        return np.array([0.1, 0.1, 0.0]), np.array([0.1])
    raise AssertionError(name)


CASES = [("continuous", 0.05), ("continuous", 0.2), ("continuous-large", 0.01), ("continuous-large", 0.0),
         ("heavy-ties", 0.1), ("heavy-ties", 1.0), ("top-ties", 0.05), ("all-equal", 0.05),
         ("humans-equal", 0.05), ("one-human", 0.05), ("tiny", 0.05), ("tiny", 0.5)]


def _ks(a, b):
    if np.all(a == a[0]) and np.all(b == b[0]):  # both constant: KS has p = 1 iff equal
        assert a[0] == b[0]
        return 1.0
    return float(ks_2samp(a, b).pvalue)


@pytest.mark.parametrize("name,target", CASES)
def test_same_law_as_the_resampling_loop(name, target):
    """Thresholds and TPRs of 20,000 replicates of each method: two-sample KS, p >= 1e-6."""
    hum, ai = (np.sort(x) for x in _case(name))
    ref_thr, ref_tpr = resampling_reference(hum, ai, target, N_REP, np.random.default_rng(101))
    rng = np.random.default_rng(202)
    thr = threshold_replicates(hum, target, N_REP, rng)
    tpr = replicate_tprs_grouped([thr], [ai], rng)
    assert _ks(thr, ref_thr) >= P_MIN
    assert _ks(tpr, ref_tpr) >= P_MIN
    # every replicate threshold is a human score, every TPR a multiple of 1/na
    assert np.isin(thr, hum).all()
    assert np.allclose(tpr * ai.size, np.round(tpr * ai.size))
    # replicate_tprs is exactly these two steps on one generator
    assert np.array_equal(replicate_tprs(hum, ai, target, N_REP, np.random.default_rng(202)), tpr)


def test_the_ks_test_would_see_an_off_by_one_rank():
    """The check has power: the threshold one rank too low (Beta(kth, nh - kth + 1)) is
    rejected at p < 1e-6 (deterministic with these seeds)."""
    hum, ai = (np.sort(x) for x in _case("continuous"))
    ref_thr, _ = resampling_reference(hum, ai, 0.05, N_REP, np.random.default_rng(101))
    nh = hum.size
    kth = nh - 1 - 2  # f = floor(0.05 * 50) = 2
    v = np.random.default_rng(5).beta(kth, nh - kth + 1, N_REP)
    wrong = hum[np.clip(np.ceil(v * nh).astype(int), 1, nh) - 1]
    assert ks_2samp(wrong, ref_thr).pvalue < P_MIN


def _grouped_reference(hums, ais, target, n_boot, rng):
    """Plain loop: per replicate resample each group's human texts and refit its threshold;
    resample the AI texts of all groups together (n_ai fixed), each judged by its group's."""
    ai_all = np.concatenate(ais)
    grp = np.concatenate([np.full(a.size, g) for g, a in enumerate(ais)])
    out = np.empty(n_boot)
    for b in range(n_boot):
        thr = []
        for h in hums:
            f = min(int(np.floor(target * h.size + 1e-9)), h.size - 1)
            thr.append(np.sort(h[rng.integers(0, h.size, h.size)])[h.size - 1 - f])
        idx = rng.integers(0, ai_all.size, ai_all.size)
        out[b] = np.count_nonzero(ai_all[idx] > np.array(thr)[grp[idx]]) / ai_all.size
    return out


@pytest.mark.parametrize("ties", [False, True])
def test_grouped_thresholds_same_law_as_the_resampling_loop(ties):
    rng = np.random.default_rng(9)
    hums = [rng.normal(0, 1, 40), rng.normal(0.5, 1, 25), rng.normal(-0.5, 1, 60)]
    ais = [rng.normal(1, 1, 10), rng.normal(1.5, 1, 30), rng.normal(0.5, 1, 5)]
    if ties:
        hums, ais = [np.round(h) for h in hums], [np.round(a) for a in ais]
    ref = _grouped_reference(hums, ais, 0.1, 5_000, np.random.default_rng(1))
    rng2 = np.random.default_rng(2)
    thr = [threshold_replicates(np.sort(h), 0.1, 5_000, rng2) for h in hums]
    got = replicate_tprs_grouped(thr, [np.sort(a) for a in ais], rng2)
    assert ks_2samp(got, ref).pvalue >= P_MIN


def test_one_group_is_the_two_class_interval():
    hum, ai = _case("continuous")
    g = tpr_at_fpr_interval_groups([hum], [ai], 0.05, n_boot=500, seed=4)
    r = tpr_at_fpr_interval_scores(hum, ai, 0.05, n_boot=500, seed=4)
    assert (g.tpr, g.lo, g.hi, g.method) == (r.tpr, r.lo, r.hi, r.method)
    # several groups: the point is the count over groups at each group's own threshold
    rng = np.random.default_rng(3)
    hums = [rng.normal(0, 1, 40), rng.normal(1, 1, 30)]
    ais = [rng.normal(1, 1, 10), rng.normal(2, 1, 20)]
    g2 = tpr_at_fpr_interval_groups(hums, ais, 0.1, n_boot=300, seed=1)
    want = sum(int((a > np.sort(h)[h.size - 1 - int(np.floor(0.1 * h.size + 1e-9))]).sum())
               for h, a in zip(hums, ais, strict=True)) / 30
    assert g2.tpr == want and g2.lo <= g2.tpr <= g2.hi and g2.n_ai == 30
    # the caller's cache of replicate thresholds changes nothing (first call fills it, second uses it)
    cache: dict = {}
    for other_ai in (ais, [a + 0.3 for a in ais]):
        plain = tpr_at_fpr_interval_groups(hums, other_ai, 0.1, n_boot=300, seed=1)
        cached = tpr_at_fpr_interval_groups(hums, other_ai, 0.1, n_boot=300, seed=1, cache=cache, cache_key="k")
        assert cached == plain
    assert list(cache) == ["k"]
    with pytest.raises(ValueError, match="human texts"):
        tpr_at_fpr_interval_groups([np.zeros(0)], [ai], 0.05)
    with pytest.raises(ValueError, match="no AI texts"):
        tpr_at_fpr_interval_groups([hum], [np.zeros(0)], 0.05)
    with pytest.raises(ValueError, match="one human array"):
        tpr_at_fpr_interval_groups([hum], [ai, ai], 0.05)


def test_coverage_matches_the_resampling_loop():
    """400 data sets (human N(0,1) x 100, AI N(1.5,1) x 60, target 5%), a 95% interval from
    each method (400 replicates each); the truth is the population TPR at the population
    threshold, 1 - Phi(Phi^-1(0.95) - 1.5). McNemar's exact test on the paired coverage
    indicators (module docstring): p >= 1e-6."""
    target, n_sets, n_boot = 0.05, 400, 400
    truth = float(norm.sf(norm.isf(target) - 1.5))
    rng = np.random.default_rng(77)
    fast, plain = np.zeros(n_sets, bool), np.zeros(n_sets, bool)
    for i in range(n_sets):
        hum, ai = rng.normal(0, 1, 100), rng.normal(1.5, 1, 60)
        r = tpr_at_fpr_interval_scores(hum, ai, target, n_boot=n_boot, seed=i)
        fast[i] = r.lo <= truth <= r.hi
        _, reps = resampling_reference(np.sort(hum), np.sort(ai), target, n_boot, np.random.default_rng(10_000 + i))
        lo, hi = np.quantile(reps, [0.025, 0.975])
        plain[i] = min(lo, r.tpr) <= truth <= max(hi, r.tpr)
    only_fast, only_plain = int((fast & ~plain).sum()), int((plain & ~fast).sum())
    if only_fast + only_plain:
        assert binomtest(only_fast, only_fast + only_plain, 0.5).pvalue >= P_MIN
    # the simulation is informative: both cover most of the time (a percentile bootstrap of
    # a quantile statistic is approximate, so no nominal level is asserted; bound above)
    assert fast.sum() > 320 and plain.sum() > 320


@pytest.mark.parametrize("name,target", CASES)
def test_the_unsorted_path_is_the_sorted_path(name, target):
    """The tables' path (``_point_and_replicates``: partition a window, histogram the AI
    scores among the distinct thresholds, no full sort) gives exactly the point of
    ``roc.tpr_at_fpr`` and the replicates of ``replicate_tprs`` on the sorted classes, draw
    for draw (same generator), whatever the order of the texts."""
    from veribench.metrics.roc import tpr_at_fpr
    from veribench.metrics.threshold_bootstrap import _point_and_replicates

    hum, ai = _case(name, seed=3)
    perm_h, perm_a = np.random.default_rng(1).permutation(hum.size), np.random.default_rng(2).permutation(ai.size)
    tpr, thr, fpr, reps = _point_and_replicates(hum[perm_h], ai[perm_a], target, 3000, np.random.default_rng(8))
    want = replicate_tprs(np.sort(hum), np.sort(ai), target, 3000, np.random.default_rng(8))
    assert np.array_equal(reps, want)
    y = np.r_[np.zeros(hum.size), np.ones(ai.size)]
    p = tpr_at_fpr(y, np.r_[hum, ai], target)
    assert (tpr, thr, fpr) == (p.tpr, p.threshold, p.achieved_fpr)
