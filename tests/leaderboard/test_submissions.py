"""Submissions against a launched board: bad files refused with nothing stored, the per-team
limit, the Ladder against one-flip probing, tokens stored hashed, and the board's states."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import create_engine, text

from tests.leaderboard.board_helpers import METADATA, board_toml, hidden_set
from veribench.errors import InputError
from veribench.leaderboard.service import Board, BoardError


def _files(board: Board) -> set[str]:
    return {p.name for p in (board.folder / "submissions").iterdir()}


def test_bad_predictions_are_refused_in_one_line_and_nothing_is_stored(launched):
    cfg, tokens, ids, labels, recs = launched
    with Board.open(cfg) as board:
        team = board.team_for_token(board.add_team("gamma"))
        before = _files(board)
        good = [{"id": i, "score": 0.5} for i in ids]
        cases = {
            "unknown id": [*good[:-1], {"id": "nope", "score": 0.5}],
            "missing id": good[:-1],
            "duplicate id": [*good, good[0]],
            "non-finite": [*good[:-1], {"id": ids[-1], "score": "NaN"}],
        }
        for what, recs_ in cases.items():
            with pytest.raises(InputError) as e:
                board.submit(team, json.dumps(recs_).encode(), METADATA, "raid")
            msg = str(e.value)
            assert "\n" not in msg and "predictions.json" in msg, (what, msg)
        with pytest.raises(InputError, match="metadata.json"):
            board.submit(team, json.dumps(good).encode(), b'{"detector_name": 3}', "raid")
        assert board.team_submissions(team) == [] and _files(board) == before
        assert [r["submissions"] for r in board.public_scores() if r["team"] == "gamma"] == [0]


def test_one_flip_probing_moves_the_public_score_only_as_the_ladder_allows(launched):
    """A team submits a file, then files that each flip one text's score: the released value
    changes only when the (hidden) headline beats the last released one by more than eta,
    rounded to a multiple of eta (checked after the reveal against a plain loop of the rule);
    the limit refuses the sixth file and stores nothing."""
    cfg, tokens, ids, labels, recs = launched
    with Board.open(cfg) as board:
        tok = board.add_team("gamma")
        team = board.team_for_token(tok)
        base = {i: (0.8 if labels[i] == "ai" else 0.3) + (k % 7) / 20 for k, i in enumerate(ids)}
        shown = []
        for k in range(5):
            scores = dict(base)
            if k:
                victim = ids[k]
                scores[victim] = 1.0 - scores[victim] if labels[victim] == "human" else 0.0
            board.submit(team, json.dumps([{"id": i, "score": v} for i, v in scores.items()]).encode(), None, "raid")
            shown.append(next(r["released"] for r in board.public_scores() if r["team"] == "gamma"))
        before = _files(board)
        with pytest.raises(BoardError, match="used its 5 submissions"):
            board.submit(team, json.dumps([{"id": i, "score": 0.1} for i in ids]).encode(), None, "raid")
        assert _files(board) == before
        board.reveal()
        mine = board.team_submissions(team)
    eta = 0.01
    released = None
    for m, pub in zip(mine, shown, strict=True):
        h = m["headline"]
        if released is None or h > released + eta:
            released = round(h / eta) * eta
        assert m["released"] == pytest.approx(released) == pytest.approx(pub)
        assert abs(pub / eta - round(pub / eta)) < 1e-9
    assert len(set(shown)) == 1  # each flip moved the hidden AUROC by far less than eta


def test_tokens_are_stored_hashed_and_the_board_refuses_out_of_order_calls(db_url, tmp_path):
    cfg = board_toml(tmp_path / "board", db_url, canaries=0)
    with Board.open(cfg) as board:
        with pytest.raises(BoardError, match="not launched"):
            board.texts_file()
        tok = board.add_team("alpha")
        with pytest.raises(InputError, match="exists already"):
            board.add_team("ALPHA")
        with pytest.raises(InputError, match="team name"):
            board.add_team("../etc")
        team = board.team_for_token(tok)
        with pytest.raises(BoardError, match="not launched"):
            board.submit(team, b"[]", None, "raid")
        with pytest.raises(InputError, match="unknown importer"):
            board.launch(tmp_path / "x.jsonl", "liang")
        (tmp_path / "odd.jsonl").write_text(json.dumps({"id": "a", "text": "words here", "label": "mixed"}) + "\n")
        with pytest.raises(InputError, match="label 'mixed'"):
            board.launch(tmp_path / "odd.jsonl", "documents")
        board.launch(hidden_set(tmp_path / "hidden.jsonl", n=60), "documents")
        with pytest.raises(BoardError, match="already launched"):
            board.launch(tmp_path / "hidden.jsonl", "documents")
    engine = create_engine(board.cfg.database_url())
    with engine.connect() as con:
        dump = json.dumps([list(map(str, r)) for t in ("tokens", "teams", "board_state")
                           for r in con.execute(text(f"SELECT * FROM {t}"))])
    engine.dispose()
    assert tok not in dump and len(tok) >= 43
