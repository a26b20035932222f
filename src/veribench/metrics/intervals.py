"""The one rule for an interval whose method degenerates (issue 25, "numbers shown as they are").

A 95% interval of zero width (low == high) claims certainty that the data do not give: it
appears when a method's variance estimate is exactly 0, not because the quantity is known.
Where a method valid at that point exists it is used with its name (a proportion at 0 or 1
keeps its Wilson score interval, which never has zero width for n >= 1: Wilson 1927); where
none is standard the interval is ``None`` with the reason below, never a point shown as an
interval:

- AUROC by DeLong: the variance is 0 when the classes are perfectly separated (AUROC 0 or
  1) or every score is the same (AUROC 0.5); DeLong, DeLong & Clarke-Pearson (1988) give no
  interval there (:data:`DELONG_ZERO`).
- A percentile bootstrap (Efron & Tibshirani 1993, ch. 13) whose replicates all give the
  same value: the percentiles coincide (:data:`BOOTSTRAP_ONE_VALUE`).
- A difference that is exactly 0 in every resample: estimate 0, no interval
  (:data:`NO_VARIATION`).

Every interval-making function of :mod:`veribench.metrics` and :mod:`veribench.evaluate`
passes its endpoints through :func:`checked` (or tests :func:`collapsed`), so the rule and
its wording live here only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: AUROC whose DeLong variance is 0.
DELONG_ZERO = "DeLong variance is 0 (perfect separation, or one distinct score): no interval"
#: A percentile bootstrap whose replicates are all equal.
BOOTSTRAP_ONE_VALUE = "bootstrap gave one value in every replicate: no interval"
#: A percentile bootstrap whose replicates vary but whose two percentiles coincide (more
#: than 1 - alpha of the replicates at one value).
BOOTSTRAP_PERCENTILES_EQUAL = ("the bootstrap's 2.5th and 97.5th percentiles are the same value (most replicates "
                               "gave it): no interval")
#: A difference that is 0 in every resample.
NO_VARIATION = "no variation"
#: A bootstrap test (p-value) whose replicates are all equal: the resampling carries no
#: information about the sign of the difference, so no p-value (never the smallest possible one).
BOOTSTRAP_ONE_VALUE_TEST = "bootstrap gave one value in every replicate: no test"
#: A stratified resampling in which every stratum has one unit: every resample is the data
#: itself, so no interval, test or rank interval can come from it.
ONE_POSSIBLE_RESAMPLE = ("every stratum has one unit, so the resampling has one possible resample (the data "
                         "itself): no interval, test or rank interval")


def sign_test_floor(n_units: int) -> float:
    """The smallest two-sided p-value any paired test on ``n_units`` independent units can
    honestly give: that of an exact sign test with every unit on one side, ``min(1, 2 * 0.5**n)``
    (binomial; e.g. 0.5 for 2 units, 0.031 for 6). A resampling p-value below it reflects the
    number of resamples, not the data."""
    return float(min(1.0, 2.0 * 0.5 ** max(int(n_units), 0)))


def too_few_units(n_units: int, alpha: float = 0.05) -> str | None:
    """The reason a paired test on ``n_units`` units cannot separate anything at level ``alpha``
    (:func:`sign_test_floor` above ``alpha``), or ``None`` when it can."""
    floor = sign_test_floor(n_units)
    if floor <= alpha:
        return None
    return (f"{n_units} unit(s) resampled: no paired test can reach p <= {alpha:g} (the smallest p the data allow "
            f"is {floor:.3g}, a sign test with every unit on one side): no test")


def collapsed(lo: Any, hi: Any) -> bool:
    """True when both endpoints are finite numbers and equal (a zero-width interval)."""
    if lo is None or hi is None:
        return False
    lo_f, hi_f = float(lo), float(hi)
    return math.isfinite(lo_f) and math.isfinite(hi_f) and lo_f == hi_f


def one_value(replicates: np.ndarray) -> bool:
    """True when the finite replicates of a bootstrap hold a single distinct value (or none)."""
    r = np.asarray(replicates, dtype=np.float64)
    r = r[np.isfinite(r)]
    return r.size == 0 or bool(r.min() == r.max())


def one_possible_resample(strata: np.ndarray) -> bool:
    """True when a stratified resampling (each stratum redrawn to its size, with replacement)
    has a single possible resample: every stratum has at most one unit (or there are none).

    Args:
        strata: array (n,) of stratum codes, one per unit.
    """
    s = np.asarray(strata)
    return s.size == 0 or bool(np.all(np.unique(s, return_counts=True)[1] == 1))


def bootstrap_reason(replicates: np.ndarray) -> str:
    """The reason for a collapsed percentile bootstrap: :data:`BOOTSTRAP_ONE_VALUE` when every
    replicate gave the same value, else :data:`BOOTSTRAP_PERCENTILES_EQUAL`."""
    return BOOTSTRAP_ONE_VALUE if one_value(replicates) else BOOTSTRAP_PERCENTILES_EQUAL


def checked(lo: Any, hi: Any, reason: str | None, degenerate_reason: str) -> tuple[list[float] | None, str | None]:
    """``(interval, reason)`` for an output row: ``([lo, hi], None)`` for a proper interval;
    ``(None, reason)`` when the method gave none (NaN / ``None`` endpoints; ``reason`` says
    why, or ``degenerate_reason`` when the caller gave none); ``(None, degenerate_reason)``
    when low == high (:func:`collapsed`).

    Args:
        lo, hi: the endpoints (float, numpy scalar, NaN or ``None``), in the statistic's units.
        reason: the caller's reason when the endpoints are missing, else ``None``.
        degenerate_reason: one of this module's reasons (the method that degenerated).
    """
    if collapsed(lo, hi):
        return None, degenerate_reason
    if lo is None or hi is None or not (math.isfinite(float(lo)) and math.isfinite(float(hi))):
        return None, reason or degenerate_reason
    return [float(lo), float(hi)], None
