"""The evaluation's split: the documents' roles (:func:`veribench.protocol.roles.classify`),
the calibration mask (:func:`veribench.protocol.split.calibration_mask`, by split group)
and its summary, under a protocol (:func:`split_documents`); and each document's split
group (:func:`split_groups`: a derived text follows its source).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from veribench.evaluate.arrays import DocArrays
from veribench.protocol import roles
from veribench.protocol.model import Protocol
from veribench.protocol.split import calibration_mask, split_summary


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
