"""Submissions against a launched board: bad files refused with nothing stored, the per-team
limit, the Ladder against one-flip probing, tokens stored hashed, and the board's states."""

from __future__ import annotations

import json
import math

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from tests.leaderboard.board_helpers import METADATA, board_toml, hidden_set, predictions
from veribench.errors import InputError
from veribench.leaderboard import db, receipts, service
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
            released = math.floor(h / eta + 0.5) * eta  # halves upward (Python's round goes to even)
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
        with pytest.raises(InputError, match="reserved"):
            board.add_team("All")
        team = board.team_for_token(tok)
        with pytest.raises(BoardError, match="not launched"):
            board.submit(team, b"[]", None, "raid")
        with pytest.raises(InputError, match="unknown importer"):
            board.launch(tmp_path / "x.jsonl", "liang")
        (tmp_path / "odd.jsonl").write_text(json.dumps({"id": "a", "text": "words here", "label": "mixed"}) + "\n")
        with pytest.raises(InputError, match="label 'mixed'"):
            board.launch(tmp_path / "odd.jsonl", "documents")
        leftover = board.cfg.workspace_path
        leftover.mkdir()
        (leftover / "veribench.duckdb").write_bytes(b"from a launch killed midway")
        with pytest.raises(BoardError, match="exists but board detect-test is not launched"):
            board.launch(hidden_set(tmp_path / "hidden.jsonl", n=60), "documents")
        assert (leftover / "veribench.duckdb").read_bytes() == b"from a launch killed midway"  # never removed
        (leftover / "veribench.duckdb").unlink()
        board.launch(hidden_set(tmp_path / "hidden.jsonl", n=60), "documents")
        with pytest.raises(BoardError, match="already launched"):
            board.launch(tmp_path / "hidden.jsonl", "documents")
    engine = create_engine(board.cfg.database_url())
    with engine.connect() as con:
        dump = json.dumps([list(map(str, r)) for t in ("tokens", "teams", "board_state")
                           for r in con.execute(text(f"SELECT * FROM {t}"))])
    engine.dispose()
    assert tok not in dump and len(tok) >= 43


def test_a_veribench_run_export_is_accepted(launched):
    """``fmt="veribench"``: the CSV of ``veribench export scores`` (doc_id, detector, status,
    ranking_score); stored by its SHA-256 like any submission, scored like RAID's file."""
    cfg, tokens, ids, labels, recs = launched
    rows = ["doc_id,detector,status,ranking_score"] + [
        f"{i},mine,ok,{(0.9 if labels[i] == 'ai' else 0.1) + (k % 5) / 10}" for k, i in enumerate(ids)]
    data = ("\n".join(rows) + "\n").encode()
    with Board.open(cfg) as board:
        team = board.team_for_token(board.add_team("gamma"))
        rec = board.submit(team, data, None, "veribench")
        assert (board.folder / "submissions" / rec["predictions_sha256"]).read_bytes() == data
        mine = board.team_submissions(team)
        assert [(m["format"], m["status"]) for m in mine] == [("veribench", "scored")]
        assert next(r for r in board.public_scores() if r["team"] == "gamma")["released"] is not None
        with pytest.raises(InputError, match="ranking_score"):
            board.submit(team, data.replace(b",ok,0.", b",ok,nan", 1).replace(b"ranking_score", b"score"), None,
                         "veribench")
        assert len(board.team_submissions(team)) == 1


def test_a_submission_the_evaluation_refuses_is_marked_failed_and_not_counted(launched, monkeypatch):
    cfg, tokens, ids, labels, recs = launched

    def refuse(*a, **k):
        raise InputError("boom: the evaluation refused it", field="scores")

    with Board.open(cfg) as board:
        team = board.team_for_token(tokens["alpha"])
        monkeypatch.setattr(service, "evaluate_workspace", refuse)
        with pytest.raises(InputError, match="boom"):
            board.submit(team, predictions(ids, labels, skill=0.4, seed=5))
        monkeypatch.undo()
        mine = board.team_submissions(team)
        assert [(m["n"], m["status"]) for m in mine] == [(1, "scored"), (2, "failed")]
        assert mine[1]["receipt"] is None and mine[1]["failed_reason"].startswith("field 'scores': boom")
    with Board.open(cfg) as board:  # reopening neither retries it nor fails
        board.submit(team, predictions(ids, labels, skill=0.4, seed=6))
        mine = board.team_submissions(team)
        assert [(m["n"], m["status"]) for m in mine] == [(1, "scored"), (2, "failed"), (3, "scored")]
        assert next(r for r in board.public_scores() if r["team"] == "alpha")["submissions"] == 2


def test_a_submission_scored_meanwhile_by_another_process_is_not_scored_twice(launched, monkeypatch):
    """While one process scores a submission, another (a reveal's recovery) scores it too: the
    first then returns the stored receipt; one receipt, one Ladder step."""
    cfg, tokens, ids, labels, recs = launched
    real = service.receipts.load_signing_key
    calls = []

    def meanwhile(path):
        calls.append(1)
        if len(calls) == 1:
            with Board.open(cfg) as other:  # its recovery scores the received submission first
                assert len(other.team_submissions(other.team_for_token(tokens["alpha"]))) == 2
        return real(path)

    with Board.open(cfg) as board:
        team = board.team_for_token(tokens["alpha"])
        monkeypatch.setattr(service.receipts, "load_signing_key", meanwhile)
        rec = board.submit(team, predictions(ids, labels, skill=0.9, seed=8))
        monkeypatch.undo()
        mine = board.team_submissions(team)
        assert [m["status"] for m in mine] == ["scored", "scored"] and mine[1]["receipt"] == rec
        receipts.check_receipt(rec, board.public_key_pem)
        assert len(calls) == 2  # signed once by the other process; the first found it scored


def test_a_headline_under_the_minimum_cell_size_is_not_released(tmp_path):
    """The whole set has 30 human and 30 AI texts, the minimum cell size is 45: the Ladder
    releases nothing, the public reason tells nothing of the labels, the reveal gives it."""
    cfg = board_toml(tmp_path / "board", f"sqlite:///{tmp_path / 'b.sqlite'}", canaries=0)
    with Board.open(cfg) as board:
        board.launch(hidden_set(tmp_path / "hidden.jsonl", n=60), "documents")
        ids = [json.loads(x)["id"] for x in board.texts_file().decode().splitlines()]
        team = board.team_for_token(board.add_team("alpha"))
        board.submit(team, json.dumps([{"id": i, "score": k / 60} for k, i in enumerate(ids)]).encode())
        (pub,) = board.public_scores()
        assert pub["released"] is None and pub["submissions"] == 1
        assert "reveal" in pub["released_reason"] and "30" not in pub["released_reason"]
        board.reveal()
        (mine,) = board.team_submissions(team)
    assert mine["headline"] is None and mine["released"] is None
    assert mine["headline_reason"].startswith("fewer than 45 human or AI texts")


def test_a_grid_tag_the_set_lacks_is_refused_at_launch(tmp_path):
    cfg = board_toml(tmp_path / "board", f"sqlite:///{tmp_path / 'b.sqlite'}", canaries=0, grid=["domian"])
    with Board.open(cfg) as board:
        with pytest.raises(InputError) as e:
            board.launch(hidden_set(tmp_path / "hidden.jsonl", n=30), "documents")
        assert e.value.field == "board.grid" and "'domian' is in no document" in str(e.value)
        assert "domain" in str(e.value) and not board.cfg.workspace_path.exists()


def test_an_unexpected_scoring_error_marks_the_submission_failed_in_one_line(launched, monkeypatch):
    """Any exception while scoring (here a ValueError injected into the evaluation) marks the
    submission failed with ``ClassName: message`` (the salt never shown), raises a one-line
    BoardError, does not count against the limit, and the board opens again."""
    cfg, tokens, ids, labels, recs = launched
    with Board.open(cfg) as board:
        with Session(board.engine) as s:
            salt = s.get(db.BoardState, 1).salt_hex

        monkeypatch.setenv("VERIBENCH_BOARD_DB_PASSWORD", "hunter2-secret")

        def crash(*a, **k):
            raise ValueError(f"math domain error near {salt}\nsecond line hunter2-secret")

        team = board.team_for_token(tokens["alpha"])
        monkeypatch.setattr(service, "evaluate_workspace", crash)
        with pytest.raises(BoardError) as e:
            board.submit(team, predictions(ids, labels, skill=0.4, seed=5))
        msg = str(e.value)
        assert "\n" not in msg and "ValueError: math domain error" in msg and salt not in msg
        monkeypatch.setattr(service, "evaluate_workspace", lambda *a, **k: (_ for _ in ()).throw(
            RuntimeError("cannot reach postgresql://board:hunter2-secret@db")))
        with pytest.raises(BoardError) as e:
            board.submit(team, predictions(ids, labels, skill=0.4, seed=7))
        assert "hunter2-secret" not in str(e.value) and "RuntimeError: cannot reach" in str(e.value)
        mine = board.team_submissions(team)
        assert [(m["n"], m["status"]) for m in mine] == [(1, "scored"), (2, "failed"), (3, "failed")]
        assert mine[1]["failed_reason"] == "ValueError: math domain error near [redacted]"
        assert mine[1]["receipt"] is None
    with Board.open(cfg) as board:  # reopening works, the failed one is not counted
        monkeypatch.undo()
        board.submit(team, predictions(ids, labels, skill=0.4, seed=6))
        assert next(r for r in board.public_scores() if r["team"] == "alpha")["submissions"] == 2


class _Killed(BaseException):
    """Stands for the process dying between storing a submission and scoring it."""


def test_a_received_submission_that_fails_again_in_recovery_is_marked_failed(launched, monkeypatch):
    """A submission received but not scored (the process died) whose scoring raises an
    unexpected error when the board is opened is marked failed: the board opens, every
    time, and the submission is not counted against the limit."""
    cfg, tokens, ids, labels, recs = launched

    def killed(*a, **k):
        raise _Killed

    with Board.open(cfg) as board:
        team = board.team_for_token(tokens["alpha"])
        monkeypatch.setattr(Board, "_score", killed)
        with pytest.raises(_Killed):
            board.submit(team, predictions(ids, labels, skill=0.4, seed=5))
    monkeypatch.undo()
    monkeypatch.setattr(service, "evaluate_workspace",
                        lambda *a, **k: (_ for _ in ()).throw(OverflowError("int too large to convert to float")))
    for _ in range(2):
        with Board.open(cfg) as board:
            mine = board.team_submissions(board.team_for_token(tokens["alpha"]))
            assert [(m["n"], m["status"]) for m in mine] == [(1, "scored"), (2, "failed")]
            assert mine[1]["failed_reason"] == "OverflowError: int too large to convert to float"
            assert board.add_team(f"t{_}")
    monkeypatch.undo()
    with Board.open(cfg) as board:
        board.submit(team, predictions(ids, labels, skill=0.4, seed=6))
        assert next(r for r in board.public_scores() if r["team"] == "alpha")["submissions"] == 2


@pytest.mark.parametrize("extremes", [(0.0, 5e-324), (-1e308, 1e308)])
def test_extreme_scores_never_break_the_board(launched, extremes):
    """Real files with extreme scores: either scored, or failed in one line; the board opens."""
    cfg, tokens, ids, labels, recs = launched
    data = json.dumps([{"id": i, "score": extremes[labels[i] == "ai"]} for i in ids]).encode()
    with Board.open(cfg) as board:
        team = board.team_for_token(tokens["beta"])
        try:
            board.submit(team, data)
        except BoardError as e:
            assert "\n" not in str(e)
        assert board.team_submissions(team)[1]["status"] in ("scored", "failed")
    with Board.open(cfg) as board:
        assert board.add_team("gamma")
