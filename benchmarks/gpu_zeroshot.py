"""GPU benchmark (one prepared script for the `device` tool; one H200 expected).

Measures tokens/s of the upstream-style per-text loop and of veribench's engine, with
every single-model statistic computed, on randomly initialised weights of:

- GPT-2-XL (1.5B; 48 layers, 1600 dims, vocab 50,257);
- a 7B Llama-architecture model with a 65,024 vocabulary (Falcon's; 32 layers, 4096 dims,
  11,008 MLP);
- the pair case: two such 7B models, Binoculars + Fast-DetectGPT (two passes per text).

Texts are random token ids of 250-520 tokens (the reference's setting), decoded by no
tokenizer: both paths get the same ids, so the timing is the model and the statistics.
Reports the share of the compute floor, 2·params FLOP per token at 790 TFLOP/s (bf16
dense on H200). Prints one JSON line per measurement and writes them to
$OUT/gpu_zeroshot.jsonl when OUT is set.

Usage: python benchmarks/gpu_zeroshot.py [--quick] [--only gpt2xl|7b|pair]
(--quick: fewer texts, for a first check that everything runs within the time limit.)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

PEAK_FLOPS = 790e12  # H200 bf16 dense, as in shared/reference/detectors.md


class _IdTokenizer:
    """Stands in for a tokenizer: texts are strings of space-separated token ids."""

    def __call__(self, texts, **_):
        return {"input_ids": [[int(x) for x in t.split()] for t in texts]}


def make_lm(kind: str, device: str):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    from veribench.detectors.local.models import LoadedModel

    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)  # initialise directly in bf16, on the GPU
    with torch.device(device):
        if kind == "gpt2xl":
            cfg = GPT2Config(n_layer=48, n_embd=1600, n_head=25, vocab_size=50257, n_positions=1024)
            model = GPT2LMHeadModel(cfg)
        else:
            cfg = LlamaConfig(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                              num_attention_heads=32, num_key_value_heads=32, vocab_size=65024,
                              max_position_embeddings=2048, tie_word_embeddings=False)
            model = LlamaForCausalLM(cfg)
    torch.set_default_dtype(torch.float32)
    model = model.to(torch.bfloat16).eval()
    params = sum(p.numel() for p in model.parameters())
    return LoadedModel(name=f"random-{kind}", model=model, tokenizer=_IdTokenizer(), device=device,
                       dtype="bfloat16"), params


def make_texts(n: int, vocab: int, seed: int = 0) -> list[str]:
    import random

    rng = random.Random(seed)
    return [" ".join(str(rng.randrange(vocab)) for _ in range(rng.randint(250, 520))) for _ in range(n)]


def loop_reference(lm, texts, cap=2048):
    """Upstream style: one text per forward pass, full logits, each statistic directly."""
    import torch

    n = 0
    for t in texts:
        ids = torch.tensor([[int(x) for x in t.split()][:cap]], device=lm.device)
        n += ids.shape[1]
        with torch.no_grad():
            logits = lm.model(ids).logits[:, :-1].float()
        labels = ids[:, 1:]
        lp = torch.log_softmax(logits, -1)
        ll = lp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
        r = (logits > logits.gather(-1, labels.unsqueeze(-1))).sum(-1) + 1
        p = lp.exp()
        mu = (p * lp).sum(-1)
        var = (p * lp * lp).sum(-1) - mu * mu
        _ = (ll.mean().item(), r.float().log().mean().item(), (-mu).mean().item(),
             ((ll.sum() - mu.sum()) / var.sum().sqrt()).item())
    torch.cuda.synchronize()
    return n


def timed(fn, *a, **kw):
    import torch

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    n = fn(*a, **kw)
    torch.cuda.synchronize()
    return n, time.perf_counter() - t0


def engine_single(lm, texts, batch, max_batch_tokens):
    from veribench.detectors.local import engine

    engine.MEMO.clear()
    out = engine.single_passes(lm, texts, 2048, batch_size=batch, max_batch_tokens=max_batch_tokens,
                               chunk_bytes=1 << 30)
    return sum(o.tokens_used for o in out)


def engine_pair(lp, lq, texts, batch, max_batch_tokens):
    from veribench.detectors.local import engine

    engine.MEMO.clear()
    out = engine.pair_passes(lp, lq, texts, 512, batch_size=batch, max_batch_tokens=max_batch_tokens,
                             chunk_bytes=1 << 30)
    return sum(o[0].tokens_used for o in out)


def emit(row, sink):
    print(json.dumps(row), flush=True)
    if sink:
        sink.write(json.dumps(row) + "\n")
        sink.flush()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=["gpt2xl", "7b", "pair"], default=None)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--max-batch-tokens", type=int, default=64 * 520)
    a = ap.parse_args()

    import torch

    if not torch.cuda.is_available():
        sys.exit("gpu_zeroshot.py needs a CUDA GPU")
    torch.backends.cuda.matmul.allow_tf32 = True
    dev = "cuda"
    out_dir = os.environ.get("OUT")
    sink = open(Path(out_dir) / "gpu_zeroshot.jsonl", "w") if out_dir else None
    n_loop = 16 if a.quick else 48
    n_eng = 128 if a.quick else 512
    emit({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}, sink)

    for kind in ("gpt2xl", "7b"):
        if a.only not in (None, kind):
            continue
        lm, params = make_lm(kind, dev)
        vocab = lm.vocab_size
        floor = PEAK_FLOPS / (2 * params)
        loop_reference(lm, make_texts(2, vocab, 9))  # warm-up
        engine_single(lm, make_texts(8, vocab, 9), a.batch, a.max_batch_tokens)
        n, t = timed(loop_reference, lm, make_texts(n_loop, vocab, 1))
        emit({"model": kind, "params": params, "path": "per-text loop", "tokens_per_s": n / t,
              "share_of_floor": n / t / floor, "floor_tokens_per_s": floor}, sink)
        n, t = timed(engine_single, lm, make_texts(n_eng, vocab, 2), a.batch, a.max_batch_tokens)
        emit({"model": kind, "params": params, "path": "veribench engine (all single-model statistics)",
              "tokens_per_s": n / t, "share_of_floor": n / t / floor, "floor_tokens_per_s": floor,
              "peak_mem_gb": torch.cuda.max_memory_allocated() / 2**30}, sink)
        del lm
        torch.cuda.empty_cache()

    if a.only in (None, "pair"):
        lp, params = make_lm("7b", dev)
        torch.manual_seed(1)
        lq, _ = make_lm("7b", dev)
        lq.name = "random-7b-performer"
        floor = PEAK_FLOPS / (2 * 2 * params)  # two passes per text
        engine_pair(lp, lq, make_texts(8, lp.vocab_size, 9), a.batch, a.max_batch_tokens)
        n, t = timed(engine_pair, lp, lq, make_texts(n_eng // 2, lp.vocab_size, 3), a.batch, a.max_batch_tokens)
        emit({"model": "two 7B (Binoculars + Fast-DetectGPT pair)", "params_each": params,
              "path": "veribench engine, both passes", "tokens_per_s": n / t, "share_of_floor": n / t / floor,
              "floor_tokens_per_s": floor, "peak_mem_gb": torch.cuda.max_memory_allocated() / 2**30}, sink)
    if sink:
        sink.close()


if __name__ == "__main__":
    main()
