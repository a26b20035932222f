"""``veribench leaderboard check-reveal``: a reveal checked against the launch record its
submitters saved (issue 26). Each of a hostile organiser's tamperings fails it with one line
per problem and exit 1; the honest reveal passes."""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.leaderboard.board_helpers import board_toml, hidden_set, labels_of, predictions
from veribench.cli.main import app
from veribench.errors import InputError
from veribench.hashing import sha256_bytes
from veribench.leaderboard import setcommit
from veribench.leaderboard.service import (
    Board,
    BoardError,
    _rule_limits,
    check_reveal_against_launch,
    check_reveal_dir,
)

PUBLIC_RAID = Path(__file__).parents[1] / "data" / "public" / "raid" / "train.csv"


@pytest.fixture(scope="module")
def revealed(tmp_path_factory) -> tuple[Path, dict]:
    """A revealed board (SQLite, no canaries, two teams, three scored submissions): (reveal
    folder, the launch record as GET /commitment gave it at the launch)."""
    tmp = tmp_path_factory.mktemp("reveal")
    cfg = board_toml(tmp / "board", f"sqlite:///{tmp / 'board' / 'board.sqlite'}", canaries=0)
    with Board.open(cfg) as board:
        launch = board.launch(hidden_set(tmp / "hidden.jsonl", n=120), "documents")
        ids = [json.loads(x)["id"] for x in board.texts_file().decode().splitlines()]
        labels = labels_of(cfg.parent, ids)
        for i, (team, skill) in enumerate([("alpha", 0.5), ("beta", 0.2), ("alpha", 0.8)]):
            tok = board.add_team(team) if team not in {t.name for t in board.teams()} else None
            who = board.team_for_token(tok) if tok else next(t for t in board.teams() if t.name == team)
            receipt = board.submit(who, predictions(ids, labels, skill=skill, seed=i))
            (tmp / f"receipt-{team}-{i}.json").write_text(json.dumps(receipt))
        pem = board.public_key_pem
        out = board.reveal(force=True)
    (tmp / "receipt.json").write_text(json.dumps(receipt))
    (tmp / "board.pem").write_text(pem)
    return out, json.loads(json.dumps(launch))


def _copy(out: Path, tmp: Path) -> Path:
    dst = tmp / "reveal"
    shutil.copytree(out, dst)
    return dst


def _edit_rows(f: Path, change: Callable[[list[dict]], list[dict]]) -> None:
    rows = [json.loads(x) for x in (f / "hidden_set.jsonl").read_text().splitlines()]
    (f / "hidden_set.jsonl").write_text("".join(json.dumps(r) + "\n" for r in change(rows)))


def _flip(rows):
    rows[0]["label"] = "ai" if rows[0]["label"] == "human" else "human"
    return rows


def _text(rows):
    rows[3]["text"] += " edited"
    return rows


def _tags(rows):
    rows[5]["tags"] = {**rows[5]["tags"], "domain": "other"}
    return rows


def _new_salt(f: Path) -> None:
    """A new salt and a commitment.json regenerated over the same rows: check_reveal_dir is
    satisfied, the launch record is not."""
    rows = [json.loads(x) for x in (f / "hidden_set.jsonl").read_text().splitlines()]
    rec = json.loads((f / "commitment.json").read_text())
    salt = setcommit.new_salt()
    hr = [setcommit.HiddenRow(doc_id=r["doc_id"], text=r["text"], label=r["label"], arm=r.get("arm"),
                              tags=r.get("tags") or {}) for r in rows]
    new = setcommit.commitment_record(hr, salt, protocol_sha256=rec["protocol_sha256"], board=rec["board"],
                                      created_at=rec["created_at"])
    (f / "commitment.json").write_text(json.dumps(new, indent=1) + "\n")
    (f / "salt.txt").write_text(salt.hex() + "\n")


def _headline(f: Path) -> None:
    lad = json.loads((f / "ladder.json").read_text())
    lad["submissions"][0]["headline"] += 0.002  # the released value (rounded to eta) need not move
    (f / "ladder.json").write_text(json.dumps(lad, indent=1))


def _results(change: Callable[[dict, dict], None]) -> Callable[[Path], None]:
    """A tampering of results.json: ``change(results, entries by team)``."""
    def tamper(f: Path) -> None:
        res = json.loads((f / "results.json").read_text())
        change(res, {e["team"]: e for e in res["entries"]})
        (f / "results.json").write_text(json.dumps(res, indent=1))
    return tamper


def _ladder(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def tamper(f: Path) -> None:
        lad = json.loads((f / "ladder.json").read_text())
        change(lad)
        (f / "ladder.json").write_text(json.dumps(lad, indent=1))
    return tamper


def _released(res, e):
    e["beta"]["released"], e["beta"]["headline"] = 0.99, 0.9999


def _swap(res, e):
    for k in ("predictions_sha256", "submission_id"):
        e["beta"][k] = e["alpha"][k]


def _signif(res, e):
    res["significance"] = [{"cells": [["=", ">"], ["<", "="]]}]


def _table1_alike(f: Path) -> None:
    res = json.loads((f / "results.json").read_text())
    res["entries"][0]["table1"]["auroc"] = 0.999
    (f / "results.json").write_text(json.dumps(res, indent=1))
    b = f / "bundles" / "alpha" / "results.json"
    bres = json.loads(b.read_text())
    next(r for r in bres["table1"] if r["detector"] == "alpha")["auroc"] = 0.999
    b.write_text(json.dumps(bres))
    assert check_reveal_dir(f) == []  # the cheap check holds: results.json repeats the bundle


def _bundle_score(f: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    p = f / "bundles" / "alpha" / "scores.parquet"
    t = pq.read_table(p)
    raw = t.column("raw").to_pylist()
    raw[0] = raw[0] + 0.25
    pq.write_table(t.set_column(t.schema.get_field_index("raw"), "raw", pa.array(raw, pa.float64())), p)


def _canary_of(rows):
    rows[0]["canary_of"] = rows[1]["doc_id"]
    return rows


def _blank_line(f: Path) -> None:
    (f / "hidden_set.jsonl").write_text((f / "hidden_set.jsonl").read_text() + "\n")


TAMPERINGS: dict[str, tuple[Callable[[Path], None], str]] = {
    "flipped label": (lambda f: _edit_rows(f, _flip), "root"),
    "edited text": (lambda f: _edit_rows(f, _text), "root"),
    "dropped row": (lambda f: _edit_rows(f, lambda rows: rows[1:]), ""),
    "changed tags": (lambda f: _edit_rows(f, _tags), ""),
    "replaced salt, regenerated commitment.json": (_new_salt, "commitment.json is not the launch record"),
    "changed ladder headline": (_headline, "ladder.json is not the file re-derived from the reveal: "
                                           "submissions[0].headline: published"),
    # issue 26, second hostile tester (F1): results.json numbers no bundle re-derives
    "entry released/headline": (_results(_released), "entry beta's released differs from ladder.json"),
    "entry submission swapped": (_results(_swap), "entry beta's predictions_sha256 differs from ladder.json"),
    "canary block": (_results(lambda res, e: e["beta"]["canary"].update(flagged=True, p_value=1e-9, reason=None)),
                     "results.json is not the file re-derived from the reveal: entries[1].canary.flagged"),
    "significance": (_results(_signif), "significance differ from the bundle of all entries"),
    "gaps": (_results(lambda res, e: res.update(gaps=["x"])), "gaps differ from the bundle of all entries"),
    "corrections": (_results(lambda res, e: res.update(corrections=["x"])), "corrections differ"),
    "entry dropped": (_results(lambda res, e: res.update(entries=[e["alpha"]])), "team beta of ladder.json has no"),
    # F2: a real text marked a canary after the launch (dropped from every headline)
    "real text marked a canary": (lambda f: _edit_rows(f, _canary_of), "canary marking or stored field"),
    # third round: results.json and ladder.json byte for byte a re-derivation from the reveal and
    # the rules committed at launch (a grid cell, the minimum cell size, the threshold rule, a
    # reason, the layout; a bundle evaluated under another protocol)
    "grid cell": (_results(lambda res, e: e["alpha"]["grid"][-1].update(auroc=0.5)),
                  "entries[0].grid[3].auroc: published 0.5, re-derived 0."),
    "grid cell unsuppressed": (_results(lambda res, e: e["alpha"]["grid"][0].update(auroc=0.99)),
                               "entries[0].grid[0].auroc: published 0.99, re-derived null"),
    "min cell size": (_results(lambda res, e: res.update(min_cell_size=10)),
                      "min_cell_size: published 10, re-derived 45"),
    "threshold rule": (_results(lambda res, e: res.update(thresholds="declared calibration split")),
                       "thresholds: published \"declared calibration split\", re-derived \"RAID's in-sample"),
    "decision rule": (_results(lambda res, e: e["beta"].update(decision_rule={"rule": "raw > 0.5", "reason": None})),
                      "entries[1].decision_rule.rule"),
    "headline reason": (_ladder(lambda lad: lad["submissions"][0].update(headline_reason="too few texts")),
                        "submissions[0].headline_reason: published \"too few texts\", re-derived null"),
    "results.json relaid out": (lambda f: (f / "results.json").write_text(json.dumps(
        json.loads((f / "results.json").read_text()), indent=2)), "the same values, other bytes"),
    "bundle protocol": (lambda f: (f / "protocols" / "alpha.toml").write_text(
        (f / "protocols" / "alpha.toml").read_text().replace('"holm"', '"none"')),
        "protocols/alpha.toml: not the committed protocol.toml"),
    # a bundle whose numbers are not those of the submitted file, with results.json repeating it
    # (a self-consistent bundle evaluated on other scores): results.json is re-derived from the file
    "bundle and results.json Table 1 alike": (_table1_alike, "entries[0].table1.auroc: published 0.999, re-derived 0."),
    "extra bundle": (lambda f: shutil.copytree(f / "bundles" / "alpha", f / "bundles" / "zeta"),
                     "bundles/: zeta is no entry of ladder.json"),
    # third hostile tester (F1): a row's identity is well formed and in the order received
    "received_at not a time": (_ladder(lambda lad: lad["submissions"][0].update(received_at="never")),
                               "submissions[0].received_at must be an ISO 8601 UTC time"),
    "format unknown": (_ladder(lambda lad: lad["submissions"][0].update(format="evil")),
                       "submissions[0].format must be one of raid, veribench"),
    "rows renumbered": (_ladder(lambda lad: lad["submissions"][0].update(n=9)), "in the order received"),
    # F2: a bundle's per-text scores are the submitted file's
    "bundle score": (_bundle_score, "scores.parquet: alpha.2's score of"),
    # a field of a revealed row that no check reads (published, neither committed nor read)
    "unread row field": (lambda f: _edit_rows(f, lambda rows: [dict(rows[0], note="x"), *rows[1:]]),
                         "hidden_set.jsonl, row 1: field 'note' is no field of a revealed row"),
    # hostile ladder.json: one line naming the field, never an internal error or a path
    "eta 0": (_ladder(lambda lad: lad.update(eta=0)), "ladder.json: field eta must be a finite number > 0"),
    "headline 1e308": (_ladder(lambda lad: lad["submissions"][0].update(headline=1e308)),
                       "submissions[0].headline must be null or a number in [0, 1]"),
    "sha256 a path": (_ladder(lambda lad: lad["submissions"][0].update(predictions_sha256="../../../etc/passwd")),
                      "submissions[0].predictions_sha256 is not 64 hex digits"),
}


def _cli(args: list[str]):
    return CliRunner().invoke(app, ["leaderboard", "check-reveal", *args], env={"COLUMNS": "300"})


def test_the_honest_reveal_passes(revealed, tmp_path):
    out, launch = revealed
    assert check_reveal_against_launch(out, launch) == []
    saved = tmp_path / "launch.json"
    saved.write_text(json.dumps(launch))
    r = _cli([str(out), "--commitment", str(saved)])
    assert r.exit_code == 0 and "\nreveal OK" in r.output, r.output
    # without receipts, which submissions each team's rows are rests on the organiser: said so
    assert r.output.startswith("note: no receipt given for alpha, beta: "), r.output


@pytest.mark.parametrize("what", list(TAMPERINGS))
def test_each_tampering_fails_check_reveal(revealed, tmp_path, what):
    out, launch = revealed
    f = _copy(out, tmp_path)
    tamper, words = TAMPERINGS[what]
    tamper(f)
    problems = check_reveal_against_launch(f, launch)
    assert problems and any(words in p for p in problems), (what, problems)
    assert all("\n" not in p for p in problems)
    saved = tmp_path / "launch.json"
    saved.write_text(json.dumps(launch))
    r = _cli([str(f), "--commitment", str(saved)])
    assert r.exit_code == 1 and len(r.output.strip().splitlines()) == len(problems), r.output


def test_a_blank_line_in_hidden_set_is_skipped(revealed, tmp_path):
    """check_reveal_dir drops empty lines of hidden_set.jsonl, as rederive_ladder does."""
    out, launch = revealed
    f = _copy(out, tmp_path)
    _blank_line(f)
    assert check_reveal_against_launch(f, launch) == []


def test_a_launch_token_missing_from_the_reveal_fails(revealed, tmp_path):
    """The launch record carried an RFC 3161 token: a reveal without commitment.tsr (deleted),
    or with another token, fails; "when present" is not enough."""
    out, launch = revealed
    f = _copy(out, tmp_path)
    token = b"launch token bytes"
    with_token = {"commitment": launch, "tsa_token_b64": base64.b64encode(token).decode()}
    assert "commitment.tsr is missing: the launch record carries an RFC 3161 token" in \
        check_reveal_against_launch(f, with_token)
    (f / "commitment.tsr").write_bytes(b"another token")
    assert "commitment.tsr is not the launch record's RFC 3161 token" in check_reveal_against_launch(f, with_token)


def test_a_changed_submission_file_and_bad_launch_records(revealed, tmp_path):
    out, launch = revealed
    f = _copy(out, tmp_path)
    bad = tmp_path / "launch.json"
    bad.write_text("[1, 2]")
    r = _cli([str(f), "--commitment", str(bad)])
    assert r.exit_code == 1 and "not a launch record" in r.output and len(r.output.strip().splitlines()) == 1
    r = _cli([str(f)])
    assert r.exit_code == 1 and "--commitment/--url" in r.output
    # the published file of a submission replaced: its SHA-256 and its headline fail
    lad = json.loads((f / "ladder.json").read_text())
    sha = lad["submissions"][0]["predictions_sha256"]
    rows = json.loads((f / "submissions" / sha).read_bytes())
    for r_ in rows:
        r_["score"] = 0.5
    (f / "submissions" / sha).write_bytes(json.dumps(rows).encode())
    problems = check_reveal_against_launch(f, launch)
    assert any("has another SHA-256" in p for p in problems)
    assert sha256_bytes((f / "submissions" / sha).read_bytes()) != sha


def test_check_receipt_checks_the_launch_record(revealed, tmp_path):
    """check-receipt --commitment: the receipt's commitment_sha256 must be the canonical
    JSON SHA-256 of the saved launch record (either shape); another record fails in one line."""
    out, launch = revealed
    folder = out.parent.parent
    saved, other = tmp_path / "launch.json", tmp_path / "other.json"
    saved.write_text(json.dumps({"commitment": launch, "tsa_token_b64": None}, indent=3))
    other.write_text(json.dumps({**launch, "root": "0" * 64}))
    args = ["leaderboard", "check-receipt", str(folder / "receipt.json"), "--public-key", str(folder / "board.pem")]
    r = CliRunner().invoke(app, [*args, "--commitment", str(saved)], env={"COLUMNS": "300"})
    assert r.exit_code == 0 and "signs the launch record given" in r.output, r.output
    r = CliRunner().invoke(app, [*args, "--commitment", str(other)], env={"COLUMNS": "300"})
    assert r.exit_code == 1 and "commitment_sha256" in r.output and len(r.output.strip().splitlines()) == 1, r.output


def test_a_revealed_board_refuses_before_parsing(revealed):
    """Issue 26 (F3): the board's state and limit are checked before the upload is parsed: a
    revealed board answers 'submissions are closed' even to a file that is not predictions."""
    out, _ = revealed
    with Board.open(out.parent / "board.toml") as board:
        team = board.teams()[0]
        for fmt in ("raid", "veribench"):
            with pytest.raises(BoardError, match="submissions are closed"):
                board.submit(team, b"PAR1 not a file", fmt=fmt)


def test_a_team_dropped_everywhere_is_caught_by_its_saved_receipt(revealed, tmp_path):
    """Issue 26 (F1): alpha removed from results.json and ladder.json together (consistent,
    so no other check sees it); `check-reveal --receipts DIR` with alpha's saved receipt fails."""
    out, launch = revealed
    saved = tmp_path / "launch.json"
    saved.write_text(json.dumps(launch))
    rdir = tmp_path / "receipts"
    rdir.mkdir()
    shutil.copy(out.parent.parent / "receipt.json", rdir / "alpha.json")  # alpha's last receipt only
    r = _cli([str(out), "--commitment", str(saved), "--receipts", str(rdir)])
    assert r.exit_code == 1 and "team 'alpha''s submission 1" in r.output and "has no receipt among those " \
        "given" in r.output, r.output  # a team's receipts are all of them: a row without one is flagged
    for p in out.parent.parent.glob("receipt-*.json"):  # every receipt of both teams
        shutil.copy(p, rdir / p.name)
    r = _cli([str(out), "--commitment", str(saved), "--receipts", str(rdir)])
    assert r.exit_code == 0 and "reveal OK" in r.output, r.output
    f = _copy(out, tmp_path)
    res = json.loads((f / "results.json").read_text())
    res["entries"] = [e for e in res["entries"] if e["team"] != "alpha"]
    (f / "results.json").write_text(json.dumps(res))
    lad = json.loads((f / "ladder.json").read_text())
    lad["submissions"] = [h for h in lad["submissions"] if h["team"] != "alpha"]
    (f / "ladder.json").write_text(json.dumps(lad))
    r = _cli([str(f), "--commitment", str(saved), "--receipts", str(rdir)])
    lines = r.output.strip().splitlines()
    assert r.exit_code == 1, r.output
    assert any("of team 'alpha' is not in ladder.json" in x for x in lines), r.output
    assert any("team 'alpha' has no entry in results.json" in x for x in lines), r.output
    (rdir / "bad.json").write_text("{")
    r = _cli([str(out), "--commitment", str(saved), "--receipts", str(rdir)])
    assert r.exit_code == 1 and "--receipts" in r.output and len(r.output.strip().splitlines()) == 1, r.output


def test_a_launch_record_without_rules_is_reported(revealed, tmp_path):
    """A launch record that commits no scoring rules (format /2, or stripped and re-saved by a
    hostile organiser with the launch record submitters hold stripped alike): check-reveal says
    the rules were not committed, and still re-derives everything else from results.json's own
    values."""
    out, launch = revealed
    f = _copy(out, tmp_path)
    rec = json.loads((f / "commitment.json").read_text())
    assert rec["format"] == setcommit.COMMITMENT_FORMAT == "veribench-board-commitment/3"
    assert rec["rules"]["min_cell_size"] == 45 and rec["rules"]["grid"] == ["domain"]
    rec.pop("rules")
    rec["format"] = setcommit.COMMITMENT_FORMAT_V2
    (f / "commitment.json").write_text(json.dumps(rec, indent=1) + "\n")
    stripped = dict(launch)
    stripped.pop("rules")
    stripped["format"] = setcommit.COMMITMENT_FORMAT_V2
    problems = check_reveal_against_launch(f, stripped)
    assert [p for p in problems if "rules" in p] == [
        "commitment.json: the launch record commits no scoring rules (field rules): min_cell_size, the grid and "
        "the thresholds of results.json cannot be checked against the launch"]
    # results.json's commitment block is the launch record: it differs now, and is named
    assert any("results.json is not the file re-derived" in p and "commitment." in p for p in problems), problems


def test_a_launched_board_refuses_edited_scoring_rules(tmp_path):
    """board.toml edited after the launch (a lower minimum cell size, another eta): the board
    refuses to open with one line naming the file and field, so no team is scored under rules
    other than those committed; restoring the value opens it again."""
    cfg = board_toml(tmp_path / "board", f"sqlite:///{tmp_path / 'board' / 'board.sqlite'}", canaries=0)
    with Board.open(cfg) as board:
        board.launch(hidden_set(tmp_path / "hidden.jsonl", n=60), "documents")
    original = cfg.read_text()
    for key, value, shown in (("min_cell_size", "5", "45"), ("ladder_eta", "0.05", "0.01"),
                              ("grid", "[]", "['domain']"), ("submission_limit", "40", "5"),
                              ("canaries", "3", "0"), ("reveal_at", "2001-01-01T00:00:00Z", "None"),
                              ("calibration", '{ rule = "hash", every = 5, salt = "s" }', "RAID's in-sample"),
                              ("name", '"renamed"', "'detect-test'")):
        lines = original.splitlines()
        if not any(line.startswith(f"{key} =") for line in lines):
            lines.append(f"{key} = {value}")
        cfg.write_text("\n".join(f"{key} = {value}" if line.startswith(f"{key} =") else line
                                 for line in lines) + "\n")
        with pytest.raises(InputError) as e:
            Board.open(cfg)
        msg = str(e.value)
        assert "\n" not in msg and f"board.{key}" in msg and str(cfg) in msg and shown in msg, msg
        r = CliRunner().invoke(app, ["leaderboard", "serve", "--config", str(cfg), "--port", "1"])
        assert r.exit_code != 0 and "Traceback" not in r.output and f"board.{key}" in r.output, r.output
    cfg.write_text(original)
    with Board.open(cfg) as board:
        assert board.commitment()["rules"]["ladder_eta"] == 0.01


@pytest.mark.parametrize("extra, words", [
    (lambda f: (f / "README.md").write_text("Team beta won."), "README.md: not a file of a reveal"),
    (lambda f: (f / "submissions" / ("0" * 64)).write_bytes(b"[]"), f"submissions/{'0' * 64}: not a file of this"),
    (lambda f: (f / "protocols" / "zeta.toml").write_text(""), "protocols/zeta.toml: not a file of this reveal"),
    (lambda f: (f / "ladder.json.bak").symlink_to(f / "ladder.json"), "ladder.json.bak: a symbolic link"),
    (lambda f: (f / "bundles" / "alpha" / "notes.md").symlink_to("/etc/hostname"),
     "bundles/alpha/notes.md: a symbolic link"),
])
def test_a_file_no_check_reads_fails_check_reveal(revealed, tmp_path, extra, words):
    """Verification accepts no file it did not recognise: anything in the reveal folder that
    no check reads (a README with a claim, a stray submission file, a protocol of no entry, a
    symbolic link anywhere) is a problem."""
    out, launch = revealed
    f = _copy(out, tmp_path)
    assert check_reveal_dir(f) == []
    extra(f)
    problems = check_reveal_against_launch(f, launch)
    assert any(words in p for p in problems), problems


def test_an_honest_raid_board_with_a_calibration_split_passes_check_reveal(tmp_path):
    """A fresh organiser's finding: on the documented RAID path (`import raid`, `export
    documents`, `launch`) an honest board failed check-reveal, because the revealed set dropped
    the stored fields the evaluation reads (group_key decides the calibration split, subgroup a
    slice, provenance a derived text's source). They are committed (format /3, `record`) and
    revealed; the re-derivation imports them, so an honest reveal passes and a changed group
    key fails."""
    ws = tmp_path / "raid-ws"
    for args in (["import", "raid", str(PUBLIC_RAID), "-w", str(ws)],
                 ["export", "documents", "-o", str(tmp_path / "hidden.jsonl"), "-w", str(ws)]):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 0, r.output
    cfg = board_toml(tmp_path / "board", f"sqlite:///{tmp_path / 'board' / 'board.sqlite'}", canaries=4,
                     min_cell_size=5, grid=["domain", "model"])
    cfg.write_text(cfg.read_text() + 'calibration = { rule = "hash", every = 5, salt = "s" }\n')
    with Board.open(cfg) as board:
        launch = board.launch(tmp_path / "hidden.jsonl", "documents")
        ids = [json.loads(x)["id"] for x in board.texts_file().decode().splitlines()]
        labels = labels_of(cfg.parent, ids)
        texts = {json.loads(x)["id"]: json.loads(x)["text"] for x in board.texts_file().decode().splitlines()}
        twins = [i for i in ids if sum(t == texts[i] for t in texts.values()) > 1]
        assert len(twins) >= 2  # RAID's file holds one text under two ids
        for i, team in enumerate(("alpha", "beta")):
            who = board.team_for_token(board.add_team(team))
            data = json.loads(predictions(ids, labels, skill=0.3 + 0.3 * i, seed=i))
            if i == 0:  # two scores for one text: one would silently stand for both; refused, nothing stored
                with pytest.raises(InputError, match="are the same text but scored") as e:
                    board.submit(who, json.dumps(data).encode())
                assert "\n" not in str(e.value) and "file predictions.json" in str(e.value)
            one = {}
            for r in data:  # a detector scores a text: one score per text
                r["score"] = one.setdefault(texts[r["id"]], r["score"])
            board.submit(who, json.dumps(data).encode())
        out = board.reveal(force=True)
    rows = [json.loads(x) for x in (out / "hidden_set.jsonl").read_text().splitlines()]
    assert sum(bool(r["record"]["group_key"]) for r in rows) > len(rows) // 2  # RAID's group keys are there
    assert any(r["record"]["provenance"].get("source_id") for r in rows)  # derived (attacked) texts
    # a derived text's source, when in the set, is named by its board id: attacked texts stay paired
    ids_revealed = {r["doc_id"] for r in rows}
    sources = [r["record"]["provenance"]["source_id"] for r in rows if r["record"]["provenance"].get("source_id")]
    assert any(src in ids_revealed for src in sources), sources[:3]
    assert check_reveal_against_launch(out, json.loads(json.dumps(launch))) == []
    f = _copy(out, tmp_path)
    _edit_rows(f, lambda rows: [dict(r, record={**r["record"], "group_key": "moved"}) if i == 0 else r
                                for i, r in enumerate(rows)])
    assert any("stored field (record) differs" in p for p in check_reveal_against_launch(f, launch))


def test_receipts_hold_each_ladder_row_to_what_they_signed(revealed, tmp_path):
    """Third hostile tester (F1): an organiser who renumbers or re-times a team's rows (making an
    earlier, better submission its entry), changes the value the board released, or adds a row
    the team never submitted, passes every other check; the team's receipts (all of them) fail
    it: a receipt signs the time, the number and the released value."""
    out, launch = revealed
    saved = tmp_path / "launch.json"
    saved.write_text(json.dumps(launch))
    rdir = tmp_path / "receipts"
    rdir.mkdir()
    for p in out.parent.parent.glob("receipt-*.json"):
        shutil.copy(p, rdir / p.name)
    rec = json.loads(next(out.parent.parent.glob("receipt-alpha-0.json")).read_text())
    assert rec["submission_n"] == 1 and "released" in rec
    for change, words in (
        (lambda h: h.update(received_at="2099-01-01T00:00:00Z"), "says received_at '2099-01-01T00:00:00Z'; the "
                                                                  "receipt signed"),
        (lambda h: h.update(released=0.99), "says released 0.99; the receipt signed"),
        (lambda h: h.update(submission_id="forged-row"), "team 'alpha''s submission 1 ('forged-row') has no receipt"),
    ):
        f = tmp_path / "r"
        shutil.rmtree(f, ignore_errors=True)
        shutil.copytree(out, f)
        lad = json.loads((f / "ladder.json").read_text())
        change(next(h for h in lad["submissions"] if h["submission_id"] == rec["submission_id"]))
        (f / "ladder.json").write_text(json.dumps(lad, indent=1))
        r = _cli([str(f), "--commitment", str(saved), "--receipts", str(rdir)])
        assert r.exit_code == 1 and words in r.output, (words, r.output)


def test_the_committed_limit_and_closing_time_hold_the_ladder():
    """Third hostile tester (F4): a submission limit raised after the launch let a team reach 15
    scored submissions; the limit and reveal_at are committed, and check-reveal holds
    ladder.json to them (here directly, on rows as the board writes them)."""
    rows = [{"team": "alpha", "n": k, "received_at": f"2026-12-05T10:0{k}:00Z"} for k in range(1, 5)]
    assert _rule_limits({"submission_limit": 4, "reveal_at": None}, rows) == []
    assert _rule_limits({"submission_limit": 3, "reveal_at": None}, rows) == [
        "ladder.json: team alpha has 4 scored submissions; the launch committed a limit of 3"]
    late = _rule_limits({"submission_limit": 9, "reveal_at": "2026-12-05T10:03:00Z"}, rows)
    assert [p.split(" was received")[0] for p in late] == ["ladder.json: alpha's submission 3",
                                                          "ladder.json: alpha's submission 4"]
    assert _rule_limits({}, rows) == []  # a record of format /3 made before the limit was committed


def test_the_calibration_split_stays_secret_until_the_reveal(tmp_path, monkeypatch):
    """Fourth hostile tester (C1): the split's salt was public (in the rules' threshold text)
    and board ids are public, so a team knew which texts calibrate and topped the board with
    random scores (calibration texts low, the rest high: TPR 1 at 100% real FPR). The split's
    salt is HMAC-SHA256 of the declared salt keyed by the secret set salt; protocol.toml (which
    holds it) is private until the reveal; nothing public before names it. Also (C2): a server
    whose local time zone is not UTC signs and publishes UTC times (SQLite gives them back
    without a zone)."""
    import hashlib
    import hmac
    import time
    from datetime import UTC, datetime

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        cfg = board_toml(tmp_path / "board", f"sqlite:///{tmp_path / 'board' / 'board.sqlite'}", canaries=0)
        cfg.write_text(cfg.read_text() + 'calibration = { rule = "hash", every = 5, salt = "detect-2027" }\n')
        with Board.open(cfg) as board:
            launch = board.launch(hidden_set(tmp_path / "hidden.jsonl", n=120), "documents")
            proto = (cfg.parent / "protocol.toml")
            assert proto.stat().st_mode & 0o077 == 0  # private until the reveal
            pub = json.dumps(launch) + json.dumps(board.public_scores())
            assert "salt" not in launch["rules"]["thresholds"].replace("salt stays", "")
            ids = [json.loads(x)["id"] for x in board.texts_file().decode().splitlines()]
            who = board.team_for_token(board.add_team("alpha"))
            receipt = board.submit(who, predictions(ids, labels_of(cfg.parent, ids), skill=0.5, seed=1))
            got = datetime.fromisoformat(receipt["received_at"].replace("Z", "+00:00"))
            assert abs((datetime.now(UTC) - got).total_seconds()) < 600, receipt["received_at"]  # UTC, not local
            out = board.reveal(force=True)
        salt = bytes.fromhex((out / "salt.txt").read_text().strip())
        want = hmac.new(salt, b"detect-2027", hashlib.sha256).hexdigest()[:32]
        assert f'salt = "{want}"' in (out / "protocol.toml").read_text()
        assert want not in pub  # the declared salt is public (rules), the split's own salt was not
        assert all(p.stat().st_mode & 0o044 == 0o044 for p in out.rglob("*") if p.is_file())  # published
        assert check_reveal_against_launch(out, json.loads(json.dumps(launch))) == []
        assert launch["rules"]["calibration"] == {"rule": "hash", "every": 5, "salt": "detect-2027"}
        # a split salt other than the HMAC (an organiser's own pick) fails, with the protocol's SHA-256 alike
        f = _copy(out, tmp_path)
        (f / "protocol.toml").write_text((f / "protocol.toml").read_text().replace(want, "0" * 32))
        assert any("calibration split is not the declared one" in p for p in check_reveal_against_launch(f, launch))
        # board.toml's declared salt cannot change after the launch
        cfg.write_text(cfg.read_text().replace('salt = "detect-2027"', 'salt = "other"'))
        with pytest.raises(InputError, match="board.calibration"):
            Board.open(cfg)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_declared_subgroup_gaps_are_computed_per_entry_and_rederived(tmp_path):
    """A fresh user's finding: the board's protocol never declared [[gaps]], so results.json's
    gaps were always empty although the issue asks for subgroup gaps. board.toml's `gaps` go
    into the committed protocol; every entry's FPR gap between two domains comes out with its
    interval (checked against a plain count from the revealed labels and files), check-reveal
    re-derives it, and gaps under RAID's in-sample rule or on a slice the board does not show
    are refused in one line."""
    cfg = board_toml(tmp_path / "board", f"sqlite:///{tmp_path / 'board' / 'board.sqlite'}", canaries=0,
                     min_cell_size=5)
    base = cfg.read_text()
    cfg.write_text(base + 'gaps = [{ slice = "tag:domain", group_a = "news", group_b = "books" }]\n')
    with pytest.raises(InputError, match=r"board.gaps\[0\].*in-sample") as e:
        Board.open(cfg)
    assert "\n" not in str(e.value)
    cfg.write_text(base + 'calibration = { rule = "hash", every = 3, salt = "s" }\n'
                   'gaps = [{ slice = "tag:model", group_a = "news", group_b = "books" }]\n')
    with pytest.raises(InputError, match=r"board.gaps\[0\].slice"):
        Board.open(cfg)
    cfg.write_text(base + 'calibration = { rule = "hash", every = 3, salt = "s" }\n'
                   'gaps = [{ slice = "tag:domain", group_a = "news", group_b = "books" }]\n')
    with Board.open(cfg) as board:
        launch = board.launch(hidden_set(tmp_path / "hidden.jsonl", n=240), "documents")
        ids = [json.loads(x)["id"] for x in board.texts_file().decode().splitlines()]
        labels = labels_of(cfg.parent, ids)
        for i, team in enumerate(("alpha", "beta")):
            board.submit(board.team_for_token(board.add_team(team)), predictions(ids, labels, skill=0.4, seed=i))
        out = board.reveal(force=True)
    assert launch["rules"]["gaps"] == [{"slice": "tag:domain", "group_a": "news", "group_b": "books",
                                        "metric": "fpr"}]
    res = json.loads((out / "results.json").read_text())
    gaps = [g for g in res["gaps"] if "suppressed_reason" not in g]
    assert {g["detector"] for g in gaps} == {"alpha", "beta"}, res["gaps"]
    # a plain count: FPR of each domain's test-split human texts at the entry's threshold
    rows = {json.loads(x)["doc_id"]: json.loads(x) for x in (out / "hidden_set.jsonl").read_text().splitlines()}
    import pyarrow.parquet as pq
    for g in gaps:
        t = pq.read_table(out / "bundles" / g["detector"] / "scores.parquet",
                          columns=["doc_id", "split", "flag"]).to_pylist()
        fpr = {}
        for dom in ("news", "books"):
            hs = [r for r in t if r["split"] == "test" and rows[r["doc_id"]]["label"] == "human"
                  and rows[r["doc_id"]]["tags"]["domain"] == dom]
            fpr[dom] = sum(bool(r["flag"]) for r in hs) / len(hs)
        assert g["estimate"] == pytest.approx(fpr["news"] - fpr["books"], abs=1e-12), (g, fpr)
    assert check_reveal_against_launch(out, json.loads(json.dumps(launch))) == []
