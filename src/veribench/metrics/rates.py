"""Rates (catch rate, false-positive rate ...) with Wilson score intervals.

Formula: Wilson (1927), "Probable inference, the law of succession, and statistical
inference", JASA 22(158). Computed by statsmodels ``proportion_confint(method="wilson")``
(statsmodels/stats/proportion.py), with two fixes that statsmodels leaves to rounding:
the lower bound at k = 0 is exactly 0.0 and the upper bound at k = n is exactly 1.0
(the interval always contains the observed rate and stays inside [0, 1]).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass
from typing import Any, SupportsInt

import numpy as np
import numpy.typing as npt
from statsmodels.stats.proportion import proportion_confint

#: Reason given when a rate has no documents.
NO_DOCUMENTS = "no documents"


@dataclass(frozen=True)
class Rate:
    """A proportion k/n with its Wilson interval.

    Attributes:
        k: count of events (e.g. human texts flagged, AI texts caught).
        n: count of trials (texts).
        rate: k/n in [0, 1], or ``None`` when n = 0.
        lo, hi: interval bounds in [0, 1] (lo <= rate <= hi), or ``None`` when n = 0.
        reason: why the values are ``None`` (``"no documents"``), else ``None``.
    """

    k: int
    n: int
    rate: float | None
    lo: float | None
    hi: float | None
    reason: str | None = None

    @property
    def ci(self) -> tuple[float | None, float | None]:
        return (self.lo, self.hi)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check_counts(k: SupportsInt, n: SupportsInt) -> tuple[int, int]:
    for name, v in (("k", k), ("n", n)):
        if isinstance(v, (bool, np.bool_)):
            raise ValueError(f"{name} must be a whole count, got the boolean {v!r}")
        if not isinstance(v, numbers.Integral):
            if isinstance(v, numbers.Real) and float(v).is_integer():
                continue
            raise ValueError(f"{name} must be a whole count, got {v!r}")
    k, n = int(k), int(n)
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"counts must satisfy 0 <= k <= n, got k={k}, n={n}")
    return k, n


def _check_alpha(alpha: float) -> float:
    if not (0.0 < float(alpha) < 1.0):
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    return float(alpha)


def wilson(k: int, n: int, alpha: float = 0.05) -> Rate:
    """Rate k/n with its Wilson score interval at confidence 1 - alpha.

    Args:
        k: events, 0 <= k <= n.
        n: trials, n >= 0.
        alpha: 0.05 for a 95% interval.

    Returns:
        :class:`Rate`. For n = 0, ``rate``, ``lo`` and ``hi`` are ``None`` and ``reason`` is
        ``"no documents"`` (never NaN).

    Raises:
        ValueError: negative counts, k > n, non-integral counts, alpha outside (0, 1).
    """
    k, n = _check_counts(k, n)
    alpha = _check_alpha(alpha)
    if n == 0:
        return Rate(k, n, None, None, None, NO_DOCUMENTS)
    lo, hi = proportion_confint(k, n, alpha=alpha, method="wilson")
    lo, hi = float(lo), float(hi)
    lo = 0.0 if k == 0 else min(max(lo, 0.0), k / n)
    hi = 1.0 if k == n else max(min(hi, 1.0), k / n)
    return Rate(k, n, k / n, lo, hi, None)


def wilson_arrays(k: npt.ArrayLike, n: npt.ArrayLike, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised :func:`wilson`: ``(rate, lo, hi)`` as float64 arrays.

    The same numbers as statsmodels ``proportion_confint(k, n, alpha, method="wilson")``
    with the exact 0.0 / 1.0 bounds at k = 0 / k = n. Where n = 0 all three are NaN: this is
    for internal use; turn rows into :class:`Rate` (``None`` + reason) before publishing.

    Args:
        k, n: integer arrays of equal shape, 0 <= k <= n.

    Raises:
        ValueError: shape mismatch or counts outside 0 <= k <= n.
    """
    alpha = _check_alpha(alpha)
    ka = np.asarray(k)
    na = np.asarray(n)
    if ka.shape != na.shape:
        raise ValueError(f"k and n must have the same shape, got {ka.shape} and {na.shape}")
    if np.any(na < 0) or np.any(ka < 0) or np.any(ka > na):
        raise ValueError("counts must satisfy 0 <= k <= n")
    kf = ka.astype(np.float64)
    nf = na.astype(np.float64)
    rate = np.full(kf.shape, np.nan)
    lo = np.full(kf.shape, np.nan)
    hi = np.full(kf.shape, np.nan)
    ok = nf > 0
    if ok.any():
        kk, nn = kf[ok], nf[ok]
        wl, wh = proportion_confint(kk, nn, alpha=alpha, method="wilson")
        r = kk / nn
        wl = np.where(kk == 0, 0.0, np.clip(wl, 0.0, r))
        wh = np.where(kk == nn, 1.0, np.clip(wh, r, 1.0))
        rate[ok], lo[ok], hi[ok] = r, wl, wh
    return rate, lo, hi


def rates_from_arrays(k: npt.ArrayLike, n: npt.ArrayLike, alpha: float = 0.05) -> list[Rate]:
    """A :class:`Rate` per element of the count arrays (n = 0 gives ``None`` + reason)."""
    r, lo, hi = wilson_arrays(k, n, alpha)
    out = []
    for ki, ni, ri, li, hi_ in zip(np.ravel(k), np.ravel(n), r.ravel(), lo.ravel(), hi.ravel()):
        if ni == 0:
            out.append(Rate(int(ki), 0, None, None, None, NO_DOCUMENTS))
        else:
            out.append(Rate(int(ki), int(ni), float(ri), float(li), float(hi_), None))
    return out


def is_missing(x: object) -> bool:
    """True for ``None`` or NaN."""
    return x is None or (isinstance(x, float) and math.isnan(x))
