"""The board database: schema version, migrations, refusals, hashed tokens; on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import create_engine, insert, inspect, select, text

from veribench.leaderboard import db


def test_a_new_database_is_created_at_the_current_version(db_url):
    engine = db.open_db(db_url)
    with engine.connect() as con:
        assert db.stored_version(con) == db.VERSION == 1
        names = set(inspect(con).get_table_names())
    assert {"board_schema", "board_state", "teams", "tokens", "submissions", "receipts", "ladder"} <= names
    # opening again migrates nothing and keeps the one version row
    found, notes = db.migrate(engine)
    assert (found, notes) == (db.VERSION, [])
    with engine.connect() as con:
        assert con.execute(select(db.SchemaRow.version)).scalars().all() == [db.VERSION]
    engine.dispose()


def test_a_newer_database_is_refused_naming_both_versions(db_url):
    engine = db.open_db(db_url)
    with engine.begin() as con:
        con.execute(db.SchemaRow.__table__.update().values(version=db.VERSION + 1))
    with pytest.raises(db.SchemaVersionError) as e:
        db.open_db(db_url)
    msg = str(e.value)
    assert f"schema version {db.VERSION + 1}" in msg and f"reads up to {db.VERSION}" in msg and "\n" not in msg
    engine.dispose()


def test_a_database_of_something_else_is_refused_untouched(db_url):
    engine = create_engine(db_url)
    with engine.begin() as con:
        con.execute(text("CREATE TABLE payroll (a INTEGER)"))
    with pytest.raises(db.SchemaVersionError, match="not a board database"):
        db.open_db(db_url)
    with engine.connect() as con:
        assert set(inspect(con).get_table_names()) == {"payroll"}
    engine.dispose()


def test_a_failed_migration_step_leaves_the_database_empty(db_url, monkeypatch):
    def broken(con):
        db.Base.metadata.create_all(con)
        raise RuntimeError("disk full")

    monkeypatch.setitem(db.STEPS, 0, broken)
    with pytest.raises(RuntimeError):
        db.open_db(db_url)
    engine = create_engine(db_url)  # a plain engine: it reads what is on disk
    with engine.connect() as con:
        assert db.stored_version(con) == 0 and inspect(con).get_table_names() == []
    engine.dispose()


def test_tokens_are_stored_as_their_sha256(db_url):
    engine = db.open_db(db_url)
    tok = "s3cr3t-token-value"
    assert db.token_sha256(tok) == hashlib.sha256(tok.encode()).hexdigest()
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    with engine.begin() as con:
        tid = con.execute(insert(db.Team).values(name="alpha", created_at=now)).inserted_primary_key[0]
        con.execute(insert(db.Token).values(token_sha256=db.token_sha256(tok), team_id=tid, created_at=now))
    with engine.connect() as con:
        assert con.execute(select(db.Token.token_sha256)).scalars().all() == [hashlib.sha256(tok.encode()).hexdigest()]
    engine.dispose()
