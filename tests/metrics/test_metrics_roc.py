"""AUROC, DeLong/bootstrap intervals, ROC points and TPR at fixed FPR: cross-checks against
scikit-learn, an independent O(n^2) DeLong, a brute-force TPR@FPR, and property tests."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.stats import norm
from sklearn.metrics import roc_auc_score, roc_curve

from veribench.metrics import (
    UndefinedMetricWarning,
    auroc,
    auroc_ci,
    auroc_delong_variance,
    roc_curve_points,
    tpr_at_fpr,
)
from veribench.metrics.intervals import DELONG_ZERO


def plain_delong(y, s):
    """Textbook DeLong et al. (1988): structural components from all m*n pairs."""
    x = s[y == 1][:, None]
    z = s[y == 0][None, :]
    psi = (x > z) + 0.5 * (x == z)
    v10 = psi.mean(axis=1)
    v01 = psi.mean(axis=0)
    m, n = psi.shape
    return psi.mean(), v10.var(ddof=1) / m + v01.var(ddof=1) / n


def brute_tpr_at_fpr(y, s, target):
    """Try every human score as threshold (flag: score > t); keep the smallest with FPR <= target."""
    h = s[y == 0]
    a = s[y == 1]
    ok = [t for t in np.unique(h) if np.mean(h > t) <= target + 1e-12]
    t = min(ok)
    return t, np.mean(a > t), np.mean(h > t)


# data: two classes, scores with many ties (rounded) so the midrank paths are exercised
@st.composite
def labelled_scores(draw, min_size=4, max_size=60):
    n = draw(st.integers(min_size, max_size))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    assume(0 < y.sum() < n)
    s = np.array(draw(st.lists(st.integers(-8, 8), min_size=n, max_size=n)), dtype=float) / 4.0
    return y, s + 0.3 * y


@given(labelled_scores())
@settings(max_examples=200, deadline=None)
def test_auroc_equals_sklearn_and_order_invariant(data):
    y, s = data
    a = auroc(y, s)
    assert a == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    perm = np.random.default_rng(len(y)).permutation(len(y))
    assert auroc(y[perm], s[perm]) == pytest.approx(a, abs=1e-12)
    assert tpr_at_fpr(y[perm], s[perm], 0.1) == tpr_at_fpr(y, s, 0.1)


@given(labelled_scores(), st.sampled_from(["bool", "int", "float", "str", "pos_label"]))
@settings(max_examples=100, deadline=None)
def test_label_encoding_invariance(data, encoding):
    y, s = data
    enc = {
        "bool": y.astype(bool),
        "int": y.astype(np.int64),
        "float": y.astype(float),
        "str": np.where(y == 1, "ai", "human"),
        "pos_label": np.where(y == 1, "machine", "person").tolist(),
    }[encoding]
    kw = {"pos_label": "machine"} if encoding == "pos_label" else {}
    assert auroc(enc, s, **kw) == auroc(y, s)
    assert tpr_at_fpr(enc, s, 0.05, **kw) == tpr_at_fpr(y, s, 0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)  # DeLong needs 2 per class
        a, b = auroc_ci(enc, s, **kw), auroc_ci(y, s)
    np.testing.assert_array_equal(np.array(a[:3]), np.array(b[:3]))  # NaN-aware


@given(
    labelled_scores(),
    st.sampled_from(["exp", "logit", "affine", "cube"]),
    st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.25]),
)
@settings(max_examples=200, deadline=None)
def test_monotone_transform_invariance(data, transform, target):
    y, s = data
    p = 1.0 / (1.0 + np.exp(-s))
    f = {
        "exp": np.exp(s),
        "logit": np.log(p) - np.log1p(-p),
        "affine": s * 1000.0 - 5000.0,
        "cube": s**3,
    }[transform]
    # the transform must keep the ranking exactly (no float collisions/splits)
    assume(np.array_equal(np.argsort(s, kind="stable"), np.argsort(f, kind="stable")))
    assume(len(np.unique(s)) == len(np.unique(f)))
    assert auroc(y, f) == pytest.approx(auroc(y, s), abs=1e-12)
    a, b = tpr_at_fpr(y, s, target), tpr_at_fpr(y, f, target)
    assert (a.k, a.n, a.fp, a.tpr, a.achieved_fpr) == (b.k, b.n, b.fp, b.tpr, b.achieved_fpr)


@given(labelled_scores(), st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.2, 0.5, 1.0]))
@settings(max_examples=200, deadline=None)
def test_tpr_at_fpr_matches_brute_force(data, target):
    y, s = data
    r = tpr_at_fpr(y, s, target)
    t, tpr, fpr = brute_tpr_at_fpr(y, s, target)
    assert r.threshold == t
    assert r.tpr == pytest.approx(tpr) and r.achieved_fpr == pytest.approx(fpr)
    assert r.achieved_fpr <= target + 1e-12
    assert r.k == round(tpr * r.n)


@given(labelled_scores(min_size=6, max_size=80))
@settings(max_examples=150, deadline=None)
def test_fast_delong_matches_plain_delong(data):
    y, s = data
    assume(y.sum() >= 2 and (1 - y).sum() >= 2)
    auc, var = auroc_delong_variance(y, s)
    auc_p, var_p = plain_delong(y, s)
    assert auc == pytest.approx(auc_p, abs=1e-12)
    assert var == pytest.approx(var_p, abs=1e-12)
    res = auroc_ci(y, s)
    half = norm.isf(0.025) * math.sqrt(var_p)
    assert res.method == "delong"
    if var_p == 0.0:  # no interval where DeLong degenerates (veribench.metrics.intervals)
        assert math.isnan(res.lo) and math.isnan(res.hi) and res.reason == DELONG_ZERO
        return
    assert res.lo == pytest.approx(max(0.0, auc_p - half), abs=1e-12)
    assert res.hi == pytest.approx(min(1.0, auc_p + half), abs=1e-12)
    assert 0.0 <= res.lo <= res.auc <= res.hi <= 1.0


def test_delong_on_larger_random_data():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 1500)
    s = np.round(rng.normal(size=1500) + 0.8 * y, 1)
    auc, var = auroc_delong_variance(y, s)
    auc_p, var_p = plain_delong(y, s)
    assert auc == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert var == pytest.approx(var_p, rel=1e-10)


def test_bootstrap_ci_seeded_and_sane():
    rng = np.random.default_rng(11)
    y = rng.integers(0, 2, 300)
    s = rng.normal(size=300) + y
    a = auroc_ci(y, s, method="bootstrap", n_boot=400, seed=5)
    b = auroc_ci(y, s, method="bootstrap", n_boot=400, seed=5)
    c = auroc_ci(y, s, method="bootstrap", n_boot=400, seed=6)
    d = auroc_ci(y, s, method="delong")
    assert a == b and a != c and a.method == "bootstrap"
    assert a.auc == pytest.approx(roc_auc_score(y, s))
    assert a.lo < a.auc < a.hi
    # bootstrap and DeLong agree to within a couple of hundredths at n=300
    assert abs(a.lo - d.lo) < 0.03 and abs(a.hi - d.hi) < 0.03


def test_undefined_and_bad_input():
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(auroc([1, 1, 1], [0.1, 0.2, 0.3]))
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(auroc([], []))
    with pytest.warns(UndefinedMetricWarning, match="2 texts per class"):
        r = auroc_ci([1, 0, 0], [0.9, 0.1, 0.2])
    assert r.auc == 1.0 and math.isnan(r.lo)
    with pytest.warns(UndefinedMetricWarning, match="no AI texts"):
        r = tpr_at_fpr([0, 0], [0.1, 0.2], 0.05)
    assert r.tpr is None and r.reason == "no AI texts" and r.n == 0
    with pytest.raises(ValueError, match="non-finite"):
        auroc([0, 1], [0.1, float("nan")])
    with pytest.raises(ValueError, match="non-finite"):
        tpr_at_fpr([0, 1], [float("inf"), 0.2], 0.05)
    with pytest.raises(ValueError, match="0 \\(human\\) or 1"):
        auroc([0, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="mixed"):
        auroc(["ai", "mixed"], [0.1, 0.2])
    with pytest.raises(ValueError, match="rows"):
        auroc([0, 1, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match="target_fpr"):
        tpr_at_fpr([0, 1], [0.1, 0.2], 1.5)
    with pytest.raises(ValueError, match="method"):
        auroc_ci([0, 1], [0.1, 0.2], method="hanley")
    # constant scores: AUROC 0.5, as scikit-learn
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert auroc([0, 1, 0, 1], [0.3] * 4) == 0.5 == roc_auc_score([0, 1, 0, 1], [0.3] * 4)


def test_target_fpr_below_resolution_gives_fpr_zero():
    # 20 humans, 1% target: only FPR 0 is <= 1%; threshold is the top human score
    y = np.array([0] * 20 + [1] * 10)
    s = np.concatenate([np.arange(20) / 20, np.linspace(0.5, 1.5, 10)])
    r = tpr_at_fpr(y, s, 0.01)
    assert r.achieved_fpr == 0.0 and r.threshold == 0.95 and r.k == int(np.sum(s[20:] > 0.95))


def test_roc_curve_points_downsampled():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 5000)
    s = rng.normal(size=5000) + y
    full_fpr, full_tpr, _ = roc_curve(y, s)
    pts = roc_curve_points(y, s, max_points=50)
    assert len(pts.fpr) <= 50 and len(pts.fpr) == len(pts.tpr) == len(pts.thresholds)
    assert (pts.fpr[0], pts.tpr[0]) == (0.0, 0.0) and (pts.fpr[-1], pts.tpr[-1]) == (1.0, 1.0)
    assert np.all(np.diff(pts.fpr) >= 0) and np.all(np.diff(pts.tpr) >= 0)
    # every point lies on the full curve
    on_curve = {(a, b) for a, b in zip(full_fpr, full_tpr)}
    assert all((a, b) in on_curve for a, b in zip(pts.fpr, pts.tpr))
    small = roc_curve_points([0, 1, 0, 1], [0.1, 0.9, 0.2, 0.3])
    assert len(small.fpr) == len(roc_curve([0, 1, 0, 1], [0.1, 0.9, 0.2, 0.3])[0])
