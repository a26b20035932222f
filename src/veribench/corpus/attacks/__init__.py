"""Attacks as corpus operations: RAID's eleven attacks, recorded edits, derived arms.

- :data:`ATTACKS` (registry data, kind ``"attack"``): the eleven attacks of RAID
  (Dugan et al., ACL 2024; ``liamdugan/raid`` ``generation/adversarial/``), at RAID's
  default parameters, each overridable. :func:`create` builds one.
- :func:`attack_documents` derives one attacked document per selected source document
  (``veribench attack NAME``); :func:`humanize_arm` makes a new arm of humanized or
  paraphrased texts (``veribench derive-arm``); :func:`pairs` gives each derived
  document's source id, for paired evaluation.

How a derived document is stored is in :mod:`veribench.corpus.document` and
``docs/robustness.md``.
"""

from __future__ import annotations

from typing import Any

from ... import registry
from .base import Attack, AttackError, AttackResult, doc_seed  # noqa: F401

#: Built-in attacks: name -> "module:Class" (RAID's names).
ATTACKS: dict[str, str] = {
    "homoglyph": "veribench.corpus.attacks.rules:Homoglyph",
    "number": "veribench.corpus.attacks.rules:AlterNumbers",
    "article_deletion": "veribench.corpus.attacks.rules:ArticleDeletion",
    "insert_paragraphs": "veribench.corpus.attacks.rules:InsertParagraphs",
    "perplexity_misspelling": "veribench.corpus.attacks.lm:PerplexityMisspelling",
    "upper_lower": "veribench.corpus.attacks.rules:UpperLowerFlip",
    "whitespace": "veribench.corpus.attacks.rules:WhiteSpace",
    "zero_width_space": "veribench.corpus.attacks.rules:ZeroWidthSpace",
    "synonym": "veribench.corpus.attacks.lm:Synonym",
    "paraphrase": "veribench.corpus.attacks.paraphrase:Paraphrase",
    "alternative_spelling": "veribench.corpus.attacks.rules:AlternativeSpelling",
}
PLUGINS: dict[str, dict[str, str]] = {
    "attack": ATTACKS,
    "humanizer": {"llm-paraphraser": "veribench.corpus.attacks.paraphrase:LLMParaphraser"},
}
for _kind, _table in PLUGINS.items():
    for _name, _target in _table.items():
        registry.register_builtin(_kind, _name, _target)


def names() -> list[str]:
    """Every attack name: built-ins and third-party entry points (``veribench.attacks``)."""
    return registry.names("attack")


def create(name: str, params: dict[str, Any] | None = None) -> Attack:
    """Build attack ``name`` with ``params`` (RAID's defaults for the rest).

    Raises:
        RegistryError: unknown name (with "did you mean").
        AttackError: an unknown parameter or a bad value.
    """
    return registry.create("attack", name, dict(params or {}))


def __getattr__(name: str) -> Any:  # lazy: the workspace functions import the store
    if name in ("attack_documents", "humanize_arm", "pairs", "derived_documents", "select_sources",
                "DeriveReport"):
        from . import derive

        return getattr(derive, name)
    raise AttributeError(name)
