"""RFC 3161 time-stamps of the launch commitment and of each submission (a real authority on
127.0.0.1), and the cycle's end (``reveal_at``)."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from typer.testing import CliRunner

from tests.bundles.tsa_server import TSAServer
from tests.leaderboard.board_helpers import board_revealing_tomorrow, board_toml, hidden_set
from tests.rubric.rubric_helpers import ServerThread
from veribench.cli.main import app
from veribench.commit import tsa
from veribench.errors import VeribenchError
from veribench.leaderboard import receipts, service
from veribench.leaderboard.app import create_app
from veribench.leaderboard.service import Board, BoardError, check_reveal_against_launch, check_reveal_dir


def _scores(board: Board) -> bytes:
    ids = [json.loads(x)["id"] for x in board.texts_file().decode().splitlines()]
    return json.dumps([{"id": i, "score": (k % 10) / 10} for k, i in enumerate(ids)]).encode()


def test_the_commitment_and_each_submission_are_time_stamped(tmp_path):
    with TSAServer() as auth:
        roots = tsa.load_certificates(auth.authority.ca_pem)
        cfg = board_toml(tmp_path / "board", f"sqlite:///{tmp_path / 'b.sqlite'}", canaries=0,
                         tsa_url=auth.url + "/tsa")
        with Board.open(cfg) as board:
            board.launch(hidden_set(tmp_path / "h.jsonl", n=60), "documents")
            folder = board.folder
            token = (folder / "commitment.tsr").read_bytes()
            info = tsa.check_token(token, (folder / "commitment.json").read_bytes(), roots=roots,
                                   require_signature=True)
            assert info is not None
            with pytest.raises(VeribenchError):  # the token stamps those bytes and no others
                tsa.check_token(token, (folder / "commitment.json").read_bytes() + b" ", roots=roots)
            team = board.team_for_token(board.add_team("alpha"))
            data = _scores(board)
            rec = board.submit(team, data, None, "raid")
            receipts.check_receipt(rec, board.public_key_pem)
            tsa.check_token(base64.b64decode(rec["tsa_token_b64"]), data, roots=roots, require_signature=True)
            srv = ServerThread(create_app(board)).start()
            try:
                assert httpx.get(srv.url + "/commitment.tsr").content == token
                out = board.reveal()
                r = CliRunner().invoke(app, ["leaderboard", "check-reveal", str(out), "--url", srv.url])
                assert r.exit_code == 0 and "reveal OK" in r.output, r.output
            finally:
                srv.stop()
    assert (out / "commitment.tsr").read_bytes() == token and check_reveal_dir(out) == []
    launch = {"commitment": json.loads((folder / "commitment.json").read_text()),
              "tsa_token_b64": base64.b64encode(token).decode()}
    assert check_reveal_against_launch(out, launch) == []  # the launch token stamps the revealed bytes
    (out / "commitment.tsr").rename(tmp_path / "kept.tsr")
    assert check_reveal_against_launch(out, launch) == [
        "commitment.tsr is missing: the launch record carries an RFC 3161 token"]
    (tmp_path / "kept.tsr").rename(out / "commitment.tsr")
    (out / "commitment.json").write_text((out / "commitment.json").read_text().replace('"n"', '"n" '))
    assert any("commitment.tsr does not stamp" in p for p in check_reveal_dir(out))


def test_reveal_at_closes_submissions_and_guards_an_early_reveal(tmp_path, monkeypatch):
    cfg, soon = board_revealing_tomorrow(tmp_path, canaries=0)
    with Board.open(cfg) as board:
        board.launch(hidden_set(tmp_path / "h.jsonl", n=60), "documents")
        team = board.team_for_token(board.add_team("alpha"))
        board.submit(team, _scores(board), None, "raid")
        with pytest.raises(BoardError, match=f"reveals at {soon}"):
            board.reveal()
        assert not (board.folder / "reveal").exists()
    # reveal_at is committed at launch (board.toml cannot move it): two days pass instead
    later = datetime.now(UTC) + timedelta(days=2)
    monkeypatch.setattr(service, "_now", lambda: later)
    with Board.open(cfg) as board:
        with pytest.raises(BoardError, match=f"submissions closed at {soon}"):
            board.submit(team, _scores(board), None, "raid")
        assert len(board.team_submissions(team)) == 1
        assert (board.reveal() / "results.json").is_file()
