"""A protocol entry that matches several stored detector specs is refused at `protocol
commit`, before anything is fixed, with the exact TOML that picks each (issue 25): the
README's own order (import liang2023, then `import scores --detector GPTZero`) made
`evaluate` refuse the bundled examples/protocols/liang2023.toml after it was committed, and
undoing a commit costs an amendment. Likewise an entry that names neither a registry plug-in
nor a stored spec but is close to one (a misspelt ``name = "zipy"``) is refused at commit with
the registry's one-line "did you mean" message; it used to commit, and only `evaluate` refused."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path

from typer.testing import CliRunner

from veribench.cli.main import app

REPO = Path(__file__).resolve().parents[2]
LIANG = REPO / "src" / "veribench" / "data" / "demo" / "liang2023"
PROTOCOL = REPO / "examples" / "protocols" / "liang2023.toml"


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _events(ws: Path) -> list[str]:
    r = run("log", "show", "-w", ws)
    assert r.exit_code == 0, r.output
    return [x.split()[2] for x in r.output.splitlines() if x.strip() and x.split()[0].isdigit()]


def test_an_ambiguous_detector_is_refused_at_commit_with_the_toml_that_picks_each(tmp_path: Path):
    ws = tmp_path / "ws"
    assert run("import", "liang2023", LIANG, "-w", ws, "-q").exit_code == 0
    out = tmp_path / "d.jsonl"
    assert run("export", "documents", "-w", ws, "-o", out).exit_code == 0
    ids = [json.loads(x)["id"] for x in out.read_text(encoding="utf-8").splitlines()[:5]]
    scores = tmp_path / "vendor_scores.csv"
    scores.write_text("id,score\n" + "".join(f"{d},0.{i + 1}\n" for i, d in enumerate(ids)), encoding="utf-8")
    r = run("import", "scores", scores, "--detector", "GPTZero", "-w", ws, "-q")
    assert r.exit_code == 0, r.output
    before = _events(ws)

    r = run("protocol", "commit", PROTOCOL, "-w", ws)
    assert r.exit_code == 1, r.output
    line = r.output.strip()
    assert line.startswith("error: protocol ") and "detector 'GPTZero' matches 2 stored specs" in line, line
    picks = re.findall(r"settings = \{[^}]*\}", line)
    assert sorted(picks) == ['settings = { source = "imported" }', 'settings = { source = "liang2023" }'], line
    assert before[-2:] == ["import", "scan_batch"] and _events(ws) == before  # nothing committed

    # the printed TOML, pasted into the entry, picks one spec: commit and evaluate both work
    text = PROTOCOL.read_text(encoding="utf-8")
    fixed = tmp_path / "liang2023.toml"
    fixed.write_text(text.replace('name = "GPTZero"\n', 'name = "GPTZero"\n' + 'settings = { source = "liang2023" }\n', 1),
                     encoding="utf-8")
    r = run("protocol", "commit", fixed, "-w", ws)
    assert r.exit_code == 0 and "committed:" in r.output, r.output
    assert len(_events(ws)) > len(before)
    res = tmp_path / "r.json"
    r = run("evaluate", "-w", ws, "-p", fixed, "--json", res, "-q")
    assert r.exit_code == 0, r.output
    assert any(t["detector"] == "GPTZero" and t["human_n"] > 5 for t in json.loads(res.read_text())["table1"])


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    assert run("import", "liang2023", LIANG, "-w", ws, "-q").exit_code == 0
    return ws


def _refused(ws: Path, proto: Path, misspelt: str, meant: str) -> None:
    before = _events(ws)
    r = run("protocol", "commit", proto, "-w", ws)
    assert r.exit_code == 1, r.output
    line = r.output.strip()
    assert "\n" not in line and "Traceback" not in line, line
    assert line.startswith("error: protocol ") and f"unknown detector {misspelt!r}" in line, line
    assert f"Did you mean {meant!r}" in line, line
    assert _events(ws) == before  # nothing committed


def test_a_misspelt_plugin_is_refused_at_commit_with_did_you_mean(tmp_path: Path):
    ws = _ws(tmp_path)
    p = tmp_path / "p.toml"
    p.write_text(PROTOCOL.read_text(encoding="utf-8") + '\n[[detectors]]\nname = "zipy"\n', encoding="utf-8")
    _refused(ws, p, "zipy", "zippy")


def test_a_misspelt_stored_spec_in_an_amendment_is_refused(tmp_path: Path):
    ws = _ws(tmp_path)
    text = PROTOCOL.read_text(encoding="utf-8")
    r = run("protocol", "commit", PROTOCOL, "-w", ws)
    assert r.exit_code == 0 and "committed:" in r.output, r.output
    sha = hashlib.sha256(PROTOCOL.read_bytes()).hexdigest()
    today = datetime.now(UTC).date().isoformat()
    v2 = tmp_path / "v2.toml"
    v2.write_text(text.replace('name = "Sapling"', 'name = "Saplin"', 1)
                  + f'\n[[amendments]]\ndate = "{today}"\nsupersedes = "{sha}"\nsummary = "typo"\n', encoding="utf-8")
    _refused(ws, v2, "Saplin", "Sapling")
