"""Plain SQL access shared by every store: a locked connection, all-or-nothing blocks, and
bulk inserts through Arrow. No table is named here (the tables are
:mod:`veribench.store.schema`'s; the logged writes are :mod:`veribench.store.writes`').

Used by the workspace (DuckDB), the bundle verifier's snapshot, and the rubric and
writing apps' SQLite stores.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa


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

    con: Any  # a DuckDB or a sqlite3 connection (DB-API: execute, fetchall, close)
    lock: threading.RLock

    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        """Run ``sql`` with ``params`` and return all rows."""
        with self.lock:
            rows: list[tuple[Any, ...]] = self.con.execute(sql, list(params or [])).fetchall()
            return rows

    def close(self) -> None:
        """Close the connection (under the lock, so no call is cut off mid-query)."""
        with self.lock:
            self.con.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class DuckSqlAccess(SqlAccess):
    """:class:`SqlAccess` over DuckDB, which also answers in Arrow."""

    con: duckdb.DuckDBPyConnection

    def arrow(self, sql: str, params: Sequence[Any] | None = None) -> pa.Table:
        """Run ``sql`` and return a ``pyarrow.Table``."""
        with self.lock:
            return self.con.sql(sql, params=params or None).to_arrow_table()


@contextmanager
def arrow_view(con: duckdb.DuckDBPyConnection, arrow_table: pa.Table, prefix: str = "_vb") -> Iterator[str]:
    """``arrow_table`` registered on DuckDB connection ``con`` under a fresh view name (yielded)
    for the block's queries, and unregistered after it, whatever happens."""
    view = f"{prefix}_{uuid.uuid4().hex[:12]}"
    con.register(view, arrow_table)
    try:
        yield view
    finally:
        con.unregister(view)


def insert_arrow(con: duckdb.DuckDBPyConnection, table: str, arrow_table: pa.Table, verb: str = "INSERT") -> None:
    """``{verb} INTO table`` every row of ``arrow_table``, its columns matched by name."""
    cols = ", ".join(arrow_table.column_names)
    with arrow_view(con, arrow_table) as view:
        con.execute(f"{verb} INTO {table} ({cols}) SELECT {cols} FROM {view}")


def insert_rows(con: duckdb.DuckDBPyConnection, verb: str, table: str, columns: Sequence[tuple[str, str]],
                 rows: Sequence[Sequence[Any]]) -> None:
    """``{verb} INTO table`` all ``rows`` at once through an Arrow table (same column order).

    Rows repeating a primary key (the first two columns) are reduced as row-by-row
    inserts would: the first is kept for ``INSERT OR IGNORE``, the last for ``OR REPLACE``.
    """
    import pyarrow as pa

    keyed: dict[tuple[Any, Any], Sequence[Any]] = {}
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
