"""The board's own database (SQLAlchemy 2): teams, API tokens (stored hashed), submissions,
receipts, Ladder state and the launch/reveal state. SQLite is the embedded default;
PostgreSQL (psycopg 3) is for deployment; the same code and tests run on both.

The hidden set and every entry's evaluation are not here: they live in an ordinary veribench
workspace (``config.BoardConfig.workspace_path``).

Schema versions (the rule of docs/architecture.md "Persistence"): the version is the one row of
``board_schema``; :func:`open_db` migrates an older database forward in **one** transaction
through :data:`STEPS` and refuses a newer one with one line naming both versions.

========  ==================================================================================
version   what it is
========  ==================================================================================
1         the first board schema: ``board_schema``, ``board_state``, ``teams``, ``tokens``,
          ``submissions``, ``receipts``, ``ladder``. Step 0 -> 1 (:func:`_create_v1`): create
          them in an empty database.
========  ==================================================================================

Tokens: a team's token is 32 random bytes (``secrets.token_urlsafe(32)``), shown once; only
its SHA-256 (hex) is stored, so a copy of the database does not give a token.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    insert,
    inspect,
    select,
    update,
)
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from veribench.errors import VeribenchError

#: The schema version this veribench writes.
VERSION = 1


class SchemaVersionError(VeribenchError):
    """A board database whose schema version this veribench cannot open."""


class DatabaseUnavailable(VeribenchError):
    """The board database cannot be reached or opened."""


class Base(DeclarativeBase):
    """The board database's declarative base: every table below, one metadata, one schema
    version (:data:`VERSION`, migrated by :func:`migrate`)."""


class SchemaRow(Base):
    """The schema version (one row)."""

    __tablename__ = "board_schema"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(Integer)


class BoardState(Base):
    """Launch and reveal (one row, id 1). ``salt_hex`` is the commitment's secret salt (kept
    here until the reveal publishes it); ``commitment`` the published commitment record;
    ``canaries`` {canary doc_id: {"source": matched ordinary doc_id, "label"}}; ``closed_at``
    when the reveal closed submissions."""

    __tablename__ = "board_state"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    launched_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    salt_hex: Mapped[str] = mapped_column(String(64))
    commitment: Mapped[dict[str, Any]] = mapped_column(JSON)
    protocol_sha256: Mapped[str] = mapped_column(String(64))
    canaries: Mapped[dict[str, Any]] = mapped_column(JSON)
    n_documents: Mapped[int] = mapped_column(Integer)
    closed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    revealed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    reveal_dir: Mapped[str | None] = mapped_column(Text, nullable=True)


class Team(Base):
    """A team: its unique name (at most 40 characters; the rule is `add-team`'s) and its id,
    referenced by its API tokens and submissions."""

    __tablename__ = "teams"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(40), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Token(Base):
    """An API token: only its SHA-256 is stored."""

    __tablename__ = "tokens"
    token_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class Submission(Base):
    """One submission. ``status``: ``received`` (file and row committed, not yet scored or
    acknowledged), ``scored`` (receipt issued), ``failed`` (the evaluation refused it; the
    one-line reason in ``headline_reason``; never acknowledged). ``detector`` is the entry's detector name in
    the board's workspace; ``headline`` the unrounded headline (secret before the reveal),
    ``released`` what the Ladder published for it."""

    __tablename__ = "submissions"
    __table_args__ = (UniqueConstraint("team_id", "seq"),)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"))
    seq: Mapped[int] = mapped_column(Integer)
    fmt: Mapped[str] = mapped_column(String(16))
    predictions_sha256: Mapped[str] = mapped_column(String(64))
    metadata_json: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    status: Mapped[str] = mapped_column(String(16))
    detector: Mapped[str] = mapped_column(String(80))
    headline: Mapped[float | None] = mapped_column(Float, nullable=True)
    headline_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    released: Mapped[float | None] = mapped_column(Float, nullable=True)
    canary: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)


class Receipt(Base):
    """The signed receipt of a submission, as returned to the team."""

    __tablename__ = "receipts"
    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id"), primary_key=True)
    receipt: Mapped[dict[str, Any]] = mapped_column(JSON)


class Ladder(Base):
    """A team's Ladder state: the best (unrounded) headline so far and the last released value."""

    __tablename__ = "ladder"
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"), primary_key=True)
    best: Mapped[float | None] = mapped_column(Float, nullable=True)
    released: Mapped[float | None] = mapped_column(Float, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


def token_sha256(token: str) -> str:
    """SHA-256 (hex) of a token's UTF-8 bytes: the form stored in ``tokens``."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _create_v1(con: Connection) -> list[str]:
    """Step 0 -> 1: create the version-1 tables in an empty database."""
    Base.metadata.create_all(con)
    return []


#: ``STEPS[v]`` migrates a board database of version ``v`` to ``v + 1`` (returns notes).
STEPS: dict[int, Callable[[Connection], list[str]]] = {0: _create_v1}


def stored_version(con: Connection) -> int:
    """The schema version on ``con``: 0 for an empty database.

    Raises:
        SchemaVersionError: tables but no ``board_schema`` (not a board database).
    """
    names = set(inspect(con).get_table_names())
    if "board_schema" not in names:
        if names:
            raise SchemaVersionError(f"database {con.engine.url.render_as_string(hide_password=True)} holds "
                                     f"tables but is not a board database ({sorted(names)[0]}, ...)")
        return 0
    v = con.execute(select(SchemaRow.version).where(SchemaRow.id == 1)).scalar_one_or_none()
    return int(v or 0)


def migrate(engine: Engine) -> tuple[int, list[str]]:
    """Bring the database to :data:`VERSION` in one transaction; returns (version found, notes).

    Raises:
        SchemaVersionError: a newer database than this veribench writes.
    """
    with engine.begin() as con:
        found = stored_version(con)
        if found > VERSION:
            raise SchemaVersionError(f"board database {engine.url.render_as_string(hide_password=True)} has "
                                     f"schema version {found}; this veribench reads up to {VERSION}: upgrade veribench")
        notes: list[str] = []
        for v in range(found, VERSION):
            notes += STEPS[v](con)
        if found != VERSION:
            if found == 0:
                con.execute(insert(SchemaRow).values(id=1, version=VERSION))
            else:
                con.execute(update(SchemaRow).where(SchemaRow.id == 1).values(version=VERSION))
    return found, notes


def _sqlite_durable(dbapi_con: Any, _record: Any) -> None:
    dbapi_con.isolation_level = None  # the driver's own BEGIN handling left DDL outside the transaction
    cur = dbapi_con.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")  # a commit is on disk before it returns
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def _sqlite_begin(con: Connection) -> None:
    con.exec_driver_sql("BEGIN")  # SQLAlchemy's recipe: one real transaction, DDL included


def open_db(url: Any) -> Engine:
    """An engine on ``url`` (SQLite or PostgreSQL), migrated to :data:`VERSION`.

    SQLite runs with ``synchronous=FULL`` and WAL, so a committed transaction survives a
    kill -9 or a power cut; PostgreSQL's default (``fsync``, ``synchronous_commit`` on) does
    the same.

    Raises:
        SchemaVersionError: see :func:`migrate`.
        DatabaseUnavailable: the server is unreachable, the file cannot be opened, the login is
            refused (one line naming the database, never its password).
    """
    engine = create_engine(url, future=True, pool_pre_ping=True)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_durable)
        event.listen(engine, "begin", _sqlite_begin)
    try:
        migrate(engine)
    except OperationalError as e:
        engine.dispose()
        first = str(e.orig).strip().splitlines()[0] if e.orig is not None and str(e.orig).strip() else type(e).__name__
        raise DatabaseUnavailable(f"board database {engine.url.render_as_string(hide_password=True)}: cannot open "
                                  f"it ({first})") from None
    return engine
