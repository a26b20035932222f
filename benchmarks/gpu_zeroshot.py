"""GPU benchmark of the zero-shot engine (issue 17): one prepared run on one H200.

For each model set it measures, side by side and in one run:

1. **loop**: the upstream-style per-text loop (one text per forward pass, full logits,
   each statistic by its direct formula; fast-detect-gpt / MGTBench style);
2. **padded**: plain batching, right-padded batches of 64 with an attention mask through
   the model's own SDPA attention (veribench's engine, ``packing="padded"``);
3. **packed**: texts concatenated without padding, per-text positions, FlashAttention's
   variable-length kernel (``packing="packed"``, ``attention`` auto = ``varlen`` on CUDA);
4. **packed+compiled**: the same with ``torch.compile`` on the body and bucketed pack
   lengths (compile time reported separately; throughput measured after warm-up);

and reports tokens/s and the share of the compute floor (2·params FLOP per token at
``--peak-tflops``, 790 by default as in ``shared/reference/detectors.md``; two passes for
a pair). Model sets, all random-initialised in bf16 (real architectures):

- ``gpt2xl``: GPT-2-XL, 1.5B (48 layers, 1600 dims, vocabulary 50,257);
- ``7b``: a 7B Llama architecture with Falcon's 65,024 vocabulary (32 layers, 4096 dims);
- ``pair``: two such 7B models, Binoculars + Fast-DetectGPT (observer and performer
  share the packing; two passes per text).

Agreement: on a few texts, every statistic from the engine's default GPU path (bf16 body,
fp32 statistics) is compared with a per-text fp32 reference on the CPU (the same weights
upcast to fp32), as max and median relative difference.

Texts are random token ids of 250-520 tokens (the reference measurement's setting); both
paths get the same ids. One JSON line per measurement on stdout, and in
``$OUT/gpu_zeroshot.jsonl`` when ``OUT`` is set.

Usage (the prepared device command; stops starting new measurements near the limit):

    python benchmarks/gpu_zeroshot.py --time-limit 540

``--quick`` uses fewer texts; ``--only gpt2xl|7b|pair`` one set. ``--tiny --device cpu``
runs the same code on tiny configurations on the CPU (compile with the ``eager``
backend and the ``sdpa_mask`` kernel), which the test suite runs to keep the script working.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

PEAK_TFLOPS = 790.0  # H200 bf16 dense, as in shared/reference/detectors.md


class _IdTokenizer:
    """Stands in for a tokenizer: texts are strings of space-separated token ids."""

    def __call__(self, texts, **_):
        return {"input_ids": [[int(x) for x in t.split()] for t in texts]}


def make_lm(kind: str, device: str, dtype: str, tiny: bool, seed: int = 0):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    from veribench.detectors.local.models import LoadedModel

    torch.manual_seed(seed)
    tdt = getattr(torch, dtype)
    torch.set_default_dtype(tdt)  # initialise directly in the target dtype, on the device
    try:
        with torch.device(device):
            if kind == "gpt2xl":
                cfg = (GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=1000, n_positions=1024, bos_token_id=0,
                                  eos_token_id=0) if tiny else
                       GPT2Config(n_layer=48, n_embd=1600, n_head=25, vocab_size=50257, n_positions=1024))
                model = GPT2LMHeadModel(cfg)
            else:
                cfg = (LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=1200, max_position_embeddings=2048,
                                   tie_word_embeddings=False) if tiny else
                       LlamaConfig(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                                   num_attention_heads=32, num_key_value_heads=32, vocab_size=65024,
                                   max_position_embeddings=2048, tie_word_embeddings=False))
                model = LlamaForCausalLM(cfg)
    finally:
        torch.set_default_dtype(torch.float32)
    model = model.to(tdt).eval()
    model.config._attn_implementation = "sdpa"
    params = sum(p.numel() for p in model.parameters())
    name = f"random-{kind}" + ("-tiny" if tiny else "") + (f"-seed{seed}" if seed else "")
    return LoadedModel(name=name, model=model, tokenizer=_IdTokenizer(), device=device, dtype=dtype), params


def make_texts(n: int, vocab: int, seed: int, lo: int, hi: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(str(rng.randrange(vocab)) for _ in range(rng.randint(lo, hi))) for _ in range(n)]


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def loop_reference(lm, texts, cap: int = 2048):
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
    sync(lm.device)
    return n


def timed(device: str, fn, *a, **kw):
    sync(device)
    t0 = time.perf_counter()
    n = fn(*a, **kw)
    sync(device)
    return n, time.perf_counter() - t0


def plans(lm, args):
    """The engine paths to compare: (label, plan)."""
    from veribench.detectors.local.engine.plan import resolve_plan

    cuda = lm.device.startswith("cuda")
    packed_att = "auto" if cuda else "segments"
    comp_att = "auto" if cuda else "sdpa_mask"
    backend = args.compile_backend or ("inductor" if cuda else "eager")
    out = [("padded", resolve_plan(lm, packing="padded", batch_size=args.batch,
                                          max_batch_tokens=args.batch * 520)),
           ("packed", resolve_plan(lm, packing="packed", attention=packed_att, compile="off",
                                          pack_tokens=args.pack_tokens))]
    try:
        out.append(("packed+compiled", resolve_plan(lm, packing="packed", attention=comp_att, compile="on",
                                                           pack_tokens=args.pack_tokens, compile_backend=backend)))
    except ValueError as e:  # e.g. no varlen kernel here
        out.append(("packed+compiled", str(e)))
    if cuda and args.cuda_graphs:
        try:
            out.append(("packed+compiled+cudagraphs", resolve_plan(
                lm, packing="packed", attention=comp_att, compile="on", pack_tokens=args.pack_tokens,
                compile_backend=backend, compile_mode="reduce-overhead")))
        except ValueError as e:
            out.append(("packed+compiled+cudagraphs", str(e)))
    return out


def run_single(lm, texts, plan):
    from veribench.detectors.local.engine.memo import MEMO
    from veribench.detectors.local.engine.passes import single_passes

    MEMO.clear()
    out = single_passes(lm, texts, 2048, chunk_bytes=1 << 30, memo=None, plan=plan)
    return sum(o.tokens_used for o in out)


def run_pair(lp, lq, texts, plan):
    from veribench.detectors.local.engine.memo import MEMO
    from veribench.detectors.local.engine.passes import pair_passes

    MEMO.clear()
    out = pair_passes(lp, lq, texts, 512, chunk_bytes=1 << 30, memo=None, plan=plan)
    return sum(o[0].tokens_used for o in out)


def cpu_reference(model_cpu, ids):
    """Per-text fp32 reference on the CPU: loglik, logrank, entropy, Fast-DetectGPT (same model)."""
    import torch

    with torch.no_grad():
        z = model_cpu(torch.tensor([ids])).logits[0].double()
    y = torch.tensor(ids[1:])
    zz = z[:-1]
    lp = torch.log_softmax(zz, -1)
    p = lp.exp()
    ll = lp[torch.arange(len(y)), y]
    r = 1 + (zz > zz[torch.arange(len(y)), y][:, None]).sum(-1).double()
    mu = (p * lp).sum(-1)
    var = (p * lp * lp).sum(-1) - mu * mu
    return {"loglik": float(ll.mean()), "logrank": -float(torch.log(r).mean()), "entropy": float(-mu.mean()),
            "fast-detectgpt": float((ll.sum() - mu.sum()) / var.sum().sqrt()), "_z": z}


def agreement(lm, texts, plan, emit, label):
    """Engine on the device (default plan) vs the per-text fp32 CPU reference."""
    import copy

    import numpy as np
    import torch

    from veribench.detectors.local import zeroshot as zs
    from veribench.detectors.local.engine.passes import single_passes

    ref_model = copy.deepcopy(lm.model).to("cpu").float().eval()
    outs = single_passes(lm, texts, 2048, memo=None, plan=plan)
    rel: dict[str, list[float]] = {}
    for t, sp in zip(texts, outs):
        ids = [int(x) for x in t.split()]
        ref = cpu_reference(ref_model, ids)
        mine = {"loglik": zs.STATISTICS["loglik"].fn(sp), "logrank": zs.STATISTICS["logrank"].fn(sp),
                "entropy": zs.STATISTICS["entropy"].fn(sp),
                "fast-detectgpt": zs.fast_detectgpt_terms(sp.ll, -sp.ent, sp.m2)}
        for k, v in mine.items():
            rel.setdefault(k, []).append(abs(v - ref[k]) / max(abs(ref[k]), 1e-12))
    del ref_model
    torch.cuda.empty_cache() if torch.cuda.is_available() else None
    emit({"model": label, "measure": "agreement with CPU fp32 per-text reference", "plan": plan.record(),
          "texts": len(texts),
          "max_rel_diff": {k: float(np.max(v)) for k, v in rel.items()},
          "median_rel_diff": {k: float(np.median(v)) for k, v in rel.items()},
          "within_1e-3": all(max(v) <= 1e-3 for v in rel.values())})


def pair_agreement(lp, lq, texts, plan, emit):
    """Binoculars and Fast-DetectGPT on the pair vs a per-text fp32 CPU reference."""
    import copy

    import numpy as np
    import torch

    from veribench.detectors.local import zeroshot as zs
    from veribench.detectors.local.engine.passes import pair_passes

    mp = copy.deepcopy(lp.model).to("cpu").float().eval()
    mq = copy.deepcopy(lq.model).to("cpu").float().eval()
    outs = pair_passes(lp, lq, texts, 512, memo=None, plan=plan)
    rel: dict[str, list[float]] = {"binoculars": [], "fast-detectgpt": []}
    for t, (pr, _sp, sq) in zip(texts, outs):
        ids = [int(x) for x in t.split()][:512]
        with torch.no_grad():
            zo = mp(torch.tensor([ids])).logits[0].double()
            zq = mq(torch.tensor([ids])).logits[0].double()
        y = torch.tensor(ids[1:])
        ppl = float(torch.nn.functional.cross_entropy(zq[:-1], y))
        x = -(torch.softmax(zo, -1) * torch.log_softmax(zq, -1)).sum(-1)
        b_ref = ppl / float(x.mean())
        lq_ = torch.log_softmax(zq[:-1], -1)
        pr_ = torch.softmax(zo[:-1], -1)
        ll = lq_.gather(-1, y[:, None])[:, 0]
        mean = (pr_ * lq_).sum(-1)
        var = (pr_ * lq_ * lq_).sum(-1) - mean ** 2
        d_ref = float((ll.sum() - mean.sum()) / var.sum().sqrt())
        b = zs.binoculars_statistic(pr, sq)[0]
        m = pr.tokens_used - 1
        d = zs.fast_detectgpt_terms(pr.ll, pr.mu[:m], pr.m2[:m])
        rel["binoculars"].append(abs(b - b_ref) / abs(b_ref))
        rel["fast-detectgpt"].append(abs(d - d_ref) / max(abs(d_ref), 1e-12))
    del mp, mq
    emit({"model": "pair", "measure": "agreement with CPU fp32 per-text reference", "plan": plan.record(),
          "texts": len(texts), "max_rel_diff": {k: float(np.max(v)) for k, v in rel.items()},
          "median_rel_diff": {k: float(np.median(v)) for k, v in rel.items()},
          "within_1e-3": all(max(v) <= 1e-3 for v in rel.values())})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer texts")
    ap.add_argument("--only", choices=["gpt2xl", "7b", "pair"], default=None)
    ap.add_argument("--tiny", action="store_true", help="tiny configurations (runs on CPU in seconds)")
    ap.add_argument("--device", default=None, help="cuda (default when visible) or cpu")
    ap.add_argument("--batch", type=int, default=64, help="texts per padded batch")
    ap.add_argument("--pack-tokens", type=int, default=None, help="tokens per pack (default: the device's)")
    ap.add_argument("--compile-backend", default=None, help="torch.compile backend (inductor on CUDA, eager on CPU)")
    ap.add_argument("--time-limit", type=float, default=540.0, help="seconds; no new measurement starts after it")
    ap.add_argument("--peak-tflops", type=float, default=PEAK_TFLOPS)
    ap.add_argument("--agree-texts", type=int, default=4)
    ap.add_argument("--cuda-graphs", action="store_true", help="also packed+compiled with CUDA graphs (reduce-overhead)")
    a = ap.parse_args()
    t_start = time.perf_counter()

    import torch

    from veribench.detectors.local.engine.forward import COMPILE_LOG
    from veribench.detectors.local.engine.plan import resolve_plan

    dev = a.device or ("cuda" if torch.cuda.is_available() else None)
    if dev is None:
        sys.exit("gpu_zeroshot.py needs a CUDA GPU (or --tiny --device cpu to check the script)")
    if dev.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = True
    dtype = "bfloat16" if dev.startswith("cuda") else "float32"
    out_dir = os.environ.get("OUT")
    sink = open(Path(out_dir) / "gpu_zeroshot.jsonl", "w") if out_dir else None

    def emit(row):
        row = {"t": round(time.perf_counter() - t_start, 1), **row}
        print(json.dumps(row), flush=True)
        if sink:
            sink.write(json.dumps(row) + "\n")
            sink.flush()

    def left() -> float:
        return a.time_limit - (time.perf_counter() - t_start)

    tiny = a.tiny
    n_loop = 4 if tiny else (16 if a.quick else 32)
    n_eng = 24 if tiny else (128 if a.quick else 512)
    lo, hi = (20, 90) if tiny else (250, 520)
    peak = a.peak_tflops * 1e12
    emit({"device": torch.cuda.get_device_name(0) if dev.startswith("cuda") else "cpu", "torch": torch.__version__,
          "tiny": tiny, "dtype": dtype, "peak_tflops": a.peak_tflops, "time_limit_s": a.time_limit})

    for kind in ("gpt2xl", "7b"):
        if a.only not in (None, kind) or left() < 60:
            continue
        lm, params = make_lm(kind, dev, dtype, tiny)
        vocab = lm.vocab_size
        floor = peak / (2 * params)
        base = {"model": kind, "params": params, "floor_tokens_per_s": floor}
        loop_reference(lm, make_texts(2, vocab, 9, lo, hi))  # warm-up
        n, t = timed(dev, loop_reference, lm, make_texts(n_loop, vocab, 1, lo, hi))
        emit({**base, "path": "loop", "tokens_per_s": n / t, "share_of_floor": n / t / floor})
        texts = make_texts(n_eng, vocab, 2, lo, hi)
        for label, plan in plans(lm, a):
            if isinstance(plan, str):
                emit({**base, "path": label, "skipped": plan})
                continue
            if left() < 45:
                emit({**base, "path": label, "skipped": "time limit"})
                continue
            COMPILE_LOG.pop(lm.name, None)
            t0 = time.perf_counter()  # warm-up; compiled: on the measured texts, so every bucket is compiled
            run_single(lm, texts if plan.compile else make_texts(4, vocab, 9, lo, hi), plan)
            warm = time.perf_counter() - t0
            n, t = timed(dev, run_single, lm, texts, plan)
            comp = COMPILE_LOG.get(lm.name, {})
            emit({**base, "path": label, "plan": plan.record(), "tokens_per_s": n / t, "share_of_floor": n / t / floor,
                  "warmup_s": round(warm, 2), "compile_s": round(comp.get("seconds", 0.0), 2),
                  "compiled_shapes": len(comp.get("shapes", [])),
                  "peak_mem_gb": torch.cuda.max_memory_allocated() / 2**30 if dev.startswith("cuda") else None})
        if left() > 60:
            default = resolve_plan(lm)
            agreement(lm, make_texts(a.agree_texts, vocab, 5, lo, min(hi, 300)), default, emit, kind)
        del lm
        if dev.startswith("cuda"):
            torch.cuda.empty_cache()

    if a.only in (None, "pair") and left() > 90:
        lp, params = make_lm("7b", dev, dtype, tiny, seed=0)
        lq, _ = make_lm("7b", dev, dtype, tiny, seed=1)
        floor = peak / (2 * 2 * params)  # two passes per text
        base = {"model": "pair", "params_each": params, "floor_tokens_per_s": floor}
        texts = make_texts(max(8, n_eng // 2), lp.vocab_size, 3, lo, hi)
        for label, plan in plans(lp, a):
            if isinstance(plan, str) or left() < 45:
                emit({**base, "path": label, "skipped": plan if isinstance(plan, str) else "time limit"})
                continue
            COMPILE_LOG.pop(lp.name, None)
            COMPILE_LOG.pop(lq.name, None)
            t0 = time.perf_counter()
            run_pair(lp, lq, texts if plan.compile else make_texts(4, lp.vocab_size, 9, lo, hi), plan)
            warm = time.perf_counter() - t0
            n, t = timed(dev, run_pair, lp, lq, texts, plan)
            comp = sum(COMPILE_LOG.get(m.name, {}).get("seconds", 0.0) for m in (lp, lq))
            emit({**base, "path": label, "plan": plan.record(), "tokens_per_s": n / t,
                  "share_of_floor": n / t / floor, "warmup_s": round(warm, 2), "compile_s": round(comp, 2),
                  "peak_mem_gb": torch.cuda.max_memory_allocated() / 2**30 if dev.startswith("cuda") else None})
        if left() > 60:
            pair_agreement(lp, lq, make_texts(a.agree_texts, lp.vocab_size, 6, lo, min(hi, 300)),
                           resolve_plan(lp), emit)
    emit({"done": True, "elapsed_s": round(time.perf_counter() - t_start, 1)})
    if sink:
        sink.close()


if __name__ == "__main__":
    main()
