"""The rating app's own store: SQLite in WAL mode, beside the workspace's DuckDB file.

Why a second file: DuckDB lets one process write a database at a time and keeps the lock
for as long as a connection is open, so a rating server holding the workspace would lock
out ``rate results``, ``report``, ``export`` and every other command for its whole
lifetime. SQLite in write-ahead-log mode lets any number of processes read while one
writes, and writers wait for each other (``busy_timeout``) instead of failing. The rating
app therefore never opens the DuckDB file: everything it stores lives in
``<workspace>/rubric.sqlite`` (see ``docs/concurrency.md``).

A workspace whose rubric tables still live in its DuckDB file (veribench before this
store) is copied into ``rubric.sqlite`` on first use; the DuckDB copy is left as it was.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from veribench.store.sql import SqlAccess, reentrant_transaction
from veribench.store.workspace import Workspace

FILE_NAME = "rubric.sqlite"
#: How long a writer waits for another process's write transaction, in milliseconds.
BUSY_TIMEOUT_MS = 30_000
#: Tables copied from a DuckDB workspace written by earlier versions.
LEGACY_TABLES = ("rubric_items", "rubric_editors", "rubric_assignments", "rubric_ratings", "rubric_marks",
                 "rubric_forms", "rubric_meta")


class RubricDB(SqlAccess):
    """One SQLite connection to a rubric store, shared by the threads of one process.

    Args:
        path: the SQLite file, or ``None`` for an empty in-memory store (read-only use of
            a workspace that has no rubric store).
        schema: SQL creating the tables (``CREATE TABLE IF NOT EXISTS ...``).

    The interface mirrors :class:`veribench.store.Workspace` where the rubric uses it:
    ``lock``, ``con.execute``, :meth:`query`, :meth:`transaction` (re-entrant, all or nothing).
    """

    def __init__(self, path: Path | None, schema: str):
        self.path = path
        self.lock = threading.RLock()
        self._tx_depth = 0
        target = str(path) if path is not None else ":memory:"
        self.con = sqlite3.connect(target, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=False)
        with self.lock:
            self.con.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if path is not None:
                self.con.execute("PRAGMA journal_mode = WAL")
                self.con.execute("PRAGMA synchronous = FULL")  # a submitted reading survives a power cut
            self.con.executescript(schema)

    def transaction(self):
        """All-or-nothing block (``BEGIN IMMEDIATE``: the write lock is taken at once, so two
        processes never deadlock upgrading a read); joins an enclosing one in this thread."""

        return reentrant_transaction(self, "BEGIN IMMEDIATE")



def _legacy_rows(duck: Any) -> dict[str, tuple[list[str], list[tuple]]] | None:
    """Rubric rows kept in a DuckDB workspace by earlier versions, or None when there are none."""
    have = {r[0] for r in duck.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if "rubric_items" not in have:
        return None
    out = {}
    for t in LEGACY_TABLES:
        if t not in have:
            continue
        cur = duck.execute(f"SELECT * FROM {t}")
        cols = [d[0] for d in cur.description]
        rows = [tuple(v.isoformat() if hasattr(v, "isoformat") else v for v in r) for r in cur.fetchall()]
        out[t] = (cols, rows)
    return out


def _copy_legacy(db: RubricDB, legacy: dict[str, tuple[list[str], list[tuple]]]) -> None:
    with db.transaction() as c:
        for t, (cols, rows) in legacy.items():
            if rows:
                c.executemany(f"INSERT OR IGNORE INTO {t} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                              rows)


def open_store(folder: str | Path, schema: str, *, duck: Any = None, read_only: bool = False) -> RubricDB:
    """The rubric store of workspace ``folder``.

    Args:
        duck: an open DuckDB connection to the workspace, used to copy rubric tables kept
            there by earlier versions (``None``: open the DuckDB file read-only for that,
            only when ``rubric.sqlite`` does not exist yet).
        read_only: never create a file; a workspace without a rubric store gets an empty
            in-memory one (or an in-memory copy of its legacy tables).
    """
    folder = Path(folder)
    path = folder / FILE_NAME
    if path.exists():
        return RubricDB(path, schema)
    legacy = None
    if duck is not None:
        legacy = _legacy_rows(duck)
    elif (folder / "veribench.duckdb").exists():

        with Workspace(folder, read_only=True) as ws:
            legacy = _legacy_rows(ws.con)
    if read_only:
        db = RubricDB(None, schema)
    else:
        folder.mkdir(parents=True, exist_ok=True)
        db = RubricDB(path, schema)
    if legacy:
        _copy_legacy(db, legacy)
    return db


def store_exists(folder: str | Path, duck: Any = None) -> bool:
    """True when the workspace has a rubric store (the SQLite file, or legacy DuckDB tables)."""
    if (Path(folder) / FILE_NAME).exists():
        return True
    return duck is not None and bool(duck.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('rubric_items', 'rubric_ratings')").fetchall()[0][0])
