"""The writing app's store: every table of ``<workspace>/write.sqlite``, defined once, and its
version.

=====================  ======================================================================
``write_meta``         key/value: the session-signing secret
``write_prompts``      prompt id (``p-`` + 12 hex of its SHA-256), text, SHA-256
``write_invitations``  one row per personal link: public id, SHA-256 of the link token (the
                       token itself is never stored), prompt, register, word range, state
                       (``invited`` | ``started`` | ``consented`` | ``writing`` |
                       ``submitted`` | ``withdrawn``), consent and self-report, editor-opened
                       time
``write_revisions``    every saved revision: text, server time, and its step numbers (words,
                       inserted, deleted, largest inserted block)
``write_submissions``  the submitted revision: attestation id, typed name, publication
                       choice, text, SHA-256, process evidence (JSON), import into the
                       workspace
``write_sessions``     server-side sessions (SHA-256 of the session id), revocable
``write_forms``        one-time form tokens (hashed): a submitted form cannot be replayed
``write_withdrawals``  one row per withdrawal: when, how, the workspace document it removes,
                       and when it was removed there
=====================  ======================================================================

Times are ISO 8601 text in UTC. The column types and constraints are those every store has
had since the app was written (they fix SQLite's type affinities and the foreign keys, so
they do not change without a new version). Versions and the step between them:
:mod:`veribench.rubric.write.migrations`. This module and :mod:`veribench.rubric.schema` are
the apps' only ``CREATE TABLE`` (:func:`create_sql`; a test checks it).
"""

from __future__ import annotations

#: The schema version this veribench writes and reads. Version 1 is every store made before
#: the version was recorded (``PRAGMA user_version`` 0 with these tables).
VERSION = 2

#: Every table of the writing store: name -> column definitions (SQLite), in creation order
#: (a table comes after the tables its foreign keys name).
TABLES: dict[str, str] = {
    "write_meta": "key TEXT PRIMARY KEY, value TEXT NOT NULL",
    "write_prompts": "prompt_id TEXT PRIMARY KEY, text TEXT NOT NULL, sha256 TEXT NOT NULL, created_at TEXT NOT NULL",
    "write_invitations": """
        invitation_id TEXT PRIMARY KEY, token_sha256 TEXT UNIQUE NOT NULL,
        prompt_id TEXT NOT NULL REFERENCES write_prompts(prompt_id), register TEXT NOT NULL,
        min_words INTEGER NOT NULL, max_words INTEGER NOT NULL, created_at TEXT NOT NULL, token_used_at TEXT,
        revoked_at TEXT, state TEXT NOT NULL, consent_version TEXT, consented_at TEXT, english TEXT,
        first_language TEXT, years_writing_english INTEGER, self_report_at TEXT, editor_opened_at TEXT,
        withdrawn_at TEXT""",
    "write_revisions": """
        invitation_id TEXT NOT NULL REFERENCES write_invitations(invitation_id), revision_no INTEGER NOT NULL,
        saved_at TEXT NOT NULL, text TEXT NOT NULL, words INTEGER NOT NULL, inserted_words INTEGER NOT NULL,
        deleted_words INTEGER NOT NULL, largest_insertion_words INTEGER NOT NULL, via TEXT NOT NULL,
        PRIMARY KEY (invitation_id, revision_no)""",
    "write_submissions": """
        invitation_id TEXT PRIMARY KEY REFERENCES write_invitations(invitation_id),
        attestation_id TEXT UNIQUE NOT NULL, attestation_version TEXT NOT NULL, attestation_name TEXT NOT NULL,
        publication TEXT NOT NULL, revision_no INTEGER NOT NULL, text TEXT NOT NULL, text_sha256 TEXT NOT NULL,
        words INTEGER NOT NULL, evidence TEXT NOT NULL, submitted_at TEXT NOT NULL, doc_id TEXT NOT NULL,
        imported_at TEXT, import_id TEXT""",
    "write_sessions": """
        sid_sha256 TEXT PRIMARY KEY, invitation_id TEXT NOT NULL, created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL, revoked_at TEXT""",
    "write_forms": """
        nonce_sha256 TEXT PRIMARY KEY, invitation_id TEXT NOT NULL, purpose TEXT NOT NULL,
        issued_at TEXT NOT NULL, used_at TEXT""",
    "write_withdrawals": """
        invitation_id TEXT PRIMARY KEY, requested_at TEXT NOT NULL, via TEXT NOT NULL, state_before TEXT NOT NULL,
        doc_id TEXT, workspace_removed_at TEXT""",
}


def create_sql(name: str) -> str:
    """``CREATE TABLE IF NOT EXISTS`` of table ``name`` (SQLite).

    Raises:
        KeyError: an unknown table name.
    """
    return f"CREATE TABLE IF NOT EXISTS {name} ({' '.join(TABLES[name].split())})"
