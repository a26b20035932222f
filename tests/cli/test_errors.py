"""The one error style (docs/cli.md), table-driven: a bad value, a missing file, a workspace
path that is a file, a missing workspace for a command that only reads it, a misspelled
setting or record field each end in one line ``error: <where>: <what> (<fix>)``, exit 1
(refused input) or 2 (usage), never a traceback, and no workspace is created."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from veribench.cli.main import app

ERROR_LINE = re.compile(r"^error: \S.*?: \S.*$")
DATA = Path(__file__).resolve().parents[1] / "data"
PUBLIC = DATA / "public"


@pytest.fixture()
def paths(tmp_path: Path) -> dict[str, Path]:
    texts = tmp_path / "texts.jsonl"
    texts.write_text(json.dumps({"id": "a", "text": "One sentence of plain text for the checks."}) + "\n")
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "d1", "text": "A document.", "label": "human", "subgrup": "x"}) + "\n")
    valid = tmp_path / "valid.jsonl"
    valid.write_text(json.dumps({"id": "d1", "text": "A document.", "label": "human"}) + "\n")
    afile = tmp_path / "a-file"
    afile.write_text("not a workspace folder\n")
    lable = tmp_path / "r.jsonl"
    lable.write_text(json.dumps({"id": "a", "text": "One sentence.", "lable": "human"}) + "\n")
    lable_csv = tmp_path / "r.csv"
    lable_csv.write_text("id,text,lable\na,One sentence.,human\n")
    return {"T": texts, "D": docs, "V": valid, "F": afile, "NOWS": tmp_path / "nows", "MISSING": tmp_path / "missing.jsonl",
            "MISSINGDIR": tmp_path / "missing-dir", "OUT": tmp_path / "out" / "o.jsonl", "LABLE": lable,
            "LABLECSV": lable_csv, "RAID": PUBLIC / "raid" / "train.csv", "MAGE": PUBLIC / "mage" / "train.csv",
            "SEMEVAL": PUBLIC / "semeval" / "subtaskA", "HC3": PUBLIC / "hc3" / "finance.jsonl", "FDG": DATA / "fastdetectgpt",
            "CYCLE": DATA / "humanizerbench" / "July 2026"}


#: (args with placeholders from ``paths``, exit code, text the error line must hold)
CASES = [
    # unknown option values and options (usage: 2)
    ("score -d zippy -i T -o OUT -w NOWS --engine foo", 2, "--engine: 'foo' is not one of"),
    ("list detectors --format yaml", 2, "--format: 'yaml' is not one of"),
    ("write invite -w NOWS --prompt-file T --register poetry", 2, "--register: 'poetry' is not one of"),
    ("cycle rescore MISSINGDIR -o OUT --readability often", 2, "--readability: 'often' is not one of"),
    ("score -d zippy -i T -o OUT -w NOWS --outptu x", 2, "--outptu: no such option (did you mean --out?"),
    ("scroe", 2, "veribench scroe: no such command (did you mean 'score'?"),
    ("import jsonl", 2, "FILE: missing"),
    ("score -d zippy -i T -w NOWS", 2, "--out: missing"),
    # negative counts and sizes (usage: 2)
    ("import fastdetectgpt MISSINGDIR -w NOWS --pairs -1", 2, "--pairs:"),
    ("generate --prompts T -o OUT -w NOWS --samples 0", 2, "--samples:"),
    ("log show -w NOWS --last -1", 2, "--last:"),
    ("verify MISSINGDIR --max-file-mb -5", 2, "--max-file-mb:"),
    ("plan fpr --n -3", 2, "--n:"),
    ("write invite -w NOWS --prompt-file T --count 0", 2, "--count:"),
    ("cycle score MISSINGDIR --resamples 0", 2, "--resamples:"),
    ("cycle rescore MISSINGDIR -o OUT --limit 0", 2, "--limit:"),
    ("score -d zippy -i T -o OUT -w NOWS --max-spend -1", 2, "--max-spend:"),
    ("evaluate -w NOWS --allow-paid --max-spend -1", 2, "--max-spend:"),
    ("rate assign -w NOWS --limit 0", 2, "--limit:"),
    ("rate serve -w NOWS --port 70000", 2, "--port:"),
    # issue 25's hostile values, as the issue gave them (each refused naming the option, nothing acted on)
    ("cycle score CYCLE --resamples -5", 2, "--resamples: input should be greater than or equal to 100"),
    ("cycle score CYCLE --resamples 2", 2, "--resamples: input should be greater than or equal to 100"),
    ("cycle score CYCLE --seed -5", 2, "--seed: input should be greater than or equal to 0"),
    ("verify MISSINGDIR --max-file-mb -3", 2, "--max-file-mb: input should be greater than or equal to 1"),
    ("log show -w NOWS --last -1", 2, "--last: input should be greater than or equal to 0"),
    # rates and levels of `plan` are in [0, 1]: refused naming the option (was "veribench plan fpr: rate must ...")
    ("plan fpr --rate 2 --n 5", 2, "--rate: input should be less than or equal to 1"),
    ("plan fpr --n 5 --half-width -0.1", 2, "--half-width: input should be greater than or equal to 0"),
    ("plan gap --rate-a 1.5 --rate-b 0.1", 2, "--rate-a: input should be less than or equal to 1"),
    ("plan paired --rate-a 0.2 --rate-b -0.1", 2, "--rate-b: input should be greater than or equal to 0"),
    ("plan gap --rate-a 0.2 --rate-b 0.1 --power 1.2", 2, "--power: input should be less than or equal to 1"),
    # missing files: one wording (refused input: 1)
    ("score -d zippy -i MISSING -o OUT -w NOWS", 1, "missing.jsonl: no such file or folder (check the path given "
                                                     "to --input)"),
    ("import jsonl MISSING -w NOWS", 1, "missing.jsonl: no such file or folder (check the path given to FILE)"),
    ("import scores MISSING -w NOWS", 1, "missing.jsonl: no such file or folder"),
    ("import raid MISSING -w NOWS", 1, "missing.jsonl: no such file or folder"),
    ("import liang2023 MISSINGDIR -w NOWS", 1, "missing-dir: no such file or folder"),
    ("import edited T -p MISSING -w NOWS", 1, "missing.jsonl: no such file or folder (check the path given to "
                                              "--protocol)"),
    ("protocol commit MISSING -w NOWS", 1, "missing.jsonl: no such file or folder"),
    ("evaluate -w NOWS -p MISSING", 1, "missing.jsonl: no such file or folder"),
    ("verify MISSINGDIR", 1, "missing-dir: no such file or folder"),
    ("verify T", 1, "texts.jsonl: is a file, not a folder"),
    ("report MISSING", 1, "missing.jsonl: no such file or folder"),
    ("generate --prompts MISSING -o OUT -w NOWS", 1, "missing.jsonl: no such file or folder"),
    ("write fingerprint MISSING", 1, "missing.jsonl: no such file or folder"),
    ("write invite -w NOWS --prompt-file MISSING", 1, "missing.jsonl: no such file or folder"),
    ("cycle measure MISSINGDIR -w NOWS", 1, "missing-dir: no such file or folder"),
    # a workspace path that is a file (1)
    ("evaluate -w F", 1, "--workspace {F}: is a file, not a workspace folder"),
    ("import jsonl V -w F", 1, "--workspace {F}: is a file, not a workspace folder"),
    ("score -d zippy -i T -o OUT -w F", 1, "--workspace {F}: is a file, not a workspace folder"),
    ("log verify -w F", 1, "--workspace {F}: is a file"),
    ("rate results -w F", 1, "--workspace {F}: is a file"),
    ("write status -w F", 1, "--workspace {F}: is a file"),
    ("report -w F", 1, "--workspace {F}: is a file"),
    ("workspace migrate -w F", 1, "--workspace {F}: is a file"),
    # ... or lies under a file (was an internal NotADirectoryError when the folder was created)
    ("import jsonl V -w {F}/sub", 1, "--workspace {F}/sub: {F} is a file, not a folder"),
    ("rate editors add bob -w {F}/sub", 1, "--workspace {F}/sub: {F} is a file, not a folder"),
    ("write invite -w {F}/sub --prompt-file T", 1, "--workspace {F}/sub: {F} is a file, not a folder"),
    ("evaluate -w {F}/sub", 1, "--workspace {F}/sub: {F} is a file, not a folder"),
    # a missing workspace, for commands that only read it (or work on what it holds): refused, not created (1)
    ("evaluate -w NOWS", 1, "--workspace {NOWS}: no workspace here"),
    ("publish -w NOWS --run R -o OUT", 1, "--workspace {NOWS}: no workspace here"),
    ("export scores -w NOWS -o {OUT}.csv", 1, "--workspace {NOWS}: no workspace here"),
    ("export documents -w NOWS -o OUT", 1, "--workspace {NOWS}: no workspace here"),
    ("log verify -w NOWS", 1, "--workspace {NOWS}: no workspace here"),
    ("log show -w NOWS", 1, "--workspace {NOWS}: no workspace here"),
    ("protocol show -w NOWS", 1, "--workspace {NOWS}: no workspace here"),
    ("protocol timestamp T -w NOWS --tsa http://127.0.0.1:9", 1, "--workspace {NOWS}: no workspace here"),
    ("attack homoglyph -w NOWS", 1, "--workspace {NOWS}: no workspace here"),
    ("derive-arm -H manual --name X -w NOWS", 1, "--workspace {NOWS}: no workspace here"),
    ("list corpora -w NOWS", 1, "--workspace {NOWS}: no workspace here"),
    ("report -w NOWS", 1, "--workspace {NOWS}: no workspace here"),
    ("workspace migrate -w NOWS", 1, "--workspace {NOWS}: no workspace here"),
    ("write fingerprint T -w NOWS", 1, "--workspace {NOWS}: no workspace here"),
    ("write export -w NOWS -o OUT", 1, "--workspace {NOWS}: no workspace here"),
    ("rate results -w NOWS", 1, "--workspace {NOWS}: no rubric store here"),
    ("rate export -w NOWS -o OUT", 1, "--workspace {NOWS}: no rubric store here"),
    ("rate editors list -w NOWS", 1, "--workspace {NOWS}: no rubric store here"),
    ("rate serve -w NOWS", 1, "--workspace {NOWS}: no rubric store here"),
    ("write status -w NOWS", 1, "--workspace {NOWS}: no write.sqlite here"),
    ("write revoke inv-x -w NOWS", 1, "--workspace {NOWS}: no write.sqlite here"),
    ("write reissue inv-x -w NOWS", 1, "--workspace {NOWS}: no write.sqlite here"),
    ("write withdraw inv-x -w NOWS --yes", 1, "--workspace {NOWS}: no write.sqlite here"),
    ("write serve -w NOWS", 1, "--workspace {NOWS}: no write.sqlite here"),
    ("import arm-b -w NOWS", 1, "--workspace {NOWS}: no write.sqlite here"),
    # misspelled setting keys and record fields: "did you mean" (1); every bad --set is `--set: <key>: ...`
    ("score -d loglik --set modle=smollm2 -i T -o OUT -w NOWS", 1,
     "--set: modle: unknown setting of detector 'loglik' (did you mean 'model'?"),
    ("score -d zippy --set chunk_sise=9 -i T -o OUT -w NOWS", 1, "--set: chunk_sise: unknown setting of detector "
                                                                 "'zippy' (did you mean 'chunk_size'?"),
    ("score -d hf-classifier --set modle=x -i T -o OUT -w NOWS", 1, "--set: modle: unknown setting of detector "
                                                                    "'hf-classifier' (did you mean 'model'?"),
    ("humanize -H manual --set pth=x -i T -w NOWS", 1, "--set: pth: unknown setting of humanizer 'manual' "
                                                      "(did you mean 'path'?"),
    ("humanize -H hix --set strenght=x -i T -w NOWS", 1, "--set: strenght: unknown setting of humanizer 'hix' "
                                                         "(known: "),
    ("score -d gptzero --set modle=x -i T -o OUT -w NOWS", 1, "--set: modle: unknown setting of detector 'gptzero' "
                                                              "(known: "),
    ("humanize -H undetectable --set modle=x -i T -w NOWS", 1, "--set: modle: unknown setting of humanizer "
                                                               "'undetectable' (did you mean 'model'?"),
    ("generate --prompts T --set modle=x -o OUT -w NOWS", 1, "--set: modle: unknown setting of the chat client "
                                                             "(did you mean 'model'?"),
    ("readability --set modle=x -i T -o OUT -w NOWS", 1, "--set: modle: unknown setting of the chat client "
                                                         "(did you mean 'model'?"),
    ("cycle measure CYCLE -w NOWS --readability judge --judge-set modle=x", 1, "--judge-set: modle: unknown setting "
                                                                           "of the chat client (did you mean 'model'?"),
    ("cycle measure CYCLE -w NOWS -d zippy --set chunk_sise=3", 1, "--set: chunk_sise: unknown setting of detector "
                                                                   "'zippy' (did you mean 'chunk_size'?"),
    ("attack homoglyph --set N=x -w NOWS", 1, "--workspace {NOWS}: no workspace here"),
    ("score -d zippy --set novalue -i T -o OUT -w NOWS", 1, "--set: 'novalue': expects key=value (write --set "
                                                            "KEY=VALUE)"),
    # a bad --set value: `--set: <key>: <what> (<fix>)`, never Python's wording (1)
    ("score -d zippy --set chunk_size=abc -i T -o OUT -w NOWS", 1, "--set: chunk_size: not an integer: 'abc' "
                                                                   "(write --set chunk_size=N, e.g. the default"),
    ("score -d loglik --set max_tokens=many -i T -o OUT -w NOWS", 1, "--set: max_tokens: not an integer: 'many'"),
    ("readability --set temperature=hot -i T -o OUT -w NOWS", 1, "--set: temperature: not a number: 'hot'"),
    ("score -d loglik --set dtype=float99 -i T -o OUT -w NOWS", 1, "--set: dtype: unknown dtype 'float99' (use "
                                                                   "one of auto,"),
    ("score -d hf-classifier -i T -o OUT -w NOWS", 1, "--set: model: required by detector 'hf-classifier', not "
                                                      "given (add --set model=VALUE)"),
    ("humanize -H llm-humanizer -i T -w NOWS", 1, "--set: prompt_file: required by humanizer 'llm-humanizer'"),
    ("import jsonl D -w NOWS", 1, "field 'subgrup': unknown field (did you mean 'subgroup'?"),
    ("import jsonl LABLE -w NOWS", 1, "field 'label': required field is missing (did you mean 'label' for "
                                      "'lable'?)"),
    ("import csv LABLECSV -w NOWS", 1, "field 'label': required field is missing (did you mean 'label' for "
                                       "'lable'?)"),
    ("score -d zipy -i T -o OUT -w NOWS", 1, "unknown detector 'zipy'"),
    # bad option values: refused, naming the option and the known values (usage: 2), nothing created
    ("import raid RAID --split bogus -w NOWS", 2, "--split: unknown split 'bogus' (known: extra, extra_none, test, "),
    ("import mage MAGE --split trian -w NOWS", 2, "--split: unknown split 'trian' (did you mean 'train'? known: "),
    ("import semeval SEMEVAL --split bogus -w NOWS", 2, "--split: unknown split 'bogus' (known: dev, test, train)"),
    ("import semeval SEMEVAL --subtask Z -w NOWS", 2, "--subtask: unknown subtask 'Z' (known: A, B, C)"),
    ("import hc3 HC3 --language fr -w NOWS", 2, "--language: unknown language 'fr' (known: en, zh)"),
    ("import hc3 HC3 --config bogus -w NOWS", 2, "--config: unknown config 'bogus' (known for language en: all, "
                                                 "finance,"),
    ("import hc3 HC3 --language zh --config reddit_eli5 -w NOWS", 2, "--config: unknown config 'reddit_eli5' "
                                                                     "(known for language zh:"),
    ("import fastdetectgpt FDG --sets bogus -w NOWS", 2, "--sets: unknown set 'bogus' (known: pubmed_davinci,"),
    ("log show -w NOWS --type bogus", 2, "--type: unknown event type 'bogus' (known: document_update, import,"),
    ("evaluate -w NOWS --grid-threshold-by domain", 2, "--grid-threshold-by: applies to a grid (add --grid TAGS)"),
    ("evaluate -w NOWS --raid-json OUT", 2, "--raid-json: applies to a grid (add --grid TAGS)"),
    ("evaluate -w NOWS --grid ,", 2, "--grid: names no tag"),
    ("evaluate -w NOWS --grid domain,model,domain", 2, "--grid: a tag repeats: domain,model,domain (name each tag "
                                                       "once)"),
    ("evaluate -w NOWS --allow-paid", 2, "--allow-paid: needs --max-spend N"),
    ("evaluate -w NOWS --max-spend 3", 2, "--max-spend: applies to paid calls, which need --allow-paid"),
    ("export scores -w NOWS -o {OUT}.txt", 2, "the export format must be .csv or .parquet"),
    ("cycle measure CYCLE -w NOWS --embedder foo", 2, "--embedder: unknown embedder 'foo' (known embedders: minilm,"),
    ("cycle rescore CYCLE -o OUT -w NOWS --mapping foo", 2, "--mapping: expected auto, probability, verdict or "
                                                            "sigmoid:T[:C]"),
    ("import scores V -d x --scale foo -w NOWS", 2, "--scale: unknown scale 'foo' (known scales: human_0_100,"),
]


def _args(spec: str, paths: dict[str, Path]) -> list[str]:
    out = []
    for tok in spec.split():
        if "{" in tok:
            tok = tok.format(**{k: str(v) for k, v in paths.items()})
        out.append(str(paths[tok]) if tok in paths else tok)
    return out


@pytest.mark.parametrize(("spec", "code", "expected"), CASES, ids=[c[0] for c in CASES])
def test_one_error_style(spec: str, code: int, expected: str, paths: dict[str, Path]):
    r = CliRunner().invoke(app, _args(spec, paths))
    assert r.exit_code == code, (r.exit_code, r.output)
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, r.output
    assert ERROR_LINE.match(errors[0]), errors[0]
    want = expected.format(**{k: str(v) for k, v in paths.items()})
    assert want in errors[0], (want, errors[0])
    assert "Traceback" not in r.output and "╭" not in r.output and "Invalid value" not in r.output, r.output
    assert not paths["NOWS"].exists(), "a workspace was created"
    assert not isinstance(r.exception, Exception) or isinstance(r.exception, SystemExit), repr(r.exception)


def test_an_unexpected_error_is_one_line_too(monkeypatch, paths):
    """A bug (an exception no command expects) still ends in one line, exit 1; VERIBENCH_DEBUG=1 shows it."""
    from veribench.cli import plan

    def boom(*a, **k):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(plan.planning, "wilson_interval_at", boom)
    r = CliRunner().invoke(app, ["plan", "fpr", "--n", "100"])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert r.stderr.strip().splitlines() == ["error: internal error: ZeroDivisionError: division by zero (a bug in "
                                            "veribench: please report it with the command line; VERIBENCH_DEBUG=1 "
                                            "shows the traceback)"]
    r = CliRunner().invoke(app, ["plan", "fpr", "--n", "100"], env={"VERIBENCH_DEBUG": "1"})
    assert isinstance(r.exception, ZeroDivisionError)
