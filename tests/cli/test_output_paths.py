"""Every output option (``--out/-o``, ``--json``, ``--output``) is checked when the command
line is read (issue 25): a path under a file, or of the wrong kind, is one error line
naming the option and the path (exit 1), before any work, with no event logged."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest
import typer
from typer.testing import CliRunner

from veribench.cli.common import WRITE_OPTIONS
from veribench.cli.main import app

OUTPUT_OPTS = WRITE_OPTIONS


def _commands(cmd: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every leaf command under ``cmd`` (typer's own click), loading the lazy groups as
    ``veribench --help`` does."""
    if hasattr(cmd, "list_commands"):
        ctx = type(cmd).context_class(cmd, info_name=path[-1] if path else "veribench")
        subs = [(name, cmd.get_command(ctx, name)) for name in cmd.list_commands(ctx)]
        return [c for name, sub in subs if sub is not None for c in _commands(sub, (*path, name))]
    return [(path, cmd)]


def _output_options() -> list[tuple[str, str, bool]]:
    """(command words, the option's longest spelling, whether it takes -w) for every output option."""
    found = []
    for path, cmd in _commands(typer.main.get_command(app)):
        opts = [p for p in cmd.params if p.param_type_name == "option" and set(p.opts) & set(OUTPUT_OPTS)
                and not p.is_flag]
        has_ws = any("-w" in p.opts for p in cmd.params)
        found += [(" ".join(path), max(p.opts, key=len), has_ws) for p in opts]
    return found


OPTIONS = _output_options()


def _events(ws: Path) -> int:
    con = duckdb.connect(str(ws / "veribench.duckdb"), read_only=True)
    try:
        return int(con.execute("SELECT count(*) FROM events").fetchone()[0])
    finally:
        con.close()


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace holding one import (so it has logged events)."""
    root = tmp_path_factory.mktemp("outws")
    docs = root / "docs.jsonl"
    docs.write_text(json.dumps({"id": "d1", "text": "A document.", "label": "human"}) + "\n")
    r = CliRunner().invoke(app, ["import", "jsonl", str(docs), "-w", str(root / "ws")])
    assert r.exit_code == 0, r.output
    return root / "ws"


def test_the_sweep_finds_the_known_output_options():
    names = {(c, o) for c, o, _ in OPTIONS}
    assert {("export scores", "--out"), ("evaluate", "--out"), ("evaluate", "--json"), ("cycle score", "--out"),
            ("report", "--out"), ("publish", "--out"), ("score", "--out"), ("protocol commit", "--record-dir"),
            ("cycle new", "--secrets-dir"), ("cycle publish", "--secrets-dir")} <= names, names


@pytest.mark.parametrize(("command", "option", "has_ws"), OPTIONS, ids=[f"{c} {o}" for c, o, _ in OPTIONS])
def test_an_output_path_under_a_file_is_one_line_naming_the_option(tmp_path: Path, ws: Path, command: str,
                                                                    option: str, has_ws: bool):
    afile = tmp_path / "afile"
    afile.write_text("a file, not a folder\n")
    target = afile / "x.out"
    before = _events(ws)
    args = [*command.split(), option, str(target), *(["-w", str(ws)] if has_ws else [])]
    r = CliRunner().invoke(app, args)
    lines = r.output.strip().splitlines()
    assert r.exit_code == 1, r.output
    assert len(lines) == 1 and re.fullmatch(re.escape(f"error: {option} {target}: {afile} is a file, not a folder ")
                                            + rf"\(pass a (file|folder) path that can be written to {option}\)",
                                            lines[0]), r.output
    assert "internal error" not in r.output and "Traceback" not in r.output
    assert _events(ws) == before


@pytest.mark.parametrize(("args", "what"), [
    ("evaluate --out {F}", "is a file, not a folder"),
    ("report --out {F}", "is a file, not a folder"),
    ("publish --run R --out {F}", "is a file, not a folder"),
    ("export scores --out {D}", "is a folder, not a file"),
    ("evaluate --json {D}", "is a folder, not a file"),
])
def test_an_output_path_of_the_wrong_kind_is_refused_before_any_work(tmp_path: Path, ws: Path, args: str, what: str):
    afile, folder = tmp_path / "afile", tmp_path / "folder"
    afile.write_text("x\n")
    folder.mkdir()
    before = _events(ws)
    argv = [a.format(F=afile, D=folder) for a in args.split()]
    r = CliRunner().invoke(app, [*argv, "-w", str(ws)])
    assert r.exit_code == 1 and r.output.count("\n") == 1, r.output
    assert r.output.startswith(f"error: {argv[-2]} {argv[-1]}: {what}"), r.output
    assert _events(ws) == before


# -- hostile tester's fifth round: folders veribench writes beyond --out/--json ---------------------


def _templates(tmp_path: Path) -> tuple[Path, Path]:
    t, b = tmp_path / "templates.json", tmp_path / "banks.json"
    t.write_text(json.dumps([{"slug": "s", "category": "c", "prompt_text": "Write about {TOPIC}."}]))
    b.write_text(json.dumps({"TOPIC": ["rivers"]}))
    return t, b


@pytest.mark.parametrize(("args", "shown", "what"), [
    ("protocol commit {P} --record-dir {F}/rec -w {W}", "--record-dir {F}/rec", "{F} is a file, not a folder"),
    ("cycle new X {F}/cy --templates {T} --banks {B}", "DIRECTORY {F}/cy", "{F} is a file, not a folder"),
    ("cycle new X {N}/cy --templates {T} --banks {B} --secrets-dir {F}/s", "--secrets-dir {F}/s",
     "{F} is a file, not a folder"),
    ("cycle new X {N}/cy --templates {T} --banks {B} --secrets-dir {F}", "--secrets-dir {F}", "is a file, not a folder"),
])
def test_a_folder_veribench_writes_under_or_at_a_file_is_refused_before_any_work(tmp_path: Path, ws: Path,
                                                                                 args: str, shown: str, what: str):
    afile, new = tmp_path / "afile", tmp_path / "new"
    afile.write_text("x\n")
    proto = tmp_path / "p.toml"
    proto.write_text("")
    t, b = _templates(tmp_path)
    fmt = {"F": afile, "N": new, "T": t, "B": b, "P": proto, "W": ws}
    before = _events(ws)
    r = CliRunner().invoke(app, [a.format(**fmt) for a in args.split()])
    lines = r.output.strip().splitlines()
    assert r.exit_code == 1 and len(lines) == 1, r.output
    assert lines[0].startswith(f"error: {shown.format(**fmt)}: {what.format(**fmt)} (pass a folder path"), r.output
    assert "internal error" not in r.output and "Traceback" not in r.output
    assert _events(ws) == before and not new.exists() and afile.read_text() == "x\n"
