"""A run's per-document rows (:func:`document_rows`): one row per (document, detector) with
its inputs and the decision, the rows each detector's tables are computed from.
"""

from __future__ import annotations

import json

import numpy as np

from veribench.evaluate.arrays import DetArrays, DocArrays
from veribench.evaluate.decision import decide
from veribench.evaluate.split import split_documents
from veribench.protocol import roles
from veribench.protocol.model import Protocol


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
        bands = docs.length if proto.per_length else None
        dec = decide(d, scored, calib, rl.headline, lab, proto.split_rule == "hash", bands)
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
            "threshold": dec.thresholds(bands)[idx],
            "rule_defined": np.full(k, dec.defined), "counted": counted[idx], "flagged": flagged[idx],
            "excluded": why[idx],
        })
    if not parts:
        return {}
    return {key: np.concatenate([p_[key] for p_ in parts]) for key in parts[0]}
