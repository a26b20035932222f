"""A board end to end (without HTTP): launch, three teams, RAID-format submissions, receipts,
the Ladder, reveal, ``veribench verify`` on every revealed bundle and the reveal checked against
the launch commitment; once on SQLite and once on a real PostgreSQL."""

from __future__ import annotations

import json

import pytest

from tests.leaderboard.board_helpers import METADATA, board_toml, hidden_set, labels_of, predictions
from veribench.bundles.verify import verify_bundle
from veribench.errors import InputError
from veribench.hashing import canonical_json, sha256_bytes
from veribench.leaderboard import receipts
from veribench.leaderboard.service import Board, BoardError, check_reveal_dir


def test_a_board_end_to_end(db_url, tmp_path):
    folder = tmp_path / "board"
    cfg = board_toml(folder, db_url)
    with Board.open(cfg) as board:
        record = board.launch(hidden_set(tmp_path / "hidden.jsonl"), "documents")
        assert record["n"] == 240 + 12 and record["board"] == "detect-test"
        assert json.loads((folder / "commitment.json").read_text()) == record
        texts = [json.loads(x) for x in board.texts_file().decode().splitlines()]
        assert len(texts) == 252 and all(set(t) == {"id", "text"} for t in texts)
        assert not any(t["id"].startswith("org-") for t in texts)  # the board's own ids
        ids = [t["id"] for t in texts]
        labels = labels_of(folder, ids)
        tokens = {name: board.add_team(name) for name in ("alpha", "beta", "gamma")}
        assert len(set(tokens.values())) == 3 and all(len(t) >= 43 for t in tokens.values())
        assert board.team_for_token("not-a-token") is None
        teams = {name: board.team_for_token(tok) for name, tok in tokens.items()}
        assert {t.name for t in teams.values()} == {"alpha", "beta", "gamma"}
        pem = board.public_key_pem
        got = {}
        for k, (name, skill) in enumerate([("alpha", 0.6), ("beta", 0.3), ("gamma", 0.05)]):
            data = predictions(ids, labels, skill=skill, seed=k)
            rec = board.submit(teams[name], data, METADATA, "raid")
            receipts.check_receipt(rec, pem)
            assert rec["predictions_sha256"] == sha256_bytes(data) and rec["team"] == name
            assert rec["commitment_sha256"] == sha256_bytes(canonical_json(record).encode())
            assert (folder / "submissions" / f"{rec['predictions_sha256']}.json").read_bytes() == data
            got[name] = rec
        # a forged receipt fails the check
        forged = dict(got["gamma"], team="alpha")
        with pytest.raises(InputError):
            receipts.check_receipt(forged, pem)
        pub = board.public_scores()
        assert [r["team"] for r in pub] == ["alpha", "beta", "gamma"]
        for r in pub:  # the released value is a multiple of eta: the Ladder's rounding
            assert r["released"] is not None and abs(r["released"] / 0.01 - round(r["released"] / 0.01)) < 1e-9
            assert set(r) >= {"team", "metric", "released", "submissions", "rule"} and "headline" not in r
        # no team sees another's submissions, and before the reveal not even its own unrounded score
        mine = board.team_submissions(teams["beta"])
        assert [m["receipt"] for m in mine] == [got["beta"]] and "headline" not in mine[0]
        with pytest.raises(BoardError, match="not revealed"):
            board.results()
        out = board.reveal()
    assert check_reveal_dir(out) == []
    for b in sorted((out / "bundles").iterdir()):
        v = verify_bundle(b)
        assert v.ok, (b, v)
    res = json.loads((out / "results.json").read_text())
    assert [e["team"] for e in res["entries"]] == ["alpha", "beta", "gamma"]
    assert res["tiers"] is not None and res["comparisons"]
    tiers = next(t for t in res["tiers"] if t["slice"] == "all" and t["metric"] == "auroc")["tiers"]
    assert [t["detectors"] for t in tiers] == [["alpha"], ["beta"], ["gamma"]]
    # each domain's cell has 40 human and 40 AI texts, under the minimum cell size of 45: no number
    # shown; the whole set's row (120 and 120) is shown
    for e in res["entries"]:
        cells = {c["domain"]: c for c in e["grid"]}
        assert set(cells) == {"news", "books", "reviews", "all"}
        for d in ("news", "books", "reviews"):
            assert cells[d]["suppressed_reason"].startswith("fewer than 45 texts"), cells[d]
            assert cells[d]["auroc"] is None and cells[d]["tpr_at_fpr_5"] is None and cells[d]["n_human"] == 40
        assert "suppressed_reason" not in cells["all"] and cells["all"]["auroc"] is not None and 0.0 <= cells["all"]["auroc"] <= 1.0
        assert e["headline"] == pytest.approx(e["table1"]["auroc"])
    # a tampered reveal disagrees with the commitment
    lines = (out / "hidden_set.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    row["label"] = "ai" if row["label"] == "human" else "human"
    (out / "hidden_set.jsonl").write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")
    assert any("label" in p for p in check_reveal_dir(out))
