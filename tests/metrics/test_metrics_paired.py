"""Paired comparisons (issue 14): DeLong against a plain O(m n) DeLong written here,
McNemar against statsmodels and scipy, Newcombe's paired interval against a published
worked example, an independent implementation and its exact coverage, Holm against
statsmodels.stats.multitest and a plain step-down."""

from __future__ import annotations

import math
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest, norm
from sklearn.metrics import roc_auc_score
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from veribench.metrics import auroc_delong_variance
from veribench.metrics.paired import (
    NO_DISCORDANT,
    ZERO_VARIANCE,
    adjust_pvalues,
    delong_paired,
    mcnemar_exact,
    newcombe_paired,
    paired_rate_difference,
    paired_table,
)

# -- a plain DeLong, straight from DeLong, DeLong & Clarke-Pearson (1988) ---------------------------


def plain_delong(y, sa, sb):
    """O(m n) DeLong: psi(X, Y) = 1 if X > Y, 1/2 if equal, 0 otherwise, per pair."""
    y = np.asarray(y)
    comps = []
    for s in (np.asarray(sa, float), np.asarray(sb, float)):
        x, yy = s[y == 1], s[y == 0]
        psi = (x[:, None] > yy[None, :]).astype(float) + 0.5 * (x[:, None] == yy[None, :])
        comps.append((psi.mean(), psi.mean(axis=1), psi.mean(axis=0)))
    m, n = int((y == 1).sum()), int((y == 0).sum())
    v10 = np.vstack([c[1] for c in comps])
    v01 = np.vstack([c[2] for c in comps])
    s10 = (v10 - v10.mean(axis=1, keepdims=True)) @ (v10 - v10.mean(axis=1, keepdims=True)).T / (m - 1)
    s01 = (v01 - v01.mean(axis=1, keepdims=True)) @ (v01 - v01.mean(axis=1, keepdims=True)).T / (n - 1)
    s = s10 / m + s01 / n
    var = s[0, 0] + s[1, 1] - 2 * s[0, 1]
    diff = comps[0][0] - comps[1][0]
    return comps[0][0], comps[1][0], diff, var


@st.composite
def scored_pairs(draw):
    m = draw(st.integers(2, 30))
    n = draw(st.integers(2, 30))
    levels = draw(st.integers(2, 12))  # few distinct values: many ties
    sa = draw(st.lists(st.integers(0, levels), min_size=m + n, max_size=m + n))
    sb = draw(st.lists(st.integers(0, levels), min_size=m + n, max_size=m + n))
    y = [1] * m + [0] * n
    return np.array(y), np.array(sa, float), np.array(sb, float)


@settings(max_examples=150, deadline=None)
@given(scored_pairs())
def test_delong_paired_matches_plain_delong(data):
    y, sa, sb = data
    auc_a, auc_b, diff, var = plain_delong(y, sa, sb)
    r = delong_paired(y, sa, sb)
    assert r.value_a == pytest.approx(auc_a, abs=1e-12)
    assert r.value_b == pytest.approx(auc_b, abs=1e-12)
    assert r.value_a == pytest.approx(roc_auc_score(y, sa), abs=1e-12)
    assert r.estimate == pytest.approx(diff, abs=1e-12)
    if var <= 1e-14 * 1e-3:
        return
    if r.reason == ZERO_VARIANCE:
        assert var == pytest.approx(0.0, abs=1e-12)
        return
    assert r.detail["variance"] == pytest.approx(var, rel=1e-9, abs=1e-15)
    z = diff / math.sqrt(var)
    assert r.p_value == pytest.approx(2 * norm.sf(abs(z)), rel=1e-9, abs=1e-15)
    half = 1.959963984540054 * math.sqrt(var)
    assert r.lo == pytest.approx(max(-1, diff - half), abs=1e-9)
    assert r.hi == pytest.approx(min(1, diff + half), abs=1e-9)
    assert r.lo <= r.estimate <= r.hi


def test_delong_paired_variance_of_one_detector_matches_roc_module():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 300)
    sa = rng.normal(size=300) + y
    sb = rng.normal(size=300)
    r = delong_paired(y, sa, sb)
    # var(A - B) with B constant-free: check against single-curve variances + covariance sign
    _, va = auroc_delong_variance(y, sa)
    _, vb = auroc_delong_variance(y, sb)
    assert r.detail["variance"] < va + vb + 2 * math.sqrt(va * vb) + 1e-12
    assert r.p_value < 1e-6 and r.estimate > 0.2


def test_delong_paired_undefined_cases():
    r = delong_paired([1, 1, 1], [0.1, 0.2, 0.3], [0.3, 0.2, 0.1])
    assert r.estimate is None and r.p_value is None and "one class" in r.reason
    r = delong_paired([1, 0, 0], [0.9, 0.2, 0.1], [0.1, 0.2, 0.9])
    assert r.estimate == pytest.approx(1.0) and r.lo is None and r.p_value is None and ">= 2" in r.reason
    s = np.array([0.1, 0.5, 0.3, 0.9, 0.7, 0.2])
    y = np.array([0, 1, 0, 1, 1, 0])
    r = delong_paired(y, s, np.exp(3 * s))  # same ranking
    assert r.estimate == 0.0 and r.p_value is None and r.lo is None and r.reason == ZERO_VARIANCE
    with pytest.raises(ValueError, match="non-finite"):
        delong_paired(y, s, np.where(y == 1, np.nan, s))


# -- McNemar -----------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 60), st.integers(0, 60), st.integers(0, 30), st.integers(0, 30))
def test_mcnemar_matches_statsmodels_and_binomial_test(b, c, both, neither):
    p = mcnemar_exact(b, c)
    if b + c == 0:
        assert p is None
        return
    ref = mcnemar(np.array([[both, b], [c, neither]]), exact=True).pvalue
    assert p == pytest.approx(ref, abs=1e-12)
    assert p == pytest.approx(binomtest(b, b + c, 0.5).pvalue, abs=1e-9)


def test_mcnemar_rejects_bad_counts():
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 3)
    with pytest.raises(ValueError):
        mcnemar_exact(1.5, 3)


# -- Newcombe method 10 ------------------------------------------------------------------------------


def test_newcombe_paired_published_example():
    """Fagerland, Lydersen & Laake, *Statistical Analysis of Contingency Tables* (2017), ch. 8:
    complete response before and after consolidation therapy (Cavo et al. 2012), table
    [[59, 6], [16, 80]]: Newcombe square-and-add interval -0.0621 (95% CI -0.1186 to -0.0046)."""
    theta, lo, hi = newcombe_paired(59, 6, 16, 80)
    assert round(theta, 4) == -0.0621
    assert round(lo, 4) == -0.1186
    assert round(hi, 4) == -0.0046


def independent_newcombe(a, b, c, d, alpha=0.05):
    """Newcombe (1998) method 10 written from the paper's formulas, Wilson limits from statsmodels."""
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = proportion_confint(a + b, n, alpha=alpha, method="wilson")
    l2, u2 = proportion_confint(a + c, n, alpha=alpha, method="wilson")
    l1, u1 = (0.0 if a + b == 0 else l1), (1.0 if a + b == n else u1)
    l2, u2 = (0.0 if a + c == 0 else l2), (1.0 if a + c == n else u2)
    e, f, g, h = a + b, c + d, a + c, b + d
    if e * f * g * h == 0:
        phi = 0.0
    else:
        num = a * d - b * c
        num = max(num - n / 2, 0.0) if num > 0 else num
        phi = num / math.sqrt(e * f * g * h)
    theta = (b - c) / n
    delta = math.sqrt(max((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0))
    eps = math.sqrt(max((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0))
    return theta, theta - delta, theta + eps


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 40), st.integers(0, 40), st.integers(0, 40), st.integers(0, 40))
def test_newcombe_paired_matches_independent_implementation(a, b, c, d):
    if a + b + c + d == 0:
        with pytest.raises(ValueError, match="empty"):
            newcombe_paired(a, b, c, d)
        return
    got = newcombe_paired(a, b, c, d)
    ref = independent_newcombe(a, b, c, d)
    assert got == pytest.approx(ref, abs=1e-9)
    theta, lo, hi = got
    assert -1.0 <= lo <= theta <= hi <= 1.0
    assert all(math.isfinite(v) for v in got)


@pytest.mark.parametrize("cells", [(0.05, 0.10, 0.03, 0.82), (0.20, 0.05, 0.15, 0.60), (0.30, 0.10, 0.10, 0.50)])
def test_newcombe_paired_exact_coverage(cells):
    """Exact coverage by enumerating every 2x2 table of n = 30 pairs under a multinomial."""
    from scipy.special import gammaln

    n = 30
    probs = np.array(cells)
    theta = probs[1] - probs[2]
    tables = np.array([(a, b, c, n - a - b - c) for a in range(n + 1) for b in range(n + 1 - a)
                       for c in range(n + 1 - a - b)])
    logp = gammaln(n + 1) - gammaln(tables + 1).sum(axis=1) + (tables * np.log(probs)).sum(axis=1)
    pr = np.exp(logp)
    cover = 0.0
    for t, p in zip(tables[pr > 1e-12], pr[pr > 1e-12]):
        _, lo, hi = newcombe_paired(*(int(v) for v in t))
        cover += p * (lo <= theta <= hi)
    # Newcombe (1998) reports coverage close to nominal for method 10 (mean about 0.95).
    assert 0.92 <= cover <= 0.99


def test_paired_rate_difference_from_flags():
    fa = np.array([1, 1, 0, 0, 1, 0, 1, 0, 0, 0], bool)
    fb = np.array([1, 0, 0, 0, 0, 0, 1, 1, 0, 0], bool)
    assert paired_table(fa, fb) == (2, 2, 1, 5)
    r = paired_rate_difference(fa, fb)
    assert r.estimate == pytest.approx(0.1) and r.value_a == 0.4 and r.value_b == 0.3
    assert (r.estimate, r.lo, r.hi) == pytest.approx(newcombe_paired(2, 2, 1, 5))
    assert r.p_value == pytest.approx(mcnemar(np.array([[2, 2], [1, 5]]), exact=True).pvalue)
    same = paired_rate_difference(fa, fa)
    assert same.estimate == 0.0 and same.p_value is None and same.reason == NO_DISCORDANT
    assert same.lo < 0 < same.hi
    empty = paired_rate_difference(np.array([], bool), np.array([], bool))
    assert empty.estimate is None and empty.lo is None and empty.n == 0 and empty.reason
    with pytest.raises(ValueError, match="rows"):
        paired_rate_difference(fa, fb[:3])


# -- Holm --------------------------------------------------------------------------------------------


def plain_holm(ps):
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(0, 1)), min_size=0, max_size=40))
def test_holm_matches_statsmodels_and_plain_step_down(ps):
    with mock.patch("gc.collect", lambda *a: 0):  # statsmodels collects garbage on every call
        _check_holm(ps)


def _check_holm(ps):
    adj = adjust_pvalues(ps, "holm")
    defined = [p for p in ps if p is not None]
    assert [a is None for a in adj] == [p is None for p in ps]
    if not defined:
        return
    ref_reject, ref, _, _ = multipletests(np.array(defined), alpha=0.05, method="holm")
    got = [a for a in adj if a is not None]
    assert got == pytest.approx(list(ref), abs=1e-12)
    assert got == pytest.approx(plain_holm(defined), abs=1e-12)
    assert [g <= 0.05 for g in got] == list(ref_reject)
    assert adjust_pvalues(ps, "none") == [None if p is None else float(p) for p in ps]


def test_holm_rejects_bad_input():
    with pytest.raises(ValueError, match="correction"):
        adjust_pvalues([0.1], "bonferroni")
    with pytest.raises(ValueError, match="p-values"):
        adjust_pvalues([float("nan")])
