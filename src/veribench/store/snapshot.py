"""An in-memory stand-in of a workspace holding only the rows one run rests on.

Publishing and verifying a bundle both build one (:class:`Snapshot`: ``documents``,
``submissions`` and ``scores``, the tables of :data:`veribench.store.schema.SNAPSHOT_TABLES`
with no keys) and hand it to the evaluation's own loading code, so a bundle's numbers are
re-derived by the code that derived them. Nothing here touches a workspace: the snapshot
is a private DuckDB database in memory, filled from Arrow tables.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import duckdb

from veribench.store import schema
from veribench.store.sql import DuckSqlAccess, insert_arrow


class Snapshot(DuckSqlAccess):
    """An in-memory workspace stand-in (``con``, ``lock``, ``query``, ``arrow``) holding only
    a run's rows."""

    def __init__(self) -> None:
        self.con = duckdb.connect(":memory:")
        self.con.execute("SET TimeZone = 'UTC'")
        self.con.execute("SET enable_progress_bar = false")
        schema.create_snapshot(self.con)
        self.lock = threading.RLock()
        self.path = Path("<snapshot>")

    def load(self, table: str, arrow_table: Any) -> None:
        """Insert an Arrow table's columns (by name) into ``table`` (one of the snapshot tables).

        Raises:
            ValueError: ``table`` is not a snapshot table.
        """
        if table not in schema.SNAPSHOT_TABLES:
            raise ValueError(f"{table!r} is not a snapshot table; use one of {schema.SNAPSHOT_TABLES}")
        insert_arrow(self.con, table, arrow_table)

    def fill_from_bundle(self, docs_view: str = "docs", rows_view: str = "rows") -> None:
        """Fill the snapshot from a bundle's corpus (view ``docs_view``: its documents) and its
        per-(document, detector) rows (view ``rows_view``: ``scores.csv`` as read), both
        registered on :attr:`con` beforehand."""
        con = self.con
        con.execute(f"INSERT INTO documents (doc_id, corpus, text, text_sha256, label, arm, kind, subgroup, tags, "
                    f"group_key, provenance) SELECT doc_id, corpus, text, text_sha256, label, arm, kind, subgroup, "
                    f"tags, group_key, provenance FROM {docs_view}")
        con.execute(f"INSERT INTO submissions SELECT DISTINCT doc_id, spec_hash, submitted_sha256 FROM {rows_view}")
        con.execute("INSERT INTO scores (spec_hash, text_sha256, status, raw, scale, direction, ai_probability, verdict, "
                    "vendor_version, detail, scanned_at) SELECT DISTINCT ON (spec_hash, submitted_sha256) spec_hash, "
                    "submitted_sha256, status, raw, scale, direction, ai_probability, verdict, vendor_version, "
                    "CASE WHEN hazards IS NULL THEN NULL ELSE '{\"hazards\":' || hazards || '}' END, "
                    f"CAST(scanned_at AS TIMESTAMPTZ) FROM {rows_view} WHERE status IS NOT NULL")
