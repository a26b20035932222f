"""Pure computation of a run's results from arrays (no I/O).

Inputs are column arrays over the selected documents (:class:`DocArrays`) and, per
detector, score arrays aligned to them (:class:`DetArrays`). The output is the run
results dict documented in ``docs/results-schema.md`` (rates, agreement, table1,
table2, curves), with ``None`` for undefined values, never NaN.

Conventions (one place):
- Positive class = label ``ai``. Negative class = label ``human``. Headline rates
  (Table 1) use only these two labels; ``ai-edited-human`` and ``mixed`` are reported
  on their own columns and rows and never blended in.
- Catch rate (TPR) = flagged AI / AI scored; false-positive rate = flagged human /
  human scored; balanced accuracy = (TPR + 1 - FPR) / 2. Every rate carries its
  count and a Wilson interval (Wilson 1927, via statsmodels).
- AUROC is computed on the oriented score (higher = more AI), human vs ai, with a
  DeLong (Sun & Xu 2014) or seeded bootstrap interval, as the protocol says.
- Only test-split documents count, unless the protocol declares no split.
- Scores whose status is not ``ok`` are excluded from rates and counted as failures.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..metrics import grouped as mgrouped
from ..metrics import rates as mrates
from ..metrics import roc as mroc
from ..metrics import thresholds as mthr
from ..protocol.model import AI_VERDICTS, DecisionRule, Protocol
from ..protocol.split import calibration_mask

HEADLINE_POS = "ai"
HEADLINE_NEG = "human"
SIDE_LABELS = ("ai-edited-human", "mixed")


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
    or NaN; ``raw``: native value or NaN; ``oriented``: higher = more AI, or NaN;
    ``verdict``: lower-cased verdict or None; ``text_differs``: the submitted text's
    hash differs from the document's.
    """

    label: str
    spec: dict[str, Any]
    spec_hash: str
    rule: DecisionRule
    present: np.ndarray
    ok: np.ndarray
    p: np.ndarray
    raw: np.ndarray
    oriented: np.ndarray
    verdict: np.ndarray
    text_differs: np.ndarray
    scan_date: str | None = None
    status_counts: dict[str, int] = field(default_factory=dict)


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


def _rate(k: int, n: int, alpha: float) -> dict[str, Any]:
    r = mrates.wilson(int(k), int(n), alpha=alpha)
    return {"n": int(n), "k": int(k), "rate": _f(r.rate), "ci95": [_f(r.lo), _f(r.hi)] if r.lo is not None else None,
            "reason": r.reason}


def flags_for(det: DetArrays, threshold: float | None) -> tuple[np.ndarray, np.ndarray]:
    """(valid, flagged) bool arrays under the detector's rule (``threshold`` for fitted rules)."""
    rule = det.rule
    if rule.fit:
        vals = det.oriented
        valid = det.ok & np.isfinite(vals)
        with np.errstate(invalid="ignore"):
            flagged = valid & (vals > threshold) if threshold is not None else np.zeros_like(valid)
        return valid, flagged
    if rule.field == "verdict":
        ai = set(rule.ai_values) or set(AI_VERDICTS)
        valid = det.ok & np.array([v is not None for v in det.verdict], dtype=bool)
        flagged = valid & np.array([v in ai if v is not None else False for v in det.verdict], dtype=bool)
        return valid, flagged
    vals = {"ai_probability": det.p, "raw": det.raw, "oriented": det.oriented}[rule.field]
    valid = det.ok & np.isfinite(vals)
    thr = rule.threshold
    with np.errstate(invalid="ignore"):
        cmp = {">": vals > thr, ">=": vals >= thr, "<": vals < thr, "<=": vals <= thr}[rule.op]
    return valid, valid & cmp


def _pct(t: float) -> str:
    v = t * 100
    return str(int(v)) if float(v).is_integer() else f"{v:g}".replace(".", "_")


#: Label codes used internally: index into LABEL_ORDER.
LABEL_ORDER = ("human", "ai", "ai-edited-human", "mixed")


def _slice_codes(docs: DocArrays, proto: Protocol) -> list[tuple[str, list[str], np.ndarray]]:
    """Per slice kind: (kind, group values, int code per document; -1 = not in any group).

    The first entry is the ``all`` kind with one group."""
    n = len(docs)
    out: list[tuple[str, list[str], np.ndarray]] = [("all", ["all"], np.zeros(n, dtype=np.int64))]
    for kind in proto.slices:
        col = docs.column(kind)
        present = np.array([v is not None for v in col], dtype=bool)
        codes = np.full(n, -1, dtype=np.int64)
        if present.any():
            vals, inv = np.unique(col[present].astype(str), return_inverse=True)
            codes[present] = inv
            out.append((kind, [str(v) for v in vals], codes))
    return out


def _wilson_rows(k: np.ndarray, n: np.ndarray, alpha: float) -> list[dict[str, Any]]:
    rate, lo, hi = mrates.wilson_arrays(k, n, alpha)
    rows = []
    for i in range(len(n)):
        if n[i] == 0:
            rows.append({"n": 0, "k": int(k[i]), "rate": None, "ci95": None, "reason": mrates.NO_DOCUMENTS})
        else:
            rows.append({"n": int(n[i]), "k": int(k[i]), "rate": float(rate[i]), "ci95": [float(lo[i]), float(hi[i])],
                         "reason": None})
    return rows


def _slice_blocks(lab: np.ndarray, valid: np.ndarray, flagged: np.ndarray, ok: np.ndarray, score: np.ndarray,
                  codes: np.ndarray, values: list[str], test: np.ndarray, proto: Protocol, alpha: float,
                  ctx: str, warn_list: list[str], base: np.ndarray | None = None,
                  base_order: np.ndarray | None = None) -> tuple[list[dict[str, Any]], dict[int, list[dict[str, Any]]]]:
    """Metric blocks for every group of one slice kind, computed in one vectorised pass.

    ``base``/``base_order``: the rows eligible for AUROC (test, ok, finite, human or ai) and
    the argsort of their scores, computed once per detector and shared by every slice kind.

    Returns (blocks per group, per-label Wilson rows per group keyed by label code)."""
    g = len(values)
    inside = test & (codes >= 0)
    nl = len(LABEL_ORDER)
    # One bincount over (group, label) pairs for the scored rows, one for the flagged ones.
    vm = inside & valid & (lab < nl)
    key = codes[vm] * nl + lab[vm]
    n_gl = np.bincount(key, minlength=g * nl).reshape(g, nl)
    k_gl = np.bincount(key[flagged[vm]], minlength=g * nl).reshape(g, nl)
    per_label: dict[int, list[dict[str, Any]]] = {li: _wilson_rows(k_gl[:, li], n_gl[:, li], alpha) for li in range(nl)}
    # Threshold-free metrics on the oriented score, human vs ai, over every ok score
    # (also when the decision rule gives no flag, e.g. a statistic without threshold).
    sel = inside & ok & np.isfinite(score) & (lab <= 1)
    auc = np.full(g, np.nan)
    lo = np.full(g, np.nan)
    hi = np.full(g, np.nan)
    tprs: dict[float, Any] = {}
    sk = codes[sel] * 2 + lab[sel]
    cnt = np.bincount(sk, minlength=2 * g).reshape(g, 2)
    n_neg, n_pos = cnt[:, 0], cnt[:, 1]
    if ((n_pos > 0) & (n_neg > 0)).any():  # else every group lacks a class: nothing to rank
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            order = None
            if base is not None and base_order is not None:
                # Restrict the shared score order to this kind's rows, renumbered.
                keep = sel[base]
                rank_in_sel = np.cumsum(keep) - 1
                bo = base_order[keep[base_order]]
                order = rank_in_sel[bo]
            gs = mgrouped.GroupedScores(codes[sel], lab[sel], score[sel], n_groups=g, score_order=order)
            if proto.auroc_ci == "delong":
                ga = gs.auroc(alpha=alpha, warn=False)
                auc, lo, hi = ga.auc, ga.lo, ga.hi
            else:  # seeded bootstrap per group (documented; slower)
                for i in range(g):
                    m = codes[sel] == i
                    if n_pos[i] and n_neg[i]:
                        r = mroc.auroc_ci(lab[sel][m], score[sel][m], alpha=alpha, method="bootstrap",
                                          n_boot=proto.bootstrap_n, seed=proto.seed)
                        auc[i], lo[i], hi[i] = r.auc, r.lo, r.hi
            for t in proto.tpr_at_fpr:
                tprs[t] = gs.tpr_at_fpr(t, warn=False)
        for w in caught:
            warn_list.append(f"{ctx}: {w.message}")
    blocks = []
    for i in range(g):
        hr, ar = per_label[0][i], per_label[1][i]
        b: dict[str, Any] = {
            "human_n": hr["n"], "false_positives": hr["k"], "fpr": hr["rate"], "fpr_ci95": hr["ci95"],
            "ai_n": ar["n"], "detections": ar["k"], "catch_rate": ar["rate"], "catch_rate_ci95": ar["ci95"],
            "balanced_accuracy": _f(mthr.balanced_accuracy(ar["rate"], hr["rate"]))
            if hr["rate"] is not None and ar["rate"] is not None else None,
        }
        for li, key in ((2, "edited"), (3, "mixed")):
            r = per_label[li][i]
            b[f"{key}_n"], b[f"{key}_flagged"], b[f"{key}_rate"], b[f"{key}_rate_ci95"] = r["n"], r["k"], r["rate"], r["ci95"]
        defined = bool(n_pos[i] and n_neg[i])
        if not defined:
            why = "no human texts" if not n_neg[i] else "no AI texts"
            warn_list.append(f"{ctx}={values[i]}: AUROC undefined ({why})")
        a = _f(auc[i]) if defined else None
        b["auroc"] = a
        b["auroc_ci95"] = [_f(lo[i]), _f(hi[i])] if a is not None and np.isfinite(lo[i]) else None
        b["auroc_method"] = proto.auroc_ci if a is not None else None
        for t in proto.tpr_at_fpr:
            key = f"tpr_at_fpr_{_pct(t)}"
            if not defined:
                b[key] = {"tpr": None, "threshold": None, "achieved_fpr": None, "reason": why}
            else:
                r = tprs[t]
                b[key] = {"tpr": _f(r.tpr[i]), "threshold": _f(r.threshold[i]), "achieved_fpr": _f(r.achieved_fpr[i]),
                          "reason": r.reasons[i]}
        blocks.append(b)
    return blocks, per_label


def compute_results(docs: DocArrays, dets: list[DetArrays], proto: Protocol, *, run_meta: dict[str, Any] | None = None,
                    curve_points: int = 200, hist_bins: int = 30) -> dict[str, Any]:
    """Compute every table of a run.

    Args:
        docs: selected documents.
        dets: detector score arrays aligned to ``docs``.
        proto: the protocol (rules, split, metrics, slices).
        run_meta: the ``run`` block to embed (id, tag, protocol hash, dates).

    Returns:
        The results dict (``run``, ``detectors``, ``rates``, ``agreement``, ``table1``,
        ``table2``, ``curves``, ``warnings``).
    """
    alpha = 1.0 - proto.confidence
    n = len(docs)
    warn_list: list[str] = []
    label_idx = {lab: i for i, lab in enumerate(LABEL_ORDER)}
    lab = np.fromiter((label_idx.get(x, 9) for x in docs.label), dtype=np.int8, count=n)
    is_human = lab == 0
    if proto.split_rule == "hash":
        elig = np.isin(docs.corpus, list(proto.split_corpora)) if proto.split_corpora else None
        calib = calibration_mask(list(docs.doc_id), is_human, list(docs.group_key), every=proto.split_every,
                                 salt=proto.split_salt, eligible=elig)
    else:
        calib = np.zeros(n, dtype=bool)
    test = ~calib
    split_info = {"rule": "hash" if proto.split_rule == "hash" else "none", "every": proto.split_every,
                  "salt": proto.split_salt, "corpora": list(proto.split_corpora),
                  "calibration_n": int(calib.sum()), "test_n": int(test.sum())}
    kinds = _slice_codes(docs, proto)
    det_rows, rates, table1, table2, curves = [], [], [], [], {}
    flag_mat = np.zeros((len(dets), n), dtype=bool)
    valid_mat = np.zeros((len(dets), n), dtype=bool)
    split_name = "test" if proto.split_rule == "hash" else "all"
    for j, d in enumerate(dets):
        thr = None
        thr_source = d.rule.source
        if d.rule.fit:
            cm = calib & d.ok & np.isfinite(d.oriented) & (lab <= 1)
            yc = lab[cm].astype(np.int8)
            if cm.sum() == 0 or yc.min() == yc.max():
                warn_list.append(f"{d.label}: cannot fit a threshold: the calibration split lacks human or AI texts")
            else:
                thr = float(mthr.fit_threshold(yc, d.oriented[cm], rule=d.rule.fit, target_fpr=d.rule.target_fpr))
            thr_source = f"fitted on calibration split ({d.rule.fit}, n={int(cm.sum())})"
        valid, flagged = flags_for(d, thr)
        flag_mat[j], valid_mat[j] = flagged, valid
        rule = d.rule.to_dict()
        rule.update({"threshold": thr if d.rule.fit else d.rule.threshold, "source": thr_source,
                     "describe": d.rule.describe() if not d.rule.fit else f"oriented score > {thr}"})
        det_rows.append({"detector": d.label, "spec_hash": d.spec_hash, "name": d.spec.get("name"),
                         "version": d.spec.get("version"), "settings": d.spec.get("settings", {}),
                         "scan_date": d.scan_date, "rule": rule, "n_scored": int(d.present.sum()),
                         "n_ok": int(d.ok.sum()), "status_counts": d.status_counts,
                         "n_text_differs": int((d.present & d.text_differs).sum())})
        base = {"detector": d.label, "version": d.spec.get("version"), "scan_date": d.scan_date}
        elig = test & d.ok & np.isfinite(d.oriented) & (lab <= 1)
        elig_order = mgrouped.argsort_scores(d.oriented[elig]) if elig.any() else None
        for kind, values, codes in kinds:
            blocks, per_label = _slice_blocks(lab, valid, flagged, d.ok, d.oriented, codes, values, test, proto,
                                              alpha, f"{d.label} / {kind}", warn_list, elig, elig_order)
            for i, value in enumerate(values):
                b = blocks[i]
                if kind == "all":
                    table1.append({**base, **b})
                elif b["human_n"] or b["ai_n"] or b["edited_n"] or b["mixed_n"]:
                    # A slice the detector scored nothing in gets no row (e.g. a detector
                    # restricted to one corpus); its absence is the information.
                    table2.append({**base, "slice_type": kind, "slice": value, **b})
                if kind in ("all", "subgroup"):
                    for li, labname in enumerate(LABEL_ORDER):
                        r = per_label[li][i]
                        if r["n"]:
                            rates.append({"detector": d.label, "subgroup": value, "label": labname, "n": r["n"],
                                          "flagged": r["k"], "rate": r["rate"], "ci95": r["ci95"], "split": split_name})
        # Curves for plots: ROC (human vs ai) and score histograms per label, test split.
        sel = test & d.ok & np.isfinite(d.oriented)
        cur: dict[str, Any] = {}
        hm, am = sel & (lab == 0), sel & (lab == 1)
        if hm.any() and am.any():
            ys = np.concatenate([np.zeros(hm.sum(), np.int8), np.ones(am.sum(), np.int8)])
            ss = np.concatenate([d.oriented[hm], d.oriented[am]])
            rc = mroc.roc_curve_points(ys, ss, max_points=curve_points)
            cur["roc"] = {"fpr": [float(x) for x in rc.fpr], "tpr": [float(x) for x in rc.tpr]}
        if sel.any():
            vals = d.oriented[sel]
            edges = np.histogram_bin_edges(vals, bins=hist_bins)
            cur["hist"] = {"edges": [float(x) for x in edges],
                           "score": "ai_probability" if np.isfinite(d.p[sel]).all() else "oriented raw statistic"}
            for li, labname in enumerate(LABEL_ORDER):
                lm = sel & (lab == li)
                if lm.any():
                    cur["hist"][labname] = [int(x) for x in np.histogram(d.oriented[lm], bins=edges)[0]]
        curves[d.label] = cur

    agreement = []
    if dets:
        for kind, values, codes in kinds:
            m = test & (codes >= 0)
            scored = valid_mat[:, m]
            fl = flag_mat[:, m] & scored
            any_scored = scored.any(axis=0)
            by_any = fl.any(axis=0)
            by_all = (fl | ~scored).all(axis=0) & any_scored
            nd = scored.sum(axis=0)
            c = codes[m]
            g = len(values)
            n_g = np.bincount(c[any_scored], minlength=g)
            any_g = np.bincount(c[by_any], minlength=g)
            all_g = np.bincount(c[by_all], minlength=g)
            nd_g = np.zeros(g, dtype=np.int64)
            np.maximum.at(nd_g, c, nd)
            for i, value in enumerate(values):
                agreement.append({"subgroup": value, "slice_type": kind, "n": int(n_g[i]), "n_detectors": int(nd_g[i]),
                                  "flagged_by_any": int(any_g[i]), "flagged_by_all": int(all_g[i])})

    return {
        "run": {**(run_meta or {}), "split": split_info, "interval_method": "wilson", "confidence": proto.confidence,
                "auroc_ci_method": proto.auroc_ci, "n_documents": int(n)},
        "detectors": det_rows,
        "rates": rates,
        "agreement": agreement,
        "table1": table1,
        "table2": table2,
        "curves": curves,
        "warnings": warn_list,
    }
