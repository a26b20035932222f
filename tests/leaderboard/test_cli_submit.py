"""`veribench leaderboard submit` over real HTTP (token from VERIBENCH_BOARD_TOKEN only, never
printed; the receipt saved) and `check-receipt` offline (a forged or altered receipt, another
key, another predictions file: one line each, exit 1)."""

from __future__ import annotations

import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from typer.testing import CliRunner

from tests.leaderboard.fake_board import FakeBoard
from tests.leaderboard.test_app_http import FULL, TEXTS
from tests.rubric.rubric_helpers import ServerThread
from veribench.cli.main import app
from veribench.leaderboard import receipts
from veribench.leaderboard.app import create_app


@pytest.fixture
def board_url():
    board = FakeBoard(TEXTS)
    token = board.add_team("alpha")
    srv = ServerThread(create_app(board)).start()
    yield board, token, srv.url
    srv.stop()


def run(args: list[str], env: dict[str, str] | None = None):
    return CliRunner().invoke(app, args, env={"COLUMNS": "200", "VERIBENCH_BOARD_TOKEN": "", **(env or {})})


def test_submit_saves_the_receipt_and_check_receipt_verifies_it_offline(board_url, tmp_path, monkeypatch):
    board, token, url = board_url
    monkeypatch.chdir(tmp_path)
    (tmp_path / "predictions.json").write_bytes(FULL)
    (tmp_path / "metadata.json").write_text("{}")
    (tmp_path / "board.pem").write_text(board.public_key_pem)
    r = run(["leaderboard", "submit", "--url", url, "--predictions", "predictions.json"])
    assert r.exit_code == 1 and "VERIBENCH_BOARD_TOKEN: not set" in r.output and board.stored == []
    r = run(["leaderboard", "submit", "--url", url, "--predictions", "predictions.json"],
            {"VERIBENCH_BOARD_TOKEN": token})
    assert r.exit_code == 0, r.output
    assert token not in r.output
    (saved,) = tmp_path.glob("receipt-*.json")
    receipt = json.loads(saved.read_text())
    assert receipt == board.stored[0][1] and receipt["team"] == "alpha"
    r = run(["leaderboard", "check-receipt", saved.name, "--public-key", "board.pem", "--predictions",
             "predictions.json"])
    assert r.exit_code == 0 and "receipt OK" in r.output and "covers the predictions file" in r.output, r.output
    # an altered field, a forged signature (another key), another file: one line each, exit 1
    (tmp_path / "altered.json").write_text(json.dumps({**receipt, "received_at": "2026-01-01T00:00:00Z"}))
    other = Ed25519PrivateKey.generate()
    forged = receipts.sign_receipt(other, **{k: receipt[k] for k in ("board", "commitment_sha256", "team",
                                                                     "predictions_sha256", "received_at",
                                                                     "submission_id", "submission_n", "released")})
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    (tmp_path / "other.json").write_bytes(FULL.replace(b"0.5", b"0.6"))
    for args, said in [
        (["altered.json", "--public-key", "board.pem"], "field 'signature'"),
        (["forged.json", "--public-key", "board.pem"], "field 'key_id'"),
        ([saved.name, "--public-key", "board.pem", "--predictions", "other.json"], "--predictions other.json"),
        ([saved.name, "--public-key", "predictions.json"], "public key"),
    ]:
        r = run(["leaderboard", "check-receipt", *args])
        lines = [x for x in r.output.splitlines() if x.strip()]
        assert r.exit_code == 1 and len(lines) == 1 and said in lines[0] and "Traceback" not in r.output, r.output
    # a refused submission: the board's one line, nothing saved
    (tmp_path / "bad.json").write_text(json.dumps([{"id": "t0", "score": "high"}]))
    r = run(["leaderboard", "submit", "--url", url, "--predictions", "bad.json", "-o", "r2.json"],
            {"VERIBENCH_BOARD_TOKEN": token})
    assert r.exit_code == 1 and "HTTP 400" in r.output and "field 'score'" in r.output, r.output
    assert not (tmp_path / "r2.json").exists() and token not in r.output
    r = run(["leaderboard", "submit", "--url", "ftp://x", "--predictions", "bad.json"], {"VERIBENCH_BOARD_TOKEN": token})
    assert r.exit_code == 2 and "--url" in r.output
