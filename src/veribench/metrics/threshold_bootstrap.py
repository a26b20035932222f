"""Interval for the TPR at a fixed FPR that accounts for the threshold being estimated.

"Catch rate at 1% FPR" sets the threshold at a quantile of the human scores
(:func:`veribench.metrics.roc.tpr_at_fpr`), so the threshold is itself an estimate: with
200 human texts the 1% threshold is the 3rd-largest human score, and another 200 human
texts would put it elsewhere. A Wilson interval on k/n AI texts treats the threshold as
known and is too narrow. This module's interval is the **stratified bootstrap that refits
the threshold in every resample** (each class resampled with replacement at its own size,
the threshold refitted on the resampled human scores with the point estimate's rule, the
TPR counted on the resampled AI scores), computed exactly in distribution without touching
every text: O(n log n) for one sort, then O(B log n) for B replicates.

The construction (why it equals the resampling loop in distribution)
-------------------------------------------------------------------
Let h_(1) <= ... <= h_(nh) be the sorted human scores, a the na AI scores, f =
:func:`~veribench.metrics.thresholds.allowed_false_positives` (nh, target) and kth =
nh - 1 - f. A resampling loop draws I_1..I_nh uniform on {1..nh} and takes the threshold
T = the (kth+1)-th smallest of h_(I_1)..h_(I_nh) (0-based index kth ascending: the
(f+1)-th largest, the rule of :func:`~veribench.metrics.roc.tpr_at_fpr`); then draws na AI
texts and counts those with score > T.

1. **The threshold.** Write I_j = ceil(nh * U_j) with U_1..U_nh iid Uniform(0, 1). The map
   u -> h_(ceil(nh * u)) is non-decreasing, so the (kth+1)-th smallest resampled score is
   the map applied to the (kth+1)-th smallest uniform, U_(kth+1), whose law is
   Beta(kth + 1, nh - kth) (the order statistics of uniforms; David & Nagaraja 2003,
   *Order Statistics*, 3rd ed., §2.2). Hence T =d h_(ceil(nh * V)), V ~ Beta(kth + 1, nh - kth).
   Tied human scores need no special case: the map sends every U falling in a run of tied
   order statistics to the same value, exactly as the resample would.
2. **The AI count.** The AI resample is independent of the human one. Given T = t, each AI
   draw is a uniformly chosen AI text, flagged with probability p_t = #{a > t} / na
   (``na - searchsorted(a_sorted, t, "right")``); the na draws are independent, so the
   count is Binomial(na, p_t), and the replicate TPR is that count / na.

So one replicate costs one Beta draw, one ``searchsorted`` and one Binomial draw, and its
joint law (T, TPR) equals the resampling loop's exactly. Floating point: V is a double, so
ceil(nh * V) can differ from the exact index only when nh * V lies within a few ulps of an
integer, an event of probability about nh * 2**-52 per replicate (below 3e-9 at nh = 10**7);
the index is clipped to [1, nh] (V = 0 or 1 exactly cannot occur with positive parameters
but is guarded).

The random stream (changed in issue 25)
---------------------------------------
``rng = numpy.random.default_rng(seed)``; first ``rng.beta(kth + 1, nh - kth, size=B)``
(the B threshold ranks), then ``rng.binomial(na, p, size=B)`` (the B AI counts). The same
inputs, seed and count always give the same interval. **Results differ from releases before
issue 25**, which drew every text's index (``integers`` in blocks of replicates): the two
streams give the same distribution (tests/metrics/test_metrics_threshold_bootstrap.py
checks it with two-sample KS tests against a plain resampling loop) but different draws, so
interval endpoints moved within Monte Carlo error; point estimates are unchanged.

The interval is the alpha/2 and 1 - alpha/2 percentiles of the replicate TPRs (percentile
bootstrap, Efron & Tibshirani 1993, *An Introduction to the Bootstrap*, ch. 13; numpy's
linear interpolation), widened to include the point estimate where the percentiles miss it
(a quantile-based statistic can be biased in resamples; widening is the conservative
choice). The percentile bootstrap of a quantile-based statistic is approximate, worst for
tiny targets (with nh * target_fpr < 1 the threshold is the largest resampled human score);
``n_false_positives_allowed`` in the result shows how many human texts the threshold rests on.

Several threshold groups (:func:`tpr_at_fpr_interval_groups`, RAID's grid): each AI text
is judged by the threshold of its own group, each group's threshold refitted on that
group's human texts. The groups' human resamples are independent (stratified by group), so
each group's threshold is drawn as in step 1 (in group order, B draws each); the AI texts of
the cell are resampled together (n_ai fixed), so given the thresholds each AI draw is
flagged with probability p = sum_g #{a in g : a > t_g} / n_ai and the count is
Binomial(n_ai, p). With one group this is exactly :func:`tpr_at_fpr_interval_scores`
(same stream, same result).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import asdict, dataclass
from typing import Any, TypedDict

import numpy as np

from veribench.metrics._base import as_scores, check_pair
from veribench.metrics.intervals import bootstrap_reason, collapsed
from veribench.metrics.rates import _check_alpha
from veribench.metrics.roc import tpr_at_fpr
from veribench.metrics.thresholds import _check_target, allowed_false_positives, threshold_at_fpr_sorted

#: Short (the report's run page shows it in its header): the percentile interval of a
#: stratified bootstrap refitting the threshold, drawn exactly (module docstring).
METHOD = "stratified bootstrap, threshold refitted per resample (exact Beta rank, Binomial count)"

@dataclass(frozen=True)
class TprAtFprInterval:
    """TPR at a target FPR with an interval that includes the threshold's uncertainty.

    Attributes:
        tpr: point estimate (:func:`veribench.metrics.roc.tpr_at_fpr` on all texts), or
            ``None`` when undefined.
        lo, hi: percentile interval of the replicate TPRs, or ``None`` (undefined, or of zero
            width: see ``interval_reason``).
        threshold: the point-estimate threshold (flag rule ``score > threshold``).
        achieved_fpr: false positives / human texts at that threshold.
        target_fpr: the target. n_ai, n_human: texts per class.
        n_false_positives_allowed: f = floor(target * n_human) (capped at n_human - 1): the
            threshold is the (f+1)-th largest human score.
        n_boot: resamples drawn. n_valid: resamples with a defined TPR (all, when both
            classes exist). seed: the generator seed. alpha: 1 - confidence.
        method: how the interval was computed. reason: why values are ``None``.
        interval_reason: why ``lo``/``hi`` are ``None`` while ``tpr`` is defined (the
            bootstrap collapsed: :func:`veribench.metrics.intervals.bootstrap_reason`).
    """

    tpr: float | None
    lo: float | None
    hi: float | None
    threshold: float | None
    achieved_fpr: float | None
    target_fpr: float
    n_ai: int
    n_human: int
    n_false_positives_allowed: int | None
    n_boot: int
    n_valid: int
    seed: int
    alpha: float
    method: str = METHOD
    reason: str | None = None
    interval_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Common(TypedDict):
    """The fields of :class:`TprAtFprInterval` that every outcome shares."""

    target_fpr: float
    n_ai: int
    n_human: int
    n_boot: int
    seed: int
    alpha: float


def threshold_replicates(human_sorted: np.ndarray, target_fpr: float, n_boot: int,
                         rng: np.random.Generator) -> np.ndarray:
    """The refitted threshold of ``n_boot`` human resamples (float array, shape (n_boot,)).

    ``human_sorted``: finite human scores sorted ascending, non-empty. Each value is the
    (kth+1)-th smallest score of a resample of nh human texts with replacement (kth = nh - 1
    - f, f = :func:`~veribench.metrics.thresholds.allowed_false_positives`), drawn as
    ``human_sorted[ceil(nh * V) - 1]`` with V ~ Beta(kth + 1, nh - kth) from one
    ``rng.beta`` call (step 1 of the module docstring). Cost O(n_boot).
    """
    nh = int(human_sorted.size)
    kth = nh - 1 - allowed_false_positives(nh, target_fpr)
    v = rng.beta(kth + 1, nh - kth, size=int(n_boot))
    idx = np.clip(np.ceil(v * nh).astype(np.int64), 1, nh) - 1
    return np.asarray(human_sorted[idx], dtype=np.float64)


def replicate_tprs_grouped(thresholds: list[np.ndarray], ai_sorted: list[np.ndarray],
                           rng: np.random.Generator) -> np.ndarray:
    """TPR of the resampled AI texts, each judged by its own group's replicate threshold.

    Args:
        thresholds: per group, the replicate thresholds (shape (B,) each, e.g. from
            :func:`threshold_replicates`).
        ai_sorted: per group (same order), that group's AI scores sorted ascending; their
            total n_ai must be >= 1.
        rng: draws the B AI counts with one ``rng.binomial(n_ai, p, size=B)`` call.

    Returns:
        float array (B,) in [0, 1]: Binomial(n_ai, p_b) / n_ai with p_b = sum over groups of
        #{a in group > its threshold t_b} / n_ai (flag rule ``score > threshold``; step 2 of
        the module docstring). Cost O(B * groups * log n).
    """
    n_ai = sum(int(a.size) for a in ai_sorted)
    above = np.zeros(thresholds[0].shape[0], dtype=np.int64) if thresholds else np.zeros(0, np.int64)
    for t, a in zip(thresholds, ai_sorted, strict=True):
        above += a.size - np.searchsorted(a, t, side="right")
    p = np.clip(above / n_ai, 0.0, 1.0)
    return rng.binomial(n_ai, p) / n_ai


def replicate_tprs(human: np.ndarray, ai: np.ndarray, target_fpr: float, n_boot: int,
                   rng: np.random.Generator) -> np.ndarray:
    """TPR of ``n_boot`` stratified resamples, the threshold refitted on each (float array).

    ``human``, ``ai``: finite scores, **sorted ascending**, both non-empty. Same law as
    resampling nh human and na AI texts with replacement, setting the threshold at the
    (f+1)-th largest resampled human score (the rule of
    :func:`veribench.metrics.roc.tpr_at_fpr`) and counting the resampled AI scores strictly
    above it; drawn without touching every text (module docstring: ``n_boot`` Beta draws,
    then ``n_boot`` Binomial draws). Cost O(n_boot * log na).
    """
    return replicate_tprs_grouped([threshold_replicates(human, target_fpr, n_boot, rng)], [ai], rng)


def _percentile_interval(reps: np.ndarray, point: float,
                         alpha: float) -> tuple[float | None, float | None, str | None]:
    """(lo, hi, None), or (None, None, reason) when the interval has zero width (every
    replicate and the point at one value: :mod:`veribench.metrics.intervals`)."""
    q_lo, q_hi = (float(v) for v in np.quantile(reps, [alpha / 2.0, 1.0 - alpha / 2.0]))
    lo, hi = min(q_lo, point), max(q_hi, point)
    if collapsed(lo, hi):
        return None, None, bootstrap_reason(reps)
    return lo, hi, None


def tpr_at_fpr_interval_scores(human: Any, ai: Any, target_fpr: float, n_boot: int = 2000, seed: int = 0,
                               alpha: float = 0.05) -> TprAtFprInterval:
    """:func:`tpr_at_fpr_interval` from the two classes' scores (``human``: the texts that set
    the threshold; ``ai``: the texts whose TPR is reported). Same result as
    ``tpr_at_fpr_interval(y, concat(human, ai))`` with y = 0 for human, 1 for AI.

    Raises:
        ValueError: non-finite scores, target outside [0, 1], n_boot < 1, alpha outside (0, 1).
    """
    h = as_scores(human, name="human")
    a = as_scores(ai, name="ai")
    if h.size == 0 or a.size == 0:
        y = np.concatenate([np.zeros(h.size, np.int8), np.ones(a.size, np.int8)])
        return tpr_at_fpr_interval(y, np.concatenate([h, a]), target_fpr, n_boot=n_boot, seed=seed, alpha=alpha)
    target = _check_target(target_fpr)
    alpha = _check_alpha(alpha)
    if int(n_boot) < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    tpr, thr, fpr, reps = _point_and_replicates(h, a, target, int(n_boot), np.random.default_rng(int(seed)))
    lo, hi, why = _percentile_interval(reps, tpr, alpha)
    return TprAtFprInterval(tpr, lo, hi, thr, fpr, target, int(a.size), int(h.size),
                            allowed_false_positives(int(h.size), target), int(n_boot), int(reps.size), int(seed),
                            alpha, interval_reason=why)


def tpr_at_fpr_interval(
    y_true: Any,
    y_score: Any,
    target_fpr: float,
    n_boot: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
    pos_label: Any = None,
) -> TprAtFprInterval:
    """TPR at ``target_fpr`` with a bootstrap interval that refits the threshold per resample.

    Args:
        y_true: labels, 1 = AI, 0 = human.
        y_score: finite scores, higher = more likely AI.
        target_fpr: in [0, 1], e.g. 0.01.
        n_boot: number of resamples (>= 1; 2000 is the protocol default).
        seed: seed of ``numpy.random.default_rng``; recorded in the result.
        alpha: 0.05 for a 95% interval.

    Returns:
        :class:`TprAtFprInterval`. With no human or no AI texts everything is ``None`` with
        the reason of :func:`veribench.metrics.roc.tpr_at_fpr`.

    Raises:
        ValueError: non-finite scores, bad labels, target outside [0, 1], n_boot < 1, alpha
            outside (0, 1).
    """
    target = _check_target(target_fpr)
    alpha = _check_alpha(alpha)
    if int(n_boot) < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    y, s = check_pair(y_true, y_score, pos_label)
    n_ai = int(y.sum())
    n_human = int(y.size) - n_ai
    common: _Common = {"target_fpr": target, "n_ai": n_ai, "n_human": n_human, "n_boot": int(n_boot), "seed": int(seed),
                       "alpha": alpha}
    h, a = s[y == 0], s[y == 1]
    if h.size == 0 or a.size == 0:
        point = tpr_at_fpr(y, s, target)  # the metrics layer's reason and warning
        return TprAtFprInterval(None, None, None, None, None, n_false_positives_allowed=None, n_valid=0,
                                reason=point.reason, **common)
    tpr, thr, fpr, reps = _point_and_replicates(h, a, target, int(n_boot), np.random.default_rng(int(seed)))
    lo, hi, why = _percentile_interval(reps, tpr, alpha)
    return TprAtFprInterval(tpr, lo, hi, thr, fpr, n_false_positives_allowed=allowed_false_positives(n_human, target),
                            n_valid=int(reps.size), interval_reason=why, **common)


def _point_and_replicates(h: np.ndarray, a: np.ndarray, target: float, n_boot: int,
                          rng: np.random.Generator) -> tuple[float, float, float, np.ndarray]:
    """(tpr, threshold, achieved FPR, replicate TPRs) from unsorted non-empty classes in O(n),
    without sorting either class (issue 25: the sorts dominated the tables at 1M texts).

    The same values as :func:`veribench.metrics.roc.tpr_at_fpr` and :func:`replicate_tprs`
    on the sorted classes, from the same draws: the Beta draws give the replicate ranks
    first; only the window of sorted human scores between the smallest and largest rank
    (and the point's rank) is needed, found by ``np.partition`` at its two ends and sorted.
    The AI count above each distinct replicate threshold comes from one histogram of the AI
    scores' positions among those thresholds (``searchsorted`` into at most n_boot values,
    O(na log n_boot)). Then the Binomial draws, as in :func:`replicate_tprs_grouped`.
    """
    nh, na = int(h.size), int(a.size)
    kth = nh - 1 - allowed_false_positives(nh, target)
    v = rng.beta(kth + 1, nh - kth, size=n_boot)
    idx = np.clip(np.ceil(v * nh).astype(np.int64), 1, nh) - 1
    lo_i, hi_i = min(int(idx.min()), kth), max(int(idx.max()), kth)
    part = np.partition(h, [lo_i, hi_i] if hi_i > lo_i else lo_i)
    window = np.sort(part[lo_i:hi_i + 1])  # = sorted(h)[lo_i:hi_i + 1]
    t = float(window[kth - lo_i])
    fp = int(np.count_nonzero(h > t))
    k = int(np.count_nonzero(a > t))
    u, inv = np.unique(window[idx - lo_i], return_inverse=True)
    below = np.cumsum(np.bincount(np.searchsorted(u, a, side="left"), minlength=u.size + 1))
    above = na - below[:u.size]  # AI scores > u[j]: those whose position among u is > j
    reps = rng.binomial(na, np.clip(above[inv] / na, 0.0, 1.0)) / na
    return k / na, t, fp / nh, reps


@dataclass(frozen=True)
class GroupedTprInterval:
    """TPR of AI texts judged by their own group's threshold, with the refitting interval.

    Attributes:
        tpr: flagged AI texts / n_ai at the groups' point thresholds (each group's exact
            quantile, :func:`~veribench.metrics.thresholds.threshold_at_fpr_sorted`), in [0, 1].
        lo, hi: percentile interval of the replicate TPRs (widened to include ``tpr``), or
            ``None`` when it has zero width (``interval_reason``).
        target_fpr, n_ai (all groups), n_boot, seed, alpha, method, interval_reason: as in
            :class:`TprAtFprInterval`.
    """

    tpr: float
    lo: float | None
    hi: float | None
    target_fpr: float
    n_ai: int
    n_boot: int
    seed: int
    alpha: float
    method: str = METHOD
    interval_reason: str | None = None


def tpr_at_fpr_interval_groups(humans: Any, ais: Any, target_fpr: float, n_boot: int = 2000, seed: int = 0,
                               alpha: float = 0.05, *, presorted: bool = False,
                               cache: dict[Hashable, Any] | None = None,
                               cache_key: Hashable = None) -> GroupedTprInterval:
    """TPR at ``target_fpr`` when each AI text is judged by its own group's threshold
    (RAID's grid: thresholds per domain), the interval refitting every group's threshold in
    every resample (module docstring, "Several threshold groups").

    Args:
        humans: per group, the human scores that set its threshold (finite, each non-empty).
        ais: per group (same order), the AI scores judged by that threshold (finite; empty
            allowed, but at least one AI text in all).
        target_fpr: in [0, 1]. n_boot: >= 1. seed: of ``numpy.random.default_rng``.
        alpha: 0.05 for a 95% interval.
        presorted: the caller guarantees every array is sorted ascending (skips the sorts).
        cache, cache_key: optional; a dict the caller keeps across calls whose ``humans``,
            ``target_fpr``, ``n_boot`` and ``seed`` are the same whenever ``cache_key`` is
            (e.g. the grid's tuple of threshold groups and target). It stores the replicate
            thresholds and the generator's state after drawing them, so a later call skips
            the Beta draws; the result is identical with or without it.

    Stream: ``rng = default_rng(seed)``; per group in order one ``rng.beta`` call of
    ``n_boot`` draws, then one ``rng.binomial`` call. With one group the result equals
    :func:`tpr_at_fpr_interval_scores` (same tpr, lo, hi).

    Raises:
        ValueError: no groups, different numbers of human and AI groups, a group without
            human texts, no AI text, non-finite scores, target outside [0, 1], n_boot < 1,
            alpha outside (0, 1).
    """
    target = _check_target(target_fpr)
    alpha = _check_alpha(alpha)
    if int(n_boot) < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if len(humans) != len(ais) or not len(humans):
        raise ValueError(f"need one human array per AI array and at least one group, got {len(humans)} and {len(ais)}")
    hs = [as_scores(h, name="human") for h in humans]
    as_ = [as_scores(a, name="ai") for a in ais]
    if not presorted:
        hs, as_ = [np.sort(h) for h in hs], [np.sort(a) for a in as_]
    if any(h.size == 0 for h in hs):
        raise ValueError("every group needs human texts to set its threshold")
    n_ai = sum(int(a.size) for a in as_)
    if n_ai == 0:
        raise ValueError("no AI texts")
    k = 0
    for h, a in zip(hs, as_, strict=True):
        t, _fp = threshold_at_fpr_sorted(h, target)
        k += int(a.size - np.searchsorted(a, t, side="right"))
    tpr = k / n_ai
    rng = np.random.default_rng(int(seed))
    hit = cache.get(cache_key) if cache is not None and cache_key is not None else None
    if hit is None:
        thr = [threshold_replicates(h, target, int(n_boot), rng) for h in hs]
        if cache is not None and cache_key is not None:
            cache[cache_key] = (thr, rng.bit_generator.state)
    else:
        thr, rng.bit_generator.state = hit[0], hit[1]
    lo, hi, why = _percentile_interval(replicate_tprs_grouped(thr, as_, rng), tpr, alpha)
    return GroupedTprInterval(tpr, lo, hi, target, n_ai, int(n_boot), int(seed), alpha, interval_reason=why)
