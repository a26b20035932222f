"""How the engine runs a model (:class:`Plan`): layout (packed or padded), attention kernel,
compilation, threads and workers, chosen per device (:data:`DEVICE_DEFAULTS`, by measurement)
by :func:`resolve_plan`, every choice forceable; and how many packs run side by side
(:func:`plan_workers`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from veribench.detectors.local.models import LoadedModel

PACKINGS = ("auto", "packed", "padded")
ATTENTIONS = ("auto", "segments", "varlen", "flash_attention_2", "sdpa_mask")
COMPILES = ("auto", "on", "off")

#: Defaults by device type, chosen by measurement (benchmarks/README.md, "Zero-shot
#: engine"): on CPU packed + per-text SDPA beat padded batches and the block-diagonal
#: mask; on CUDA packed + varlen flash attention + torch.compile is the planned default
#: (the H200 figures are pending: benchmarks/gpu_zeroshot.py).
DEVICE_DEFAULTS: dict[str, dict[str, Any]] = {
    "cpu": {"packing": "packed", "attention": "segments", "compile": False, "pack_tokens": 1024,
            "bucket_tokens": 256, "stats_rows": 8},
    "cuda": {"packing": "packed", "attention": "varlen", "compile": True, "pack_tokens": 32768,
             "bucket_tokens": 2048},
    "mps": {"packing": "packed", "attention": "segments", "compile": False, "pack_tokens": 8192,
            "bucket_tokens": 1024},
}


def _device_type(device: str) -> str:
    return str(device).split(":")[0]


def varlen_available(device: str, dtype: str) -> bool:
    """True when torch's variable-length flash attention can run here (CUDA, bf16/fp16)."""
    if _device_type(device) != "cuda" or dtype not in ("bfloat16", "float16"):
        return False
    try:
        from torch.nn.attention.varlen import varlen_attn  # noqa: F401
    except ImportError:
        return False
    return True


def _flash_attn_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("flash_attn") is not None


@dataclass(frozen=True)
class Plan:
    """How the engine runs a model: layout, attention kernel, compilation, threads.

    Attributes:
        device, dtype: where and in which precision the body runs.
        packing: ``"packed"`` or ``"padded"``.
        attention: for packed, one of ``segments``, ``varlen``, ``flash_attention_2``,
            ``sdpa_mask``; for padded, ``"model"`` (the model's own implementation).
        compile: run the body through ``torch.compile``.
        pack_tokens: tokens per pack (packed); a longer text gets a pack of its own.
        bucket_tokens: compiled packs are padded up to a multiple of this.
        threads: ``"auto"`` (adaptive, CPU) or a fixed torch thread count.
        workers: packs run side by side on CPU: ``"auto"`` (with ``threads="auto"``,
            torch's thread count; otherwise 1) or a fixed count; each worker gets
            ``threads // workers`` torch threads (at least one). GPU, MPS and compiled
            plans use one.
        batch_size, max_batch_tokens: padded batches (texts, padded tokens).
        compile_backend: ``torch.compile`` backend (``inductor``).
        compile_mode: ``torch.compile`` mode: ``default``, or ``reduce-overhead`` (CUDA
            graphs, one per bucketed shape).
        stats_rows: rows per block of the vocabulary statistics (None: the whole logit
            chunk). On CPU small blocks keep the ~10 passes over each row's logits in the
            core's cache.
        share_prefixes: compute a prefix that several texts share once
            (:func:`shared_prefixes`; single-model passes with the ``segments`` kernel).
        min_shared_prefix: tokens two texts must share for that.
    """

    device: str
    dtype: str
    packing: str
    attention: str
    compile: bool
    pack_tokens: int
    bucket_tokens: int
    threads: str | int = "auto"
    workers: str | int = "auto"
    batch_size: int = 16
    max_batch_tokens: int = 16384
    compile_backend: str = "inductor"
    compile_mode: str = "default"
    stats_rows: int | None = None
    share_prefixes: bool = False
    min_shared_prefix: int = 8

    def record(self) -> dict[str, Any]:
        """What ran, for ``ScoreResult.detail["engine"]`` and benchmark rows: everything
        that changes a score's bits. Beside packing, attention, compilation, device and
        dtype: the torch and transformers versions, and on CPU the ATen kernel level in
        use (``cpu_capability``: ``torch.backends.cpu.get_cpu_capability()``, e.g.
        ``"DEFAULT"``, ``"AVX2"``, ``"AVX512"``; ``ATEN_CPU_CAPABILITY`` lowers it) and
        the intra-op thread count (``threads``).

        This is provenance, not identity: none of it enters the detector's spec or its
        cache key. The kernel level and the thread count move a score only within the
        documented float32 tolerance (:mod:`veribench.detectors.local.tolerance`,
        ``docs/statistics.md`` "Numerical tolerance across CPUs"), so a score taken on an
        AVX2 machine stands for the same measurement as one taken on an AVX-512 machine;
        keying on them would rescore every text on every machine and split one detector
        into as many specs as there are CPUs. The record says which bits a stored score
        has, so a difference beyond the tolerance can be traced to what ran."""
        import torch
        import transformers

        rec = {"packing": self.packing, "attention": self.attention, "compiled": self.compile,
               "device": self.device, "dtype": self.dtype, "torch": torch.__version__,
               "transformers": transformers.__version__}
        if self.device == "cpu":
            rec.update(cpu_capability=torch.backends.cpu.get_cpu_capability(), threads=torch.get_num_threads())
        if self.compile:
            rec.update(compile_backend=self.compile_backend, compile_mode=self.compile_mode,
                       bucket_tokens=self.bucket_tokens)
        if self.share_prefixes:
            rec["shared_prefixes"] = True
        w = plan_workers(self, 2**31)
        if w > 1:
            rec["workers"] = w
        return rec


def resolve_plan(lm: LoadedModel, *, packing: str = "auto", attention: str = "auto", compile: str | bool = "auto",
                 pack_tokens: int | None = None, bucket_tokens: int | None = None, threads: str | int = "auto",
                 workers: str | int = "auto", batch_size: int = 16, max_batch_tokens: int = 16384, compile_backend: str = "inductor",
                 compile_mode: str = "default", stats_rows: int | None | str = "auto",
                 share_prefixes: bool | str = "auto") -> Plan:
    """The execution plan for ``lm``: device defaults (:data:`DEVICE_DEFAULTS`), with any
    choice forced by the arguments.

    Raises:
        ValueError: an unknown choice, or one this device or dtype cannot run (``varlen``
            off CUDA or in fp32, ``flash_attention_2`` without ``flash-attn``, ``compile``
            with ``segments``, whose per-text loop would recompile for every pack).
    """
    if packing not in PACKINGS:
        raise ValueError(f"packing must be one of {PACKINGS}, got {packing!r}")
    if attention not in ATTENTIONS:
        raise ValueError(f"attention must be one of {ATTENTIONS}, got {attention!r}")
    comp = {True: "on", False: "off"}.get(compile, compile) if isinstance(compile, bool) else str(compile)
    if comp not in COMPILES:
        raise ValueError(f"compile must be one of {COMPILES}, got {compile!r}")
    if threads != "auto" and (not str(threads).isdigit() or int(threads) < 1):
        raise ValueError(f"threads must be 'auto' or a positive integer, got {threads!r}")
    if workers != "auto" and (not str(workers).isdigit() or int(workers) < 1):
        raise ValueError(f"workers must be 'auto' or a positive integer, got {workers!r}")
    dt = _device_type(lm.device)
    d = DEVICE_DEFAULTS.get(dt, DEVICE_DEFAULTS["cpu"])
    pk = d["packing"] if packing == "auto" else packing
    if pk == "padded":
        if attention not in ("auto",):
            raise ValueError("attention applies to packed batches only (padded batches use the model's own attention)")
        att = "model"
    elif attention == "auto":
        if dt == "cuda" and varlen_available(lm.device, lm.dtype):
            att = "varlen"
        elif dt == "cuda" and lm.dtype != "float32" and _flash_attn_installed():
            att = "flash_attention_2"
        else:
            att = "segments"
    else:
        att = attention
        if att == "varlen" and not varlen_available(lm.device, lm.dtype):
            raise ValueError(f"attention 'varlen' needs CUDA and bf16/fp16 (here: {lm.device}, {lm.dtype})")
        if att == "flash_attention_2" and not (_flash_attn_installed() and dt == "cuda" and lm.dtype != "float32"):
            raise ValueError("attention 'flash_attention_2' needs the flash-attn package, CUDA and bf16/fp16")
    if comp == "auto":
        cp = bool(d["compile"]) and att in ("varlen", "flash_attention_2", "sdpa_mask")
    else:
        cp = comp == "on"
        if cp and att == "segments":
            raise ValueError("compile needs attention 'varlen', 'flash_attention_2' or 'sdpa_mask' (or padded "
                             "batches): the per-text 'segments' loop would recompile for every pack")
    return Plan(device=lm.device, dtype=lm.dtype, packing=pk, attention=att, compile=cp,
                pack_tokens=int(pack_tokens or d["pack_tokens"]), bucket_tokens=int(bucket_tokens or d["bucket_tokens"]),
                threads=threads if threads == "auto" else int(threads),
                workers=workers if workers == "auto" else int(workers), batch_size=int(batch_size),
                max_batch_tokens=int(max_batch_tokens), compile_backend=compile_backend, compile_mode=compile_mode,
                stats_rows=d.get("stats_rows") if stats_rows == "auto" else (int(stats_rows) if stats_rows else None),
                share_prefixes=(pk == "packed" and att == "segments" and not cp) if share_prefixes == "auto"
                else bool(share_prefixes))


def plan_workers(plan: Plan, n_groups: int) -> int:
    """How many packs run side by side under ``plan`` (see :attr:`Plan.workers`): at most
    ``n_groups``; 1 off CPU, when compiled, or with a fixed ``threads`` and ``workers="auto"``."""
    if _device_type(plan.device) != "cpu" or plan.compile or n_groups < 2:
        return 1
    if plan.workers == "auto":
        if plan.threads != "auto":
            return 1
        import torch

        n = max(1, min(torch.get_num_threads(), os.cpu_count() or 1))
    else:
        n = int(plan.workers)
    return max(1, min(n, n_groups))
