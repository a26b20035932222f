"""``veribench rate``: editors add (token on the last line), assign from a real cycle bundle,
results and export."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from veribench.cli.main import app
from veribench.rubric import store
from veribench.store import Workspace

runner = CliRunner()


def test_rate_commands_on_a_real_cycle(tmp_path, june_dir):
    ws = tmp_path / "ws"
    # the real entry point: the token is the last line printed, and it signs in
    exe = Path(sys.executable).with_name("veribench")
    out = subprocess.run([str(exe), "rate", "editors", "add", "alice", "--workspace", str(ws)],
                         capture_output=True, text=True, check=True).stdout
    token = out.strip().splitlines()[-1]
    with Workspace(ws) as w:
        assert store.editor_for_token(w, token) == "alice"
    r = runner.invoke(app, ["rate", "editors", "add", "bob", "-w", str(ws)])
    assert r.exit_code == 0
    bob = r.output.strip().splitlines()[-1]
    r = runner.invoke(app, ["rate", "editors", "add", "bob", "-w", str(ws)])
    assert r.exit_code == 1 and "already exists" in r.output
    r = runner.invoke(app, ["rate", "assign", "-w", str(ws), "--from-cycle", str(june_dir), "--limit", "12"])
    assert r.exit_code == 0, r.output
    assert "pairs found: 390; selected: 12; added: 12" in r.output and "new assignments: 24" in r.output
    assert "alice 12, bob 12" in r.output
    r = runner.invoke(app, ["rate", "assign", "-w", str(ws), "--from-cycle", str(june_dir), "--limit", "12"])
    assert "added: 0; already loaded: 12" in r.output and "new assignments: 0" in r.output
    r = runner.invoke(app, ["rate", "assign", "-w", str(ws), "--from-cycle", str(tmp_path / "missing")])
    assert r.exit_code == 1 and "no such file or folder" in r.output
    r = runner.invoke(app, ["rate", "editors", "list", "-w", str(ws)])
    assert "alice\tassigned 12\tsubmitted 0" in r.output
    with Workspace(ws) as w:
        (b, *_) = [a["blind_id"] for a in store.assignments_for(w, "bob")]
        for e in ("alice", "bob"):
            store.save_claims(w, e, b, ["one", "two"], None, require_form=False)
            store.submit_reading(w, e, b, score=4 if e == "alice" else 3, found=[0, 1], marks=["0:synonym_misfire"],
                                 form_token=None, require_form=False)
        tool = store.db(w).query("SELECT tool FROM rubric_items WHERE blind_id = ?", [b])[0][0]
        assert store.editor_for_token(w, bob) == "bob"
    r = runner.invoke(app, ["rate", "results", "-w", str(ws), "--out", str(tmp_path / "res.json")])
    assert r.exit_code == 0 and "Editors' rubric by tool" in r.output
    doc = json.loads((tmp_path / "res.json").read_text())
    t = {x["tool"]: x for x in doc["tools"]}[tool]
    assert t["meaning_score_mean"] == 3.5 and t["writing_errors"]["synonym_misfire"] == 1
    assert sum(x["outputs"] for x in doc["tools"]) == 12
    r = runner.invoke(app, ["rate", "export", "-w", str(ws), "--out", str(tmp_path / "r.csv")])
    assert r.exit_code == 0 and "wrote" in r.output
    rows = list(csv.DictReader((tmp_path / "r.csv").open(encoding="utf-8")))
    assert {(x["editor"], x["score"], x["mark_class"]) for x in rows} == {("alice", "4", "synonym_misfire"),
                                                                           ("bob", "3", "synonym_misfire")}
    assert all(tool not in json.dumps(x) for x in rows)
    r = runner.invoke(app, ["rate", "export", "-w", str(ws), "--out", str(tmp_path / "u.csv"), "--unblind"])
    assert {x["tool"] for x in csv.DictReader((tmp_path / "u.csv").open(encoding="utf-8"))} == {tool}


def _cycle(folder: Path, tools: dict[str, int]) -> Path:
    """A cycle bundle with ``tools[t]`` complete tests of each tool (one sample per test)."""
    folder.mkdir()
    samples, tests = [], []
    for t, n in tools.items():
        for i in range(n):
            sid = f"s-{t}-{i}"
            samples.append({"id": sid, "input_text": f"Input {i} for {t}. It states a fact."})
            tests.append({"id": f"{t}-{i}", "sample_id": sid, "humanizer_slug": t, "status": "complete",
                          "output_text": f"Output {i} of {t} says a thing. It adds more."})
    (folder / "samples.json").write_text(json.dumps(samples))
    (folder / "tests.json").write_text(json.dumps(tests))
    return folder


def test_limit_spreads_over_every_tool_and_results_name_the_unrated(tmp_path):
    """Issue 25 walk: ``rate assign --limit 6`` loaded no pair of one of three humanizers and
    ``rate results`` did not say so. The limit is spread round-robin over the tools (2 each
    here, the same pairs on a rerun); a limit below the number of tools names the tools it
    leaves out; ``rate results`` lists tools with no rated pair as such, and its JSON gives
    each null row its reason."""
    from veribench.rubric import loaders

    cyc = _cycle(tmp_path / "cyc", {"alpha": 10, "beta": 10, "gamma": 4})
    for _ in range(2):  # the same on a rerun
        pairs, rep = loaders.pairs_from_cycle(cyc, 6)
        assert sorted(p.tool for p in pairs) == ["alpha", "alpha", "beta", "beta", "gamma", "gamma"]
        assert rep["tools"] == {"alpha": {"found": 10, "selected": 2}, "beta": {"found": 10, "selected": 2},
                                "gamma": {"found": 4, "selected": 2}}
    keys = [p.pair_key for p in pairs]
    assert [p.pair_key for p in loaders.pairs_from_cycle(cyc, 6)[0]] == keys
    pairs, _ = loaders.pairs_from_cycle(cyc, 14)  # gamma runs out: the rest goes to the others
    assert sorted(p.tool for p in pairs).count("gamma") == 4 and len(pairs) == 14
    ws = tmp_path / "ws"
    r = runner.invoke(app, ["rate", "assign", "-w", str(ws), "--from-cycle", str(cyc), "--limit", "6"])
    assert r.exit_code == 0, r.output
    assert "per tool (selected/found): alpha 2/10, beta 2/10, gamma 2/4" in r.output and "left out" not in r.output
    r = runner.invoke(app, ["rate", "assign", "-w", str(tmp_path / "ws2"), "--from-cycle", str(cyc), "--limit", "2"])
    assert r.exit_code == 0 and "left out by --limit 2: " in r.output and "give --limit 3 or more" in r.output, r.output
    r = runner.invoke(app, ["rate", "results", "-w", str(ws), "--out", str(tmp_path / "res.json")])
    assert r.exit_code == 0, r.output
    assert "no rated pairs yet (0 outputs with all their reads; every value null): alpha, beta, gamma" in r.output
    doc = json.loads((tmp_path / "res.json").read_text())
    assert {t["tool"]: t["reason"] for t in doc["tools"]} == dict.fromkeys(
        ("alpha", "beta", "gamma"), "no rated pairs: 0 of 2 outputs have all their reads")
    assert all(t["meaning_score_mean"] is None for t in doc["tools"])
