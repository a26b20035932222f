"""Wilson intervals: cross-checked against statsmodels, plus properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from veribench.metrics import Rate, rates_from_arrays, wilson, wilson_arrays


@st.composite
def counts(draw):
    n = draw(st.integers(0, 5000))
    k = draw(st.integers(0, n))
    return k, n


@given(counts(), st.sampled_from([0.01, 0.05, 0.1, 0.32]))
@settings(max_examples=300, deadline=None)
def test_wilson_properties(kn, alpha):
    k, n = kn
    r = wilson(k, n, alpha)
    assert isinstance(r, Rate) and (r.k, r.n) == (k, n)
    if n == 0:
        assert r.rate is None and r.lo is None and r.hi is None and r.reason
        return
    assert 0.0 <= r.lo <= r.rate <= r.hi <= 1.0
    assert r.rate == k / n
    lo_sm, hi_sm = proportion_confint(k, n, alpha=alpha, method="wilson")
    assert r.lo == pytest.approx(lo_sm, abs=1e-12)
    assert r.hi == pytest.approx(hi_sm, abs=1e-12)
    assert (r.lo == 0.0) == (k == 0) or k == 0 or r.lo > 0
    if k == 0:
        assert r.lo == 0.0
    if k == n:
        assert r.hi == 1.0


def test_wilson_arrays_match_statsmodels_random():
    rng = np.random.default_rng(7)
    n = rng.integers(1, 100_000, size=5000)
    k = rng.binomial(n, rng.uniform(0, 1, size=n.size))
    rate, lo, hi = wilson_arrays(k, n)
    lo_sm, hi_sm = proportion_confint(k, n, alpha=0.05, method="wilson")
    np.testing.assert_allclose(lo, lo_sm, atol=1e-12, rtol=0)
    np.testing.assert_allclose(hi, hi_sm, atol=1e-12, rtol=0)
    np.testing.assert_array_equal(rate, k / n)
    # and the scalar function gives the same numbers
    for i in range(0, 5000, 250):
        r = wilson(int(k[i]), int(n[i]))
        assert (r.lo, r.hi) == (lo[i], hi[i])


def test_wilson_arrays_zero_n_and_rows():
    rate, lo, hi = wilson_arrays(np.array([0, 3, 0]), np.array([0, 3, 5]))
    assert np.isnan(rate[0]) and np.isnan(lo[0]) and np.isnan(hi[0])
    assert hi[1] == 1.0 and lo[2] == 0.0
    rows = rates_from_arrays(np.array([0, 3]), np.array([0, 3]))
    assert rows[0].reason == "no documents" and rows[0].rate is None
    assert rows[1].rate == 1.0 and rows[1].to_dict()["hi"] == 1.0


@pytest.mark.parametrize("k,n", [(-1, 5), (6, 5), (1.5, 5), ("3", 5), (True, 5)])
def test_wilson_rejects_bad_counts(k, n):
    with pytest.raises(ValueError):
        wilson(k, n)


def test_wilson_rejects_bad_alpha():
    with pytest.raises(ValueError, match="alpha"):
        wilson(1, 2, alpha=0)
    with pytest.raises(ValueError):
        wilson_arrays(np.array([3]), np.array([2]))


def test_numpy_integer_counts_accepted():
    r = wilson(np.int64(3), np.int32(10))
    assert r.k == 3 and r.n == 10 and type(r.k) is int
