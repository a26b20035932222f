"""Vectorised metrics per group (subgroup, arm, domain ...) for large corpora.

Every function takes integer group codes (0 .. n_groups-1, e.g. from ``np.unique(...,
return_inverse=True)`` or ``pandas.factorize``) and computes all groups in one pass with
``np.bincount`` / one sort, instead of filtering the table once per group. Results equal the
per-group scalar functions in :mod:`veribench.metrics.roc` and :mod:`veribench.metrics.rates`
(tested against scikit-learn per group).

AUROC per group: the Mann-Whitney statistic with midranks computed within each group from a
single sort by (group, score); DeLong variance per group with the structural components of
Sun & Xu (2014), IEEE SPL 21(11) (see :mod:`veribench.metrics.roc`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from scipy.stats import norm

from veribench.metrics._base import as_binary, as_scores, warn_undefined
from veribench.metrics.intervals import DELONG_ZERO
from veribench.metrics.thresholds import _check_target, allowed_false_positives


def as_codes(codes: Any, n_groups: int | None = None, *, n_rows: int | None = None) -> tuple[np.ndarray, int]:
    """Validate group codes: 1-D non-negative integers below ``n_groups``."""
    c = np.asarray(codes)
    if c.ndim != 1 or c.dtype.kind not in "iu":
        raise ValueError(f"group codes must be a 1-D integer array, got dtype {c.dtype} shape {c.shape}")
    if n_rows is not None and c.shape[0] != n_rows:
        raise ValueError(f"group codes have {c.shape[0]} rows, expected {n_rows}")
    if c.size and c.min() < 0:
        raise ValueError("group codes must be >= 0")
    top = int(c.max()) + 1 if c.size else 0
    if n_groups is None:
        n_groups = top
    elif top > n_groups:
        raise ValueError(f"group code {top - 1} is out of range for n_groups={n_groups}")
    return c.astype(np.int64, copy=False), int(n_groups)


def group_counts(codes: Any, flags: Any, n_groups: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per group: ``(n, k)`` = (rows, rows flagged), int64 arrays of length ``n_groups``.

    Args:
        codes: int group code per row.
        flags: bool per row (e.g. ``score > threshold``), or a 2-D (rows, columns) bool
            matrix, in which case ``k`` has shape (n_groups, columns).
    """
    f = np.asarray(flags)
    c, g = as_codes(codes, n_groups, n_rows=f.shape[0])
    if f.dtype != bool:
        raise ValueError(f"flags must be boolean, got dtype {f.dtype}")
    n = np.bincount(c, minlength=g)
    if f.ndim == 1:
        k = np.bincount(c, weights=f, minlength=g).astype(np.int64)
    else:
        # one bincount over (code, column) pairs
        cols = f.shape[1]
        idx = (c[:, None] * cols + np.arange(cols)[None, :])[f]
        k = np.bincount(idx, minlength=g * cols).reshape(g, cols)
    return n, k


def group_agreement(codes: Any, flags: Any, n_groups: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group: ``(n, flagged_by_any, flagged_by_all)`` from a (rows, detectors) bool matrix."""
    f = np.asarray(flags, dtype=bool)
    if f.ndim != 2:
        raise ValueError("flags must be a (rows, detectors) matrix")
    n, k_any = group_counts(codes, f.any(axis=1), n_groups)
    _, k_all = group_counts(codes, f.all(axis=1), n_groups)
    return n, k_any, k_all


@dataclass
class GroupAuroc:
    """Per-group AUROC arrays (length n_groups). NaN where a group lacks a class (auc, var,
    lo, hi) or has fewer than 2 texts in a class (var, lo, hi); lo/hi also NaN where the
    DeLong variance is 0 (no interval: :data:`veribench.metrics.intervals.DELONG_ZERO`;
    :meth:`ci_reasons` says which)."""

    auc: np.ndarray
    var: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    n_pos: np.ndarray
    n_neg: np.ndarray

    def ci_reasons(self) -> list[str | None]:
        """Per group, why lo/hi are NaN (``None`` where the interval exists): no class,
        fewer than 2 texts in a class, or a DeLong variance of 0."""
        out: list[str | None] = []
        for i in range(self.auc.shape[0]):
            if np.isfinite(self.lo[i]):
                out.append(None)
            elif self.n_pos[i] == 0 or self.n_neg[i] == 0:
                out.append("AUROC undefined: one class only")
            elif self.n_pos[i] < 2 or self.n_neg[i] < 2:
                out.append("interval undefined: fewer than 2 texts in a class")
            else:
                out.append(DELONG_ZERO)
        return out


@dataclass
class GroupTprAtFpr:
    """Per-group TPR at a target FPR (arrays of length n_groups; NaN / -1 where undefined:
    no human or no AI texts in the group; see ``reasons``)."""

    target_fpr: float
    tpr: np.ndarray
    threshold: np.ndarray
    achieved_fpr: np.ndarray
    k: np.ndarray
    n: np.ndarray
    fp: np.ndarray
    n_human: np.ndarray
    reasons: list[str | None]


def argsort_scores(y_score: np.ndarray) -> np.ndarray:
    """Permutation sorting the scores ascending (ties in any order). Compute it once per
    detector and pass it as ``score_order`` to several :class:`GroupedScores` groupings."""
    return np.argsort(np.asarray(y_score, dtype=np.float64), kind="quicksort")


class GroupedScores:
    """One detector's scores sorted once by (group, score); metrics per group from that sort.

    Args:
        codes: int group code per row (0 .. n_groups-1).
        y_true: labels per row, 1 = AI, 0 = human (any encoding ``as_binary`` accepts).
        y_score: finite scores, higher = more likely AI.
        n_groups: number of groups (default: max code + 1).

    Raises:
        ValueError: non-finite scores, bad labels or codes, length mismatch.
    """

    def __init__(
        self,
        codes: Any,
        y_true: Any,
        y_score: Any,
        n_groups: int | None = None,
        pos_label: Any = None,
        score_order: np.ndarray | None = None,
    ):
        y = as_binary(y_true, pos_label)
        s = as_scores(y_score)
        if y.shape[0] != s.shape[0]:
            raise ValueError(f"y_true has {y.shape[0]} rows but y_score has {s.shape[0]}")
        c, g = as_codes(codes, n_groups, n_rows=s.shape[0])
        self.n_groups = g
        # Rows must end up sorted by (group, score); the order inside a run of tied scores
        # does not matter (all statistics are per tie block). So: one unstable sort by
        # score (SIMD quicksort, or the caller's ``score_order`` shared between groupings),
        # then a stable radix sort by the small-integer group code.
        order = argsort_scores(s) if score_order is None else np.asarray(score_order)
        if order.shape != s.shape:
            raise ValueError("score_order must be a permutation of the rows")
        small = np.uint8 if g <= 256 else np.uint16 if g <= 65536 else np.int64
        c = c.astype(small, copy=False)
        if g > 1:
            cs = c[order]
            o2 = np.argsort(cs, kind="stable")  # radix sort for 8/16-bit codes
            order = order[o2]
            self.codes = cs[o2]
        else:
            self.codes = c[order]
        self.scores = s[order]
        self.y = y[order]
        self.bounds = np.zeros(g + 1, dtype=np.int64)  # group i is rows [bounds[i], bounds[i+1])
        np.cumsum(np.bincount(self.codes, minlength=g), out=self.bounds[1:])
        self.n_pos = np.bincount(self.codes, weights=self.y, minlength=g).astype(np.int64)
        self.n_neg = np.diff(self.bounds) - self.n_pos

    def auroc(self, alpha: float = 0.05, variance: bool = True, warn: bool = True) -> GroupAuroc:
        """AUROC per group, with DeLong variance and (1 - alpha) interval clipped to [0, 1].

        Per tie block (a run of equal scores in one group) with p positives and q negatives,
        and P / Q positives / negatives of the group below the block, DeLong's structural
        components are V10 = (Q + q/2) / n for the block's positives and
        V01 = 1 - (P + p/2) / m for its negatives (the midrank differences T_z - T_x and
        T_z - T_y of Sun & Xu 2014); AUC = mean V10 = mean V01,
        Var = S10 / m + S01 / n with S the unbiased variances within the group.
        """
        N = self.scores.size
        g = self.n_groups
        c, s, y = self.codes, self.scores, self.y
        m = self.n_pos.astype(np.float64)
        n = self.n_neg.astype(np.float64)
        # tie blocks: runs of equal (group, score)
        new = np.ones(N, dtype=bool)
        if N > 1:
            np.not_equal(s[1:], s[:-1], out=new[1:])
            new[1:] |= c[1:] != c[:-1]
        bstart = np.flatnonzero(new)
        bcode = c[bstart].astype(np.intp)
        gstart = self.bounds[bcode]
        cy = np.empty(N + 1, dtype=np.int64)
        cy[0] = 0
        np.cumsum(y, out=cy[1:])
        cy_start = cy[bstart]
        size = np.diff(np.append(bstart, N))
        pos_in = np.diff(np.append(cy_start, cy[N]))
        neg_in = size - pos_in
        pos_below = cy_start - cy[gstart]  # P: positives of the group below the block
        neg_below = (bstart - gstart) - pos_below  # Q
        a = neg_below + 0.5 * neg_in  # n * V10 for the block's positives
        with np.errstate(divide="ignore", invalid="ignore"):
            auc = np.bincount(bcode, weights=pos_in * a, minlength=g) / (m * n)
            var = np.full(g, np.nan)
            if variance:
                b = pos_below + 0.5 * pos_in  # m * (1 - V01) for the block's negatives
                auc_b = auc[bcode]
                d10 = a / n[bcode] - auc_b
                d01 = (1.0 - b / m[bcode]) - auc_b
                ss10 = np.bincount(bcode, weights=pos_in * d10 * d10, minlength=g)
                ss01 = np.bincount(bcode, weights=neg_in * d01 * d01, minlength=g)
                var = ss10 / ((m - 1) * m) + ss01 / ((n - 1) * n)
        undefined = (self.n_pos == 0) | (self.n_neg == 0)
        auc[undefined] = np.nan
        small = (self.n_pos < 2) | (self.n_neg < 2)
        var[small] = np.nan
        half = float(norm.isf(alpha / 2.0)) * np.sqrt(np.maximum(var, 0.0))
        lo = np.clip(auc - half, 0.0, 1.0)
        hi = np.clip(auc + half, 0.0, 1.0)
        zero = ~np.isnan(var) & ((var <= 0.0) | (lo == hi))  # DeLong degenerates: no interval
        lo[zero] = np.nan
        hi[zero] = np.nan
        if warn and undefined.any():
            warn_undefined(
                f"AUROC undefined for {int(undefined.sum())} group(s) with one class only: "
                f"codes {np.flatnonzero(undefined)[:20].tolist()}"
            )
        return GroupAuroc(auc, var, lo, hi, self.n_pos.copy(), self.n_neg.copy())

    def tpr_at_fpr(self, target_fpr: float, warn: bool = True) -> GroupTprAtFpr:
        """TPR at a target FPR per group, threshold at the exact quantile of the group's human
        scores (same rule as :func:`veribench.metrics.roc.tpr_at_fpr`)."""
        target = _check_target(target_fpr)
        g = self.n_groups
        out_t = np.full(g, np.nan)
        out_fp = np.full(g, -1, dtype=np.int64)
        out_k = np.zeros(g, dtype=np.int64)
        reasons: list[str | None] = [None] * g
        hum = self.y == 0
        for i in range(g):
            a, b = self.bounds[i], self.bounds[i + 1]
            yy = hum[a:b]
            ss = self.scores[a:b]
            h = ss[yy]  # sorted ascending (rows sorted by score within a group)
            ai = ss[~yy]
            if h.size == 0 or ai.size == 0:
                reasons[i] = "no human texts" if h.size == 0 else "no AI texts"
                continue
            f = allowed_false_positives(h.size, target)
            t = h[h.size - 1 - f]
            out_t[i] = t
            out_fp[i] = h.size - np.searchsorted(h, t, side="right")
            out_k[i] = ai.size - np.searchsorted(ai, t, side="right")
        n_h = self.n_neg.copy()
        n_a = self.n_pos.copy()
        undefined = np.array([r is not None for r in reasons], dtype=bool)
        with np.errstate(divide="ignore", invalid="ignore"):
            tpr = np.where(undefined, np.nan, out_k / n_a)
            fpr = np.where(undefined, np.nan, out_fp / n_h)
        if warn and undefined.any():
            warn_undefined(
                f"TPR at FPR {target:g} undefined for {int(undefined.sum())} group(s) "
                f"(no human or no AI texts): codes {np.flatnonzero(undefined)[:20].tolist()}"
            )
        return GroupTprAtFpr(target, tpr, out_t, fpr, out_k, n_a, out_fp, n_h, reasons)


def mean_of_defined(values: Any) -> tuple[float, int, int]:
    """Average of the defined (finite) values: ``(mean, n_used, n_left_out)``.

    Undefined metrics (NaN, ``None``) are left out of every average, never counted as 0 or
    0.5; the mean is NaN (with a warning) when nothing is defined.
    """
    v = np.array([np.nan if x is None else x for x in np.ravel(np.asarray(values, dtype=object))], dtype=np.float64)
    ok = np.isfinite(v)
    if not ok.any():
        warn_undefined("average of no defined values is undefined")
        return float("nan"), 0, int(v.size)
    return float(v[ok].mean()), int(ok.sum()), int((~ok).sum())


def group_auroc(codes: Any, y_true: Any, y_score: Any, n_groups: int | None = None, alpha: float = 0.05) -> GroupAuroc:
    """AUROC per group with DeLong variance and interval (see :class:`GroupedScores`)."""
    return GroupedScores(codes, y_true, y_score, n_groups).auroc(alpha)


def group_tpr_at_fpr(
    codes: Any, y_true: Any, y_score: Any, target_fprs: float | Sequence[float], n_groups: int | None = None
) -> list[GroupTprAtFpr]:
    """TPR at each target FPR per group (threshold fitted within each group, as RAID's
    per-domain tuning does, but at the exact quantile)."""
    gs = GroupedScores(codes, y_true, y_score, n_groups)
    # np.isscalar also takes numpy scalars that are not floats (np.float32), as before
    targets = [cast(float, target_fprs)] if np.isscalar(target_fprs) else list(cast("Sequence[float]", target_fprs))
    return [gs.tpr_at_fpr(t) for t in targets]
