"""Every zero-shot statistic equals a plain per-text reference (no batching, direct formulas,
fp32 forward, float64 arithmetic) within 1e-5 relative, on tiny random models."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from veribench.detectors.local import zeroshot as zs
from veribench.detectors.local.engine.memo import MEMO, STATS
from veribench.detectors.local.engine.passes import single_passes
from veribench.detectors.local.engine.records import SinglePass
from veribench.detectors.local.engine.vocab import token_stats
from veribench.detectors.local.tolerance import within_fp32

#: The tiny test models: at most 200 tokens over a vocabulary of at most 333 (320 + 13):
#: the reduction length of :func:`within_fp32` (docs/statistics.md, "Numerical tolerance
#: across CPUs").
TOKENS, VOCAB = 200, 333


# ----------------------------------------------------------------- the independent reference
def _load(path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    return model, tok


_REF_CACHE: dict = {}


def ref_model(path):
    if path not in _REF_CACHE:
        _REF_CACHE[path] = _load(path)
    return _REF_CACHE[path]


def ref_logits(path, text, cap):
    """One text, one forward pass, truncated by the tokenizer itself; fp32 logits as float64."""
    model, tok = ref_model(path)
    ids = tok(text, truncation=True, max_length=cap, return_tensors="pt").input_ids
    with torch.no_grad():
        return model(ids).logits[0].double(), ids[0]


def ref_single(path, text, cap):
    logits, ids = ref_logits(path, text, cap)
    z = logits[:-1]
    y = ids[1:]
    T = y.shape[0]
    logp = torch.log_softmax(z, -1)
    p = torch.exp(logp)
    ll = logp[torch.arange(T), y]
    r = torch.tensor([1 + int((z[t] > z[t, y[t]]).sum()) for t in range(T)], dtype=torch.float64)
    H = torch.tensor([-sum(float(a) * float(b) for a, b in zip(p[t], logp[t]) if a > 0) for t in range(T)])
    mu = (p * logp).sum(-1)
    var = (p * logp * logp).sum(-1) - mu * mu
    return {
        "loglik": float(ll.mean()),
        "rank": -float(r.mean()),
        "logrank": -float(torch.log(r).mean()),
        "entropy": float(H.mean()),
        "gltr": float((r <= 10).double().mean()),
        "lrr": -float(ll.sum()) / float(torch.log(r).sum()),
        "fast-detectgpt": float((ll.sum() - mu.sum()) / var.sum().sqrt()),
        "_n": len(ids),
    }


def ref_fast_detectgpt_pair(sampling, scoring, text, cap):
    """Upstream get_sampling_discrepancy_analytic, one text: cut vocabularies to the smaller."""
    zr, ids = ref_logits(sampling, text, cap)
    zs_, _ = ref_logits(scoring, text, cap)
    V = min(zr.shape[-1], zs_.shape[-1])
    zr, zs_ = zr[:-1, :V], zs_[:-1, :V]
    y = ids[1:]
    lq = torch.log_softmax(zs_, -1)
    pr = torch.softmax(zr, -1)
    ll = lq.gather(-1, y[:, None])[:, 0]
    mean = (pr * lq).sum(-1)
    var = (pr * lq * lq).sum(-1) - mean ** 2
    return float((ll.sum() - mean.sum()) / var.sum().sqrt())


def ref_binoculars(observer, performer, text, cap):
    """Upstream metrics.py: ppl from the performer (shifted), x-ppl over all n positions."""
    zo, ids = ref_logits(observer, text, cap)
    zp, _ = ref_logits(performer, text, cap)
    ppl = float(torch.nn.functional.cross_entropy(zp[:-1], ids[1:]))
    x = -(torch.softmax(zo, -1) * torch.log_softmax(zp, -1)).sum(-1)
    return ppl / float(x.mean())


def close(a, b):
    return within_fp32(a, b, tokens=TOKENS, vocab=VOCAB)


# ----------------------------------------------------------------- tests
SINGLE = ["loglik", "rank", "logrank", "entropy", "gltr", "lrr"]


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_single_model_statistics_match_reference(arch, gpt2_path, llama_path, texts):
    path = gpt2_path if arch == "gpt2" else llama_path
    cap = 40
    good = [t for t in texts if len(ref_model(path)[1](t).input_ids) >= 2]
    refs = [ref_single(path, t, cap) for t in good]
    for stat in SINGLE:
        det = zs.ZeroShotDetector(stat, model=path, max_tokens=cap, batch_size=3)
        res = det.score_batch(good)
        for t, r, ref in zip(good, res, refs):
            assert r.status == "ok", (stat, t, r)
            assert close(r.raw, ref[stat]), (arch, stat, t, r.raw, ref[stat])
            assert r.detail["tokens_used"] == min(ref["_n"], cap)
            assert r.scale == zs.STATISTICS[stat].scale
    fdg = zs.FastDetectGPT(model=path, max_tokens=cap).score_batch(good)
    for r, ref in zip(fdg, refs):
        assert close(r.raw, ref["fast-detectgpt"])
        assert r.ai_probability is None  # no published mapping for this model
    # one forward pass per text served all seven statistics
    assert STATS.texts_forwarded == {(path, "cpu", "float32"): len(good)}


def test_llama_tokenizer_adds_bos_and_first_token_is_never_scored(llama_path):
    _, tok = ref_model(llama_path)
    text = "A model predicts the next token."
    ids = tok(text).input_ids
    assert ids[0] == tok.bos_token_id
    r = zs.ZeroShotDetector("loglik", model=llama_path).score_batch([text])[0]
    assert r.detail["n_tokens"] == len(ids)
    assert close(r.raw, ref_single(llama_path, text, 256)["loglik"])


def test_fast_detectgpt_pair_with_different_vocab_sizes(pair_paths, texts):
    sampling, scoring = pair_paths
    assert ref_model(sampling)[0].config.vocab_size != ref_model(scoring)[0].config.vocab_size
    det = zs.FastDetectGPT(sampling_model=sampling, scoring_model=scoring, max_tokens=60)
    res = det.score_batch(texts)
    for t, r in zip(texts, res):
        if len(ref_model(scoring)[1](t).input_ids) < 2:
            assert r.status == "too_short"
            continue
        assert close(r.raw, ref_fast_detectgpt_pair(sampling, scoring, t, 60)), t
    # the pair pass also yields each model's single-model statistics: no further pass
    before = dict(STATS.texts_forwarded)
    ll = zs.ZeroShotDetector("loglik", model=scoring, max_tokens=60).score_batch(texts)
    assert STATS.texts_forwarded == before
    for t, r in zip(texts, ll):
        if r.status == "ok":
            assert close(r.raw, ref_single(scoring, t, 60)["loglik"])


def test_binoculars_matches_upstream_formula(gpt2_path, pair_paths, texts):
    observer, performer = gpt2_path, pair_paths[0]
    det = zs.Binoculars(observer=observer, performer=performer, max_tokens=48)
    good = [t for t in texts if len(ref_model(observer)[1](t).input_ids) >= 2]
    for t, r in zip(good, det.score_batch(good)):
        b = ref_binoculars(observer, performer, t, 48)
        assert close(r.raw, b)
        assert r.ai_probability is None and r.direction == "higher_human"
        assert r.verdict == ("AI" if b < zs.BINOCULARS_THRESHOLDS["low-fpr"] else "Human")
        assert set(r.detail["verdicts"]) == {"accuracy", "low-fpr"}
    # Fast-DetectGPT on the same pair and loglik of either model: no extra pass
    before = dict(STATS.texts_forwarded)
    zs.FastDetectGPT(sampling_model=observer, scoring_model=performer, max_tokens=48).score_batch(good)
    zs.ZeroShotDetector("logrank", model=observer, max_tokens=48).score_batch(good)
    zs.ZeroShotDetector("loglik", model=performer, max_tokens=48).score_batch(good)
    assert STATS.texts_forwarded == before
    assert before == {(observer, "cpu", "float32"): len(good), (performer, "cpu", "float32"): len(good)}


def test_score_does_not_depend_on_batch_mates(llama_path, texts):
    target = texts[0]
    alone = zs.ZeroShotDetector("logrank", model=llama_path, max_tokens=256).score_batch([target])[0].raw
    MEMO.clear()
    mates = [texts[4] * 3, target, texts[3], texts[5]]
    batched = zs.ZeroShotDetector("logrank", model=llama_path, max_tokens=256, batch_size=4).score_batch(mates)[1].raw
    assert close(batched, alone)
    for stat in ("entropy", "lrr"):
        MEMO.clear()
        a = zs.ZeroShotDetector(stat, model=llama_path).score_batch([target])[0].raw
        MEMO.clear()
        b = zs.ZeroShotDetector(stat, model=llama_path, batch_size=8).score_batch(mates)[1].raw
        assert close(a, b)


def test_chunked_vocab_reductions_equal_unchunked(gpt2_path, texts):
    """A chunk of one row at a time gives the same numbers as one big chunk."""
    lm = engine_lm(gpt2_path)
    big = single_passes(lm, texts[:3], 64, memo=None)
    small = single_passes(lm, texts[:3], 64, memo=None, chunk_bytes=1)
    for a, b in zip(big, small):
        assert (a.rank == b.rank).all()
        assert a.ll == pytest.approx(b.ll, rel=1e-6)
        assert a.ent == pytest.approx(b.ent, rel=1e-6)


def engine_lm(path):
    from veribench.detectors.local.models import load_causal_lm

    return load_causal_lm(path, device="cpu", dtype="float32")


def test_ranks_count_strictly_greater_logits():
    z = torch.tensor([[1.0, 3.0, 3.0, 0.5], [2.0, 2.0, 2.0, 2.0]])
    ll, rank, ent, m2, _ = token_stats(z, torch.tensor([1, 3]))
    assert rank.tolist() == [1, 1]  # ties do not push a token down
    ll, rank, *_ = token_stats(z, torch.tensor([3, 0]))
    assert rank.tolist() == [4, 1]
    assert float(ent[1]) == pytest.approx(math.log(4), rel=1e-6)


def test_empty_and_whitespace_are_unscorable(gpt2_path):
    res = zs.ZeroShotDetector("loglik", model=gpt2_path).score_batch(["", "  \n\t", "fine text here"])
    assert [r.status for r in res] == ["unscorable", "unscorable", "ok"]
    assert STATS.texts_forwarded[(gpt2_path, "cpu", "float32")] == 1


def test_fast_detectgpt_published_mapping():
    c = zs.FAST_DETECTGPT_CALIBRATION[("falcon-7b", "falcon-7b-instruct")]
    d = 1.2

    def npdf(x, m, s):
        return math.exp(-0.5 * ((x - m) / s) ** 2) / (s * math.sqrt(2 * math.pi))

    want = npdf(d, c["mu1"], c["sigma1"]) / (npdf(d, c["mu0"], c["sigma0"]) + npdf(d, c["mu1"], c["sigma1"]))
    got = zs.fast_detectgpt_probability(d, "tiiuae/falcon-7b", "tiiuae/falcon-7b-instruct")
    assert got == pytest.approx(want, rel=1e-12)
    # a local copy gets the mapping only when the user names it for exactly that pair
    assert zs.fast_detectgpt_probability(d, "/models/falcon-7b", "/models/falcon-7b-instruct/") is None
    got = zs.fast_detectgpt_probability(d, "/models/falcon-7b", "/models/falcon-7b-instruct/",
                                        calibration="falcon-7b/falcon-7b-instruct")
    assert got == pytest.approx(want, rel=1e-12)
    assert zs.fast_detectgpt_probability(d, "smollm2", "smollm2") is None
    # two-sided boundary (sigma1 = 2 sigma0): very negative D is called AI again
    assert zs.fast_detectgpt_probability(-8.0, "tiiuae/falcon-7b", "tiiuae/falcon-7b-instruct") > 0.5


def test_c10_mapping_fitted_for_another_pair_is_refused(cases_dir, gpt2_path):
    """c10: a probability mapping fitted for another model pair is refused, at construction."""
    with pytest.raises(ValueError, match="gpt-j-6B/gpt-neo-2.7B was fitted for.*refused"):
        zs.FastDetectGPT(model="smollm2", calibration="gpt-j-6B/gpt-neo-2.7B", device="cpu")
    with pytest.raises(ValueError, match="no published mapping"):
        zs.FastDetectGPT(model=gpt2_path, calibration="gpt2/gpt2", device="cpu")
    from veribench.registry import create

    with pytest.raises(ValueError, match="refused"):
        create("detector", "fast-detectgpt", {"sampling_model": "tiiuae/falcon-7b", "scoring_model": gpt2_path,
                                              "calibration": "falcon-7b/falcon-7b-instruct", "device": "cpu"})
    # without a mapping for the running pair, P(AI) stays None and D is the native score
    r = zs.FastDetectGPT(model=gpt2_path, device="cpu").score_batch(["A model predicts the next token."])[0]
    assert r.ai_probability is None and r.oriented == r.raw
    assert r.detail["calibration"] == {"pair": None, "reason": "no published mapping for this model pair"}
    # the c10 criteria: the published two-Gaussian mapping is not monotone in D, which is why
    # it never ranks (AUROC on the criterion itself is 1.0)
    import csv

    rows = list(csv.DictReader((cases_dir / "c10" / "crit.csv").open()))
    p = [zs.fast_detectgpt_probability(float(r["fast_detectgpt_crit"]), "tiiuae/falcon-7b",
                                       "tiiuae/falcon-7b-instruct") for r in rows]
    assert p[0] > 0.999 > p[1]  # -6 maps to P(AI) ~0.9997, -1 does not


def test_directions_are_fixed_from_papers_not_from_data():
    """Every statistic's direction is data with its source; nothing depends on the texts."""
    for name, stat in zs.STATISTICS.items():
        assert stat.direction in ("higher_ai", "higher_human") and stat.direction_source, name
    assert zs.STATISTICS["entropy"].direction == "higher_human"
    assert "Gehrmann" in zs.STATISTICS["entropy"].direction_source
    assert set(zs.PAIR_DIRECTIONS) == {"fast-detectgpt", "binoculars"}


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(zs.STATISTICS)), st.integers(2, 40), st.integers(0, 2**31 - 1))
def test_direction_never_depends_on_the_scored_values(stat, n, seed):
    """Whatever the per-position values (texts where entropy runs high or low), each
    result carries the table's direction: nothing is oriented after seeing scores."""
    import numpy as np

    rng = np.random.default_rng(seed)
    sp = SinglePass(n, np.arange(n), -rng.exponential(3, n - 1), rng.integers(1, 500, n - 1),
                           rng.exponential(2, n - 1), rng.exponential(8, n - 1))
    r = zs.ZeroShotDetector(stat, model="smollm2", device="cpu")._result(sp, 64)
    assert r.status != "ok" or r.direction == zs.STATISTICS[stat].direction


def test_model_load_errors_name_the_model(tmp_path):
    from veribench.detectors.local.models import ModelLoadError, load_causal_lm

    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match="empty.*config.json"):
        load_causal_lm(str(tmp_path / "empty"), device="cpu")
    with pytest.raises(ModelLoadError, match="no-such-org/no-such-model"):
        load_causal_lm("no-such-org/no-such-model", device="cpu")
