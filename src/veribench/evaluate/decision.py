"""Applying a detector's decision rule to every document (:func:`decide`): which texts the
rule counts and which it flags, the threshold (fitted on the calibration split's headline
texts for a fitted rule, else the rule's own) and where it came from, or why the rule
cannot be applied (every rate is then null with that reason).

A fitted rule flags ``oriented score > threshold`` (:data:`veribench.metrics.FLAG_RULE`);
a fixed rule compares the field it names (``ai_probability``, ``raw``, ``oriented``) or
reads the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from veribench.evaluate.arrays import DetArrays
from veribench.evaluate.reasons import NO_RULE, NO_SPLIT_FIT
from veribench.metrics import thresholds as mthr
from veribench.protocol import roles
from veribench.protocol.model import AI_VERDICTS


@dataclass
class Decision:
    """A detector's decision rule applied to every document.

    ``counted``: texts the rule could judge (scored ok and the rule's field present);
    ``flagged``: counted texts the rule flags; ``defined``: the rule could be applied at
    all (else every rate is null with ``reason``); ``threshold``: the threshold used
    (fitted, or the rule's own); ``source``: where it came from; ``field``: the field read.
    """

    counted: np.ndarray
    flagged: np.ndarray
    defined: bool
    reason: str | None
    threshold: float | None
    source: str | None
    field: str | None
    describe: str


def _rule_values(det: DetArrays, fld: str) -> np.ndarray:
    return {"ai_probability": det.p, "raw": det.raw, "oriented": det.oriented}[fld]


def decide(det: DetArrays, scored: np.ndarray, calib: np.ndarray, headline: np.ndarray, code: np.ndarray,
           split_declared: bool) -> Decision:
    """Apply ``det.rule`` (fitting its threshold on ``calib`` headline texts when it is fitted).

    Args:
        scored: texts this detector scored ok, in its scope.
        calib: calibration-split mask; headline: headline-document mask; code: label codes.
        split_declared: the protocol declares a calibration split.
    """
    n = len(scored)
    none = np.zeros(n, dtype=bool)
    rule = det.rule
    if rule is None:
        return Decision(none, none, False, NO_RULE, None, None, None, NO_RULE)
    if rule.fit:
        vals = det.oriented
        counted = scored & np.isfinite(vals)
        if not split_declared:
            return Decision(counted, none, False, NO_SPLIT_FIT, None, None, "oriented",
                            f"fitted: {rule.fit} — {NO_SPLIT_FIT}")
        cm = calib & counted & headline
        yc = code[cm]
        nh, na = int((yc == roles.NEGATIVE_CODE).sum()), int((yc == roles.POSITIVE_CODE).sum())
        need_ai = rule.fit == "best_balanced_accuracy"
        if nh == 0 or (need_ai and na == 0):
            why = (f"threshold not fitted: the calibration split holds no {'human' if nh == 0 else 'AI'} texts "
                   f"scored by this detector (human n={nh}, AI n={na})")
            return Decision(counted, none, False, why, None, None, "oriented", f"fitted: {rule.fit} — {why}")
        y = (yc == roles.POSITIVE_CODE).astype(np.int8)
        thr = float(mthr.fit_threshold(y, vals[cm], rule=rule.fit, target_fpr=rule.target_fpr))
        with np.errstate(invalid="ignore"):
            flagged = counted & (vals > thr)
        src = f"fitted on the calibration split ({rule.fit}{', FPR ' + format(rule.target_fpr, 'g') if rule.target_fpr else ''}; human n={nh}, AI n={na})"
        return Decision(counted, flagged, True, None, thr, src, "oriented", f"oriented score > {thr:g}")
    if rule.field == "verdict":
        ai = set(rule.ai_values) or set(AI_VERDICTS)
        has = np.array([v is not None for v in det.verdict], dtype=bool)
        counted = scored & has
        if not counted.any() and scored.any():
            why = "the rule reads the verdict, which this detector does not report"
            return Decision(counted, none, False, why, None, rule.source, "verdict", f"{rule.describe()} — {why}")
        flagged = counted & np.array([v in ai if v is not None else False for v in det.verdict], dtype=bool)
        return Decision(counted, flagged, True, None, None, rule.source, "verdict", rule.describe())
    vals = _rule_values(det, rule.field)
    counted = scored & np.isfinite(vals)
    if not counted.any() and scored.any():
        why = f"the rule reads {rule.field}, which this detector does not report"
        return Decision(counted, none, False, why, rule.threshold, rule.source, rule.field, f"{rule.describe()} — {why}")
    thr = rule.threshold
    with np.errstate(invalid="ignore"):
        cmp = {">": vals > thr, ">=": vals >= thr, "<": vals < thr, "<=": vals <= thr}[rule.op]
    return Decision(counted, counted & cmp, True, None, thr, rule.source, rule.field, rule.describe())
