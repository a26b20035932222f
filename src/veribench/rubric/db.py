"""The rating app's own store: SQLite in WAL mode, beside the workspace's DuckDB file.

Why a second file: DuckDB lets one process write a database at a time and keeps the lock
for as long as a connection is open, so a rating server holding the workspace would lock
out ``rate results``, ``report``, ``export`` and every other command for its whole
lifetime. SQLite in write-ahead-log mode lets any number of processes read while one
writes, and writers wait for each other (``busy_timeout``) instead of failing. The rating
app therefore never opens the DuckDB file: everything it stores lives in
``<workspace>/rubric.sqlite`` (see ``docs/concurrency.md``).

Tables: :mod:`veribench.rubric.schema`; versions and migrations:
:mod:`veribench.rubric.migrations` (opening an older store read-write migrates it in one
transaction; a newer one, or an older one opened read-only, is refused with one line).

A workspace whose rubric tables still live in its DuckDB file (veribench before this
store) is copied into ``rubric.sqlite`` when the store is made, in the transaction that
makes it; the DuckDB copy is left as it was.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from veribench.rubric import migrations, schema
from veribench.rubric import sqlite_store as sq
from veribench.store.sql import SqlAccess, reentrant_transaction
from veribench.store.workspace import Workspace

FILE_NAME = "rubric.sqlite"


class RubricDB(SqlAccess):
    """One SQLite connection to a rubric store, shared by the threads of one process.

    Args:
        path: the SQLite file, or ``None`` for a new in-memory store (read-only use of a
            workspace that has no rubric store).

    Opening connects only (:func:`veribench.rubric.sqlite_store.connect`); the tables and
    their version are :func:`open_store`'s. The interface mirrors
    :class:`veribench.store.Workspace` where the rubric uses it: ``lock``, ``con.execute``,
    :meth:`query`, :meth:`transaction` (re-entrant, all or nothing).

    Raises:
        VeribenchError: the file cannot be opened as an SQLite database.
    """

    def __init__(self, path: Path | None):
        self.path = path
        self.lock = threading.RLock()
        self._tx_depth = 0
        #: notes from a migration done by this open (an older store brought forward)
        self.migration_notes: list[str] = []
        with self.lock:
            self.con = sq.connect(path, migrations.STORE)

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
    for t in schema.LEGACY_DUCKDB_TABLES:
        if t not in have:
            continue
        cur = duck.execute(f"SELECT * FROM {t}")
        cols = [d[0] for d in cur.description]
        rows = [tuple(v.isoformat() if hasattr(v, "isoformat") else v for v in r) for r in cur.fetchall()]
        out[t] = (cols, rows)
    return out


def _copy_legacy(legacy: dict[str, tuple[list[str], list[tuple]]] | None):
    """The ``fill_new`` of a new store: the legacy rows, inserted in the transaction that makes it."""

    def fill(con: sqlite3.Connection) -> None:
        for t, (cols, rows) in (legacy or {}).items():
            if rows:
                con.executemany(f"INSERT OR IGNORE INTO {t} ({', '.join(cols)}) "
                                f"VALUES ({', '.join('?' * len(cols))})", rows)
    return fill


def _legacy(folder: Path, duck: Any) -> dict[str, tuple[list[str], list[tuple]]] | None:
    """The legacy rubric rows of workspace ``folder`` (from ``duck``, or its DuckDB file opened
    read-only when there is one), or None."""
    if duck is not None:
        return _legacy_rows(duck)
    if (folder / "veribench.duckdb").exists():
        with Workspace(folder, read_only=True) as ws:
            return _legacy_rows(ws.con)
    return None


def open_store(folder: str | Path, *, duck: Any = None, read_only: bool = False) -> RubricDB:
    """The rubric store of workspace ``folder``, at :data:`veribench.rubric.schema.VERSION`.

    A new store is made with every table and the version in one transaction, with the rubric
    rows that earlier versions kept in the workspace's DuckDB file (the DuckDB copy is left as
    it was). An older store is migrated forward in one transaction
    (:mod:`veribench.rubric.migrations`; the notes are in ``migration_notes``).

    Args:
        duck: an open DuckDB connection to the workspace, used to copy rubric tables kept
            there by earlier versions (``None``: open the DuckDB file read-only for that,
            only when the store is new).
        read_only: never create or change a file; a workspace without a rubric store gets
            an in-memory one (holding a copy of its legacy tables, if any).

    Raises:
        SchemaVersionError: a store newer than this veribench, or an older one opened
            read-only (one line naming both versions and the command to run).
        VeribenchError: the file is not an SQLite database or not a rating store, or SQLite
            failed mid-migration (nothing was changed).
    """
    folder = Path(folder)
    path = folder / FILE_NAME
    if read_only and path.exists():
        db = RubricDB(path)
        try:
            version = migrations.stored_version(db.con, path)
            migrations.check_readable(version, path, folder, read_only=True)
        except BaseException:
            db.close()
            raise
        if version:
            return db
        db.close()  # an empty file: no store yet
    if not read_only:
        folder.mkdir(parents=True, exist_ok=True)
    db = RubricDB(None if read_only else path)
    try:
        legacy = None if sq.table_names(db.con) else _legacy(folder, duck)
        found, notes = migrations.migrate(db.con, path, folder, fill_new=_copy_legacy(legacy))
    except BaseException:
        db.close()
        raise
    db.migration_notes = sq.migration_note(migrations.STORE, path, found) + notes
    return db


def store_exists(folder: str | Path, duck: Any = None) -> bool:
    """True when the workspace has a rubric store (the SQLite file, or legacy DuckDB tables)."""
    if (Path(folder) / FILE_NAME).exists():
        return True
    return duck is not None and bool(duck.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('rubric_items', 'rubric_ratings')"
    ).fetchall()[0][0])
