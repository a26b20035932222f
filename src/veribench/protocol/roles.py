"""The label-role table and the arm roles: which documents count in the headline rates.

This module is the one place (as data) that says which labels are the positive class,
which the negative class, and which are reported on their own rows; and which arms and
derived documents are kept out of the headline rates. Every metric
(:func:`veribench.metrics.as_binary`), table (:mod:`veribench.evaluate`), plot and bundle
reads it; ``docs/labels.md`` states the same rules in words.

Label roles (:data:`LABEL_ROLES`):

==================  ==========  ========================================================
label               role        where it is reported
==================  ==========  ========================================================
``human``           negative    headline false-positive rate (Table 1), Table 2
``ai``              positive    headline catch rate (Table 1), Table 2
``ai-edited-human`` side        its own columns ("Edited") and rows; never headline
``mixed``           side        its own columns ("Mixed") and rows; never headline
==================  ==========  ========================================================

Arm roles: a protocol's ``[arms]`` table declares each arm ``headline`` or ``side``;
undeclared arms default to :data:`DEFAULT_ARM_ROLES` (A, B and C headline, anything
else, C2 included, side). A document without an arm takes the ``headline`` role.

Derived documents (attacks, paraphrases, humanized outputs, edited drafts) carry
``tags["derivation"]`` (one of :data:`DERIVATIONS`) and are never headline.

So a document is **headline** when its label's role is positive or negative, its arm's
role is ``headline``, and it is not derived. A non-derived document with a side label is
reported in the side columns of Tables 1 and 2. A human or AI document of a side arm, and
every derived document, is reported in a **side row** of its group
(:func:`side_group`: ``arm=C2``, ``derivation=attack:homoglyph`` ...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from veribench.labels import LABEL_ROLES, LABELS, NEGATIVE, POSITIVE, SIDE

#: Arm roles.
HEADLINE = "headline"
ARM_ROLES = (HEADLINE, SIDE)

#: Column prefix of each side label in Tables 1 and 2 (``edited_n``, ``mixed_rate`` ...).
SIDE_COLUMN: Mapping[str, str] = MappingProxyType({"ai-edited-human": "edited", "mixed": "mixed"})

#: Arm roles when a protocol declares none for an arm (spec 002: arms A, B, C; sub-arm C2
#: "reported separately").
DEFAULT_ARM_ROLES: Mapping[str, str] = MappingProxyType({"A": HEADLINE, "B": HEADLINE, "C": HEADLINE})
#: Role of an arm that is neither declared nor in :data:`DEFAULT_ARM_ROLES`.
UNDECLARED_ARM_ROLE = SIDE

#: Tag naming how a derived document was made (CONTRACTS "Derived documents").
DERIVATION_TAG = "derivation"
DERIVATIONS = ("attack", "paraphrase", "humanize", "edit")
#: Tag naming the attack or humanizer of a derived document.
ATTACK_TAG = "attack"

#: Integer code of each label (index into :data:`LABELS`); unknown labels get ``UNKNOWN_CODE``.
LABEL_CODE: Mapping[str, int] = MappingProxyType({lab: i for i, lab in enumerate(LABELS)})
UNKNOWN_CODE = 9
NEGATIVE_CODE = LABEL_CODE["human"]
POSITIVE_CODE = LABEL_CODE["ai"]


def label_role(label: Any) -> str | None:
    """``negative``, ``positive`` or ``side`` for a corpus label; ``None`` when unknown."""
    return LABEL_ROLES.get(str(label)) if label is not None else None


def arm_role(arm: Any, declared: Mapping[str, str] | None = None) -> str:
    """``headline`` or ``side`` for an arm (``None``: no arm, headline).

    Args:
        arm: the document's arm.
        declared: ``{arm: role}`` from the protocol's ``[arms]`` table.
    """
    if arm is None:
        return HEADLINE
    a = str(arm)
    if declared and a in declared:
        return declared[a]
    return DEFAULT_ARM_ROLES.get(a, UNDECLARED_ARM_ROLE)


def derivation(tags: Mapping[str, Any] | None) -> str | None:
    """``attack:<name>`` / ``paraphrase`` ... for a derived document, else ``None``."""
    if not tags:
        return None
    d = tags.get(DERIVATION_TAG)
    if d is None or str(d) == "":
        return None
    name = tags.get(ATTACK_TAG)
    return f"{d}:{name}" if name else str(d)


def side_group(label: Any, arm: Any, tags: Mapping[str, Any] | None,
               declared: Mapping[str, str] | None = None) -> str | None:
    """The side row a document is reported in, or ``None`` when it belongs to the main tables.

    ``derivation=<how>[:<attack>]`` for derived documents; ``arm=<arm>`` for a human or AI
    document of a side arm. Documents with a side label (not derived) stay in the main
    tables' side columns, whatever their arm.
    """
    d = derivation(tags)
    if d is not None:
        return f"derivation={d}"
    if label_role(label) in (POSITIVE, NEGATIVE) and arm_role(arm, declared) == SIDE:
        return f"arm={arm}"
    return None


@dataclass(frozen=True)
class DocumentRoles:
    """Roles of n documents as arrays (see :func:`classify`).

    Attributes:
        code: int8 label code per document (index into :data:`LABELS`; 9 = unknown label).
        table: bool, the document belongs to the main tables (Table 1, Table 2, agreement).
        headline: bool, ``table`` and a positive or negative label: counts in headline rates.
        side: object array, the side-row group name or ``None``.
    """

    code: np.ndarray
    table: np.ndarray
    headline: np.ndarray
    side: np.ndarray

    @property
    def side_groups(self) -> list[str]:
        return sorted({s for s in self.side if s is not None})

    @property
    def y(self) -> np.ndarray:
        """int8 per document: 1 = headline AI, 0 = headline human, -1 = not headline (side)."""
        return np.where(self.headline, (self.code == POSITIVE_CODE).astype(np.int8), np.int8(-1)).astype(np.int8)


def label_codes(labels: Sequence[Any]) -> np.ndarray:
    """int8 label code per label (index into :data:`LABELS`; :data:`UNKNOWN_CODE` if unknown)."""
    return np.fromiter((LABEL_CODE.get(str(x), UNKNOWN_CODE) if x is not None else UNKNOWN_CODE for x in labels),
                       dtype=np.int8, count=len(labels))


def classify(labels: Sequence[Any], arms: Sequence[Any], tags: Sequence[Mapping[str, Any] | None] | None = None,
             declared: Mapping[str, str] | None = None) -> DocumentRoles:
    """Apply the role table to n documents.

    Args:
        labels, arms: per document (length n).
        tags: per document tag dicts (empty or ``None`` = no tags; may be an empty list).
        declared: the protocol's ``{arm: role}``.
    """
    n = len(labels)
    code = label_codes(labels)
    tg = list(tags) if tags is not None and len(tags) else [None] * n
    side = np.array([side_group(lab, arm, t, declared) for lab, arm, t in zip(labels, arms, tg)], dtype=object)
    known = code != UNKNOWN_CODE
    table = known & np.array([s is None for s in side], dtype=bool)
    headline = table & ((code == POSITIVE_CODE) | (code == NEGATIVE_CODE))
    return DocumentRoles(code=code, table=table, headline=headline, side=side)


def describe() -> dict[str, Any]:
    """The role table as JSON-ready data (embedded in every run's results)."""
    return {"labels": dict(LABEL_ROLES), "default_arm_roles": dict(DEFAULT_ARM_ROLES),
            "undeclared_arm_role": UNDECLARED_ARM_ROLE, "derivation_tag": DERIVATION_TAG,
            "rule": "headline = label role positive or negative, arm role headline, and not derived"}
