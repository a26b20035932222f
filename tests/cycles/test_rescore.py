"""Re-scoring humanizer outputs with veribench's own parts (ZipPy, MiniLM, published readability)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from veribench.cycles.flags import classify_output
from veribench.cycles.rescore import human_likelihood
from veribench.records import ScoreResult


def test_human_likelihood_rules():
    assert human_likelihood(ScoreResult(ai_probability=0.8)) == (pytest.approx(0.2), "probability")
    z_ai = ScoreResult(raw=3.0, scale="zippy_signed_delta", verdict="AI")
    z_h = ScoreResult(raw=-2.0, scale="zippy_signed_delta", verdict="Human")
    assert human_likelihood(z_ai) == (0.0, "verdict") and human_likelihood(z_h) == (1.0, "verdict")
    h, rule = human_likelihood(z_ai, "sigmoid:2")
    assert rule == "sigmoid:2" and h == pytest.approx(1 - 1 / (1 + np.exp(-1.5)))
    assert human_likelihood(z_h, "sigmoid:1:-2")[0] == pytest.approx(0.5)
    assert human_likelihood(ScoreResult.failed("unscorable", "empty")) == (None, "unscorable")
    assert human_likelihood(ScoreResult(raw=-3.2, scale="loglik"))[0] is None  # no rule applies: never guessed
    from veribench.cycles.rescore import check_mapping
    from veribench.errors import InputError
    assert check_mapping("sigmoid:2:-1") == "sigmoid:2:-1"
    for bad in ("sigmoid:0", "sigmoid:x", "logit", "sigmoid:1:2:3"):
        with pytest.raises(InputError, match="mapping"):
            check_mapping(bad)


def test_flags():
    src = "The quick brown fox jumps over the lazy dog. It was a sunny day in the park today."
    assert classify_output(src, "  " + src + "\n") == ("flagged", "identical_to_input")
    assert classify_output(src, "I'm sorry, but I can't help with that request.") == ("flagged", "refusal_in_output")
    assert classify_output(src, "The quick brown fox jumps over") == ("flagged", "truncated_output")
    assert classify_output(src, "") == ("failed", "no_output")
    assert classify_output(src, None, "captcha") == ("failed", "captcha")
    assert classify_output(src, "A fast brown fox leapt over a sleepy dog on a bright afternoon in the park.") == \
        ("complete", None)


@pytest.mark.slow
def test_minilm_embedder_windows():
    from sentence_transformers import SentenceTransformer

    from veribench import registry
    from veribench.llm.embedders import minilm_path

    emb = registry.create("embedder", "minilm")
    assert emb.spec.settings["rescale_floor"] == emb.rescale_floor == 0.73
    short = "Meaning preservation is measured by embedding cosine."
    ref = SentenceTransformer(str(minilm_path()), device="cpu").encode([short], normalize_embeddings=True)[0]
    assert np.allclose(emb.embed([short])[0], ref, atol=1e-5)
    long = " ".join(f"Sentence number {i} talks about topic {i % 7} in some detail." for i in range(40))
    v_long = emb.embed([long])[0]
    head = emb._windows(long)[0][0]
    assert len(emb._windows(long)) >= 2 and long.startswith(head)
    assert not np.allclose(v_long, emb.embed([head])[0], atol=1e-3)  # the tail is not cut off
    assert np.linalg.norm(v_long) == pytest.approx(1.0)


@pytest.mark.slow
def test_rescore_july_subset(cli, hb_dir: Path, tmp_path: Path):
    """ZipPy + MiniLM + published readability on the first July sample (13 outputs); the bundle verifies."""
    from scipy.stats import kendalltau

    from veribench import registry
    from veribench.hashing import text_sha256

    out = tmp_path / "July 2026 (veribench)"
    code, text = cli("cycle", "rescore", hb_dir / "July 2026", "--out", out, "--limit", "1", "-w", tmp_path / "ws")
    assert code == 0, text
    assert "Kendall's tau" in text
    code, vtext = cli("verify", out)
    assert code == 0 and vtext.startswith("[ok] July 2026: 11 prompts verified, 13 humanizers replayed"), vtext

    lb = json.loads((out / "leaderboard.json").read_bytes())
    pub = json.loads((hb_dir / "July 2026" / "leaderboard.json").read_bytes())
    mine = {h["slug"]: h["rank"] for h in lb["humanizers"]}
    slugs = [h["slug"] for h in pub["humanizers"] if h["slug"] in mine]
    tau = kendalltau([h["rank"] for h in pub["humanizers"] if h["slug"] in mine], [mine[s] for s in slugs]).statistic
    assert f"{tau:.4f}" in text
    assert lb["derived_from"]["leaderboard_sha256"] == \
        __import__("hashlib").sha256((hb_dir / "July 2026" / "leaderboard.json").read_bytes()).hexdigest()

    tests = json.loads((out / "tests.json").read_bytes())
    src = {t["id"]: t for t in json.loads((hb_dir / "July 2026" / "tests.json").read_bytes())}
    assert len(tests) == 13
    for t in tests:  # published readability carried over verbatim; meaning is MiniLM's
        assert t["readability"] == src[t["id"]]["readability"]
        assert 0 <= t["meaning_preservation"] <= 1
    # ZipPy through the registry, independently: raw_score = human likelihood by ZipPy's own verdict
    z = registry.create("detector", "zippy", {})
    ds = {(r["test_id"]): r["raw_score"] for r in json.loads((out / "detector-scores.json").read_bytes())}
    t0 = tests[0]
    r = z.score_batch([t0["output_text"]])[0]
    assert ds[t0["id"]] == (0.0 if r.verdict == "AI" else 1.0)
    prov = json.loads((out / "provenance.json").read_bytes())
    assert prov["detectors"][0]["human_likelihood_rule"] == {"verdict": 13}
    assert prov["embedder"]["spec"]["name"] == "minilm"
    spec = json.loads((out / "scoring-spec.json").read_bytes())
    assert spec["rules"]["meaning_cosine_floor"] == 0.73
    assert spec["rules"]["penalty_rules"]["length_inflation"]["cap"] == 10  # July's caps kept
    # cached: a second run re-uses every stored detector score and embedding
    from veribench.store import Workspace

    with Workspace(tmp_path / "ws") as ws:
        n = ws.query("SELECT count(*) FROM scores WHERE spec_hash = ?", [z.spec.hash])[0][0]
        assert n == len({text_sha256(t["output_text"]) for t in tests})
        assert ws.query("SELECT count(*) FROM cycle_embeddings")[0][0] == 14
    code, text = cli("cycle", "rescore", hb_dir / "July 2026", "--out", out, "--limit", "1", "-w", tmp_path / "ws")
    assert code == 1 and "already holds files" in text


def test_cycle_score_on_published_bundle(cli, hb_dir: Path, tmp_path: Path):
    """`cycle score` reproduces the published leaderboard's values and adds recorded, seeded intervals."""
    code, out = cli("cycle", "score", hb_dir / "June 2026", "--out", tmp_path / "lb.json", "--resamples", "500")
    assert code == 0, out
    mine = json.loads((tmp_path / "lb.json").read_text())
    pub = json.loads((hb_dir / "June 2026" / "leaderboard.json").read_bytes())
    assert [h["slug"] for h in mine["humanizers"]] == [h["slug"] for h in pub["humanizers"]]
    for a, b in zip(mine["humanizers"], pub["humanizers"]):
        assert a["scores"] == b["scores"] and a["penalties_applied"] == b["penalties_applied"]
        assert a["detector_breakdown"] == b["detector_breakdown"]
        lo, hi = a["score_intervals"]["meaning_preservation_ci_95"]
        assert lo < a["scores"]["meaning_preservation"] < hi
    assert mine["unavailable_humanizers"] == pub["unavailable_humanizers"]
    assert mine["score_intervals_method"] == {**mine["score_intervals_method"], "n_resamples": 500, "seed": 20260701}


def test_bootstrap_interval_matches_a_plain_resampling():
    """Percentile bootstrap: close to a plain numpy resampling of the mean (independent reference)."""
    from veribench.cycles.intervals import bootstrap_ci

    rng = np.random.default_rng(1)
    x = rng.beta(2, 5, size=40)
    (lo, hi), why = bootstrap_ci(x, seed=7, slug="h", n_resamples=4000)
    assert why is None
    means = x[rng.integers(0, len(x), size=(20000, len(x)))].mean(axis=1)
    ref = np.percentile(means, [2.5, 97.5])
    assert abs(lo - ref[0]) < 0.01 and abs(hi - ref[1]) < 0.01
    assert bootstrap_ci(x, seed=7, slug="h", n_resamples=4000) == ([lo, hi], None)  # seeded


def test_bypass_interval_of_identical_values_is_null_with_a_reason():
    """Issue 28: identical per-test values gave the point as an interval ([v, v]); now null with
    the reason of the one interval rule (veribench.metrics.intervals)."""
    from veribench.cycles.intervals import NO_VALUES, bootstrap_ci
    from veribench.metrics.intervals import BOOTSTRAP_ONE_VALUE

    assert bootstrap_ci([0.4], 1, "h") == (None, BOOTSTRAP_ONE_VALUE)
    assert bootstrap_ci([0.7, 0.7, 0.7], 1, "h") == (None, BOOTSTRAP_ONE_VALUE)
    assert bootstrap_ci([], 1, "h") == (None, NO_VALUES)


def test_openai_embedder_against_local_server(monkeypatch):
    """text-embedding-3-large through an OpenAI-compatible API: a real HTTP server on 127.0.0.1."""
    import http.server
    import threading

    from veribench import registry

    calls = []

    class H(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            calls.append((self.path, self.headers.get("Authorization"), body))
            if len(calls) == 1:  # one transient failure, retried
                self.send_response(503)
                self.end_headers()
                return
            data = [{"index": i, "embedding": [float(len(t)), 1.0, 0.0]} for i, t in enumerate(body["input"])]
            out = json.dumps({"data": list(reversed(data))}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("VERIBENCH_OPENAI_API_KEY", "sk-test-123")
        emb = registry.create("embedder", "openai-3-large", {"base_url": f"http://127.0.0.1:{srv.server_port}/v1"})
        assert (emb.rescale_floor, emb.severe_drift_cosine) == (0.75, 0.85)
        v = emb.embed(["ab", "abcd"])
        assert np.allclose(v[0], np.array([2, 1, 0]) / np.sqrt(5)) and np.allclose(v[1], np.array([4, 1, 0]) / np.sqrt(17))
        assert calls[-1][0] == "/v1/embeddings" and calls[-1][1] == "Bearer sk-test-123"
        assert calls[-1][2] == {"model": "text-embedding-3-large", "input": ["ab", "abcd"]}
        assert "sk-test" not in json.dumps(emb.spec.to_dict())  # the key is never part of the spec
        monkeypatch.delenv("VERIBENCH_OPENAI_API_KEY")
        from veribench.errors import VeribenchError
        with pytest.raises(VeribenchError, match="VERIBENCH_OPENAI_API_KEY"):
            emb.embed(["x"])
    finally:
        srv.shutdown()


def test_loading_the_embedder_shows_no_foreign_progress_bar(tmp_path, monkeypatch, capsys):
    """Issue 25 walk: transformers' tqdm "Loading weights" bar leaked into `cycle measure`'s
    output. Loading the meaning-preservation embedder runs under quiet_loading (transformers'
    bars off, restored afterwards) and says what it loads through veribench.progress."""
    pytest.importorskip("transformers")
    import sys
    import types

    from transformers.utils import logging as hf_logging

    from veribench.llm.embedders import MiniLMEmbedder
    from veribench.progress import Progress

    class FakeST:  # stands for SentenceTransformer: loads its weights under transformers' tqdm
        def __init__(self, path, device="cpu"):
            for _ in hf_logging.tqdm(range(3), desc="Loading weights"):
                pass

    monkeypatch.setitem(sys.modules, "sentence_transformers", types.SimpleNamespace(SentenceTransformer=FakeST))
    for _ in hf_logging.tqdm(range(3), desc="Loading weights"):  # the bar is on outside the loading
        pass
    assert "Loading weights" in capsys.readouterr().err
    with Progress("cycle measure"):
        MiniLMEmbedder(path=str(tmp_path / "all-MiniLM-L6-v2"))._load()
    err = capsys.readouterr().err
    assert "Loading weights" not in err, err
    assert "cycle measure: loading embedder all-MiniLM-L6-v2 (cpu)" in err, err
    assert hf_logging.is_progress_bar_enabled()  # restored
