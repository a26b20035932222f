"""CPU benchmark: veribench's zero-shot engine vs the upstream-style per-text loop.

Both compute the same statistics (loglik, rank, logrank, entropy, lrr, Fast-DetectGPT
same-model) on the same texts with the same small randomly initialised GPT-2, in one
run, so the ratio is measured under the same load:

- reference: one text per forward pass, full logits, each statistic by its own direct
  formula (as fast-detect-gpt's baselines.py and MGTBench do, but sharing one pass per text);
- veribench: the six detectors through the engine (length-bucketed batches, one shared
  pass per text, chunked fp32 vocabulary reductions).

Usage: python benchmarks/bench_zeroshot_cpu.py [--texts 96] [--cap 256] [--threads 2]
Prints one JSON line with tokens/s of each and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("VERIBENCH_SHARED", HERE.parent.parent / "shared"))


def build_model(folder: Path, texts: list[str], vocab: int, layers: int, dim: int):
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainer=trainers.BpeTrainer(
        vocab_size=vocab, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=len(fast), n_positions=1024, n_embd=dim, n_layer=layers, n_head=max(1, dim // 64),
                     bos_token_id=0, eos_token_id=0)
    GPT2LMHeadModel(cfg).save_pretrained(folder)
    fast.save_pretrained(folder)
    return cfg


def reference_loop(model, tok, texts: list[str], cap: int) -> tuple[int, list[dict]]:
    """Upstream style: one text per pass, fp32 logits, direct formulas."""
    import torch

    out, n_tok = [], 0
    for t in texts:
        ids = tok(t, truncation=True, max_length=cap, return_tensors="pt").input_ids
        with torch.no_grad():
            logits = model(ids).logits[:, :-1].float()
        labels = ids[:, 1:]
        n_tok += ids.shape[1]
        lprobs = torch.log_softmax(logits, dim=-1)
        ll = lprobs.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
        matches = (logits.argsort(-1, descending=True) == labels.unsqueeze(-1)).nonzero()
        ranks = matches[:, -1].float() + 1
        probs = torch.softmax(logits, dim=-1)
        ent = -(probs * lprobs).sum(-1)
        mean = (probs * lprobs).sum(-1)
        var = (probs * lprobs.square()).sum(-1) - mean.square()
        out.append({
            "loglik": ll.mean().item(), "rank": -ranks.mean().item(), "logrank": -ranks.log().mean().item(),
            "entropy": ent.mean().item(), "lrr": -(ll.sum() / ranks.log().sum()).item(),
            "fast-detectgpt": ((ll.sum() - mean.sum()) / var.sum().sqrt()).item(),
        })
    return n_tok, out


def reference_per_criterion(model, tok, texts: list[str], cap: int) -> int:
    """Closer still to upstream: fast-detect-gpt's baselines.py runs one pass per criterion
    (likelihood, rank, logrank, entropy), DetectLLM one for LRR, fast_detect_gpt.py one more."""
    n = 0
    for crit in ("loglik", "rank", "logrank", "entropy", "lrr", "fast-detectgpt"):
        k, _ = reference_loop(model, tok, texts, cap)
        n += k
    return n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", type=int, default=96)
    ap.add_argument("--cap", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--batch", type=int, default=16)
    a = ap.parse_args()

    import torch

    torch.set_num_threads(a.threads)
    d = json.loads((SHARED / "data" / "fastdetectgpt" / "xsum_gpt-3.5-turbo.raw_data.json").read_text())
    texts = (d["original"] + d["sampled"])[: a.texts]

    sys.path.insert(0, str(HERE.parent / "src"))
    from veribench.detectors.local import engine
    from veribench.detectors.local import zeroshot as zs
    from veribench.detectors.local.models import load_causal_lm

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "gpt2-small-random"
        cfg = build_model(folder, d["original"] + d["sampled"], a.vocab, a.layers, a.dim)
        lm = load_causal_lm(str(folder), device="cpu", dtype="float32")
        params = sum(p.numel() for p in lm.model.parameters())
        # warm-up both paths on a few texts
        reference_loop(lm.model, lm.tokenizer, texts[:4], a.cap)
        zs.ZeroShotDetector("loglik", model=str(folder), max_tokens=a.cap).score_batch(texts[:4])
        engine.MEMO.clear()

        t0 = time.perf_counter()
        n_tok, ref = reference_loop(lm.model, lm.tokenizer, texts, a.cap)
        t_ref = time.perf_counter() - t0

        t0 = time.perf_counter()  # on every 4th text (it is slow): tokens/s of text scored
        n_crit = reference_per_criterion(lm.model, lm.tokenizer, texts[::4], a.cap) // 6
        crit_tps = n_crit / (time.perf_counter() - t0)

        engine.MEMO.clear()
        engine.STATS.reset()
        t0 = time.perf_counter()
        kw = {"model": str(folder), "max_tokens": a.cap, "batch_size": a.batch, "device": "cpu", "dtype": "float32"}
        ours = {s: zs.ZeroShotDetector(s, **kw).score_batch(texts)
                for s in ("loglik", "rank", "logrank", "entropy", "lrr")}
        ours["fast-detectgpt"] = zs.FastDetectGPT(**kw).score_batch(texts)
        t_vb = time.perf_counter() - t0

    worst = 0.0
    for s, res in ours.items():
        for r, x in zip(res, ref):
            if s == "rank":  # argsort breaks ties arbitrarily upstream; compare the rest
                continue
            worst = max(worst, abs(r.raw - x[s]) / max(abs(x[s]), 1e-12))
    row = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} cores, torch threads {a.threads}".strip(),
        "model": f"random GPT-2, {a.layers} layers, dim {a.dim}, vocab {cfg.vocab_size}, {params / 1e6:.1f}M params",
        "texts": len(texts), "tokens": n_tok, "cap": a.cap,
        "reference_tokens_per_s": round(n_tok / t_ref, 1), "veribench_tokens_per_s": round(n_tok / t_vb, 1),
        "ratio": round(t_ref / t_vb, 2),
        "one_pass_per_criterion_tokens_per_s": round(crit_tps, 1),
        "ratio_vs_one_pass_per_criterion": round(n_tok / t_vb / crit_tps, 2), "passes_per_text": sum(engine.STATS.texts_forwarded.values()) / len(texts),
        "max_rel_diff_vs_reference": worst,
    }
    print(json.dumps(row))


if __name__ == "__main__":
    main()
