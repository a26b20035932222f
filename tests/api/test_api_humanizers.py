"""Humanizer adapters, humanize_texts, the LLM client/judge/generation, against the fake server."""

from __future__ import annotations

import json

import pytest
from vendor_fakes import FAST, humanized, value_for

from veribench import registry
from veribench.detectors.pipeline import RunStats
from veribench.errors import InputError
from veribench.hashing import text_sha256
from veribench.humanizers.pipeline import cached_humanizations, humanize_texts

VENDORS = ["undetectable", "stealthgpt", "writehuman", "hix", "humbot"]
POLLED = {"undetectable", "hix", "humbot"}


def make(name, fake, **kw):
    return registry.create("humanizer", name, {"base_url": fake.url, **FAST, **kw})


@pytest.mark.parametrize("name", VENDORS)
def test_success(name, fake, keys, real_texts):
    t = real_texts[0]
    [r] = make(name, fake).humanize_batch([t])
    assert r.status == "ok", r.detail
    assert r.output == humanized(t)
    assert fake.count(name, t) == 1
    if name in POLLED:
        assert any(c["vendor"] == f"{name}-poll" for c in fake.calls)


@pytest.mark.parametrize("name", VENDORS)
def test_out_of_credits(name, fake, keys, real_texts):
    fake.credits = 3
    t = real_texts[1]
    [r] = make(name, fake).humanize_batch([t])
    assert r.status == "no_credits", r.detail
    assert r.output is None and fake.count(name, t) == 1


@pytest.mark.parametrize("name", VENDORS)
def test_429_then_success_and_5xx(name, fake, keys, real_texts):
    t, t2 = real_texts[2], real_texts[3]
    fake.script[t] = [{"http": 429, "body": {"error": "slow down"}}]
    fake.script[t2] = [{"http": 500, "body": {"error": "boom"}}] * 2
    h = make(name, fake, max_attempts=2)
    r, r2 = h.humanize_batch([t, t2])
    assert r.status == "ok" and fake.count(name, t) == 2
    assert r2.status == "site_down" and fake.count(name, t2) == 2


@pytest.mark.parametrize("name", VENDORS)
def test_malformed_body(name, fake, keys, real_texts):
    t = real_texts[4]
    fake.script[t] = [{"raw": "not json at all"}]
    [r] = make(name, fake).humanize_batch([t])
    assert r.status == "bad_response" and fake.count(name, t) == 1


@pytest.mark.parametrize("name", sorted(POLLED))
def test_polling_and_failed_task(name, fake, keys, real_texts):
    fake.polls_before_done = 2
    t, bad = real_texts[5], real_texts[6]
    fake.script[bad] = [{"task_fail": True}]
    r, failed = make(name, fake).humanize_batch([t, bad])
    assert r.status == "ok" and r.output == humanized(t)
    assert failed.status == "site_down" and failed.output is None


def test_undetectable_too_short_and_payment_required(fake, keys):
    h = make("undetectable", fake)
    [r] = h.humanize_batch(["Too short to humanize."])
    assert r.status == "too_short" and fake.calls == []


def test_hix_err_code_in_http_200(fake, keys, real_texts):
    t = real_texts[0]
    fake.script[t] = [{"http": 200, "body": {"err_code": 1005, "err_msg": "input contains forbidden content"}}]
    [r] = make("hix", fake).humanize_batch([t])
    assert r.status == "refused" and "1005" in r.detail["reason"]


def test_stealthgpt_keeps_json_types(fake, keys, real_texts):
    make("stealthgpt", fake).humanize_batch([real_texts[0]])
    body = fake.calls[0]["json"]
    assert body["rephrase"] is True and body["mode"] == "High"


def test_humanize_texts_caches_resumes_and_budgets(fake, keys, real_texts, workspace):
    h = make("writehuman", fake)
    texts = real_texts[:5] + [real_texts[0]]  # a duplicate is sent once
    st = RunStats()
    humanize_texts(workspace, h, texts, dry_run=True, stats=st)
    assert fake.calls == [] and len(st.planned) == 5
    words = [len(t.split()) for t in real_texts[:5]]
    st = RunStats()
    res = humanize_texts(workspace, h, texts, max_spend=sum(words[:2]), stats=st)
    assert len(res) == 2 and st.stopped_for_budget and len(fake.calls) == 2
    res = humanize_texts(workspace, h, texts, max_spend=sum(words))
    assert len(res) == 5 and len(fake.calls) == 5  # the two stored are not sent again
    stored = cached_humanizations(workspace, h.spec.hash, [text_sha256(t) for t in texts])
    assert {s: r.output for s, r in stored.items()} == {text_sha256(t): humanized(t) for t in real_texts[:5]}
    # a stored call failure is never final: every run sends the text again, until it is answered
    t = real_texts[6]
    fake.script[t] = [{"http": 503}] * 5
    h2 = make("writehuman", fake, max_attempts=1)
    assert humanize_texts(workspace, h2, [t])[text_sha256(t)].status == "site_down"
    assert humanize_texts(workspace, h2, [t])[text_sha256(t)].status == "site_down"
    assert fake.count("writehuman", t) == 2
    fake.script[t] = []
    assert humanize_texts(workspace, h2, [t])[text_sha256(t)].status == "ok"
    assert humanize_texts(workspace, h2, [t])[text_sha256(t)].status == "ok" and fake.count("writehuman", t) == 3


# -- manual ------------------------------------------------------------------------------

def test_manual_csv_and_json(tmp_path, real_texts, workspace):
    import csv

    p = tmp_path / "out.csv"
    with p.open("w", newline="") as f:
        w = csv.DictWriter(f, ["humanizer", "input_text", "output_text", "date", "settings", "status"])
        w.writeheader()
        w.writerow({"humanizer": "quillbot-web", "input_text": real_texts[0], "output_text": "Rewritten one.",
                    "date": "2026-11-29", "settings": json.dumps({"mode": "Creative"}), "status": ""})
        w.writerow({"humanizer": "quillbot-web", "input_text": real_texts[1], "output_text": "",
                    "date": "2026-11-29", "settings": "", "status": "refused"})
    h = registry.create("humanizer", "manual", {"path": str(p)})
    assert h.spec.settings["tool"] == "quillbot-web"
    res = humanize_texts(workspace, h, real_texts[:3])
    r0, r1, r2 = (res[text_sha256(t)] for t in real_texts[:3])
    assert r0.status == "ok" and r0.output == "Rewritten one." and r0.detail["settings"] == {"mode": "Creative"}
    assert r0.detail["date"] == "2026-11-29"
    assert r1.status == "refused" and r2.status == "bad_response"
    j = tmp_path / "out.json"
    j.write_text(json.dumps([{"input_sha256": text_sha256(real_texts[0]), "output_text": "X"}]))
    assert registry.create("humanizer", "manual", {"path": str(j)}).humanize_batch([real_texts[0]])[0].output == "X"
    j.write_text(json.dumps([{"input_text": "a", "output_text": "b", "status": "great"}]))
    with pytest.raises(InputError, match=r"record 0, field 'status'"):
        registry.create("humanizer", "manual", {"path": str(j)})


# -- LLM client, llm-humanizer, judge, generation ---------------------------------------

SKILL = """---
name: humanizer
version: 2.1.0
description: Remove signs of AI writing
---

# Humanizer

Rewrite the text so that it reads as written by a person.

## Output format

Give a draft, then a list of changes, then the final version.

## Notes

Keep the meaning.
"""


def test_llm_humanizer_strips_frontmatter_and_records(fake, keys, tmp_path, real_texts, workspace):
    p = tmp_path / "SKILL.md"
    p.write_text(SKILL)
    h = registry.create("humanizer", "llm-humanizer", {"prompt_file": str(p), "base_url": fake.url + "/v1",
                                                       "model": "qwen-test", "provider": "openai", "seed": 7,
                                                       "prompt_commit": "abc1234", **FAST})
    s = h.spec.settings
    assert s["prompt_version"] == "2.1.0" and s["prompt_name"] == "humanizer" and s["prompt_commit"] == "abc1234"
    assert "prompt_file" not in s and len(s["prompt_sha256"]) == 64
    system = h.prompt["prompt"]
    assert not system.startswith("---") and "version: 2.1.0" not in system
    assert "Return only the final rewritten text" in system and "then a list of changes" not in system
    assert "## Notes" in system  # the following section is kept
    t = real_texts[0]
    res = humanize_texts(workspace, h, [t])
    r = res[text_sha256(t)]
    assert r.status == "ok" and r.output == humanized(t)  # <think> block stripped
    assert r.vendor_version == "fake-served/qwen-test"
    call = r.detail["call"]
    assert call["seed"] == 7 and call["sampling"]["temperature"] == 0.0 and call["provider"] == "openai"
    assert call["server_model"] == "fake-served/qwen-test" and call["date"]
    sent = fake.calls[0]
    assert sent["headers"]["authorization"] == "Bearer " + keys["openai"]
    assert sent["json"]["messages"][0]["content"] == system


def test_chat_client_cache_and_generation(fake, keys, workspace, data_dir):
    from veribench.llm.client import ChatClient
    from veribench.llm.generate import generate_sources

    prompts = json.loads((data_dir / "humanizerbench" / "July 2026" / "prompts.json").read_text())[:3]
    c = ChatClient(base_url=fake.url + "/v1", model="m1", provider="vllm", temperature=0.7, top_p=0.9,
                   max_tokens=600, **FAST)
    recs = generate_sources(c, prompts, workspace, samples=2, seed=10)
    assert len(recs) == 6 and all(r["status"] == "ok" for r in recs)
    g = recs[1]["generation"]
    assert g["seed"] == 11 and g["sampling"] == {"temperature": 0.7, "top_p": 0.9, "max_tokens": 600, "seed": 11}
    assert g["model"] == "m1" and g["server_model"] == "fake-served/m1" and g["provider"] == "vllm"
    assert g["messages"][-1]["content"] == prompts[0]["resolved"]
    assert recs[1]["text"] == f"Generated for [{prompts[0]['resolved']}] with seed 11"
    n = len(fake.calls)
    again = generate_sources(c, prompts, workspace, samples=2, seed=10)
    assert len(fake.calls) == n  # all from the workspace cache
    assert [r["text"] for r in again] == [r["text"] for r in recs]


def test_readability_judge(fake, keys, workspace, real_texts):
    from veribench.llm.judge import USER_TEMPLATE, parse_rating, readability

    settings = {"base_url": fake.url + "/v1", "model": "judge-m", "provider": "ollama", **FAST}
    texts = real_texts[:3]
    got = readability(settings, texts, workspace)
    assert got == [value_for(t) for t in texts]
    sent = fake.calls[0]["json"]
    assert sent["temperature"] == 0.0 and sent["seed"] == 0
    n = len(fake.calls)
    assert readability(settings, texts, workspace) == got and len(fake.calls) == n  # rated once per text
    assert parse_rating('<think>hmm</think> {"readability": 0.8}') == 0.8
    assert parse_rating("I'd say 0.35.") == 0.35
    assert parse_rating('{"readability": 7}') is None  # off-scale is a failed rating, never clamped
    assert parse_rating("no idea") is None
    fake.script[USER_TEMPLATE.format(text=real_texts[5])] = [{"http": 500}] * 5
    assert readability({**settings, "max_attempts": 2}, [real_texts[5]], workspace) == [None]
