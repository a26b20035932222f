"""Commercial detector adapters against the fake vendor server (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import pytest
from vendor_fakes import FAST, value_for

from veribench import registry
from veribench.detectors.pipeline import RunStats, score_texts
from veribench.hashing import text_sha256

# vendor -> (extra settings, P(AI) expected from the fake's value v per the vendor's documented scale)
VENDORS = {
    "gptzero": ({}, lambda v: round(v - round(v * 0.25, 6), 6)),
    "originality": ({}, lambda v: v),
    "copyleaks": ({}, lambda v: v),
    "winston": ({}, lambda v: round(1 - round(100 * (1 - v)) / 100, 12)),
    "zerogpt": ({}, lambda v: v),
    "sapling": ({}, lambda v: v),
    "pangram": ({}, lambda v: round(v * 0.8, 6)),
}
SHORT = "Short note: the bus to Carrow leaves at nine, bring the red folder and a sandwich."
MIN_LENGTH_VENDORS = ["gptzero", "originality", "copyleaks", "winston"]


def make(name, fake, **kw):
    extra = dict(VENDORS[name][0])
    if name == "copyleaks":
        extra["id_base_url"] = fake.url
    return registry.create("detector", name, {"base_url": fake.url, **FAST, **extra, **kw})


@pytest.mark.parametrize("name", sorted(VENDORS))
def test_success_normalises_and_keeps_raw(name, fake, keys, real_texts):
    det = make(name, fake)
    t = real_texts[0]
    [r] = det.score_batch([t])
    assert r.status == "ok", r.detail
    assert r.ai_probability == pytest.approx(VENDORS[name][1](value_for(t)), abs=1e-9)
    if name not in ("sapling", "zerogpt"):  # these return no model or version string
        assert r.vendor_version and r.vendor_version.startswith("fake")
    assert isinstance(r.detail["response"], dict)  # raw response kept
    assert fake.count(name, t) == 1
    assert r.detail["attempts"] >= 1


@pytest.mark.parametrize("name", MIN_LENGTH_VENDORS)
def test_too_short_sends_nothing(name, fake, keys):
    det = make(name, fake)
    [r] = det.score_batch([SHORT])
    assert r.status == "too_short"
    assert r.ai_probability is None and r.raw is None
    assert fake.calls == []


@pytest.mark.parametrize("name", sorted(VENDORS))
def test_out_of_credits_is_not_retried(name, fake, keys, real_texts):
    fake.credits = 5  # words
    det = make(name, fake)
    t = real_texts[1]
    [r] = det.score_batch([t])
    assert r.status == "no_credits", r.detail
    assert fake.count(name, t) == 1


@pytest.mark.parametrize("name", sorted(VENDORS))
def test_429_then_success(name, fake, keys, real_texts):
    t = real_texts[2]
    fake.script[t] = [{"http": 429, "body": {"error": "Too many requests"}}]
    det = make(name, fake)
    [r] = det.score_batch([t])
    assert r.status == "ok", r.detail
    assert r.ai_probability == pytest.approx(VENDORS[name][1](value_for(t)))
    assert fake.count(name, t) == 2
    assert r.detail["retried_for"] == ["rate_limited"]


@pytest.mark.parametrize("name", sorted(VENDORS))
def test_5xx_retried_then_recorded_as_site_down(name, fake, keys, real_texts):
    t = real_texts[3]
    fake.script[t] = [{"http": 503, "body": {"error": "down"}}] * 3
    det = make(name, fake, max_attempts=3)
    [r] = det.score_batch([t])
    assert r.status == "site_down"
    assert fake.count(name, t) == 3
    # a single 5xx followed by success is retried to success
    t2 = real_texts[4]
    fake.script[t2] = [{"http": 502, "body": "Bad Gateway"}]
    [r2] = det.score_batch([t2])
    assert r2.status == "ok" and fake.count(name, t2) == 2


@pytest.mark.parametrize("name", sorted(VENDORS))
def test_malformed_body_is_bad_response_not_retried(name, fake, keys, real_texts):
    t = real_texts[5]
    fake.script[t] = [{"raw": "<html>oops</html>"}]
    det = make(name, fake)
    [r] = det.score_batch([t])
    assert r.status == "bad_response"
    assert fake.count(name, t) == 1
    # a JSON body without the score field is also bad_response
    t2 = real_texts[6]
    fake.script[t2] = [{"http": 200, "body": {"unexpected": True}}]
    [r2] = det.score_batch([t2])
    assert r2.status == "bad_response"


@pytest.mark.parametrize("name", sorted(VENDORS))
def test_wrong_key_is_auth_and_echo_is_redacted(name, fake, keys, real_texts, monkeypatch):
    wrong = "WRONG-KEY-SENTINEL-123456"
    monkeypatch.setenv(f"VERIBENCH_{name.upper()}_API_KEY", wrong)
    det = make(name, fake)
    [r] = det.score_batch([real_texts[7]])
    assert r.status == "auth"
    assert wrong not in repr(r)  # the fake echoes the key it received; the adapter redacts it
    assert len(fake.calls) == 1  # never retried


def test_missing_key_sends_nothing(fake, monkeypatch, real_texts):
    monkeypatch.delenv("VERIBENCH_WINSTON_API_KEY", raising=False)
    [r] = make("winston", fake).score_batch([real_texts[0]])
    assert r.status == "auth" and "VERIBENCH_WINSTON_API_KEY" in r.detail["reason"]
    assert fake.calls == []


def test_key_is_never_a_setting(fake):
    from veribench.detectors.api.http import ConfigError

    with pytest.raises(ConfigError, match="VERIBENCH_GPTZERO_API_KEY"):
        registry.create("detector", "gptzero", {"api_key": "abc"})
    with pytest.raises(ConfigError, match="credentials"):
        registry.create("detector", "gptzero", {"base_url": "https://user:pw@api.gptzero.me"})


def test_pangram_polls_and_records_failed_task(fake, keys, real_texts):
    fake.polls_before_done = 3
    det = make("pangram", fake)
    t, bad = real_texts[8], real_texts[9]
    fake.script[bad] = [{"task_fail": True}]
    ok, failed = det.score_batch([t, bad])
    assert ok.status == "ok" and ok.verdict in ("AI", "Human") and ok.vendor_version == "fake-pangram-3"
    polls = [c for c in fake.calls if c["vendor"] == "pangram-poll"]
    assert len(polls) == 8  # 4 polls per task (3 running + 1 final)
    assert failed.status == "site_down" and "failed" in failed.detail["reason"]
    # a task that never finishes is a timeout
    fake.polls_before_done = 10 ** 6
    slow = make("pangram", fake, poll_timeout=0.2)
    [r] = slow.score_batch([real_texts[10]])
    assert r.status == "timeout"


def test_pangram_rule_including_assisted(fake, keys, real_texts):
    det = make("pangram", fake, p_ai_rule="ai_plus_assisted")
    [r] = det.score_batch([real_texts[0]])
    assert r.ai_probability == pytest.approx(value_for(real_texts[0]))


def test_copyleaks_logs_in_once_and_refreshes_expired_token(fake, keys, real_texts):
    det = make("copyleaks", fake)
    rs = det.score_batch(real_texts[:3])
    assert [r.status for r in rs] == ["ok"] * 3 and fake.logins == 1
    fake.expire_tokens_after = 3  # the server now rejects the old token: one re-login, then success
    [r] = det.score_batch([real_texts[3]])
    assert r.status == "ok" and fake.logins == 2
    body = [c for c in fake.calls if c["vendor"] == "copyleaks"][-1]["json"]
    assert body["sandbox"] is False and body["sensitivity"] == 2


def test_winston_25_is_075(fake, keys, real_texts):
    t = real_texts[0]
    fake.script[t] = [{"http": 200, "body": {"score": 25, "version": "4.11", "sentences": []}}]
    [r] = make("winston", fake).score_batch([t])
    assert r.status == "ok"
    assert r.raw == 25 and r.scale == "human_0_100" and r.direction == "higher_human"
    assert r.ai_probability == pytest.approx(0.75)
    assert r.verdict == "likely AI"  # Winston's 20-40 band


def test_winston_language_is_sent_only_when_set(fake, keys, real_texts):
    make("winston", fake).score_batch([real_texts[0]])
    make("winston", fake, language="de").score_batch([real_texts[1]])
    sent = [c["json"] for c in fake.calls if c["vendor"] == "winston"]
    assert "language" not in sent[0] and sent[1]["language"] == "de"
    assert sent[0]["sentences"] is False


def test_gptzero_truncates_long_documents_and_records_it(fake, keys, real_texts):
    long = (" ".join(real_texts) + " ") * 8
    assert len(long) > 50_000
    [r] = make("gptzero", fake).score_batch([long])
    assert r.status == "ok" and r.detail["truncated"] is True and r.detail["chars_submitted"] == 50_000
    assert len(fake.calls[0]["json"]["document"]) == 50_000


def test_retry_after_a_connection_reset(fake, keys, real_texts):
    t = real_texts[0]
    fake.script[t] = [{"reset": True}]
    [r] = make("sapling", fake).score_batch([t])
    assert r.status == "ok" and r.detail["retried_for"] == ["site_down"]


def test_pipeline_budget_and_dry_run(fake, keys, real_texts, workspace):
    det = make("winston", fake)
    texts = real_texts[:6]
    st = RunStats()
    res = score_texts(workspace, det, texts, dry_run=True, stats=st)
    assert res == {} and fake.calls == [] and len(st.planned) == 6
    assert st.planned[0]["request"]["json"]["text"].startswith("<text:")
    words = [len(t.split()) for t in texts]
    budget = sum(words[:3]) + words[3] - 1  # three fit, the fourth would exceed
    st = RunStats()
    res = score_texts(workspace, det, texts, max_spend=budget, stats=st)
    assert len(res) == 3 and st.stopped_for_budget and st.spent <= budget
    assert len(fake.calls) == 3
    # a rerun without --max-spend keeps the run's stored cap: nothing more is sent
    st = RunStats()
    res = score_texts(workspace, det, texts, stats=st)
    assert len(res) == 3 and st.stopped_for_budget and len(fake.calls) == 3 and st.budget_cap == budget
    # resuming with more budget pays only for the rest; the ledger covers both runs
    st = RunStats()
    res = score_texts(workspace, det, texts, max_spend=sum(words), stats=st)
    assert len(res) == 6 and len(fake.calls) == 6
    assert st.spent_before == sum(words[:3]) and st.spent_total == sum(words) and not st.stopped_for_budget
    assert {text_sha256(t) for t in texts} == set(res)


@pytest.mark.parametrize("name", sorted(VENDORS))
def test_empty_text_is_too_short_without_a_call(name, fake, keys):
    rs = make(name, fake).score_batch(["", "   \n\t "])
    assert [r.status for r in rs] == ["too_short", "too_short"]
    assert fake.calls == []


def test_settings_keep_json_types_and_specs_name_only_changes(fake):
    from veribench.detectors.api.http import ConfigError

    for name, bad in (("copyleaks", {"sandbox": "false"}), ("copyleaks", {"sensitivity": True}),
                      ("gptzero", {"multilingual": "false"}), ("gptzero", {"p_ai_rule": "mean"})):
        with pytest.raises(ConfigError):
            registry.create("detector", name, bad)
    with pytest.raises(ConfigError, match="rephrase"):
        registry.create("humanizer", "stealthgpt", {"rephrase": "false"})
    # defaults are part of the adapter version; the spec lists only what differs
    assert registry.create("detector", "gptzero", {}).spec.label == "gptzero"
    a = registry.create("detector", "winston", {"base_url": fake.url, "language": "de", "timeout": 3})
    b = registry.create("detector", "winston", {"base_url": fake.url, "language": "de", "timeout": 9})
    assert a.spec.hash == b.spec.hash  # operational settings never change the idempotency key
    assert a.spec.settings == {"base_url": fake.url, "language": "de"}
    assert registry.create("detector", "winston", {"min_chars": 500}).spec.hash != \
        registry.create("detector", "winston", {}).spec.hash
