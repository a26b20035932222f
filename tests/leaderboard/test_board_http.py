"""A real board end to end over HTTP (uvicorn on 127.0.0.1, httpx), once on SQLite and once on
a real PostgreSQL (``db_url``): launch, three teams fetch the texts and submit in RAID's
format, receipts verified offline against ``/public-key`` and ``/commitment``, no team reads
another's submissions, and a hostile team's files that each flip one text's score move the
public responses only as the Ladder's rule allows (checked against the Ladder written as a
plain loop over the unrounded scores, which the board shows only after the reveal); then the
reveal, its results on ``/board``, and ``veribench verify`` on every revealed bundle."""

from __future__ import annotations

import json
import math
import re

import httpx
import pytest
from sklearn.metrics import roc_auc_score

from tests.leaderboard.board_helpers import METADATA, board_toml, hidden_set, labels_of, predictions
from tests.rubric.rubric_helpers import ServerThread
from veribench.bundles.verify import verify_bundle
from veribench.hashing import canonical_json, sha256_bytes
from veribench.leaderboard import receipts
from veribench.leaderboard.app import create_app
from veribench.leaderboard.limits import Limits, RateLimiter
from veribench.leaderboard.service import Board, check_reveal_dir, rederive_reveal

ETA = 0.01


def ladder(headlines: list[float]) -> list[float | None]:
    """Blum & Hardt 2015, Algorithm 1 (higher is better), as a plain loop: the released values."""
    best, out = None, []
    for h in headlines:
        if best is None or h > best + ETA:
            best = math.floor(h / ETA + 0.5) * ETA
        out.append(best)
    return out


def flip(data: bytes, k: int) -> bytes:
    rows = json.loads(data)
    rows[k]["score"] = 1.0 - rows[k]["score"]
    return json.dumps(rows).encode()


@pytest.mark.timeout(900)
def test_a_board_over_http(db_url, tmp_path):
    folder = tmp_path / "board"
    cfg = board_toml(folder, db_url, submission_limit=40)
    with Board.open(cfg) as board:
        record = board.launch(hidden_set(tmp_path / "hidden.jsonl"), "documents")
        tokens = {name: board.add_team(name) for name in ("alpha", "beta", "gamma")}
        srv = ServerThread(create_app(board, limits=Limits(submissions=RateLimiter(600)))).start()
        try:
            c = httpx.Client(base_url=srv.url, timeout=300)
            auth = {n: {"authorization": f"Bearer {t}"} for n, t in tokens.items()}
            assert c.get("/commitment").json() == record
            pem = c.get("/public-key").text
            commitment_sha = sha256_bytes(canonical_json(record).encode())
            texts = [json.loads(x) for x in c.get("/texts", headers=auth["alpha"]).content.decode().splitlines()]
            assert len(texts) == record["n"] and all(set(t) == {"id", "text"} for t in texts)
            ids = [t["id"] for t in texts]
            labels = labels_of(folder, ids)
            got = {}
            for k, (name, skill) in enumerate([("alpha", 0.6), ("beta", 0.3), ("gamma", 0.5)]):
                data = predictions(ids, labels, skill=skill, seed=k)
                r = c.post("/submissions", headers=auth[name], files={
                    "predictions": ("predictions.json", data, "application/json"),
                    "metadata": ("metadata.json", METADATA, "application/json")})
                assert r.status_code == 201, r.text
                rec = got[name] = r.json()
                receipts.check_receipt(rec, pem)  # offline: the key and the record as published
                assert rec["team"] == name and rec["predictions_sha256"] == sha256_bytes(data)
                assert rec["commitment_sha256"] == commitment_sha
            # no team reads another's submissions or receipts
            for name in tokens:
                mine = c.get("/submissions", headers=auth[name]).json()["submissions"]
                assert [m["receipt"] for m in mine] == [got[name]]
                assert all("headline" not in m for m in mine)  # not even its own unrounded score
                for other in tokens:
                    if other != name:
                        r = c.get(f"/submissions/{got[other]['submission_id']}", headers=auth[name])
                        assert r.status_code == 404 and other not in r.text
            # bad predictions: one line naming the record's id and the field; nothing stored
            rows = json.loads(predictions(ids, labels, skill=0.6, seed=0))
            rows[3]["score"] = float("nan")
            r = c.post("/submissions", headers=auth["beta"],
                       files={"predictions": ("p.json", json.dumps(rows).encode())})
            assert r.status_code == 400 and r.json()["field"] == "score" and repr(ids[3]) in r.json()["error"]
            assert len(c.get("/submissions", headers=auth["beta"]).json()["submissions"]) == 1

            # the hostile team: each file flips one text's score of gamma's first file
            base = predictions(ids, labels, skill=0.5, seed=2)
            seen = [c.get("/board").json()]
            files = [flip(base, k) for k in range(8)] + [predictions(ids, labels, skill=1.2, seed=9)] + \
                    [flip(predictions(ids, labels, skill=1.2, seed=9), k) for k in range(3)]
            for data in files:
                r = c.post("/submissions", headers=auth["gamma"], files={"predictions": ("p.json", data)})
                assert r.status_code == 201, r.text
                assert set(r.json()) == set(got["gamma"])  # a receipt, no score
                seen.append(c.get("/board").json())
            for before, after in zip(seen, seen[1:], strict=False):
                assert after["revealed"] is False and after["results"] is None
                b = {s["team"]: s for s in before["scores"]}
                a = {s["team"]: s for s in after["scores"]}
                assert a["alpha"] == b["alpha"] and a["beta"] == b["beta"]  # others untouched
                assert a["gamma"]["submissions"] == b["gamma"]["submissions"] + 1
                assert {k: v for k, v in a["gamma"].items() if k not in ("released", "submissions")} == \
                    {k: v for k, v in b["gamma"].items() if k not in ("released", "submissions")}
            released = [s["released"] for s in (next(x for x in v["scores"] if x["team"] == "gamma") for v in seen)]
        finally:
            c.close()
            srv.stop()
        out = board.reveal()
        srv = ServerThread(create_app(board)).start()
        try:
            c = httpx.Client(base_url=srv.url, timeout=60)
            pub = c.get("/board").json()
            assert pub["revealed"] is True and [e["team"] for e in pub["results"]["entries"]] == ["alpha", "beta",
                                                                                                   "gamma"]
            gamma = c.get("/submissions", headers=auth["gamma"]).json()["submissions"]
            page = c.get("/", headers={"accept": "text/html"}).text
            for e in pub["results"]["entries"]:  # the page shows each entry's headline and bundle
                assert f"{e['headline']:.4f}" in page and e["bundle_root_sha256"] in page
        finally:
            c.close()
            srv.stop()
    # the responses moved exactly as the Ladder allows, given the unrounded scores shown now
    headlines = [g["headline"] for g in gamma]
    assert len(headlines) == 1 + len(files) and all(h is not None for h in headlines)
    assert released == ladder(headlines) or released == pytest.approx(ladder(headlines), abs=1e-12)
    assert released[-1] > released[0]  # a better model did beat the margin
    assert [g["released"] for g in gamma] == released
    # the unrounded scores themselves: AUROC over the hidden set's texts (the canaries are not
    # scored), against scikit-learn
    revealed = [json.loads(x) for x in (out / "hidden_set.jsonl").read_text().splitlines()]
    plain = [r["doc_id"] for r in revealed if r["canary_of"] is None]
    assert len(plain) == 240 and {r["doc_id"]: r["label"] for r in revealed} == labels
    for g, data in zip(gamma, [base, *files], strict=True):
        sc = {r["id"]: r["score"] for r in json.loads(data)}
        want = roc_auc_score([labels[i] == "ai" for i in plain], [sc[i] for i in plain])
        assert g["headline"] == pytest.approx(want, abs=1e-12)
    assert check_reveal_dir(out) == []
    # ladder.json and results.json byte for byte what the reveal re-derives (the grid, canaries,
    # reasons and rules included), on this database too
    assert rederive_reveal(out) == []
    for b in sorted((out / "bundles").iterdir()):
        v = verify_bundle(b)
        assert v.ok, (b, v)


def _entry_row(page: str, team: str) -> list[str]:
    """The cells of ``team``'s row in the revealed results table, as text."""
    table = page.split('id="results"', 1)[1].split("</table>", 1)[0]
    row = next(r for r in table.split("<tr>")[1:] if f'data-label="Team">{team}<' in r)
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)]


def test_the_revealed_page_says_which_submission_an_entry_is_and_what_released_means(tmp_path):
    """An entry whose last submission scored below its best shows an unrounded headline far
    from the released value: the page says the entry is submission n, the team's last scored,
    and that released is the best value the Ladder released over all its submissions (checked
    against scikit-learn's AUROC and the Ladder as a plain loop)."""
    cfg = board_toml(tmp_path / "board", f"sqlite:///{tmp_path / 'b.sqlite'}", canaries=0, min_cell_size=10)
    with Board.open(cfg) as board:
        board.launch(hidden_set(tmp_path / "h.jsonl", n=60), "documents")
        team = board.team_for_token(board.add_team("alpha"))
        ids = [json.loads(x)["id"] for x in board.texts_file().decode().splitlines()]
        labels = labels_of(cfg.parent, ids)
        files = [predictions(ids, labels, skill=0.9, seed=1), predictions(ids, labels, skill=-0.6, seed=2)]
        for data in files:
            board.submit(team, data, METADATA)
        board.reveal(force=True)
        srv = ServerThread(create_app(board)).start()
        try:
            page = httpx.get(f"{srv.url}/", headers={"accept": "text/html"}, timeout=60).text
        finally:
            srv.stop()
    headlines = [roc_auc_score([labels[i] == "ai" for i in ids], [s["score"] for s in json.loads(d)]) for d in files]
    assert headlines[1] < 0.5 < headlines[0]
    note = " ".join(page.split('id="entry-note">', 1)[1].split("</p>", 1)[0].split())
    assert "last scored submission" in note and "best value the Ladder released over all the team's submissions" in note
    assert _entry_row(page, "alpha")[:4] == ["alpha", "2 (the last scored)", f"{headlines[1]:.4f}",
                                            f"{ladder(headlines)[-1]:.4f}"]
