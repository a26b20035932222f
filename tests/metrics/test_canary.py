"""The canary leak test (veribench.metrics.canary) against scipy.stats.binomtest and a binomial
tail summed by hand."""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from veribench.metrics import UndefinedMetricWarning
from veribench.metrics.canary import CANARY_TEST, canary_leak_test


def tail(k: int, n: int, p: float) -> float:
    """P(X >= k), X ~ Binomial(n, p), summed term by term."""
    return sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k, n + 1))


def test_leaked_entry_flagged_by_hand():
    # 20 of 20 canaries right, 600 of 1000 matched texts: p = 0.6 ** 20 = 3.66e-5 < 0.001
    r = canary_leak_test(20, 20, 600, 1000)
    assert r.p_value == pytest.approx(0.6**20, rel=1e-12)
    assert r.flagged is True and r.acc_canary == 1.0 and r.acc_matched == 0.6 and r.test == CANARY_TEST
    # 14 of 20: P(X >= 14 | 20, 0.6) = 0.2500 (summed by hand), not flagged
    r = canary_leak_test(14, 20, 600, 1000)
    assert r.p_value == pytest.approx(tail(14, 20, 0.6), rel=1e-10)
    assert r.p_value == pytest.approx(0.25001, abs=1e-4)
    assert r.flagged is False and r.reason is None


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 200), km=st.integers(1, 999), data=st.data())
def test_p_value_equals_scipy_and_hand_tail(n, km, data):
    k = data.draw(st.integers(0, n))
    p0 = km / 1000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        r = canary_leak_test(k, n, km, 1000, alpha=0.001)
    if p0**n >= 0.001:
        assert r.p_value is None and r.flagged is None and "too few canaries" in (r.reason or "")
        return
    assert r.p_value == pytest.approx(binomtest(k, n, p0, alternative="greater").pvalue, rel=1e-9, abs=1e-300)
    assert r.p_value == pytest.approx(tail(k, n, p0), rel=1e-6, abs=1e-12)
    assert r.flagged == (r.p_value < 0.001)


@pytest.mark.parametrize(("args", "words"), [
    ((0, 0, 50, 100), "no canary texts"),
    ((3, 5, 0, 0), "no matched ordinary texts"),
    ((5, 5, 100, 100), "accuracy is 1"),
    ((5, 5, 0, 100), "accuracy is 0"),
    ((3, 3, 50, 100), "too few canaries"),
])
def test_undefined_is_null_with_reason(args, words):
    with pytest.warns(UndefinedMetricWarning):
        r = canary_leak_test(*args)
    assert r.p_value is None and r.flagged is None and words in (r.reason or "")


@pytest.mark.parametrize("args", [(-1, 5, 1, 2), (6, 5, 1, 2), (1, 5, 3, 2), (1.5, 5, 1, 2), (True, 5, 1, 2)])
def test_bad_counts_raise(args):
    with pytest.raises(ValueError):
        canary_leak_test(*args)
    with pytest.raises(ValueError, match="alpha"):
        canary_leak_test(1, 5, 1, 2, alpha=0)
