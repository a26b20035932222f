"""A run's inputs as arrays: the selected documents (:class:`DocArrays`, parallel columns)
and one detector's scores aligned to them (:class:`DetArrays`). Label codes (the role
table's order, :data:`LABEL_ORDER`) index the ``lab`` arrays of the other modules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from veribench import labels
from veribench.protocol.model import DecisionRule

#: Label codes used internally: index into LABEL_ORDER (the role table's label order).
LABEL_ORDER = labels.LABELS


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
    #: Per document, True for an undated arm-A text (:func:`veribench.protocol.arm_rules.undated`:
    #: no ``provenance.published``, no declared ``date_bound``); ``None``: not loaded.
    undated: np.ndarray | None = None
    #: Per document, its language (ISO 639-1, :mod:`veribench.text.language`; ``None``: none
    #: identified) and lingua's confidence in [0, 1] (NaN: none); ``None``: not loaded.
    language: np.ndarray | None = None
    language_confidence: np.ndarray | None = None
    #: Per document, its length band (:data:`veribench.evaluate.slices.LENGTH_BANDS`, words by
    #: :func:`veribench.text.words.word_count`); ``None``: not loaded (no ``length`` slice).
    length: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.doc_id)

    def column(self, slice_kind: str) -> np.ndarray:
        """Values of a slice kind (``subgroup``, ``arm``, ``kind``, ``corpus``, ``label``,
        ``language``, ``length`` or ``tag:<name>``); all ``None`` for a column not loaded."""
        if slice_kind.startswith("tag:"):
            key = slice_kind[4:]
            if not self.tags:
                return np.full(len(self), None, dtype=object)
            return np.array([t.get(key) if t else None for t in self.tags], dtype=object)
        col = getattr(self, slice_kind)
        return np.full(len(self), None, dtype=object) if col is None else col


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
    #: The languages the detector is declared for (:func:`veribench.registry.declared_languages`);
    #: ``None``: not declared (no text is excluded for its language).
    languages: tuple[str, ...] | None = None
    #: Per document: scored ok, but its language is outside :attr:`languages` (excluded from
    #: ``ok`` with the reason; the out-of-scope slice's texts); ``None``: nothing is out of scope.
    out_of_scope: np.ndarray | None = None
    #: Per document (object): the language's exclusion reason
    #: (:data:`veribench.evaluate.reasons.OUTSIDE_LANGUAGES`) of every text outside
    #: :attr:`languages`, whatever its scoring status (``status`` keeps that); ``None`` in scope.
    #: ``None`` as a whole: nothing is out of scope.
    scope_reason: np.ndarray | None = None
