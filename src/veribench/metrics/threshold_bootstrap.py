"""Interval for the TPR at a fixed FPR that accounts for the threshold being estimated.

"Catch rate at 1% FPR" sets the threshold at a quantile of the human scores
(:func:`veribench.metrics.roc.tpr_at_fpr`), so the threshold is itself an estimate: with
200 human texts the 1% threshold is the 3rd-largest human score, and another 200 human
texts would put it elsewhere. A Wilson interval on k/n AI texts treats the threshold as
known and is too narrow. This module's interval resamples both classes and **refits the
threshold in every resample**:

1. draw n_human human texts and n_ai AI texts with replacement (stratified: each class
   keeps its size, so every replicate has both classes). The draws come from
   ``numpy.random.default_rng(seed)`` in blocks of R = max(1, 2**20 // max(n_human, n_ai))
   replicates (the last block smaller): per block one ``integers(0, n_human, (R, n_human))``
   call for the human indices, then one ``integers(0, n_ai, (R, n_ai))`` for the AI indices,
   so the whole interval is vectorised and the same seed always gives the same draws;
2. refit the threshold on the resampled human scores and compute the TPR of the resampled
   AI scores with :func:`veribench.metrics.roc.tpr_at_fpr` (the same rule as the point
   estimate: flag when score > the exact quantile of the human scores);
3. the interval is the alpha/2 and 1 - alpha/2 percentiles of the replicate TPRs
   (percentile bootstrap, Efron & Tibshirani 1993, ch. 13; numpy's linear interpolation),
   widened to include the point estimate where the percentiles miss it (a quantile-based
   statistic can be biased in resamples; widening is the conservative choice).

The seed (``numpy.random.default_rng(seed)``) and the number of resamples are recorded in
the result; the same inputs, seed and count give the same interval. The percentile
bootstrap of a quantile-based statistic is approximate, worst for tiny targets (with
n_human * target_fpr < 1 the threshold is the largest human score in every replicate);
``n_false_positives_allowed`` in the result shows how many human texts the threshold rests on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, TypedDict

import numpy as np

from veribench.metrics._base import as_scores, check_pair
from veribench.metrics.rates import _check_alpha
from veribench.metrics.roc import tpr_at_fpr
from veribench.metrics.thresholds import _check_target, allowed_false_positives

METHOD = "stratified percentile bootstrap, threshold refitted on the human texts of every resample"
#: Elements drawn per block of replicates (memory bound of the vectorised resampling).
BLOCK_ELEMENTS = 1 << 20


@dataclass(frozen=True)
class TprAtFprInterval:
    """TPR at a target FPR with an interval that includes the threshold's uncertainty.

    Attributes:
        tpr: point estimate (:func:`veribench.metrics.roc.tpr_at_fpr` on all texts), or
            ``None`` when undefined.
        lo, hi: percentile interval of the replicate TPRs, or ``None``.
        threshold: the point-estimate threshold (flag rule ``score > threshold``).
        achieved_fpr: false positives / human texts at that threshold.
        target_fpr: the target. n_ai, n_human: texts per class.
        n_false_positives_allowed: f = floor(target * n_human) (capped at n_human - 1): the
            threshold is the (f+1)-th largest human score.
        n_boot: resamples drawn. n_valid: resamples with a defined TPR (all, when both
            classes exist). seed: the generator seed. alpha: 1 - confidence.
        method: how the interval was computed. reason: why values are ``None``.
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


def replicate_tprs(human: np.ndarray, ai: np.ndarray, target_fpr: float, n_boot: int,
                   rng: np.random.Generator) -> np.ndarray:
    """TPR of ``n_boot`` stratified resamples, the threshold refitted on each (float array).

    ``human``, ``ai``: finite scores, both non-empty. The draws follow the block scheme of
    the module docstring; each replicate's threshold is the (f+1)-th largest resampled
    human score (f = :func:`~veribench.metrics.thresholds.allowed_false_positives`), the
    rule of :func:`veribench.metrics.roc.tpr_at_fpr`, and its TPR the share of resampled
    AI scores strictly above it.
    """
    nh, na = int(human.size), int(ai.size)
    kth = nh - 1 - allowed_false_positives(nh, target_fpr)
    per = max(1, BLOCK_ELEMENTS // max(nh, na))
    out = np.empty(int(n_boot))
    done = 0
    while done < n_boot:
        r = min(per, int(n_boot) - done)
        hi = rng.integers(0, nh, size=(r, nh))
        ai_idx = rng.integers(0, na, size=(r, na))
        thr = np.partition(human[hi], kth, axis=1)[:, kth]
        out[done:done + r] = np.count_nonzero(ai[ai_idx] > thr[:, None], axis=1) / na
        done += r
    return out


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
    y = np.concatenate([np.zeros(h.size, np.int8), np.ones(a.size, np.int8)])
    return tpr_at_fpr_interval(y, np.concatenate([h, a]), target_fpr, n_boot=n_boot, seed=seed, alpha=alpha)


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
    point = tpr_at_fpr(y, s, target)
    if point.tpr is None:
        return TprAtFprInterval(None, None, None, None, None, n_false_positives_allowed=None, n_valid=0,
                                reason=point.reason, **common)

    # sorted, so the interval depends on the scores alone, never on the order of the texts
    reps = replicate_tprs(np.sort(s[y == 0]), np.sort(s[y == 1]), target, int(n_boot), np.random.default_rng(int(seed)))
    q_lo, q_hi = (float(v) for v in np.quantile(reps, [alpha / 2.0, 1.0 - alpha / 2.0]))
    return TprAtFprInterval(point.tpr, min(q_lo, point.tpr), max(q_hi, point.tpr), point.threshold,
                            point.achieved_fpr, n_false_positives_allowed=allowed_false_positives(n_human, target),
                            n_valid=int(reps.size), **common)
