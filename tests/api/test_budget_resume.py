"""``--max-spend`` is a budget for the run across resumes, against the fake vendor servers.

The fake server counts every word it was sent (what a vendor would bill). A run is stopped
mid-way (an exception raised after a call was answered but before its result was stored,
the worst case: billed, not recorded; or a real SIGKILL with two calls in flight), the same
command is run again with the same cap, and the server's total must stay within the cap.
NaN, infinite and negative budgets are refused with one line.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner
from vendor_fakes import FAST, FakeVendors

from veribench import registry
from veribench.detectors.pipeline import RunStats, budget_key, check_budget, score_texts
from veribench.errors import InputError
from veribench.hashing import text_sha256
from veribench.humanizers.pipeline import humanize_texts


def billed(srv, vendor: str) -> int:
    """Words the fake vendor received on its scoring/humanizing route (repeats included)."""
    field = {"winston": "text", "writehuman": "text", "stealthgpt": "prompt"}[vendor]
    return sum(len(c["json"][field].split()) for c in srv.calls if c["vendor"] == vendor and c["json"])


class Killed(BaseException):
    """Stands for a kill: not an Exception, so nothing on the way catches it."""


def _kill_after(plugin, method: str, n: int) -> None:
    """After the ``n``-th answered call, raise before its result can be stored."""
    real = getattr(plugin, method)
    calls = {"n": 0}

    def wrapped(texts):
        out = real(texts)  # the vendor has answered (and billed)
        calls["n"] += 1
        if calls["n"] >= n:
            raise Killed()
        return out

    setattr(plugin, method, wrapped)


@pytest.mark.parametrize("kill_at", [1, 3, 5])
def test_detector_budget_holds_across_a_kill_and_resume(fake, keys, real_texts, workspace, kill_at):
    texts = real_texts[:12]
    words = [len(t.split()) for t in texts]
    cap = sum(words[:7]) + words[7] // 2  # seven texts fit, the eighth does not
    det = registry.create("detector", "winston", {"base_url": fake.url, **FAST, "max_concurrency": 1})
    _kill_after(det, "score_batch", kill_at)
    with pytest.raises(Killed):
        score_texts(workspace, det, texts, max_spend=cap)
    assert billed(fake, "winston") == sum(words[:kill_at])
    # the same command again (a fresh process would build the same detector)
    det = registry.create("detector", "winston", {"base_url": fake.url, **FAST, "max_concurrency": 1})
    st = RunStats()
    res = score_texts(workspace, det, texts, max_spend=cap, stats=st)
    assert st.in_flight_before == 1  # the call answered but never stored: its cost stays counted
    assert st.spent_before == sum(words[:kill_at]) and st.stopped_for_budget
    total = billed(fake, "winston")
    assert total <= cap, (total, cap)
    assert st.spent_total == total  # the ledger is exactly what the vendor received
    # what was done: every stored result is one the budget paid for; the lost call was sent again
    assert fake.count("winston", texts[kill_at - 1]) == 2
    assert len(res) == len([w for w in range(12) if sum(words[:w + 1]) + words[kill_at - 1] <= cap])
    # a third run sends nothing more: the budget is spent
    n = len(fake.calls)
    st = RunStats()
    score_texts(workspace, det, texts, max_spend=cap, stats=st)
    assert len(fake.calls) == n and st.stopped_for_budget and st.spent_total == total
    (row,) = workspace.query("SELECT cap, reserved - released, calls_sent FROM run_budgets WHERE run_key = ?",
                             [budget_key("detector", det.spec.hash, [text_sha256(t) for t in texts])])
    assert row == (cap, total, kill_at + len(res) - (kill_at - 1))


def test_humanizer_budget_holds_across_a_kill_and_resume(fake, keys, real_texts, workspace):
    texts = real_texts[:8]
    words = [len(t.split()) for t in texts]
    cap = sum(words[:5])
    h = registry.create("humanizer", "writehuman", {"base_url": fake.url, **FAST, "max_concurrency": 1})
    _kill_after(h, "humanize_batch", 2)
    with pytest.raises(Killed):
        humanize_texts(workspace, h, texts, max_spend=cap)
    h = registry.create("humanizer", "writehuman", {"base_url": fake.url, **FAST, "max_concurrency": 1})
    st = RunStats()
    res = humanize_texts(workspace, h, texts, max_spend=cap, stats=st)
    assert billed(fake, "writehuman") <= cap and st.spent_total == billed(fake, "writehuman")
    # by hand: text 0 stored, text 1 paid but lost; the rerun sends 1, 2, ... while they fit
    spent, done = words[0] + words[1], 1
    for w in words[1:]:
        if spent + w > cap:
            break
        spent, done = spent + w, done + 1
    assert len(res) == done and st.stopped_for_budget and st.spent_total == spent


def test_refused_calls_give_their_cost_back(fake, keys, real_texts, workspace, monkeypatch):
    """A call the vendor refuses outright (bad key: 401) was not billed; it does not use up the budget."""
    texts = real_texts[:3]
    cap = sum(len(t.split()) for t in texts)
    monkeypatch.setenv("VERIBENCH_WINSTON_API_KEY", "wrong-key")
    det = registry.create("detector", "winston", {"base_url": fake.url, **FAST})
    st = RunStats()
    score_texts(workspace, det, texts, max_spend=cap, stats=st)
    assert st.spent_total == 0 and st.spent == 0 and not st.stopped_for_budget


RUNNER = r"""
import json, sys
from veribench import registry
from veribench.detectors.pipeline import score_texts, RunStats
from veribench.store import Workspace
ws_path, url, texts_file, cap = sys.argv[1:5]
texts = json.load(open(texts_file))
det = registry.create("detector", "winston", {"base_url": url, "rate_per_minute": 0, "backoff": 0.01,
                                              "max_concurrency": 2})
ws = Workspace(ws_path)
st = RunStats()
res = score_texts(ws, det, texts, max_spend=float(cap), stats=st)
print(json.dumps({"done": len(res), "spent_total": st.spent_total, "in_flight_before": st.in_flight_before}))
ws.close()
"""


@pytest.mark.slow  # a real SIGKILL with calls in flight
def test_sigkill_with_calls_in_flight_then_rerun_stays_within_the_cap(tmp_path, keys, real_texts):
    texts = real_texts[:20]
    words = [len(t.split()) for t in texts]
    cap = sum(words[:14])
    tf = tmp_path / "texts.json"
    tf.write_text(json.dumps(texts))
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    srv = FakeVendors(delay=0.15)
    ws = tmp_path / "ws"
    try:
        p = subprocess.Popen([sys.executable, "-c", RUNNER, str(ws), srv.url, str(tf), str(cap)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while len(srv.calls) < 6 and time.time() < deadline:
            time.sleep(0.005)
        os.kill(p.pid, signal.SIGKILL)  # two calls in flight (max_concurrency 2)
        p.wait()
        out = subprocess.run([sys.executable, "-c", RUNNER, str(ws), srv.url, str(tf), str(cap)], env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        rep = json.loads(out.stdout)
        total = billed(srv, "winston")
        assert total <= cap, (total, cap)
        assert rep["spent_total"] >= total  # the ledger never counts less than the vendor received
        assert rep["in_flight_before"] >= 1
    finally:
        srv.close()


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "-1", "-0.5", "NaN", "Infinity"])
def test_bad_budgets_are_refused_with_one_line(bad, tmp_path, fake, keys, real_texts):
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps({"id": "a", "text": real_texts[0]}) + "\n")
    runner = CliRunner()
    from veribench.cli.main import app

    for cmd in (["score", "--detector", "winston", "-o", str(tmp_path / "o.jsonl")],
                ["humanize", "--humanizer", "writehuman", "-o", str(tmp_path / "h.jsonl")]):
        r = runner.invoke(app, [*cmd, "--set", f"base_url={fake.url}", "-i", str(inp), "-w", str(tmp_path / "ws"),
                                "--max-spend", bad, "--no-progress"])
        assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.output  # a bad option value: usage
        lines = [x for x in r.output.splitlines() if x.strip()]
        assert len(lines) == 1 and "--max-spend" in lines[0] and "finite number >= 0" in lines[0], r.output
    assert fake.calls == []
    with pytest.raises(InputError):
        check_budget(float(bad))


def test_zero_budget_sends_nothing_and_cli_reports_the_run(tmp_path, fake, keys, real_texts):
    from veribench.cli.main import app

    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(real_texts[:3])))
    args = ["score", "--detector", "winston", "--set", f"base_url={fake.url}", "--set", "rate_per_minute=0", "-i",
            str(inp), "-o", str(tmp_path / "o.jsonl"), "-w", str(tmp_path / "ws"), "--no-progress"]
    r = CliRunner().invoke(app, [*args, "--max-spend", "0"])
    assert r.exit_code == 0 and fake.calls == [] and "stopped" in r.output
    w0 = len(real_texts[0].split())
    r = CliRunner().invoke(app, [*args, "--max-spend", str(w0)])
    assert r.exit_code == 0 and len(fake.calls) == 1
    assert f"budget {w0} words for this run" in r.output and f"{w0} spent in all" in r.output
    r = CliRunner().invoke(app, args)  # no --max-spend: the run's stored cap still holds
    assert r.exit_code == 0 and len(fake.calls) == 1 and f"budget {w0} words" in r.output
