"""The workspace's tamper-evident event log: a hash chain over everything that matters.

Every write that a published number rests on appends one event, in the same
transaction as the write itself:

==================  ============================================================
type                payload (besides the item digests below)
==================  ============================================================
``protocol_commit`` protocol id, SHA-256 of the file's bytes, name, tag, the file's
                    amendments, what already existed in the workspace
``protocol_amend``  the same, plus the version it supersedes and the amendment
``timestamp``       an RFC 3161 token over a commitment record (its SHA-256, the
                    authority's time)
``import``          import id, kind, corpus, source file name; ``doc`` items
``scan_batch``      detector spec hash, scan date; ``score`` and ``link`` items
``run``             run id, tag, protocol id and hash, the chain head it ran at,
                    SHA-256 of its results
``document_update`` corrected documents (:func:`log_document_update`); ``doc`` items
``withdrawal``      withdrawn documents, ids and counts only (:func:`log_withdrawal`);
                    their fingerprints are detached from their keys, and listed
==================  ============================================================

An event is ``{seq, at, type, payload, payload_sha256, prev, hash}``:

- ``seq`` counts from 1 with no gap; ``prev`` is the previous event's ``hash``
  (:data:`GENESIS` for the first);
- ``at`` is the UTC time of the append (``YYYY-MM-DDTHH:MM:SS.ffffffZ``), never earlier
  than the previous event's (log order is the truth; a clock that goes back is held);
- ``payload_sha256 = sha256(canonical_json(payload))``;
- ``hash = sha256(canonical_json({"at", "payload_sha256", "prev", "seq", "type"}))``.

Items. An event may carry row fingerprints ("leaves"), kept in the ``log_items``
table: ``doc`` (one per document stored by an import or corrected), ``score`` (one per
score row written) and ``link`` (one per document -> submitted-text link). The payload holds,
per kind, ``n_<kind>`` and ``<kind>_sha256`` = :func:`items_digest` of the leaves, so
the chain commits to every row without holding it. A leaf is the SHA-256 of the
canonical JSON of the row's fields in a fixed order (:func:`doc_leaf`,
:func:`score_leaf`, :func:`link_leaf`); a bundle re-computes the same leaves from its
published rows.

:func:`veribench.store.logcheck.verify_workspace` re-checks the chain and every table
against it: a row edited with plain SQL (a protocol's ``committed_at``, a label, a score)
no longer matches its leaf or its event and is reported by name.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypedDict, cast, overload

from veribench.errors import InputError
from veribench.hashing import canonical_json, loads_strict
from veribench.store.sql import arrow_view, insert_arrow

#: ``prev`` of the first event.
GENESIS = "0" * 64
class JsonOptions(TypedDict):
    """Keyword arguments of ``json.dumps`` and ``json.JSONEncoder`` (:data:`CANONICAL`)."""

    ensure_ascii: bool
    sort_keys: bool
    separators: tuple[str, str]
    allow_nan: bool


#: The canonical JSON form of the log (sorted keys, compact, UTF-8, no NaN): also the form of
#: every line of a bundle's ``corpus.jsonl``.
CANONICAL: JsonOptions = {"ensure_ascii": False, "sort_keys": True, "separators": (",", ":"), "allow_nan": False}
#: Every event type (later users append ``withdrawal`` and ``document_update``).
EVENT_TYPES = ("protocol_commit", "protocol_amend", "timestamp", "import", "scan_batch", "run", "withdrawal",
               "document_update")
#: Item kinds and the payload keys that commit to them.
ITEM_KINDS = ("doc", "score", "link")

TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


# -- canonical forms ------------------------------------------------------------------------

def _sha(s: str) -> str:
    return hashlib.sha256(s.encode("utf-8")).hexdigest()


_UTC_FORM = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def now_utc() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


@overload
def utc_text(dt: None) -> None: ...
@overload
def utc_text(dt: datetime | str) -> str: ...
def utc_text(dt: datetime | str | None) -> str | None:
    """A time as the log writes it: UTC, microseconds, ``Z`` (naive times are taken as UTC)."""
    if dt is None:
        return None
    if type(dt) is str:
        if len(dt) == 27 and dt[26] == "Z" and _UTC_FORM.fullmatch(dt):
            return dt  # already in the log's form
        dt = datetime.fromisoformat(dt.replace("Z", "+00:00"))
    t = cast(datetime, dt)  # parsed above (the test is on the exact type: a subclass of str is not parsed)
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return t.astimezone(UTC).strftime(TIME_FORMAT)


def parse_utc(s: str) -> datetime:
    """Inverse of :func:`utc_text` (accepts any ISO 8601 form with an offset or ``Z``)."""
    d = datetime.fromisoformat(s.replace("Z", "+00:00"))
    return d if d.tzinfo else d.replace(tzinfo=UTC)


def _num(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _obj(x: Any) -> Any:
    """A JSON column as an object (stored text is parsed strictly, :func:`veribench.hashing.loads_strict`:
    a duplicate key or NaN raises ValueError; ``None`` and ``{}`` stay distinct)."""
    if isinstance(x, str):
        return loads_strict(x)
    return x


_enc_str = json.encoder.encode_basestring  # the C encoder json.dumps(ensure_ascii=False) uses for str
_float_repr = float.__repr__
_dumps_canonical = json.JSONEncoder(**CANONICAL).encode


def event_hash(seq: int, at: str, type_: str, payload_sha256: str, prev: str) -> str:
    """The chain hash of one event (see the module docstring)."""
    return _sha(canonical_json({"at": at, "payload_sha256": payload_sha256, "prev": prev, "seq": seq,
                                "type": type_}))


def payload_digest(payload: Mapping[str, Any]) -> str:
    """``sha256(canonical_json(payload))``."""
    return _sha(canonical_json(payload))


def import_reaches(payload: Mapping[str, Any], corpora: Sequence[str] | None) -> bool:
    """Whether an ``import`` event's documents can be in a selection of ``corpora`` (``None``:
    every corpus): its ``corpora`` (the corpora of the documents it stored), or, in a log
    written before that field, its ``corpus``."""
    if corpora is None:
        return True
    have = payload.get("corpora")
    if not isinstance(have, list):
        have = [payload.get("corpus")]
    return any(c in corpora for c in have)


DOC_FIELDS = ("doc_id", "text_sha256", "label", "arm", "kind", "subgroup", "corpus", "group_key", "tags", "provenance",
              "generation")


def doc_fields(doc_id: str, text_sha256: str, label: str, arm: Any, kind: Any, subgroup: Any, corpus: Any,
               group_key: Any, tags: Any, provenance: Any, generation: Any) -> dict[str, Any]:
    """The fields of a document a leaf covers (JSON columns as objects; stored JSON text is parsed)."""
    return {"doc_id": doc_id, "text_sha256": text_sha256, "label": label, "arm": arm, "kind": kind,
            "subgroup": subgroup, "corpus": corpus, "group_key": group_key, "tags": _obj(tags),
            "provenance": _obj(provenance), "generation": _obj(generation)}


def provenance_fields(doc_id: str, provenance: Any) -> tuple[Any, str | None]:
    """``(fingerprint_only, source_id)`` of a stored document's ``provenance`` column, read
    by the strict reader (:func:`veribench.hashing.loads_strict`) in Python, never by SQL's
    ``json_extract`` (which takes the first of two duplicate keys, Python the last): the
    decisions "fingerprint-only" and "derived from" rest on them. Either is None when absent;
    a ``source_id`` that is not a string is given as its JSON text (as the bundle verifier's
    :mod:`veribench.bundles.docstatus` reads it).

    Raises:
        InputError: the column is not strict JSON (a duplicate key, NaN), naming the document.
    """
    try:
        p = _obj(provenance)
    except ValueError as e:
        raise InputError(f"documents row doc {doc_id}: provenance is not strict JSON ({e}); it was edited behind "
                         "the log (run `veribench log verify`)") from None
    if not isinstance(p, dict):
        return None, None
    src = p.get("source_id")
    return p.get("fingerprint_only"), src if isinstance(src, str) or src is None else json.dumps(src)


def doc_leaf_text(*row: Any) -> str:
    """The canonical JSON object a document's leaf hashes (:func:`doc_fields` of ``row``)."""
    return _dumps_canonical(doc_fields(*row))


def doc_leaf(*row: Any) -> str:
    """Fingerprint of one stored document row (``doc_id, text_sha256, label, arm, kind,
    subgroup, corpus, group_key, tags, provenance, generation``): SHA-256 of
    :func:`doc_leaf_text`."""
    return _sha(doc_leaf_text(*row))


def _jnum(x: Any) -> str:
    if x is None:
        return "null"
    x = float(x)
    return _float_repr(x) if math.isfinite(x) else "null"


def score_leaf_text(spec_hash: str, text_sha256: str, status: str, raw: Any, scale: Any, direction: Any,
                    ai_probability: Any, verdict: Any, vendor_version: Any, scanned_at: Any,
                    hazards: Any = None) -> str:
    """The canonical JSON array a score's leaf hashes: ``[spec_hash, text_sha256, status, raw,
    scale, direction, ai_probability, verdict, vendor_version, scanned_at, hazards]`` (floats
    as Python prints them, non-finite as null; the scan date in the log's UTC form;
    ``hazards`` = ``detail["hazards"]``, an object or None - or its canonical JSON text,
    used as given).

    Written out by hand (it runs once per score row, millions of times in a large bundle);
    equality with ``canonical_json`` of the same list is a tested property."""
    e, fr = _enc_str, _float_repr
    # a finite float prints as repr; ``x - x == 0.0`` is False for NaN and infinities
    r = "null" if raw is None else (fr(raw) if type(raw) is float and raw - raw == 0.0 else _jnum(raw))
    p = ("null" if ai_probability is None else
         (fr(ai_probability) if type(ai_probability) is float and ai_probability - ai_probability == 0.0
          else _jnum(ai_probability)))
    at = utc_text(scanned_at)
    hz = "null" if hazards is None else (hazards if type(hazards) is str else _dumps_canonical(hazards))
    return (f"[{e(spec_hash)},{e(text_sha256)},{'null' if status is None else e(status)},{r},"
            f"{'null' if scale is None else e(scale)},{'null' if direction is None else e(direction)},{p},"
            f"{'null' if verdict is None else e(verdict)},{'null' if vendor_version is None else e(vendor_version)},"
            f"{'null' if at is None else e(at)},{hz}]")


def score_leaf(*row: Any) -> str:
    """Fingerprint of one score row: SHA-256 of :func:`score_leaf_text`."""
    return _sha(score_leaf_text(*row))


def link_leaf_text(doc_id: str, spec_hash: str, submitted_sha256: str) -> str:
    """The canonical JSON array a link's leaf hashes: ``[doc_id, spec_hash, submitted_sha256]``."""
    e = _enc_str
    return f"[{e(doc_id)},{e(spec_hash)},{e(submitted_sha256)}]"


def link_leaf(doc_id: str, spec_hash: str, submitted_sha256: str) -> str:
    """Fingerprint of one submission link (document -> the text a detector scored)."""
    return _sha(link_leaf_text(doc_id, spec_hash, submitted_sha256))


def items_digest(leaves: Iterable[str | bytes]) -> str:
    """SHA-256 over the sorted raw 32-byte leaves (hex text or raw bytes): independent of row order.

    Raises:
        ValueError: a leaf is not 64 hex characters.
    """
    return hashlib.sha256(b"".join(sorted(x if isinstance(x, bytes) else bytes.fromhex(x) for x in leaves))
                          ).hexdigest()


# -- appending ------------------------------------------------------------------------------

def chain_head(con: Any) -> dict[str, Any]:
    """``{"seq", "hash", "at"}`` of the newest event (``seq`` 0 and :data:`GENESIS` when empty)."""
    rows = con.execute("SELECT seq, hash, logged_at FROM events ORDER BY seq DESC LIMIT 1").fetchall()
    row = rows[0] if rows else None
    if row is None:
        return {"seq": 0, "hash": GENESIS, "at": None}
    return {"seq": int(row[0]), "hash": row[1], "at": row[2]}


def _insert_items(con: Any, seq: int, kind: str, items: Sequence[tuple[Any, Any, str]]) -> None:
    import pyarrow as pa

    k1, k2, leaf = (list(x) for x in zip(*items)) if items else ([], [], [])
    tbl = pa.table({"seq": pa.array([seq] * len(items), pa.int64()), "kind": pa.array([kind] * len(items), pa.string()),
                    "k1": pa.array(k1, pa.string()), "k2": pa.array(k2, pa.string()),
                    "leaf": pa.array(leaf, pa.string())})
    insert_arrow(con, "log_items", tbl)


def append_event(con: Any, type: str, payload: dict[str, Any], *,
                 items: Mapping[str, Sequence[tuple[Any, Any, str]]] | None = None) -> dict[str, Any]:
    """Append one event to the chain; call inside an open workspace transaction.

    Args:
        con: the DuckDB connection of :meth:`Workspace.transaction` (the write and its
            event commit or roll back together).
        type: one of :data:`EVENT_TYPES`.
        payload: JSON-serialisable facts of the event (no secrets, no local paths).
        items: optional ``{kind: [(k1, k2, leaf), ...]}`` row fingerprints, kind in
            :data:`ITEM_KINDS`; their count and digest are added to the payload.

    Returns:
        The event dict ``{seq, at, type, payload, payload_sha256, prev, hash}``.

    Raises:
        ValueError: unknown type or item kind, or a payload that is not canonical JSON.
    """
    if type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {type!r}; use one of {EVENT_TYPES}")
    payload = dict(payload)
    for kind, rows in (items or {}).items():
        if kind not in ITEM_KINDS:
            raise ValueError(f"unknown item kind {kind!r}; use one of {ITEM_KINDS}")
        payload[f"n_{kind}"] = len(rows)
        payload[f"{kind}_sha256"] = items_digest(r[2] for r in rows)
    head = chain_head(con)
    e = _insert_event(con, head, type, payload)
    for kind, rows in (items or {}).items():
        if rows:
            _insert_items(con, e["seq"], kind, rows)
    return e


def _insert_event(con: Any, head: Mapping[str, Any], type: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Insert the event row after ``head`` (its time never earlier than the head's)."""
    now = utc_text(datetime.now(UTC))
    at = max(now, head["at"]) if head["at"] else now  # fixed-width text: order = time order
    seq = head["seq"] + 1
    pj = canonical_json(payload)
    psha = _sha(pj)
    h = event_hash(seq, at, type, psha, head["hash"])
    con.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)", [seq, at, type, pj, psha, head["hash"], h])
    return {"seq": seq, "at": at, "type": type, "payload": payload, "payload_sha256": psha, "prev": head["hash"],
            "hash": h}


def append_event_batched(con: Any, type: str, payload: dict[str, Any], kind: str,
                         batches: Iterable[Sequence[tuple[Any, Any, str]]]) -> dict[str, Any]:
    """:func:`append_event` for one item kind whose leaves come in batches (a streamed corpus
    of millions of documents): each batch's leaves are stored as it comes, and only the
    32-byte leaves are held to compute the digest (32 bytes per row, sorted with numpy),
    never the rows. The event is the one :func:`append_event` would write for the same leaves.

    Raises:
        ValueError: unknown type or item kind, or a leaf that is not 64 hex characters.
    """
    import numpy as np

    if type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {type!r}; use one of {EVENT_TYPES}")
    if kind not in ITEM_KINDS:
        raise ValueError(f"unknown item kind {kind!r}; use one of {ITEM_KINDS}")
    head = chain_head(con)
    seq = head["seq"] + 1
    parts = []
    n = 0
    for rows in batches:
        if not rows:
            continue
        _insert_items(con, seq, kind, rows)
        raw = b"".join(bytes.fromhex(r[2]) for r in rows)
        if len(raw) != 32 * len(rows):
            raise ValueError("a leaf is not 64 hex characters")
        parts.append(np.frombuffer(raw, dtype=np.uint8).reshape(-1, 32))
        n += len(rows)
    leaves = np.concatenate(parts) if parts else np.zeros((0, 32), dtype=np.uint8)
    # rows sorted as byte strings: np.lexsort sorts by its last key first
    order = np.lexsort(leaves.T[::-1]) if n else np.zeros(0, dtype=np.int64)
    payload = {**payload, f"n_{kind}": n, f"{kind}_sha256": hashlib.sha256(leaves[order].tobytes()).hexdigest()}
    return _insert_event(con, head, type, payload)


def log_document_update(con: Any, payload: dict[str, Any], doc_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """Append the ``document_update`` event of corrected documents (inside the transaction
    that changed them), with the leaves of their rows as they now are.

    Args:
        payload: e.g. ``{"import_id", "updates": [{doc_id, field, old, new}]}``.
        doc_ids: the documents changed (default: those named in ``payload["updates"]``).
    """
    ids = sorted(set(doc_ids if doc_ids is not None else (u["doc_id"] for u in payload.get("updates") or [])))
    rows = con.execute("SELECT doc_id, text_sha256, label, arm, kind, subgroup, corpus, group_key, tags, provenance, "
                       "generation FROM documents WHERE doc_id IN (SELECT unnest(?::VARCHAR[]))", [ids]).fetchall()
    return append_event(con, "document_update", {**payload, "doc_ids": ids},
                        items={"doc": [(r[0], None, doc_leaf(*r)) for r in rows]})


def keep_replaced(con: Any, kind: str, rows: Sequence[tuple[Any, Any, str]]) -> None:
    """Keep the canonical text of stored rows a write is about to overwrite (call it first).

    The log keeps every fingerprint, but the workspace only the newest row of each key; a
    bundle must show that a fingerprint it files as replaced really held its key, so the text
    it hashes is kept in ``replaced_leaves (seq, kind, k1, k2, leaf, fields)`` next to the
    newest logged fingerprint of the key with that leaf (the row being overwritten). A row
    no fingerprint of its key matches (edited behind the log) is not kept: ``log verify``
    reports it.

    Args:
        kind: one of :data:`ITEM_KINDS`.
        rows: ``(k1, k2, canonical text)`` as the leaf functions write it
            (:func:`doc_leaf_text`, :func:`score_leaf_text`, :func:`link_leaf_text`).
    """
    import pyarrow as pa

    if not rows:
        return
    t = pa.table({"kind": pa.array([kind] * len(rows), pa.string()), "k1": pa.array([r[0] for r in rows], pa.string()),
                  "k2": pa.array([r[1] for r in rows], pa.string()),
                  "leaf": pa.array([_sha(r[2]) for r in rows], pa.string()),
                  "fields": pa.array([r[2] for r in rows], pa.string())})
    with arrow_view(con, t, "_vb_old") as v:
        con.execute(f"INSERT INTO replaced_leaves SELECT max(li.seq), o.kind, o.k1, o.k2, o.leaf, o.fields FROM {v} o "
                    "JOIN log_items li ON li.kind = o.kind AND li.k1 = o.k1 AND li.k2 IS NOT DISTINCT FROM o.k2 AND "
                    "li.leaf = o.leaf GROUP BY o.kind, o.k1, o.k2, o.leaf, o.fields HAVING NOT EXISTS (SELECT 1 FROM "
                    "replaced_leaves r WHERE r.kind = o.kind AND r.seq = max(li.seq) AND r.leaf = o.leaf)")


def log_withdrawal(con: Any, payload: dict[str, Any], *, text_shas: Sequence[str] = ()) -> dict[str, Any]:
    """Append the ``withdrawal`` event of documents removed at their contributors' request
    (inside the transaction that removed them).

    The removed rows' fingerprints stay in the log (every earlier digest still verifies),
    but their keys - document ids and text hashes - are detached, so no fingerprint of a
    withdrawn text stays attached to it, and the kept texts of their replaced values
    (``replaced_leaves``) are deleted. The event records how many were detached per kind
    (``blanked``) and which (``detached``: ``[kind, seq, leaf]`` of each, sorted; the
    fingerprints are in the log already, so nothing about the text is added), which
    :func:`verify_workspace` and the bundle verifier match one to one
    (:func:`detached_problems`).

    Args:
        payload: ``{"withdrawal_id", "doc_id", "documents_removed": [ids], ...}`` (ids and
            counts only: never a text or its hash).
        text_shas: SHA-256 of the texts whose score rows were removed.
    """
    ids = list(payload.get("documents_removed") or [payload.get("doc_id")])
    shas = list(text_shas)
    blanked = {}
    detached: list[list[Any]] = []
    for kind, col, keys in (("doc", "k1", ids), ("link", "k1", ids), ("score", "k2", shas)):
        got = con.execute(f"SELECT seq, leaf FROM log_items WHERE kind = ? AND {col} IN (SELECT unnest(?::VARCHAR[]))",
                          [kind, keys]).fetchall()
        blanked[kind] = len(got)
        detached += [[kind, int(q), leaf] for q, leaf in got]
        con.execute(f"DELETE FROM replaced_leaves WHERE kind = ? AND {col} IN (SELECT unnest(?::VARCHAR[]))",
                    [kind, keys])
        con.execute(f"UPDATE log_items SET k1 = NULL, k2 = NULL WHERE kind = ? AND {col} IN "
                    "(SELECT unnest(?::VARCHAR[]))", [kind, keys])
    return append_event(con, "withdrawal", {**payload, "blanked": blanked, "detached": sorted(detached)})


def detached_problems(events: Iterable[Mapping[str, Any]],
                      detached: Iterable[tuple[Any, Any, Any]]) -> list[tuple[str, str, Any, Any]]:
    """Match detached fingerprints to the withdrawals that detached them, one to one.

    A withdrawal logs each fingerprint it detached as ``[kind, seq, leaf]`` in its payload's
    ``detached`` list (sorted; ``blanked`` holds the counts per kind). Each detached
    fingerprint must be named by exactly one withdrawal and each named one must be detached,
    so a withdrawal cannot be moved to another document with the counts kept. Withdrawals
    logged before that list existed (no ``detached`` key) are held to their ``blanked``
    counts per kind only: the fingerprints no listing names must number exactly those.

    Args:
        events: the log (withdrawal events are read; others ignored).
        detached: ``(kind, seq, leaf)`` of every detached fingerprint (the workspace's
            ``log_items`` with no keys, or a bundle's ``log/leaves.csv`` entries without keys).

    Returns:
        ``(kind, message, expected, got)`` per problem; empty when every one is attributed.
    """
    named: Counter[tuple[Any, Any, Any]] = Counter()
    legacy = dict.fromkeys(ITEM_KINDS, 0)
    out: list[tuple[str, str, Any, Any]] = []
    for e in events:
        if e["type"] != "withdrawal":
            continue
        p = e["payload"]
        lst = p.get("detached")
        if "detached" not in p:
            for k, v in (p.get("blanked") or {}).items():
                if k in legacy and isinstance(v, int):
                    legacy[k] += v
            continue
        ok = isinstance(lst, list) and all(isinstance(x, list) and len(x) == 3 for x in lst)
        counts = {k: sum(1 for x in lst if x[0] == k) for k in ITEM_KINDS} if ok else None
        if not ok or {k: (p.get("blanked") or {}).get(k, 0) for k in ITEM_KINDS} != counts:
            out.append(("doc", f"withdrawal (event {e['seq']}) lists detached fingerprints that are not its counts",
                        p.get("blanked"), counts))
            continue
        named.update((str(x[0]), x[1], str(x[2])) for x in lst)
    got = Counter((str(k), q, str(leaf)) for k, q, leaf in detached)
    for (kind, q, leaf), n in sorted((named - got).items()):
        out.append((kind, f"a fingerprint a logged withdrawal detached is not detached here ({kind} of event {q}, "
                          f"leaf {leaf[:16]}…: the withdrawal was moved to another document)", n, 0))
    loose = got - named
    for kind in ITEM_KINDS:
        n = sum(v for (k, _, _), v in loose.items() if k == kind)
        if n != legacy[kind]:
            first = next((x for x in sorted(loose) if x[0] == kind), None)
            out.append((kind, f"{n} detached {kind} fingerprints that no logged withdrawal names"
                              + (f" (first: event {first[1]}, leaf {first[2][:16]}…)" if first else "")
                              + f"; withdrawals logged without their list account for {legacy[kind]}",
                        legacy[kind], n))
    return out


def blanked_budget(events: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Per item kind, how many fingerprints logged withdrawals detached from their keys."""
    out = dict.fromkeys(ITEM_KINDS, 0)
    for e in events:
        if e["type"] == "withdrawal":
            for k, v in ((e["payload"].get("blanked") or {}).items()):
                if k in out and isinstance(v, int):
                    out[k] += v
    return out


# -- reading --------------------------------------------------------------------------------

def read_events(con: Any, *, upto: int | None = None, types: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Events in sequence order (payload parsed), optionally up to ``seq`` ``upto`` and of ``types``."""
    sql = "SELECT seq, logged_at, type, payload, payload_sha256, prev, hash FROM events"
    where: list[str] = []
    params: list[Any] = []
    if upto is not None:
        where.append("seq <= ?")
        params.append(upto)
    if types:
        where.append("type IN (SELECT unnest(?::VARCHAR[]))")
        params.append(list(types))
    if where:
        sql += " WHERE " + " AND ".join(where)
    rows = con.execute(sql + " ORDER BY seq", params).fetchall()
    return [{"seq": int(s), "at": a, "type": t, "payload": _payload(int(s), p), "payload_sha256": ps, "prev": pv,
             "hash": h} for s, a, t, p, ps, pv, h in rows]


def _payload(seq: int, text: str) -> Any:
    """An event's stored payload, read strictly (:func:`veribench.hashing.loads_strict`).

    Raises:
        InputError: not strict JSON (a duplicate key, NaN), naming the event."""
    try:
        return loads_strict(text)
    except ValueError as e:
        raise InputError(f"events row seq {seq}: payload is not strict JSON ({e}); it was edited behind the log") \
            from None


def event_line(e: Mapping[str, Any]) -> str:
    """One event as a JSON line (the form of a bundle's ``log/events.jsonl``)."""
    return canonical_json({k: e[k] for k in ("seq", "at", "type", "payload", "payload_sha256", "prev", "hash")})


# -- checking -------------------------------------------------------------------------------

@dataclass
class LogFinding:
    """One problem found in the log or in a table checked against it."""

    check: str
    message: str
    seq: int | None = None
    table: str | None = None
    key: str | None = None

    def line(self) -> str:
        where = ", ".join(x for x in (f"event {self.seq}" if self.seq is not None else None,
                                      f"table {self.table}" if self.table else None,
                                      self.key) if x)
        return f"{self.check}: " + (f"{where}: " if where else "") + self.message


def check_chain(events: Iterable[Mapping[str, Any]], *, start_prev: str = GENESIS,
                start_seq: int = 1) -> tuple[list[LogFinding], dict[str, Any]]:
    """Check links, hashes, payload digests, sequence and time order of ``events``.

    Returns:
        (findings, head) with ``head = {"seq", "hash", "at"}`` of the last event read.
    """
    out: list[LogFinding] = []
    prev: str | None = start_prev  # the hash recorded on the previous event
    want_seq, last_at = start_seq, None
    head = {"seq": start_seq - 1, "hash": start_prev, "at": None}
    for e in events:
        seq = e.get("seq")
        if not isinstance(seq, int) or isinstance(seq, bool):
            out.append(LogFinding("chain", "sequence number is not an integer", None, key=repr(seq)))
            break
        if seq != want_seq:
            out.append(LogFinding("chain", f"sequence number {seq} where {want_seq} was expected (an event was "
                                           "removed, added or reordered)", seq))
        if e.get("type") not in EVENT_TYPES:
            out.append(LogFinding("chain", f"unknown event type {e.get('type')!r}", seq))
        payload = e.get("payload")
        if not isinstance(payload, dict):
            out.append(LogFinding("chain", "payload is not an object", seq))
        else:
            try:
                pd = payload_digest(payload)
            except (TypeError, ValueError):
                pd = None
            if pd != e.get("payload_sha256"):
                out.append(LogFinding("chain", "payload differs from its recorded SHA-256 (payload edited)", seq))
        at: Any = e.get("at")  # recorded values are checked, not trusted: any JSON value
        if not isinstance(at, str) or len(at) != 27 or not at.endswith("Z"):
            out.append(LogFinding("chain", f"time {at!r} is not in the log's UTC form", seq))
        elif last_at is not None and at < last_at:
            out.append(LogFinding("chain", f"time {at} is earlier than the previous event's {last_at} (log order "
                                           "is the truth: an event was backdated or moved)", seq))
        if e.get("prev") != prev:
            out.append(LogFinding("chain", "link broken: prev is not the previous event's hash", seq))
        try:
            rec_type: Any = e.get("type")
            rec_payload_sha: Any = e.get("payload_sha256")
            rec_prev: Any = e.get("prev")
            h = event_hash(seq, at, rec_type, rec_payload_sha, rec_prev)  # a wrong type raises or mismatches
        except (TypeError, ValueError):
            h = None
        if h != e.get("hash"):
            out.append(LogFinding("chain", "event hash does not recompute (event edited)", seq))
        prev = e.get("hash")
        want_seq = seq + 1
        if isinstance(at, str):
            last_at = at if last_at is None or at > last_at else last_at
        head = {"seq": seq, "hash": e.get("hash"), "at": at}
    return out, head


#: The columns of a run's per-document rows that :func:`run_rows_digest` covers, in table order
#: (every column of ``run_rows`` but ``run_id``), and the order the rows are hashed in.
RUN_ROW_COLUMNS = ("doc_id", "corpus", "label", "label_role", "arm", "arm_role", "subgroup", "kind", "group_key",
                   "tags", "side_group", "headline", "split", "detector", "spec_hash", "status", "raw", "scale",
                   "direction", "ai_probability", "verdict", "ranking_score", "rule", "rule_field", "threshold",
                   "rule_defined", "counted", "flagged", "excluded")
RUN_ROW_ORDER = "detector, spec_hash, doc_id"


def run_rows_digest(con: Any, run_id: str) -> tuple[int, str]:
    """``(rows, SHA-256)`` of a run's per-document rows as stored: the canonical JSON array of
    each row's :data:`RUN_ROW_COLUMNS` (floats as Python prints them, NULL as null), one per
    line, in :data:`RUN_ROW_ORDER`. The run event records it, so a row of ``run_rows`` edited
    after the run (what ``export scores --run`` writes) is found by ``log verify``."""
    h = hashlib.sha256()
    n = 0
    cur = con.execute(f"SELECT {', '.join(RUN_ROW_COLUMNS)} FROM run_rows WHERE run_id = ? ORDER BY {RUN_ROW_ORDER}",
                      [run_id])
    while True:
        rows = cur.fetchmany(50_000)
        if not rows:
            return n, h.hexdigest()
        for r in rows:
            h.update(canonical_json(list(r)).encode("utf-8") + b"\n")
        n += len(rows)


def results_digest(results: Mapping[str, Any]) -> str:
    """SHA-256 of a run's results as logged: canonical JSON without the ``files`` listing
    that :func:`veribench.evaluate.tables.write_outputs` adds."""
    return payload_digest({k: v for k, v in results.items() if k != "files"})
