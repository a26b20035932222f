"""The rating app's store: every table of ``<workspace>/rubric.sqlite``, defined once, and its
version.

=====================  ======================================================================
``rubric_items``       one row per input/output pair: random blind id, the tool (never shown
                       to editors), texts, the output's stored sentence list and word count,
                       readability of input and output
``rubric_editors``     editor name and the SHA-256 of their token (the token itself is never
                       stored)
``rubric_assignments`` (blind id, editor, read number 1-3, claims listed so far); read 3 is a
                       third read
``rubric_ratings``     one submitted reading: score 1-5, claims and which were found, counts
``rubric_marks``       marked output sentences (and their text) with a rubric class
``rubric_forms``       one-time form tokens (hashed): a submitted form cannot be replayed
``rubric_meta``        key/value: the session-signing secret (so sessions survive a restart)
``rubric_sessions``    signed-in sessions (hashed ids): a signed cookie is honoured only while
                       its session is here, unexpired and not revoked (sign-out revokes it)
=====================  ======================================================================

Times are ISO 8601 text in UTC. The column types are those every store has had since the
store moved to SQLite (they fix SQLite's type affinities, so they do not change without a
new version). Versions and the step between them: :mod:`veribench.rubric.migrations`.
This module and :mod:`veribench.rubric.write.schema` are the apps' only ``CREATE TABLE``
(:func:`create_sql`; a test checks it).
"""

from __future__ import annotations

#: The schema version this veribench writes and reads. Version 1 is every store made before
#: the version was recorded (``PRAGMA user_version`` 0 with these tables).
VERSION = 2

#: Every table of the rating store: name -> column definitions (SQL that SQLite and DuckDB
#: both accept: DuckDB workspaces of veribench before the SQLite store held these tables).
TABLES: dict[str, str] = {
    "rubric_items": """
        blind_id VARCHAR PRIMARY KEY, pair_key VARCHAR UNIQUE NOT NULL, source VARCHAR, pair_id VARCHAR,
        sample_id VARCHAR, tool VARCHAR NOT NULL, input_text VARCHAR NOT NULL, output_text VARCHAR NOT NULL,
        input_sha256 VARCHAR NOT NULL, output_sha256 VARCHAR NOT NULL, output_sentences JSON NOT NULL,
        output_words INTEGER NOT NULL, readability JSON, loaded_at TIMESTAMPTZ""",
    "rubric_editors": "editor VARCHAR PRIMARY KEY, token_sha256 VARCHAR UNIQUE NOT NULL, created_at TIMESTAMPTZ",
    "rubric_assignments": """
        blind_id VARCHAR NOT NULL, editor VARCHAR NOT NULL, read_no INTEGER NOT NULL, assigned_at TIMESTAMPTZ,
        claims JSON, claims_at TIMESTAMPTZ, PRIMARY KEY (blind_id, editor)""",
    "rubric_ratings": """
        blind_id VARCHAR NOT NULL, editor VARCHAR NOT NULL, read_no INTEGER NOT NULL, score INTEGER NOT NULL,
        claims JSON NOT NULL, claims_found JSON NOT NULL, dropped_claims INTEGER NOT NULL,
        invented_facts INTEGER NOT NULL, changed_facts INTEGER NOT NULL, submitted_at TIMESTAMPTZ,
        PRIMARY KEY (blind_id, editor)""",
    "rubric_marks": """
        blind_id VARCHAR NOT NULL, editor VARCHAR NOT NULL, sentence_index INTEGER NOT NULL,
        sentence_text VARCHAR NOT NULL, class VARCHAR NOT NULL,
        PRIMARY KEY (blind_id, editor, sentence_index, class)""",
    "rubric_forms": """
        nonce_sha256 VARCHAR PRIMARY KEY, editor VARCHAR NOT NULL, blind_id VARCHAR NOT NULL,
        purpose VARCHAR NOT NULL, issued_at TIMESTAMPTZ, used_at TIMESTAMPTZ""",
    "rubric_meta": "key VARCHAR PRIMARY KEY, value VARCHAR",
    "rubric_sessions": """
        sid_sha256 VARCHAR PRIMARY KEY, editor VARCHAR NOT NULL, created_at TIMESTAMPTZ,
        expires_at TIMESTAMPTZ, revoked_at TIMESTAMPTZ""",
}

#: The tables that DuckDB workspaces of veribench before the SQLite store held (copied into
#: a new ``rubric.sqlite`` by :func:`veribench.rubric.db.open_store`; sessions were not kept).
LEGACY_DUCKDB_TABLES: tuple[str, ...] = ("rubric_items", "rubric_editors", "rubric_assignments", "rubric_ratings",
                                         "rubric_marks", "rubric_forms", "rubric_meta")


def create_sql(name: str) -> str:
    """``CREATE TABLE IF NOT EXISTS`` of table ``name`` (SQLite, or DuckDB for the legacy tables).

    Raises:
        KeyError: an unknown table name.
    """
    return f"CREATE TABLE IF NOT EXISTS {name} ({' '.join(TABLES[name].split())})"
