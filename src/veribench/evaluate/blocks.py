"""The metric block of each group of one grouping (a Table 1 group, a Table 2 slice value, a
side row): counts, false-positive, catch and side-label rates with Wilson intervals,
balanced accuracy, AUROC with its interval, and TPR at each target FPR with its
bootstrap interval (:func:`_blocks`), each ``None`` with a reason where undefined.

- Rates: catch rate = flagged AI / AI counted; false-positive rate = flagged human /
  human counted; balanced accuracy = (catch rate + 1 - FPR) / 2 (Brodersen et al. 2010);
  each with a Wilson interval (Wilson 1927, via statsmodels).
- AUROC over the oriented native score, headline labels only (human vs ai), with a
  DeLong (Sun & Xu 2014) or seeded bootstrap interval.
- TPR at each target FPR, at a threshold set on the calibration split's human texts or
  at the headline operating point (``fixed_thresholds``), else in sample (an oracle
  operating point); its interval refits the threshold in every resample
  (:mod:`veribench.metrics.threshold_bootstrap`). A target that no threshold reaches on the
  human texts that set it is null with the reason
  (:func:`veribench.metrics.thresholds.unreachable_reason`, the grid's rule too); targets
  that select the same threshold carry ``threshold_note``; a calibration threshold names
  its corpus (``threshold_corpus``).
- No interval of zero width: a DeLong variance of 0 or a collapsed bootstrap gives
  ``null`` with the reason (:mod:`veribench.metrics.intervals`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from veribench.evaluate.arrays import LABEL_ORDER, DetArrays
from veribench.evaluate.decision import Decision
from veribench.evaluate.reasons import IN_SAMPLE, NO_AI, NO_HUMAN
from veribench.metrics import grouped as mgrouped
from veribench.metrics import rates as mrates
from veribench.metrics import roc as mroc
from veribench.metrics import thresholds as mthr
from veribench.metrics.intervals import BOOTSTRAP_ONE_VALUE, checked
from veribench.metrics.threshold_bootstrap import METHOD as TPR_CI_METHOD
from veribench.metrics.threshold_bootstrap import tpr_at_fpr_interval_scores
from veribench.protocol import roles
from veribench.protocol.model import Protocol


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
    ci_why: list[str | None] = [None] * g  # why an AUROC interval is missing (the method degenerated)
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
                ci_why = ga.ci_reasons()
            else:  # seeded bootstrap per group (documented; slower)
                for i in range(g):
                    m = rk_codes == i
                    if n_pos[i] and n_neg[i]:
                        r = mroc.auroc_ci(y[m], rk_score[m], alpha=alpha, method="bootstrap",
                                          n_boot=ctx.proto.bootstrap_n, seed=ctx.proto.seed)
                        auc[i], alo[i], ahi[i] = r.auc, r.lo, r.hi
                        ci_why[i] = r.reason
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
            b["auroc_ci95_reason"] = why or ci_why[i] or "interval undefined: fewer than 2 texts in a class"
        b["auroc_method"] = ctx.proto.auroc_ci if defined else None
        if neg_src is not None:
            b["auroc_negatives"] = neg_src[i]
        for t in ctx.proto.tpr_at_fpr:
            b[tpr_key(t)] = _tpr_block(ctx, t, i, codes, member, fixed_thresholds, insample, n_pos, n_neg,
                                       negatives)
        _note_same_thresholds(b, ctx.proto.tpr_at_fpr)
        blocks.append(b)
    return blocks


def _note_same_thresholds(b: dict[str, Any], targets: Any) -> None:
    """``threshold_note`` on the TPR blocks of one row whose targets select the same threshold
    (:func:`veribench.metrics.thresholds.same_threshold_notes`), so identical TPRs say why."""
    blocks = {t: b[tpr_key(t)] for t in targets if b[tpr_key(t)].get("tpr") is not None}
    if len(blocks) < 2:
        return
    n_h = {blk.get("threshold_n_human") or blk.get("n_human") for blk in blocks.values()}
    if len(n_h) != 1 or not next(iter(n_h)):
        return
    notes = mthr.same_threshold_notes(int(next(iter(n_h))), {t: blk["threshold"] for t, blk in blocks.items()})
    for t, note in notes.items():
        blocks[t]["threshold_note"] = note


def _tpr_block(ctx: _Ctx, t: float, i: int, codes: np.ndarray, member: np.ndarray,
               fixed: dict[float, dict[str, Any]] | None, insample: dict[float, Any], n_pos: np.ndarray,
               n_neg: np.ndarray, negatives: np.ndarray | None) -> dict[str, Any]:
    base = {"target_fpr": t}
    if fixed is not None:
        thr = fixed.get(t, {}).get("threshold")
        score = ctx.det.oriented
        inside = member & ctx.rank & (codes == i)
        ai = inside & (ctx.lab == roles.POSITIVE_CODE)
        hum = inside & (ctx.lab == roles.NEGATIVE_CODE)
        na, nh = int(ai.sum()), int(hum.sum())
        if fixed.get(t, {}).get("unreachable"):  # one rule with the grid: null with the reason, never 0,
            why = fixed[t]["unreachable"]       # and no threshold or achieved FPR of a point that is not one
            return {**base, "tpr": None, "k": None, "n": na, "threshold": None, "achieved_fpr": None,
                    "fp": None, "n_human": nh, "threshold_source": fixed[t].get("source"),
                    "threshold_n_human": fixed[t].get("n_human"), "threshold_corpus": fixed[t].get("threshold_corpus"),
                    "reason": why, "ci95": None, "ci95_reason": why, "ci_method": None}
        if thr is None:
            return {**base, "tpr": None, "k": None, "n": int(n_pos[i]), "threshold": None, "achieved_fpr": None,
                    "fp": None, "n_human": int(n_neg[i]), "threshold_source": (fixed.get(t) or {}).get("source"),
                    "reason": "no operating point: the headline texts give no threshold",
                    "ci95": None, "ci95_reason": "no operating point: the headline texts give no threshold",
                    "ci_method": None}
        with np.errstate(invalid="ignore"):
            k = int((score[ai] > thr).sum())
            fp = int((score[hum] > thr).sum())
        out = {**base, "tpr": (k / na) if na else None, "k": k, "n": na, "threshold": thr,
               "achieved_fpr": (fp / nh) if nh else None, "fp": fp if nh else None, "n_human": nh,
               "threshold_source": fixed[t]["source"], "threshold_n_human": fixed[t]["n_human"],
               "threshold_corpus": fixed[t].get("threshold_corpus"), "reason": None if na else NO_AI}
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
    why = mthr.unreachable_reason(int(r.n_human[i]), int(r.fp[i]), t, "this row's human texts")
    if why is not None:  # one rule with the grid: null with the reason, never 0
        return {**base, "tpr": None, "k": None, "n": int(r.n[i]), "threshold": None, "achieved_fpr": None,
                "fp": None, "n_human": int(r.n_human[i]),
                "threshold_source": IN_SAMPLE, "reason": why, "ci95": None, "ci95_reason": why, "ci_method": None}
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
    ci, why = checked(r.lo, r.hi, r.interval_reason, BOOTSTRAP_ONE_VALUE)
    return {"ci95": ci, "ci95_reason": why, "ci_method": TPR_CI_METHOD}
