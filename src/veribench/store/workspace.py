"""The workspace: one folder holding an embedded DuckDB database (``veribench.duckdb``).

Tables
------
documents    one row per document (see :mod:`veribench.corpus.document`)
specs        every plug-in spec seen (hash -> name, version, settings)
scores       the score cache and record, keyed by (spec_hash, text_sha256 of the
             text actually submitted); never computed or paid for twice
submissions  which submitted text a detector scored for a document (doc_id, spec_hash,
             submitted_sha256); ``submitted_sha256 != documents.text_sha256`` is flagged
imports      one row per import, with its report (JSON)
document_segments  mixed texts only: doc_id -> segments (JSON ``[{start, end, label}]``,
             character offsets; see :class:`veribench.corpus.document.Segment`)
protocols    committed protocol files: hash, date, content, amendments (a cache; the
             event log is the record)
runs         evaluation runs: protocol hash, tag, date, results (JSON)
withdrawals  documents withdrawn by their contributors, logged without their text
             (created on first use by :func:`veribench.rubric.write.armb.withdraw_document`)
events       the hash-chained event log, and ``log_items`` its row fingerprints
             (:mod:`veribench.store.events`); every write below appends to it

Every write that belongs together runs in one transaction, so a failed import or a
killed run leaves what was stored before intact.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import duckdb

from ..detectors.base import ScoreResult
from ..errors import VeribenchError
from ..hashing import canonical_json
from ..spec import Spec
from . import events as ev

DEFAULT_WORKSPACE = "veribench-workspace"
DB_NAME = "veribench.duckdb"

SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    doc_id VARCHAR PRIMARY KEY,
    corpus VARCHAR,
    text VARCHAR,
    text_sha256 VARCHAR NOT NULL,
    label VARCHAR NOT NULL,
    arm VARCHAR,
    kind VARCHAR,
    subgroup VARCHAR,
    tags JSON,
    group_key VARCHAR,
    provenance JSON,
    generation JSON,
    import_id VARCHAR
);
CREATE TABLE IF NOT EXISTS document_segments (
    doc_id VARCHAR PRIMARY KEY,
    segments JSON NOT NULL
);
CREATE TABLE IF NOT EXISTS specs (
    spec_hash VARCHAR PRIMARY KEY,
    kind VARCHAR, name VARCHAR, version VARCHAR, settings JSON, spec_json VARCHAR
);
CREATE TABLE IF NOT EXISTS scores (
    spec_hash VARCHAR NOT NULL,
    text_sha256 VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    raw DOUBLE,
    scale VARCHAR,
    direction VARCHAR,
    ai_probability DOUBLE,
    verdict VARCHAR,
    vendor_version VARCHAR,
    detail JSON,
    scanned_at TIMESTAMPTZ,
    PRIMARY KEY (spec_hash, text_sha256)
);
CREATE TABLE IF NOT EXISTS submissions (
    doc_id VARCHAR NOT NULL,
    spec_hash VARCHAR NOT NULL,
    submitted_sha256 VARCHAR NOT NULL,
    PRIMARY KEY (doc_id, spec_hash)
);
CREATE TABLE IF NOT EXISTS imports (
    import_id VARCHAR PRIMARY KEY, kind VARCHAR, source VARCHAR, created_at TIMESTAMPTZ, report JSON
);
CREATE TABLE IF NOT EXISTS protocols (
    protocol_hash VARCHAR PRIMARY KEY, name VARCHAR, path VARCHAR, committed_at TIMESTAMPTZ,
    content VARCHAR, amendments JSON
);
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY, tag VARCHAR, protocol_hash VARCHAR, created_at TIMESTAMPTZ, results JSON
);
"""


def _json(obj: Any) -> str | None:
    if obj is None:
        return None
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, default=str, allow_nan=False)


def now_utc() -> datetime:
    return datetime.now(timezone.utc)


# Column types for bulk inserts through Arrow (DuckDB's executemany costs ~5 ms a row).
_SCORE_COLUMNS = [("spec_hash", "string"), ("text_sha256", "string"), ("status", "string"), ("raw", "float64"),
                  ("scale", "string"), ("direction", "string"), ("ai_probability", "float64"),
                  ("verdict", "string"), ("vendor_version", "string"), ("detail", "string"),
                  ("scanned_at", "timestamp")]
_SUBMISSION_COLUMNS = [("doc_id", "string"), ("spec_hash", "string"), ("submitted_sha256", "string")]


@contextmanager
def arrow_view(con: Any, arrow_table: Any, prefix: str = "_vb"):
    """``arrow_table`` registered on DuckDB connection ``con`` under a fresh view name (yielded)
    for the block's queries, and unregistered after it, whatever happens."""
    import uuid

    view = f"{prefix}_{uuid.uuid4().hex[:12]}"
    con.register(view, arrow_table)
    try:
        yield view
    finally:
        con.unregister(view)


def insert_arrow(con: Any, table: str, arrow_table: Any, verb: str = "INSERT") -> None:
    """``{verb} INTO table`` every row of ``arrow_table``, its columns matched by name."""
    cols = ", ".join(arrow_table.column_names)
    with arrow_view(con, arrow_table) as view:
        con.execute(f"{verb} INTO {table} ({cols}) SELECT {cols} FROM {view}")


def _insert_rows(con: duckdb.DuckDBPyConnection, verb: str, table: str, columns: Sequence[tuple[str, str]],
                 rows: Sequence[Sequence[Any]]) -> None:
    """``{verb} INTO table`` all ``rows`` at once through an Arrow table (same column order).

    Rows repeating a primary key (the first two columns) are reduced as row-by-row
    inserts would: the first is kept for ``INSERT OR IGNORE``, the last for ``OR REPLACE``.
    """
    import pyarrow as pa

    keyed: dict[tuple, Sequence[Any]] = {}
    for r in rows:
        k = (r[0], r[1])
        if "REPLACE" in verb:
            keyed.pop(k, None)
            keyed[k] = r
        else:
            keyed.setdefault(k, r)
    rows = list(keyed.values())
    types = {"string": pa.string(), "float64": pa.float64(), "timestamp": pa.timestamp("us", tz="UTC")}
    cols = list(zip(*rows))
    tbl = pa.table({name: pa.array(list(vals), types[t]) for (name, t), vals in zip(columns, cols)})
    insert_arrow(con, table, tbl, verb)


#: Seconds a command waits for another process to release the workspace before it gives
#: up with :class:`WorkspaceBusy` (``VERIBENCH_LOCK_WAIT`` overrides; see docs/concurrency.md).
DEFAULT_LOCK_WAIT = 5.0


class WorkspaceBusy(VeribenchError):
    """Another process holds the workspace's DuckDB file. The message names that process."""


def _holder(message: str) -> str:
    """Who holds the lock, from DuckDB's message ("... held in /usr/bin/python3 (PID 123)")."""
    m = re.search(r"held in (.*?) \(PID (\d+)\)", message)
    if not m:
        return "another process"
    exe, pid = m.group(1), int(m.group(2))
    cmd = None
    try:
        import psutil  # optional

        cmd = psutil.Process(pid).cmdline()
    except Exception:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace").split("\0")
        except OSError:
            cmd = None
    cmd = [c for c in (cmd or []) if c]
    if cmd:
        # "python -m veribench.cli.main score ..." / ".../bin/veribench score ..." -> "veribench score ..."
        for i, c in enumerate(cmd):
            if c.endswith("veribench") or c.endswith("veribench.cli.main") or c.endswith("veribench/cli/main.py"):
                cmd = ["veribench", *cmd[i + 1:]]
                break
        text = " ".join(" ".join(cmd).split())
        return f"process {pid} ({text[:200]})"
    return f"process {pid} ({exe})"


def connect(db_path: Path, *, read_only: bool, wait: float | None = None) -> duckdb.DuckDBPyConnection:
    """Open the DuckDB file, waiting up to ``wait`` seconds for another process's lock.

    Raises:
        WorkspaceBusy: another process still holds the file after the wait; the message
            names it (PID and command line) and says what to do.
        VeribenchError: the file cannot be opened at all (not a DuckDB file, no access).
    """
    if wait is None:
        try:
            wait = float(os.environ.get("VERIBENCH_LOCK_WAIT", DEFAULT_LOCK_WAIT))
        except ValueError:
            wait = DEFAULT_LOCK_WAIT
    deadline = time.monotonic() + max(0.0, wait)
    while True:
        try:
            return duckdb.connect(str(db_path), read_only=read_only)
        except duckdb.IOException as e:
            msg = str(e)
            if "lock" not in msg.lower():
                raise VeribenchError(f"cannot open workspace {db_path.parent}: {' '.join(msg.split())}") from None
            if time.monotonic() >= deadline:
                mode = "read it" if read_only else "write to it"
                raise WorkspaceBusy(
                    f"workspace {db_path.parent} is in use by {_holder(msg)}, which holds its database; DuckDB lets "
                    f"one process write a workspace at a time, so this command cannot {mode} now. Wait for that "
                    "command to finish (or stop it) and run this one again (docs/concurrency.md)") from None
            time.sleep(0.1)
        except duckdb.Error as e:
            msg = " ".join(str(e).split())
            if "different configuration" in msg:
                raise VeribenchError(f"workspace {db_path.parent} is already open in this process with other "
                                     "settings (read-only and read-write at once)") from None
            raise VeribenchError(f"cannot open workspace {db_path.parent}: {msg}") from None


@contextmanager
def reentrant_transaction(owner: Any, begin: str = "BEGIN TRANSACTION") -> Iterator[Any]:
    """All-or-nothing block on ``owner.con`` under ``owner.lock``: commits on success, rolls back on
    any exception; a block opened inside another one in the same thread joins it. Shared by
    :class:`Workspace` (DuckDB) and the rubric's SQLite store (``begin`` = ``BEGIN IMMEDIATE``)."""
    with owner.lock:
        if getattr(owner, "_tx_depth", 0):
            owner._tx_depth += 1
            try:
                yield owner.con
            finally:
                owner._tx_depth -= 1
            return
        owner.con.execute(begin)
        owner._tx_depth = 1
        try:
            yield owner.con
        except BaseException:
            owner._tx_depth = 0
            owner.con.execute("ROLLBACK")
            raise
        else:
            owner._tx_depth = 0
            owner.con.execute("COMMIT")


class SqlAccess:
    """Locked access to one connection: ``self.con`` (DuckDB or sqlite3) and ``self.lock``
    (a lock held for each call). Shared by the workspace, the bundles' snapshot and the
    rubric and writing apps' stores."""

    con: Any
    lock: Any

    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple]:
        """Run ``sql`` with ``params`` and return all rows."""
        with self.lock:
            return self.con.execute(sql, list(params or [])).fetchall()

    def close(self) -> None:
        """Close the connection (under the lock, so no call is cut off mid-query)."""
        with self.lock:
            self.con.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class DuckSqlAccess(SqlAccess):
    """:class:`SqlAccess` over DuckDB, which also answers in Arrow."""

    def arrow(self, sql: str, params: Sequence[Any] | None = None):
        """Run ``sql`` and return a ``pyarrow.Table``."""
        with self.lock:
            return self.con.sql(sql, params=params or None).to_arrow_table()


class Workspace(DuckSqlAccess):
    """A veribench workspace folder.

    Args:
        path: folder; created if missing. The database is ``path/veribench.duckdb``.
        read_only: open without write access (several read-only processes may share it).
        wait: seconds to wait for another process's lock (default ``VERIBENCH_LOCK_WAIT``
            or :data:`DEFAULT_LOCK_WAIT`).

    The connection is shared by the threads of one process under a lock; DuckDB
    allows one writing process at a time (docs/concurrency.md).

    Raises:
        WorkspaceBusy: another process holds the database (the message names it).
        VeribenchError: a read-only open of a folder with no database, or a file DuckDB cannot open.
    """

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_WORKSPACE, read_only: bool = False,
                 wait: float | None = None):
        self.path = Path(path)
        self.read_only = read_only
        #: callables run by :meth:`close` (stores kept beside the database, such as the rubric's)
        self.on_close: list[Any] = []
        if not read_only:
            self.path.mkdir(parents=True, exist_ok=True)
        self.db_path = self.path / DB_NAME
        if read_only and not self.db_path.is_file():
            raise VeribenchError(f"no workspace at {self.path} (no {DB_NAME}); create one with an import first")
        self.con = connect(self.db_path, read_only=read_only, wait=wait)
        self.con.execute("SET TimeZone = 'UTC'")  # times come back in UTC on every machine
        self.con.execute("SET enable_progress_bar = false")  # no bars in logs and pipes
        self.lock = threading.RLock()
        if not read_only:
            self.con.execute(SCHEMA)
            ev.ensure_schema(self.con)

    # -- plumbing -------------------------------------------------------------------
    def close(self) -> None:
        for fn in self.on_close:
            fn()
        self.on_close.clear()
        self.con.close()

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """All-or-nothing block: commits on success, rolls back on any exception.

        Re-entrant: a ``transaction()`` opened inside another one (same thread; the
        lock is held) joins the outer one, so an importer can wrap many
        :meth:`put_scores` calls in one all-or-nothing block.
        """
        with reentrant_transaction(self) as con:
            yield con

    # -- specs ----------------------------------------------------------------------
    def put_spec(self, spec: Spec, con: duckdb.DuckDBPyConnection | None = None) -> str:
        c = con or self.con
        with self.lock:
            c.execute(
                "INSERT OR IGNORE INTO specs VALUES (?, ?, ?, ?, ?, ?)",
                [spec.hash, spec.kind, spec.name, spec.version, canonical_json(dict(spec.settings)), spec.canonical()],
            )
        return spec.hash

    # -- scores ---------------------------------------------------------------------
    def cached_scores(self, spec_hash: str, shas: Iterable[str]) -> dict[str, ScoreResult]:
        """Stored results for ``spec_hash`` among ``shas`` (text SHA-256), as ScoreResults."""
        shas = list(dict.fromkeys(shas))
        if not shas:
            return {}
        out: dict[str, ScoreResult] = {}
        with self.lock:
            rows = self.con.execute(
                "SELECT text_sha256, status, raw, scale, direction, ai_probability, verdict, vendor_version, detail "
                "FROM scores WHERE spec_hash = ? AND text_sha256 IN (SELECT unnest(?::VARCHAR[]))",
                [spec_hash, shas],
            ).fetchall()
        for sha, status, raw, scale, direction, p, verdict, vv, detail in rows:
            out[sha] = ScoreResult(
                status=status, raw=raw, scale=scale or "", direction=direction or "higher_ai", ai_probability=p,
                verdict=verdict, vendor_version=vv, detail=json.loads(detail) if detail else {},
            )
        return out

    def put_scores(
        self,
        spec: Spec,
        items: Sequence[tuple[str, ScoreResult]],
        *,
        scanned_at: datetime | None = None,
        links: Sequence[tuple[str, str]] = (),
        replace: bool = False,
    ) -> None:
        """Store scores transactionally: ``items`` are (submitted text sha256, result).

        ``links`` are (doc_id, submitted_sha256) pairs recorded in ``submissions``.
        Existing (spec, text) rows are kept unless ``replace``: a stored call is never
        overwritten by a repeat.
        """
        ts = scanned_at or now_utc()
        if ts.tzinfo is not None and ts > now_utc():
            from ..errors import InputError

            raise InputError(f"scores of detector {spec.name}: scan date {ts.isoformat()} is in the future; a scan "
                             "cannot be dated after the write that logs it")
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        keyed: dict[str, list[Any]] = {}
        h = spec.hash
        for sha, r in items:
            raw = r.raw if (r.raw is None or math.isfinite(r.raw)) else None
            row = [h, sha, r.status, raw, r.scale, r.direction, r.ai_probability, r.verdict,
                   r.vendor_version, _json(r.detail), ts, (r.detail or {}).get("hazards")]
            if replace:
                keyed.pop(sha, None)
                keyed[sha] = row
            else:
                keyed.setdefault(sha, row)
        rows = list(keyed.values())
        link_rows = list({(d, h): [d, h, s] for d, s in links}.values())
        with self.transaction() as c:
            self.put_spec(spec, c)
            if rows and not replace:  # a stored call is kept: only new rows are written and logged
                have = {x[0] for x in c.execute(
                    "SELECT text_sha256 FROM scores WHERE spec_hash = ? AND text_sha256 IN (SELECT unnest(?::VARCHAR[]))",
                    [spec.hash, [r[1] for r in rows]]).fetchall()}
                rows = [r for r in rows if r[1] not in have]
            if rows:
                _insert_rows(c, verb, "scores", _SCORE_COLUMNS, [r[:11] for r in rows])
            link_rows = self._changed_links(c, spec, link_rows)
            if link_rows:
                _insert_rows(c, "INSERT OR REPLACE", "submissions", _SUBMISSION_COLUMNS, link_rows)
            if rows or link_rows:
                self._log_scan_batch(c, spec, rows, link_rows, ts)

    def _log_scan_batch(self, c: duckdb.DuckDBPyConnection, spec: Spec, rows: Sequence[Sequence[Any]],
                        link_rows: Sequence[Sequence[Any]], ts: datetime | None) -> None:
        """Append the ``scan_batch`` event of score rows and submission links just written."""
        items: dict[str, list[tuple[Any, Any, str]]] = {}
        if rows:
            items["score"] = [(r[0], r[1], ev.score_leaf(*r[:9], r[10], r[11])) for r in rows]
        if link_rows:
            items["link"] = [(d, h, ev.link_leaf(d, h, s)) for d, h, s in link_rows]
        ev.append_event(c, "scan_batch", {"spec_hash": spec.hash, "detector": spec.name,
                                          "scanned_at": ev.utc_text(ts) if rows else None}, items=items)

    def link_submissions(self, spec: Spec, links: Sequence[tuple[str, str]]) -> None:
        """Record that ``spec`` scored ``submitted_sha256`` for each (doc_id, submitted_sha256)."""
        h = spec.hash
        link_rows = list({(d, h): [d, h, s] for d, s in links}.values())
        with self.transaction() as c:
            self.put_spec(spec, c)
            link_rows = self._changed_links(c, spec, link_rows)
            if link_rows:
                _insert_rows(c, "INSERT OR REPLACE", "submissions", _SUBMISSION_COLUMNS, link_rows)
                self._log_scan_batch(c, spec, [], link_rows, None)

    @staticmethod
    def _changed_links(c: duckdb.DuckDBPyConnection, spec: Spec, link_rows: list[list[Any]]) -> list[list[Any]]:
        """The links that are new or point at another text than the stored one (the rest change nothing)."""
        if not link_rows:
            return link_rows
        have = dict(c.execute("SELECT doc_id, submitted_sha256 FROM submissions WHERE spec_hash = ? AND doc_id IN "
                              "(SELECT unnest(?::VARCHAR[]))", [link_rows[0][1], [r[0] for r in link_rows]]).fetchall())
        return [r for r in link_rows if have.get(r[0]) != r[2]]

    def detector_specs(self) -> list[Spec]:
        """Specs of every detector that has at least one submission."""
        rows = self.query(
            "SELECT DISTINCT s.spec_json FROM specs s JOIN submissions u USING (spec_hash) WHERE s.kind='detector' "
            "ORDER BY 1"
        )
        return [Spec.from_json(r[0]) for r in rows]

    # -- documents ------------------------------------------------------------------
    def document_count(self) -> int:
        return self.query("SELECT count(*) FROM documents")[0][0]

    def documents_table(self, where: str = "", params: Sequence[Any] | None = None):
        """Documents as a pyarrow Table (tags/provenance/generation as JSON strings)."""
        return self.arrow(f"SELECT * FROM documents {where} ORDER BY doc_id", params)

    def fingerprint_only_ids(self) -> set[str]:
        """Ids of documents whose text must never be published (CONTRACTS.md, fingerprint-only).

        A document is fingerprint-only when it is stored without text, when its
        ``provenance.fingerprint_only`` is true, or when it derives (``provenance.source_id``,
        at any depth: an attack of a paraphrase of it) from a fingerprint-only document,
        since a derived text carries its source's sentences. This is the one rule every
        export path applies (:meth:`published_documents`).
        """
        with self.lock:
            rows = self.con.execute(
                "SELECT doc_id, text IS NULL OR coalesce(TRY_CAST(json_extract(provenance, '$.fingerprint_only') "
                "AS BOOLEAN), false), json_extract_string(provenance, '$.source_id') FROM documents").fetchall()
        out = {d for d, fp, _ in rows if fp}
        children: dict[str, list[str]] = {}
        for d, _, src in rows:
            if src:
                children.setdefault(src, []).append(d)
        frontier = list(out)
        while frontier:
            nxt = [c for d in frontier for c in children.get(d, ()) if c not in out]
            out.update(nxt)
            frontier = nxt
        return out

    def published_documents(self, where: str = "", params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        """Documents as they may be published, ordered by id: every column of ``documents``
        (JSON columns parsed) plus ``fingerprint_only`` (bool) and ``words`` (the rubric's
        word count, :func:`veribench.rubric.text.word_count`; ``None`` without a text), with
        ``text`` set to ``None`` for every fingerprint-only document (:meth:`fingerprint_only_ids`).
        ``where`` is an SQL filter on ``documents`` (e.g. ``"WHERE arm = ?"``)."""
        from ..rubric.text import word_count

        fp = self.fingerprint_only_ids()
        with self.lock:
            cur = self.con.execute(f"SELECT * FROM documents {where} ORDER BY doc_id", params or [])
            cols = [c[0] for c in cur.description]
            rows = cur.fetchall()
        out = []
        for r in rows:
            d = dict(zip(cols, r))
            for k in ("tags", "provenance", "generation"):
                d[k] = json.loads(d[k]) if d.get(k) else None
            d["words"] = word_count(d["text"]) if d["text"] is not None else (d["provenance"] or {}).get("words")
            d["fingerprint_only"] = d["doc_id"] in fp
            if d["fingerprint_only"]:
                d["text"] = None
            out.append(d)
        return out

    def segments_for(self, doc_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """Stored segments (``[{start, end, label}]``) of those of ``doc_ids`` that are mixed texts."""
        rows = self.query("SELECT doc_id, segments FROM document_segments WHERE doc_id IN "
                          "(SELECT unnest(?::VARCHAR[]))", [list(doc_ids)])
        return {d: json.loads(s) for d, s in rows}

    def texts_for(self, doc_ids: Sequence[str]) -> dict[str, str]:
        rows = self.query(
            "SELECT doc_id, text FROM documents WHERE doc_id IN (SELECT unnest(?::VARCHAR[]))", [list(doc_ids)]
        )
        return {d: t for d, t in rows}

    # -- export ---------------------------------------------------------------------
    RAW_SCORES_SQL = """
        SELECT d.doc_id, d.corpus, d.label, d.arm, d.kind, d.subgroup, d.tags, d.group_key,
               d.text_sha256, u.submitted_sha256, (u.submitted_sha256 <> d.text_sha256) AS text_differs,
               s.name AS detector, s.version AS detector_version, s.settings AS detector_settings,
               s.spec_hash, c.status, c.raw, c.scale, c.direction, c.ai_probability,
               1 - c.ai_probability AS human_likelihood, c.verdict, c.vendor_version, c.scanned_at
        FROM documents d
        JOIN submissions u ON u.doc_id = d.doc_id
        JOIN specs s ON s.spec_hash = u.spec_hash
        LEFT JOIN scores c ON c.spec_hash = u.spec_hash AND c.text_sha256 = u.submitted_sha256
        ORDER BY d.doc_id, s.name, s.spec_hash
    """

    def raw_scores(self):
        """Per-document raw scores as a pyarrow Table (one row per document x detector)."""
        return self.arrow(self.RAW_SCORES_SQL)

    def export_scores(self, path: str | os.PathLike[str]) -> Path:
        """Write raw per-document scores to ``path`` (``.csv`` or ``.parquet``)."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        fmt = {".csv": "FORMAT CSV, HEADER", ".parquet": "FORMAT PARQUET"}.get(p.suffix.lower())
        if fmt is None:
            raise ValueError(f"{p}: export format must be .csv or .parquet")
        with self.lock:
            self.con.execute(f"COPY ({self.RAW_SCORES_SQL}) TO '{str(p).replace(chr(39), chr(39) * 2)}' ({fmt})")
        return p
