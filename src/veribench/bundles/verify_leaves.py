"""The keys of ``log/leaves.csv``, held to the log (part of the ``corpus`` and ``scores`` checks).

A logged fingerprint (``log_items``: kind, event, keys, leaf) is a SHA-256; its keys are
not in the hash, so a key written beside a leaf proves nothing by itself. ``leaves.csv``
therefore carries each fingerprint in one of three forms (:data:`veribench.bundles.layout.LEAF_COLUMNS`),
and this module accepts a key only where the log defines it:

- **with its text** (``fields``): the canonical text the leaf is the SHA-256 of
  (:func:`veribench.store.events.doc_leaf_text`, ``score_leaf_text``, ``link_leaf_text``).
  The text must hash to the leaf, and the keys are read from it: ``k1``/``k2`` must equal
  them. Such a fingerprint is its key's newest in the bundle (no row and no other entry
  of the same key at a later event): it is the value the workspace holds.
- **replaced** (keys, no text): a later fingerprint of the same key must be in the bundle
  (a row or another entry), and for a document that later one is logged by a
  ``document_update`` naming it (a correction is the only way a document's fields are
  logged again). A key invented for a dropped row has no later fingerprint and is refused.
- **detached** (no keys, no text): a fingerprint a logged withdrawal detached; their number
  per kind equals exactly what the withdrawals up to the run logged (``blanked``).

Every entry is bound to its event: a ``doc`` to an ``import`` or a ``document_update``
naming its document, a ``score`` to a ``scan_batch`` of its ``k1`` spec hash, a ``link`` to
a ``scan_batch`` of its ``k2`` spec hash. And a document fingerprint with its text whose
corpus the selection reaches must be in ``corpus.jsonl`` (a selected document cannot be
dropped and shown as a document of another corpus). The events themselves recompute whole
from the rows and the entries in :mod:`.verify_corpus` and :mod:`.verify_scores`, so with
these rules the set of (document, detector) leaves a run covers follows from the logged
events and the committed selection only.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from typing import Any

from veribench.bundles import layout
from veribench.bundles.verify_files import Context
from veribench.store import events as ev

_HEX = re.compile(r"[0-9a-f]{64}")
#: The leaf types (:data:`veribench.store.events.ITEM_KINDS`) and the event types that log them.
_EVENT_TYPES = {"doc": ("import", "document_update"), "score": ("scan_batch",), "link": ("scan_batch",)}


def _keys_of(kind: str, fields: str) -> tuple[Any, Any] | None:
    """The keys the canonical text ``fields`` of a ``kind`` leaf holds, or None if it is not one."""
    try:
        v = json.loads(fields)
    except (ValueError, RecursionError):
        return None
    if kind == "doc":
        return (v.get("doc_id"), None) if isinstance(v, dict) and v.keys() == set(ev.DOC_FIELDS) else None
    n = 11 if kind == "score" else 3
    return (v[0], v[1]) if isinstance(v, list) and len(v) == n else None


def check_leaf_keys(c: Context, con: Any, extra: list[tuple], events: list[dict[str, Any]], head_seq: int,
                    corpora: list[str] | None) -> None:
    """Hold every entry of ``log/leaves.csv`` (``extra``) to the log (see the module docstring).

    Args:
        c: the bundle's context (failures go to ``corpus`` for documents, ``scores`` otherwise).
        con: the verifier's snapshot, with tables ``rows`` (scores) and ``docs`` (corpus).
        extra: the entries, ``(kind, seq, k1, k2, leaf, fields)``.
        events: the bundle's log (up to the run's event).
        head_seq: the run's chain head.
        corpora: the protocol's selected corpora (None: every corpus).
    """
    by_seq = {e["seq"]: e for e in events if isinstance(e.get("seq"), int)}
    # every fingerprint of each key the bundle shows: (kind, k1, k2) -> [(seq, form)]; form is
    # "row" (a score or corpus row), "text" (an entry with its text) or "replaced"
    seen: dict[tuple[str, Any, Any], list[tuple[int, str]]] = defaultdict(list)
    keys = extra_keys(extra)
    if keys:
        import pyarrow as pa

        con.register("_vb_keys", pa.table({"kind": pa.array([k for k, _, _ in keys], pa.string()),
                                           "k1": pa.array([a for _, a, _ in keys], pa.string()),
                                           "k2": pa.array([b for _, _, b in keys], pa.string())}))
        try:
            for kind, a, b, q in con.execute(
                    "SELECT DISTINCT 'link', r.doc_id, r.spec_hash, r.link_seq FROM rows r JOIN _vb_keys k ON "
                    "k.kind = 'link' AND k.k1 = r.doc_id AND k.k2 = r.spec_hash UNION ALL SELECT DISTINCT 'score', "
                    "r.spec_hash, r.submitted_sha256, r.score_seq FROM rows r JOIN _vb_keys k ON k.kind = 'score' AND "
                    "k.k1 = r.spec_hash AND k.k2 = r.submitted_sha256 WHERE r.status IS NOT NULL UNION ALL SELECT "
                    "'doc', d.doc_id, NULL, d.doc_seq FROM docs d JOIN _vb_keys k ON k.kind = 'doc' AND "
                    "k.k1 = d.doc_id").fetchall():
                seen[(kind, a, b)].append((q, "row"))
        finally:
            con.unregister("_vb_keys")
    detached = dict.fromkeys(ev.ITEM_KINDS, 0)

    def fail(kind: str, message: str, where: str, expected: Any = None, got: Any = None) -> None:
        c.fail("corpus" if kind == "doc" else "scores", message, layout.LEAVES, where, expected, got)

    for kind, seq, k1, k2, leaf, fields in extra:
        where = f"{kind} of event {seq}: {str(k1)[:40]}"
        e = by_seq.get(seq)
        if kind not in _EVENT_TYPES or not isinstance(leaf, str) or not _HEX.fullmatch(leaf):
            fail(str(kind), "not a fingerprint kind and hex SHA-256", where, list(_EVENT_TYPES), [kind, leaf])
            continue
        if e is None or seq > head_seq or e.get("type") not in _EVENT_TYPES[kind]:
            fail(kind, f"a {kind} fingerprint of no {' or '.join(_EVENT_TYPES[kind])} event up to the run's chain "
                       "head", where)
            continue
        p = e.get("payload") or {}
        if k1 is None:
            if k2 is not None or fields is not None:
                fail(kind, "a detached fingerprint carries a key or a text", where)
            detached[kind] += 1
            continue
        if kind == "score" and k1 != p.get("spec_hash") or kind == "link" and k2 != p.get("spec_hash"):
            fail(kind, "the key names another detector than the scan batch that logged it", where,
                 p.get("spec_hash"), k1 if kind == "score" else k2)
            continue
        if kind == "doc" and (k2 is not None or e["type"] == "document_update" and k1 not in (p.get("doc_ids") or [])):
            fail(kind, "a document fingerprint attributed to a correction that does not name the document", where)
            continue
        if fields is not None:
            if hashlib.sha256(fields.encode("utf-8")).hexdigest() != leaf:
                fail(kind, "the text does not hash to its fingerprint", where, leaf,
                     hashlib.sha256(fields.encode("utf-8")).hexdigest())
                continue
            got = _keys_of(kind, fields)
            if got != (k1, k2):
                fail(kind, "the keys differ from the ones the fingerprint's text holds (an invented key)", where,
                     got, [k1, k2])
                continue
            if kind == "doc":
                cp = json.loads(fields).get("corpus")
                if e["type"] == "import" and ev.import_reaches(p, corpora) or corpora is None or cp in corpora:
                    fail(kind, "a document the log holds for the selection is missing from corpus.jsonl (a dropped "
                               "document)", where)
                    continue
        seen[(kind, k1, k2)].append((seq, "text" if fields is not None else "replaced"))
    for (kind, k1, _k2), got in seen.items():
        if len(got) < 2 and got[0][1] != "replaced":
            continue
        got.sort()
        for i, (q, form) in enumerate(got):
            nxt = got[i + 1][0] if i + 1 < len(got) else None
            where = f"{kind} of event {q}: {str(k1)[:40]}"
            if form == "replaced" and nxt is None:
                fail(kind, "a fingerprint filed as replaced under a key with no later fingerprint in the bundle (a "
                           "key the log does not define)", where)
            elif form in ("text", "row") and nxt is not None:
                fail(kind, "a fingerprint shown as its key's newest, but a later one of the key is in the bundle",
                     where, f"newest at event {got[-1][0]}", q)
            elif form == "replaced" and kind == "doc" and (by_seq.get(nxt) or {}).get("type") != "document_update":
                fail(kind, "a document's fields shown as replaced, but the later ones are not a correction of it",
                     where, "a document_update", (by_seq.get(nxt) or {}).get("type"))
    budget = ev.blanked_budget(events)
    for kind, k in detached.items():
        if k != budget[kind]:
            fail(kind, f"{k} {kind} fingerprints without their keys, but the log's withdrawals detached exactly "
                       f"{budget[kind]} (each is carried in its event)", f"{kind} (detached)", budget[kind], k)


def extra_keys(extra: list[tuple]) -> set[tuple[str, Any, Any]]:
    """The ``(kind, k1, k2)`` keys of the entries of ``leaves.csv`` (detached ones aside)."""
    return {(x[0], x[2], x[3]) for x in extra if x[0] in ev.ITEM_KINDS and x[2] is not None}
