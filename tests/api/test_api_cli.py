"""The command line against the fake vendor server: score (API detector), humanize, generate, readability."""

from __future__ import annotations

import json

from typer.testing import CliRunner
from vendor_fakes import humanized, value_for

from veribench.cli.main import app

FAST_SET = ["--set", "rate_per_minute=0", "--set", "backoff=0.01"]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_cli_score_humanize_generate_readability(tmp_path, fake, keys, real_texts, data_dir):
    runner = CliRunner()
    inp = tmp_path / "in.jsonl"
    _jsonl(inp, [{"id": f"d{i}", "text": t} for i, t in enumerate(real_texts[:4])] + [{"id": "short", "text": "Too short."}])
    ws = tmp_path / "ws"

    # API detector through the score command (dry run first: nothing sent)
    r = runner.invoke(app, ["score", "--detector", "winston", "--set", f"base_url={fake.url}", *FAST_SET,
                            "--input", str(inp), "--out", str(tmp_path / "s.jsonl"), "-w", str(ws), "--dry-run",
                            "--no-progress"])
    assert r.exit_code == 0, r.output
    assert fake.calls == []
    r = runner.invoke(app, ["score", "--detector", "winston", "--set", f"base_url={fake.url}", *FAST_SET,
                            "--input", str(inp), "--out", str(tmp_path / "s.jsonl"), "-w", str(ws), "--no-progress"])
    assert r.exit_code == 0, r.output
    rows = {x["id"]: x for x in map(json.loads, (tmp_path / "s.jsonl").read_text().splitlines())}
    assert rows["short"]["status"] == "too_short"
    for i, t in enumerate(real_texts[:4]):
        assert rows[f"d{i}"]["ai_probability"] == value_for(t)

    # humanize: dry run, then a run, then a rerun that sends nothing
    args = ["humanize", "--humanizer", "stealthgpt", "--set", f"base_url={fake.url}", *FAST_SET, "--input", str(inp),
            "--out", str(tmp_path / "h.jsonl"), "-w", str(ws), "--no-progress"]
    n = len(fake.calls)
    r = runner.invoke(app, args + ["--dry-run"])
    assert r.exit_code == 0, r.output
    assert len(fake.calls) == n and "estimated cost" in r.output and keys["stealthgpt"] not in r.output
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    out = {x["id"]: x for x in map(json.loads, (tmp_path / "h.jsonl").read_text().splitlines())}
    assert out["d0"]["status"] == "ok" and out["d0"]["output"] == humanized(real_texts[0])
    n = len(fake.calls)
    assert runner.invoke(app, args).exit_code == 0 and len(fake.calls) == n

    # a key given as a setting is refused with a clear message
    r = runner.invoke(app, ["humanize", "--humanizer", "hix", "--set", "api_key=abc", "--input", str(inp),
                            "-w", str(ws)])
    assert r.exit_code == 1 and "VERIBENCH_HIX_API_KEY" in r.output

    # generate from the cycle's prompts, then rate readability
    prompts = data_dir / "humanizerbench" / "July 2026" / "prompts.json"
    r = runner.invoke(app, ["generate", "--prompts", str(prompts), "--set", f"base_url={fake.url}/v1",
                            "--set", "model=m", "--set", "provider=vllm", "--samples", "1", "--out",
                            str(tmp_path / "g.jsonl"), "-w", str(ws)])
    assert r.exit_code == 0, r.output
    gen = [json.loads(x) for x in (tmp_path / "g.jsonl").read_text().splitlines()]
    assert len(gen) == len(json.loads(prompts.read_text())) and gen[0]["generation"]["server_model"] == "fake-served/m"
    r = runner.invoke(app, ["readability", "--set", f"base_url={fake.url}/v1", "--set", "model=j", "--input", str(inp),
                            "--out", str(tmp_path / "r.jsonl"), "-w", str(ws)])
    assert r.exit_code == 0, r.output
    rr = {x["id"]: x["readability"] for x in map(json.loads, (tmp_path / "r.jsonl").read_text().splitlines())}
    assert rr["d1"] == value_for(real_texts[1])
