"""What a board says of its entries' decision rules, time-stamps and headline: right or
refused (issue 26, a new user's findings)."""

from __future__ import annotations

import json
import random

import pytest
from sklearn.metrics import roc_auc_score

from tests.leaderboard.board_helpers import board_toml, hidden_set, labels_of
from veribench.bundles.verify import verify_bundle
from veribench.leaderboard.service import NO_DECISION_RULE, Board


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
