"""What a board says of its entries' decision rules, time-stamps and headline: right or
refused (issue 26, a new user's findings)."""

from __future__ import annotations

import json
import random
import stat

import pytest
from fastapi.testclient import TestClient
from sklearn.metrics import roc_auc_score
from typer.testing import CliRunner

from tests.bundles.tsa_server import TSAServer
from tests.leaderboard.board_helpers import board_toml, hidden_set, labels_of
from veribench.bundles.verify import verify_bundle
from veribench.cli.main import app
from veribench.commit import tsa
from veribench.errors import InputError
from veribench.leaderboard import service
from veribench.leaderboard.app import create_app
from veribench.leaderboard.config import load_config
from veribench.leaderboard.service import NO_DECISION_RULE, NO_TSA, Board, BoardError


def _zippy_like(ids: list[str], labels: dict[str, str], seed: int = 3) -> bytes:
    """Scores near -0.03 (as ZipPy's): no fixed scale, all below 0.5, yet they rank the labels."""
    rnd = random.Random(seed)
    return json.dumps([{"id": i, "score": -0.03 + (0.004 if labels[i] == "ai" else 0.0) + rnd.gauss(0, 0.003)}
                       for i in ids]).encode("utf-8")


def test_in_sample_entries_have_no_decision_rule_and_null_rates_with_the_reason(tmp_path):
    """Under RAID's in-sample rule an entry's scores have no fixed scale: its Table 1 catch
    rate, FPR and balanced accuracy are null with the reason, never 0 from a made-up
    ``raw > 0.5``; AUROC and TPR at a fixed FPR are still given."""
    cfg = board_toml(tmp_path / "board", f"sqlite:///{tmp_path / 'b.sqlite'}", canaries=0, grid=[])
    with Board.open(cfg) as board:
        board.launch(hidden_set(tmp_path / "h.jsonl", n=200), "documents")
        ids = [json.loads(x)["id"] for x in board.texts_file().decode().splitlines()]
        labels = labels_of(cfg.parent, ids)
        team = board.team_for_token(board.add_team("zippy"))
        data = _zippy_like(ids, labels)
        board.submit(team, data)
        out = board.reveal()
    res = json.loads((out / "results.json").read_text())
    (e,) = res["entries"]
    row = e["table1"]
    for k in ("catch_rate", "fpr", "balanced_accuracy"):
        assert row[k] is None, (k, row[k])
        assert row[f"{k}_reason"] == "no decision rule", row.get(f"{k}_reason")
    assert e["decision_rule"] == {"rule": None, "reason": NO_DECISION_RULE}
    assert NO_DECISION_RULE == ("no decision rule: submitted scores have no fixed scale; see TPR at a fixed FPR")
    scores = {x["id"]: x["score"] for x in json.loads(data)}
    y = [labels[i] == "ai" for i in ids]
    assert row["auroc"] == pytest.approx(roc_auc_score(y, [scores[i] for i in ids]))
    assert row["tpr_at_fpr_5"]["tpr"] is not None
    assert verify_bundle(out / "bundles" / "zippy").ok  # verify re-derives the null rates from the bundle


def test_launch_without_a_tsa_says_so_and_with_one_serves_the_token(tmp_path):
    """No authority: launch prints and the record says "no time-stamp: no TSA configured" (never
    silent), and /commitment.tsr refuses with that reason. With ``tsa_url`` (the local test
    authority): the record names it and /commitment.tsr serves the token over commitment.json's bytes."""
    cfg = board_toml(tmp_path / "a", f"sqlite:///{tmp_path / 'a.sqlite'}", canaries=0, grid=[])
    res = CliRunner().invoke(app, ["leaderboard", "launch", "--config", str(cfg), "--hidden-set",
                                   str(hidden_set(tmp_path / "h.jsonl", n=120))], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert f"{NO_TSA} (name one as tsa_url in board.toml)" in res.output.splitlines()
    record = json.loads((cfg.parent / "commitment.json").read_text())
    assert record["timestamp"] == {"tsa_url": None, "token": None, "reason": NO_TSA}
    with Board.open(cfg) as board:
        c = TestClient(create_app(board))
        r = c.get("/commitment.tsr")
        assert r.status_code == 404 and r.json()["error"] == NO_TSA
        assert c.get("/commitment").json() == record
    with TSAServer() as auth:
        roots = tsa.load_certificates(auth.authority.ca_pem)
        cfg2 = board_toml(tmp_path / "b", f"sqlite:///{tmp_path / 'b.sqlite'}", canaries=0, grid=[],
                          tsa_url=auth.url + "/tsa")
        with Board.open(cfg2) as board:
            record = board.launch(tmp_path / "h.jsonl", "documents")
            assert record["timestamp"]["tsa_url"] == auth.url + "/tsa" and record["timestamp"]["reason"] is None
            r = TestClient(create_app(board)).get("/commitment.tsr")
            assert r.status_code == 200 and r.content == (cfg2.parent / "commitment.tsr").read_bytes()
            assert tsa.check_token(r.content, (cfg2.parent / "commitment.json").read_bytes(), roots=roots,
                                   require_signature=True) is not None


def _side_rows_set(path, n_human: int, n_ai: int, n_attacked: int):
    rows = [{"id": f"h{i}", "text": f"human text {i} about rivers", "label": "human"} for i in range(n_human)]
    rows += [{"id": f"a{i}", "text": f"machine text {i} about stones", "label": "ai"} for i in range(n_ai)]
    rows += [{"id": f"x{i}", "text": f"attacked text {i} about stones", "label": "ai", "source_id": f"a{i}",
              "tags": {"derivation": "attack", "attack": "paraphrase"}} for i in range(n_attacked)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(("metric", "n_human", "n_ai", "expect"), [
    ("tpr_at_fpr_5", 15, 40, ["undefined on this set: 15 human and 40 AI headline texts (30 side rows",
                              "fewer than min_cell_size 30"]),
    ("tpr_at_fpr_1", 60, 60, ["undefined on this set: 60 human and 60 AI headline texts (30 side rows"]),
    ("auroc", 40, 25, ["never be released: 40 human and 25 AI headline texts (30 side rows"]),
    ("tpr_at_fpr_5", 40, 40, []),
])
def test_launch_warns_when_the_headline_can_never_be_defined(tmp_path, metric, n_human, n_ai, expect):
    _launch_notes(tmp_path, metric, n_human, n_ai, expect)


def test_launch_warns_when_the_calibration_split_is_too_small_for_a_5_percent_fpr(tmp_path):
    """A fresh organiser's finding: a hash split holding 2 human texts fitted the "5% FPR"
    decision rule at FPR 0 (and TPR at 5% FPR and the canary test were undefined) with no word
    at launch. Now one line says how many human headline texts the split holds, counted with
    the board's own split (its ids and salt); a 1-in-2 split of 120 human texts (about 60) does not warn."""
    notes = _launch_notes(tmp_path / "a", "auroc", 40, 40, ["the calibration split (1 in 10 groups) holds "],
                          calibration='{ rule = "hash", every = 10, salt = "s" }')
    assert "FPR 0 there, not 5%" in notes[0]
    assert not any(ch.isdigit() for ch in notes[0].split(" holds ")[1].split("20")[0])  # no count of human texts
    assert _launch_notes(tmp_path / "b", "auroc", 120, 40, [], calibration='{ rule = "hash", every = 2, salt = "s" }') == []


def _launch_notes(tmp_path, metric, n_human, n_ai, expect, calibration=None):
    """Fewer human or AI headline texts than min_cell_size, or fewer human ones than 1/target
    FPR: one line at launch and in the record's notes; attacked side rows are not counted."""
    cfg = board_toml(tmp_path / "b", f"sqlite:///{tmp_path / 'b.sqlite'}", canaries=0, grid=[],
                     headline_metric=metric, min_cell_size=30)
    if calibration:
        cfg.write_text(cfg.read_text() + f"calibration = {calibration}\n")
    tmp_path.mkdir(parents=True, exist_ok=True)
    hs = _side_rows_set(tmp_path / "h.jsonl", n_human, n_ai, 30)
    res = CliRunner().invoke(app, ["leaderboard", "launch", "--config", str(cfg), "--hidden-set", str(hs)],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    notes = json.loads((cfg.parent / "commitment.json").read_text())["notes"]
    assert len(notes) == len(expect)
    warned = [x for x in res.output.splitlines() if x.startswith("warning: ")]
    assert warned == [f"warning: {n}" for n in notes]
    for frag in expect:
        assert any(frag in n for n in notes), (frag, notes)
    return notes


def _launched(tmp_path, **extra):
    cfg = board_toml(tmp_path / "b", f"sqlite:///{tmp_path / 'b.sqlite'}", canaries=0, grid=[], **extra)
    board = Board.open(cfg)
    board.launch(hidden_set(tmp_path / "h.jsonl", n=60), "documents")
    return cfg, board


def test_a_truncated_texts_file_is_refused_at_serve_start_and_at_submission(tmp_path):
    """``/texts`` is checked against the commitment's texts_root before serving; a truncated
    file is refused in one line, and a submission against it never reaches the server's
    temporary files (no ``/tmp/...`` path in any error)."""
    cfg, board = _launched(tmp_path)
    with board:
        board.check_texts()  # as launched: agrees
        team = board.team_for_token(board.add_team("t1"))
        texts = cfg.parent / "texts.jsonl"
        lines = texts.read_text().splitlines()
        texts.write_text(lines[0].replace('"text": "', '"text": "X') + "\n" + "\n".join(lines[1:]) + "\n")
        with pytest.raises(BoardError, match="disagrees with the launch commitment"):
            board.check_texts()
        texts.write_text("")
        with pytest.raises(BoardError, match="disagrees with the launch commitment"):
            board.check_texts()
        with pytest.raises(BoardError) as e:
            board.submit(team, b"[]")
        assert str(e.value).startswith("texts.jsonl holds 0 texts, the launch commitment 60") and "/tmp" not in str(e.value)
    res = CliRunner().invoke(app, ["leaderboard", "serve", "--config", str(cfg)])
    assert res.exit_code != 0 and "disagrees with the launch commitment" in res.output and "Traceback" not in res.output


def test_an_import_refusal_names_the_upload_not_a_temporary_path(tmp_path, monkeypatch):
    """Whatever the scores' import refuses is reported against ``predictions.json``."""
    cfg, board = _launched(tmp_path)
    with board:
        team = board.team_for_token(board.add_team("t1"))

        def refuse(ws, path, **kw):
            raise InputError("no rows", file=str(path), record=0, field="score")

        monkeypatch.setattr(service, "import_scores", refuse)
        ids = [json.loads(x)["id"] for x in board.texts_file().decode().splitlines()]
        with pytest.raises(InputError) as e:
            board.submit(team, json.dumps([{"id": i, "score": 0.5} for i in ids]).encode())
        assert str(e.value) == "file predictions.json, record 0, field 'score': no rows"


def test_after_the_reveal_the_board_gives_the_reason_of_an_undefined_headline(tmp_path):
    """Before the reveal the reason of an undefined headline is withheld; after it, /board shows it."""
    cfg, board = _launched(tmp_path, min_cell_size=45, headline_metric="auroc")  # 30 + 30 texts: under 45
    with board:
        ids = [json.loads(x)["id"] for x in board.texts_file().decode().splitlines()]
        team = board.team_for_token(board.add_team("t1"))
        board.submit(team, json.dumps([{"id": i, "score": k / 60} for k, i in enumerate(ids)]).encode())
        (before,) = board.public_scores()
        assert before["released"] is None and "published at the reveal" in before["released_reason"]
        board.reveal()
        (after,) = board.public_scores()
        (entry,) = board.results()["entries"]
    assert after["released"] is None and entry["headline"] is None and entry["headline_reason"]
    assert after["released_reason"] == f"the headline of this team's entry is undefined: {entry['headline_reason']}"
    assert "published at the reveal" not in after["released_reason"]


def test_the_public_files_of_a_launch_are_readable_by_anyone(tmp_path):
    cfg, board = _launched(tmp_path)
    with board:
        for name in ("commitment.json", "texts.jsonl"):
            assert stat.S_IMODE((cfg.parent / name).stat().st_mode) == 0o644, name
        assert stat.S_IMODE(board.key_path.stat().st_mode) == 0o600  # the signing key stays secret
        # the protocol holds the calibration split's salt: private until the reveal publishes it
        assert stat.S_IMODE((cfg.parent / "protocol.toml").stat().st_mode) == 0o600


def test_a_headline_that_needs_a_decision_rule_is_refused_under_the_in_sample_rule(tmp_path):
    """balanced_accuracy is read at the entry's decision rule; RAID's in-sample rule has none,
    so that headline would be null for every entry: refused at load, naming the key."""
    cfg = board_toml(tmp_path / "b", f"sqlite:///{tmp_path / 'b.sqlite'}", headline_metric="balanced_accuracy")
    with pytest.raises(InputError) as e:
        load_config(cfg)
    assert str(e.value).startswith(f"file {cfg}, field 'board.headline_metric': headline 'balanced_accuracy' needs a "
                                   "decision rule")
    cfg.write_text(cfg.read_text() + 'calibration = { every = 3, salt = "cal" }\n')
    assert load_config(cfg).board.headline_metric == "balanced_accuracy"  # with a calibration split: a rule
