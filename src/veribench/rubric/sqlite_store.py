"""What the two apps' SQLite stores share: opening a connection, the schema version, and the
migration runner. The rule is the workspace's (:mod:`veribench.store.migrations`), applied to
SQLite files:

- every table of a store is defined once, in its schema module (:mod:`veribench.rubric.schema`
  for the rating app's ``rubric.sqlite``, :mod:`veribench.rubric.write.schema` for the
  writing app's ``write.sqlite``), which carries the store's version;
- the version lives in the file header, SQLite's ``PRAGMA user_version`` (the slot SQLite
  keeps for exactly this; it is written in the same transaction as the tables, so a
  rolled-back migration leaves it as it was). 0 there means "not recorded": a file with
  none of the store's tables is new (version 0 here), one with them was made before
  versions were recorded (version 1);
- opening a store read-write runs every step from its version to the current one in **one**
  ``BEGIN IMMEDIATE`` transaction (all or nothing; a second process waits for it, then sees
  the new version and does nothing). A newer store, or an older one opened read-only, is
  refused with one line that names both versions and what to run.

Each store's history (its versions, and the step from each to the next) is in its
migrations module (:mod:`veribench.rubric.migrations`, :mod:`veribench.rubric.write.migrations`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veribench.errors import VeribenchError
from veribench.store.migrations import MIGRATE_COMMAND, SchemaVersionError

#: How long a writer waits for another process's write transaction, in milliseconds.
BUSY_TIMEOUT_MS = 30_000

#: A migration step: runs inside the migration's transaction on the store's connection and
#: returns notes for the user (what it did, when that is worth saying).
Step = Callable[[sqlite3.Connection], list[str]]


@dataclass(frozen=True)
class StoreSchema:
    """One SQLite store's tables, version and history (built by its migrations module).

    Attributes:
        what: how messages name the store ("rating store", "writing store").
        tables: table name -> column definitions (SQL), in creation order.
        version: the version this veribench writes and reads (>= 2; 1 is "made before
            versions were recorded").
        create_sql: the schema module's statement creating a table (if missing), by name.
        steps: ``steps[v]`` migrates version ``v`` to ``v + 1``; one for each ``v`` from 1 to
            ``version - 1``.
    """

    what: str
    tables: Mapping[str, str]
    version: int
    create_sql: Callable[[str], str]
    steps: Mapping[int, Step] = field(default_factory=dict)

    def create_all(self, con: Any) -> None:
        """Create every table that is missing (inside the caller's transaction)."""
        for name in self.tables:
            con.execute(self.create_sql(name))


def connect(path: Path | None, schema: StoreSchema, pragmas: tuple[str, ...] = ()) -> sqlite3.Connection:
    """A connection to the SQLite file ``path`` (``None``: a new in-memory database) shared by
    the threads of one process, in autocommit mode (transactions are explicit), waiting up
    to :data:`BUSY_TIMEOUT_MS` for another process's write. Once the file is known to be
    ``schema``'s store (or new), it gets write-ahead logging and ``synchronous = FULL`` (a committed
    write survives a power cut), then ``pragmas``; another program's file is left untouched.

    Raises:
        VeribenchError: the file is not an SQLite database, or not this store (one line naming it).
    """
    target = str(path) if path is not None else ":memory:"
    try:
        con = sqlite3.connect(target, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as e:
        raise VeribenchError(f"{path}: cannot open this SQLite file ({e})") from None
    try:
        con.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        stored_version(con, schema, path)  # refuses another program's database before anything is set
        if path is not None:
            con.execute("PRAGMA journal_mode = WAL")
            con.execute("PRAGMA synchronous = FULL")
        for p in pragmas:
            con.execute(p)
    except sqlite3.Error as e:
        con.close()
        raise VeribenchError(f"{path}: cannot open this SQLite file as a veribench {schema.what} ({e})") from None
    except BaseException:
        con.close()
        raise
    return con


def table_names(con: Any) -> set[str]:
    """The tables of the SQLite database on ``con``."""
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()}


def stored_version(con: Any, schema: StoreSchema, path: Any = "") -> int:
    """The schema version of the store on ``con``: ``PRAGMA user_version`` when set; otherwise
    1 when the store's tables are there (made before versions were recorded), 0 when the
    database has no table at all (new).

    Raises:
        VeribenchError: a database with tables, none of them the store's (another program's file).
    """
    v = int(con.execute("PRAGMA user_version").fetchone()[0])
    if v:
        return v
    have = table_names(con)
    if not have:
        return 0
    if have & set(schema.tables):
        return 1
    raise VeribenchError(f"{path}: not a veribench {schema.what} (its tables are {', '.join(sorted(have))}; move "
                         "it away or name another workspace)")


def create_missing(con: Any, tables: Mapping[str, str], create_sql: Callable[[str], str]) -> list[str]:
    """Create each table of ``tables`` that ``con`` lacks (inside the caller's transaction);
    returns one note per table created."""
    missing = [t for t in tables if t not in table_names(con)]
    for t in missing:
        con.execute(create_sql(t))
    return [f"created missing table {t}" for t in missing]


def set_version(con: Any, version: int) -> None:
    """Record ``version`` in the file header (inside the caller's transaction)."""
    con.execute(f"PRAGMA user_version = {int(version)}")


def check_readable(schema: StoreSchema, version: int, path: Any, folder: Any, *, read_only: bool) -> None:
    """Refuse a store this veribench cannot open as asked.

    Args:
        path: the store's file (named in the message); folder: its workspace folder (named
            in the command to run).

    Raises:
        SchemaVersionError: a newer version than ``schema.version`` (upgrade veribench), or an
            older one opened read-only (migrate it first; the message names the command).
    """
    if version > schema.version:
        raise SchemaVersionError(
            f"{schema.what} {path} has schema version {version}, newer than this veribench's {schema.version}: "
            "upgrade veribench (pip install -U veribench) to open it")
    if read_only and 0 < version < schema.version:
        raise SchemaVersionError(
            f"{schema.what} {path} has schema version {version} and this veribench reads version {schema.version}: "
            f"run `{MIGRATE_COMMAND.format(path=folder)}` to migrate it (one transaction; keep a copy if an older "
            "veribench must still read it)")


def migrate(con: sqlite3.Connection, schema: StoreSchema, path: Any = "", folder: Any = "",
            fill_new: Callable[[sqlite3.Connection], None] | None = None) -> tuple[int, list[str]]:
    """Bring the store on ``con`` to ``schema.version`` in one ``BEGIN IMMEDIATE`` transaction.

    A new (empty) database gets every table, then ``fill_new`` (rows carried over from
    elsewhere, in the same transaction), then the current version. A store of an older
    version runs each step of ``schema.steps`` in order. Nothing changes when it is current.
    On any error the transaction rolls back and the file stays as it was.

    Returns:
        ``(version found, notes)``: 0 for a new database.

    Raises:
        SchemaVersionError: the store is newer than this veribench.
        VeribenchError: SQLite failed during a migration (one line naming the store and both
            versions; nothing was changed).
    """
    try:
        con.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as e:
        raise VeribenchError(f"{schema.what} {path}: cannot start a write ({e}; another process may hold it: "
                             "try again)") from None
    found = 0
    try:
        found = stored_version(con, schema, path)
        check_readable(schema, found, path, folder, read_only=False)
        notes: list[str] = []
        if found == 0:
            schema.create_all(con)
            if fill_new is not None:
                fill_new(con)
        for v in range(max(found, 1), schema.version):
            if found:
                notes += schema.steps[v](con)
        if found != schema.version:
            set_version(con, schema.version)
    except BaseException as e:
        if con.in_transaction:  # SQLite ends some failed transactions itself (a full disk)
            con.execute("ROLLBACK")
        if isinstance(e, sqlite3.Error):
            raise VeribenchError(f"{schema.what} {path}: cannot bring schema version {found} to {schema.version} "
                                 f"({e}); nothing was changed") from None
        raise
    con.execute("COMMIT")
    return found, notes


def migration_note(schema: StoreSchema, path: Any, found: int) -> list[str]:
    """The line telling the user that opening ``path`` migrated it (none when nothing was)."""
    if 0 < found < schema.version:
        return [f"migrated {schema.what} {path} from schema version {found} to {schema.version}"]
    return []
