"""Decision thresholds: the flag rule, fitting a threshold on a calibration split, and the
confusion counts and balanced accuracy that follow.

The flag rule lives here and only here: a text is flagged as AI when ``score > threshold``
(:data:`FLAG_RULE`, :func:`flag`). Scores are oriented so that higher means more likely AI.

Candidate thresholds are always scores that occur in the data (exact quantiles), never a
grid or fixed steps: RAID's search (liamdugan/raid, raid/evaluate.py ``find_threshold``)
steps by 0.5 from the mean and fails on logits and quantised scores.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from veribench.metrics._base import as_binary, as_scores, check_pair, warn_undefined

#: The decision rule every veribench metric uses.
FLAG_RULE = "score > threshold"

RULES = ("best_balanced_accuracy", "target_fpr")


def flag(scores: Any, threshold: float) -> np.ndarray:
    """Boolean array: ``scores > threshold`` (:data:`FLAG_RULE`). NaN scores are not flagged."""
    return np.asarray(scores, dtype=np.float64) > threshold


def _check_target(target_fpr: Any) -> float:
    try:
        t = float(target_fpr)
    except (TypeError, ValueError):
        raise ValueError(f"target_fpr must be a number in [0, 1], got {target_fpr!r}") from None
    if not (0.0 <= t <= 1.0) or math.isnan(t):
        raise ValueError(f"target_fpr must be in [0, 1], got {target_fpr!r}")
    return t


def allowed_false_positives(n_human: int, target_fpr: float) -> int:
    """Largest false-positive count f with f / n_human <= target_fpr (float noise tolerated,
    e.g. 0.29 * 100 counts as 29), capped at n_human - 1 because thresholds are human scores."""
    return max(0, min(int(math.floor(target_fpr * n_human + 1e-9)), n_human - 1))


def unreachable_reason(n_human: int, false_positives: int, target_fpr: float, where: str) -> str | None:
    """Why a target FPR is unreachable on ``n_human`` human texts, else ``None``: the one rule
    of Table 1, Table 2, the side rows and the grid (issue 25).

    A target in (0, 1] is unreachable when the threshold of :func:`threshold_at_fpr_sorted`
    flags no human text (``false_positives == 0``): then no threshold gives a false-positive
    rate in (0, target], because 1/n_human exceeds the target (too few human texts: n_human
    < 1/target) or the top human scores tie. RAID's PR #50 (liamdugan/raid, "Remove failed
    FPR scores") drops such cells; the TPR there is null with this reason, never 0.

    Args:
        n_human: human texts that set the threshold (>= 1).
        false_positives: human texts above the threshold.
        target_fpr: the target, in [0, 1].
        where: the texts, e.g. ``"domain=news"`` or ``"calibration human texts of corpus fastdetectgpt"``.
    """
    if false_positives > 0 or target_fpr <= 0.0 or n_human <= 0:
        return None
    if allowed_false_positives(n_human, target_fpr) == 0 and 1.0 / n_human > target_fpr:
        return (f"target FPR {target_fpr:g} unreachable in {where}: {n_human} human texts, the smallest non-zero "
                f"false-positive rate is 1/{n_human} = {1.0 / n_human:.4g} ({100.0 / n_human:.1f}%), so no threshold "
                f"gives a false-positive rate in (0, {100 * target_fpr:g}%]")
    return (f"target FPR {target_fpr:g} unreachable in {where}: the top human scores tie, no threshold gives a "
            f"false-positive rate in (0, {target_fpr:g}]")


def same_threshold_notes(n_human: int, thresholds: dict[float, float]) -> dict[float, str]:
    """Notes for targets whose thresholds coincide, so identical TPRs are explained.

    Args:
        n_human: human texts that set the thresholds (>= 1).
        thresholds: target FPR -> the threshold it selected (reachable targets only).

    Returns:
        target -> note, for every target that shares its threshold with another: the same
        order statistic (f = :func:`allowed_false_positives` equal: the FPR step 1/n_human is
        too coarse to tell the targets apart), or different order statistics with tied scores.
    """
    out: dict[float, str] = {}
    by_value: dict[float, list[float]] = {}
    for t, thr in thresholds.items():
        by_value.setdefault(float(thr), []).append(t)
    for ts in by_value.values():
        if len(ts) < 2:
            continue
        names = " and ".join(f"{100 * t:g}%" for t in sorted(ts))
        same_f = len({allowed_false_positives(n_human, t) for t in ts}) == 1
        why = (f"the smallest achievable FPR step is 1/{n_human} = {100.0 / n_human:.1f}%" if same_f
               else "tied human scores")
        for t in ts:
            out[t] = f"{n_human} human texts set the threshold: {why}, so the {names} targets select the same threshold"
    return out


def threshold_at_fpr_sorted(human_sorted: np.ndarray, target_fpr: float) -> tuple[float, int]:
    """Threshold from human scores sorted ascending (n >= 1): ``(threshold, false_positives)``.

    The threshold is the smallest human score t such that #{human > t} / n <= target_fpr,
    i.e. the (f+1)-th largest human score with f = :func:`allowed_false_positives`. With ties
    at t the achieved FPR is below the target (never above).
    """
    n = human_sorted.shape[0]
    f = allowed_false_positives(n, target_fpr)
    t = float(human_sorted[n - 1 - f])
    fp = int(n - np.searchsorted(human_sorted, t, side="right"))
    return t, fp


def threshold_at_fpr(human_scores: Any, target_fpr: float) -> tuple[float, int, int]:
    """Exact-quantile threshold for a target false-positive rate.

    Args:
        human_scores: scores of human texts (finite; higher = more likely AI).
        target_fpr: in [0, 1].

    Returns:
        ``(threshold, false_positives, n_human)``; the threshold is NaN (with an
        :class:`UndefinedMetricWarning`) when there are no human scores.
    """
    target = _check_target(target_fpr)
    h = np.sort(as_scores(human_scores, name="human_scores"))
    if h.size == 0:
        warn_undefined("no human texts: a threshold for a target FPR is undefined")
        return float("nan"), 0, 0
    t, fp = threshold_at_fpr_sorted(h, target)
    return t, fp, int(h.size)


def fit_threshold(
    y_true: Any,
    y_score: Any,
    rule: Literal["best_balanced_accuracy", "target_fpr"] = "best_balanced_accuracy",
    target_fpr: float | None = None,
    pos_label: Any = None,
) -> float:
    """Fit a decision threshold on a calibration split (flag rule ``score > threshold``).

    Args:
        y_true: labels, 1 = AI, 0 = human (any encoding :func:`as_binary` accepts).
        y_score: finite scores, higher = more likely AI.
        rule: ``"best_balanced_accuracy"``: the data score t maximising
            (TPR(t) + 1 - FPR(t)) / 2; among equally good thresholds the **largest** is
            taken (fewest false positives). ``"target_fpr"``: the smallest human score t with
            FPR(t) <= ``target_fpr`` (see :func:`threshold_at_fpr`).
        target_fpr: required for ``"target_fpr"``, in [0, 1].

    Returns:
        The threshold, a score present in the data. NaN with an
        :class:`UndefinedMetricWarning` when the rule is undefined (no human texts; for
        balanced accuracy also no AI texts). Check with ``math.isnan`` before use: a NaN
        threshold flags nothing.

    Raises:
        ValueError: unknown rule, missing/invalid target_fpr, bad labels, non-finite scores.
    """
    if rule not in RULES:
        raise ValueError(f"unknown threshold rule {rule!r}; choose one of {list(RULES)}")
    y, s = check_pair(y_true, y_score, pos_label)
    if rule == "target_fpr":
        if target_fpr is None:
            raise ValueError('rule="target_fpr" needs target_fpr')
        return threshold_at_fpr(s[y == 0], target_fpr)[0]
    n_pos = int(y.sum())
    n_neg = int(y.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        warn_undefined(
            f"balanced accuracy needs both classes (AI n={n_pos}, human n={n_neg}); threshold undefined"
        )
        return float("nan")
    uniq, inv = np.unique(s, return_inverse=True)
    pos_at = np.bincount(inv, weights=y, minlength=uniq.size)
    neg_at = np.bincount(inv, minlength=uniq.size) - pos_at
    # counts strictly above each unique value: reverse cumulative sum, shifted by one
    pos_above = pos_at[::-1].cumsum()[::-1] - pos_at
    neg_above = neg_at[::-1].cumsum()[::-1] - neg_at
    ba = (pos_above / n_pos + 1.0 - neg_above / n_neg) / 2.0
    best = np.flatnonzero(ba >= ba.max() - 1e-12)
    return float(uniq[best[-1]])


def confusion(y_true: Any, flagged: Any, pos_label: Any = None) -> dict[str, int]:
    """Confusion counts ``{"tp", "fp", "tn", "fn"}`` (ints) for labels (1 = AI) and flags.

    Raises:
        ValueError: length mismatch or bad labels.
    """
    y = as_binary(y_true, pos_label)
    f = np.asarray(flagged)
    if f.dtype != bool:
        f = as_binary(f, name="flagged").astype(bool)
    if f.shape != y.shape:
        raise ValueError(f"y_true has {y.shape[0]} rows but flagged has {f.shape}")
    yb = y.astype(bool)
    tp = int(np.count_nonzero(yb & f))
    fp = int(np.count_nonzero(~yb & f))
    return {"tp": tp, "fp": fp, "tn": int(np.count_nonzero(~yb)) - fp, "fn": int(np.count_nonzero(yb)) - tp}


def balanced_accuracy(tpr: float | None, fpr: float | None) -> float:
    """Balanced accuracy (TPR + (1 - FPR)) / 2, in [0, 1]; 0.5 is chance.

    Source: Brodersen et al. (2010), "The balanced accuracy and its posterior distribution",
    ICPR. Returns NaN with an :class:`UndefinedMetricWarning` when either rate is ``None``
    or NaN (no AI or no human texts in the slice).
    """
    if tpr is None or fpr is None or math.isnan(tpr) or math.isnan(fpr):
        warn_undefined("balanced accuracy is undefined: catch rate or false-positive rate missing")
        return float("nan")
    for name, v in (("tpr", tpr), ("fpr", fpr)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {v!r}")
    return (float(tpr) + 1.0 - float(fpr)) / 2.0


def balanced_accuracy_arrays(tpr: Any, fpr: Any) -> np.ndarray:
    """Vectorised balanced accuracy; NaN where either input is NaN (no warning: internal)."""
    return (np.asarray(tpr, dtype=np.float64) + 1.0 - np.asarray(fpr, dtype=np.float64)) / 2.0
