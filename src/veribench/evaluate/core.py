"""Pure computation of a run's results from arrays (no I/O).

Inputs are column arrays over the selected documents (:class:`DocArrays`) and, per
detector, score arrays aligned to them (:class:`DetArrays`). The output is the run
results dict documented in ``docs/results-schema.md`` (rates, agreement, table1,
table2, side_rows, curves), with ``None`` plus a reason for every undefined value,
never NaN and never 0 in place of "undefined".

Conventions (stated once in ``docs/labels.md``; the data live in
:mod:`veribench.protocol.roles` and :mod:`veribench.metrics.thresholds`):

- **Roles.** A document counts in the headline rates (Table 1) when its label's role is
  positive (``ai``) or negative (``human``), its arm's role is ``headline`` and it is not
  derived. Side labels (``ai-edited-human``, ``mixed``) have their own columns; human or
  AI texts of side arms (C2 ...) and derived texts (attacks ...) have their own side rows.
- **Flags.** A text is flagged by the detector's decision rule (protocol ``rule``); a
  fitted rule flags ``oriented score > threshold`` (:data:`veribench.metrics.FLAG_RULE`)
  with the threshold fitted on the calibration split's headline texts only. A rule that
  cannot be applied (no rule, no split, a calibration split without both classes, a field
  the detector does not report) gives null rates with that reason.
- **Rates.** Catch rate = flagged AI / AI counted; false-positive rate = flagged human /
  human counted; balanced accuracy = (catch rate + 1 - FPR) / 2 (Brodersen et al. 2010);
  each with a Wilson interval (Wilson 1927, via statsmodels). Denominators are the texts
  the detector actually scored; excluded texts are counted per reason.
- **Ranking metrics** (AUROC, TPR at FPR, ROC) use the oriented native score
  (:mod:`veribench.evaluate.ranking`), human vs ai, for every detector and every slice,
  whether or not it has a decision rule. AUROC intervals: DeLong (Sun & Xu 2014) or a
  seeded bootstrap. TPR at a fixed FPR takes its threshold from the calibration split's
  human texts when there are any (the achieved FPR on test is reported), else from the
  evaluated human texts themselves, labelled an in-sample oracle operating point.
- Only test-split documents are evaluated, unless the protocol declares no split.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from veribench import labels
from veribench.evaluate import groups as mgroups
from veribench.evaluate.comparisons import DetectorInput, compute_comparisons
from veribench.evaluate.robustness import robustness_rows
from veribench.metrics import grouped as mgrouped
from veribench.metrics import rates as mrates
from veribench.metrics import roc as mroc
from veribench.metrics import thresholds as mthr
from veribench.metrics.threshold_bootstrap import METHOD as TPR_CI_METHOD
from veribench.metrics.threshold_bootstrap import tpr_at_fpr_interval_scores
from veribench.protocol import roles
from veribench.protocol.model import AI_VERDICTS, DecisionRule, Protocol
from veribench.protocol.split import calibration_mask, split_summary

HEADLINE_POS = labels.POSITIVE_LABELS[0]
HEADLINE_NEG = labels.NEGATIVE_LABELS[0]
SIDE_LABELS = labels.SIDE_LABELS
#: Label codes used internally: index into LABEL_ORDER (the role table's label order).
LABEL_ORDER = labels.LABELS

#: Reasons given with null values (one place; docs/labels.md lists them).
NO_RULE = "no decision rule"
NO_HUMAN = "no human texts"
NO_AI = "no AI texts"
NO_SPLIT_FIT = "threshold not fitted: the protocol has no calibration split"
IN_SAMPLE = "in-sample oracle operating point"
FROM_CALIBRATION = "calibration split"
HAZARD_KEYS = ("confusables", "invisible", "degenerate_repetition")
#: The Table 2 slice of derived texts by attack (or humanizer) name; added when derived texts exist.
ATTACK_SLICE = f"tag:{roles.ATTACK_TAG}"
#: Slice kinds whose values only derived texts carry: their Table 2 rows count derived texts.
DERIVED_SLICES = (ATTACK_SLICE, f"tag:{roles.DERIVATION_TAG}")
DERIVED_MEMBERS = "derived texts (never headline); AUROC and TPR at FPR as in the side rows"


@dataclass
class DocArrays:
    """Selected documents as parallel arrays of length n."""

    doc_id: np.ndarray  # str
    label: np.ndarray  # str: human | ai | ai-edited-human | mixed
    subgroup: np.ndarray  # str or None
    arm: np.ndarray
    kind: np.ndarray
    corpus: np.ndarray
    group_key: np.ndarray
    tags: list[dict[str, str]] = field(default_factory=list)
    #: ``provenance["source_id"]`` per document (``None`` where not derived); ``None``: unknown.
    source_id: np.ndarray | None = None
    #: ``provenance["attack"]`` per derived document as canonical JSON (``None``: none recorded).
    variant: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.doc_id)

    def column(self, slice_kind: str) -> np.ndarray:
        """Values of a slice kind (``subgroup``, ``arm``, ``kind``, ``corpus``, ``label`` or ``tag:<name>``)."""
        if slice_kind.startswith("tag:"):
            key = slice_kind[4:]
            if not self.tags:
                return np.full(len(self), None, dtype=object)
            return np.array([t.get(key) if t else None for t in self.tags], dtype=object)
        return getattr(self, slice_kind)


@dataclass
class DetArrays:
    """One detector's scores aligned to :class:`DocArrays` (NaN / None where absent).

    ``present``: a score row exists; ``ok``: its status is ``ok``; ``p``: P(AI) in [0,1]
    or NaN; ``raw``: native value or NaN; ``oriented``: the ranking score, the native
    value oriented so that higher = more AI (see :mod:`veribench.evaluate.ranking`), or NaN;
    ``verdict``: lower-cased verdict or None; ``text_differs``: the submitted text's
    hash differs from the document's. ``rule`` is ``None`` when the detector has no
    decision rule (its rates are then null with the reason ``"no decision rule"``).

    Optional: ``status`` (object array, status per document or None when never
    scored), ``in_scope`` (bool array: the documents this detector is meant to score,
    e.g. its protocol ``corpora``; default all), ``hazards`` (``{"confusables",
    "invisible", "degenerate_repetition"}`` float arrays, NaN where the score has no
    hazard record), ``ranking`` (description of the ranking score), ``scale`` and
    ``direction`` (object arrays, the native scale and direction per document),
    ``corpora`` (the corpora its protocol entry names: its agreement panels).
    """

    label: str
    spec: dict[str, Any]
    spec_hash: str
    rule: DecisionRule | None
    present: np.ndarray
    ok: np.ndarray
    p: np.ndarray
    raw: np.ndarray
    oriented: np.ndarray
    verdict: np.ndarray
    text_differs: np.ndarray
    scan_date: str | None = None
    status_counts: dict[str, int] = field(default_factory=dict)
    status: np.ndarray | None = None
    in_scope: np.ndarray | None = None
    hazards: dict[str, np.ndarray] | None = None
    ranking: dict[str, Any] | None = None
    scale: np.ndarray | None = None
    direction: np.ndarray | None = None
    #: The corpora the protocol names for this detector (its ``corpora``; empty: none named).
    corpora: tuple[str, ...] = ()


def _f(x: Any) -> Any:
    """JSON-safe float: NaN/inf -> None; numpy scalars -> Python."""
    if x is None:
        return None
    if isinstance(x, (np.floating, float)):
        x = float(x)
        return x if math.isfinite(x) else None
    if isinstance(x, np.integer):
        return int(x)
    return x


def _pct(t: float) -> str:
    v = t * 100
    return str(int(v)) if float(v).is_integer() else f"{v:g}".replace(".", "_")


def tpr_key(target: float) -> str:
    """Results key of a TPR-at-FPR block: ``tpr_at_fpr_1`` for 0.01, ``tpr_at_fpr_0_5`` for 0.005."""
    return f"tpr_at_fpr_{_pct(target)}"


# --------------------------------------------------------------------------- decision rules
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


# --------------------------------------------------------------------------- slices
def slice_kinds(docs: DocArrays, proto: Protocol) -> tuple[list[str], list[str]]:
    """The slice kinds of Table 2: the protocol's ``[tables] slices``, plus ``tag:attack`` when
    the selection holds derived documents with an attack (or humanizer) name and the protocol
    does not list it. Returns ``(kinds, added)``."""
    kinds = list(proto.slices)
    added = []
    if ATTACK_SLICE not in kinds and docs.tags and any(
            t and t.get(roles.DERIVATION_TAG) and t.get(roles.ATTACK_TAG) for t in docs.tags):
        added.append(ATTACK_SLICE)
    return kinds + added, added


def _slice_codes(docs: DocArrays, kinds: list[str]) -> list[tuple[str, list[str], np.ndarray]]:
    """Per slice kind: (kind, group values, int code per document; -1 = not in any group).

    The first entry is the ``all`` kind with one group."""
    n = len(docs)
    out: list[tuple[str, list[str], np.ndarray]] = [("all", ["all"], np.zeros(n, dtype=np.int64))]
    for kind in kinds:
        col = docs.column(kind)
        present = np.array([v is not None for v in col], dtype=bool)
        codes = np.full(n, -1, dtype=np.int64)
        if present.any():
            vals, inv = np.unique(col[present].astype(str), return_inverse=True)
            codes[present] = inv
            out.append((kind, [str(v) for v in vals], codes))
    return out


def _count(codes: np.ndarray, mask: np.ndarray, lab: np.ndarray, g: int) -> np.ndarray:
    """(g, n_labels) counts of ``mask`` rows per (group, label)."""
    nl = len(LABEL_ORDER)
    m = mask & (codes >= 0) & (lab < nl)
    return np.bincount(codes[m] * nl + lab[m], minlength=g * nl).reshape(g, nl)


def _rate_block(prefix: str, n: int, rate: float, lo: float, hi: float, undefined: str | None,
                empty: str) -> dict[str, Any]:
    """``{prefix}``, ``{prefix}_ci95`` and ``{prefix}_reason`` for one rate (null + reason when undefined)."""
    if undefined is not None:
        return {prefix: None, f"{prefix}_ci95": None, f"{prefix}_reason": undefined}
    if n == 0:
        return {prefix: None, f"{prefix}_ci95": None, f"{prefix}_reason": empty}
    return {prefix: float(rate), f"{prefix}_ci95": [float(lo), float(hi)], f"{prefix}_reason": None}


@dataclass
class _Ctx:
    """Everything the per-slice blocks of one detector need."""

    det: DetArrays
    dec: Decision
    lab: np.ndarray
    scored: np.ndarray
    rank: np.ndarray
    alpha: float
    proto: Protocol
    thresholds: dict[float, dict[str, Any]]  # target -> {"threshold", "source", "n_human"} (calibration) or {}
    warn: list[str]
    n_blocks: int = 0


def _blocks(ctx: _Ctx, codes: np.ndarray, g: int, member: np.ndarray, ctx_name: str, values: list[str],
            negatives: np.ndarray | None = None, fixed_thresholds: dict[float, dict[str, Any]] | None = None,
            base: np.ndarray | None = None, base_order: np.ndarray | None = None) -> list[dict[str, Any]]:
    """Metric blocks of every group of one grouping (codes in 0..g-1; -1 = not a member).

    ``member``: documents of the grouping (test split, scope, role). ``negatives``: for
    side rows, the human texts to rank each group's AI texts against (instead of the
    group's own, when a group has none). ``fixed_thresholds``: TPR-at-FPR thresholds
    to apply to every group (calibration, or the headline operating point).
    """
    lab, dec, alpha = ctx.lab, ctx.dec, ctx.alpha
    n_mem = _count(codes, member, lab, g)
    n_sc = _count(codes, member & ctx.scored, lab, g)
    n_ct = _count(codes, member & dec.counted, lab, g)
    k_fl = _count(codes, member & dec.flagged, lab, g)
    undefined = None if dec.defined else dec.reason
    n_rate = n_ct if dec.defined else n_sc
    rate, lo, hi = mrates.wilson_arrays(k_fl, np.where(n_ct > 0, n_ct, 0), alpha)
    blocks: list[dict[str, Any]] = []
    # Ranking metrics: headline labels only (human = 0, ai = 1), oriented native score.
    sel = member & ctx.rank & (codes >= 0) & ((lab == roles.NEGATIVE_CODE) | (lab == roles.POSITIVE_CODE))
    score = ctx.det.oriented
    rk_codes, rk_lab, rk_score = codes[sel], lab[sel], score[sel]
    own_ranked = np.bincount(rk_codes, minlength=g)
    if negatives is not None:
        # groups without human texts of their own are ranked against ``negatives``
        own_h = np.bincount(rk_codes[rk_lab == roles.NEGATIVE_CODE], minlength=g) > 0
        borrow = np.flatnonzero(~own_h)
        nsel = negatives & ctx.rank
        if borrow.size and nsel.any():
            nh = int(nsel.sum())
            rk_codes = np.concatenate([rk_codes, np.repeat(borrow, nh)])
            rk_lab = np.concatenate([rk_lab, np.full(nh * borrow.size, roles.NEGATIVE_CODE, dtype=lab.dtype)])
            rk_score = np.concatenate([rk_score, np.tile(score[nsel], borrow.size)])
        neg_src = ["this group's human texts" if own_h[i] else "headline human texts" for i in range(g)]
    else:
        neg_src = None
    cnt = np.bincount(rk_codes * 2 + (rk_lab == roles.POSITIVE_CODE), minlength=2 * g).reshape(g, 2)
    n_neg, n_pos = cnt[:, 0], cnt[:, 1]
    auc = np.full(g, np.nan)
    alo = np.full(g, np.nan)
    ahi = np.full(g, np.nan)
    insample: dict[float, Any] = {}
    if ((n_pos > 0) & (n_neg > 0)).any():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            order = None
            if base is not None and base_order is not None and negatives is None:
                keep = sel[base]
                rank_in_sel = np.cumsum(keep) - 1
                order = rank_in_sel[base_order[keep[base_order]]]
            y = (rk_lab == roles.POSITIVE_CODE).astype(np.int8)
            gs = mgrouped.GroupedScores(rk_codes, y, rk_score, n_groups=g, score_order=order)
            if ctx.proto.auroc_ci == "delong":
                ga = gs.auroc(alpha=alpha, warn=False)
                auc, alo, ahi = ga.auc, ga.lo, ga.hi
            else:  # seeded bootstrap per group (documented; slower)
                for i in range(g):
                    m = rk_codes == i
                    if n_pos[i] and n_neg[i]:
                        r = mroc.auroc_ci(y[m], rk_score[m], alpha=alpha, method="bootstrap",
                                          n_boot=ctx.proto.bootstrap_n, seed=ctx.proto.seed)
                        auc[i], alo[i], ahi[i] = r.auc, r.lo, r.hi
            if fixed_thresholds is None:
                for t in ctx.proto.tpr_at_fpr:
                    insample[t] = gs.tpr_at_fpr(t, warn=False)
        for w in caught:
            ctx.warn.append(f"{ctx_name}: {w.message}")
    for i in range(g):
        b: dict[str, Any] = {}
        hn, an = int(n_rate[i, roles.NEGATIVE_CODE]), int(n_rate[i, roles.POSITIVE_CODE])
        b["human_n"] = hn
        b["false_positives"] = int(k_fl[i, roles.NEGATIVE_CODE]) if dec.defined else None
        h_, a_ = roles.NEGATIVE_CODE, roles.POSITIVE_CODE
        b.update(_rate_block("fpr", hn, rate[i, h_], lo[i, h_], hi[i, h_], undefined, NO_HUMAN))
        b["ai_n"] = an
        b["detections"] = int(k_fl[i, roles.POSITIVE_CODE]) if dec.defined else None
        b.update(_rate_block("catch_rate", an, rate[i, a_], lo[i, a_], hi[i, a_], undefined, NO_AI))
        if b["fpr"] is not None and b["catch_rate"] is not None:
            b["balanced_accuracy"] = _f(mthr.balanced_accuracy(b["catch_rate"], b["fpr"]))
            b["balanced_accuracy_reason"] = None
        else:
            b["balanced_accuracy"] = None
            b["balanced_accuracy_reason"] = b["fpr_reason"] or b["catch_rate_reason"]
        for li, lab_name in enumerate(LABEL_ORDER):
            if lab_name not in roles.SIDE_COLUMN:
                continue
            key = roles.SIDE_COLUMN[lab_name]
            sn = int(n_rate[i, li])
            b[f"{key}_n"] = sn
            b[f"{key}_flagged"] = int(k_fl[i, li]) if dec.defined else None
            rb = _rate_block(f"{key}_rate", sn, rate[i, li], lo[i, li], hi[i, li], undefined,
                             f"no {lab_name} texts")
            b.update(rb)
        b["excluded_n"] = int(n_mem[i, h_] + n_mem[i, a_] - hn - an)
        defined = bool(n_pos[i] and n_neg[i])
        why = None if defined else (NO_HUMAN if not n_neg[i] else NO_AI)
        if not defined and own_ranked[i]:
            ctx.warn.append(f"{ctx_name}={values[i]}: AUROC undefined ({why})")
        b["ranked_n"] = int(own_ranked[i])
        b["auroc"] = _f(auc[i]) if defined else None
        b["auroc_reason"] = why
        if defined and np.isfinite(alo[i]):
            b["auroc_ci95"], b["auroc_ci95_reason"] = [_f(alo[i]), _f(ahi[i])], None
        else:
            b["auroc_ci95"] = None
            b["auroc_ci95_reason"] = why or "interval undefined: fewer than 2 texts in a class"
        b["auroc_method"] = ctx.proto.auroc_ci if defined else None
        if neg_src is not None:
            b["auroc_negatives"] = neg_src[i]
        for t in ctx.proto.tpr_at_fpr:
            b[tpr_key(t)] = _tpr_block(ctx, t, i, codes, member, fixed_thresholds, insample, n_pos, n_neg,
                                       negatives)
        blocks.append(b)
    return blocks


def _tpr_block(ctx: _Ctx, t: float, i: int, codes: np.ndarray, member: np.ndarray,
               fixed: dict[float, dict[str, Any]] | None, insample: dict[float, Any], n_pos: np.ndarray,
               n_neg: np.ndarray, negatives: np.ndarray | None) -> dict[str, Any]:
    base = {"target_fpr": t}
    if fixed is not None:
        thr = fixed.get(t, {}).get("threshold")
        if thr is None:
            return {**base, "tpr": None, "k": None, "n": int(n_pos[i]), "threshold": None, "achieved_fpr": None,
                    "fp": None, "n_human": int(n_neg[i]), "threshold_source": (fixed.get(t) or {}).get("source"),
                    "reason": "no operating point: the headline texts give no threshold",
                    "ci95": None, "ci95_reason": "no operating point: the headline texts give no threshold",
                    "ci_method": None}
        score = ctx.det.oriented
        inside = member & ctx.rank & (codes == i)
        ai = inside & (ctx.lab == roles.POSITIVE_CODE)
        hum = inside & (ctx.lab == roles.NEGATIVE_CODE)
        na, nh = int(ai.sum()), int(hum.sum())
        with np.errstate(invalid="ignore"):
            k = int((score[ai] > thr).sum())
            fp = int((score[hum] > thr).sum())
        out = {**base, "tpr": (k / na) if na else None, "k": k, "n": na, "threshold": thr,
               "achieved_fpr": (fp / nh) if nh else None, "fp": fp if nh else None, "n_human": nh,
               "threshold_source": fixed[t]["source"], "threshold_n_human": fixed[t]["n_human"],
               "reason": None if na else NO_AI}
        if nh == 0:
            out["achieved_fpr_reason"] = NO_HUMAN
        out.update(_tpr_ci(ctx, t, fixed[t].get("human"), score[ai]))
        return out
    if not (n_pos[i] and n_neg[i]):
        why = NO_HUMAN if not n_neg[i] else NO_AI
        return {**base, "tpr": None, "k": None, "n": int(n_pos[i]), "threshold": None, "achieved_fpr": None,
                "fp": None, "n_human": int(n_neg[i]), "threshold_source": IN_SAMPLE, "reason": why,
                "ci95": None, "ci95_reason": why, "ci_method": None}
    r = insample[t]
    inside = member & ctx.rank & (codes == i)
    score = ctx.det.oriented
    return {**base, "tpr": _f(r.tpr[i]), "k": int(r.k[i]), "n": int(r.n[i]), "threshold": _f(r.threshold[i]),
            "achieved_fpr": _f(r.achieved_fpr[i]), "fp": int(r.fp[i]), "n_human": int(r.n_human[i]),
            "threshold_source": IN_SAMPLE, "reason": r.reasons[i],
            **_tpr_ci(ctx, t, score[inside & (ctx.lab == roles.NEGATIVE_CODE)],
                      score[inside & (ctx.lab == roles.POSITIVE_CODE)])}


def _tpr_ci(ctx: _Ctx, t: float, human: np.ndarray | None, ai: np.ndarray) -> dict[str, Any]:
    """``ci95`` of a TPR-at-FPR block: the seeded bootstrap that refits the threshold on the
    human texts that set it in every resample (:mod:`veribench.metrics.threshold_bootstrap`;
    seed and resample count: the protocol's ``[metrics] seed`` and ``bootstrap_n``)."""
    if human is None or human.size == 0:
        return {"ci95": None, "ci95_reason": "no human texts set the threshold", "ci_method": None}
    if ai.size == 0:
        return {"ci95": None, "ci95_reason": NO_AI, "ci_method": None}
    r = tpr_at_fpr_interval_scores(human, ai, t, n_boot=ctx.proto.bootstrap_n, seed=ctx.proto.seed, alpha=ctx.alpha)
    ctx.n_blocks += 1
    return {"ci95": [r.lo, r.hi], "ci95_reason": None, "ci_method": TPR_CI_METHOD}


# --------------------------------------------------------------------------- per detector
def _excluded(det: DetArrays, dec: Decision, pool: np.ndarray, scope: np.ndarray) -> dict[str, int]:
    """Reason -> count of texts in ``pool`` (evaluated, in scope) that no rate counts."""
    out: dict[str, int] = {}
    st = det.status
    missing = pool & ~det.present
    if missing.any():
        out["not scored"] = int(missing.sum())
    failed = pool & det.present & ~det.ok
    if failed.any():
        if st is not None:
            vals, cnt = np.unique(np.asarray(st[failed], dtype=object).astype(str), return_counts=True)
            for v, c in zip(vals, cnt):
                out[str(v)] = out.get(str(v), 0) + int(c)
        else:
            out["failed"] = int(failed.sum())
    if dec.defined:
        nofield = pool & det.ok & ~dec.counted
        if nofield.any():
            out[f"no {dec.field}"] = int(nofield.sum())
    return dict(sorted(out.items()))


def _hazards(det: DetArrays, pool: np.ndarray) -> tuple[dict[str, int] | None, str | None]:
    """Texts with each input hazard among the scored texts of ``pool`` (from ``detail["hazards"]``)."""
    h = det.hazards
    m = pool & det.ok
    if not h or not m.any():
        return None, "no hazard record on these scores"
    rec = m & np.isfinite(h.get("confusables", np.full(len(m), np.nan)))
    if not rec.any():
        return None, "no hazard record on these scores"
    out = {"checked": int(rec.sum())}
    for k in HAZARD_KEYS:
        v = h.get(k)
        out[k] = int((rec & np.isfinite(v) & (np.nan_to_num(v) > 0)).sum()) if v is not None else 0
    return out, None


def _operating_thresholds(ctx: _Ctx, calib: np.ndarray, headline: np.ndarray) -> tuple[dict[float, dict[str, Any]], int]:
    """TPR-at-FPR thresholds from the calibration split's headline human texts ({} when none)."""
    hm = calib & headline & ctx.rank & (ctx.lab == roles.NEGATIVE_CODE)
    nh = int(hm.sum())
    if nh == 0:
        return {}, 0
    h = np.sort(ctx.det.oriented[hm])
    out = {}
    for t in ctx.proto.tpr_at_fpr:
        thr, fp = mthr.threshold_at_fpr_sorted(h, t)
        out[t] = {"threshold": float(thr), "source": FROM_CALIBRATION, "n_human": nh, "calibration_fp": int(fp),
                  "human": h}
    return out, nh


def split_documents(docs: DocArrays, proto: Protocol) -> tuple[roles.DocumentRoles, np.ndarray, dict[str, Any]]:
    """The documents' roles, the calibration mask and the split summary under ``proto``."""
    n = len(docs)
    rl = roles.classify(docs.label, docs.arm, docs.tags, proto.arms)
    is_human = rl.code == roles.NEGATIVE_CODE
    keys = split_groups(docs)
    if proto.split_rule == "hash":
        elig = np.isin(docs.corpus.astype(str), list(proto.split_corpora)) if proto.split_corpora else np.ones(n, bool)
        calib = calibration_mask(list(docs.doc_id), is_human, keys, every=proto.split_every,
                                 salt=proto.split_salt, eligible=elig)
    else:
        elig = np.zeros(n, dtype=bool)
        calib = np.zeros(n, dtype=bool)
    info = {"rule": proto.split_rule if proto.split_rule == "hash" else "none", "every": proto.split_every,
            "salt": proto.split_salt, "corpora": list(proto.split_corpora),
            "group_by": "group_key, else the source's id (derived texts), else the document id",
            **split_summary(calib, is_human, list(docs.doc_id), keys, elig)}
    return rl, calib, info


def split_groups(docs: DocArrays) -> list[Any]:
    """The split group key of every document: its ``group_key``; for a derived document
    without one, its source's group (the source's ``group_key``, else the source's id), so
    a derived text always lands on its source's side; else ``None`` (its own id)."""
    keys = list(docs.group_key)
    if docs.source_id is None:
        return keys

    def has(g: Any) -> bool:
        return g is not None and str(g) != ""

    own = {str(d): g for d, g in zip(docs.doc_id, keys) if has(g)}
    return [g if has(g) or src is None else own.get(str(src), str(src)) for g, src in zip(keys, docs.source_id)]


def document_rows(docs: DocArrays, dets: list[DetArrays], proto: Protocol) -> dict[str, np.ndarray]:
    """One row per (document, detector) of a run, as columns: the inputs and the decision.

    The rows a detector's tables are computed from: its scope's documents with their
    roles, split side, score, ranking score, rule, threshold, and whether the rule
    counted and flagged them (``flagged`` is ``None`` where the rule is undefined or the
    text is not counted; ``excluded`` names why a text is not counted). Recomputing
    Table 1 from these rows gives the run's Table 1 (see ``docs/results-schema.md``).
    Float columns hold NaN where absent; ``{}`` when there is no detector.
    """
    rl, calib, _ = split_documents(docs, proto)
    lab = rl.code
    n = len(docs)
    label_role = np.array([roles.label_role(x) for x in docs.label], dtype=object)
    arm_role = np.array([roles.arm_role(x, proto.arms) for x in docs.arm], dtype=object)
    split = np.where(calib, "calibration", "test").astype(object)
    tags = np.array([json.dumps(t, sort_keys=True) if t else None for t in docs.tags], dtype=object) \
        if docs.tags else np.full(n, None, dtype=object)
    nothing = np.full(n, None, dtype=object)
    parts: list[dict[str, np.ndarray]] = []
    for d in dets:
        scope = np.ones(n, bool) if d.in_scope is None else np.asarray(d.in_scope, dtype=bool)
        scored = scope & d.ok
        dec = decide(d, scored, calib, rl.headline, lab, proto.split_rule == "hash")
        idx = np.flatnonzero(scope | d.present)
        st = d.status if d.status is not None else np.where(d.ok, "ok", np.where(d.present, "failed", None))
        why = np.full(n, None, dtype=object)
        if dec.defined:
            why[d.ok & ~dec.counted] = f"no {dec.field}"
        failed = d.present & ~d.ok
        why[failed] = np.asarray(st, dtype=object)[failed]
        why[~d.present] = "not scored"
        counted = dec.counted if dec.defined else np.zeros(n, bool)
        flagged = np.where(counted, dec.flagged, None).astype(object)
        k = idx.size
        parts.append({
            "doc_id": docs.doc_id[idx], "corpus": docs.corpus[idx], "label": docs.label[idx],
            "label_role": label_role[idx], "arm": docs.arm[idx], "arm_role": arm_role[idx],
            "subgroup": docs.subgroup[idx], "kind": docs.kind[idx], "group_key": docs.group_key[idx],
            "tags": tags[idx], "side_group": rl.side[idx], "headline": rl.headline[idx], "split": split[idx],
            "detector": np.full(k, d.label, dtype=object), "spec_hash": np.full(k, d.spec_hash, dtype=object),
            "status": np.asarray(st, dtype=object)[idx], "raw": d.raw[idx],
            "scale": (d.scale if d.scale is not None else nothing)[idx],
            "direction": (d.direction if d.direction is not None else nothing)[idx], "ai_probability": d.p[idx],
            "verdict": d.verdict[idx], "ranking_score": d.oriented[idx],
            "rule": np.full(k, dec.describe, dtype=object), "rule_field": np.full(k, dec.field, dtype=object),
            "threshold": np.full(k, np.nan if dec.threshold is None else dec.threshold),
            "rule_defined": np.full(k, dec.defined), "counted": counted[idx], "flagged": flagged[idx],
            "excluded": why[idx],
        })
    if not parts:
        return {}
    return {key: np.concatenate([p_[key] for p_ in parts]) for key in parts[0]}


def compute_results(docs: DocArrays, dets: list[DetArrays], proto: Protocol, *, run_meta: dict[str, Any] | None = None,
                    curve_points: int = 200, hist_bins: int = 30) -> dict[str, Any]:
    """Compute every table of a run.

    Args:
        docs: selected documents.
        dets: detector score arrays aligned to ``docs``.
        proto: the protocol (rules, split, metrics, slices, arm roles, comparisons, gaps).
        run_meta: the ``run`` block to embed (id, tag, protocol hash, dates).

    Returns:
        The results dict (``run``, ``detectors``, ``rates``, ``agreement``, ``table1_groups``,
        ``table1``, ``table2``, ``side_rows``, ``robustness``, ``comparisons``, ``gaps``,
        ``significance``, ``tiers``, ``corrections``, ``curves``, ``warnings``); see
        ``docs/results-schema.md``.
    """
    alpha = 1.0 - proto.confidence
    n = len(docs)
    warn_list: list[str] = []
    rl, calib, split_info = split_documents(docs, proto)
    lab = rl.code
    split_declared = proto.split_rule == "hash"
    test = ~calib
    kind_names, added_kinds = slice_kinds(docs, proto)
    kinds = _slice_codes(docs, kind_names)
    derived = np.array([s_ is not None and s_.startswith("derivation=") for s_ in rl.side], dtype=bool)
    side_names = rl.side_groups
    side_codes = np.full(n, -1, dtype=np.int64)
    for gi, name in enumerate(side_names):
        side_codes[rl.side == name] = gi
    det_rows, rates, table1, table2, side_rows, curves = [], [], [], [], [], {}
    counted_mat = np.zeros((len(dets), n), dtype=bool)
    flag_mat = np.zeros((len(dets), n), dtype=bool)
    has_rule = np.zeros(len(dets), dtype=bool)
    split_name = "test" if split_declared else "all"
    scopes = [np.ones(n, bool) if d.in_scope is None else np.asarray(d.in_scope, dtype=bool) for d in dets]
    decisions = [decide(d, scopes[j] & d.ok, calib, rl.headline, lab, split_declared) for j, d in enumerate(dets)]
    # Table 1 groups: detectors scored on the same texts (docs/labels.md §7).
    corpus = mgroups.corpus_labels(docs.corpus)
    main = test & rl.table
    groups = mgroups.table1_groups(corpus, main, main & rl.headline, scopes, [scopes[j] & d.present for j, d in enumerate(dets)],
                                   [scopes[j] & d.ok for j, d in enumerate(dets)], [d.corpora for d in dets],
                                   [dec.defined for dec in decisions])
    group_codes = np.full(n, -1, dtype=np.int64)
    for gi, g in enumerate(groups):
        group_codes[g.mask] = gi
    ctxs = []
    for j, d in enumerate(dets):
        scope = scopes[j]
        scored = scope & d.ok
        rank = scored & np.isfinite(d.oriented)
        dec = decisions[j]
        has_rule[j] = dec.defined
        counted_mat[j], flag_mat[j] = dec.counted, dec.flagged
        ctx = _Ctx(d, dec, lab, scored, rank, alpha, proto, {}, warn_list)
        ctxs.append(ctx)
        fixed, n_cal_h = _operating_thresholds(ctx, calib, rl.headline)
        if dec.reason:
            warn_list.append(f"{d.label}: rates are null: {dec.reason}")
        # Warnings on the operating points and the scores themselves.
        n_h_set = n_cal_h or int((test & rl.headline & rank & (lab == roles.NEGATIVE_CODE)).sum())
        for t in proto.tpr_at_fpr:
            if n_h_set and t * n_h_set < 1:
                warn_list.append(f"{d.label}: target FPR {t:g} is below 1/n of the {n_h_set} human texts that set "
                                 f"its threshold; the threshold is the largest human score and the achieved FPR is 0")
        if rank.any() and np.unique(d.oriented[rank]).size == 1:
            warn_list.append(f"{d.label}: a single distinct score ({d.oriented[rank][0]:g}) over {int(rank.sum())} "
                             "texts; it cannot rank texts (AUROC 0.5 where defined)")
        rule = d.rule.to_dict() if d.rule is not None else {"field": None, "op": None, "threshold": None,
                                                              "ai_values": [], "fit": None, "target_fpr": None,
                                                              "source": None}
        rule.update({"threshold": dec.threshold, "source": dec.source, "describe": dec.describe,
                     "defined": dec.defined, "reason": dec.reason})
        pool = test & scope & (lab != roles.UNKNOWN_CODE)
        excluded_all = _excluded(d, dec, pool, scope)
        operating = (f"{FROM_CALIBRATION} (threshold from {n_cal_h} calibration human texts; FPR achieved on test)"
                     if fixed else IN_SAMPLE + " (threshold set on the texts it reports)")
        det_rows.append({"detector": d.label, "spec_hash": d.spec_hash, "name": d.spec.get("name"),
                         "version": d.spec.get("version"), "settings": d.spec.get("settings", {}),
                         "scan_date": d.scan_date, "rule": rule, "n_scored": int(d.present.sum()),
                         "n_ok": int(d.ok.sum()), "n_failed": int((d.present & ~d.ok).sum()),
                         "status_counts": d.status_counts, "excluded": excluded_all,
                         "n_text_differs": int((d.present & d.text_differs).sum()),
                         "ranking_score": d.ranking or {"field": "oriented", "note": "given by the caller"},
                         "operating_point": operating, "corpora": list(d.corpora),
                         "groups": [g.id for g in groups if j in g.detectors]})
        base = {"detector": d.label, "version": d.spec.get("version"), "scan_date": d.scan_date}
        elig_rank = test & rank & rl.headline
        elig_order = mgrouped.argsort_scores(d.oriented[elig_rank]) if elig_rank.any() else None
        head_thresholds: dict[float, dict[str, Any]] = dict(fixed)
        head_neg = test & scope & rl.headline & (lab == roles.NEGATIVE_CODE)
        member = test & scope & rl.table
        # Table 1: one row per group the detector belongs to, over that group's texts.
        gblocks = _blocks(ctx, group_codes, len(groups), member, f"{d.label} / table 1", [g.id for g in groups],
                          fixed_thresholds=fixed or None, base=elig_rank, base_order=elig_order)
        for gi, g in enumerate(groups):
            if j not in g.detectors:
                continue
            in_g = group_codes == gi
            hz, hz_why = _hazards(d, pool & rl.headline & in_g)
            ex = _excluded(d, dec, pool & rl.headline & in_g, scope)
            table1.append({**base, **gblocks[gi], "rule_defined": dec.defined, "operating_point": operating,
                           "excluded_n": sum(ex.values()), "excluded": ex, "hazards": hz, "hazards_reason": hz_why,
                           "group": g.id})
        for kind, values, codes in kinds:
            if kind in DERIVED_SLICES:
                blocks = _blocks(ctx, codes, len(values), test & scope & derived, f"{d.label} / {kind}", values,
                                 negatives=head_neg, fixed_thresholds=head_thresholds)
            else:
                blocks = _blocks(ctx, codes, len(values), member, f"{d.label} / {kind}", values,
                                 fixed_thresholds=fixed or None, base=elig_rank, base_order=elig_order)
            for i, value in enumerate(values):
                b = blocks[i]
                if kind == "all":
                    if not fixed:
                        head_thresholds = {t: {"threshold": b[tpr_key(t)]["threshold"],
                                               "source": "headline " + IN_SAMPLE,
                                               "n_human": b[tpr_key(t)]["n_human"],
                                               "human": np.sort(d.oriented[elig_rank & (lab == roles.NEGATIVE_CODE)])}
                                           for t in proto.tpr_at_fpr}
                elif b["human_n"] or b["ai_n"] or b["edited_n"] or b["mixed_n"] or b["ranked_n"]:
                    # A slice the detector scored nothing in gets no row (e.g. a detector
                    # restricted to one corpus); its absence is the information.
                    row = {**base, "slice_type": kind, "slice": value, **b}
                    if kind in DERIVED_SLICES:
                        row["members"] = DERIVED_MEMBERS
                    table2.append(row)
                if kind in ("all", "subgroup"):
                    for li, labname in enumerate(LABEL_ORDER):
                        key = {roles.NEGATIVE_CODE: "fpr", roles.POSITIVE_CODE: "catch_rate"}.get(li)
                        side = roles.SIDE_COLUMN.get(labname)
                        nn = b["human_n"] if li == roles.NEGATIVE_CODE else b["ai_n"] if li == roles.POSITIVE_CODE \
                            else b[f"{side}_n"]
                        if not nn:
                            continue
                        rk = key or f"{side}_rate"
                        flagged = (b["false_positives"] if li == roles.NEGATIVE_CODE else b["detections"]
                                   if li == roles.POSITIVE_CODE else b[f"{side}_flagged"])
                        rates.append({"detector": d.label, "subgroup": value, "label": labname,
                                      "role": labels.LABEL_ROLES[labname], "n": nn, "flagged": flagged,
                                      "rate": b[rk], "ci95": b[f"{rk}_ci95"], "reason": b[f"{rk}_reason"],
                                      "split": split_name})
        # Side rows: arms with the side role and derived texts, one row per group.
        if side_names:
            blocks = _blocks(ctx, side_codes, len(side_names), test & scope & (side_codes >= 0), f"{d.label} / side",
                             side_names, negatives=head_neg, fixed_thresholds=head_thresholds)
            for i, name in enumerate(side_names):
                b = blocks[i]
                if b["human_n"] or b["ai_n"] or b["edited_n"] or b["mixed_n"] or b["ranked_n"]:
                    gtype, _, gval = name.partition("=")
                    side_rows.append({**base, "group": name, "group_type": gtype, "group_value": gval, **b})
        curves[d.label] = _curves(d, elig_rank, test & rank & rl.table, lab, curve_points, hist_bins)

    names = [d.label for d in dets]
    agreement = []
    for g in groups:
        agreement += _agreement([k for k in kinds if k[0] not in DERIVED_SLICES], main & g.mask, lab, counted_mat,
                                flag_mat, np.array([j in g.panel for j in range(len(dets))], dtype=bool), names,
                                group=g.id)
    robustness = robustness_rows(
        docs.doc_id, lab, docs.tags, docs.source_id, docs.variant, docs.arm, test,
        [{"name": d.label, "scope": scopes[j], "scored": scopes[j] & d.ok, "counted": decisions[j].counted,
          "flagged": decisions[j].flagged, "defined": decisions[j].defined, "reason": decisions[j].reason}
         for j, d in enumerate(dets)], alpha)
    stats = _comparisons(docs, dets, decisions, ctxs, rl, test, groups, kinds, proto)
    n_boot_blocks = sum(c.n_blocks for c in ctxs)
    return {
        "run": {**(run_meta or {}), "split": split_info, "interval_method": "wilson", "confidence": proto.confidence,
                "auroc_ci_method": proto.auroc_ci, "n_documents": int(n), "roles": roles.describe(),
                "arms": dict(proto.arms), "flag_rule": mthr.FLAG_RULE,
                "slices": {"kinds": kind_names, "added": added_kinds,
                           "note": (f"{', '.join(added_kinds)} added: the selection holds derived texts; their Table 2 "
                                    "rows count the derived texts only" if added_kinds else None)},
                "tpr_ci": {"method": TPR_CI_METHOD, "n_boot": proto.bootstrap_n, "seed": proto.seed,
                           "confidence": proto.confidence, "blocks": n_boot_blocks}},
        "detectors": det_rows,
        "rates": rates,
        "agreement": agreement,
        "table1_groups": [g.to_dict(names) for g in groups],
        "table1": table1,
        "table2": table2,
        "side_rows": side_rows,
        "robustness": robustness,
        **stats,
        "curves": curves,
        "warnings": warn_list,
    }


def _curves(d: DetArrays, elig_rank: np.ndarray, sel: np.ndarray, lab: np.ndarray, curve_points: int,
            hist_bins: int) -> dict[str, Any]:
    """ROC (headline human vs ai) and score histograms per label, test split."""
    cur: dict[str, Any] = {}
    hm, am = elig_rank & (lab == roles.NEGATIVE_CODE), elig_rank & (lab == roles.POSITIVE_CODE)
    if hm.any() and am.any():
        ys = np.concatenate([np.zeros(hm.sum(), np.int8), np.ones(am.sum(), np.int8)])
        ss = np.concatenate([d.oriented[hm], d.oriented[am]])
        rc = mroc.roc_curve_points(ys, ss, max_points=curve_points)
        cur["roc"] = {"fpr": [float(x) for x in rc.fpr], "tpr": [float(x) for x in rc.tpr]}
    if sel.any():
        vals = d.oriented[sel]
        edges = np.histogram_bin_edges(vals, bins=hist_bins)
        rk = d.ranking or {}
        is_p = rk.get("field") == "ai_probability" or (rk.get("field") == "raw" and rk.get("scales") == ["p_ai"]) \
            or (not rk and np.isfinite(d.p[sel]).all() and np.array_equal(d.p[sel], vals))
        cur["hist"] = {"edges": [float(x) for x in edges], "score": "ai_probability" if is_p else
                       "oriented native score" + (f" ({', '.join(rk['scales'])})" if rk.get("scales") else "")}
        for li, labname in enumerate(LABEL_ORDER):
            lm = sel & (lab == li)
            if lm.any():
                cur["hist"][labname] = [int(x) for x in np.histogram(d.oriented[lm], bins=edges)[0]]
    return cur


NO_COMPARISONS = "the protocol declares no [comparisons] and no [[gaps]]"


def _comparisons(docs: DocArrays, dets: list[DetArrays], decisions: list[Decision], ctxs: list[_Ctx],
                 rl: roles.DocumentRoles, test: np.ndarray, groups: list[Any],
                 kinds: list[tuple[str, list[str], np.ndarray]], proto: Protocol) -> dict[str, Any]:
    """Issue 14's keys from the protocol's ``[comparisons]`` and ``[[gaps]]``
    (:func:`veribench.evaluate.comparisons.compute_comparisons`).

    Headline test texts only (y from the role table; -1 elsewhere). Scores: the ranking
    score of the texts each detector scored ok; flags: its decision rule's, on the texts
    the rule judged. Slices: ``all`` and each Table 2 slice value (not the derived slices),
    within each Table 1 group, comparing the group's detectors; with several groups each
    slice name starts with the group id (``corpus:liang2023 · subgroup=TOEFL_real_91``).
    """
    cfg, gaps = proto.comparisons, list(proto.gaps)
    if (cfg is None and not gaps) or (cfg is not None and not cfg.enabled):
        why = NO_COMPARISONS if cfg is None else "[comparisons] enabled = false"
        return {"comparisons": [], "gaps": [], "significance": [], "tiers": [],
                "corrections": {"enabled": False, "reason": why}}
    y = np.where(test, rl.y, -1).astype(np.int64)
    inputs = [DetectorInput(d.label, np.where(c.rank, d.oriented, np.nan), dec.flagged & dec.counted,
                            score_valid=c.rank, flag_valid=dec.counted if dec.defined else np.zeros(len(docs), bool),
                            rule_reason=None if dec.defined else dec.reason)
              for d, dec, c in zip(dets, decisions, ctxs)]
    names = [d.label for d in dets]
    slices: dict[str, np.ndarray] = {}
    members: dict[str, list[str]] = {}
    for g in groups:
        prefix = f"{g.id} · " if len(groups) > 1 else ""
        for kind, values, codes in kinds:
            if kind in DERIVED_SLICES:
                continue
            for i, value in enumerate(values):
                m = g.mask & (codes == i)
                if not (m & (y >= 0)).any():
                    continue
                key = prefix + ("all" if kind == "all" else f"{kind}={value}")
                slices[key] = m
                members[key] = [names[j] for j in g.detectors]
    columns = {kind: docs.column(kind) for kind, _, _ in kinds if kind != "all" and kind not in DERIVED_SLICES}
    conf = cfg if cfg is not None else {"enabled": True}
    if cfg is None:  # gaps declared, no pairwise comparisons planned
        out = compute_comparisons(y, inputs, {}, conf, gaps=gaps, columns=columns, confidence=proto.confidence)
        out["corrections"]["note"] = "no [comparisons] declared: gap rows only, Holm's correction over the gap family"
        return out
    return compute_comparisons(y, inputs, slices, conf, gaps=gaps, columns=columns, confidence=proto.confidence,
                               slice_detectors=members)


def _agreement(kinds: list[tuple[str, list[str], np.ndarray]], member: np.ndarray, lab: np.ndarray,
               counted: np.ndarray, flagged: np.ndarray, panel: np.ndarray, names: list[str],
               group: str | None = None) -> list[dict[str, Any]]:
    """Texts flagged by at least one and by every detector, per slice and label.

    ``panel``: the detectors that may take part (the group's agreement panel, each with a
    decision rule; docs/labels.md §8). A row's detectors are those of the panel that counted
    at least one text of the row; the row counts only the texts every one of them counted
    (``n``), and says how many texts some but not all of them counted (``n_partial``, left out)."""
    out: list[dict[str, Any]] = []
    use = np.flatnonzero(panel)
    if use.size == 0:
        return out
    C, F = counted[use], flagged[use] & counted[use]
    nl = len(LABEL_ORDER)
    for kind, values, codes in kinds:
        g = len(values)
        m = member & (codes >= 0) & (lab < nl)
        if not m.any():
            continue
        key = np.where(m, codes * nl + lab, -1)
        km = key[m]
        # participation[j, row]: detector j counted at least one text of the row
        part = np.zeros((use.size, g * nl), dtype=bool)
        for jj in range(use.size):
            part[jj] = np.bincount(km[C[jj][m]], minlength=g * nl) > 0
        P = part[:, km]  # (detectors, texts): detector takes part in the text's row
        Cm, Fm = C[:, m], F[:, m]
        n_part = P.sum(axis=0)
        all_counted = (n_part > 0) & ~(P & ~Cm).any(axis=0)
        some = (P & Cm).any(axis=0)
        by_any = all_counted & (P & Fm).any(axis=0)
        by_all = all_counted & ~(P & ~Fm).any(axis=0)
        n_r = np.bincount(km[all_counted], minlength=g * nl)
        partial_r = np.bincount(km[some & ~all_counted], minlength=g * nl)
        any_r = np.bincount(km[by_any], minlength=g * nl)
        all_r = np.bincount(km[by_all], minlength=g * nl)
        for r in np.flatnonzero(part.any(axis=0)):
            i, li = divmod(int(r), nl)
            dets_r = [names[use[jj]] for jj in range(use.size) if part[jj, r]]
            out.append({"subgroup": values[i], "slice_type": kind, "label": LABEL_ORDER[li],
                        "n": int(n_r[r]), "n_partial": int(partial_r[r]), "n_detectors": len(dets_r),
                        "detectors": dets_r, "flagged_by_any": int(any_r[r]), "flagged_by_all": int(all_r[r]),
                        "group": group})
    return out
