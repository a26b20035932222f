"""The slices of Table 2: the slice kinds of a run (:func:`slice_kinds`: the protocol's, plus
``tag:attack`` when the selection holds derived texts) and each document's group code per
kind (:func:`_slice_codes`).

Built-in kinds besides the document fields: ``language`` (identified at import,
:mod:`veribench.text.language`) and ``length`` (:data:`LENGTH_BANDS`, :func:`length_band`).
FPR gaps between their groups, with intervals, are ``[[gaps]]`` entries like any slice's
(:mod:`veribench.evaluate.comparisons`).
"""

from __future__ import annotations

import numpy as np

from veribench.evaluate.arrays import DocArrays
from veribench.protocol import roles
from veribench.protocol.model import Protocol

#: The Table 2 slice of derived texts by attack (or humanizer) name; added when derived texts exist.
ATTACK_SLICE = f"tag:{roles.ATTACK_TAG}"
#: Slice kinds whose values only derived texts carry: their Table 2 rows count derived texts.
DERIVED_SLICES = (ATTACK_SLICE, f"tag:{roles.DERIVATION_TAG}")
DERIVED_MEMBERS = "derived texts (never headline); AUROC and TPR at FPR as in the side rows"
#: The ``length`` slice's bands, in words (:func:`veribench.text.words.word_count`):
#: ``(upper bound exclusive or None, name)``, in order; data, the one list. After FairOPT
#: (arXiv 2502.04528), which shows one global threshold flags short human texts more often.
LENGTH_BANDS: tuple[tuple[int | None, str], ...] = (
    (100, "under 100 words"), (301, "100 to 300 words"), (None, "over 300 words"))


def length_band(words: int) -> str:
    """The :data:`LENGTH_BANDS` name of a text of ``words`` words (>= 0): under 100, 100 to
    300 inclusive, over 300."""
    for upper, name in LENGTH_BANDS:
        if upper is None or words < upper:
            return name
    raise AssertionError("LENGTH_BANDS ends with an open band")


def reads_lengths(proto: Protocol) -> bool:
    """Whether an evaluation under ``proto`` reads each text's length band (so it needs the
    texts): its slices name ``length``, or it declares ``[thresholds] per_length``."""
    return "length" in proto.slices or proto.per_length


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
