"""The command line against the fake vendor server: score (API detector), humanize, generate, readability."""

from __future__ import annotations

import json

from typer.testing import CliRunner
from vendor_fakes import humanized, value_for

from veribench.cli.main import app
from veribench.records import CALL_FAILURES, STATUS_CODES, TEXT_FAILURES, is_final

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
    assert r.exit_code == 1 and "1 of 5 texts failed (too_short: 1)" in r.output, r.output  # the file has every row
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


def test_a_call_failure_is_never_final_and_the_exit_status_says_a_text_failed(tmp_path, fake, keys, real_texts,
                                                                             monkeypatch):
    """Issue 25: a wrong or missing key's `auth` failure was cached as final, so after the
    key was fixed `score` served the failure from the cache ("3 from cache, 0 scored") and
    exited 0. A call failure is sent again by every run; a text failure (too_short) only
    with --retry-failed; the exit status is 1 while any text has no score."""
    runner = CliRunner()
    inp = tmp_path / "in.jsonl"
    _jsonl(inp, [{"id": f"d{i}", "text": t} for i, t in enumerate(real_texts[:3])])
    ws, out = tmp_path / "ws", tmp_path / "s.jsonl"
    args = ["score", "--detector", "winston", "--set", f"base_url={fake.url}", *FAST_SET, "--input", str(inp),
            "--out", str(out), "-w", str(ws), "--no-progress"]
    monkeypatch.setenv("VERIBENCH_WINSTON_API_KEY", "a-wrong-key-set-by-mistake")
    r = runner.invoke(app, args)
    assert r.exit_code == 1 and "3 of 3 texts failed (auth: 3)" in r.output, r.output
    assert "a-wrong-key-set-by-mistake" not in r.output
    assert {x["status"] for x in map(json.loads, out.read_text().splitlines())} == {"auth"}
    sent = len(fake.calls)
    monkeypatch.setenv("VERIBENCH_WINSTON_API_KEY", keys["winston"])  # the key is fixed
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "0 from cache, 3 stored failures sent again, 3 scored, 0 not ok" in r.output
    assert len(fake.calls) == sent + 3
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["ai_probability"] for x in rows] == [value_for(t) for t in real_texts[:3]]
    assert runner.invoke(app, args).exit_code == 0 and len(fake.calls) == sent + 3  # ok stays cached

    # a failure that describes the text stays final unless --retry-failed; both runs exit 1
    _jsonl(inp, [{"id": "short", "text": "Too short."}])
    r = runner.invoke(app, args)
    assert r.exit_code == 1 and "1 of 1 texts failed (too_short: 1)" in r.output and "--retry-failed" in r.output
    r = runner.invoke(app, args)
    assert r.exit_code == 1 and "1 from cache, 0 scored" in r.output, r.output
    r = runner.invoke(app, [*args, "--retry-failed"])
    assert r.exit_code == 1 and "1 stored failures sent again" in r.output, r.output
    assert len(fake.calls) == sent + 3  # too_short is known before any call: nothing sent
    # the log still verifies: each replaced failure is a new leaf, the newest the truth
    r = runner.invoke(app, ["log", "verify", "-w", str(ws)])
    assert r.exit_code == 0, r.output


def test_every_status_is_final_or_retried_in_one_table():
    """One source of truth: each status code is ok, a call failure or a text failure, once."""
    groups = [{"ok"}, set(CALL_FAILURES), set(TEXT_FAILURES)]
    assert set().union(*groups) == set(STATUS_CODES) and sum(map(len, groups)) == len(STATUS_CODES)
    assert all(is_final(s) for s in TEXT_FAILURES) and not any(is_final(s, retry_failed=True) for s in TEXT_FAILURES)
    assert not any(is_final(s) for s in CALL_FAILURES) and is_final("ok", retry_failed=True)
