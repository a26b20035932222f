"""Rating-store migrations: each schema version of ``rubric.sqlite``, what changed, and the step
from the one before.

The schema (:mod:`veribench.rubric.schema`) owns the tables; this module owns their history.
Opening the store read-write (:func:`veribench.rubric.db.open_store`) runs every step from its
version to :data:`veribench.rubric.schema.VERSION` in **one** transaction, then records the
new version; a read-only open of an older store, or any open of a newer one, is refused with
one line naming both versions and what to run (:mod:`veribench.rubric.sqlite_store`).

========  ==================================================================================
version   what it is
========  ==================================================================================
1         every rating store made before versions were recorded (veribench from commit
          0b89d44, which moved the rubric from the workspace's DuckDB file to
          ``rubric.sqlite``, up to commit f6c21e4, 2026-12-01): the eight tables of
          :data:`~veribench.rubric.schema.TABLES` with today's columns, created if missing at
          every open; ``PRAGMA user_version`` 0. A store of this version made by that code
          is kept in ``tests/data/rubric_stores/rating-v1.sqlite.gz``.
2         the version is recorded (``PRAGMA user_version = 2``); tables are created only when
          the store is made or migrated. Step 1 -> 2 (:func:`_v1_to_v2`): create any table of
          the schema that is missing (none is, in a store made by the versions above) and
          record the version; every row is kept as it was.
========  ==================================================================================

Rubric rows kept in a workspace's DuckDB file by veribench before commit 0b89d44 are not a
version of this store: they are copied into a new ``rubric.sqlite`` when it is made
(:func:`veribench.rubric.db.open_store`), in the transaction that creates it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from veribench.rubric import schema
from veribench.rubric import sqlite_store as sq


def _v1_to_v2(con: sqlite3.Connection) -> list[str]:
    """Create the tables a version-1 store lacks (none, in practice); rows are untouched."""
    return sq.create_missing(con, schema.TABLES, schema.create_sql)


#: ``STEPS[v]`` migrates a rating store of version ``v`` to ``v + 1`` (returns notes for the user).
STEPS: dict[int, sq.Step] = {1: _v1_to_v2}

#: The rating store's tables, version and history, as the shared runner takes them.
STORE = sq.StoreSchema("rating store", schema.TABLES, schema.VERSION, schema.create_sql, STEPS)


def stored_version(con: sqlite3.Connection, path: Any = "") -> int:
    """The schema version of the rating store on ``con`` (0: a new, empty database).

    Raises:
        VeribenchError: a database with tables, none of them the rating store's.
    """
    return sq.stored_version(con, STORE, path)


def check_readable(version: int, path: Any, folder: Any, *, read_only: bool) -> None:
    """Refuse a rating store this veribench cannot open as asked (see
    :func:`veribench.rubric.sqlite_store.check_readable`).

    Raises:
        SchemaVersionError: newer than :data:`veribench.rubric.schema.VERSION`, or older and read-only.
    """
    sq.check_readable(STORE, version, path, folder, read_only=read_only)


def migrate(con: sqlite3.Connection, path: Any = "", folder: Any = "",
            fill_new: Callable[[sqlite3.Connection], None] | None = None) -> tuple[int, list[str]]:
    """Bring the rating store on ``con`` to :data:`veribench.rubric.schema.VERSION` in one
    transaction (``fill_new``: rows for a new store, in the same transaction).

    Returns:
        ``(version found, notes)``: 0 for a new store.

    Raises:
        SchemaVersionError: the store is newer than this veribench.
        VeribenchError: SQLite failed mid-way (nothing was changed).
    """
    return sq.migrate(con, STORE, path, folder, fill_new)
