"""The joins of issue 12: generate, humanize and cycle outputs imported as corpus arms with one
command each, keeping the generation spec; derived documents follow CONTRACTS.md.

Generation and humanizing run against the fake vendor servers on 127.0.0.1 (real HTTP); the
cycle is the real HumanizerBench July 2026 bundle kept in tests/data.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from vendor_fakes import VENDOR_KEYS, FakeVendors, humanized

from veribench.cli.main import app
from veribench.hashing import text_sha256

FAST = ["--set", "rate_per_minute=0", "--set", "backoff=0.01", "--set", "max_attempts=1"]
JULY = Path(__file__).resolve().parents[1] / "data" / "humanizerbench" / "July 2026"


@pytest.fixture()
def fake(monkeypatch):
    for v, k in VENDOR_KEYS.items():
        monkeypatch.setenv(f"VERIBENCH_{v.upper()}_API_KEY", k)
    srv = FakeVendors()
    yield srv
    srv.close()


def docs_of(ws: Path, where: str = "", params=()) -> dict[str, dict]:
    con = duckdb.connect(str(ws / "veribench.duckdb"), read_only=True)
    try:
        cur = con.execute(f"SELECT * FROM documents {where}", list(params))
        cols = [d[0] for d in cur.description]
        out = {}
        for row in cur.fetchall():
            d = dict(zip(cols, row))
            for k in ("tags", "provenance", "generation"):
                d[k] = json.loads(d[k]) if d[k] else None
            out[d["doc_id"]] = d
        return out
    finally:
        con.close()


def test_generate_then_import_keeps_the_generation_spec(tmp_path, fake):
    prompts = json.loads((JULY / "prompts.json").read_text())[:3]
    pf = tmp_path / "prompts.json"
    pf.write_text(json.dumps(prompts))
    ws, out = tmp_path / "ws", tmp_path / "gen.jsonl"
    r = CliRunner().invoke(app, ["generate", "--prompts", str(pf), "--set", f"base_url={fake.url}/v1", "--set",
                                 "model=m-7b", "--set", "provider=openai", "--set", "temperature=0.7", *FAST,
                                 "--samples", "2", "--seed", "5", "-o", str(out), "-w", str(ws)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["import", "generated", str(out), "--corpus", "gen", "-w", str(ws), "-q"])
    assert r.exit_code == 0, r.output
    docs = docs_of(ws)
    assert len(docs) == 6
    for p in prompts:
        pair = [docs[f"gen/{p['slug']}/{k}"] for k in (0, 1)]
        assert {d["group_key"] for d in pair} == {f"gen/prompt/{p['slug']}"}  # one prompt, one split group
        for k, d in enumerate(pair):
            g = d["generation"]
            assert d["label"] == "ai" and d["arm"] == "C" and d["kind"] == p["category"]
            assert g["model"] == "m-7b" and g["version"] == "fake-served/m-7b"  # the server's model string
            assert g["provider"] == "openai" and g["seed"] == 5 + k and g["temperature"] == 0.7
            assert g["prompt"] == p["resolved"] and g["settings"]["messages"][-1]["content"] == p["resolved"]
            assert g["date"] and g["settings"]["request_sha256"]
            assert d["text"] == f"Generated for [{p['resolved']}] with seed {5 + k}"


def test_generate_exits_non_zero_when_requests_fail_and_import_skips_them(tmp_path, fake):
    prompts = ["Write about rivers.", "Write about mountains.", "Write about deserts."]
    pf = tmp_path / "prompts.json"
    pf.write_text(json.dumps(prompts))
    fake.script["Write about mountains."] = [{"http": 400, "body": {"error": "bad request"}}]
    fake.script["Write about deserts."] = [{"http": 503, "body": {}}]
    ws, out = tmp_path / "ws", tmp_path / "gen.jsonl"
    args = ["generate", "--prompts", str(pf), "--set", f"base_url={fake.url}/v1", "--set", "model=m", *FAST,
            "-o", str(out), "-w", str(ws)]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 1, r.output
    assert "2 of 3 requests failed (refused: 1, site_down: 1)" in r.output
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["status"] for x in rows] == ["ok", "refused", "site_down"]  # every row is written, failures named
    r = CliRunner().invoke(app, ["import", "generated", str(out), "-w", str(ws)])
    assert r.exit_code == 0, r.output
    assert "2 generation request(s) did not succeed" in r.output
    assert list(docs_of(ws)) == ["gen/prompt-0/0"]
    # a rerun retries only the failed requests (answered calls are cached) and now succeeds
    n = len(fake.calls)
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert len(fake.calls) == n + 2


def _source_docs(tmp_path: Path, ws: Path) -> list[dict]:
    samples = json.loads((JULY / "samples.json").read_text())[:4]
    recs = [{"id": f"src-{i}", "text": s["input_text"], "label": "ai", "arm": "C", "group_key": f"topic-{i % 2}",
             "tags": {"writer": "model"}, "generation": {"provider": "openai", "model": s["source_model_slug"],
                                                         "version": "gpt-5.5-2026-06", "temperature": 1.0}}
            for i, s in enumerate(samples)]
    f = tmp_path / "src.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    r = CliRunner().invoke(app, ["import", "jsonl", str(f), "-w", str(ws), "-q"])
    assert r.exit_code == 0, r.output
    return recs


def test_humanize_then_import_as_derived_documents(tmp_path, fake):
    ws = tmp_path / "ws"
    src = _source_docs(tmp_path, ws)
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"id": r["id"], "text": r["text"]}) + "\n" for r in src))
    out = tmp_path / "stealth.jsonl"
    r = CliRunner().invoke(app, ["humanize", "--humanizer", "stealthgpt", "--set", f"base_url={fake.url}", *FAST,
                                 "-i", str(inp), "-o", str(out), "-w", str(ws), "--no-progress"])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert all(x["input_sha256"] == text_sha256(s["text"]) for x, s in zip(rows, src))
    r = CliRunner().invoke(app, ["import", "humanized", str(out), "-w", str(ws), "-q"])
    assert r.exit_code == 0, r.output
    derived = docs_of(ws, "WHERE json_extract_string(tags, '$.derivation') = 'humanize'")
    assert len(derived) == 4
    for s in src:
        (d,) = [d for d in derived.values() if d["provenance"]["source_id"] == s["id"]]
        assert d["doc_id"].startswith(f"{s['id']}/humanize/stealthgpt-")
        assert d["text"] == humanized(s["text"]) and d["label"] == "ai" and d["arm"] == "C"
        assert d["group_key"] == s["group_key"]  # never straddles the calibration split with its source
        assert d["tags"] == {"writer": "model", "derivation": "humanize", "attack": "stealthgpt"}
        g = d["generation"]
        assert {k: g[k] for k in ("provider", "model", "version", "temperature")} == \
            {k: s["generation"][k] for k in ("provider", "model", "version", "temperature")}
        assert g["post_editing"] == f"humanized by stealthgpt ({rows[0]['vendor_version']})"
        assert g["humanizer"]["name"] == "stealthgpt" and g["humanizer"]["vendor_version"] == rows[0]["vendor_version"]
        assert d["provenance"]["humanizer"]["spec_hash"] == rows[0]["spec_hash"]
        assert d["provenance"]["source_text_sha256"] == text_sha256(s["text"])
    # the rubric reads the same marking: every output is a pair to rate
    r = CliRunner().invoke(app, ["rate", "assign", "--from-workspace", "-w", str(ws)])
    assert r.exit_code == 0 and "pairs found: 4" in r.output, r.output
    # importing twice is harmless
    r = CliRunner().invoke(app, ["import", "humanized", str(out), "-w", str(ws), "-q"])
    assert r.exit_code == 0 and "0 documents" in r.output, r.output
    # an arm may be named (C2: lightly edited); another humanizer gives other documents of the same sources
    out2 = tmp_path / "writehuman.jsonl"
    r = CliRunner().invoke(app, ["humanize", "--humanizer", "writehuman", "--set", f"base_url={fake.url}", *FAST,
                                 "-i", str(inp), "-o", str(out2), "-w", str(ws), "--no-progress"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["import", "humanized", str(out2), "--arm", "C2", "-w", str(ws), "-q"])
    assert r.exit_code == 0 and "4 documents" in r.output, r.output
    wh = docs_of(ws, "WHERE json_extract_string(tags, '$.attack') = 'writehuman'")
    assert len(wh) == 4 and {d["arm"] for d in wh.values()} == {"C2"}


def test_humanized_rows_must_match_their_stored_source(tmp_path, fake):
    ws = tmp_path / "ws"
    src = _source_docs(tmp_path, ws)
    row = {"id": src[0]["id"], "humanizer": "stealthgpt", "status": "ok", "output": "Rewritten.",
           "input_sha256": text_sha256("another text")}
    cases = {
        "mismatch.jsonl": (row, "is not the stored text", "input_sha256"),
        "unknown.jsonl": ({**row, "id": "nope", "input_sha256": None}, "is not in the workspace", "id"),
        "noname.jsonl": ({k: v for k, v in row.items() if k != "humanizer"}, "required field", "humanizer"),
    }
    before = docs_of(ws)
    for name, (rec, says, field) in cases.items():
        f = tmp_path / name
        f.write_text(json.dumps(rec) + "\n")
        r = CliRunner().invoke(app, ["import", "humanized", str(f), "-w", str(ws)])
        assert r.exit_code == 1, r.output
        (line,) = [x for x in r.output.splitlines() if x.strip()]
        assert says in line and f"field '{field}'" in line and "record line 1" in line, line
        assert docs_of(ws) == before


def test_cycle_outputs_import_as_arms(tmp_path):
    ws = tmp_path / "ws"
    r = CliRunner().invoke(app, ["import", "cycle", str(JULY), "--humanized-arm", "C-humanized", "-w", str(ws)])
    assert r.exit_code == 0, r.output
    samples = {s["id"]: s for s in json.loads((JULY / "samples.json").read_text())}
    tests = json.loads((JULY / "tests.json").read_text())
    prompts = {p["slug"]: p["resolved"] for p in json.loads((JULY / "prompts.json").read_text())}
    docs = docs_of(ws)
    assert len(docs) == len(samples) + sum(t["status"] == "complete" for t in tests) == 33 + 429
    for sid, s in samples.items():
        d = docs[f"July 2026/sample/{sid}"]
        assert d["label"] == "ai" and d["arm"] == "C" and d["text"] == s["input_text"]
        assert d["generation"]["model"] == s["source_model_slug"] and d["generation"]["date"] == s["generated_at"]
        assert d["generation"]["prompt"] == prompts[s["prompt_slug"]]
        assert d["group_key"] == f"July 2026/prompt/{s['prompt_slug']}"
    for t in tests:
        d = docs[f"July 2026/test/{t['id']}"]
        src = docs[d["provenance"]["source_id"]]
        assert src["doc_id"] == f"July 2026/sample/{t['sample_id']}"
        assert d["text"] == t["output_text"] and d["arm"] == "C-humanized" and d["label"] == "ai"
        assert d["tags"]["derivation"] == "humanize" and d["tags"]["attack"] == t["humanizer_slug"]
        assert d["group_key"] == src["group_key"] and d["generation"]["prompt"] == src["generation"]["prompt"]
        assert d["provenance"]["meaning_preservation"] == t["meaning_preservation"]
    per_tool = {}
    for d in docs.values():
        if d["tags"].get("derivation"):
            per_tool[d["tags"]["attack"]] = per_tool.get(d["tags"]["attack"], 0) + 1
    assert len(per_tool) == 13 and sum(per_tool.values()) == 429


def test_cycle_bundle_problems_are_one_line(tmp_path):
    import shutil

    d = tmp_path / "cyc"
    shutil.copytree(JULY, d)
    tests = json.loads((d / "tests.json").read_text())
    tests[3]["sample_id"] = "no-such-sample"
    (d / "tests.json").write_text(json.dumps(tests))
    r = CliRunner().invoke(app, ["import", "cycle", str(d), "-w", str(tmp_path / "ws")])
    assert r.exit_code == 1
    (line,) = [x for x in r.output.splitlines() if x.strip()]
    assert "tests.json, record 3, field 'sample_id'" in line and "not in samples.json" in line
