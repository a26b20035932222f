"""The workspace: one folder holding an embedded DuckDB database (``veribench.duckdb``).

Its tables are :mod:`veribench.store.schema`'s (and listed there); opening a workspace
read-write migrates an older one forward in one transaction
(:mod:`veribench.store.migrations`). Every logged write goes through
:mod:`veribench.store.writes`, which appends its event in the same transaction, so a failed
import or a killed run leaves what was stored before intact. This module opens, locks and
reads.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from veribench.errors import VeribenchError
from veribench.hashing import loads_strict
from veribench.records import ScoreResult, fingerprint_only_marked
from veribench.spec import Spec
from veribench.store import migrations, schema
from veribench.store.events import now_utc, provenance_fields
from veribench.store.sql import DuckSqlAccess, reentrant_transaction
from veribench.text.words import word_count

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["DB_NAME", "DEFAULT_WORKSPACE", "Workspace", "WorkspaceBusy", "connect", "now_utc"]

DEFAULT_WORKSPACE = "veribench-workspace"
DB_NAME = "veribench.duckdb"

#: Seconds a command waits for another process to release the workspace before it gives
#: up with :class:`WorkspaceBusy` (``VERIBENCH_LOCK_WAIT`` overrides; see docs/concurrency.md).
DEFAULT_LOCK_WAIT = 5.0


#: The one reading of "this score (``scores c``) was taken after a commitment": dated at or
#: after its time and logged by a scan batch later than its event (parameters: the
#: commitment's time, then its event seq). Its negation is what
#: :func:`veribench.store.commitments.run_integrity` counts as "predates the commitment".
SCANNED_AFTER_SQL = ("c.scanned_at >= ? AND (SELECT max(li.seq) FROM log_items li WHERE li.kind = 'score' AND "
                     "li.k1 = c.spec_hash AND li.k2 = c.text_sha256) > ?")


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
            if c.endswith(("veribench", "veribench.cli.main", "veribench/cli/main.py")):
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
                 wait: float | None = None, *, create: bool = True):
        self.path = Path(path)
        self.read_only = read_only
        #: callables run by :meth:`close` (stores kept beside the database, such as the rubric's)
        self.on_close: list[Any] = []
        self.db_path = self.path / DB_NAME
        if self.path.exists() and not self.path.is_dir():
            raise VeribenchError(f"workspace {self.path} is a file, not a folder (pass the workspace folder, which "
                                 f"holds {DB_NAME})")
        if (read_only or not create) and not self.db_path.is_file():
            raise VeribenchError(f"no workspace at {self.path} (no {DB_NAME}); create one with an import first")
        if not read_only:
            self.path.mkdir(parents=True, exist_ok=True)
        self.con = connect(self.db_path, read_only=read_only, wait=wait)
        try:
            self.con.execute("SET TimeZone = 'UTC'")  # times come back in UTC on every machine
            self.con.execute("SET enable_progress_bar = false")  # no bars in logs and pipes
            self.lock = threading.RLock()
            #: notes from a migration done by this open (an older workspace brought forward)
            self.migration_notes: list[str] = []
            if read_only:
                version = schema.stored_version(self.con, self.path)
                if version == 0:
                    raise VeribenchError(f"{self.db_path} is not a veribench workspace (a database with no tables)")
                migrations.check_readable(version, self.path, read_only=True)
            else:
                found, self.migration_notes = migrations.migrate(self.con, self.path)
                if 0 < found < schema.VERSION:
                    self.migration_notes.insert(0, f"migrated workspace {self.path} from schema version {found} to "
                                                   f"{schema.VERSION}")
        except BaseException:
            self.con.close()
            raise

    # -- plumbing -------------------------------------------------------------------
    def close(self) -> None:
        for fn in self.on_close:
            fn()
        self.on_close.clear()
        self.con.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """All-or-nothing block: commits on success, rolls back on any exception.

        Re-entrant: a ``transaction()`` opened inside another one (same thread; the
        lock is held) joins the outer one, so an importer can wrap many
        :func:`veribench.store.writes.put_scores` calls in one all-or-nothing block.
        """
        with reentrant_transaction(self) as con:
            yield con

    # -- scores ---------------------------------------------------------------------
    def cached_scores(self, spec_hash: str, shas: Iterable[str], *,
                      after: tuple[int, datetime] | None = None) -> dict[str, ScoreResult]:
        """Stored results (the newest scan of each) for ``spec_hash`` among ``shas`` (text
        SHA-256), as ScoreResults.

        ``after = (seq, time)``: only scans taken after a protocol commitment, i.e. logged
        by a scan batch later than event ``seq`` and dated after ``time`` (the rule of
        :func:`veribench.store.commitments.run_integrity`); earlier ones count as absent.
        """
        shas = list(dict.fromkeys(shas))
        if not shas:
            return {}
        out: dict[str, ScoreResult] = {}
        sql = ("SELECT text_sha256, status, raw, scale, direction, ai_probability, verdict, vendor_version, detail "
               "FROM scores c WHERE spec_hash = ? AND text_sha256 IN (SELECT unnest(?::VARCHAR[]))")
        params: list[Any] = [spec_hash, shas]
        if after is not None:
            sql += f" AND {SCANNED_AFTER_SQL}"
            params += [after[1], after[0]]
        with self.lock:
            rows = self.con.execute(sql, params).fetchall()
        for sha, status, raw, scale, direction, p, verdict, vv, detail in rows:
            out[sha] = ScoreResult(
                status=status, raw=raw, scale=scale or "", direction=direction or "higher_ai", ai_probability=p,
                verdict=verdict, vendor_version=vv, detail=json.loads(detail) if detail else {},
            )
        return out

    def detector_specs(self) -> list[Spec]:
        """Specs of every detector that has at least one submission."""
        rows = self.query(
            "SELECT DISTINCT s.spec_json FROM specs s JOIN submissions u USING (spec_hash) WHERE s.kind='detector' "
            "ORDER BY 1"
        )
        return [Spec.from_json(r[0]) for r in rows]

    # -- documents ------------------------------------------------------------------
    def document_count(self) -> int:
        n: int = self.query("SELECT count(*) FROM documents")[0][0]
        return n

    def documents_table(self, where: str = "", params: Sequence[Any] | None = None) -> pa.Table:
        """Documents as a pyarrow Table (tags/provenance/generation as JSON strings)."""
        return self.arrow(f"SELECT * FROM documents {where} ORDER BY doc_id", params)

    def fingerprint_only_ids(self) -> set[str]:
        """Ids of documents whose text must never be published (CONTRACTS.md, fingerprint-only).

        A document is fingerprint-only when it is stored without text, when its
        ``provenance.fingerprint_only`` is true (:func:`veribench.records.fingerprint_only_marked`,
        the rule the bundle verifier applies too), or when it derives (``provenance.source_id``,
        at any depth: an attack of a paraphrase of it) from a fingerprint-only document,
        since a derived text carries its source's sentences. This is the one rule every
        export path applies (:meth:`published_documents`).
        """
        with self.lock:
            raw = self.con.execute("SELECT doc_id, text IS NULL, provenance FROM documents").fetchall()
        rows = [(d, no_text, *provenance_fields(d, p)) for d, no_text, p in raw]
        out = {d for d, no_text, v, _ in rows if no_text or (v is not None and fingerprint_only_marked(v))}
        children: dict[str, list[str]] = {}
        for d, _, _, src in rows:
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
        word count, :func:`veribench.text.words.word_count`; ``None`` without a text), with
        ``text`` set to ``None`` for every fingerprint-only document (:meth:`fingerprint_only_ids`).
        ``where`` is an SQL filter on ``documents`` (e.g. ``"WHERE arm = ?"``)."""
        fp = self.fingerprint_only_ids()
        with self.lock:
            cur = self.con.execute(f"SELECT * FROM documents {where} ORDER BY doc_id", params or [])
            cols = [c[0] for c in cur.description]
            rows = cur.fetchall()
        out = []
        for r in rows:
            d = dict(zip(cols, r))
            for k in ("tags", "provenance", "generation"):
                d[k] = loads_strict(d[k]) if d.get(k) else None
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
        return dict(rows)

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

    def raw_scores(self) -> pa.Table:
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
