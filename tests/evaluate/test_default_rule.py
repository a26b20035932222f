"""One default rule per detector, applied wherever no rule is stated (issue 25): a
protocol naming ZipPy without a rule used to judge it by `ai_probability > 0.5`, which
ZipPy never reports, so every rate was null, although `list detectors` says its default
is its own verdict and `protocol commit` said nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from veribench.cli.main import app

pytest.importorskip("zippy.zippy")

FDG = Path(__file__).resolve().parents[2] / "src" / "veribench" / "data" / "demo" / "fastdetectgpt"

PROTOCOL = """
[protocol]
name = "ZipPy without a rule"
tag = "zippy-default"

[[detectors]]
name = "zippy"
label = "ZipPy (default rule)"
settings = { engine = "brotli" }

[[detectors]]
name = "zippy"
label = "ZipPy (stated rule)"
settings = { engine = "brotli" }
rule = { field = "verdict", ai_values = ["ai"], source = "the same rule, stated" }
"""


def run(*args):
    r = CliRunner().invoke(app, [str(a) for a in args])
    return r


def test_a_detector_without_a_rule_gets_the_default_that_list_shows(tmp_path):
    ws = tmp_path / "ws"
    r = run("import", "fastdetectgpt", FDG, "--sets", "xsum_gpt-3.5-turbo", "--pairs", "40", "-w", ws, "-q")
    assert r.exit_code == 0, r.output
    proto = tmp_path / "p.toml"
    proto.write_text(PROTOCOL, encoding="utf-8")
    r = run("protocol", "commit", proto, "-w", ws)
    assert r.exit_code == 0, r.output
    listed = json.loads(run("list", "detectors", "--format", "json").output)
    zippy_rule = next(d["rule"] for d in listed if d["name"] == "zippy")
    # commit prints the rule each detector will get: the default as `list` shows it, or the stated one
    assert f"rule for ZipPy (default rule): {zippy_rule} (no rule stated" in r.output, r.output
    assert "rule for ZipPy (stated rule): verdict in ['ai'] (stated in the protocol)" in r.output, r.output
    out = tmp_path / "r.json"
    r = run("evaluate", "-w", ws, "-p", proto, "--json", out, "-q")
    assert r.exit_code == 0, r.output
    rows = {t["detector"]: t for t in json.loads(out.read_text())["table1"]}
    default, stated = rows["ZipPy (default rule)"], rows["ZipPy (stated rule)"]
    for k in ("catch_rate", "fpr", "balanced_accuracy", "human_n", "ai_n"):
        assert default[k] is not None, (k, default)
        assert default[k] == stated[k], (k, default[k], stated[k])
    assert 0 < default["human_n"] and 0 < default["ai_n"]
