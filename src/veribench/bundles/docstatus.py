"""A published document's status, from what the log holds of it: fingerprint-only or not.

A bundle withholds a document's text only when the log says so. The workspace's rule
(:meth:`veribench.store.Workspace.fingerprint_only_ids`) also counts a document stored
without its text, which no event records; a bundle can show only what the log records,
so its rule is the workspace's on the logged fields alone (the ``doc`` object each
document's leaf hashes):

- ``provenance.fingerprint_only`` is true by the one rule the workspace applies too
  (:func:`veribench.records.fingerprint_only_marked`: JSON ``true``, a non-zero number, or
  a string such as ``"true"`` or ``"yes"``), or
- ``provenance.source_id`` leads, at any depth, to such a document of the same corpus
  listing (a derived text carries its source's sentences).

``publish`` refuses a selected document the workspace hides but this rule does not (its
text could not be withheld with a logged reason, nor published against the workspace's
rule); ``verify`` requires every ``fingerprint_only`` to equal this rule, and a text exactly
for the selected documents it does not cover. A withdrawn document's status is its logged
withdrawal: its fingerprints are the detached ones, counted against the withdrawals
(:mod:`veribench.bundles.verify_leaves`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from veribench.hashing import loads_strict
from veribench.records import fingerprint_only_marked


def _provenance(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = loads_strict(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def marked(provenance: Any) -> bool:
    """Whether ``provenance`` (an object, or its stored JSON text) marks the text fingerprint-only."""
    return fingerprint_only_marked(_provenance(provenance).get("fingerprint_only"))


def fingerprint_only_ids(docs: Iterable[tuple[str, Any]]) -> set[str]:
    """The fingerprint-only documents among ``docs`` (``(doc_id, provenance)`` pairs), by the
    logged fields alone (see the module docstring)."""
    out: set[str] = set()
    children: dict[str, list[str]] = {}
    for doc_id, prov in docs:
        p = _provenance(prov)
        if marked(p):
            out.add(doc_id)
        src = p.get("source_id")
        if src is not None and not isinstance(src, (dict, list)):
            children.setdefault(src if isinstance(src, str) else json.dumps(src), []).append(doc_id)
    frontier = list(out)
    while frontier:
        nxt = [c for d in frontier for c in children.get(d, ()) if c not in out]
        out.update(nxt)
        frontier = nxt
    return out
