"""The paraphrase attack and paraphrased / humanized arms against a fake
OpenAI-compatible server (a real HTTP server on 127.0.0.1, tests/api/vendor_fakes.py):
RAID's 3-sentence windows with the output so far as context, spans that reproduce the
output, the cached, budgeted, resumable execution layer, and the full spec stored."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from vendor_fakes import FAST, VENDOR_KEYS, FakeVendors

from veribench import attacks
from veribench.corpus.edits import apply_edits, sentence_spans

OPS = {k: FAST[k] for k in ("backoff", "backoff_max", "rate_per_minute", "timeout")}


@pytest.fixture()
def fake():
    srv = FakeVendors()
    yield srv
    srv.close()


def test_paraphrase_windows_and_spans_on_1000_texts(texts, fake):
    atk = attacks.create("paraphrase", {"base_url": fake.url + "/v1", "model": "para-1", **OPS})
    assert atk.params.humanizer == "llm-paraphraser" and "timeout" not in atk.record(5)["params"]
    res = atk.run(texts, [0] * len(texts), ws=None, seed=5)
    for t, r in zip(texts, res):
        assert r.status == "ok"
        assert apply_edits(t, r.edits) == r.text
        # RAID: one request per window of sent_interval = 3 sentences of the whitespace-normalised text
        assert r.stats["windows"] == math.ceil(len(sentence_spans(" ".join(t.split()))) / 3)
    calls = [c for c in fake.calls if c["vendor"] == "openai"]
    assert len(calls) >= sum(r.stats["windows"] for r in res)
    first = calls[0]["json"]
    assert first["seed"] == 5 and first["top_p"] == 0.75 and first["temperature"] == 1.0
    assert "Lexical diversity: 60/100" in first["messages"][0]["content"]
    assert "Order diversity: 0/100" in first["messages"][0]["content"]
    assert first["messages"][1]["content"].startswith("<sent> ")
    # later windows carry the output so far as context (include_prefix)
    later = [c["json"]["messages"][1]["content"] for c in calls if not c["json"]["messages"][1]["content"]
             .startswith("<sent>")]
    assert later and all(" <sent> " in u for u in later)


def test_paraphrase_attack_in_a_workspace_is_cached_and_resumable(fdg_workspace, fake):
    ws = fdg_workspace
    params = {"base_url": fake.url + "/v1", "model": "para-1", **OPS}
    plan = attacks.attack_documents(ws, "paraphrase", params, seed=1, label="ai", dry_run=True)
    assert plan.planned and not list(fake.calls) and plan.derived == 0
    words = sum(len(t.split()) for (t,) in ws.query("SELECT text FROM documents WHERE label='ai' ORDER BY doc_id"))
    rep = attacks.attack_documents(ws, "paraphrase", params, seed=1, label="ai", max_spend=words / 2)
    assert rep.stopped_for_budget and 0 < rep.derived < 20 and rep.not_run == 20 - rep.derived
    n_calls = len(fake.calls)
    rep2 = attacks.attack_documents(ws, "paraphrase", params, seed=1, label="ai")
    assert rep2.already_present == rep.derived and rep2.derived == 20 - rep.derived
    rep3 = attacks.attack_documents(ws, "paraphrase", params, seed=1, label="ai")
    assert rep3.derived == 0 and rep3.already_present == 20
    assert len(fake.calls) > n_calls
    (prov,) = ws.query("SELECT provenance FROM documents WHERE json_extract_string(tags, '$.attack')='paraphrase' "
                       "LIMIT 1")[0]
    prov = json.loads(prov)
    assert prov["attack"]["name"] == "paraphrase" and prov["attack"]["seed"] == 1
    assert prov["derivation"]["humanizer"]["name"] == "llm-paraphraser"
    assert prov["derivation"]["humanizer"]["settings"]["lex_diversity"] == 60


def test_derive_arm_with_llm_paraphraser_and_a_vendor_humanizer(fdg_workspace, fake, monkeypatch):
    ws = fdg_workspace
    rep = attacks.humanize_arm(ws, "llm-paraphraser", {"base_url": fake.url + "/v1", "model": "m", **OPS},
                               new_arm="C-para", label="ai", seed=2)
    assert rep.derived == 20 and rep.kind == "paraphrase"
    monkeypatch.setenv("VERIBENCH_UNDETECTABLE_API_KEY", VENDOR_KEYS["undetectable"])
    rep = attacks.humanize_arm(ws, "undetectable", {"base_url": fake.url, **FAST}, new_arm="C-undetectable",
                               label="ai")
    assert rep.derived == 20 and rep.kind == "humanize"
    rows = ws.query("SELECT doc_id, arm, label, text, provenance, tags FROM documents WHERE arm = 'C-undetectable'")
    src = dict(ws.query("SELECT doc_id, text FROM documents"))
    for _did, _arm, label, text, prov, tags in rows:
        prov, tags = json.loads(prov), json.loads(tags)
        assert label == "ai" and tags["derivation"] == "humanize" and tags["attack"] == "undetectable"
        assert apply_edits(src[prov["source_id"]], prov["edits"]) == text
        spec = prov["derivation"]["spec"]
        assert spec["kind"] == "humanizer" and spec["name"] == "undetectable" and "settings" in spec
        assert VENDOR_KEYS["undetectable"] not in json.dumps(prov)
    assert set(attacks.pairs(ws, attack="undetectable").values()) <= set(src)
    assert len(attacks.pairs(ws, derivation="paraphrase")) == 20


def test_paraphrase_failures_store_nothing(fdg_workspace, fake):
    ws = fdg_workspace
    (text,) = ws.query("SELECT text FROM documents WHERE label='ai' ORDER BY doc_id LIMIT 1")[0]
    first_window = attacks.create("paraphrase").humanizer().windows(text)[0]
    fake.script[f"<sent> {first_window} </sent>"] = [{"http": 401, "body": {"error": "no"}}] * 10
    rep = attacks.attack_documents(ws, "paraphrase", {"base_url": fake.url + "/v1", **OPS}, label="ai")
    assert rep.failed == {"auth": 1} and rep.derived == 19


def test_keys_are_refused_as_settings():
    from veribench.attacks import AttackError

    with pytest.raises(AttackError, match="environment") as e:
        attacks.create("paraphrase", {"api_key": "sk-secret-123"})
    assert "sk-secret-123" not in str(e.value)


def test_cli_derive_arm_and_paraphrase_dry_run(tmp_path, data_dir, fake):
    from typer.testing import CliRunner

    from veribench.cli.main import app

    runner = CliRunner()
    ws = str(tmp_path / "ws")
    r = runner.invoke(app, ["import", "fastdetectgpt", str(data_dir / "fastdetectgpt"), "--sets", "pubmed_davinci",
                            "--pairs", "4", "-w", ws, "-q"])
    assert r.exit_code == 0, r.output
    base = ["--set", f"base_url={fake.url}/v1", "--set", "model=m", "--set", "timeout=5"]
    r = runner.invoke(app, ["attack", "paraphrase", "-w", ws, "--label", "ai", "--dry-run", *base])
    assert r.exit_code == 0, r.output
    assert "would derive 4 document(s)" in r.output and '"calls"' in r.output and not fake.calls
    r = runner.invoke(app, ["derive-arm", "-H", "llm-paraphraser", "--name", "C-para", "-w", ws, "--label", "ai",
                            "--seed", "9", *base])
    assert r.exit_code == 0, r.output
    assert "llm-paraphraser: derived 4 document(s) from 4 source(s) (arm C-para)" in r.output
    assert all(c["json"]["seed"] == 9 for c in fake.calls)
