"""Every command's ``--help`` follows the grammar of docs/cli.md: a walk over the whole
command tree (``typer.main.get_command(app)``, ``list_commands``/``get_command``)."""

from __future__ import annotations

import re
import sys

import pytest
from typer._click import Context
from typer.core import TyperArgument, TyperGroup, TyperOption
from typer.main import get_command
from typer.testing import CliRunner

from veribench.cli.grammar import RENAMED_COMMANDS
from veribench.cli.main import COMMANDS, app

#: Commands that run long: each takes --progress/--no-progress.
LONG = {"score", "humanize", "generate", "readability", "attack", "derive-arm", "evaluate", "publish", "verify",
        "report", "demo", "cycle measure", "cycle rescore", "import raid", "import mage", "import m4",
        "import detectrl", "import beemo", "import semeval", "import hc3"}
#: Commands that touch no workspace (every other one takes -w/--workspace).
NO_WORKSPACE = {"verify", "version", "plan fpr", "plan gap", "plan paired", "list detectors", "list humanizers",
                "list attacks", "cycle new", "cycle prompts", "cycle add", "cycle publish", "cycle score",
                # the board's commands name its board.toml (which names the workspace), or no board at all
                "leaderboard submit", "leaderboard check-receipt", "leaderboard serve", "leaderboard launch",
                "leaderboard add-team", "leaderboard reveal", "leaderboard check-reveal"}
#: Python types as typer would print them: never in the help.
PYTHON_TYPES = re.compile(r"<(?:bool|str|int|float|Path|path|file|directory|list\[[^\]]*\]|tuple\[[^\]]*\]|"
                          r"[a-z]+ range)>")


def _walk(cmd, path, ctx):
    if isinstance(cmd, TyperGroup):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            yield from _walk(sub, [*path, name], Context(sub, info_name=name, parent=ctx))
    else:
        yield " ".join(path), cmd


@pytest.fixture(scope="module")
def commands() -> dict:
    root = get_command(app)
    found = dict(_walk(root, [], Context(root, info_name="veribench")))
    assert len(found) >= 60, sorted(found)
    return found


def _options(cmd) -> dict[str, TyperOption]:
    return {o: p for p in cmd.params if isinstance(p, TyperOption) for o in [*p.opts, *p.secondary_opts]}


def test_the_walk_reaches_every_command_of_the_table(commands):
    tops = {path.split()[0] for path in commands}
    assert tops == {k for k in COMMANDS if " " not in k}
    for k in COMMANDS:
        assert any(p == k or p.startswith(k + " ") for p in commands), k
    for old, new in RENAMED_COMMANDS.items():  # an old spelling resolves, but is not listed
        assert old not in commands and new in commands


def test_every_option_and_argument_has_help_and_no_python_type(commands):
    for path, cmd in commands.items():
        for p in cmd.params:
            if isinstance(p, (TyperOption, TyperArgument)) and not getattr(p, "hidden", False):
                assert (p.help or "").strip(), f"{path}: {p.name} has no help text"
        r = CliRunner().invoke(app, [*path.split(), "--help"], env={"COLUMNS": "200"})
        assert r.exit_code == 0, (path, r.output)
        assert not PYTHON_TYPES.search(r.output), (path, PYTHON_TYPES.search(r.output).group())
        assert (cmd.help or "").strip(), f"{path}: no help"


def test_outputs_json_protocol_format_quiet_spellings(commands):
    for path, cmd in commands.items():
        opts = _options(cmd)
        assert "--output" not in opts, f"{path}: --output (the grammar's spelling is --out/-o)"
        if "--out" in opts:
            assert "-o" in opts["--out"].opts, f"{path}: --out without -o"
        if "--json" in opts:
            p = opts["--json"]
            assert not p.is_flag and p.type_descriptor.is_path, f"{path}: --json must name a file"
        if "-p" in opts:
            assert "--protocol" in opts["-p"].opts, f"{path}: -p is only --protocol"
        if "--format" in opts:
            assert set(opts["--format"].type_descriptor.choices or ()) == {"text", "json"}, path
        if "--quiet" in opts:
            assert "-q" in opts["--quiet"].opts, path
        if "--detector" in opts:
            assert "-d" in opts["--detector"].opts, path


def test_progress_on_every_long_command(commands):
    for path in LONG:
        opts = _options(commands[path])
        assert "--progress" in opts and "--no-progress" in opts, f"{path}: no --progress/--no-progress"
    for path, cmd in commands.items():  # one spelling: the pair, never --no-progress alone
        opts = _options(cmd)
        if "--no-progress" in opts:
            assert "--progress" in opts, path


def test_workspace_option_where_a_workspace_is_used(commands):
    for path, cmd in commands.items():
        opts = _options(cmd)
        if path in NO_WORKSPACE:
            assert "--workspace" not in opts, path
            continue
        assert "--workspace" in opts and "-w" in opts["--workspace"].opts, f"{path}: no -w/--workspace"
        assert not any(isinstance(p, TyperArgument) and p.name == "workspace" for p in cmd.params), path
    assert opts_multiple(commands["report"], "--workspace"), "report takes repeatable -w"


def opts_multiple(cmd, name: str) -> bool:
    return bool(_options(cmd)[name].multiple)


def test_score_help_imports_neither_the_report_nor_the_web_apps():
    import subprocess

    code = ("import sys\nfrom veribench.cli.main import main\nsys.argv = ['veribench', 'score', '--help']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in sys.modules if m.startswith(('veribench.report', 'veribench.rubric', 'fastapi', "
            "'veribench.evaluate', 'veribench.bundles', 'torch'))]\nprint('HEAVY', heavy)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "HEAVY []" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]
    code = code.replace("'score', '--help'", "'--help'")  # the command list reads sources, imports none
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "HEAVY []" in r.stdout and "derive-arm" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]


#: A bracketed word or list in a help text (``[arms]``, ``[id, draft_sha256, ...]``).
BRACKETED = re.compile(r"\[[^\[\]]+\]")
#: The frame of a rich help panel.
FRAME = re.compile(r"[│╭╮╰╯─]")


def test_square_brackets_in_help_print_as_written(commands):
    """rich reads ``[arms]`` as a style tag and drops it: every bracketed word of a command's
    help, or of its options' and arguments' help, must print as written."""
    checked = 0
    for path, cmd in commands.items():
        texts = [cmd.help or ""] + [p.help or "" for p in cmd.params if not getattr(p, "hidden", False)]
        wanted = {" ".join(m.split()) for t in texts for m in BRACKETED.findall(t)}
        if not wanted:
            continue
        r = CliRunner().invoke(app, [*path.split(), "--help"], env={"COLUMNS": "400"})
        assert r.exit_code == 0, (path, r.output)
        flat = " ".join(FRAME.sub(" ", r.output).split())
        for seg in wanted:
            assert seg in flat, (path, seg)
        checked += 1
    assert checked >= 3  # import edited (FILE, --protocol), cycle new --banks, ...
    r = CliRunner().invoke(app, ["import", "edited", "--help"], env={"COLUMNS": "400"})
    assert "Protocol whose [arms] table" in r.output and "{draft_id, text, [id," in r.output, r.output
