"""Vectorised per-group metrics equal the scalar functions and scikit-learn per group."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from veribench.metrics import (
    GroupedScores,
    UndefinedMetricWarning,
    auroc_ci,
    auroc_delong_variance,
    bootstrap_ci,
    group_agreement,
    group_auroc,
    group_counts,
    group_tpr_at_fpr,
    tpr_at_fpr,
)


@st.composite
def grouped_data(draw):
    n = draw(st.integers(1, 120))
    g = draw(st.integers(1, 6))
    codes = np.array(draw(st.lists(st.integers(0, g - 1), min_size=n, max_size=n)))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    s = np.array(draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n)), dtype=float) / 3 + 0.2 * y
    return codes, y, s, g


@given(grouped_data())
@settings(max_examples=120, deadline=None)
def test_group_auroc_and_tpr_match_scalar(data):
    codes, y, s, g = data
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        gs = GroupedScores(codes, y, s, n_groups=g)
        ga = gs.auroc()
        gt = gs.tpr_at_fpr(0.1)
        for i in range(g):
            m = codes == i
            yi, si = y[m], s[m]
            assert ga.n_pos[i] == yi.sum() and ga.n_neg[i] == (1 - yi).sum()
            r = tpr_at_fpr(yi, si, 0.1)
            if 0 < yi.sum() < yi.size:
                assert ga.auc[i] == pytest.approx(roc_auc_score(yi, si), abs=1e-12)
                auc, var = auroc_delong_variance(yi, si)
                if math.isnan(var):
                    assert math.isnan(ga.var[i])
                else:
                    assert ga.var[i] == pytest.approx(var, abs=1e-12)
                    ci = auroc_ci(yi, si)
                    assert (ga.lo[i], ga.hi[i]) == pytest.approx((ci.lo, ci.hi), abs=1e-12, nan_ok=True)
                assert (gt.k[i], gt.n[i], gt.fp[i], gt.n_human[i]) == (r.k, r.n, r.fp, r.n_human)
                assert gt.threshold[i] == r.threshold and gt.tpr[i] == pytest.approx(r.tpr)
                assert gt.reasons[i] is None
            else:
                assert math.isnan(ga.auc[i]) and math.isnan(gt.tpr[i])
                assert gt.reasons[i] == r.reason


def test_group_auroc_large_against_sklearn():
    rng = np.random.default_rng(42)
    n = 200_000
    codes = rng.integers(0, 10, n)
    y = rng.integers(0, 2, n)
    s = np.round(rng.normal(size=n) + 0.5 * y + 0.1 * codes, 2)  # heavy ties
    ga = group_auroc(codes, y, s)
    for i in range(10):
        m = codes == i
        assert ga.auc[i] == pytest.approx(roc_auc_score(y[m], s[m]), abs=1e-12)
    # spot-check DeLong variance for one group against the scalar fast DeLong
    m = codes == 3
    assert ga.var[3] == pytest.approx(auroc_delong_variance(y[m], s[m])[1], rel=1e-9)
    (t5,) = group_tpr_at_fpr(codes, y, s, [0.05])
    m = codes == 7
    r = tpr_at_fpr(y[m], s[m], 0.05)
    assert (t5.k[7], t5.fp[7], t5.threshold[7]) == (r.k, r.fp, r.threshold)


def test_group_counts_and_agreement():
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 4, 1000)
    flags = rng.random((1000, 3)) < 0.5
    n, k = group_counts(codes, flags[:, 0], n_groups=5)
    assert n.tolist() == [int(np.sum(codes == i)) for i in range(5)]
    assert k.tolist() == [int(np.sum(flags[codes == i, 0])) for i in range(5)]
    n2, k2 = group_counts(codes, flags, n_groups=4)
    assert k2.shape == (4, 3)
    assert k2.tolist() == [[int(np.sum(flags[codes == i, j])) for j in range(3)] for i in range(4)]
    n3, any_, all_ = group_agreement(codes, flags)
    assert any_.tolist() == [int(np.sum(flags[codes == i].any(axis=1))) for i in range(4)]
    assert all_.tolist() == [int(np.sum(flags[codes == i].all(axis=1))) for i in range(4)]
    with pytest.raises(ValueError, match="out of range"):
        group_counts(codes, flags[:, 0], n_groups=2)
    with pytest.raises(ValueError, match="boolean"):
        group_counts(codes, flags[:, 0].astype(int))
    with pytest.raises(ValueError, match="integer"):
        group_counts(codes.astype(float), flags[:, 0])


def test_grouped_rejects_nonfinite():
    with pytest.raises(ValueError, match="non-finite"):
        group_auroc(np.array([0, 0]), [0, 1], [0.1, np.nan])


def test_bootstrap_ci_helper():
    rng = np.random.default_rng(9)
    x = rng.normal(3.0, 1.0, 400)
    r = bootstrap_ci(np.mean, [x], n_boot=500, seed=1)
    assert r.estimate == pytest.approx(x.mean())
    assert r.lo < x.mean() < r.hi
    se = x.std(ddof=1) / np.sqrt(x.size)
    assert (r.hi - r.lo) == pytest.approx(2 * 1.96 * se, rel=0.15)
    assert bootstrap_ci(np.mean, [x], n_boot=500, seed=1) == r
    # strata keep each stratum's size in every replicate
    strata = np.array([0] * 10 + [1] * 390)
    seen = []
    bootstrap_ci(lambda s: seen.append(int((s == 0).sum())) or 0.0, [strata], n_boot=20, strata=strata)
    assert set(seen) == {10}
    with pytest.warns(UndefinedMetricWarning):
        r = bootstrap_ci(lambda a: float("nan"), [x], n_boot=5)
    assert math.isnan(r.lo) and r.n_valid == 0
    with pytest.raises(ValueError):
        bootstrap_ci(np.mean, [x, x[:3]])


def test_grouped_empty_and_tiny_groups():
    with pytest.warns(UndefinedMetricWarning):
        gs = GroupedScores(np.array([], dtype=int), [], [], n_groups=3)
        ga, gt = gs.auroc(), gs.tpr_at_fpr(0.05)
    assert np.isnan(ga.auc).all() and gt.reasons == ["no human texts"] * 3
    ga = GroupedScores(np.array([0, 0]), [1, 0], [0.3, 0.3]).auroc()
    assert ga.auc[0] == 0.5 and np.isnan(ga.var[0]) and np.isnan(ga.lo[0])
