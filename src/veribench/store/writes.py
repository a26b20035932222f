"""The one logged write path: every row that ``veribench log verify`` or a bundle covers is
written here, and each write appends its event to the log in the same transaction.

The logged tables are :data:`veribench.store.schema.LOGGED_TABLES`. No other module runs
``INSERT``, ``UPDATE`` or ``DELETE`` on them (a test reads every module to check it); the
event log itself (``events``, ``log_items``) is appended through
:mod:`veribench.store.events`, which this module calls.

=========================  ===========================================  ==================
write                      rows                                          event
=========================  ===========================================  ==================
:func:`begin_import`       ``imports`` (status ``in_progress``)          (none yet)
:func:`add_documents`      ``documents``, ``document_segments``,         (at finish)
                           ``document_languages``
:func:`update_documents`   changed ``documents`` fields                  ``document_update``
:func:`put_submitted_texts`  ``submitted_texts``                         (the import's)
:func:`finish_import`      ``imports`` (status ``done``)                 ``import``
:func:`discard_import`     removes an unfinished import's rows           (none: never logged)
:func:`put_scores`         ``specs``, ``scores`` (a replaced scan moves  ``scan_batch``
                           to ``scores_superseded``), ``submissions``
:func:`link_submissions`   ``specs``, ``submissions``                    ``scan_batch``
:func:`put_spec`           ``specs`` (checked against its own hash)      (none)
:func:`record_commit`      ``protocols``, ``commitments``                ``protocol_commit``/``_amend``
:func:`record_timestamp`   ``commitments`` (its token)                   ``timestamp``
:func:`record_run`         ``runs``, ``run_rows``                        ``run``
:func:`withdraw_document`  removes documents, scores, texts; ``withdrawals``  ``withdrawal``
=========================  ===========================================  ==================

A write that replaces a logged row (:func:`put_scores` with ``replace``, a changed link in
:func:`put_scores` or :func:`link_submissions`, :func:`update_documents`) first keeps the old
row's canonical leaf text (:func:`veribench.store.events.keep_replaced`, table
``replaced_leaves``), so a bundle can show the replaced value with the text its fingerprint
hashes; :func:`withdraw_document` deletes the kept texts of the keys it detaches.

An import is one transaction (:func:`veribench.corpus.importers.store_import`), or, for a
corpus streamed in batches (:class:`veribench.corpus.importers.StreamWriter`), a sequence:
:func:`begin_import` commits the ``imports`` row marked ``in_progress``; each batch of
:func:`add_documents` is committed as it is written (memory holds one batch, not the
corpus); :func:`finish_import` appends the ``import`` event over every document the import
stored and marks it ``done``, in one transaction. Until then the import's documents are not
covered by the log: ``log verify`` names them as rows of an unfinished import, ``publish``
refuses, and the next streamed import (or a failure of this one) removes them with
:func:`discard_import`, which refuses any import that was logged.

Every function takes ``ws`` (anything with ``transaction()``: a
:class:`veribench.store.workspace.Workspace`) or ``con`` (the connection of an open
transaction) and raises what DuckDB raises on a broken write; the transaction then rolls
back whole, so nothing stored before is lost.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import PurePath
from typing import Any

from veribench.errors import InputError
from veribench.hashing import canonical_json
from veribench.records import ScoreResult
from veribench.spec import Spec
from veribench.store import events as ev
from veribench.store.events import now_utc
from veribench.store.sql import arrow_view, insert_arrow, insert_rows
from veribench.text import language

#: Column names and Arrow types of the rows :func:`put_scores` writes.
SCORE_COLUMNS = [("spec_hash", "string"), ("text_sha256", "string"), ("status", "string"), ("raw", "float64"),
                 ("scale", "string"), ("direction", "string"), ("ai_probability", "float64"),
                 ("verdict", "string"), ("vendor_version", "string"), ("detail", "string"),
                 ("scanned_at", "timestamp")]
SUBMISSION_COLUMNS = [("doc_id", "string"), ("spec_hash", "string"), ("submitted_sha256", "string")]
#: Column names and Arrow types of ``document_languages`` (:func:`add_languages`).
LANGUAGE_COLUMNS = [("doc_id", "string"), ("language", "string"), ("confidence", "float64"), ("method", "string")]
#: The columns of ``documents``, in table order (an Arrow table handed to :func:`add_documents`
#: has exactly these, all strings).
DOCUMENT_COLUMNS = ("doc_id", "corpus", "text", "text_sha256", "label", "arm", "kind", "subgroup", "tags",
                    "group_key", "provenance", "generation", "import_id")
#: Document fields an import may correct (:func:`update_documents`); the text is the
#: identity: a new text needs a new id.
UPDATABLE_FIELDS = ("label", "arm", "kind", "subgroup", "group_key", "tags", "provenance", "generation")
#: ``imports.report.status`` of an import whose documents are not logged yet.
IN_PROGRESS = "in_progress"
DONE = "done"


def json_text(obj: Any) -> str | None:
    """``obj`` as stored in a JSON column: sorted keys, UTF-8, no NaN; ``None`` stays NULL.

    Raises:
        ValueError: a NaN or infinity inside ``obj``.
    """
    if obj is None:
        return None
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, default=str, allow_nan=False)


# -- specs and scores -----------------------------------------------------------------------------

def put_spec(con: Any, spec: Spec) -> str:
    """Store ``spec`` once (``INSERT OR IGNORE``); returns its hash. A spec row carries its own
    proof (its hash is the SHA-256 of its canonical JSON), so it needs no event."""
    con.execute("INSERT OR IGNORE INTO specs VALUES (?, ?, ?, ?, ?, ?)",
                [spec.hash, spec.kind, spec.name, spec.version, canonical_json(dict(spec.settings)),
                 spec.canonical()])
    return spec.hash


def put_scores(ws: Any, spec: Spec, items: Sequence[tuple[str, ScoreResult]], *, scanned_at: datetime | None = None,
               links: Sequence[tuple[str, str]] = (), replace: bool = False) -> int:
    """Store scores and their submission links in one transaction, with their ``scan_batch`` event.

    Args:
        ws: the workspace.
        spec: the detector spec (stored once).
        items: ``(SHA-256 of the submitted text, result)``.
        scanned_at: the scan date (default now, UTC).
        links: ``(doc_id, SHA-256 of the submitted text)`` pairs for ``submissions``.
        replace: these rows become the newest scan of their (spec, text) in ``scores``; the
            rows they replace move to ``scores_superseded`` (nothing stored is lost, and
            each keeps the leaf its own scan batch logged). By default a stored call is
            kept (the cache rule: never computed or paid for twice) and only new rows are
            written. Used for a call failure sent again and for a rescan.

    Returns:
        The number of score rows written.

    Raises:
        InputError: a scan date in the future (a scan cannot be dated after the write that logs it).
    """
    ts = scanned_at or now_utc()
    if ts.tzinfo is not None and ts > now_utc():
        raise InputError(f"scores of detector {spec.name}: scan date {ts.isoformat()} is in the future; a scan "
                         "cannot be dated after the write that logs it")
    verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
    keyed: dict[str, list[Any]] = {}
    h = spec.hash
    for sha, r in items:
        raw = r.raw if (r.raw is None or math.isfinite(r.raw)) else None
        row = [h, sha, r.status, raw, r.scale, r.direction, r.ai_probability, r.verdict,
               r.vendor_version, json_text(r.detail), ts, (r.detail or {}).get("hazards")]
        if replace:
            keyed.pop(sha, None)
            keyed[sha] = row
        else:
            keyed.setdefault(sha, row)
    rows = list(keyed.values())
    link_rows = list({(d, h): [d, h, s] for d, s in links}.values())
    with ws.transaction() as c:
        put_spec(c, spec)
        if rows and not replace:  # a stored call is kept: only new rows are written and logged
            have = {x[0] for x in c.execute(
                "SELECT text_sha256 FROM scores WHERE spec_hash = ? AND text_sha256 IN (SELECT unnest(?::VARCHAR[]))",
                [spec.hash, [r[1] for r in rows]]).fetchall()}
            rows = [r for r in rows if r[1] not in have]
        if rows and replace:  # the scans these rows replace are kept, never overwritten
            _keep_replaced_scores(c, h, [r[1] for r in rows])
            c.execute(f"INSERT OR IGNORE INTO scores_superseded SELECT {', '.join(n for n, _ in SCORE_COLUMNS)} "
                      "FROM scores WHERE spec_hash = ? AND text_sha256 IN (SELECT unnest(?::VARCHAR[]))",
                      [h, [r[1] for r in rows]])
        if rows:
            insert_rows(c, verb, "scores", SCORE_COLUMNS, [r[:11] for r in rows])
        link_rows = _write_links(c, link_rows)
        if rows or link_rows:
            _log_scan_batch(c, spec, rows, link_rows, ts)
    return len(rows)


def link_submissions(ws: Any, spec: Spec, links: Sequence[tuple[str, str]]) -> int:
    """Record that ``spec`` scored ``submitted_sha256`` for each ``(doc_id, submitted_sha256)``
    (new or changed links only), with their ``scan_batch`` event. Returns how many were written."""
    h = spec.hash
    link_rows = list({(d, h): [d, h, s] for d, s in links}.values())
    with ws.transaction() as c:
        put_spec(c, spec)
        link_rows = _write_links(c, link_rows)
        if link_rows:
            _log_scan_batch(c, spec, [], link_rows, None)
    return len(link_rows)


def _write_links(c: Any, link_rows: list[list[Any]]) -> list[list[Any]]:
    """Write the links (``[doc_id, spec_hash, submitted_sha256]``, one detector) that are new or
    point at another text than the stored one, keeping the replaced ones' leaf texts
    (:func:`veribench.store.events.keep_replaced`); returns those written (the rest change nothing)."""
    if not link_rows:
        return link_rows
    have = dict(c.execute("SELECT doc_id, submitted_sha256 FROM submissions WHERE spec_hash = ? AND doc_id IN "
                          "(SELECT unnest(?::VARCHAR[]))", [link_rows[0][1], [r[0] for r in link_rows]]).fetchall())
    changed = [r for r in link_rows if have.get(r[0]) != r[2]]
    ev.keep_replaced(c, "link", [(d, h, ev.link_leaf_text(d, h, have[d])) for d, h, _ in changed if d in have])
    if changed:
        insert_rows(c, "INSERT OR REPLACE", "submissions", SUBMISSION_COLUMNS, changed)
    return changed


def _keep_replaced_scores(c: Any, spec_hash: str, text_shas: Sequence[str]) -> None:
    """Keep the leaf texts of the stored scores of ``spec_hash`` that a replacing write overwrites."""
    got = c.execute("SELECT spec_hash, text_sha256, status, raw, scale, direction, ai_probability, verdict, "
                    "vendor_version, scanned_at, detail FROM scores WHERE spec_hash = ? AND text_sha256 IN "
                    "(SELECT unnest(?::VARCHAR[]))", [spec_hash, list(text_shas)]).fetchall()
    ev.keep_replaced(c, "score", [(r[0], r[1], ev.score_leaf_text(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8],
                                                                   r[9], _hazards(r[10]))) for r in got])


def _hazards(detail: Any) -> Any:
    """``detail["hazards"]`` of a stored score's detail (JSON text or object), the part its leaf holds."""
    d = json.loads(detail) if isinstance(detail, str) else detail
    return d.get("hazards") if isinstance(d, dict) else None


def _log_scan_batch(c: Any, spec: Spec, rows: Sequence[Sequence[Any]], link_rows: Sequence[Sequence[Any]],
                    ts: datetime | None) -> None:
    """Append the ``scan_batch`` event of score rows and submission links just written."""
    items: dict[str, list[tuple[Any, Any, str]]] = {}
    if rows:
        items["score"] = [(r[0], r[1], ev.score_leaf(*r[:9], r[10], r[11])) for r in rows]
    if link_rows:
        items["link"] = [(d, h, ev.link_leaf(d, h, s)) for d, h, s in link_rows]
    ev.append_event(c, "scan_batch", {"spec_hash": spec.hash, "detector": spec.name,
                                      "scanned_at": ev.utc_text(ts) if rows else None}, items=items)


# -- imports and documents ------------------------------------------------------------------------

def new_import_id(kind: str) -> str:
    """A fresh import id: ``<kind>-<local time>-<8 hex digits>``."""
    return f"{kind}-{datetime.now().strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"


def begin_import(con: Any, import_id: str, kind: str, source: str | None, report: Mapping[str, Any]) -> None:
    """Insert the ``imports`` row of a new import, marked ``in_progress`` (``report.status``).

    Raises:
        duckdb.ConstraintException: the id is taken.
    """
    con.execute("INSERT INTO imports VALUES (?, ?, ?, ?, ?)",
                [import_id, kind, source, now_utc(), json_text({**report, "status": IN_PROGRESS})])


def unfinished_imports(con: Any) -> list[tuple[str, int]]:
    """``(import_id, documents stored)`` of every import still marked ``in_progress``
    (an import that was killed, or one running in another process)."""
    rows = con.execute("SELECT import_id FROM imports WHERE json_extract_string(report, '$.status') = ? "
                       "ORDER BY import_id", [IN_PROGRESS]).fetchall()
    return [(r[0], int(con.execute("SELECT count(*) FROM documents WHERE import_id = ?", [r[0]]).fetchone()[0]))
            for r in rows]


def add_documents(con: Any, documents: Any, segments: Sequence[tuple[str, Any]] = ()) -> int:
    """Insert document rows not already stored (by ``doc_id``), and the segments of mixed texts.

    Args:
        con: the connection of an open transaction.
        documents: a ``pyarrow.Table`` with the columns :data:`DOCUMENT_COLUMNS` (JSON
            columns as text, every document's ``import_id`` set); rows whose id is stored
            are skipped.
        segments: ``(doc_id, [{start, end, label}, ...])`` of the mixed texts among them.

    Each inserted document's language is identified and stored (:func:`add_languages`).

    Returns:
        The number of documents inserted.
    """
    if documents.num_rows == 0:
        return 0
    cols = ", ".join(DOCUMENT_COLUMNS)
    with arrow_view(con, documents.select(list(DOCUMENT_COLUMNS)), "_vb_docs") as view:
        n = con.execute(f"SELECT count(*) FROM {view} WHERE doc_id NOT IN (SELECT doc_id FROM documents)"
                        ).fetchone()[0]
        con.execute(f"INSERT INTO documents ({cols}) SELECT {cols} FROM {view} WHERE doc_id NOT IN "
                    "(SELECT doc_id FROM documents)")
        add_languages(con, view)
    rows = [(d, json_text(s)) for d, s in segments]
    if rows:
        con.executemany("INSERT OR REPLACE INTO document_segments VALUES (?, ?)", rows)
    return int(n)


def add_languages(con: Any, source: str) -> int:
    """Identify and store the language (:func:`veribench.text.language.identify`) of each
    document of ``source`` (a table or view with ``doc_id`` and ``text``) that is stored in
    ``documents`` and has no ``document_languages`` row yet. A document without letters
    gets a row with a NULL language and confidence. Returns the number of rows written.
    Each text is identified on its own (a bundle's verifier identifies the run's texts
    again, and a derived text's source may be outside the bundle)."""
    cur = con.execute(f"SELECT s.doc_id, substr(s.text, 1, {language.READ_CHARS}) FROM {source} s "
                      "WHERE s.doc_id IN (SELECT doc_id FROM documents) "
                      "AND s.doc_id NOT IN (SELECT doc_id FROM document_languages)")
    out: list[list[Any]] = []
    while batch := cur.fetchmany(50_000):
        found = language.identify([t for _, t in batch])
        out += [[d, lang, conf, language.METHOD] for (d, _), (lang, conf) in zip(batch, found)]
    if out:
        insert_rows(con, "INSERT OR IGNORE", "document_languages", LANGUAGE_COLUMNS, out)
    return len(out)


def update_documents(con: Any, import_id: str | None, changes: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Apply corrections to stored documents and log them: the one place they are recorded.

    Args:
        changes: ``{doc_id, field, old, new}``; ``field`` in :data:`UPDATABLE_FIELDS`, ``new``
            the value as stored (JSON fields as objects).

    Returns:
        The ``document_update`` event's payload ``{"import_id", "updates"}`` (also listed in
        the import's report), or ``None`` when nothing changed.

    Raises:
        ValueError: a field outside :data:`UPDATABLE_FIELDS`.
    """
    if not changes:
        return None
    for c in changes:
        if c["field"] not in UPDATABLE_FIELDS:
            raise ValueError(f"document field {c['field']!r} cannot be updated; updatable: {UPDATABLE_FIELDS}")
    ids = sorted({c["doc_id"] for c in changes})
    ev.keep_replaced(con, "doc", [(r[0], None, ev.doc_leaf_text(*r)) for r in con.execute(
        "SELECT doc_id, text_sha256, label, arm, kind, subgroup, corpus, group_key, tags, provenance, generation "
        "FROM documents WHERE doc_id IN (SELECT unnest(?::VARCHAR[]))", [ids]).fetchall()])
    for c in changes:
        f = c["field"]
        v = json_text(c["new"]) if f in ("tags", "provenance", "generation") else c["new"]
        con.execute(f"UPDATE documents SET {f} = ? WHERE doc_id = ?", [v, c["doc_id"]])
    payload = {"import_id": import_id, "updates": [dict(c) for c in changes]}
    ev.log_document_update(con, payload)
    return payload


def put_submitted_texts(con: Any, texts: Mapping[str, str]) -> None:
    """Keep ``{text_sha256: text}`` in ``submitted_texts`` (first copy wins); the texts
    detectors saw that differ from the corpus text (doubled, truncated or substituted)."""
    if not texts:
        return
    import pyarrow as pa

    st = pa.table({"text_sha256": pa.array(list(texts), pa.string()),
                   "text": pa.array(list(texts.values()), pa.string())})
    insert_arrow(con, "submitted_texts", st, "INSERT OR IGNORE")


def finish_import(con: Any, import_id: str, kind: str, corpus: str | None, source: str | None,
                  report: Mapping[str, Any]) -> dict[str, Any]:
    """Append the ``import`` event (one fingerprint per document the import stored) and mark
    the import ``done`` with its final report, in the caller's transaction.

    The event's ``corpora`` are the corpora of the documents it stored (derived documents keep
    their sources' corpora, so one import may span several): which runs' selections it
    reaches. Its ``source`` is the file name only (no local path in the log).

    Returns:
        The event.
    """
    src = PurePath(str(source)).name if source else None
    corpora = sorted(str(r[0]) for r in con.execute("SELECT DISTINCT corpus FROM documents WHERE import_id = ? AND "
                                                    "corpus IS NOT NULL", [import_id]).fetchall())
    e = ev.append_event_batched(con, "import", {"import_id": import_id, "kind": kind, "corpus": corpus,
                                                "corpora": corpora, "source": src},
                                "doc", _doc_leaf_batches(con, import_id))
    con.execute("UPDATE imports SET report = ? WHERE import_id = ?", [json_text({**report, "status": DONE}),
                                                                      import_id])
    return e


#: Documents read at a time to compute an import's leaves (memory holds one page of rows).
LEAF_PAGE = 50_000


def _doc_leaf_batches(con: Any, import_id: str) -> Iterator[list[tuple[str, None, str]]]:
    """The leaves of an import's documents, a page at a time in ``doc_id`` order (keyset
    pagination: each page is its own query, so the pages of a corpus of millions of rows
    never sit in memory together)."""
    last = ""
    while True:
        rows = con.execute("SELECT doc_id, text_sha256, label, arm, kind, subgroup, corpus, group_key, tags, "
                           "provenance, generation FROM documents WHERE import_id = ? AND doc_id > ? "
                           "ORDER BY doc_id LIMIT ?", [import_id, last, LEAF_PAGE]).fetchall()
        if not rows:
            return
        yield [(r[0], None, ev.doc_leaf(*r)) for r in rows]
        last = rows[-1][0]


def discard_import(con: Any, import_id: str) -> int:
    """Remove what an unfinished import stored (its documents, their segments, its row).

    Returns:
        The number of documents removed.

    Raises:
        ValueError: the import was logged (finished): logged rows leave only by a withdrawal.
    """
    if any(e["payload"].get("import_id") == import_id for e in ev.read_events(con, types=("import",))):
        raise ValueError(f"import {import_id} is logged; its documents cannot be discarded")
    n = con.execute("SELECT count(*) FROM documents WHERE import_id = ?", [import_id]).fetchone()[0]
    for table in ("document_segments", "document_languages"):
        con.execute(f"DELETE FROM {table} WHERE doc_id IN (SELECT doc_id FROM documents WHERE import_id = ?)",
                    [import_id])
    con.execute("DELETE FROM documents WHERE import_id = ?", [import_id])
    con.execute("DELETE FROM imports WHERE import_id = ?", [import_id])
    return int(n)


# -- protocols, commitments and runs -------------------------------------------------------------

def record_commit(con: Any, event_type: str, payload: dict[str, Any], *, content: str, file_name: str,
                  amendments: Any, record: Any) -> dict[str, Any]:
    """Append a ``protocol_commit``/``protocol_amend`` event and store the protocol's bytes and
    its commitment record (derived from the event by ``record(event) -> bytes``).

    Returns:
        The event.
    """
    e = ev.append_event(con, event_type, payload)
    con.execute("INSERT OR REPLACE INTO protocols VALUES (?, ?, ?, ?, ?, ?)",
                [payload["protocol_sha256"], payload["name"], file_name, ev.parse_utc(e["at"]), content,
                 json.dumps(amendments, default=str)])
    con.execute("INSERT OR REPLACE INTO commitments VALUES (?, ?, ?, ?, NULL, NULL, NULL, NULL)",
                [payload["protocol_sha256"], payload["protocol_id"], e["seq"], record(e).decode("utf-8")])
    return e


def record_timestamp(con: Any, payload: dict[str, Any], *, token: bytes, tsa_url: str,
                     tsa_roots: bytes | None) -> dict[str, Any]:
    """Append the ``timestamp`` event of a commitment record's RFC 3161 token and keep the token
    (and the authority's roots, if given) beside the record. ``tsa_url`` is the authority's
    ``scheme://host[:port]`` (no path, which may hold a key), kept in the workspace only
    (never in the event, which names the authority's host).

    Returns:
        The event.
    """
    e = ev.append_event(con, "timestamp", payload)
    con.execute("UPDATE commitments SET tsa_token = ?, tsa_url = ?, tsa_roots = ?, token_seq = ? "
                "WHERE protocol_sha256 = ?",
                [token, tsa_url, tsa_roots.decode("utf-8") if tsa_roots else None, e["seq"],
                 payload["protocol_sha256"]])
    return e


def record_run(con: Any, results: dict[str, Any], rows: Any = None) -> dict[str, Any]:
    """Store a run's results and per-document rows, and append its ``run`` event (which holds
    the SHA-256 of the results and of the rows, :func:`veribench.store.events.run_rows_digest`).

    Args:
        results: the results dict (``results["run"]``: ``run_id``, ``tag``, ``protocol``).
        rows: a ``pyarrow.Table`` of ``run_rows`` columns without ``run_id`` (added here), or None.

    Returns:
        The event.

    Raises:
        ValueError: a NaN or infinity in ``results`` (JSON has no such number).
    """
    import pyarrow as pa

    run = results.get("run") or {}
    p = run.get("protocol") or {}
    run_id = str(run["run_id"])
    con.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?)",
                [run_id, run.get("tag"), p.get("hash"), now_utc(), json.dumps(results, allow_nan=False)])
    if rows is not None and rows.num_rows:
        tbl = rows.add_column(0, "run_id", pa.array([run_id] * rows.num_rows, pa.string()))
        insert_arrow(con, "run_rows", tbl)
    n_rows, rows_sha = ev.run_rows_digest(con, run_id)
    return ev.append_event(con, "run", {
        "run_id": run_id, "tag": run.get("tag"), "protocol_id": p.get("id"),
        "protocol_sha256": p.get("hash"), "chain_head": p.get("chain_head") or run.get("chain_head"),
        "results_sha256": ev.results_digest(results), "n_documents": run.get("n_documents"),
        "created_at": run.get("created_at"), "n_rows": n_rows, "rows_sha256": rows_sha})


# -- withdrawals --------------------------------------------------------------------------------

def withdraw_document(con: Any, doc_id: str, *, invitation_id: str | None = None, requested_at: str | None = None,
                      via: str = "cli") -> dict[str, Any] | None:
    """Remove a withdrawn document from the workspace and log it: the single place for this.

    Runs inside the caller's open workspace transaction (``con``). Removes the document,
    every document derived from it (``provenance.source_id`` chains: attacks, paraphrases,
    humanized outputs, edits), their ``submissions``, and the ``scores`` (with their
    superseded scans) and ``submitted_texts`` rows of texts no remaining document or submission uses. Then it
    appends one row to ``withdrawals`` (ids and counts, never the text or its hash) and the
    ``withdrawal`` event (:func:`veribench.store.events.log_withdrawal`), which detaches the
    removed rows' keys from their logged fingerprints.

    Returns:
        The payload ``{"withdrawal_id", "doc_id", "invitation_id", "requested_at",
        "removed_at", "via", "documents_removed", "scores_removed",
        "submitted_texts_removed"}``, or None when the document is not in the workspace.
    """
    if not con.execute("SELECT count(*) FROM documents WHERE doc_id = ?", [doc_id]).fetchone()[0]:
        return None
    children: dict[str, list[str]] = {}
    for d, prov in con.execute("SELECT doc_id, provenance FROM documents WHERE provenance IS NOT NULL").fetchall():
        src = ev.provenance_fields(d, prov)[1]  # the strict reader, never json_extract (duplicate keys)
        if src is not None:
            children.setdefault(src, []).append(d)
    ids = [doc_id]
    frontier = [doc_id]
    while frontier:
        frontier = list(dict.fromkeys(c for d in frontier for c in children.get(d, ()) if c not in ids))
        ids += frontier
    shas = {r[0] for r in con.execute("SELECT text_sha256 FROM documents WHERE doc_id IN (SELECT unnest(?::VARCHAR[])) "
                                      "UNION SELECT submitted_sha256 FROM submissions WHERE doc_id IN "
                                      "(SELECT unnest(?::VARCHAR[]))", [ids, ids]).fetchall()}
    con.execute("DELETE FROM submissions WHERE doc_id IN (SELECT unnest(?::VARCHAR[]))", [ids])
    for table in ("document_segments", "document_languages"):
        con.execute(f"DELETE FROM {table} WHERE doc_id IN (SELECT unnest(?::VARCHAR[]))", [ids])
    con.execute("DELETE FROM documents WHERE doc_id IN (SELECT unnest(?::VARCHAR[]))", [ids])
    still = {r[0] for r in con.execute(
        "SELECT text_sha256 FROM documents WHERE text_sha256 IN (SELECT unnest(?::VARCHAR[])) UNION "
        "SELECT submitted_sha256 FROM submissions WHERE submitted_sha256 IN (SELECT unnest(?::VARCHAR[]))",
        [sorted(shas), sorted(shas)]).fetchall()}
    gone = sorted(shas - still)
    n_scores = con.execute("SELECT count(*) FROM scores WHERE text_sha256 IN (SELECT unnest(?::VARCHAR[]))",
                           [gone]).fetchone()[0]
    con.execute("DELETE FROM scores WHERE text_sha256 IN (SELECT unnest(?::VARCHAR[]))", [gone])
    con.execute("DELETE FROM scores_superseded WHERE text_sha256 IN (SELECT unnest(?::VARCHAR[]))", [gone])
    n_sub = con.execute("SELECT count(*) FROM submitted_texts WHERE text_sha256 IN (SELECT unnest(?::VARCHAR[]))",
                        [gone]).fetchone()[0]
    con.execute("DELETE FROM submitted_texts WHERE text_sha256 IN (SELECT unnest(?::VARCHAR[]))", [gone])
    t = now_utc()
    payload = {"withdrawal_id": f"wd-{t:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}", "doc_id": doc_id,
               "invitation_id": invitation_id, "requested_at": requested_at, "removed_at": t.isoformat(),
               "via": via, "documents_removed": ids, "scores_removed": int(n_scores),
               "submitted_texts_removed": int(n_sub)}
    con.execute("INSERT INTO withdrawals VALUES (?,?,?,?,?,?,?)",
                [payload["withdrawal_id"], doc_id, invitation_id, requested_at, t, via,
                 json.dumps({k: payload[k] for k in ("documents_removed", "scores_removed",
                                                     "submitted_texts_removed")})])
    ev.log_withdrawal(con, payload, text_shas=gone)  # ids and counts; the texts' keys are detached
    return payload
