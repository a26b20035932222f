"""The writing app's own store: SQLite in WAL mode, ``<workspace>/write.sqlite``.

Why not the workspace's DuckDB file: DuckDB lets one process write a database at a time
and holds the lock while a connection is open, so a server holding the workspace would lock
out every other command for its lifetime. SQLite in write-ahead-log mode lets any number
of processes read while one writes, and a writer waits for another (``busy_timeout``)
instead of failing. ``write serve`` therefore keeps invitations, sessions, drafts and their
revisions here; ``write import`` copies submitted texts into the workspace as arm-B
documents. The file holds drafts and typed names: keep it private (mode 0600).

Tables: :mod:`veribench.rubric.write.schema`; versions and migrations:
:mod:`veribench.rubric.write.migrations` (opening an older store migrates it in one
transaction; a newer one is refused).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from veribench.rubric import sqlite_store as sq
from veribench.rubric.write import migrations
from veribench.store.sql import SqlAccess

FILE_NAME = "write.sqlite"


class WriteDB(SqlAccess):
    """One SQLite connection to a writing store, shared by the threads of one process.

    Args:
        path: the SQLite file (created with mode 0600 when missing). Opening it makes a new
            store, or migrates an older one, in one transaction
            (:mod:`veribench.rubric.write.migrations`; notes in ``migration_notes``).

    Interface as :class:`veribench.store.Workspace` where the app needs it: ``lock``,
    :meth:`query`, :meth:`transaction` (re-entrant, all or nothing), :meth:`close`.

    Raises:
        SchemaVersionError: a store newer than this veribench (one line naming both versions).
        VeribenchError: the file is not an SQLite database or not a writing store, or SQLite
            failed mid-migration (nothing was changed).
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.folder = self.path.parent
        self.lock = threading.RLock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        # secure_delete: a withdrawn text is overwritten in the file, not just unlinked
        self.con = sq.connect(self.path, migrations.STORE, ("PRAGMA foreign_keys = ON", "PRAGMA secure_delete = ON"))
        try:
            found, notes = migrations.migrate(self.con, self.path, self.folder)
        except BaseException:
            self.con.close()
            raise
        #: notes from a migration done by this open (an older store brought forward)
        self.migration_notes: list[str] = sq.migration_note(migrations.STORE, self.path, found) + notes

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """All-or-nothing block (``BEGIN IMMEDIATE``: the write lock is taken at once, so two
        processes never deadlock upgrading a read). A block opened inside another one in
        this thread joins it: the lock is held for the whole outer block, so an open
        transaction seen under the lock is this thread's own."""
        with self.lock:
            if self.con.in_transaction:
                yield self.con
                return
            self.con.execute("BEGIN IMMEDIATE")
            try:
                yield self.con
            except BaseException:
                self.con.execute("ROLLBACK")
                raise
            self.con.execute("COMMIT")



def open_store(workspace: str | os.PathLike[str]) -> WriteDB:
    """The writing store of workspace folder ``workspace`` (created when missing; an older one
    is migrated, a newer one refused: see :class:`WriteDB`)."""
    return WriteDB(Path(workspace) / FILE_NAME)
