"""metrics.roc.histogram_edges: numpy's edges where numpy can make them, finite strictly
increasing edges covering every value where it cannot (any finite scale)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veribench.metrics.roc import histogram_edges


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=50), st.integers(1, 40))
def test_edges_are_finite_increasing_and_cover_every_value(values, bins):
    e = histogram_edges(values, bins)
    assert np.isfinite(e).all() and (np.diff(e) > 0).all() and 2 <= e.size <= bins + 1
    counts, _ = np.histogram(np.asarray(values), bins=e)
    assert counts.sum() == len(values)


@pytest.mark.parametrize("values", [[0.1, 0.5, 0.9, 0.95], [-3.0, 2.0], [7.0], [0.0, 1.0]])
def test_equal_to_numpy_where_numpy_can(values):
    assert np.array_equal(histogram_edges(values, 30), np.histogram_bin_edges(values, bins=30))


@pytest.mark.parametrize("values", [[0.0, 5e-324], [-1e308, 1e308], [-1.7976931348623157e308, 1.7976931348623157e308],
                                    [1.7976931348623157e308] * 2])
def test_the_leaderboard_cases_numpy_refuses(values):
    with np.errstate(over="ignore", invalid="ignore"):
        try:
            ne = np.histogram_bin_edges(values, bins=30)
            numpy_ok = bool(np.isfinite(ne).all() and (np.diff(ne) > 0).all())
        except ValueError:
            numpy_ok = False
    assert not numpy_ok  # the cases are real
    e = histogram_edges(values, 30)
    assert np.histogram(values, bins=e)[0].sum() == len(values)


def test_refusals():
    for bad in ([], [np.nan], [np.inf]):
        with pytest.raises(ValueError):
            histogram_edges(bad, 10)
    with pytest.raises(ValueError):
        histogram_edges([1.0], 0)
