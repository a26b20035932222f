"""The organiser's commands: `leaderboard launch`, `add-team` (the token printed once, last),
`serve` (a real process on 127.0.0.1, X-Forwarded-For read only from a named proxy) and
`reveal`; bad input is one line, exit 1, with nothing created."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
from typer.testing import CliRunner

from tests.leaderboard.board_helpers import board_revealing_tomorrow, board_toml, hidden_set, labels_of, predictions
from tests.rubric.rubric_helpers import free_port
from veribench.cli.leaderboard import FORMATS
from veribench.cli.main import app
from veribench.leaderboard.service import Board, SubmissionFormat

REPO = Path(__file__).resolve().parents[2]


def run(args: list[str]):
    return CliRunner().invoke(app, args, env={"COLUMNS": "200"})


def test_the_client_takes_the_boards_formats():
    from typing import get_args

    assert FORMATS == get_args(SubmissionFormat)


def test_launch_add_team_serve_reveal(tmp_path):
    folder = tmp_path / "board"
    cfg = board_toml(folder, f"sqlite:///{folder / 'board.sqlite'}", canaries=0)
    r = run(["leaderboard", "launch", "--config", str(cfg), "--hidden-set", str(tmp_path / "missing.jsonl")])
    assert r.exit_code == 1 and "no such file" in r.output and not (folder / "commitment.json").exists()
    r = run(["leaderboard", "launch", "--config", str(cfg), "--hidden-set", str(hidden_set(tmp_path / "h.jsonl"))])
    assert r.exit_code == 0, r.output
    record = json.loads((folder / "commitment.json").read_text())
    assert f"{record['n']} texts committed, root {record['root']}" in r.output
    r = run(["leaderboard", "launch", "--config", str(cfg), "--hidden-set", str(tmp_path / "h.jsonl")])
    assert r.exit_code == 1 and "already launched" in r.output and len(r.output.strip().splitlines()) == 1
    r = run(["leaderboard", "add-team", "alpha", "--config", str(cfg)])
    assert r.exit_code == 0, r.output
    token = r.output.strip().splitlines()[-1]
    r = run(["leaderboard", "add-team", "../etc", "--config", str(cfg)])
    assert r.exit_code == 1 and "team" in r.output and len(r.output.strip().splitlines()) == 1
    port = free_port()
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"}
    proc = subprocess.Popen([sys.executable, "-m", "veribench.cli.main", "leaderboard", "serve", "--config", str(cfg),
                             "--port", str(port)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        t0 = time.time()
        while True:
            try:
                httpx.get(f"{url}/board", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.time() - t0 < 60, proc.stdout.read() if proc.poll() else "timeout"
                time.sleep(0.2)
        auth = {"authorization": f"Bearer {token}"}
        ids = [json.loads(x)["id"] for x in httpx.get(f"{url}/texts", headers=auth).text.splitlines()]
        data = predictions(ids, labels_of(folder, ids), skill=0.6, seed=1)
        r2 = httpx.post(f"{url}/submissions", headers=auth, files={"predictions": ("p.json", data)}, timeout=120)
        assert r2.status_code == 201, r2.text
        # no proxy named: a forged X-Forwarded-For is not read (the failed sign-ins still count for 127.0.0.1)
        for _ in range(20):
            httpx.get(f"{url}/submissions", headers={"authorization": "Bearer x", "x-forwarded-for": "10.9.9.9"})
        assert httpx.get(f"{url}/submissions", headers={**auth, "x-forwarded-for": "10.1.1.1"}).status_code == 429
        assert httpx.get(f"{url}/board").json()["scores"][0]["team"] == "alpha"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    r = run(["leaderboard", "reveal", "--config", str(cfg)])
    assert r.exit_code == 0, r.output
    assert (folder / "reveal" / "results.json").is_file() and f"veribench verify {folder / 'reveal'}" in r.output
    with Board.open(cfg) as board:
        assert [e["team"] for e in board.results()["entries"]] == ["alpha"]


def test_reveal_force_before_reveal_at_prints_each_warning_as_one_line(tmp_path):
    """`reveal` before ``reveal_at`` names the way out (`--force`, in --help); the reveal's
    warnings (an entry's undefined canary test: 15 human texts give no 5%-FPR threshold) are
    one line ``warning: <message>`` each on standard error, never Python's warning with its
    source line."""
    cfg, soon = board_revealing_tomorrow(tmp_path, canaries=4)
    with Board.open(cfg) as board:
        board.launch(hidden_set(tmp_path / "h.jsonl", n=30), "documents")
        team = board.team_for_token(board.add_team("alpha"))
        ids = [json.loads(x)["id"] for x in board.texts_file().decode().splitlines()]
        board.submit(team, predictions(ids, labels_of(cfg.parent, ids), skill=0.6, seed=1), None, "raid")
    r = run(["leaderboard", "reveal", "--help"])
    assert r.exit_code == 0 and "--force" in r.output and "reveal_at" in r.output
    r = run(["leaderboard", "reveal", "--config", str(cfg)])
    assert r.exit_code == 1 and f"reveals at {soon}" in r.output and not (cfg.parent / "reveal").exists()
    r = run(["leaderboard", "reveal", "--config", str(cfg), "--force"])
    assert r.exit_code == 0, r.output
    assert (cfg.parent / "reveal" / "results.json").is_file()
    with Board.open(cfg) as board:
        reason = board.team_submissions(team)[0]["canary"]["reason"]
    assert reason == "the entry's 5%-FPR threshold is undefined"
    lines = r.stderr.splitlines()
    assert [x for x in lines if "canary" in x] == [f"warning: entry alpha: canary leak test undefined: {reason}"]
    assert lines and all(x.startswith("warning: ") for x in lines), lines
    assert "Warning" not in r.output and "board.py" not in r.output
