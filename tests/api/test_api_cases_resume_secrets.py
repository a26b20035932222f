"""Cases c14/c15, kill-and-resume of a paid run, and the sentinel-key test."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from vendor_fakes import COPYLEAKS_EMAIL, FAST, FakeVendors, value_for

from veribench import registry
from veribench.detectors.pipeline import score_texts
from veribench.hashing import text_sha256

HERE = Path(__file__).parent


def make(name, url, **kw):
    extra = {"id_base_url": url} if name == "copyleaks" else {}
    return registry.create("detector", name, {"base_url": url, **FAST, **extra, **kw})


# -- c14 ---------------------------------------------------------------------------------

def test_c14_keyed_by_id_retries_reset_and_429_short_not_sent(cases_dir, fake, keys, workspace):
    items = [json.loads(line) for line in (cases_dir / "c14" / "texts.jsonl").read_text().splitlines() if line.strip()]
    script = json.loads((cases_dir / "c14" / "mock_script.json").read_text())
    by_id = {it["id"]: it["text"] for it in items}
    for iid, events in script.items():
        if isinstance(events, list):
            fake.script[by_id[iid]] = [{"reset": True} if e.get("connection_reset") else e for e in events]
    det = make("winston", fake.url)
    res = score_texts(workspace, det, [it["text"] for it in items])
    out = {it["id"]: res[text_sha256(it["text"])] for it in items}
    assert set(out) == {"t1", "t2", "t3"}
    assert out["t1"].status == "ok" and out["t1"].ai_probability == pytest.approx(0.18)
    assert out["t2"].status == "ok" and out["t2"].ai_probability == pytest.approx(0.88)
    assert out["t2"].detail["retried_for"] == ["site_down", "rate_limited"]
    assert fake.count("winston", by_id["t2"]) == 3
    assert out["t3"].status == "too_short" and fake.count("winston", by_id["t3"]) == 0
    for r in out.values():
        assert r.raw != -1 and r.ai_probability != -1
        assert r.status == "ok" or (r.raw is None and r.ai_probability is None)
    # stored, keyed by text hash: a second run sends nothing
    n = len(fake.calls)
    again = score_texts(workspace, det, [it["text"] for it in items])
    assert len(fake.calls) == n and again.keys() == res.keys()


# -- c15 ---------------------------------------------------------------------------------

def test_c15_vendor_responses(cases_dir, fake, keys, real_texts):
    rows = json.loads((cases_dir / "c15" / "vendor_responses.json").read_text())
    for i, row in enumerate(rows):
        t = real_texts[i]
        fake.script[t] = [{"http": row["http"], "body": row["body"]}]
        settings = {"api_version": "v1"} if row["vendor"] == "originality" else {}
        [r] = make(row["vendor"], fake.url, **settings).score_batch([t])
        if row["expected_p_ai"] is None:
            assert r.status != "ok" and r.ai_probability is None, row
            assert "400" in r.detail["reason"]
        else:
            assert r.status == "ok", (row, r.detail)
            assert r.ai_probability == pytest.approx(row["expected_p_ai"]), row


def test_c15_gptzero_three_classes_one_rule_per_run(cases_dir, fake, keys, real_texts):
    case = json.loads((cases_dir / "c15" / "gptzero_three_class.json").read_text())
    body = {"documents": case["documents"], "version": "x"}
    for rule, want in (("ai", case["expected"]["p_ai_strict"]), ("ai_plus_mixed", case["expected"]["p_ai_including_mixed"])):
        t = real_texts[0] + rule
        fake.script[t] = [{"http": 200, "body": body}]
        det = make("gptzero", fake.url, p_ai_rule=rule)
        assert det.spec.settings.get("p_ai_rule", "ai") == rule  # the mapping is part of the spec (default: ai)
        [r] = det.score_batch([t])
        assert r.ai_probability == pytest.approx(want) and r.detail["p_ai_rule"] == rule
    assert make("gptzero", fake.url).spec.hash != make("gptzero", fake.url, p_ai_rule="ai_plus_mixed").spec.hash
    # a response the chosen rule cannot read is an error, never a silent switch of rule
    t = real_texts[1]
    fake.script[t] = [{"http": 200, "body": {"documents": [{"completely_generated_prob": 0.9}]}}]
    [r] = make("gptzero", fake.url, p_ai_rule="ai_plus_mixed").score_batch([t])
    assert r.status == "bad_response"


def test_c15_request_field_types(cases_dir, fake, keys, real_texts):
    exp = {e["vendor"]: e for e in json.loads((cases_dir / "c15" / "request_expectations.json").read_text())}
    make("originality", fake.url).score_batch([real_texts[0]])
    sent = fake.calls[-1]["json"]
    assert sent[exp["originality"]["field"]] is exp["originality"]["expected_value"]  # JSON false, not "false"
    make("winston", fake.url, language="de").score_batch([real_texts[1]])
    assert fake.calls[-1]["json"]["language"] == "de"
    with pytest.raises(Exception, match="2-letter"):
        make("winston", fake.url, language="german")
    long = (real_texts[2] + " ") * 40
    assert len(long) > 50_000
    [r] = make("gptzero", fake.url).score_batch([long])
    assert r.detail["truncated"] is True


# -- kill and resume ---------------------------------------------------------------------

RUNNER = r"""
import json, sys
from veribench import registry
from veribench.detectors.pipeline import score_texts
from veribench.store import Workspace
ws_path, url, texts_file = sys.argv[1:4]
texts = json.load(open(texts_file))
det = registry.create("detector", "winston", {"base_url": url, "rate_per_minute": 0, "backoff": 0.01,
                                              "max_concurrency": 2})
ws = Workspace(ws_path)
res = score_texts(ws, det, texts)
print(json.dumps({"done": len(res)}))
ws.close()
"""


def _snapshot(ws_path, shas):
    from veribench.store import Workspace

    ws = Workspace(ws_path, read_only=True)
    try:
        spec_hash = ws.query("SELECT spec_hash FROM specs WHERE name='winston'")
        if not spec_hash:
            return {}
        got = ws.cached_scores(spec_hash[0][0], shas)
        return {s: (r.status, r.raw, r.ai_probability, r.verdict, r.vendor_version) for s, r in got.items()}
    finally:
        ws.close()


@pytest.mark.slow  # subprocesses: a real SIGKILL / every file a real run writes
def test_kill_and_resume_repeats_no_stored_call(tmp_path, keys, real_texts):
    texts = real_texts[:20]
    shas = [text_sha256(t) for t in texts]
    tf = tmp_path / "texts.json"
    tf.write_text(json.dumps(texts))
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    srv = FakeVendors(delay=0.12)
    try:
        ws1 = tmp_path / "ws-killed"
        p = subprocess.Popen([sys.executable, "-c", RUNNER, str(ws1), srv.url, str(tf)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while sum(v for (ven, _), v in srv.counter.items() if ven == "winston") < 8 and time.time() < deadline:
            time.sleep(0.01)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        assert p.returncode == -signal.SIGKILL
        stored = _snapshot(ws1, shas)
        assert 3 <= len(stored) < 20, len(stored)  # killed partway, with calls already stored
        counts_at_kill = {s: srv.counter[("winston", s)] for s in shas}
        out = subprocess.run([sys.executable, "-c", RUNNER, str(ws1), srv.url, str(tf)], env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        for s in stored:  # no stored call repeated
            assert srv.counter[("winston", s)] == counts_at_kill[s] == 1
        resumed = _snapshot(ws1, shas)
        assert set(resumed) == set(shas)
        assert {s: resumed[s] for s in stored} == stored  # nothing stored was lost or changed
        # identical to an uninterrupted run
        from veribench.store import Workspace

        ws2 = tmp_path / "ws-clean"
        srv.delay = 0.0
        with Workspace(ws2) as ws:
            score_texts(ws, make("winston", srv.url), texts)
        clean = _snapshot(ws2, shas)
        assert clean == resumed
        assert all(v[0] == "ok" and v[2] == pytest.approx(value_for(t)) for t, v in zip(texts, (clean[s] for s in shas)))
    finally:
        srv.close()


# -- secrets -----------------------------------------------------------------------------

SECRET_RUN = r"""
import json, logging, sys
from veribench import registry
from veribench.detectors.pipeline import score_texts
from veribench.humanizers.pipeline import humanize_texts
from veribench.llm.judge import readability
from veribench.store import Workspace
out_dir, url, texts_file, prompt_file = sys.argv[1:5]
logging.basicConfig(filename=out_dir + "/run.log", level=logging.DEBUG, force=True)
texts = json.load(open(texts_file))
fast = {"base_url": url, "rate_per_minute": 0, "backoff": 0.01, "backoff_max": 0.02, "poll_interval": 0.01,
        "max_attempts": 2}
ws = Workspace(out_dir + "/ws")
for name in ["gptzero", "originality", "copyleaks", "winston", "zerogpt", "sapling", "pangram"]:
    extra = {"id_base_url": url} if name == "copyleaks" else {}
    det = registry.create("detector", name, {**fast, **extra})
    res = score_texts(ws, det, texts)
    print(name, sorted(r.status for r in res.values()), file=sys.stderr)
    plan = []
    from veribench.detectors.pipeline import RunStats
    st = RunStats(); score_texts(ws, registry.create("detector", name, {**fast, **extra, "min_chars": 1}), texts, dry_run=True, stats=st)
    print(json.dumps(st.planned))
for name in ["undetectable", "stealthgpt", "writehuman", "hix", "humbot"]:
    h = registry.create("humanizer", name, fast)
    res = humanize_texts(ws, h, texts)
    print(name, sorted(r.status for r in res.values()), file=sys.stderr)
h = registry.create("humanizer", "llm-humanizer", {**fast, "base_url": url + "/v1", "provider": "openai",
                                                   "prompt_file": prompt_file})
print("llm", [r.status for r in humanize_texts(ws, h, texts).values()], file=sys.stderr)
print("judge", readability({"base_url": url + "/v1", "provider": "openai", "model": "j"}, texts, ws), file=sys.stderr)
ws.con.execute("CHECKPOINT")
ws.export_scores(out_dir + "/scores.csv")
ws.close()
"""


@pytest.mark.slow  # subprocesses: a real SIGKILL / every file a real run writes
def test_sentinel_keys_never_written(tmp_path, real_texts):
    sentinels = {v: f"SENTINEL{v.upper()}KEY{i:03d}x9" for i, v in enumerate(
        ["gptzero", "originality", "copyleaks", "winston", "zerogpt", "sapling", "pangram", "undetectable",
         "stealthgpt", "writehuman", "hix", "humbot", "openai"])}
    # gptzero's fake expects another key: it answers 401 and echoes the sentinel it received
    srv = FakeVendors(keys={**sentinels, "gptzero": "something-else"})
    env = dict(os.environ, HF_HUB_OFFLINE="1", VERIBENCH_COPYLEAKS_EMAIL=COPYLEAKS_EMAIL)
    env.update({f"VERIBENCH_{v.upper()}_API_KEY": k for v, k in sentinels.items()})
    out = tmp_path / "run"
    out.mkdir()
    tf = tmp_path / "texts.json"
    tf.write_text(json.dumps(real_texts[:3]))
    pf = tmp_path / "prompt.md"
    pf.write_text("---\nversion: 1\n---\nRewrite like a person.\n")
    try:
        p = subprocess.run([sys.executable, "-c", SECRET_RUN, str(out), srv.url, str(tf), str(pf)], env=env,
                           capture_output=True, text=True, timeout=300)
        (out / "stdout.txt").write_text(p.stdout)
        (out / "stderr.txt").write_text(p.stderr)
        assert p.returncode == 0, p.stderr[-3000:]
        # the command line too: its outputs, dry-run listings and error messages
        exe = str(Path(sys.executable).parent / "veribench")
        inp = out / "in.jsonl"
        inp.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(real_texts[3:5])))
        fast = ["--set", "rate_per_minute=0", "--set", "backoff=0.01", "--set", "max_attempts=2"]
        cmds = [
            ["score", "--detector", "zerogpt", "--set", f"base_url={srv.url}", *fast, "-i", str(inp), "-o",
             str(out / "zerogpt.jsonl"), "-w", str(out / "ws"), "--no-progress"],
            ["score", "--detector", "gptzero", "--set", f"base_url={srv.url}", *fast, "-i", str(inp), "-o",
             str(out / "gptzero.jsonl"), "-w", str(out / "ws"), "--no-progress"],
            ["humanize", "--humanizer", "hix", "--set", f"base_url={srv.url}", *fast, "--set", "poll_interval=0.01",
             "-i", str(inp), "-o", str(out / "hix.jsonl"), "-w", str(out / "ws"), "--no-progress"],
            ["humanize", "--humanizer", "stealthgpt", "--set", f"base_url={srv.url}", *fast, "-i", str(inp),
             "-w", str(out / "ws"), "--dry-run"],
        ]
        for i, cmd in enumerate(cmds):
            c = subprocess.run([exe, *cmd], env=env, capture_output=True, text=True, timeout=120)
            (out / f"cli{i}.stdout").write_text(c.stdout)
            (out / f"cli{i}.stderr").write_text(c.stderr)
            # gptzero answers 401: the command ends with status 1 and says so (its rows are written)
            assert c.returncode == (1 if "gptzero" in cmd else 0), (cmd, c.stderr[-2000:])
        assert "auth" in (out / "gptzero.jsonl").read_text()
        # the keys really were sent (so the test can fail), and the echo happened
        seen = json.dumps([c["headers"] for c in srv.calls] + [c["json"] for c in srv.calls])
        for v, k in sentinels.items():
            if v != "copyleaks":  # copyleaks sends its key only to the login endpoint (body)
                assert k in seen, v
        assert "gptzero ['auth'" in p.stderr
    finally:
        srv.close()
    files = [f for f in out.rglob("*") if f.is_file()]
    assert any(f.name == "veribench.duckdb" for f in files) and (out / "run.log").stat().st_size > 0
    for f in files:
        data = f.read_bytes()
        for v, k in sentinels.items():
            assert k.encode() not in data, f"{v} key found in {f}"
    # DuckDB may compress strings on disk: also search every stored value through SQL
    from veribench.store import Workspace

    ws = Workspace(out / "ws", read_only=True)
    try:
        dump = []
        for (table,) in ws.query("SELECT table_name FROM information_schema.tables"):
            dump += [repr(r) for r in ws.query(f'SELECT * FROM "{table}"')]
        blob = "\n".join(dump)
        assert "[REDACTED]" in blob  # the echoed key was redacted, not merely absent
        for v, k in sentinels.items():
            assert k not in blob, f"{v} key stored in the workspace"
    finally:
        ws.close()


# -- asynchronous tasks: a resumed run polls the journaled task, never resubmits -------------

def test_async_task_resumed_not_resubmitted(fake, keys, real_texts, workspace):
    t, bad = real_texts[0], real_texts[1]
    fake.polls_before_done = 10 ** 6  # never finishes during the first run
    det = make("pangram", fake.url, poll_timeout=0.1)
    res = score_texts(workspace, det, [t])
    assert res[text_sha256(t)].status == "timeout" and fake.count("pangram", t) == 1
    fake.polls_before_done = 0
    res = score_texts(workspace, det, [t])  # a stored timeout is never final: sent again
    r = res[text_sha256(t)]
    assert r.status == "ok" and "resumed_task" in r.detail["retried_for"]
    assert fake.count("pangram", t) == 1  # polled the same task; paid once
    # a task the vendor reports failed is dropped from the journal: a retry submits afresh
    fake.script[bad] = [{"task_fail": True}]
    assert score_texts(workspace, det, [bad])[text_sha256(bad)].status == "site_down"
    assert score_texts(workspace, det, [bad])[text_sha256(bad)].status == "ok"
    assert fake.count("pangram", bad) == 2


HUMANIZE_RUNNER = r"""
import json, sys
from veribench import registry
from veribench.humanizers.pipeline import humanize_texts
from veribench.store import Workspace
ws_path, url, texts_file = sys.argv[1:4]
texts = json.load(open(texts_file))
h = registry.create("humanizer", "undetectable", {"base_url": url, "rate_per_minute": 0, "backoff": 0.01,
                                                  "poll_interval": 0.02, "max_concurrency": 2})
ws = Workspace(ws_path)
res = humanize_texts(ws, h, texts)
print(json.dumps({"done": len(res)}))
ws.close()
"""


@pytest.mark.slow  # subprocesses: a real SIGKILL / every file a real run writes
def test_kill_during_polling_resumes_tasks(tmp_path, keys, real_texts):
    from veribench.store import Workspace

    texts = real_texts[:8]
    tf = tmp_path / "texts.json"
    tf.write_text(json.dumps(texts))
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    srv = FakeVendors(polls_before_done=15)
    ws_path = tmp_path / "ws"
    try:
        p = subprocess.Popen([sys.executable, "-c", HUMANIZE_RUNNER, str(ws_path), srv.url, str(tf)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while sum(v for (ven, _), v in srv.counter.items() if ven == "undetectable") < 4 and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # let the journal write land, then kill in the middle of polling
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        ws = Workspace(ws_path, read_only=True)
        journaled = {r[0] for r in ws.query("SELECT text_sha256 FROM api_tasks")}
        ws.close()
        assert journaled, "no task was journaled before the kill"
        out = subprocess.run([sys.executable, "-c", HUMANIZE_RUNNER, str(ws_path), srv.url, str(tf)], env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        assert json.loads(out.stdout)["done"] == len(texts)
        for t in texts:
            if text_sha256(t) in journaled:
                assert srv.counter[("undetectable", text_sha256(t))] == 1  # resumed by polling, not resubmitted
    finally:
        srv.close()
