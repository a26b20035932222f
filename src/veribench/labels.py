"""The label-role table: which corpus labels are the positive class (AI), which the
negative class (human), and which are reported on their own rows ("side").

This is the one place these roles live, as data. Metrics read them from here
(:func:`veribench.metrics.as_binary`); the protocol model adds the arm roles and derived
documents on top (:mod:`veribench.protocol.roles`); ``docs/labels.md`` states the same
rules in words.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

NEGATIVE = "negative"
POSITIVE = "positive"
SIDE = "side"

#: The label-role table (source: ``docs/spec/002``, "Mixed-arm documents are reported
#: separately and never blended into headline rates"; CONTRACTS "Label roles").
LABEL_ROLES: Mapping[str, str] = MappingProxyType({
    "human": NEGATIVE,
    "ai": POSITIVE,
    "ai-edited-human": SIDE,
    "mixed": SIDE,
})
#: Every label, in the order of the integer label codes used by the evaluation.
LABELS: tuple[str, ...] = tuple(LABEL_ROLES)
POSITIVE_LABELS: tuple[str, ...] = tuple(k for k, v in LABEL_ROLES.items() if v == POSITIVE)
NEGATIVE_LABELS: tuple[str, ...] = tuple(k for k, v in LABEL_ROLES.items() if v == NEGATIVE)
SIDE_LABELS: tuple[str, ...] = tuple(k for k, v in LABEL_ROLES.items() if v == SIDE)
