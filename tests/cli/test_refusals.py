"""What a command leaves behind when it refuses or fails, and the small promises of the
grammar (docs/cli.md): a workspace this command created is removed again when the command
ends in an error while it holds nothing (a refused import creates nothing, an existing
workspace is never touched); `-q` is one line; the streamed imports' closing count is every
record read; `--version`; one wording for a missing writing store."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest
import typer
from typer.testing import CliRunner

from veribench import __version__
from veribench.cli.common import open_workspace
from veribench.cli.grammar import CliError, friendly_errors
from veribench.cli.main import app
from veribench.corpus.importers import raid
from veribench.corpus.importers._store import store_import
from veribench.corpus.importers.generic import read_documents

DATA = Path(__file__).resolve().parents[1] / "data"
RAID = DATA / "public" / "raid" / "train.csv"


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, [str(a) for a in args], env=env)


def _documents(ws: Path) -> int:
    con = duckdb.connect(str(ws / "veribench.duckdb"), read_only=True)
    try:
        return int(con.execute("SELECT count(*) FROM documents").fetchone()[0])
    finally:
        con.close()


@pytest.fixture()
def renamed(tmp_path: Path) -> Path:
    """RAID's train.csv with its 'generation' column renamed: refused after the workspace is open."""
    lines = RAID.read_text(encoding="utf-8").splitlines(keepends=True)
    bad = tmp_path / "renamed.csv"
    bad.write_text(lines[0].replace("generation", "generaton") + "".join(lines[1:5]), encoding="utf-8")
    return bad


def test_a_failed_import_leaves_no_new_workspace(tmp_path: Path, renamed: Path):
    nested = tmp_path / "new" / "ws"  # two folders made by the command: both go
    r = run("import", "raid", renamed, "-w", nested)
    assert r.exit_code == 1 and "column 'generation' of RAID's released format is missing" in r.output, r.output
    assert not (tmp_path / "new").exists()
    empty = tmp_path / "empty"  # a folder that existed before stays; only the database this command made goes
    empty.mkdir()
    assert run("import", "raid", renamed, "-w", empty).exit_code == 1
    assert empty.is_dir() and not any(empty.iterdir())
    ws = tmp_path / "ws"  # a workspace that existed before is never removed, and keeps what it held
    assert run("import", "raid", RAID, "-w", ws, "-q").exit_code == 0
    before = _documents(ws)
    assert run("import", "raid", renamed, "-w", ws).exit_code == 1
    assert _documents(ws) == before == 223
    assert run("log", "verify", "-w", ws).exit_code == 0


def test_refused_app_stores_are_not_left_behind(tmp_path: Path):
    """`rate editors add` and `write invite` create their stores; refused, they leave none."""
    r = run("rate", "editors", "add", "!!", "-w", tmp_path / "r")
    assert r.exit_code == 1 and "editor name must be" in r.output, r.output
    assert not (tmp_path / "r").exists()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Write about a walk.\n")
    r = run("write", "invite", "-w", tmp_path / "w", "--prompt-file", prompt, "--min-words", "500", "--max-words", "100")
    assert r.exit_code == 1 and "word range" in r.output, r.output
    assert not (tmp_path / "w").exists()
    ws = tmp_path / "kept"  # a store that exists (an editor in it) is kept when a later command fails
    assert run("rate", "editors", "add", "alice", "-w", ws).exit_code == 0
    assert run("rate", "editors", "add", "!!", "-w", ws).exit_code == 1
    assert (ws / "rubric.sqlite").is_file()
    assert "alice" in run("rate", "editors", "list", "-w", ws).output


def test_a_new_workspace_that_holds_data_is_kept_after_a_failure(tmp_path: Path):
    """The rule under the class (cli.common.remove_if_new): a failing command removes the
    workspace it created only while it holds nothing; what it stored (a scoring run's
    committed batches) stays."""
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "d1", "text": "A document.", "label": "human"}) + "\n")

    def command(ws: Path, store: bool) -> None:
        with open_workspace(ws, create=True) as w:
            if store:
                store_import(w, *read_documents(docs, "jsonl"))
        raise CliError("x", "failed after the workspace was made")

    for store in (False, True):
        ws = tmp_path / f"ws-{store}"
        with pytest.raises(typer.Exit) as e:
            friendly_errors(command)(ws, store)
        assert e.value.exit_code == 1
        assert ws.exists() is store
    assert _documents(tmp_path / "ws-True") == 1


def test_the_streamed_import_counts_every_record_it_read(tmp_path: Path, monkeypatch):
    """The closing progress line counts every record of the source (stored, repeated or
    skipped), after the last batch: train.csv holds 224 records (one with an empty text)."""
    monkeypatch.setitem(raid.import_raid.__kwdefaults__, "batch_size", 50)  # several batches, the last partial
    r = run("import", "raid", RAID, "-w", tmp_path / "ws", env={"VERIBENCH_PROGRESS_INTERVAL": "0.001"})
    assert r.exit_code == 0, r.output
    done = [x for x in r.stderr.splitlines() if ": done" in x]
    assert done and re.fullmatch(r"import raid: done, 224 records in \d+ s", done[-1]), done
    counts = [int(m.group(1).replace(",", "")) for x in r.stderr.splitlines()
              if (m := re.match(r"import raid: ([\d,]+) records", x))]
    assert counts == sorted(counts) and all(c <= 224 for c in counts), counts


def test_evaluate_quiet_is_one_line(tmp_path: Path):
    ws = tmp_path / "ws"
    assert run("import", "raid", RAID, "-w", ws, "-q").exit_code == 0
    proto = tmp_path / "z.toml"
    proto.write_text('[protocol]\nname = "z"\ntag = "Z"\n\n[selection]\ncorpora = ["raid"]\n\n[[detectors]]\n'
                     'name = "zippy"\nrule = { field = "raw", op = ">=", threshold = 0.0, source = "zippy default" }\n')
    assert run("protocol", "commit", proto, "-w", ws).exit_code == 0
    r = run("evaluate", "-w", ws, "-p", proto, "-q")  # scores the documents with zippy first
    assert r.exit_code == 0, r.output
    assert r.stderr == "" and len(r.stdout.splitlines()) == 1, r.output
    assert re.fullmatch(r"evaluate: run Z-\S+, 223 documents, 1 detectors, \d+ warnings\n", r.stdout), r.stdout


def test_version_option_and_command():
    a, b = run("--version"), run("version")
    assert a.exit_code == b.exit_code == 0
    assert a.stdout == b.stdout == f"{__version__}\n"


def test_one_wording_for_a_missing_writing_store(tmp_path: Path):
    lines = set()
    for args in (["write", "status"], ["import", "arm-b"], ["write", "revoke", "inv-x"], ["write", "withdraw", "inv-x",
                                                                                          "--yes"]):
        r = run(*args, "-w", tmp_path / "nows")
        assert r.exit_code == 1, r.output
        lines.add(r.stderr.strip())
    assert lines == {f"error: --workspace {tmp_path / 'nows'}: no write.sqlite here (create invitations first: "
                     f"veribench write invite -w {tmp_path / 'nows'} --prompt-file FILE)"}, lines
    assert not (tmp_path / "nows").exists()


def test_derive_arm_names_a_missing_setting(tmp_path: Path):
    ws = tmp_path / "ws"
    assert run("import", "raid", RAID, "-w", ws, "-q").exit_code == 0
    r = run("derive-arm", "-H", "manual", "--name", "X", "-w", ws)
    assert r.exit_code == 1, r.output
    assert r.stderr.strip() == ("error: --set: path: required by humanizer 'manual', not given (add --set "
                                "path=VALUE)"), r.stderr


LIANG = Path(__file__).resolve().parents[2] / "src" / "veribench" / "data" / "demo" / "liang2023"


@pytest.mark.parametrize(("cmd", "option", "value", "expected"), [
    ("attack homoglyph", "--label", "robot", "--label: unknown label 'robot' (stored: ai, ai-edited-human, human)"),
    ("attack homoglyph", "--label", "AI", "--label: unknown label 'AI' (did you mean 'ai'?"),
    ("attack homoglyph", "--arm", "Z", "--arm: unknown arm 'Z' (stored: A, AI-edited, C)"),
    ("attack homoglyph", "--corpus", "liang", "--corpus: unknown corpus 'liang' (did you mean 'liang2023'?"),
    ("derive-arm --humanizer manual --set path=MANUAL --name P --dry-run", "--corpus", "nonexist", "--corpus: unknown corpus 'nonexist'"),
    ("export documents -o OUT.jsonl", "--corpus", "nonexist", "--corpus: unknown corpus 'nonexist' (stored: liang2023)"),
    ("write export -o OUT.jsonl", "--corpus", "nonexist", "--corpus: unknown corpus 'nonexist' (stored: liang2023)"),
])
def test_a_filter_that_selects_nothing_is_refused(tmp_path: Path, cmd: str, option: str, value: str, expected: str):
    """A --corpus/--arm/--label no stored document carries used to derive "0 documents" or
    write an empty file with exit 0 (issue 25): it is a usage error naming the stored values,
    and nothing is derived or written."""
    ws = tmp_path / "ws"
    assert run("import", "liang2023", LIANG, "-w", ws, "-q").exit_code == 0
    before = _documents(ws)
    out = tmp_path / "OUT.jsonl"
    manual = tmp_path / "manual.jsonl"  # the manual humanizer's outputs: none needed to be refused
    manual.write_text("", encoding="utf-8")
    args = [a.replace("OUT.jsonl", str(out)).replace("MANUAL", str(manual)) for a in cmd.split()]
    r = run(*args, "-w", ws, option, value)
    assert r.exit_code == 2 and r.output.strip().startswith(f"error: {expected}"), r.output
    assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output
    assert _documents(ws) == before and not out.exists()
    # the same filter with a stored value selects documents
    good = {"--label": "ai", "--arm": "C", "--corpus": "liang2023"}[option]
    if cmd.startswith("attack"):
        r = run(*args, "-w", ws, option, good, "--dry-run")
        assert r.exit_code == 0 and "would derive 0" not in r.output, r.output
