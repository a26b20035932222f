"""Attacks as corpus operations: RAID's eleven attacks, recorded edits, derived arms.

- the eleven attacks of RAID (Dugan et al., ACL 2024; ``liamdugan/raid``
  ``generation/adversarial/``), at RAID's default parameters, each overridable, registered
  as kind ``"attack"`` in :data:`veribench.registry.BUILTINS`; :func:`create` builds one.
- :func:`attack_documents` derives one attacked document per selected source document
  (``veribench attack NAME``); :func:`humanize_arm` makes a new arm of humanized or
  paraphrased texts (``veribench derive-arm``); :func:`pairs` gives each derived
  document's source id, for paired evaluation.

How a derived document is stored is in :mod:`veribench.corpus.document` and
``docs/robustness.md``.
"""

from __future__ import annotations

from veribench.attacks.base import Attack, AttackError, AttackResult, create, doc_seed, names
from veribench.attacks.derive import (
                                      DeriveReport,
                                      attack_documents,
                                      derived_documents,
                                      humanize_arm,
                                      pairs,
                                      select_sources,
)

__all__ = ["Attack", "AttackError", "AttackResult", "DeriveReport", "attack_documents", "create", "derived_documents",
           "doc_seed", "humanize_arm", "names", "pairs", "select_sources"]
