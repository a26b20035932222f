"""The keys of ``log/leaves.csv``, held to the log (part of the ``corpus`` and ``scores`` checks).

A logged fingerprint (``log_items``: kind, event, keys, leaf) is a SHA-256; its keys are
not in the hash, so a key written beside a leaf proves nothing by itself. ``leaves.csv``
therefore carries each fingerprint in one of two forms (:data:`veribench.bundles.layout.LEAF_COLUMNS`),
and this module accepts a key only where the log defines it:

- **keyed, with its text** (``fields``): the canonical text the leaf is the SHA-256 of
  (:func:`veribench.store.events.doc_leaf_text`, ``score_leaf_text``, ``link_leaf_text``).
  The text must hash to the leaf, and the keys are read from it: ``k1``/``k2`` must equal
  them. A key without its text is refused. The log's order then says which value of each
  key is current: all fingerprints of one key the bundle shows (rows and entries) sorted by
  event, the last is the newest and every other one is replaced by the next. A row must be
  its key's newest; a replaced document's next value is a ``document_update`` naming it (a
  correction is the only way a document's fields are logged again); a newest document entry
  whose import or corpus the selection reaches is a dropped document. So a dropped row can
  be filed as "replaced" only under its own key (its text says which), and there it needs a
  later logged value of that key, which a dropped current row does not have.
- **detached** (no keys, no text): a fingerprint a logged withdrawal detached. Each is
  matched one to one with the ``[kind, seq, leaf]`` the withdrawals list
  (:func:`veribench.store.events.detached_problems`): a withdrawal cannot be moved to another
  document with the counts kept. Withdrawals logged before that list (schema version 2)
  are held to their ``blanked`` counts per kind.

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
from veribench.hashing import loads_strict
from veribench.store import events as ev

_HEX = re.compile(r"[0-9a-f]{64}")
#: The leaf types (:data:`veribench.store.events.ITEM_KINDS`) and the event types that log them.
_EVENT_TYPES = {"doc": ("import", "document_update"), "score": ("scan_batch",), "link": ("scan_batch",)}


def _keys_of(kind: str, fields: str) -> tuple[Any, Any] | None:
    """The keys the canonical text ``fields`` of a ``kind`` leaf holds, or None if it is not one."""
    try:
        v = loads_strict(fields)
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
    detached: list[tuple[str, int, str]] = []
    newest_doc: dict[Any, str] = {}  # a document key's entry text, to check the newest below

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
            detached.append((kind, seq, leaf))
            continue
        if kind == "score" and k1 != p.get("spec_hash") or kind == "link" and k2 != p.get("spec_hash"):
            fail(kind, "the key names another detector than the scan batch that logged it", where,
                 p.get("spec_hash"), k1 if kind == "score" else k2)
            continue
        if kind == "doc" and (k2 is not None or e["type"] == "document_update" and k1 not in (p.get("doc_ids") or [])):
            fail(kind, "a document fingerprint attributed to a correction that does not name the document", where)
            continue
        if fields is None:
            fail(kind, "a fingerprint filed under a key without the text it hashes (every keyed fingerprint, "
                       "replaced or not, carries its text: a key without it is not shown to follow from the log)",
                 where)
            continue
        if hashlib.sha256(fields.encode("utf-8")).hexdigest() != leaf:
            fail(kind, "the text does not hash to its fingerprint", where, leaf,
                 hashlib.sha256(fields.encode("utf-8")).hexdigest())
            continue
        got = _keys_of(kind, fields)
        if got != (k1, k2):
            fail(kind, "the keys differ from the ones the fingerprint's text holds (an invented key)", where,
                 got, [k1, k2])
            continue
        seen[(kind, k1, k2)].append((seq, "entry"))
        if kind == "doc":
            newest_doc[(k1, seq)] = fields
    for (kind, k1, _k2), got in seen.items():
        got.sort()
        for i, (q, form) in enumerate(got):
            nxt = got[i + 1][0] if i + 1 < len(got) else None
            where = f"{kind} of event {q}: {str(k1)[:40]}"
            if nxt is not None and nxt == q:
                fail(kind, "two fingerprints of one key in one event", where)
            elif form == "row" and nxt is not None:
                fail(kind, "a fingerprint shown as its key's newest, but a later one of the key is in the bundle",
                     where, f"newest at event {got[-1][0]}", q)
            elif nxt is not None and kind == "doc" and (by_seq.get(nxt) or {}).get("type") != "document_update":
                fail(kind, "a document's fields shown as replaced, but the later ones are not a correction of it",
                     where, "a document_update", (by_seq.get(nxt) or {}).get("type"))
            elif nxt is None and form == "entry" and kind == "doc":
                e = by_seq.get(q) or {}
                cp = json.loads(newest_doc[(k1, q)]).get("corpus")
                if e.get("type") == "import" and ev.import_reaches(e.get("payload") or {}, corpora) \
                        or corpora is None or cp in corpora:
                    fail(kind, "a document the log holds for the selection is missing from corpus.jsonl (a dropped "
                               "document)", where)
    for kind, message, expected, got_ in ev.detached_problems(events, detached):
        fail(kind, message, f"{kind} (detached)", expected, got_)


def extra_keys(extra: list[tuple]) -> set[tuple[str, Any, Any]]:
    """The ``(kind, k1, k2)`` keys of the entries of ``leaves.csv`` (detached ones aside)."""
    return {(x[0], x[2], x[3]) for x in extra if x[0] in ev.ITEM_KINDS and x[2] is not None}
