"""kill -9 during a submission and during the reveal: nothing acknowledged is lost and the board
reopens consistently (issue 26, "Durability"); on SQLite and on PostgreSQL.

The killed process is a real child (``python -c``) running the service with one step replaced by
a stall that announces itself; this test sends it SIGKILL, so no cleanup of any kind runs in it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.leaderboard.board_helpers import predictions
from veribench.bundles.verify import verify_bundle
from veribench.hashing import sha256_bytes
from veribench.leaderboard import receipts
from veribench.leaderboard.service import Board, BoardError, check_reveal_dir

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL is POSIX")

ROOT = Path(__file__).resolve().parents[2]

#: A child that runs one board operation with the step named in argv[2] stalled.
CHILD = """
import sys, time
from pathlib import Path
from veribench.leaderboard import service

def stall(*a, **k):
    print("stalled", flush=True)
    time.sleep(600)

cfg, where = sys.argv[1], sys.argv[2]
if where == "scoring":          # the file and row are committed; the scores are being imported
    service.import_scores = stall
elif where == "receipt":        # inside the transaction that steps the Ladder and stores the receipt
    service.receipts.sign_receipt = stall
elif where == "reveal":         # the second entry's bundle is being published
    orig, calls = service.publish, []
    def publish(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            stall()
        return orig(*a, **k)
    service.publish = publish
board = service.Board.open(cfg)
if where == "reveal":
    board.reveal()
else:
    board.submit(board.team_for_token(sys.argv[3]), Path(sys.argv[4]).read_bytes(), None, "raid")
print("finished", flush=True)
"""


def _killed(*args: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    p = subprocess.Popen([sys.executable, "-c", CHILD, *args], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stderr is not None
        line = p.stdout.readline().strip()
        assert line == "stalled", (line, p.stderr.read())
        p.send_signal(signal.SIGKILL)
        assert p.wait(timeout=60) == -signal.SIGKILL
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for f in (p.stdout, p.stderr):
            if f is not None:
                f.close()


def _acknowledged_kept(board: Board, recs: dict, tokens: dict) -> None:
    pem = board.public_key_pem
    for team, rec in recs.items():
        mine = board.team_submissions(board.team_for_token(tokens[team]))
        assert mine[0]["receipt"] == rec
        receipts.check_receipt(mine[0]["receipt"], pem)
        p = board.folder / "submissions" / f"{rec['predictions_sha256']}.json"
        assert sha256_bytes(p.read_bytes()) == rec["predictions_sha256"]


@pytest.mark.parametrize("where", ["scoring", "receipt"])
def test_a_submission_killed_midway(launched, tmp_path, where):
    cfg, tokens, ids, labels, recs = launched
    with Board.open(cfg) as board:
        before = {r["team"]: r["released"] for r in board.public_scores()}
    data = predictions(ids, labels, skill=0.9, seed=11)
    pred = tmp_path / "predictions.json"
    pred.write_bytes(data)
    _killed(str(cfg), where, tokens["alpha"], str(pred))
    with Board.open(cfg) as board:  # reopening finishes what was received: it was never acknowledged
        _acknowledged_kept(board, recs, tokens)
        mine = board.team_submissions(board.team_for_token(tokens["alpha"]))
        assert [m["status"] for m in mine] == ["scored", "scored"]
        assert mine[1]["predictions_sha256"] == sha256_bytes(data)
        receipts.check_receipt(mine[1]["receipt"], board.public_key_pem)
        after = {r["team"]: r["released"] for r in board.public_scores()}
        assert after["beta"] == before["beta"] and after["alpha"] == mine[1]["released"] >= before["alpha"]
        # the recovered entry is an ordinary one: the reveal verifies
        out = board.reveal()
    assert check_reveal_dir(out) == []
    assert all(verify_bundle(b).ok for b in (out / "bundles").iterdir())


def test_the_reveal_killed_midway_is_run_again(launched):
    cfg, tokens, ids, labels, recs = launched
    _killed(str(cfg), "reveal")
    folder = cfg.parent
    assert not (folder / "reveal").exists() and list(folder.glob(".reveal.partial-*"))
    with Board.open(cfg) as board:
        _acknowledged_kept(board, recs, tokens)
        with pytest.raises(BoardError, match="not revealed"):
            board.results()
        out = board.reveal()
        assert board.reveal() == out  # recorded: a second call returns the same folder
        assert [e["team"] for e in board.results()["entries"]] == ["alpha", "beta"]
    assert not list(folder.glob(".reveal.partial-*"))
    assert check_reveal_dir(out) == []
    assert sorted(b.name for b in (out / "bundles").iterdir()) == ["all", "alpha", "beta"]
    assert all(verify_bundle(b).ok for b in (out / "bundles").iterdir())
