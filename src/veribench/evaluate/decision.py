"""Applying a detector's decision rule to every document (:func:`decide`): which texts the
rule counts and which it flags, the threshold (fitted on the calibration split's headline
texts for a fitted rule, else the rule's own) and where it came from, or why the rule
cannot be applied (every rate is then null with that reason).

A fitted rule flags ``oriented score > threshold`` (:data:`veribench.metrics.FLAG_RULE`);
a fixed rule compares the field it names (``ai_probability``, ``raw``, ``oriented``) or
reads the verdict.

With ``[thresholds] per_length`` (``bands`` given) a fitted rule gets one threshold per
length bin (:data:`veribench.evaluate.slices.LENGTH_BANDS`), each fitted exactly as the
single one but on that bin's calibration texts only (after FairOPT, arXiv 2502.04528: one
global threshold flags short human texts more often); a text is judged by its own bin's
threshold. A bin whose calibration texts cannot fit its threshold leaves the rule undefined,
with the reason naming the bin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from veribench.evaluate.arrays import DetArrays
from veribench.evaluate.reasons import NO_RULE, NO_SPLIT_FIT
from veribench.evaluate.slices import LENGTH_BANDS
from veribench.metrics import thresholds as mthr
from veribench.protocol import roles
from veribench.protocol.model import AI_VERDICTS, DecisionRule


@dataclass
class Decision:
    """A detector's decision rule applied to every document.

    ``counted``: texts the rule could judge (scored ok and the rule's field present);
    ``flagged``: counted texts the rule flags; ``defined``: the rule could be applied at
    all (else every rate is null with ``reason``); ``threshold``: the threshold used
    (fitted, or the rule's own; ``None`` with per-length thresholds); ``source``: where it
    came from; ``field``: the field read; ``per_length``: with per-length thresholds, one
    ``{"bin", "threshold", "human_n", "ai_n"}`` per length bin in :data:`LENGTH_BANDS` order
    (the calibration texts each was fitted on), else ``None``.
    """

    counted: np.ndarray
    flagged: np.ndarray
    defined: bool
    reason: str | None
    threshold: float | None
    source: str | None
    field: str | None
    describe: str
    per_length: list[dict[str, Any]] | None = None

    def thresholds(self, bands: np.ndarray | None) -> np.ndarray:
        """Per document, the threshold that judges it (NaN where none does): the bin's with
        per-length thresholds (``bands``: each document's bin name), else the one threshold."""
        n = len(self.counted)
        if self.per_length is None or bands is None:
            return np.full(n, np.nan if self.threshold is None else float(self.threshold))
        out = np.full(n, np.nan)
        b = np.asarray(bands, dtype=object)
        for e in self.per_length:
            out[b == e["bin"]] = float(e["threshold"])
        return out


def _rule_values(det: DetArrays, fld: str) -> np.ndarray:
    return {"ai_probability": det.p, "raw": det.raw, "oriented": det.oriented}[fld]


def _fit(rule: DecisionRule, vals: np.ndarray, cm: np.ndarray, code: np.ndarray,
         where: str = "") -> tuple[float | None, int, int, str | None]:
    """``(threshold, human n, AI n, None)`` fitted on the ``cm`` texts, or ``(None, nh, na, why)``
    when they cannot fit it (no human texts; no AI texts for best balanced accuracy)."""
    yc = code[cm]
    nh, na = int((yc == roles.NEGATIVE_CODE).sum()), int((yc == roles.POSITIVE_CODE).sum())
    fit, target = rule.fit, rule.target_fpr
    if nh == 0 or (fit == "best_balanced_accuracy" and na == 0):
        return None, nh, na, (f"threshold not fitted: the calibration split holds no {'human' if nh == 0 else 'AI'} "
                              f"texts{where} scored by this detector (human n={nh}, AI n={na})")
    y = (yc == roles.POSITIVE_CODE).astype(np.int8)
    return float(mthr.fit_threshold(y, vals[cm], rule=fit, target_fpr=target)), nh, na, None


def decide(det: DetArrays, scored: np.ndarray, calib: np.ndarray, headline: np.ndarray, code: np.ndarray,
           split_declared: bool, bands: np.ndarray | None = None) -> Decision:
    """Apply ``det.rule`` (fitting its threshold on ``calib`` headline texts when it is fitted).

    Args:
        scored: texts this detector scored ok, in its scope.
        calib: calibration-split mask; headline: headline-document mask; code: label codes.
        split_declared: the protocol declares a calibration split.
        bands: per document, its length bin name (``None``: no text) when the protocol asks
            for per-length thresholds (``[thresholds] per_length``); ``None`` otherwise. Only
            a fitted rule uses it; a document without a bin is not counted.
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
        how = f"{rule.fit}{', FPR ' + format(rule.target_fpr, 'g') if rule.target_fpr else ''}"
        if bands is not None:
            return _decide_per_length(rule, vals, counted, calib & headline, code, np.asarray(bands, dtype=object), how)
        thr, nh, na, why = _fit(rule, vals, calib & counted & headline, code)
        if thr is None:
            return Decision(counted, none, False, why, None, None, "oriented", f"fitted: {rule.fit} — {why}")
        with np.errstate(invalid="ignore"):
            flagged = counted & (vals > thr)
        src = f"fitted on the calibration split ({how}; human n={nh}, AI n={na})"
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


def _decide_per_length(rule: DecisionRule, vals: np.ndarray, counted: np.ndarray, calib_head: np.ndarray,
                       code: np.ndarray, bands: np.ndarray, how: str) -> Decision:
    """A fitted rule with one threshold per :data:`LENGTH_BANDS` bin, each fitted on that bin's
    calibration headline texts (:func:`_fit`); a text is flagged when its oriented score
    exceeds its own bin's threshold. Texts without a bin are not counted."""
    counted = counted & np.array([b is not None for b in bands], dtype=bool)
    none = np.zeros(len(counted), dtype=bool)
    flagged = np.zeros(len(counted), dtype=bool)
    fits: list[dict[str, Any]] = []
    for _, name in LENGTH_BANDS:
        inb = bands == name
        thr, nh, na, why = _fit(rule, vals, calib_head & counted & inb, code, f" of {name}")
        if thr is None:
            why = f"per-length thresholds: {why}"
            return Decision(counted, none, False, why, None, None, "oriented",
                            f"fitted per length: {rule.fit} — {why}")
        with np.errstate(invalid="ignore"):
            flagged |= counted & inb & (vals > thr)
        fits.append({"bin": name, "threshold": thr, "human_n": nh, "ai_n": na})
    text = "; ".join(f"{e['bin']}: {float(e['threshold']):g}" for e in fits)
    src = f"fitted per length bin on the calibration split ({how}; {per_length_counts(fits)})"
    return Decision(counted, flagged, True, None, None, src, "oriented",
                    f"oriented score > the threshold of its length bin ({text})", per_length=fits)


def per_length_counts(fits: list[dict[str, Any]]) -> str:
    """``"under 100 words: human n=4, AI n=5; ..."``: the calibration texts of each bin."""
    return "; ".join(f"{e['bin']}: human n={e['human_n']}, AI n={e['ai_n']}" for e in fits)


def per_length_line(label: str, dec: Decision) -> str | None:
    """The line every output prints for a detector judged by per-length thresholds: the bins
    and each fitted threshold (``None`` without them)."""
    if not dec.per_length:
        return None
    bins = "; ".join(f"{e['bin']} > {float(e['threshold']):.6g}" for e in dec.per_length)
    return f"{label}: per-length thresholds fitted on the calibration split (oriented score): {bins}"
