"""Deprecated spellings (docs/cli.md, "Renamed"): each old spelling still works for one
release and prints exactly one warning line on standard error that names the new form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer._click import Context
from typer.main import get_command
from typer.testing import CliRunner

from tests.conftest import DEMO_DATA, TEST_DATA
from veribench.cli.grammar import RENAMED_COMMANDS, RENAMED_OPTIONS, RENAMED_VALUES, find_command
from veribench.cli.main import app

TAKES_VALUE = {"--output", "-p", "--results-json"}


def _warnings(r) -> list[str]:
    return [line for line in r.stderr.splitlines() if line.startswith("warning:")]


def _assert_warned_once(r, old: str, new: str) -> None:
    w = _warnings(r)
    assert len(w) == 1, r.output
    assert f"`{old}` is deprecated" in w[0] and f"use `{new}`" in w[0], w[0]


def _command(path: str):
    root = get_command(app)
    return find_command(Context(root, info_name="veribench"), path.split())


ALIASES = [(cmd, old, new) for cmd, table in RENAMED_OPTIONS.items() for old, new in table.items()]


@pytest.mark.parametrize(("cmd", "old", "new"), ALIASES, ids=[f"{c} {o}" for c, o, _ in ALIASES])
def test_every_renamed_option_is_accepted_and_warns_once(cmd: str, old: str, new: tuple[str, ...]):
    args = [*cmd.split(), old, *(["x"] if old in TAKES_VALUE else []), "--help"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    _assert_warned_once(r, f"veribench {cmd} {old}", f"veribench {cmd} {' '.join(new)}")
    opts = {o for p in _command(cmd).params for o in getattr(p, "opts", [])}
    assert new[0] in opts and old not in opts, (cmd, new, old)  # the new spelling exists, the old one is gone


@pytest.mark.parametrize("cmd", sorted(RENAMED_VALUES))
def test_json_dash_becomes_format_json(cmd: str):
    r = CliRunner().invoke(app, [*cmd.split(), "--json", "-", "--help"])
    assert r.exit_code == 0, r.output
    _assert_warned_once(r, f"veribench {cmd} --json -", f"veribench {cmd} --format json")


def test_renamed_commands_resolve_and_warn_once():
    for old, new in RENAMED_COMMANDS.items():
        r = CliRunner().invoke(app, [*old.split(), "--help"])
        assert r.exit_code == 0, r.output
        _assert_warned_once(r, f"veribench {old}", f"veribench {new}")
        assert f"veribench {new}" in r.stdout  # the new command's own help


def test_score_output_writes_the_same_rows(tmp_path: Path):
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in
                           enumerate(["A short text about the weather today.", "Another text, about trains."])))
    runner = CliRunner()
    old = runner.invoke(app, ["score", "-d", "zippy", "-i", str(inp), "--output", str(tmp_path / "old.jsonl"),
                              "-w", str(tmp_path / "ws"), "--no-progress", "--output", str(tmp_path / "old.jsonl")])
    assert old.exit_code == 0, old.output
    _assert_warned_once(old, "veribench score --output", "veribench score --out")  # twice given, warned once
    new = runner.invoke(app, ["score", "-d", "zippy", "-i", str(inp), "-o", str(tmp_path / "new.jsonl"),
                              "-w", str(tmp_path / "ws"), "--no-progress"])
    assert new.exit_code == 0 and not _warnings(new), new.output
    rows = [[json.loads(line) for line in (tmp_path / f).read_text().splitlines()] for f in ("old.jsonl", "new.jsonl")]
    assert rows[0] == rows[1] and len(rows[0]) == 2


def test_json_switches_print_json(tmp_path: Path):
    runner = CliRunner()
    r = runner.invoke(app, ["list", "detectors", "--json"])
    assert r.exit_code == 0
    _assert_warned_once(r, "veribench list detectors --json", "veribench list detectors --format json")
    assert json.loads(r.stdout) == json.loads(runner.invoke(app, ["list", "detectors", "--format", "json"]).stdout)
    ws = tmp_path / "ws"
    assert runner.invoke(app, ["rate", "editors", "add", "alice", "-w", str(ws)]).exit_code == 0
    r = runner.invoke(app, ["rate", "results", "-w", str(ws), "--json"])
    assert r.exit_code == 0, r.output
    _assert_warned_once(r, "veribench rate results --json", "veribench rate results --format json")
    assert json.loads(r.stdout)["overall"]["outputs"] == 0
    r = runner.invoke(app, ["rate", "export", "-w", str(ws), "-o", str(tmp_path / "r.csv"), "--results-json",
                            str(tmp_path / "r.json")])
    assert r.exit_code == 0, r.output
    _assert_warned_once(r, "veribench rate export --results-json", "veribench rate export --json")
    assert json.loads((tmp_path / "r.json").read_text())["overall"]["outputs"] == 0
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Describe a place you know well.\n", encoding="utf-8")
    assert runner.invoke(app, ["write", "invite", "-w", str(ws), "--prompt-file", str(prompt)]).exit_code == 0
    r = runner.invoke(app, ["write", "status", "-w", str(ws), "--json"])
    assert r.exit_code == 0, r.output
    _assert_warned_once(r, "veribench write status --json", "veribench write status --format json")
    assert [x["state"] for x in json.loads(r.stdout)] == ["invited"]
    r = runner.invoke(app, ["write", "import", "-w", str(ws), "-q"])  # renamed: import arm-b
    assert r.exit_code == 0, r.output
    _assert_warned_once(r, "veribench write import", "veribench import arm-b")
    assert r.stdout.startswith("write: 0 documents, 0 withdrawn")
    r = runner.invoke(app, ["log", "verify", "-w", str(ws), "--json", "-"])
    assert r.exit_code == 0, r.output
    _assert_warned_once(r, "veribench log verify --json -", "veribench log verify --format json")
    assert json.loads(r.stdout)["ok"] is True


def test_verify_json_dash(tmp_path: Path):
    r = CliRunner().invoke(app, ["verify", str(TEST_DATA / "humanizerbench" / "June 2026"), "--json", "-"])
    assert r.exit_code == 0, r.output
    _assert_warned_once(r, "veribench verify --json -", "veribench verify --format json")
    assert json.loads(r.stdout)["ok"] is True


def test_attack_list_and_cycle_import(tmp_path: Path):
    runner = CliRunner()
    r = runner.invoke(app, ["attack", "--list"])
    assert r.exit_code == 0, r.output
    _assert_warned_once(r, "veribench attack --list", "veribench list attacks")
    assert r.stdout == runner.invoke(app, ["list", "attacks"]).stdout
    t = tmp_path / "t.json"
    t.write_text(json.dumps([{"slug": "plain", "category": "academic_essay", "prompt_text": "Write on habits."}]))
    b = tmp_path / "b.json"
    b.write_text("{}")
    env = {"VERIBENCH_SECRETS_DIR": str(tmp_path / "secrets")}
    d = tmp_path / "cycle"
    assert runner.invoke(app, ["cycle", "new", "Alias 2027", str(d), "--templates", str(t), "--banks", str(b)],
                         env=env).exit_code == 0
    s = tmp_path / "s.json"
    s.write_text(json.dumps([{"id": "s-1", "prompt_slug": "plain", "input_text": "Habits form by repetition.",
                              "source_model_slug": "m"}]))
    r = runner.invoke(app, ["cycle", "import", str(d), "--samples", str(s)], env=env)
    assert r.exit_code == 0, r.output
    _assert_warned_once(r, "veribench cycle import", "veribench cycle add")
    assert r.stdout.strip() == "1 samples imported"
    assert [x["id"] for x in json.loads((d / "samples.json").read_text())] == ["s-1"]


def test_report_workspace_argument(tmp_path: Path):
    runner = CliRunner()
    ws = tmp_path / "ws"
    assert runner.invoke(app, ["import", "liang2023", str(DEMO_DATA / "liang2023"), "-w", str(ws), "-q"]).exit_code == 0
    r = runner.invoke(app, ["evaluate", "-w", str(ws), "-q", "--no-score"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["report", str(ws), "-o", str(tmp_path / "old"), "--no-verify", "--no-progress"])
    assert r.exit_code == 0, r.output
    _assert_warned_once(r, "veribench report WS", "veribench report -w WS")
    r2 = runner.invoke(app, ["report", "-w", str(ws), "-o", str(tmp_path / "new"), "--no-verify", "--no-progress"])
    assert r2.exit_code == 0 and not _warnings(r2), r2.output
    assert sorted(p.name for p in (tmp_path / "old").rglob("*")) == sorted(p.name for p in (tmp_path / "new").rglob("*"))
