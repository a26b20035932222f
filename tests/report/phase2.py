"""The issue-14/18 keys of a run's results, computed in the tests from a real run's per-document
rows, in exactly the shapes of CONTRACTS.md "Phase 2" (``table1_groups``, ``robustness``,
``comparisons``, ``gaps``, ``significance``, ``tiers``, ``corrections``, TPR ``ci95``).

The report renders these keys when ``veribench evaluate`` writes them; these tests build them
from the stored ``run_rows`` of a real run (``veribench.evaluate.comparisons`` for the paired
statistics, ``veribench.metrics`` for the intervals), so the report is tested on real
numbers before, and independently of, the evaluation code that will produce them.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import numpy as np

from veribench.evaluate.comparisons import DetectorInput, compute_comparisons, slice_masks
from veribench.metrics.paired import paired_rate_difference
from veribench.metrics.rates import wilson
from veribench.metrics.threshold_bootstrap import METHOD as TPR_METHOD
from veribench.metrics.threshold_bootstrap import tpr_at_fpr_interval

LIANG_GAP = {"slice": "subgroup", "group_a": "TOEFL_real_91", "group_b": "HewlettStudentEssay_real_88",
             "label_a": "non-native (TOEFL)", "label_b": "native (US 8th grade)", "metric": "fpr"}


def _rows(ws, run_id: str) -> list[dict[str, Any]]:
    cols = ["doc_id", "corpus", "label", "subgroup", "tags", "headline", "split", "detector", "status",
            "ranking_score", "counted", "flagged"]
    q = ws.query(f"SELECT {', '.join(cols)} FROM run_rows WHERE run_id = ? ORDER BY doc_id, detector", [run_id])
    return [dict(zip(cols, r)) for r in q]


def _rate(flags: list[bool]) -> dict[str, Any]:
    w = wilson(int(sum(flags)), len(flags))
    return {"k": w.k, "n": w.n, "rate": w.rate, "ci95": None if w.lo is None else [w.lo, w.hi], "reason": w.reason}


def augment(ws, results: dict[str, Any], gaps: list[dict[str, Any]] = (), n_boot: int = 200, seed: int = 0,
            corpus_slices: bool = True) -> dict[str, Any]:
    """A copy of ``results`` with the phase-2 keys computed from the run's stored rows."""
    res = copy.deepcopy(results)
    run_id = res["run"]["run_id"]
    rows = _rows(ws, run_id)
    dets = [d["detector"] for d in res["detectors"]]
    head = [r for r in rows if r["headline"] and r["split"] == "test"]
    doc_ids = sorted({r["doc_id"] for r in head})
    at = {d: i for i, d in enumerate(doc_ids)}
    n = len(doc_ids)
    meta: dict[str, dict[str, Any]] = {}
    for r in head:
        meta.setdefault(r["doc_id"], r)
    y = np.array([1 if meta[d]["label"] == "ai" else 0 if meta[d]["label"] == "human" else -1 for d in doc_ids])
    inputs = []
    counted_docs: dict[str, set[str]] = {d: set() for d in dets}
    corpora: dict[str, set[str]] = {d: set() for d in dets}
    for det in dets:
        score = np.full(n, np.nan)
        flag = np.zeros(n, dtype=bool)
        fvalid = np.zeros(n, dtype=bool)
        for r in head:
            if r["detector"] != det:
                continue
            i = at[r["doc_id"]]
            if r["status"] == "ok" and r["ranking_score"] is not None:
                score[i] = r["ranking_score"]
            if r["counted"]:
                fvalid[i] = True
                flag[i] = bool(r["flagged"])
                if r["label"] in ("human", "ai"):
                    counted_docs[det].add(r["doc_id"])
                    corpora[det].add(r["corpus"])
        inputs.append(DetectorInput(det, score, flag, flag_valid=fvalid))
    columns = {"corpus": [meta[d]["corpus"] for d in doc_ids], "subgroup": [meta[d]["subgroup"] for d in doc_ids]}
    slices = slice_masks({"corpus": columns["corpus"]} if corpus_slices else {}, n=n)
    comp = compute_comparisons(y, inputs, slices, gaps=list(gaps), columns=columns,
                               confidence=float(res["run"].get("confidence") or 0.95))
    res.update(comp)

    # table1_groups: one group per set of corpora the detectors have headline texts in.
    groups: dict[tuple[str, ...], list[str]] = {}
    for det in dets:
        groups.setdefault(tuple(sorted(corpora[det])), []).append(det)
    res["table1_groups"] = []
    gid_of = {}
    for c, members in groups.items():
        gid = "+".join(c) or "none"
        same = len({frozenset(counted_docs[m]) for m in members}) == 1
        docs = set().union(*(counted_docs[m] for m in members))
        res["table1_groups"].append({
            "id": gid, "title": ("Corpus " if len(c) == 1 else "Corpora ") + " + ".join(c), "corpora": list(c),
            "detectors": members, "documents": len(docs), "same_texts": same,
            "note": ("every detector of this table scored the same texts" if same else
                     "the detectors of this table scored the same corpora but not all the same texts")})
        for m in members:
            gid_of[m] = gid
    for r in res["table1"]:
        r["group"] = gid_of.get(r["detector"])

    # robustness: (attacked, unattacked source) pairs both counted, per detector and attack.
    src = {doc: json.loads(prov).get("source_id") for doc, prov in ws.query("SELECT doc_id, provenance FROM documents")
           if prov}
    by_key = {(r["doc_id"], r["detector"]): r for r in rows}
    pairs: dict[tuple[str, str, str, str], list[tuple[bool, bool]]] = {}
    for r in rows:
        tags = json.loads(r["tags"]) if r["tags"] else {}
        if tags.get("derivation") != "attack" or not r["counted"] or r["split"] != "test":
            continue
        s = by_key.get((src.get(r["doc_id"]), r["detector"]))
        if s is None or not s["counted"]:
            continue
        metric = "catch_rate" if r["label"] == "ai" else "fpr" if r["label"] == "human" else None
        if metric:
            pairs.setdefault((r["detector"], tags.get("attack"), "attack", metric), []).append(
                (bool(r["flagged"]), bool(s["flagged"])))
    res["robustness"] = []
    for (det, attack, deriv, metric), ps in sorted(pairs.items()):
        a, b = [p[0] for p in ps], [p[1] for p in ps]
        d = paired_rate_difference(np.array(a), np.array(b))
        res["robustness"].append({
            "detector": det, "attack": attack, "derivation": deriv, "metric": metric, "n_pairs": len(ps),
            "attacked": _rate(a), "source": _rate(b),
            "difference": {"estimate": d.estimate, "ci95": None if d.lo is None else [d.lo, d.hi],
                           "p_value": d.p_value, "test": d.test, "reason": d.reason}})

    # TPR at FPR: the threshold-refitting bootstrap interval.
    for t1 in res["table1"]:
        det = t1["detector"]
        ys, ss = [], []
        for r in head:
            if r["detector"] == det and r["status"] == "ok" and r["ranking_score"] is not None and \
                    r["label"] in ("human", "ai"):
                ys.append(1 if r["label"] == "ai" else 0)
                ss.append(r["ranking_score"])
        for key, blk in list(t1.items()):
            if key.startswith("tpr_at_fpr_") and isinstance(blk, dict) and len(set(ys)) == 2:
                iv = tpr_at_fpr_interval(np.array(ys), np.array(ss), blk["target_fpr"], n_boot=n_boot, seed=seed)
                blk["ci95"] = None if iv.lo is None else [iv.lo, iv.hi]
                blk["ci_method"] = TPR_METHOD
    res["run"]["tpr_ci"] = {"method": TPR_METHOD, "seed": seed, "n_resamples": n_boot}
    return res
