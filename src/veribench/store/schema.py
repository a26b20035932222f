"""The workspace schema: every table of a workspace, defined once, and its version.

A workspace is one DuckDB file (``veribench.duckdb``). Its tables, by what they hold:

**Logged tables** (covered by the event log and by bundles; written only through
:mod:`veribench.store.writes`, which appends the event of each write in the same
transaction; ``veribench log verify`` checks every row against the log):

=================  =============================================================
``documents``      one row per document (:mod:`veribench.corpus.document`)
``document_segments``  mixed texts only: ``doc_id`` -> segments (JSON
                   ``[{start, end, label}]``, character offsets); written with their
                   import, not fingerprinted by a leaf (no bundle carries them yet)
``document_languages``  ``doc_id`` -> language (ISO 639-1, NULL: no letters), lingua's
                   confidence in [0, 1] and the method (:mod:`veribench.text.language`);
                   identified when the document is added, not fingerprinted by a leaf
                   (recomputable from the text)
``specs``          every plug-in spec seen (hash -> name, version, settings); a
                   row is checked against its own hash
``scores``         the score cache and record, keyed by (spec hash, SHA-256 of the
                   text actually submitted); never computed or paid for twice; the
                   newest scan of each key (what every reader uses)
``scores_superseded`` earlier scans of a key that a newer scan replaced in ``scores``
                   (a rescan, or a call failure sent again): same columns, keyed by
                   (spec hash, text SHA-256, ``scanned_at``); nothing is overwritten or
                   lost, and each row is checked against the scan batch that logged it
``submissions``    which submitted text a detector scored for a document
``submitted_texts`` texts detectors saw that differ from the corpus text
``imports``        one row per import, with its report (JSON)
``protocols``      committed protocol files (a cache; the event log is the record)
``commitments``    the commitment record of each committed version, its token
``runs``           evaluation runs: protocol hash, tag, date, results (JSON)
``run_rows``       the per-document rows of each run (``export scores --run``)
``withdrawals``    documents withdrawn by their contributors (ids and counts only)
``events``         the hash-chained event log (:mod:`veribench.store.events`)
``log_items``      the row fingerprints ("leaves") of the events
``replaced_leaves`` the canonical text of every logged row a later write replaced (a
                   retried score, a re-linked document, a corrected document), with its
                   event and keys: the workspace keeps only the newest row of a key, and a
                   bundle shows the older values with the text their leaves hash
=================  =============================================================

**Working tables** (caches and ledgers of work in progress; never published):
``llm_calls`` (chat-completion cache), ``cycle_embeddings`` (embedding cache),
``humanizations`` (humanizer outputs by input), ``api_tasks`` (vendor task ids of
asynchronous calls), ``run_budgets`` (spending caps and ledgers of paid runs).

``schema_meta`` holds the schema version (:data:`VERSION`). The history of versions and the
step from each to the next live in :mod:`veribench.store.migrations`.

This module is the one place that runs ``CREATE TABLE`` on a workspace (a test checks it);
the bundle verifier's in-memory snapshot takes its three tables from here too
(:data:`SNAPSHOT_TABLES`).
"""

from __future__ import annotations

from typing import Any

from veribench.errors import VeribenchError

#: The schema version this veribench writes and reads. Version 1 is every workspace made
#: before the version was recorded (no ``schema_meta`` table); see
#: :mod:`veribench.store.migrations` for what each version changed.
VERSION = 4

#: Every table of a workspace: name -> column definitions (DuckDB SQL).
TABLES: dict[str, str] = {
    "schema_meta": "key VARCHAR PRIMARY KEY, value VARCHAR",
    # -- logged tables --------------------------------------------------------------------
    "documents": """
        doc_id VARCHAR PRIMARY KEY, corpus VARCHAR, text VARCHAR, text_sha256 VARCHAR NOT NULL,
        label VARCHAR NOT NULL, arm VARCHAR, kind VARCHAR, subgroup VARCHAR, tags JSON, group_key VARCHAR,
        provenance JSON, generation JSON, import_id VARCHAR""",
    "document_segments": "doc_id VARCHAR PRIMARY KEY, segments JSON NOT NULL",
    # each document's language, identified at import (veribench.text.language); NULL: no letters
    "document_languages": "doc_id VARCHAR PRIMARY KEY, language VARCHAR, confidence DOUBLE, method VARCHAR",
    "specs": "spec_hash VARCHAR PRIMARY KEY, kind VARCHAR, name VARCHAR, version VARCHAR, settings JSON, "
             "spec_json VARCHAR",
    "scores": """
        spec_hash VARCHAR NOT NULL, text_sha256 VARCHAR NOT NULL, status VARCHAR NOT NULL, raw DOUBLE,
        scale VARCHAR, direction VARCHAR, ai_probability DOUBLE, verdict VARCHAR, vendor_version VARCHAR,
        detail JSON, scanned_at TIMESTAMPTZ, PRIMARY KEY (spec_hash, text_sha256)""",
    "scores_superseded": """
        spec_hash VARCHAR NOT NULL, text_sha256 VARCHAR NOT NULL, status VARCHAR NOT NULL, raw DOUBLE,
        scale VARCHAR, direction VARCHAR, ai_probability DOUBLE, verdict VARCHAR, vendor_version VARCHAR,
        detail JSON, scanned_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (spec_hash, text_sha256, scanned_at)""",
    "submissions": "doc_id VARCHAR NOT NULL, spec_hash VARCHAR NOT NULL, submitted_sha256 VARCHAR NOT NULL, "
                   "PRIMARY KEY (doc_id, spec_hash)",
    "submitted_texts": "text_sha256 VARCHAR PRIMARY KEY, text VARCHAR",
    "imports": "import_id VARCHAR PRIMARY KEY, kind VARCHAR, source VARCHAR, created_at TIMESTAMPTZ, report JSON",
    "protocols": "protocol_hash VARCHAR PRIMARY KEY, name VARCHAR, path VARCHAR, committed_at TIMESTAMPTZ, "
                 "content VARCHAR, amendments JSON",
    "commitments": "protocol_sha256 VARCHAR PRIMARY KEY, protocol_id VARCHAR, seq BIGINT, record VARCHAR, "
                   "tsa_token BLOB, tsa_url VARCHAR, tsa_roots VARCHAR, token_seq BIGINT",
    "runs": "run_id VARCHAR PRIMARY KEY, tag VARCHAR, protocol_hash VARCHAR, created_at TIMESTAMPTZ, results JSON",
    "run_rows": """
        run_id VARCHAR NOT NULL, doc_id VARCHAR NOT NULL, corpus VARCHAR, label VARCHAR, label_role VARCHAR,
        arm VARCHAR, arm_role VARCHAR, subgroup VARCHAR, kind VARCHAR, group_key VARCHAR, tags VARCHAR,
        side_group VARCHAR, headline BOOLEAN, split VARCHAR, detector VARCHAR NOT NULL, spec_hash VARCHAR,
        status VARCHAR, raw DOUBLE, scale VARCHAR, direction VARCHAR, ai_probability DOUBLE, verdict VARCHAR,
        ranking_score DOUBLE, rule VARCHAR, rule_field VARCHAR, threshold DOUBLE, rule_defined BOOLEAN,
        counted BOOLEAN, flagged BOOLEAN, excluded VARCHAR""",
    "withdrawals": "withdrawal_id VARCHAR PRIMARY KEY, doc_id VARCHAR NOT NULL, invitation_id VARCHAR, "
                   "requested_at TIMESTAMPTZ, removed_at TIMESTAMPTZ NOT NULL, via VARCHAR, removed JSON NOT NULL",
    "events": "seq BIGINT PRIMARY KEY, logged_at VARCHAR NOT NULL, type VARCHAR NOT NULL, payload VARCHAR NOT NULL, "
              "payload_sha256 VARCHAR NOT NULL, prev VARCHAR NOT NULL, hash VARCHAR NOT NULL",
    "log_items": "seq BIGINT NOT NULL, kind VARCHAR NOT NULL, k1 VARCHAR, k2 VARCHAR, leaf VARCHAR NOT NULL",
    "replaced_leaves": "seq BIGINT NOT NULL, kind VARCHAR NOT NULL, k1 VARCHAR, k2 VARCHAR, leaf VARCHAR NOT NULL, "
                       "fields VARCHAR NOT NULL",
    # -- working tables -----------------------------------------------------------------------
    "llm_calls": """
        spec_hash VARCHAR NOT NULL, request_sha256 VARCHAR NOT NULL, provider VARCHAR, model VARCHAR,
        server_model VARCHAR, request JSON, response JSON, text VARCHAR, finish_reason VARCHAR,
        created_at TIMESTAMPTZ, PRIMARY KEY (spec_hash, request_sha256)""",
    "cycle_embeddings": "spec_hash VARCHAR NOT NULL, text_sha256 VARCHAR NOT NULL, vector FLOAT[] NOT NULL, "
                        "PRIMARY KEY (spec_hash, text_sha256)",
    "humanizations": """
        spec_hash VARCHAR NOT NULL, input_sha256 VARCHAR NOT NULL, status VARCHAR NOT NULL, output VARCHAR,
        output_sha256 VARCHAR, vendor_version VARCHAR, detail JSON, created_at TIMESTAMPTZ,
        PRIMARY KEY (spec_hash, input_sha256)""",
    "api_tasks": "spec_hash VARCHAR NOT NULL, text_sha256 VARCHAR NOT NULL, vendor VARCHAR, task_id VARCHAR NOT NULL, "
                 "submitted_at TIMESTAMPTZ, PRIMARY KEY (spec_hash, text_sha256)",
    "run_budgets": """
        run_key VARCHAR PRIMARY KEY, kind VARCHAR, spec_hash VARCHAR, label VARCHAR, unit VARCHAR, texts INTEGER,
        cap DOUBLE NOT NULL, reserved DOUBLE NOT NULL, released DOUBLE NOT NULL, calls_sent INTEGER NOT NULL,
        calls_done INTEGER NOT NULL, calls_released INTEGER NOT NULL, created_at TIMESTAMPTZ,
        updated_at TIMESTAMPTZ""",
}

#: The logged tables: written only through :mod:`veribench.store.writes` (``events`` and
#: ``log_items`` and ``replaced_leaves`` through :mod:`veribench.store.events`, which it calls).
LOGGED_TABLES: tuple[str, ...] = ("documents", "document_segments", "document_languages", "specs", "scores",
                                  "scores_superseded",
                                  "submissions",
                                  "submitted_texts", "imports", "protocols", "commitments", "runs", "run_rows",
                                  "withdrawals", "events", "log_items", "replaced_leaves")
#: Caches and ledgers of work in progress (never published).
WORKING_TABLES: tuple[str, ...] = ("llm_calls", "cycle_embeddings", "humanizations", "api_tasks", "run_budgets")

#: The tables of a bundle verifier's in-memory snapshot (:mod:`veribench.bundles.snapshot`):
#: the published rows of these workspace tables, with no keys (a bundle is checked, not trusted).
SNAPSHOT_TABLES: tuple[str, ...] = ("documents", "submissions", "scores")


class SchemaVersionError(VeribenchError):
    """A workspace or app store whose schema version this veribench cannot open as asked
    (the message names the versions and what to run)."""


def create_sql(name: str, *, keys: bool = True) -> str:
    """``CREATE TABLE IF NOT EXISTS`` of table ``name`` (``keys=False``: without primary keys
    and NOT NULL, for a snapshot of published rows that the verifier checks itself).

    Raises:
        KeyError: an unknown table name.
    """
    cols = " ".join(TABLES[name].split())
    if not keys:
        parts = [p.strip() for p in _split_columns(cols) if not p.strip().upper().startswith("PRIMARY KEY")]
        cols = ", ".join(p.replace(" NOT NULL", "").replace(" PRIMARY KEY", "") for p in parts)
    return f"CREATE TABLE IF NOT EXISTS {name} ({cols})"


def _split_columns(cols: str) -> list[str]:
    """Column definitions split at top-level commas (not inside ``PRIMARY KEY (a, b)``)."""
    out, depth, cur = [], 0, ""
    for ch in cols:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def create_all(con: Any) -> None:
    """Create every table of :data:`TABLES` that is missing (inside the caller's transaction)."""
    for name in TABLES:
        con.execute(create_sql(name))


def create_snapshot(con: Any) -> None:
    """Create the snapshot tables (:data:`SNAPSHOT_TABLES`) on a bundle verifier's connection."""
    for name in SNAPSHOT_TABLES:
        con.execute(create_sql(name, keys=False))


def table_names(con: Any) -> set[str]:
    """The tables that exist on ``con`` (main schema)."""
    return {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                      "WHERE table_schema = 'main'").fetchall()}


def stored_version(con: Any, path: Any = None) -> int:
    """The schema version recorded in a workspace: ``schema_meta.version``; 1 for a workspace
    made before versions were recorded (tables, no ``schema_meta``); 0 for an empty database
    (no table at all).

    Raises:
        SchemaVersionError: a ``schema_meta`` whose version is not a whole number of at
            least 1 (the file was edited or damaged): one line naming ``path``.
    """
    have = table_names(con)
    if "schema_meta" not in have:
        return 1 if have else 0
    row = con.execute("SELECT value FROM schema_meta WHERE key = 'version'").fetchone()
    if row is None:
        return 1
    value = row[0]
    try:
        version = int(value)
        ok = str(version) == str(value) and version >= 1
    except (TypeError, ValueError):
        ok = False
    if not ok:
        where = f"workspace {path}" if path is not None else "this workspace"
        raise SchemaVersionError(f"{where}: schema_meta holds version {value!r}, which no veribench writes (a whole "
                                 "number from 1): the file was edited or damaged; restore it from a copy")
    return version


def set_version(con: Any, version: int = VERSION) -> None:
    """Record ``version`` in ``schema_meta`` (inside the caller's transaction)."""
    con.execute("INSERT OR REPLACE INTO schema_meta VALUES ('version', ?)", [str(int(version))])
