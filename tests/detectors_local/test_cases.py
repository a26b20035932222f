"""Cases c11 (truncation) and c27 (entropy) from tests/data/cases."""

from __future__ import annotations

import json
import math

import pytest
import torch

from veribench.detectors.local import zeroshot as zs
from veribench.detectors.local.engine.memo import MEMO
from veribench.detectors.local.engine.vocab import cross_stats, token_stats
from veribench.detectors.local.tolerance import within_fp32


def test_c27_entropy_cases(cases_dir):
    cases = json.loads((cases_dir / "c27" / "entropy_cases.json").read_text())
    for c in cases:
        if "probs" in c:
            z = torch.log(torch.tensor([c["probs"]], dtype=torch.float32))  # log 0 = -inf logits
            want = c["expected_entropy_nats"]
        else:
            z = torch.tensor([c["logits"]], dtype=getattr(torch, c["dtype"]))
            want = c["expected_entropy_nats_approx"]
        _, _, ent, m2, logp = token_stats(z, torch.tensor([0]))
        assert not math.isnan(float(ent[0])) and not math.isnan(float(m2[0]))
        assert float(ent[0]) == pytest.approx(want, abs=1e-6)
        # and the cross term used by Fast-DetectGPT/Binoculars stays finite too
        mu, xm2 = cross_stats(z, logp)
        assert math.isfinite(float(mu[0])) and float(-mu[0]) == pytest.approx(want, abs=1e-6)


@pytest.mark.parametrize("stat", ["loglik", "entropy", "fast-detectgpt"])
def test_c11_long_text_truncates_and_equals_cut_text(stat, cases_dir, gpt2_path, llama_path):
    text = (cases_dir / "c11" / "long_text.txt").read_text()
    path = llama_path
    cap = 100
    make = (lambda: zs.FastDetectGPT(model=path, max_tokens=cap)) if stat == "fast-detectgpt" else \
        (lambda: zs.ZeroShotDetector(stat, model=path, max_tokens=cap))
    r = make().score_batch([text])[0]
    assert r.status == "ok"
    tok = engine_tok(path)
    ids = tok(text).input_ids
    assert r.detail["n_tokens"] == len(ids) > cap
    assert r.detail["tokens_used"] == cap and r.detail["truncated"] is True
    cut = tok.decode(ids[1:cap], skip_special_tokens=False)  # drop BOS: the tokenizer adds it again
    assert tok(cut).input_ids == ids[:cap]
    MEMO.clear()
    r2 = make().score_batch([cut])[0]
    assert r2.detail["truncated"] is False and r2.detail["tokens_used"] == cap
    assert within_fp32(r.raw, r2.raw, tokens=cap, vocab=len(tok))  # docs/statistics.md, fp32 tolerance


def test_c11_cap_above_model_positions_does_not_crash(cases_dir, gpt2_path):
    """GPT-2 fixture has 64 positions: a cap of 2048 (Fast-DetectGPT's) is bounded by it."""
    text = (cases_dir / "c11" / "long_text.txt").read_text()
    r = zs.FastDetectGPT(model=gpt2_path).score_batch([text])[0]
    assert r.status == "ok" and r.detail["tokens_used"] == 64 and r.detail["truncated"] is True


def engine_tok(path):
    from veribench.detectors.local.models import load_tokenizer

    return load_tokenizer(path)
