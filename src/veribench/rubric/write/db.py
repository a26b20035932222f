"""The writing app's own store: SQLite in WAL mode, ``<workspace>/write.sqlite``.

Why not the workspace's DuckDB file: DuckDB lets one process write a database at a time
and holds the lock while a connection is open, so a server holding the workspace would lock
out every other command for its lifetime. SQLite in write-ahead-log mode lets any number
of processes read while one writes, and a writer waits for another (``busy_timeout``)
instead of failing. ``write serve`` therefore keeps invitations, sessions, drafts and their
revisions here; ``write import`` copies submitted texts into the workspace as arm-B
documents. The file holds drafts and typed names: keep it private (mode 0600).

Tables
------
write_meta          key/value: the session-signing secret
write_prompts       prompt id (``p-`` + 12 hex of its SHA-256), text, SHA-256
write_invitations   one row per personal link: public id, SHA-256 of the link token (the
                    token itself is never stored), prompt, register, word range, state
                    (``invited`` | ``started`` | ``consented`` | ``writing`` | ``submitted`` |
                    ``withdrawn``), consent and self-report, editor-opened time
write_revisions     every saved revision: text, server time, and its step numbers
                    (words, inserted, deleted, largest inserted block)
write_submissions   the submitted revision: attestation id, typed name, publication choice,
                    text, SHA-256, process evidence (JSON), import into the workspace
write_sessions      server-side sessions (SHA-256 of the session id), revocable
write_forms         one-time form tokens (hashed): a submitted form cannot be replayed
write_withdrawals   one row per withdrawal: when, how, the workspace document it removes,
                    and when it was removed there
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from veribench.store.sql import SqlAccess

FILE_NAME = "write.sqlite"
#: How long a writer waits for another process's write transaction, in milliseconds.
BUSY_TIMEOUT_MS = 30_000

SCHEMA = """
CREATE TABLE IF NOT EXISTS write_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS write_prompts (
    prompt_id TEXT PRIMARY KEY, text TEXT NOT NULL, sha256 TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS write_invitations (
    invitation_id TEXT PRIMARY KEY,
    token_sha256 TEXT UNIQUE NOT NULL,
    prompt_id TEXT NOT NULL REFERENCES write_prompts(prompt_id),
    register TEXT NOT NULL,
    min_words INTEGER NOT NULL,
    max_words INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    token_used_at TEXT,
    revoked_at TEXT,
    state TEXT NOT NULL,
    consent_version TEXT,
    consented_at TEXT,
    english TEXT,
    first_language TEXT,
    years_writing_english INTEGER,
    self_report_at TEXT,
    editor_opened_at TEXT,
    withdrawn_at TEXT
);
CREATE TABLE IF NOT EXISTS write_revisions (
    invitation_id TEXT NOT NULL REFERENCES write_invitations(invitation_id),
    revision_no INTEGER NOT NULL,
    saved_at TEXT NOT NULL,
    text TEXT NOT NULL,
    words INTEGER NOT NULL,
    inserted_words INTEGER NOT NULL,
    deleted_words INTEGER NOT NULL,
    largest_insertion_words INTEGER NOT NULL,
    via TEXT NOT NULL,
    PRIMARY KEY (invitation_id, revision_no)
);
CREATE TABLE IF NOT EXISTS write_submissions (
    invitation_id TEXT PRIMARY KEY REFERENCES write_invitations(invitation_id),
    attestation_id TEXT UNIQUE NOT NULL,
    attestation_version TEXT NOT NULL,
    attestation_name TEXT NOT NULL,
    publication TEXT NOT NULL,
    revision_no INTEGER NOT NULL,
    text TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    words INTEGER NOT NULL,
    evidence TEXT NOT NULL,
    submitted_at TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    imported_at TEXT,
    import_id TEXT
);
CREATE TABLE IF NOT EXISTS write_sessions (
    sid_sha256 TEXT PRIMARY KEY,
    invitation_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE TABLE IF NOT EXISTS write_forms (
    nonce_sha256 TEXT PRIMARY KEY,
    invitation_id TEXT NOT NULL,
    purpose TEXT NOT NULL,
    issued_at TEXT NOT NULL,
    used_at TEXT
);
CREATE TABLE IF NOT EXISTS write_withdrawals (
    invitation_id TEXT PRIMARY KEY,
    requested_at TEXT NOT NULL,
    via TEXT NOT NULL,
    state_before TEXT NOT NULL,
    doc_id TEXT,
    workspace_removed_at TEXT
);
"""


class WriteDB(SqlAccess):
    """One SQLite connection to a writing store, shared by the threads of one process.

    Args:
        path: the SQLite file (created with mode 0600 when missing).

    Interface as :class:`veribench.store.Workspace` where the app needs it: ``lock``,
    :meth:`query`, :meth:`transaction` (re-entrant, all or nothing), :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.folder = self.path.parent
        self.lock = threading.RLock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        self.con = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=False)
        with self.lock:
            self.con.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.con.execute("PRAGMA journal_mode = WAL")
            self.con.execute("PRAGMA synchronous = FULL")  # a saved revision survives a power cut
            self.con.execute("PRAGMA foreign_keys = ON")
            self.con.execute("PRAGMA secure_delete = ON")  # a withdrawn text is overwritten, not just unlinked
            self.con.executescript(SCHEMA)

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
    """The writing store of workspace folder ``workspace`` (created when missing)."""
    return WriteDB(Path(workspace) / FILE_NAME)
