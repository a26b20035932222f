"""Robustness rows: each detector on attacked (or otherwise derived) texts beside the same
detector on their unattacked sources, paired over the same source texts. Pure: arrays in,
rows out.

A derived document (``tags["derivation"]`` set: an attack, a paraphrase, a humanized
output, a human edit) names its source in ``provenance["source_id"]`` and keeps the
source's label (docs/robustness.md). For one detector and one **variant** (the same
derivation, attack or humanizer name, parameters and seed, i.e. the same
``provenance["attack"]`` record; human edits: the same arm), the **pairs** are the
(derived document, its source) couples where

- both documents are in the run's selection and in the test split (a derived document
  follows its source's split group, :func:`veribench.evaluate.split.split_documents`),
- both are in the detector's scope, and
- the detector's decision rule judged both (each was scored validly: status ``ok`` and the
  field the rule reads present).

Per label there is one row: AI texts give ``metric = "catch_rate"``, human texts
``metric = "fpr"`` (RAID attacks human texts too, so the false-positive rate under attack is
measured). Side labels (``ai-edited-human``, ``mixed``) get no robustness row.

- ``attacked`` and ``source``: flagged / pairs, each with its Wilson interval (Wilson 1927,
  via statsmodels; :func:`veribench.metrics.rates.wilson`), over the **same** n pairs;
- ``difference``: attacked - source (a drop in catch rate is negative), with Newcombe's
  interval for paired proportions (Newcombe 1998, method 10) and McNemar's exact test
  (McNemar 1947; statsmodels): :func:`veribench.metrics.paired.paired_rate_difference`, the
  attacked flags as "a" and the source flags as "b".

Multiple comparisons: the rows' McNemar p-values form one family of the run's correction
(:func:`adjust_robustness`: Holm 1979 by default, the protocol's ``[comparisons]
correction``), stated in ``corrections.families`` beside the comparison and gap families;
each ``difference`` carries ``p_adjusted`` beside ``p_value``, and a change is called
significant only when ``p_adjusted`` is below alpha (a raw p of 0.031 among 15 rows is not).

Undefined values are ``None`` with a ``reason`` (no decision rule, no pairs, no discordant
pairs for the test), never NaN or 0. Documents that could not be paired are counted per
reason in ``unpaired``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from veribench.metrics import paired as mpaired
from veribench.metrics import rates as mrates
from veribench.protocol import roles

#: Metric of a robustness row per label code.
METRIC = {roles.POSITIVE_CODE: "catch_rate", roles.NEGATIVE_CODE: "fpr"}
NO_PAIRS = "no pairs: no derived text and its source were both scored validly by this detector"
NO_DISCORDANT = ("no discordant pairs (each derived text is flagged exactly when its source is): McNemar's test "
                 "has no information")
#: Reasons a derived document is left out of the pairs (``unpaired`` counts).
UNPAIRED = {
    "source": "source not in the selection",
    "split": "calibration split",
    "scope": "source outside the detector's scope",
    "derived": "derived text not scored validly",
    "source_scored": "source not scored validly",
}


def _variant_key(derivation: str, attack: str | None, variant: Any, arm: Any) -> tuple[str, str, str]:
    """(derivation, attack name, variant id): the documents of one robustness row."""
    name = attack or derivation
    if variant is None or variant == "":
        return derivation, name, f"arm={arm}"
    return derivation, name, variant if isinstance(variant, str) else json.dumps(variant, sort_keys=True)


ROBUSTNESS_FAMILY = ("every robustness row of this run (detector x variant x metric: derived texts against "
                     "their sources) whose McNemar p-value is defined")


def adjust_robustness(rows: list[dict[str, Any]], correction: str = "holm") -> dict[str, Any]:
    """Set ``difference.p_adjusted`` on every row (``None`` where ``p_value`` is ``None``) and
    return the family's description for ``corrections.families``.

    Args:
        rows: :func:`robustness_rows` output (changed in place).
        correction: ``"holm"`` (Holm 1979, step-down, via statsmodels'
            ``multipletests``: :func:`veribench.metrics.paired.adjust_pvalues`) or ``"none"``.

    Returns:
        ``{"name": "robustness", "size": m, "rows": len(rows), "correction", "description"}``
        with m the number of rows whose p-value is defined.
    """
    diffs = [r.get("difference") or {} for r in rows]
    adj = mpaired.adjust_pvalues([d.get("p_value") for d in diffs], correction)  # type: ignore[arg-type]
    for d, p in zip(diffs, adj, strict=True):
        d["p_adjusted"] = p
    return {"name": "robustness", "size": sum(d.get("p_value") is not None for d in diffs), "rows": len(rows),
            "correction": correction, "description": ROBUSTNESS_FAMILY}


def _rate(k: int | None, n: int, alpha: float, reason: str | None) -> dict[str, Any]:
    if reason is not None or n == 0:
        return {"k": None, "n": n, "rate": None, "ci95": None, "reason": reason or NO_PAIRS}
    r = mrates.wilson(int(k), n, alpha)
    return {"k": int(k), "n": n, "rate": r.rate, "ci95": [r.lo, r.hi], "reason": None}


def robustness_rows(doc_id: np.ndarray, label_code: np.ndarray, tags: Sequence[dict[str, Any]],
                    source_id: np.ndarray | None, variant: np.ndarray | None, arm: np.ndarray, test: np.ndarray,
                    detectors: Sequence[dict[str, Any]], alpha: float = 0.05) -> list[dict[str, Any]]:
    """One row per (detector, variant, metric) over the pairs defined in the module docstring.

    Args:
        doc_id, label_code, arm: per document (label codes of :mod:`veribench.protocol.roles`).
        tags: per document tag dicts (empty list: no tags).
        source_id: per document ``provenance["source_id"]`` (``None`` where not derived);
            ``None``: no document names a source (no rows).
        variant: per document ``provenance["attack"]`` (``{name, version, params, seed}``) as
            canonical JSON, or ``None`` (then the variant is the document's arm).
        test: bool, the document is in the test split (or there is no split).
        detectors: per detector ``{"name", "scope", "scored", "counted", "flagged",
            "defined", "reason"}`` with bool arrays aligned to the documents (``scored``: a
            score with status ok in scope; ``counted``/``flagged``: the decision rule's).
        alpha: 1 - confidence of the intervals.

    Returns:
        Rows ``{"detector", "attack", "derivation", "variant", "metric", "n_derived", "n_pairs",
        "unpaired", "attacked", "source", "difference"}``; ``attacked``/``source`` =
        ``{"k", "n", "rate", "ci95", "reason"}``; ``difference`` = ``{"estimate" (attacked -
        source), "ci95", "p_value", "p_adjusted" (set by :func:`adjust_robustness`), "test", "interval", "reason", "detail"}``.
    """
    n = len(doc_id)
    if source_id is None or not tags or n == 0:
        return []
    index = {str(d): i for i, d in enumerate(doc_id)}
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    for i in range(n):
        t = tags[i] or {}
        how = t.get(roles.DERIVATION_TAG)
        src = source_id[i]
        if not how or src is None or int(label_code[i]) not in METRIC:
            continue
        key = _variant_key(str(how), t.get(roles.ATTACK_TAG), variant[i] if variant is not None else None, arm[i])
        g = groups.setdefault(key, {"derived": [], "source": []})
        g["derived"].append(i)
        g["source"].append(index.get(str(src), -1))
    rows: list[dict[str, Any]] = []
    for det in detectors:
        scope, scored, counted, flagged = (np.asarray(det[k], dtype=bool) for k in ("scope", "scored", "counted",
                                                                                      "flagged"))
        for (how, name, var), g in sorted(groups.items()):
            der = np.asarray(g["derived"], dtype=np.int64)
            src = np.asarray(g["source"], dtype=np.int64)
            for code, metric in sorted(METRIC.items(), key=lambda kv: kv[1]):
                sel = (label_code[der] == code) & scope[der]
                if not sel.any():
                    continue
                d, s = der[sel], src[sel]
                unpaired = dict.fromkeys(UNPAIRED, 0)
                has_src = s >= 0
                unpaired["source"] = int((~has_src).sum())
                d, s = d[has_src], s[has_src]
                in_test = test[d] & test[s]
                unpaired["split"] = int((~in_test).sum())
                d, s = d[in_test], s[in_test]
                in_scope = scope[s]
                unpaired["scope"] = int((~in_scope).sum())
                d, s = d[in_scope], s[in_scope]
                judged = counted if det["defined"] else scored
                ok_d = judged[d]
                unpaired["derived"] = int((~ok_d).sum())
                ok_s = judged[s] & ok_d
                unpaired["source_scored"] = int((ok_d & ~judged[s]).sum())
                d, s = d[ok_s], s[ok_s]
                n_pairs = int(d.size)
                why = None if det["defined"] else det["reason"]
                fa, fs = flagged[d], flagged[s]
                row = {"detector": det["name"], "attack": name, "derivation": how,
                       "variant": json.loads(var) if var.startswith("{") else var, "metric": metric,
                       "n_derived": int(sel.sum()), "n_pairs": n_pairs,
                       "unpaired": {UNPAIRED[k]: v for k, v in unpaired.items() if v},
                       "attacked": _rate(int(fa.sum()), n_pairs, alpha, why),
                       "source": _rate(int(fs.sum()), n_pairs, alpha, why)}
                if why is not None or n_pairs == 0:
                    row["difference"] = {"estimate": None, "ci95": None, "p_value": None, "p_adjusted": None,
                                         "test": mpaired.MCNEMAR_TEST, "interval": mpaired.NEWCOMBE_PAIRED_INTERVAL,
                                         "reason": why or NO_PAIRS, "detail": {}}
                else:
                    res = mpaired.paired_rate_difference(fa, fs, alpha)
                    row["difference"] = {"estimate": res.estimate, "ci95": [res.lo, res.hi], "p_value": res.p_value,
                                         "p_adjusted": None, "test": res.test, "interval": res.interval,
                                         "reason": NO_DISCORDANT if res.reason == mpaired.NO_DISCORDANT else res.reason,
                                         "detail": dict(res.detail)}
                rows.append(row)
    return rows
