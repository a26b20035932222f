"""Own cycles: new -> prompts -> import -> measure -> publish -> verify, with commit-reveal."""

from __future__ import annotations

import csv
import hashlib
import json
import stat
from pathlib import Path

import numpy as np
import pytest

from tests.cycles.cycles_helpers import edit_json
from veribench import registry
from veribench.records import ScoreResult
from veribench.spec import Spec

NAME = "Round Trip 2027"
EMOJI_VALUES = ["🎉 a surprise party for 😀 friends", "🚀 a rocket launch"]


class BowEmbedder:
    """Test embedder: hashed bag of words (64 dims), a real computation with no model."""

    rescale_floor, severe_drift_cosine = 0.5, 0.6

    def __init__(self):
        self.spec = Spec("embedder", "test-bow", "1", {"dims": 64})

    def embed(self, texts):
        out = np.zeros((len(texts), 64))
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, hashlib.sha256(w.encode()).digest()[0] % 64] += 1
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


class LenDetector:
    """Test detector: P(AI) = share of words longer than 6 letters (deterministic, text-dependent)."""

    def __init__(self):
        self.spec = Spec("detector", "test-long-words", "1", {})

    def score_batch(self, texts):
        out = []
        for t in texts:
            w = t.split()
            p = sum(len(x) > 6 for x in w) / len(w)
            out.append(ScoreResult(status="ok", raw=p, scale="p_ai", ai_probability=p))
        return out


registry.register("embedder", "test-bow", BowEmbedder)
registry.register("detector", "test-long-words", LenDetector)


@pytest.fixture()
def env(tmp_path: Path) -> dict:
    return {"VERIBENCH_SECRETS_DIR": str(tmp_path / "secrets")}


@pytest.fixture()
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    t = [{"slug": "party_blog", "category": "blog_post", "prompt_text": "Write a blog post about [EVENT] for [AUDIENCE]."},
         {"slug": "news", "category": "news_article", "prompt_text": "Write a news article about [EVENT] ([EVENT])."},
         {"slug": "plain", "category": "academic_essay", "prompt_text": "Write an essay on habit formation."}]
    b = {"EVENT": EMOJI_VALUES, "AUDIENCE": ["parents", "students", "retirees"]}
    (tmp_path / "t.json").write_text(json.dumps(t, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "b.json").write_text(json.dumps(b, ensure_ascii=False), encoding="utf-8")
    return tmp_path / "t.json", tmp_path / "b.json"


def _texts():
    base = {"party_blog": "Planning a party takes patience. Invite guests early and prepare simple food. "
                          "Decorations matter less than good company and relaxed conversation.",
            "news": "Officials confirmed the launch happened on schedule. Engineers monitored telemetry closely "
                    "while spectators gathered along the coastline to watch.",
            "plain": "Habits form through repetition in stable contexts. Cues trigger routines, and rewards "
                     "strengthen the association over weeks of practice."}
    return base


def _start(cli, env, tmp_path, inputs) -> Path:
    d = tmp_path / "cycles" / NAME
    code, out = cli("cycle", "new", NAME, d, "--templates", inputs[0], "--banks", inputs[1], env=env)
    assert code == 0, out
    return d


def _secret(env) -> dict:
    files = list(Path(env["VERIBENCH_SECRETS_DIR"]).iterdir())
    assert len(files) == 1
    return json.loads(files[0].read_text())


def test_round_trip(cli, env, tmp_path: Path, inputs):
    d = _start(cli, env, tmp_path, inputs)
    outputs: list[str] = []
    secret = _secret(env)
    nonce = secret["nonce"]
    # the nonce: 32 random bytes, private (0700 folder, 0600 file), committed by hash
    sdir = Path(env["VERIBENCH_SECRETS_DIR"])
    assert stat.S_IMODE(sdir.stat().st_mode) == 0o700
    assert stat.S_IMODE(next(sdir.iterdir()).stat().st_mode) == 0o600
    assert len(bytes.fromhex(nonce)) == 32
    commit = json.loads((d / "commit.json").read_bytes())
    assert commit["cycle"] == NAME and commit["committed_hash"] == hashlib.sha256(nonce.encode()).hexdigest()
    assert commit["started_at"].endswith("Z")
    assert not (d / "nonce.txt").exists()

    code, out = cli("cycle", "prompts", d, env=env)
    assert code == 0
    outputs.append(out)
    prompts = json.loads(out)
    assert [p["slug"] for p in prompts] == ["party_blog", "news", "plain"]
    assert prompts[0]["placeholders"]["EVENT"] in EMOJI_VALUES
    assert prompts[1]["resolved"].count(prompts[1]["placeholders"]["EVENT"]) == 2
    assert prompts[2]["placeholders"] == {} and prompts[2]["resolved"] == prompts[2]["template"]

    texts = _texts()
    (tmp_path / "s.json").write_text(json.dumps([{"id": f"s-{k}", "prompt_slug": k, "input_text": v,
                                                  "source_model_slug": "test-model"} for k, v in texts.items()]))
    code, out = cli("cycle", "add", d, "--samples", tmp_path / "s.json", env=env)
    assert code == 0, out
    with open(tmp_path / "o.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, ["sample_id", "humanizer_slug", "output_text", "failure_reason_code"])
        w.writeheader()
        for k, v in texts.items():
            w.writerow({"sample_id": f"s-{k}", "humanizer_slug": "alpha", "output_text": "Honestly, " + v.lower()})
            w.writerow({"sample_id": f"s-{k}", "humanizer_slug": "beta",
                        "output_text": v if k == "news" else v.replace(".", "!")})
            w.writerow({"sample_id": f"s-{k}", "humanizer_slug": "gamma",
                        "output_text": "" if k != "plain" else v + " Fine.",
                        "failure_reason_code": "site_down" if k != "plain" else ""})
    code, out = cli("cycle", "add", d, "--outputs", tmp_path / "o.csv", env=env)
    assert code == 0, out
    tests = json.loads((d / "tests.json").read_bytes())
    st = {(t["humanizer_slug"], t["sample_id"]): (t["status"], t["failure_reason_code"]) for t in tests}
    assert st[("beta", "s-news")] == ("flagged", "identical_to_input")
    assert st[("gamma", "s-news")] == ("failed", "site_down")

    code, out = cli("cycle", "publish", d, env=env)
    assert code == 1 and "unscored" in out  # nothing measured yet
    outputs.append(out)

    ws = tmp_path / "ws"
    code, out = cli("cycle", "measure", d, "--detector", "test-long-words", "--embedder", "test-bow",
                    "--readability", "none", "-w", ws, env=env)
    assert code == 0, out
    # issue 28: the measured ranking with its uncertainty (3 prompts, seed recorded)
    assert '"ranking": {' in out and '"n_prompts": 3' in out and '"seed": 20260701' in out
    lines = out.splitlines()
    head = next(i for i, x in enumerate(lines) if x.startswith("humanizer") and "rank" in x)
    method = next(i for i, x in enumerate(lines) if x.endswith("alpha 0.05"))
    assert method - head == 3  # the table (a row per measured humanizer), then the method line, then any no-test reasons
    assert all(x.startswith("no paired test for ") for x in lines[method + 1:])
    code, out = cli("cycle", "publish", d, env=env)
    assert code == 0, out
    outputs.append(out)
    assert (d / "nonce.txt").read_text() == nonce + "\n"

    code, out = cli("verify", d)
    outputs.append(out)
    assert code == 0, out
    assert out.strip() == f"[ok] {NAME}: 3 prompts verified, 2 humanizers replayed"
    code, out = cli("verify", "--strict", d.parent)
    assert code == 0, out

    lb = json.loads((d / "leaderboard.json").read_bytes())
    assert [u["slug"] for u in lb["unavailable_humanizers"]] == ["gamma"]
    assert lb["unavailable_humanizers"][0]["attempted_test_count"] == 3
    assert lb["unavailable_humanizers"][0]["unavailable_test_count"] == 2
    assert lb["readability_measured"] is False and "not measured" in lb["readability_note"]
    # the bundle carries the uncertainty block, outside the verified part and saying so
    assert lb["uncertainty"]["verified"] is False and lb["uncertainty"]["n_resamples"] == 2000
    # three prompts, one per category: one possible resample, so no rank interval, with the reason, and one tier
    assert all((h["rank_interval_95"] or h["rank_interval_95_reason"]) and h["tier"] for h in lb["humanizers"])
    beta = next(h for h in lb["humanizers"] if h["slug"] == "beta")
    assert beta["flagged_test_count"] == 1
    assert {"code": "identical_to_input", "count": 1, "score_delta": -2} in beta["penalties_applied"]
    # the emoji survives byte for byte: UTF-8, not \u escapes, in the published prompts
    raw = (d / "prompts.json").read_bytes()
    assert prompts[0]["placeholders"]["EVENT"].encode() in raw
    # interop: same frozen selection file as HumanizerBench, a scoring.js veribench recognises
    assert hashlib.sha256((d / "select-placeholders.js").read_bytes()).hexdigest().startswith("f8bae546")
    spec = json.loads((d / "scoring-spec.json").read_bytes())
    assert spec["rules"]["meaning_cosine_floor"] == 0.5 and spec["embedder"]["spec"]["name"] == "test-bow"
    # meaning values: the embedder's cosine, recomputed independently here
    emb = BowEmbedder()
    t0 = next(t for t in json.loads((d / "tests.json").read_bytes()) if t["humanizer_slug"] == "alpha")
    v = emb.embed([t0["input_text"], t0["output_text"]])
    assert t0["meaning_preservation"] == pytest.approx(float(np.clip(v[0] @ v[1], 0, 1)), abs=1e-12)
    # detector raw_score: human likelihood = 1 - P(AI)
    ds = json.loads((d / "detector-scores.json").read_bytes())
    row = next(r for r in ds if r["test_id"] == t0["id"])
    p_ai = LenDetector().score_batch([t0["output_text"]])[0].ai_probability
    assert row["raw_score"] == pytest.approx(1 - p_ai)

    # the nonce was never printed
    assert all(nonce not in o for o in outputs)

    # publishing never rewrites a published cycle
    before = {p.name: p.read_bytes() for p in d.iterdir()}
    code, out = cli("cycle", "publish", d, env=env)
    assert code == 1 and "immutable" in out
    assert before == {p.name: p.read_bytes() for p in d.iterdir()}

    # cycle score: published shape with seeded, recorded bootstrap intervals
    code, out = cli("cycle", "score", d, "--out", tmp_path / "lb1.json")
    assert code == 0
    cli("cycle", "score", d, "--out", tmp_path / "lb2.json")
    lb1 = json.loads((tmp_path / "lb1.json").read_text())
    lb2 = json.loads((tmp_path / "lb2.json").read_text())
    for h1, h2 in zip(lb1["humanizers"], lb2["humanizers"]):
        assert h1["score_intervals"] == h2["score_intervals"]
        lo, hi = h1["score_intervals"]["bypass_rate_ci_95"]
        assert lo <= h1["scores"]["bypass_rate"] <= hi
    assert lb1["score_intervals_method"]["seed"] == 20260701

    # our own bundle: a tampered unavailable-tests.json is caught
    def revive(rows):
        for r in rows:
            r["status"], r["failure_reason_code"] = "complete", None
    edit_json(d, "unavailable-tests.json", revive)
    code, out = cli("verify", d)
    assert code == 1 and "replay: " in out and "'gamma' is listed unavailable" in out


def test_commit_changed_refuses(cli, env, tmp_path: Path, inputs):
    d = _start(cli, env, tmp_path, inputs)
    raw = (d / "commit.json").read_bytes()
    (d / "commit.json").write_bytes(raw.replace(b'"1.0.0"', b'"1.0.1"'))
    code, out = cli("cycle", "prompts", d, env=env)
    assert code == 1 and "has changed since the cycle began" in out
    code, out = cli("cycle", "publish", d, env=env)
    assert code == 1 and "has changed since the cycle began" in out


def test_frozen_banks_changed_refuses(cli, env, tmp_path: Path, inputs):
    d = _start(cli, env, tmp_path, inputs)
    b = json.loads((d / "banks.json").read_bytes())
    b["EVENT"] = ["a picnic"]
    (d / "banks.json").write_text(json.dumps(b))
    code, out = cli("cycle", "prompts", d, env=env)
    assert code == 1 and "banks.json has changed" in out


def test_new_refuses_bad_input(cli, env, tmp_path: Path, inputs):
    t = json.loads(inputs[0].read_text())
    t[1]["prompt_text"] += " [MISSING_BANK]"
    (tmp_path / "bad.json").write_text(json.dumps(t))
    code, out = cli("cycle", "new", NAME, tmp_path / "x", "--templates", tmp_path / "bad.json", "--banks", inputs[1],
                    env=env)
    assert code == 1 and "record 1" in out and "'prompt_text'" in out and "MISSING_BANK" in out
    d = _start(cli, env, tmp_path, inputs)
    code, out = cli("cycle", "new", NAME, d, "--templates", inputs[0], "--banks", inputs[1], env=env)
    assert code == 1 and "already holds files" in out


def test_no_secret_no_prompts(cli, env, tmp_path: Path, inputs):
    d = _start(cli, env, tmp_path, inputs)
    code, out = cli("cycle", "prompts", d, env={"VERIBENCH_SECRETS_DIR": str(tmp_path / "elsewhere")})
    assert code == 1 and "no private nonce" in out


class PickyDetector:
    """Test detector that refuses texts under 20 words (like a vendor's minimum length)."""

    def __init__(self):
        self.spec = Spec("detector", "test-picky", "1", {})

    def score_batch(self, texts):
        return [ScoreResult.failed("too_short", "under 20 words") if len(t.split()) < 20
                else ScoreResult(status="ok", raw=0.3, ai_probability=0.3) for t in texts]


registry.register("detector", "test-picky", PickyDetector)


def test_recorded_detector_failures_are_published_gaps(cli, env, tmp_path: Path, inputs):
    d = _start(cli, env, tmp_path, inputs)
    texts = _texts()
    (tmp_path / "s.json").write_text(json.dumps([{"prompt_slug": k, "input_text": v} for k, v in texts.items()]))
    assert cli("cycle", "add", d, "--samples", tmp_path / "s.json", env=env)[0] == 0
    sids = [s["id"] for s in json.loads((d / "samples.json").read_bytes())]
    rows = [{"sample_id": sid, "humanizer_slug": "alpha", "output_text": t + (" More words here." * 3 if i else " Ok.")}
            for i, (sid, t) in enumerate(zip(sids, texts.values()))]
    rows[0]["output_text"] = "Short but finished."
    (tmp_path / "o.json").write_text(json.dumps(rows))
    assert cli("cycle", "add", d, "--outputs", tmp_path / "o.json", env=env)[0] == 0
    code, out = cli("cycle", "measure", d, "--detector", "test-picky", "--embedder", "test-bow",
                    "--readability", "none", "-w", tmp_path / "ws", env=env)
    assert code == 0, out
    prov = json.loads((d / "provenance.json").read_bytes())
    assert [f["status"] for f in prov["detector_failures"]] == ["too_short"]
    code, out = cli("cycle", "publish", d, env=env)
    assert code == 0, out
    code, out = cli("verify", d)
    assert code == 0 and "1 detector scores are recorded failures" in out
    assert cli("verify", "--strict", d)[0] == 1
