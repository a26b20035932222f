"""Writing-store migrations: each schema version of ``write.sqlite``, what changed, and the
step from the one before.

The schema (:mod:`veribench.rubric.write.schema`) owns the tables; this module owns their
history. Opening the store (:class:`veribench.rubric.write.db.WriteDB`, always read-write)
runs every step from its version to :data:`veribench.rubric.write.schema.VERSION` in **one**
transaction, then records the new version; a newer store is refused with one line naming
both versions and what to run (:mod:`veribench.rubric.sqlite_store`).

========  ==================================================================================
version   what it is
========  ==================================================================================
1         every writing store made before versions were recorded (veribench from commit
          e687585, which added the writing app, up to commit f6c21e4, 2026-12-01): the eight
          tables of :data:`~veribench.rubric.write.schema.TABLES` with today's columns,
          created if missing at every open; ``PRAGMA user_version`` 0. A store of this
          version made by that code is kept in
          ``tests/data/rubric_stores/writing-v1.sqlite.gz``.
2         the version is recorded (``PRAGMA user_version = 2``); tables are created only when
          the store is made or migrated. Step 1 -> 2 (:func:`_v1_to_v2`): create any table of
          the schema that is missing (none is, in a store made by the versions above) and
          record the version; every row is kept as it was.
========  ==================================================================================
"""

from __future__ import annotations

import sqlite3
from typing import Any

from veribench.rubric import sqlite_store as sq
from veribench.rubric.write import schema


def _v1_to_v2(con: sqlite3.Connection) -> list[str]:
    """Create the tables a version-1 store lacks (none, in practice); rows are untouched."""
    return sq.create_missing(con, schema.TABLES, schema.create_sql)


#: ``STEPS[v]`` migrates a writing store of version ``v`` to ``v + 1`` (returns notes for the user).
STEPS: dict[int, sq.Step] = {1: _v1_to_v2}

#: The writing store's tables, version and history, as the shared runner takes them.
STORE = sq.StoreSchema("writing store", schema.TABLES, schema.VERSION, schema.create_sql, STEPS)


def stored_version(con: sqlite3.Connection, path: Any = "") -> int:
    """The schema version of the writing store on ``con`` (0: a new, empty database).

    Raises:
        VeribenchError: a database with tables, none of them the writing store's.
    """
    return sq.stored_version(con, STORE, path)


def migrate(con: sqlite3.Connection, path: Any = "", folder: Any = "") -> tuple[int, list[str]]:
    """Bring the writing store on ``con`` to :data:`veribench.rubric.write.schema.VERSION` in one
    transaction.

    Returns:
        ``(version found, notes)``: 0 for a new store.

    Raises:
        SchemaVersionError: the store is newer than this veribench.
        VeribenchError: SQLite failed mid-way (nothing was changed).
    """
    return sq.migrate(con, STORE, path, folder)
