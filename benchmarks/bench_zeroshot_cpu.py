"""CPU benchmark of the zero-shot engine: layouts, kernels, threads and precision, in one run.

On the demo's own input (the 120 fast-detect-gpt texts of ``veribench/data/demo``, cap 96
tokens) and SmolLM2-135M (``--model smollm2``, the default; or a small random GPT-2 with
``--model random``), it measures tokens/s of every single-model statistic computed for
every text, for:

- ``reference``: the upstream-style per-text loop (one text per pass, full logits,
  statistics by direct formulas, ranks by counting greater logits);
- ``padded, 2 threads, whole-chunk statistics``: length-sorted right-padded batches with
  a mask, torch's two threads, statistics over whole logit chunks: the engine as it was
  before packing (issue 12's "about 370 tokens/s");
- the engine's layouts and settings one at a time: padded, packed with per-text SDPA
  (``segments``, the default) or transformers' block-diagonal mask (``sdpa_mask``),
  statistics in cache-sized blocks or whole chunks, threads adaptive / 1 / 2, packs of
  1024 or 4096 tokens;
- ``packed/segments bf16``: the same in bf16, with the largest relative difference of
  each statistic from fp32 (the engine's CPU default stays fp32 when this exceeds 1e-4).

Every path's statistics are compared with the reference (max of |a - b| / max(|b|, 1)). The
machine's load average is printed before and after: on a shared machine, read the
ratios (measured under the same load), not the absolute figures.

Usage: python benchmarks/bench_zeroshot_cpu.py [--model smollm2|random] [--texts 120] [--cap 96] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as the engine sets it (models._torch)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
DEMO = HERE.parent / "src" / "veribench" / "data" / "demo" / "fastdetectgpt"


def demo_texts(n: int) -> list[str]:
    out = []
    for f in sorted(DEMO.glob("*.raw_data.json")):
        d = json.loads(f.read_text())
        out += d["original"] + d["sampled"]
    return out[:n]


def build_random(folder: Path, texts: list[str], vocab: int = 8192, layers: int = 4, dim: int = 256) -> str:
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
    return str(folder)


def reference(lm, texts, cap):
    """Per-text loop: one pass per text, direct formulas."""
    import torch

    out, n = [], 0
    for t in texts:
        ids = lm.tokenizer(t, truncation=True, max_length=cap, return_tensors="pt").input_ids
        n += ids.shape[1]
        with torch.no_grad():
            z = lm.model(ids).logits[0, :-1].float()
        y = ids[0, 1:]
        lp = torch.log_softmax(z, -1)
        p = lp.exp()
        ll = lp[torch.arange(len(y)), y].double()
        r = 1 + (z > z[torch.arange(len(y)), y][:, None]).sum(-1).double()
        mu = (p * lp).sum(-1).double()
        var = (p * lp * lp).sum(-1).double() - mu ** 2
        out.append({"loglik": float(ll.mean()), "logrank": -float(torch.log(r).mean()),
                    "entropy": float(-mu.mean()), "lrr": -float(ll.sum() / torch.log(r).sum()),
                    "fast-detectgpt": float((ll.sum() - mu.sum()) / var.sum().sqrt())})
    return n, out


def engine_stats(passes):
    from veribench.detectors.local import zeroshot as zs

    return [{"loglik": zs.STATISTICS["loglik"].fn(sp), "logrank": zs.STATISTICS["logrank"].fn(sp),
             "entropy": zs.STATISTICS["entropy"].fn(sp), "lrr": zs.STATISTICS["lrr"].fn(sp),
             "fast-detectgpt": zs.fast_detectgpt_terms(sp.ll, -sp.ent, sp.m2)} for sp in passes]


def max_rel(a, b) -> dict[str, float]:
    """Per statistic, max |a - b| / max(|b|, 1): relative for the usual magnitudes, absolute
    near zero (Fast-DetectGPT's D crosses zero, where a relative difference means nothing)."""
    return {k: max(abs(x[k] - y[k]) / max(abs(y[k]), 1.0) for x, y in zip(a, b)) for k in a[0]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2", help="smollm2 (real, offline) or random")
    ap.add_argument("--texts", type=int, default=120)
    ap.add_argument("--cap", type=int, default=96)
    ap.add_argument("--repeat", type=int, default=1, help="timed passes per path (best kept)")
    ap.add_argument("--skip-reference", action="store_true")
    a = ap.parse_args()

    import torch

    from veribench.detectors.local.engine.passes import single_passes
    from veribench.detectors.local.engine.plan import resolve_plan
    from veribench.detectors.local.models import load_causal_lm

    texts = demo_texts(a.texts)
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        name = a.model if a.model != "random" else build_random(Path(tmp) / "gpt2", texts)
        t0 = time.perf_counter()
        lm = load_causal_lm(name, device="cpu", dtype="float32")
        load_s = time.perf_counter() - t0
        rows = []
        n_tok, ref = (0, None) if a.skip_reference else (None, None)
        if not a.skip_reference:
            t0 = time.perf_counter()
            n_tok, ref = reference(lm, texts, a.cap)
            rows.append({"path": "reference (per-text loop)", "tokens_per_s": round(n_tok / (time.perf_counter() - t0), 1)})
        plans = [
            ("padded, 2 threads, whole-chunk statistics (the engine before)",
             resolve_plan(lm, packing="padded", threads=2, stats_rows=None)),
            ("padded", resolve_plan(lm, packing="padded")),
            ("packed/segments, whole-chunk statistics", resolve_plan(lm, stats_rows=None)),
            ("packed/segments (default)", resolve_plan(lm)),
            ("packed/segments, 1 thread", resolve_plan(lm, threads=1)),
            ("packed/segments, 2 threads", resolve_plan(lm, threads=2)),
            ("packed/segments, packs of 4096", resolve_plan(lm, pack_tokens=4096)),
            ("packed/sdpa_mask", resolve_plan(lm, attention="sdpa_mask")),
        ]
        fp32 = None
        for label, plan in plans:
            single_passes(lm, texts[:4], a.cap, memo=None, plan=plan)  # warm-up
            best = 0.0
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                out = single_passes(lm, texts, a.cap, memo=None, plan=plan)
                el = time.perf_counter() - t0
                n = sum(o.tokens_used for o in out)
                best = max(best, n / el)
            st = engine_stats(out)
            fp32 = fp32 or st
            row = {"path": label, "tokens_per_s": round(best, 1)}
            if ref is not None:
                row["max_diff_vs_reference"] = max(max_rel(st, ref).values())
            rows.append(row)
        lm16 = load_causal_lm(name, device="cpu", dtype="bfloat16")
        plan = resolve_plan(lm16, packing="packed", attention="segments")
        single_passes(lm16, texts[:4], a.cap, memo=None, plan=plan)
        t0 = time.perf_counter()
        out = single_passes(lm16, texts, a.cap, memo=None, plan=plan)
        el = time.perf_counter() - t0
        rows.append({"path": "packed/segments bf16 body", "tokens_per_s": round(sum(o.tokens_used for o in out) / el, 1),
                     "max_diff_vs_fp32": max_rel(engine_stats(out), fp32)})
    print(json.dumps({
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()} {os.cpu_count()} cores, torch {torch.__version__}",
        "model": name if a.model != "random" else "random GPT-2 (4 layers, 256 dims)",
        "texts": len(texts), "cap": a.cap, "model_load_s": round(load_s, 2),
        "load_average_before": [round(x, 2) for x in load0],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "rows": rows,
    }, indent=1))


if __name__ == "__main__":
    main()
