"""A run's per-document rows (:func:`document_rows`): one row per (document, detector) with
its inputs and the decision, the rows each detector's tables are computed from.
"""

from __future__ import annotations

import json

import numpy as np

from veribench.evaluate.arrays import DetArrays, DocArrays
from veribench.evaluate.decision import Decision, decide
from veribench.evaluate.reasons import out_of_scope_reason
from veribench.evaluate.split import split_documents
from veribench.protocol import roles
from veribench.protocol.model import Protocol


def statuses(d: DetArrays) -> np.ndarray:
    """Per document (object), ``d``'s stored scoring status (``ok``, ``unsupported`` ...), or
    ``None`` where it has no score; ``ok``/``failed`` when the arrays carry no statuses."""
    if d.status is not None:
        return np.asarray(d.status, dtype=object)
    return np.where(d.ok | (d.out_of_scope if d.out_of_scope is not None else False), "ok",
                    np.where(d.present, "failed", None)).astype(object)


def exclusion_reasons(d: DetArrays, dec: Decision) -> np.ndarray:
    """Per document (object array of length n), why no rate of ``d`` counts it, or ``None``
    where the rule counts it: the one rule for Table 1's exclusion counts, the per-document
    rows (``export scores``) and ``export raid-submission``.

    Exactly one reason per text, first match: outside the detector's declared languages
    (``d.scope_reason``), whatever its scoring status, with that status kept when it is not
    ``ok`` (:data:`veribench.evaluate.reasons.OUTSIDE_WITH_STATUS`, e.g. ``"language ru is
    outside the detector's declared languages (scoring status: unsupported)"``); ``not
    scored``; its failed status (``unsupported``, ``too_short`` ...); ``no <field>`` (scored
    ok, but the rule's field is absent)."""
    n = d.ok.size
    why = np.full(n, None, dtype=object)
    if dec.defined:
        why[d.ok & ~dec.counted] = f"no {dec.field}"
    failed = np.flatnonzero(d.present & ~d.ok)
    why[failed] = _statuses_at(d, failed)  # only where needed: a 1M-text run has few failures
    why[~d.present] = "not scored"
    if d.scope_reason is not None:
        out = np.flatnonzero(np.asarray(d.scope_reason != None))  # noqa: E711 - elementwise
        st = _statuses_at(d, out)
        for j, i in enumerate(out):
            s = st[j] if d.present[i] else "not scored"
            why[i] = out_of_scope_reason(str(d.scope_reason[i]), str(s))
    return why


def _statuses_at(d: DetArrays, idx: np.ndarray) -> np.ndarray:
    """:func:`statuses` at the positions ``idx`` only (object array of ``len(idx)``)."""
    if d.status is not None:
        return np.asarray(d.status, dtype=object)[idx]
    oos = d.out_of_scope[idx] if d.out_of_scope is not None else False
    return np.where(d.ok[idx] | oos, "ok", np.where(d.present[idx], "failed", None)).astype(object)

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
        st = statuses(d)
        why = exclusion_reasons(d, dec)
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
