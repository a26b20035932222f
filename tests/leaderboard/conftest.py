"""Fixtures of the leaderboard tests: the board database on SQLite and on a real PostgreSQL.

``postgres_server`` starts PostgreSQL (Debian's ``postgresql`` package: ``initdb``,
``pg_ctl``) in a temporary folder, on a unix socket only (no TCP port), as an unprivileged
user (``runuser -u nobody`` when the tests run as root, since initdb and pg_ctl refuse
root). It skips, naming why, only when the binaries are absent.
``db_url`` is parametrised over both: every test that takes it runs once per database.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from tests.leaderboard.board_helpers import METADATA, board_toml, hidden_set, labels_of, predictions
from veribench.leaderboard.service import Board

PG_GLOBS = ("/usr/lib/postgresql/*/bin",)


def _pg_bin() -> Path | None:
    for pat in PG_GLOBS:
        for d in sorted(glob.glob(pat), reverse=True):
            if (Path(d) / "initdb").is_file() and (Path(d) / "pg_ctl").is_file():
                return Path(d)
    found = shutil.which("initdb")
    return Path(found).parent if found and shutil.which("pg_ctl") else None


def _as_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", "nobody", "--", *cmd]


@pytest.fixture(scope="session")
def postgres_server():
    """A running PostgreSQL server for the session: yields a function giving the URL of a new,
    empty database (``postgresql+psycopg://board@/NAME?host=SOCKET``)."""
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) are not installed: apt-get install postgresql")
    base = Path(tempfile.mkdtemp(prefix="vb-pg-"))
    os.chmod(base, 0o777)
    data, sock = base / "data", base / "sock"
    sock.mkdir()
    os.chmod(sock, 0o777)
    if os.geteuid() == 0:
        shutil.chown(base, "nobody")
        shutil.chown(sock, "nobody")
    log = base / "server.log"
    subprocess.run(_as_user([str(bindir / "initdb"), "-D", str(data), "-U", "board", "--auth=trust", "-E", "UTF8",
                             "--no-sync"]), check=True, capture_output=True)
    opts = f"-c listen_addresses='' -k {sock} -c fsync=on"
    subprocess.run(_as_user([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", opts, "-w", "start"]),
                   check=True, capture_output=True)
    try:
        import psycopg

        def new_database() -> str:
            name = "b" + uuid.uuid4().hex[:12]
            with psycopg.connect(host=str(sock), user="board", dbname="postgres", autocommit=True) as con:
                con.execute(f'CREATE DATABASE "{name}"')
            return f"postgresql+psycopg://board@/{name}?host={sock}"

        yield new_database
    finally:
        subprocess.run(_as_user([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
                       capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """A URL of a new, empty board database: SQLite in ``tmp_path``, or PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'board.sqlite'}"
    return request.getfixturevalue("postgres_server")()


@pytest.fixture()
def launched(db_url, tmp_path):
    """A launched board with teams alpha and beta, one acknowledged submission each:
    (board.toml, tokens, ids, labels, receipts)."""
    cfg = board_toml(tmp_path / "board", db_url, canaries=0)
    with Board.open(cfg) as board:
        board.launch(hidden_set(tmp_path / "hidden.jsonl", n=120), "documents")
        ids = [json.loads(x)["id"] for x in board.texts_file().decode().splitlines()]
        labels = labels_of(cfg.parent, ids)
        tokens = {t: board.add_team(t) for t in ("alpha", "beta")}
        recs = {t: board.submit(board.team_for_token(tok), predictions(ids, labels, skill=s, seed=i), METADATA)
                for i, (t, tok, s) in enumerate([("alpha", tokens["alpha"], 0.5), ("beta", tokens["beta"], 0.2)])}
    return cfg, tokens, ids, labels, recs
