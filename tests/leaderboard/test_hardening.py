"""Hostile tester's findings of issue 26 (small ones): the board's secret files are private,
a refused submission leaves no file, released values are eta's decimal multiples, and no
label-derived statistic is logged before the reveal."""

from __future__ import annotations

import json
import stat
import warnings

import pytest

from tests.leaderboard.board_helpers import METADATA, board_toml, hidden_set, labels_of, predictions
from veribench.leaderboard.service import Board, BoardError


def _mode(p) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_the_database_and_the_workspace_are_private(launched):
    """board.sqlite (and its journal files) 0600; the workspace 0700, every folder in it 0700
    and every file 0600: they hold the salt and the labels."""
    cfg, tokens, ids, labels, recs = launched
    with Board.open(cfg) as board:
        board.submit(board.team_for_token(tokens["alpha"]), predictions(ids, labels, skill=0.3, seed=9))
        folder = board.folder
    for p in folder.glob("board.sqlite*"):
        assert _mode(p) == 0o600, p
    ws = folder / "workspace"
    assert _mode(ws) == 0o700
    inside = list(ws.rglob("*"))
    assert inside
    for p in inside:
        assert _mode(p) == (0o700 if p.is_dir() else 0o600), p


def test_a_submission_refused_by_the_second_limit_check_leaves_no_file(launched, monkeypatch):
    """The limit checked again in the storing transaction (a concurrent submission took the
    last one): refused, and the file it would have stored is not left behind."""
    cfg, tokens, ids, labels, recs = launched
    real = Board._used
    calls = []

    def racing(s, team_id):
        calls.append(1)
        used, last = real(s, team_id)
        return (used, last) if len(calls) == 1 else (10**6, last)

    with Board.open(cfg) as board:
        before = sorted(p.name for p in (board.folder / "submissions").iterdir())
        monkeypatch.setattr(Board, "_used", staticmethod(racing))
        with pytest.raises(BoardError, match="used its"):
            board.submit(board.team_for_token(tokens["alpha"]), predictions(ids, labels, skill=0.3, seed=9))
        assert sorted(p.name for p in (board.folder / "submissions").iterdir()) == before
        # a refused resubmission of a stored file keeps that file
        calls.clear()
        with pytest.raises(BoardError):
            board.submit(board.team_for_token(tokens["alpha"]), predictions(ids, labels, skill=0.5, seed=0))
        assert sorted(p.name for p in (board.folder / "submissions").iterdir()) == before


def test_released_values_on_the_board_have_etas_decimals(launched):
    cfg, tokens, ids, labels, recs = launched
    with Board.open(cfg) as board:
        team = board.team_for_token(tokens["alpha"])
        for seed in range(3):
            board.submit(team, predictions(ids, labels, skill=0.2 + 0.3 * seed, seed=20 + seed))
        rows = board.public_scores()
        mine = board.team_submissions(team)
    values = [r["released"] for r in rows] + [m["released"] for m in mine]
    assert all(v is not None for v in values)
    for v in values:  # eta = 0.01: at most two decimals as JSON writes it
        assert v == round(v, 2) and len(json.dumps(v).split(".")[-1]) <= 2, v


def test_no_canary_statistic_is_logged_before_the_reveal(db_url, tmp_path):
    """Scoring an entry against a board with canaries warns of nothing (an undefined canary
    test's reason names the matched texts' accuracy, a statistic of the labels); the reveal
    logs it."""
    cfg = board_toml(tmp_path / "board", db_url, canaries=12)
    with Board.open(cfg) as board:
        board.launch(hidden_set(tmp_path / "hidden.jsonl", n=120), "documents")
        ids = [json.loads(x)["id"] for x in board.texts_file().decode().splitlines()]
        labels = labels_of(cfg.parent, ids)
        team = board.team_for_token(board.add_team("alpha"))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            board.submit(team, predictions(ids, labels, skill=0.4, seed=3), METADATA)
        assert [str(w.message) for w in caught] == []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            board.reveal(force=True)
        canary = board.team_submissions(team)[0]["canary"]
    logged = [str(w.message) for w in caught if "canary" in str(w.message)]
    # 12 canaries: the test is undefined unless the matched accuracy is low enough for 12 to
    # flag (acc ** 12 < alpha), which the board's random salt and canary draw sometimes give:
    # an undefined test is logged at the reveal, a defined one logs nothing
    if canary["reason"] is not None:
        assert "accuracy" in canary["reason"] or "canaries" in canary["reason"]
        assert logged == [f"entry alpha: canary leak test undefined: {canary['reason']}"]
    else:
        assert canary["p_value"] is not None and logged == []
