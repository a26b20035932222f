"""Seeded percentile bootstrap.

Efron & Tibshirani (1993), *An Introduction to the Bootstrap*, ch. 13 (percentile interval).
Rows are resampled with replacement, jointly across the given arrays; with ``strata`` the
resampling is done within each stratum (each keeps its size), which is what AUROC needs so
that every replicate holds both classes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from veribench.metrics._base import warn_undefined
from veribench.metrics.intervals import bootstrap_reason, collapsed


@dataclass(frozen=True)
class BootstrapCI:
    """Percentile interval. ``estimate`` is ``values_fn`` on the original arrays; ``n_valid``
    counts the replicates that gave a finite value (the others are left out). lo/hi are NaN
    with ``reason`` when there is no interval (no finite replicate, or the two percentiles
    coincide: :func:`veribench.metrics.intervals.bootstrap_reason`)."""

    estimate: float
    lo: float
    hi: float
    n_boot: int
    n_valid: int
    seed: int
    alpha: float
    reason: str | None = None


def resample_indices(n: int, rng: np.random.Generator, strata: np.ndarray | None = None) -> np.ndarray:
    """One bootstrap draw of row indices (within strata when given)."""
    if strata is None:
        return rng.integers(0, n, size=n)
    parts = []
    for code in np.unique(strata):
        members = np.flatnonzero(strata == code)
        parts.append(members[rng.integers(0, members.size, size=members.size)])
    return np.concatenate(parts)


def bootstrap_ci(
    values_fn: Callable[..., float],
    arrays: Sequence[Any],
    n_boot: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
    strata: Any = None,
) -> BootstrapCI:
    """Percentile bootstrap interval of a statistic.

    Args:
        values_fn: ``values_fn(*arrays) -> float``; called on the originals and on each
            replicate (the arrays resampled by the same row indices).
        arrays: equal-length 1-D arrays (rows = documents).
        n_boot: number of replicates (>= 1).
        seed: seed of ``numpy.random.default_rng``; the same seed gives the same interval.
        alpha: 0.05 for a 95% interval (quantiles alpha/2 and 1 - alpha/2, numpy's default
            linear interpolation).
        strata: optional per-row codes; resampling keeps each stratum's size.

    Returns:
        :class:`BootstrapCI`. lo/hi are NaN (with an :class:`UndefinedMetricWarning`) when no
        replicate gives a finite value, and NaN with ``reason`` when the percentiles
        coincide (never a zero-width interval).

    Raises:
        ValueError: no arrays, unequal lengths, n_boot < 1, alpha outside (0, 1).
    """
    if not arrays:
        raise ValueError("bootstrap_ci needs at least one array")
    arrs = [np.asarray(a) for a in arrays]
    n = arrs[0].shape[0]
    if any(a.shape[0] != n for a in arrs):
        raise ValueError("bootstrap_ci: arrays must have the same length")
    if int(n_boot) < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    st = None if strata is None else np.asarray(strata)
    if st is not None and st.shape[0] != n:
        raise ValueError("bootstrap_ci: strata must have one code per row")
    estimate = float(values_fn(*arrs))
    rng = np.random.default_rng(seed)
    reps = np.empty(int(n_boot))
    for b in range(int(n_boot)):
        idx = resample_indices(n, rng, st)
        reps[b] = values_fn(*(a[idx] for a in arrs))
    ok = np.isfinite(reps)
    reason = None
    if not ok.any():
        reason = "bootstrap: no replicate gave a finite value; interval undefined"
        warn_undefined(reason)
        lo = hi = float("nan")
    else:
        lo, hi = (float(v) for v in np.quantile(reps[ok], [alpha / 2.0, 1.0 - alpha / 2.0]))
        if collapsed(lo, hi):
            reason = bootstrap_reason(reps[ok])
            lo = hi = float("nan")
    return BootstrapCI(estimate, lo, hi, int(n_boot), int(ok.sum()), int(seed), float(alpha), reason)
