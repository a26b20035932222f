"""Paired comparisons of two detectors on the same texts, and the multiple-comparison
correction across a run.

Conventions as everywhere in :mod:`veribench.metrics`: labels 1 = AI (positive), 0 = human;
scores oriented so that higher = more likely AI; flags are booleans (``score > threshold``
or the detector's verdict). "a" and "b" are two detectors scored on the **same** texts, in
the same order; every difference is **a - b**.

* AUROC: the paired DeLong test (DeLong, DeLong & Clarke-Pearson 1988, Biometrics 44(3):
  837-845, eq. for the covariance of correlated AUCs), with the structural components from
  the fast algorithm of Sun & Xu (2014), IEEE Signal Processing Letters 21(11):1389-1393
  (:func:`veribench.metrics.roc.delong_components`). Var(A - B) = S_aa + S_bb - 2 S_ab with
  S = S10 / m + S01 / n; z = (A - B) / sqrt(Var); two-sided p = 2 (1 - Phi(|z|)); the
  interval is (A - B) +- z_{1-alpha/2} sqrt(Var), clipped to [-1, 1].
* Rates at a decision rule (false-positive rate on human texts, catch rate on AI texts):
  McNemar's exact test (McNemar 1947, Psychometrika 12(2)) on the discordant pairs, computed
  by statsmodels (``statsmodels.stats.contingency_tables.mcnemar(exact=True)``: the
  two-sided binomial test of b against Binomial(b + c, 1/2)), and the interval for the
  paired difference of proportions by Newcombe's method 10 (Newcombe 1998, "Improved
  confidence intervals for the difference between binomial proportions based on paired
  data", Statistics in Medicine 17(22):2635-2650), the "square-and-add" combination of the
  two marginal Wilson intervals with a correlation term (see :func:`newcombe_paired`).
* Multiple comparisons: Holm's step-down correction (Holm 1979, Scandinavian Journal of
  Statistics 6(2):65-70), computed by ``statsmodels.stats.multitest.multipletests``.

Undefined results are ``None`` with a reason, never NaN or 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypedDict

import numpy as np
from scipy.stats import norm

from veribench.heap import frozen
from veribench.metrics._base import as_binary, check_pair
from veribench.metrics.intervals import NO_VARIATION
from veribench.metrics.rates import _check_alpha, _check_counts, wilson
from veribench.metrics.roc import delong_components

#: Names written into result rows (``test`` / ``interval``).
DELONG_TEST = "paired DeLong (Sun & Xu 2014 fast algorithm)"
DELONG_INTERVAL = "DeLong normal interval"
MCNEMAR_TEST = "McNemar exact (statsmodels)"
NEWCOMBE_PAIRED_INTERVAL = "Newcombe 1998 method 10 (paired square-and-add, Wilson)"

CORRECTIONS = ("holm", "none")

#: Reasons (one wording each).
NO_DISCORDANT = "no discordant pairs (both detectors flag exactly the same texts): McNemar's test has no information"
#: A difference that does not vary (``veribench.metrics.intervals.NO_VARIATION``): estimate kept, no interval.
ZERO_VARIANCE = (f"{NO_VARIATION}: the DeLong variance of the difference is 0 (identical rankings, or both detectors "
                 "separate the classes perfectly)")


@dataclass(frozen=True)
class PairedResult:
    """A paired comparison of detectors a and b on the same n texts.

    Attributes:
        estimate: a - b (AUROC points, or difference of rates in [-1, 1]); ``None`` when
            undefined.
        lo, hi: the (1 - alpha) interval of the difference, within [-1, 1]; ``None`` when
            undefined.
        p_value: two-sided p-value of "no difference"; ``None`` when the test is undefined
            (see ``reason``).
        value_a, value_b: each detector's AUROC or rate on these n texts.
        n: texts in the comparison (both detectors scored them validly).
        test, interval: the method names.
        reason: why something is ``None``, else ``None``.
        detail: counts behind the result (for rates: ``both``, ``a_only``, ``b_only``,
            ``neither``; for AUROC: ``n_ai``, ``n_human``, ``variance``).
    """

    estimate: float | None
    lo: float | None
    hi: float | None
    p_value: float | None
    value_a: float | None
    value_b: float | None
    n: int
    test: str
    interval: str
    reason: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def ci(self) -> tuple[float | None, float | None]:
        return (self.lo, self.hi)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Delong(TypedDict):
    """The fields of :class:`PairedResult` every DeLong outcome shares."""

    n: int
    test: str
    interval: str


class _McNemar(_Delong):
    """The fields of :class:`PairedResult` every rate-difference outcome shares."""

    detail: dict[str, Any]


# --------------------------------------------------------------------------------------
# AUROC: paired DeLong
# --------------------------------------------------------------------------------------


def delong_paired(y_true: Any, score_a: Any, score_b: Any, alpha: float = 0.05, pos_label: Any = None) -> PairedResult:
    """Paired DeLong test of AUROC(a) - AUROC(b) on the same texts.

    Args:
        y_true: labels per text, 1 = AI, 0 = human (any encoding
            :func:`veribench.metrics.as_binary` accepts).
        score_a, score_b: finite scores of detectors a and b for the same texts, in the same
            order; higher = more likely AI. Only rankings matter.
        alpha: 0.05 for a 95% interval.

    Returns:
        :class:`PairedResult` with ``estimate`` = AUC_a - AUC_b. Undefined parts are
        ``None`` with a reason: no AI or no human texts (everything); fewer than 2 texts in
        a class (interval and p-value: the variance needs 2); a zero variance of the
        difference (interval and p-value; :data:`ZERO_VARIANCE`).

    Raises:
        ValueError: non-finite scores (drop them first), bad labels, length mismatch, alpha
            outside (0, 1).

    Source: DeLong et al. (1988) for the covariance of correlated AUCs; structural
    components by Sun & Xu (2014), :func:`veribench.metrics.roc.delong_components`.
    """
    alpha = _check_alpha(alpha)
    y, sa = check_pair(y_true, score_a, pos_label)
    _, sb = check_pair(y, score_b)
    m = int(y.sum())
    n = int(y.size) - m
    base: _Delong = {"n": int(y.size), "test": DELONG_TEST, "interval": DELONG_INTERVAL}
    if m == 0 or n == 0:
        why = f"AUROC is undefined with one class only (AI n={m}, human n={n})"
        return PairedResult(None, None, None, None, None, None, reason=why, detail={"n_ai": m, "n_human": n}, **base)
    v10a, v01a = delong_components(y, sa)
    v10b, v01b = delong_components(y, sb)
    auc_a, auc_b = float(v10a.mean()), float(v10b.mean())
    est = auc_a - auc_b
    detail: dict[str, Any] = {"n_ai": m, "n_human": n, "variance": None}
    if m < 2 or n < 2:
        why = f"the DeLong variance needs >= 2 texts per class (AI n={m}, human n={n})"
        return PairedResult(est, None, None, None, auc_a, auc_b, reason=why, detail=detail, **base)
    s10 = np.cov(np.vstack([v10a, v10b]))  # unbiased (ddof=1), 2 x 2
    s01 = np.cov(np.vstack([v01a, v01b]))
    s = s10 / m + s01 / n
    var = float(s[0, 0] + s[1, 1] - 2.0 * s[0, 1])
    detail["variance"] = var
    if var <= 1e-14 * max(float(s[0, 0] + s[1, 1]), 1e-300):
        return PairedResult(est, None, None, None, auc_a, auc_b, reason=ZERO_VARIANCE, detail=detail, **base)
    sd = math.sqrt(var)
    p = float(2.0 * norm.sf(abs(est) / sd))
    half = float(norm.isf(alpha / 2.0)) * sd
    return PairedResult(est, max(-1.0, est - half), min(1.0, est + half), p, auc_a, auc_b, detail=detail, **base)


# --------------------------------------------------------------------------------------
# Rates at a decision rule: McNemar exact + Newcombe method 10
# --------------------------------------------------------------------------------------


def _count(v: Any) -> int:
    """A whole, non-negative count (ValueError otherwise)."""
    return _check_counts(v, v)[0]


def mcnemar_exact(a_only: int, b_only: int) -> float | None:
    """Two-sided p-value of McNemar's exact test from the discordant counts.

    Args:
        a_only: texts flagged by a and not by b. b_only: flagged by b and not by a.

    Returns:
        The p-value of statsmodels' ``mcnemar([[0, a_only], [b_only, 0]], exact=True)``
        (binomial test of a_only against Binomial(a_only + b_only, 1/2); the concordant
        cells do not enter). ``None`` when there are no discordant pairs: the conditional
        test then has no information (:data:`NO_DISCORDANT`).

    Raises:
        ValueError: negative or non-integral counts.
    """
    from statsmodels.stats.contingency_tables import mcnemar

    b, c = _count(a_only), _count(b_only)
    if b + c == 0:
        return None
    return float(mcnemar(np.array([[0, b], [c, 0]]), exact=True).pvalue)


def newcombe_paired(both: int, a_only: int, b_only: int, neither: int, alpha: float = 0.05) -> tuple[float, float, float]:
    """Newcombe's method 10 interval for the difference of two paired proportions.

    The 2 x 2 table of n texts: ``both`` flagged by a and b (cell a of Newcombe's paper),
    ``a_only`` (b), ``b_only`` (c), ``neither`` (d). The proportions are
    p_a = (both + a_only) / n and p_b = (both + b_only) / n, the difference
    theta = p_a - p_b = (a_only - b_only) / n.

    With (l_a, u_a) and (l_b, u_b) the Wilson score intervals of p_a and p_b
    (:func:`veribench.metrics.rates.wilson`), and phi the correlation of the table,

        L = theta - sqrt((p_a - l_a)^2 - 2 phi (p_a - l_a)(u_b - p_b) + (u_b - p_b)^2)
        U = theta + sqrt((p_b - l_b)^2 - 2 phi (p_b - l_b)(u_a - p_a) + (u_a - p_a)^2)

    phi = C / sqrt(e f g h) with e, f, g, h the four marginal totals and, with
    A = both * neither - a_only * b_only, C = A - n/2 if A > n/2, 0 if 0 <= A <= n/2,
    A if A < 0; phi = 0 when a marginal total is 0. This is the form given by Newcombe
    (1998, method 10), by Newcombe & Altman in *Statistics with Confidence* (2nd ed., 2000,
    ch. 6) and by Fagerland, Lydersen & Laake (2014, Statistics in Medicine 33(16):
    2850-2875; *Statistical Analysis of Contingency Tables*, 2017, ch. 8), where it is called
    the Newcombe square-and-add interval.

    Args:
        both, a_only, b_only, neither: non-negative integer counts, n = their sum > 0.
        alpha: 0.05 for 95%.

    Returns:
        ``(theta, lower, upper)``, lower <= theta <= upper, within [-1, 1].

    Raises:
        ValueError: negative / non-integral counts, n = 0, alpha outside (0, 1).
    """
    alpha = _check_alpha(alpha)
    a, b, c, d = (_count(v) for v in (both, a_only, b_only, neither))
    n = a + b + c + d
    if n == 0:
        raise ValueError("newcombe_paired: the table is empty (n = 0)")
    pa, pb = (a + b) / n, (a + c) / n
    ra, rb = wilson(a + b, n, alpha), wilson(a + c, n, alpha)
    la, ua, lb, ub = ra.lo, ra.hi, rb.lo, rb.hi
    assert la is not None and ua is not None and lb is not None and ub is not None  # n > 0: both intervals exist
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    if margins == 0:
        phi = 0.0
    else:
        big_a = a * d - b * c
        corr = big_a - n / 2.0 if big_a > n / 2.0 else (0.0 if big_a >= 0 else float(big_a))
        phi = corr / math.sqrt(float(margins))
    theta = (b - c) / n
    dl = (pa - la) ** 2 - 2.0 * phi * (pa - la) * (ub - pb) + (ub - pb) ** 2
    du = (pb - lb) ** 2 - 2.0 * phi * (pb - lb) * (ua - pa) + (ua - pa) ** 2
    lower = theta - math.sqrt(max(dl, 0.0))
    upper = theta + math.sqrt(max(du, 0.0))
    return theta, max(-1.0, min(lower, theta)), min(1.0, max(upper, theta))


def paired_table(flags_a: Any, flags_b: Any) -> tuple[int, int, int, int]:
    """``(both, a_only, b_only, neither)`` from two aligned boolean flag arrays.

    Raises:
        ValueError: not 1-D, lengths differ, values not boolean / 0 / 1.
    """
    fa = as_binary(flags_a, name="flags_a").astype(bool)
    fb = as_binary(flags_b, name="flags_b").astype(bool)
    if fa.shape != fb.shape:
        raise ValueError(f"flags_a has {fa.shape[0]} rows but flags_b has {fb.shape[0]}")
    both = int(np.count_nonzero(fa & fb))
    a_only = int(np.count_nonzero(fa & ~fb))
    b_only = int(np.count_nonzero(~fa & fb))
    return both, a_only, b_only, int(fa.size) - both - a_only - b_only


def paired_rate_difference(flags_a: Any, flags_b: Any, alpha: float = 0.05) -> PairedResult:
    """Difference of two detectors' flag rates on the same texts, with test and interval.

    Pass the flags on human texts for the false-positive rate, on AI texts for the catch
    rate. Flags must be aligned (same texts, same order) and restricted to texts both
    detectors scored validly.

    Args:
        flags_a, flags_b: booleans (or 0/1), one per text.
        alpha: 0.05 for a 95% interval.

    Returns:
        :class:`PairedResult`: ``estimate`` = rate_a - rate_b, interval by
        :func:`newcombe_paired`, ``p_value`` by :func:`mcnemar_exact`. With n = 0 everything
        is ``None`` ("no texts"); with no discordant pairs the estimate (0) and the
        interval stand, the p-value is ``None`` with :data:`NO_DISCORDANT`.
    """
    alpha = _check_alpha(alpha)
    both, a_only, b_only, neither = paired_table(flags_a, flags_b)
    n = both + a_only + b_only + neither
    detail: dict[str, Any] = {"both": both, "a_only": a_only, "b_only": b_only, "neither": neither}
    base: _McNemar = {"n": n, "test": MCNEMAR_TEST, "interval": NEWCOMBE_PAIRED_INTERVAL, "detail": detail}
    if n == 0:
        return PairedResult(None, None, None, None, None, None, reason="no texts scored validly by both detectors", **base)
    theta, lo, hi = newcombe_paired(both, a_only, b_only, neither, alpha)
    p = mcnemar_exact(a_only, b_only)
    return PairedResult(theta, lo, hi, p, (both + a_only) / n, (both + b_only) / n,
                        reason=None if p is not None else NO_DISCORDANT, **base)


# --------------------------------------------------------------------------------------
# Multiple comparisons
# --------------------------------------------------------------------------------------


def adjust_pvalues(p_values: Sequence[float | None], method: Literal["holm", "none"] = "holm") -> list[float | None]:
    """Family-wise adjusted p-values; ``None`` entries stay ``None`` and are not counted.

    Args:
        p_values: the p-values of one family (every test whose p-value is defined counts
            towards the family size m; undefined tests are not tests and do not).
        method: ``"holm"``: Holm (1979) step-down, by
            ``statsmodels.stats.multitest.multipletests(method="holm")``: with the p-values
            sorted ascending, p_adj(i) = max_{j <= i} min(1, (m - j + 1) p(j)), which
            controls the family-wise error rate at alpha for any dependence between the
            tests. ``"none"``: the p-values unchanged.

    Returns:
        Adjusted p-values in the input order (a difference "survives the correction" when
        its adjusted p-value is below alpha).

    Raises:
        ValueError: unknown method, p-values outside [0, 1] or NaN.
    """
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r}; use one of {list(CORRECTIONS)}")
    vals = list(p_values)
    for v in vals:
        if v is not None and not (isinstance(v, (int, float, np.floating)) and 0.0 <= float(v) <= 1.0):
            raise ValueError(f"p-values must be in [0, 1] or None, got {v!r}")
    if method == "none":
        return [None if v is None else float(v) for v in vals]
    idx = [i for i, v in enumerate(vals) if v is not None]
    defined = [float(v) for v in vals if v is not None]  # the p-values at idx, in order
    out: list[float | None] = [None] * len(vals)
    if not idx:
        return out
    from statsmodels.stats.multitest import multipletests


    # statsmodels' Holm branch calls gc.collect(), a full collection over every object in
    # the process (0.1-0.3 s once torch and transformers are loaded): frozen, they are skipped
    with frozen():
        adj = multipletests(np.array(defined), method="holm")[1]
    for i, v in zip(idx, adj):
        out[i] = float(v)
    return out
