"""Independent-proportion gaps (issue 14): Newcombe's hybrid score interval against the
published Table II of Newcombe (1998), statsmodels and a plain implementation; Fisher's
exact test against scipy and Fisher's own tea-tasting example."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import fisher_exact
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from veribench.metrics.proportions import NO_EVENTS_VARIATION, proportion_difference

#: Newcombe (1998), Statistics in Medicine 17:873-890, Table II, method 10 (score, no
#: continuity correction): (k_a, n_a, k_b, n_b) -> (lower, upper) to 4 decimals.
NEWCOMBE_TABLE_II = {
    (56, 70, 48, 80): (0.0524, 0.3339),
    (9, 10, 3, 10): (0.1705, 0.8090),
    (6, 7, 2, 7): (0.0582, 0.8062),
    (5, 56, 0, 29): (-0.0381, 0.1926),
    (0, 10, 0, 20): (-0.1611, 0.2775),
    (0, 10, 0, 10): (-0.2775, 0.2775),
    (10, 10, 0, 20): (0.6791, 1.0000),
    (10, 10, 0, 10): (0.6075, 1.0000),
}


@pytest.mark.parametrize("counts", sorted(NEWCOMBE_TABLE_II))
def test_newcombe_hybrid_published_values(counts):
    r = proportion_difference(*counts)
    lo, hi = NEWCOMBE_TABLE_II[counts]
    assert (round(r.lo, 4), round(r.hi, 4)) == (lo, hi)
    assert r.estimate == pytest.approx(counts[0] / counts[1] - counts[2] / counts[3])


def plain_newcombe_hybrid(ka, na, kb, nb, alpha=0.05):
    pa, pb = ka / na, kb / nb
    la, ua = proportion_confint(ka, na, alpha=alpha, method="wilson")
    lb, ub = proportion_confint(kb, nb, alpha=alpha, method="wilson")
    d = pa - pb
    return d - math.sqrt((pa - la) ** 2 + (ub - pb) ** 2), d + math.sqrt((ua - pa) ** 2 + (pb - lb) ** 2)


@st.composite
def two_groups(draw):
    na = draw(st.integers(1, 150))
    nb = draw(st.integers(1, 150))
    return draw(st.integers(0, na)), na, draw(st.integers(0, nb)), nb


@settings(max_examples=300, deadline=None)
@given(two_groups())
def test_gap_matches_statsmodels_plain_formula_and_scipy(c):
    ka, na, kb, nb = c
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning escapes to the user
        r = proportion_difference(ka, na, kb, nb)
    ref = confint_proportions_2indep(ka, na, kb, nb, method="newcomb", compare="diff")
    assert (r.lo, r.hi) == pytest.approx(tuple(float(v) for v in ref), abs=1e-9)
    assert (r.lo, r.hi) == pytest.approx(plain_newcombe_hybrid(ka, na, kb, nb), abs=1e-9)
    assert -1.0 <= r.lo <= r.estimate <= r.hi <= 1.0
    if ka + kb in (0, na + nb):
        assert r.p_value is None and r.reason == NO_EVENTS_VARIATION
    else:
        assert r.p_value == pytest.approx(fisher_exact([[ka, na - ka], [kb, nb - kb]]).pvalue, abs=1e-12)
    json.dumps(r.to_dict(), allow_nan=False)


def test_fisher_tea_tasting_example():
    """Fisher (1935), *The Design of Experiments*: 3 of 4 cups right, two-sided p = 34/70."""
    r = proportion_difference(3, 4, 1, 4)
    assert r.p_value == pytest.approx(34 / 70)


def test_gap_undefined_groups():
    r = proportion_difference(0, 0, 3, 10)
    assert r.estimate is None and r.lo is None and r.p_value is None and r.reason == "no texts in group a"
    assert r.rate_a is None and r.rate_b == 0.3
    r = proportion_difference(0, 0, 0, 0)
    assert r.reason == "no texts in group a and group b"
    for bad in [(3, 2, 0, 1), (-1, 2, 0, 1), (0.5, 2, 0, 1)]:
        with pytest.raises(ValueError):
            proportion_difference(*bad)
    with pytest.raises(ValueError, match="alpha"):
        proportion_difference(1, 2, 1, 2, alpha=0)


def test_gap_interval_level():
    r90 = proportion_difference(20, 50, 10, 50, alpha=0.10)
    r95 = proportion_difference(20, 50, 10, 50)
    assert r95.lo < r90.lo < r90.estimate < r90.hi < r95.hi
    assert np.isclose(r90.p_value, r95.p_value)
