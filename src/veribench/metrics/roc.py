"""Ranking metrics: AUROC with DeLong or bootstrap intervals, ROC curve points, and the
true-positive rate at a fixed false-positive rate.

``y_true``: 1 = AI (positive), 0 = human. ``y_score``: finite, higher = more likely AI.

AUROC is the Mann-Whitney statistic with midranks for ties, AUC = (R_pos - m(m+1)/2)/(m n)
(Hanley & McNeil 1982, Radiology 143(1)); it equals scikit-learn's ``roc_auc_score``.
DeLong's interval (DeLong, DeLong & Clarke-Pearson 1988, Biometrics 44(3)) is computed with
the fast O(n log n) algorithm of Sun & Xu (2014), "Fast implementation of DeLong's algorithm
for comparing the areas under correlated receiver operating characteristic curves",
IEEE Signal Processing Letters 21(11):1389-1393.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np
from scipy.stats import norm, rankdata

from veribench.metrics._base import check_pair, warn_undefined
from veribench.metrics.bootstrap import bootstrap_ci
from veribench.metrics.intervals import DELONG_ZERO, collapsed
from veribench.metrics.thresholds import _check_target, threshold_at_fpr_sorted


def _midrank_auc(y: np.ndarray, s: np.ndarray) -> float:
    """AUROC of validated arrays with both classes present (midranks for ties)."""
    m = int(y.sum())
    n = y.size - m
    ranks = rankdata(s, method="average")
    return float((ranks[y == 1].sum() - m * (m + 1) / 2.0) / (m * n))


def _class_counts(y: np.ndarray) -> tuple[int, int]:
    m = int(y.sum())
    return m, int(y.size) - m


def auroc(y_true: Any, y_score: Any, pos_label: Any = None) -> float:
    """Area under the ROC curve, in [0, 1]; 0.5 is chance, 1 perfect separation.

    Args:
        y_true: labels, 1 = AI, 0 = human (bools, 0/1 or corpus label strings).
        y_score: finite scores, higher = more likely AI. Constant scores give 0.5.

    Returns:
        AUROC as a float; NaN with an :class:`UndefinedMetricWarning` when the input has no
        AI or no human texts.

    Raises:
        ValueError: NaN/inf scores (drop them first: :func:`drop_nonfinite`), bad labels,
            length mismatch.
    """
    y, s = check_pair(y_true, y_score, pos_label)
    m, n = _class_counts(y)
    if m == 0 or n == 0:
        warn_undefined(f"AUROC is undefined with only one class (AI n={m}, human n={n})")
        return float("nan")
    return _midrank_auc(y, s)


def delong_components(y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeLong's structural components by the fast algorithm of Sun & Xu (2014, Algorithm 1).

    Args:
        y: validated 0/1 labels (1 = AI) with both classes present.
        s: validated finite scores (higher = more AI), same length.

    Returns:
        ``(v10, v01)``: float arrays of length m (AI texts, in input order) and n (human
        texts). With T_x, T_y, T_z the midranks within the AI scores X, within the human
        scores Y and within the pooled sample, V10_i = (T_z(X_i) - T_x(X_i)) / n and
        V01_j = 1 - (T_z(Y_j) - T_y(Y_j)) / m; AUC = mean(V10) = mean(V01).
    """
    pos = s[y == 1]
    neg = s[y == 0]
    m, n = pos.size, neg.size
    tx = rankdata(pos, method="average")
    ty = rankdata(neg, method="average")
    tz = rankdata(np.concatenate([pos, neg]), method="average")
    return (tz[:m] - tx) / n, 1.0 - (tz[m:] - ty) / m


def _delong(y: np.ndarray, s: np.ndarray) -> tuple[float, float]:
    """Fast DeLong (Sun & Xu 2014, Algorithm 1): ``(auc, variance)`` for one score vector.

    Components from :func:`delong_components`; Var = S10/m + S01/n with S the unbiased
    sample variances of V10 and V01. Variance is NaN when m < 2 or n < 2.
    """
    v10, v01 = delong_components(y, s)
    m, n = v10.size, v01.size
    auc = float(v10.mean())
    if m < 2 or n < 2:
        return auc, float("nan")
    var = float(v10.var(ddof=1) / m + v01.var(ddof=1) / n)
    return auc, var


class AurocCI(NamedTuple):
    """AUROC in [0, 1] with its (1 - alpha) interval; lo/hi NaN where there is none, with
    ``reason`` (:mod:`veribench.metrics.intervals`) when the method degenerated."""

    auc: float
    lo: float
    hi: float
    method: str
    reason: str | None = None


def auroc_ci(
    y_true: Any,
    y_score: Any,
    alpha: float = 0.05,
    method: Literal["delong", "bootstrap"] = "delong",
    n_boot: int = 2000,
    seed: int = 0,
    pos_label: Any = None,
) -> AurocCI:
    """AUROC with a (1 - alpha) interval.

    Args:
        y_true, y_score: as in :func:`auroc`.
        alpha: 0.05 for 95%.
        method: ``"delong"``: AUC +- z_{1-alpha/2} * sqrt(DeLong variance), clipped to [0, 1]
            (fast algorithm, Sun & Xu 2014). With perfectly separated classes (or one
            distinct score) the DeLong variance is 0: no interval (lo/hi NaN, ``reason`` =
            :data:`veribench.metrics.intervals.DELONG_ZERO`), never a point shown as an
            interval; likewise a bootstrap whose replicates all agree. ``"bootstrap"``: seeded percentile bootstrap,
            resampling AI and human texts separately (stratified), ``n_boot`` replicates.
        n_boot, seed: bootstrap settings (ignored for DeLong).

    Returns:
        ``AurocCI(auc, lo, hi, method)``. All NaN with an :class:`UndefinedMetricWarning`
        when a class is missing; lo/hi NaN (warning) when the interval is undefined
        (DeLong with fewer than 2 texts in a class).

    Raises:
        ValueError: non-finite scores, bad labels, unknown method, alpha outside (0, 1).
    """
    if method not in ("delong", "bootstrap"):
        raise ValueError(f"unknown AUROC interval method {method!r}; use 'delong' or 'bootstrap'")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    y, s = check_pair(y_true, y_score, pos_label)
    m, n = _class_counts(y)
    nan = float("nan")
    if m == 0 or n == 0:
        warn_undefined(f"AUROC is undefined with only one class (AI n={m}, human n={n})")
        return AurocCI(nan, nan, nan, method)
    if method == "delong":
        auc, var = _delong(y, s)
        if np.isnan(var):
            warn_undefined(f"DeLong interval needs >= 2 texts per class (AI n={m}, human n={n})")
            return AurocCI(auc, nan, nan, method)
        half = float(norm.isf(alpha / 2.0)) * float(np.sqrt(max(var, 0.0)))
        lo, hi = max(0.0, auc - half), min(1.0, auc + half)
        if var <= 0.0 or collapsed(lo, hi):
            return AurocCI(auc, nan, nan, method, DELONG_ZERO)
        return AurocCI(auc, lo, hi, method)
    res = bootstrap_ci(_midrank_auc, [y, s], n_boot=n_boot, seed=seed, alpha=alpha, strata=y)
    return AurocCI(res.estimate, res.lo, res.hi, method, res.reason)


def auroc_delong_variance(y_true: Any, y_score: Any, pos_label: Any = None) -> tuple[float, float]:
    """``(auc, DeLong variance)``; NaN where undefined (with a warning)."""
    y, s = check_pair(y_true, y_score, pos_label)
    m, n = _class_counts(y)
    if m == 0 or n == 0:
        warn_undefined(f"AUROC is undefined with only one class (AI n={m}, human n={n})")
        return float("nan"), float("nan")
    return _delong(y, s)


class RocCurve(NamedTuple):
    """ROC points for plotting: false-positive rate, true-positive rate (both ascending, from
    (0, 0) to (1, 1)) and the threshold of each point (``inf`` for the first)."""

    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray


def roc_curve_points(y_true: Any, y_score: Any, max_points: int = 200, pos_label: Any = None) -> RocCurve:
    """ROC curve from ``sklearn.metrics.roc_curve`` (``drop_intermediate=True``), downsampled
    to at most ``max_points`` points by even steps along the curve (first and last kept).

    Note scikit-learn flags ``score >= threshold`` at each point; the curve is the same.
    Returns empty arrays with an :class:`UndefinedMetricWarning` when a class is missing.
    """
    from sklearn.metrics import roc_curve

    if max_points < 2:
        raise ValueError("max_points must be >= 2")
    y, s = check_pair(y_true, y_score, pos_label)
    m, n = _class_counts(y)
    if m == 0 or n == 0:
        warn_undefined(f"ROC curve is undefined with only one class (AI n={m}, human n={n})")
        e = np.empty(0)
        return RocCurve(e, e, e)
    fpr, tpr, thr = roc_curve(y, s, drop_intermediate=True)
    if fpr.size > max_points:
        idx = np.unique(np.round(np.linspace(0, fpr.size - 1, max_points)).astype(np.int64))
        fpr, tpr, thr = fpr[idx], tpr[idx], thr[idx]
    return RocCurve(fpr, tpr, thr)


@dataclass(frozen=True)
class TprAtFpr:
    """Catch rate at a fixed false-positive rate.

    Attributes:
        tpr: k/n, share of AI texts with score > threshold; ``None`` when undefined.
        threshold: the exact human-score quantile used (flag rule ``score > threshold``).
        achieved_fpr: false positives / human n at that threshold (<= target).
        k: AI texts flagged. n: AI texts.
        reason: why the values are ``None``, else ``None``.
        target_fpr, n_human, fp: the target, human n and false positives at the threshold.
    """

    tpr: float | None
    threshold: float | None
    achieved_fpr: float | None
    k: int
    n: int
    reason: str | None
    target_fpr: float | None = None
    n_human: int = 0
    fp: int | None = None


def tpr_at_fpr(y_true: Any, y_score: Any, target_fpr: float, pos_label: Any = None) -> TprAtFpr:
    """TPR at a target FPR, with the threshold at the exact quantile of the human scores.

    Rule: a text is AI if ``score > threshold``. The threshold is the smallest human score t
    such that #{human > t} / n_human <= ``target_fpr`` (the (f+1)-th largest human score,
    f = floor(target * n_human)); ties at t push the achieved FPR below the target, never
    above. Unlike RAID's stepped search this works on any scale (probabilities, logits,
    quantised scores) and is invariant to strictly increasing transforms of the scores.
    Because the largest human score always gives FPR 0, any target in [0, 1] is reachable
    when human texts exist; with n_human < 1/target the achieved FPR is 0.

    Returns:
        :class:`TprAtFpr`; with no human texts or no AI texts, ``tpr``/``threshold``/
        ``achieved_fpr`` are ``None`` with the reason, and an :class:`UndefinedMetricWarning`
        is issued (RAID reports such splits as null).

    Raises:
        ValueError: target outside [0, 1], non-finite scores, bad labels.
    """
    target = _check_target(target_fpr)
    y, s = check_pair(y_true, y_score, pos_label)
    h = np.sort(s[y == 0])
    a = s[y == 1]
    if h.size == 0 or a.size == 0:
        reason = "no human texts" if h.size == 0 else "no AI texts"
        warn_undefined(f"TPR at FPR {target:g} is undefined: {reason}")
        return TprAtFpr(None, None, None, 0, int(a.size), reason, target, int(h.size), None)
    t, fp = threshold_at_fpr_sorted(h, target)
    k = int(np.count_nonzero(a > t))
    return TprAtFpr(k / a.size, t, fp / h.size, k, int(a.size), None, target, int(h.size), fp)


def histogram_edges(values: Any, bins: int) -> np.ndarray:
    """Bin edges for a histogram of finite scores on any scale, never an error.

    ``numpy.histogram_bin_edges(values, bins)`` (equal-width bins over [min, max]) where it
    gives ``bins`` finite, strictly increasing edges. It cannot for two kinds of finite
    input, which a submitted score file may hold: a range narrower than ``bins`` steps of
    the float grid (e.g. 0 and 5e-324: "Too many bins for data range") and a range whose
    width overflows (e.g. -1e308 and 1e308: the step is infinite). Then the edges are
    ``lo * (1 - t) + hi * t`` for ``t = 0, 1/bins, ..., 1`` (finite for any finite lo, hi),
    with repeated edges dropped: fewer bins, each still finite and non-empty in width.

    Args:
        values: 1-D finite floats, at least one (the caller drops NaN).
        bins: the number of bins wanted, >= 1.

    Returns:
        Edges, shape (k + 1,) with 1 <= k <= ``bins``, strictly increasing, finite; ready
        for ``numpy.histogram(values, bins=edges)`` (every value falls in a bin).

    Raises:
        ValueError: no values, a non-finite value, or ``bins`` < 1.
    """
    v = np.asarray(values, dtype=float)
    if v.size == 0 or not np.isfinite(v).all():
        raise ValueError("histogram_edges needs at least one value, all finite")
    if bins < 1:
        raise ValueError(f"bins must be >= 1, not {bins}")
    with np.errstate(over="ignore", invalid="ignore"):
        try:
            e = np.histogram_bin_edges(v, bins=bins)
            if np.isfinite(e).all() and (np.diff(e) > 0).all():
                return e
        except ValueError:
            pass
    lo, hi = float(v.min()), float(v.max())
    if lo == hi:  # every value equal and no room of 0.5 around it: one bin one ulp wide
        return np.array([lo, np.nextafter(lo, np.inf)]) if lo < np.finfo(float).max else \
            np.array([np.nextafter(lo, -np.inf), lo])
    t = np.linspace(0.0, 1.0, bins + 1)
    inner = np.clip(lo * (1.0 - t[1:-1]) + hi * t[1:-1], lo, hi)  # rounding may step past an end
    return np.unique(np.concatenate([[lo], inner, [hi]]))
