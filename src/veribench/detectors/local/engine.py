"""Shared forward passes for the zero-shot detectors: one pass per text per model.

What one pass yields
--------------------
For one causal LM and one text (tokens x_1..x_n, T = n-1 scored positions), a single
forward pass gives, per position t (logits z_t, M_t = softmax(z_t), label x_{t+1}):

- ``ll[t]``   = log M_t(x_{t+1})                              (log-likelihood)
- ``rank[t]`` = 1 + #{v : z_t(v) > z_t(x_{t+1})}              (strictly greater logits)
- ``ent[t]``  = H(M_t) = -Σ_v M_t(v) log M_t(v)               (nats)
- ``m2[t]``   = Σ_v M_t(v) (log M_t(v))²                      (second moment, Fast-DetectGPT)

:class:`SinglePass` holds these; every single-model statistic of
:mod:`veribench.detectors.local.zeroshot` is a function of them. For a two-model
detector (a sampling/observer model p and a scoring/performer model q on the same
tokens) one pass per model also yields, on the vocabulary cut to min(|V_p|, |V_q|)
as upstream Fast-DetectGPT does, for *all* n positions:

- ``mu[t]`` = Σ_v p_t(v) log q_t(v),  ``m2[t]`` = Σ_v p_t(v) (log q_t(v))²,
- ``ll[t]`` (t < n-1) = log q_t(x_{t+1}) under the cut vocabulary,

in :class:`PairPass`, plus the :class:`SinglePass` of each model.

Reuse
-----
Pass outputs are memoised in-process (:data:`MEMO`), keyed by (model key, text sha)
and (pair key, text sha), so asking for loglik, then logrank, then Fast-DetectGPT on
one model costs one pass per text, and Binoculars + Fast-DetectGPT on the same pair
plus the single-model statistics of either model cost one pass per model. Because a
causal LM's outputs at position t depend only on tokens ≤ t, a pass over the first
k tokens also serves any shorter truncation cap (its arrays are sliced).

Execution (:class:`Plan`, chosen by device, every choice can be forced)
--------------------------------------------------------------------------
Texts are tokenised once (special tokens added as the tokenizer does; truncation keeps
the first ``max_tokens`` tokens, BOS included). Two layouts:

- **packed** (default on every device): texts are concatenated without padding into
  packs of at most ``pack_tokens`` tokens (longest first, the room left filled with the
  shortest texts; a text is never split across packs, so a text longer than a pack gets
  a pack of its own), with per-text position ids (0..n-1 for each text) and
  block-diagonal causal attention, so no position attends across a text boundary and
  no compute is spent on padding. Attention kernels for a pack:
  ``segments`` (each text's slice through transformers' SDPA with ``is_causal``: the
  flash/causal kernel, no mask tensor; CPU default), ``varlen``
  (``torch.nn.attention.varlen.varlen_attn``, FlashAttention's variable-length kernel;
  CUDA with bf16/fp16, default there), ``flash_attention_2`` (transformers' packed
  path, needs the ``flash-attn`` package) or ``sdpa_mask`` (transformers' own packed-
  sequence detection from the position ids, which builds a block-diagonal mask; costs
  L² per pack).
- **padded**: length-sorted batches padded on the right with an attention mask,
  through the model's own attention implementation (the upstream-style baseline).

With the ``segments`` kernel, a prefix that several texts share (fast-detect-gpt's AI
texts continue the first ~30 tokens of their human text) is computed once: the
continuation enters the pack from its first own token, at its true positions, and
attends to the shared tokens through a tree-shaped mask (:func:`shared_prefixes`).

With ``compile`` (CUDA default with ``varlen``), the transformer body runs through
``torch.compile``; packs are padded with dummy segments up to a bucket length (a
multiple of ``bucket_tokens``), so the compiled shapes stay few and recompilation is
bounded. On CPU with ``workers="auto"`` and ``threads="auto"``, packs run side by side,
one per core, each pack single-threaded (``workers`` = torch's threads, at most one per
pack): every core stays busy through the parts of a pass that do not parallelise inside
one pack (attention per text, the vocabulary statistics, Python dispatch), and no two
threads wait on each other inside a matrix product. On the demo's 145 texts (2-core
machine, 9,760 tokens fed) that took the forward from 15-17 s to 11-11.5 s, with
bit-identical outputs (each pack's arithmetic is the same whichever worker runs it). With one worker (one
pack, or a fixed ``threads``), the number of torch threads adapts by measurement: the
first packs run with all cores and with one, the faster is kept and re-checked every
few packs, because on a shared machine two threads that wait on each other ran six
times slower than one.

Precision. The body runs in the model's dtype (bf16/fp16 on GPU); the LM head is applied
only to the rows that are scored, flattened, with an fp32 copy of its weight (logits
are never rounded to half precision), in chunks of at most ``chunk_bytes`` of fp32
logits, and every softmax, log-softmax and vocabulary sum runs in fp32. Per-text
statistics use only each text's own rows of the packed logits. The packed and padded
layouts equal the per-text fp32 reference within 1e-5 (``tests/detectors_local/``).

Every result records the plan that ran (:meth:`Plan.record`, stored as
``detail["engine"]``). The spec's settings (model, cap, dtype) are what changes a
score; the layout, kernels, compilation and threads change it only within 1e-5.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from veribench.detectors.local.models import LoadedModel
from veribench.hashing import text_sha256

#: Default fp32 logit bytes per vocabulary chunk (c·V·4 bytes); a few such copies live at once.
DEFAULT_CHUNK_BYTES = 64 * 2**20


# --------------------------------------------------------------------------- records
@dataclass
class SinglePass:
    """Per-position outputs of one model on one text (arrays of length tokens_used - 1)."""

    n_total: int  # tokens in the whole text (special tokens included)
    ids: np.ndarray  # token ids used (int64, length tokens_used)
    ll: np.ndarray
    rank: np.ndarray
    ent: np.ndarray
    m2: np.ndarray

    @property
    def tokens_used(self) -> int:
        return int(self.ids.shape[0])

    def prefix(self, n: int) -> SinglePass:
        """The outputs for the first ``n`` tokens (valid by causality)."""
        if n >= self.tokens_used:
            return self
        return SinglePass(self.n_total, self.ids[:n], self.ll[: n - 1], self.rank[: n - 1],
                          self.ent[: n - 1], self.m2[: n - 1])

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.ids, self.ll, self.rank, self.ent, self.m2))


@dataclass
class PairPass:
    """Cross outputs of a (p, q) model pair on one text.

    ``ll`` has length tokens_used - 1 (labels exist); ``mu`` and ``m2`` have length
    tokens_used (every position, as Binoculars' cross-perplexity uses them).
    """

    n_total: int
    ids: np.ndarray
    ll: np.ndarray
    mu: np.ndarray
    m2: np.ndarray
    vocab_cut: int

    @property
    def tokens_used(self) -> int:
        return int(self.ids.shape[0])

    def prefix(self, n: int) -> PairPass:
        if n >= self.tokens_used:
            return self
        return PairPass(self.n_total, self.ids[:n], self.ll[: n - 1], self.mu[:n], self.m2[:n], self.vocab_cut)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.ids, self.ll, self.mu, self.m2))


@dataclass
class TooShort:
    """A text with fewer than 2 tokens after tokenisation: no position can be scored."""

    n_total: int


@dataclass
class Mismatch:
    """The two models of a pair tokenise this text differently (upstream asserts equality)."""

    n_total: int


# --------------------------------------------------------------------------- memo
class PassMemo:
    """In-process LRU memo of pass outputs, bounded by bytes (default 1 GiB)."""

    def __init__(self, max_bytes: int = 2**30):
        self.max_bytes = max_bytes
        self._d: OrderedDict[tuple, Any] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple, cap: int) -> Any:
        with self._lock:
            e = self._d.get(key)
            if e is None:
                return None
            need = min(e.n_total, cap)
            if isinstance(e, (TooShort, Mismatch)):
                return e
            if e.tokens_used < need:
                return None
            self._d.move_to_end(key)
            return e.prefix(need)

    def put(self, key: tuple, entry: Any) -> None:
        with self._lock:
            old = self._d.pop(key, None)
            if old is not None:
                self._bytes -= getattr(old, "nbytes", 0)
                if getattr(old, "tokens_used", 0) > getattr(entry, "tokens_used", 0):
                    entry = old  # keep the longer pass
            self._d[key] = entry
            self._bytes += getattr(entry, "nbytes", 0)
            while self._bytes > self.max_bytes and len(self._d) > 1:
                _, ev = self._d.popitem(last=False)
                self._bytes -= getattr(ev, "nbytes", 0)

    def clear(self) -> None:
        with self._lock:
            self._d.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._d)


#: The process-wide memo shared by every zero-shot detector.
MEMO = PassMemo()


@dataclass
class EngineStats:
    """Counters for tests and benchmarks: texts forwarded per model key, batches run."""

    texts_forwarded: dict[tuple, int] = field(default_factory=dict)
    tokens_forwarded: dict[tuple, int] = field(default_factory=dict)
    batches: int = 0
    _lock: Any = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, key: tuple, n_texts: int, n_tokens: int, batches: int = 0) -> None:
        """Count ``n_texts`` texts and ``n_tokens`` tokens forwarded by model ``key``
        (and ``batches`` packs); safe from the workers that run packs side by side."""
        with self._lock:
            self.texts_forwarded[key] = self.texts_forwarded.get(key, 0) + n_texts
            self.tokens_forwarded[key] = self.tokens_forwarded.get(key, 0) + n_tokens
            self.batches += batches

    def reset(self) -> None:
        self.texts_forwarded.clear()
        self.tokens_forwarded.clear()
        self.batches = 0


STATS = EngineStats()


# --------------------------------------------------------------------------- vocabulary reductions
#: log-probabilities are clamped here so that p·log p and p·(log p)² are 0, not NaN, where
#: p underflows to 0 or a logit is -inf (LOG_FLOOR² stays finite in fp32).
LOG_FLOOR = -1e15


def token_stats(z, labels, *, want_rank: bool = True):
    """Per-position statistics of fp32 logits ``z`` (N×V) for ``labels`` (N, -1 = none).

    Returns ``(ll, rank, ent, m2, logp)``: log-probability of the label, rank (1 +
    count of strictly greater logits), entropy in nats, Σ p (log p)², and the
    log-softmax (N×V, floored at :data:`LOG_FLOOR`) for the caller's cross terms.
    ``p log p`` is 0 where p underflows to 0 (so logits like [0, -200, -200] give
    entropy 0, never NaN). Positions with label -1 get ll = rank = 0. Two N×V fp32
    buffers are allocated (log p and p·log p) besides ``z``.
    """
    import torch

    z = z.float()
    logp = torch.log_softmax(z, dim=-1)
    lab = labels.clamp_min(0).unsqueeze(-1)
    ll = logp.gather(-1, lab).squeeze(-1)
    if want_rank:
        rank = (z > z.gather(-1, lab)).sum(-1) + 1
    else:
        rank = torch.zeros_like(labels)
    logp.clamp_(min=LOG_FLOOR)
    t = logp.exp()
    t.mul_(logp)  # p log p
    ent = -t.sum(-1)
    m2 = t.mul_(logp).sum(-1)  # p (log p)^2
    del t
    none = labels < 0
    ll = torch.where(none, torch.zeros_like(ll), ll)
    rank = torch.where(none, torch.zeros_like(rank), rank)
    return ll, rank, ent, m2, logp


def cross_stats(zp, logq):
    """Σ_v p(v) log q(v) and Σ_v p(v) (log q(v))² per row, with p = softmax(zp) in fp32.

    ``logq`` must be floored at :data:`LOG_FLOOR` (as :func:`token_stats` returns it), so
    terms where p is 0 count 0 even where q is 0.
    """
    import torch

    t = torch.softmax(zp.float(), dim=-1)
    t.mul_(logq)
    mu = t.sum(-1)
    m2 = t.mul_(logq).sum(-1)
    return mu, m2


# --------------------------------------------------------------------------- execution plan
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
        """What ran, for ``ScoreResult.detail["engine"]`` and benchmark rows."""
        import torch
        import transformers

        rec = {"packing": self.packing, "attention": self.attention, "compiled": self.compile,
               "device": self.device, "dtype": self.dtype, "torch": torch.__version__,
               "transformers": transformers.__version__}
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


# --------------------------------------------------------------------------- packed attention kernels
def _segment_bounds(kwargs: dict[str, Any]) -> list[int] | None:
    cu = kwargs.get("cu_seq_lens_q")
    if cu is None:
        return None
    return [int(x) for x in (cu.tolist() if hasattr(cu, "tolist") else cu)]


def segments_attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, **kwargs):
    """Block-diagonal causal attention over a pack, one text at a time.

    ``query``/``key``/``value``: (1, heads, L, head_dim) for the whole pack;
    ``kwargs["cu_seq_lens_q"]``: the text boundaries (0 = b_0 < b_1 < ... = L). Each
    slice [b_i, b_{i+1}) goes through transformers' own SDPA function with
    ``is_causal=True`` and no mask (GQA, scaling and kernel choice as the model's
    ``sdpa`` path), so a text attends only to its own earlier tokens. Without
    boundaries it is transformers' SDPA. Returns ((1, L, heads, head_dim), None).

    ``kwargs["vb_prefix"]`` (shared prefixes, see :func:`shared_prefixes`): per segment,
    None or ``(start, k)``: the segment holds the tokens k.. of a text whose first k
    tokens are those of the segment at ``start``; its queries attend to those k keys and,
    causally, to its own (a tree-shaped mask instead of a block).
    """
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    bounds = _segment_bounds(kwargs)
    if bounds is None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling)
    prefixes = kwargs.get("vb_prefix") or [None] * (len(bounds) - 1)
    outs = []
    for (a, b), pre in zip(zip(bounds[:-1], bounds[1:]), prefixes):
        if b <= a:
            continue
        if pre is None:
            outs.append(sdpa_attention_forward(module, query[:, :, a:b], key[:, :, a:b], value[:, :, a:b], None,
                                               dropout=dropout, scaling=scaling, is_causal=True)[0])
            continue
        # a text continuing another text's first k tokens: its queries see those k keys
        # (computed once, in the other text's segment) and its own earlier keys
        ps, k = pre
        kk = torch.cat([key[:, :, ps:ps + k], key[:, :, a:b]], dim=2)
        vv = torch.cat([value[:, :, ps:ps + k], value[:, :, a:b]], dim=2)
        mask = torch.ones(b - a, k + b - a, dtype=torch.bool, device=query.device).tril(diagonal=k)
        outs.append(sdpa_attention_forward(module, query[:, :, a:b], kk, vv, mask[None, None],
                                           dropout=dropout, scaling=scaling)[0])
    return torch.cat(outs, dim=1), None


def varlen_attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, **kwargs):
    """Block-diagonal causal attention over a pack with FlashAttention's variable-length
    kernel (``torch.nn.attention.varlen.varlen_attn``; CUDA, bf16/fp16).

    Same contract as :func:`segments_attention`; ``kwargs["max_length_q"]`` bounds the
    longest text (an upper bound is allowed, which keeps compiled shapes fixed).
    """
    from torch.nn.attention.varlen import varlen_attn

    cu = kwargs["cu_seq_lens_q"]
    mx = int(kwargs["max_length_q"])
    q = query[0].transpose(0, 1).contiguous()  # (L, H, D)
    k = key[0].transpose(0, 1).contiguous()
    v = value[0].transpose(0, 1).contiguous()
    out = varlen_attn(q, k, v, cu, cu, mx, mx, scale=scaling, window_size=(-1, 0),
                      enable_gqa=q.shape[1] != k.shape[1])
    return out.unsqueeze(0), None


_ATTN_NAMES = {"segments": "veribench_segments", "varlen": "veribench_varlen",
               "flash_attention_2": "flash_attention_2", "sdpa_mask": "sdpa"}
_REGISTERED = False


def _register_attention() -> None:
    global _REGISTERED
    if _REGISTERED:
        return
    from transformers import AttentionInterface

    AttentionInterface.register("veribench_segments", segments_attention)
    AttentionInterface.register("veribench_varlen", varlen_attention)
    _REGISTERED = True


@contextlib.contextmanager
def _attention_impl(lm: LoadedModel, plan: Plan) -> Iterator[None]:
    """Run the model with the plan's attention implementation, restoring the model's own
    afterwards (under the model's lock: one forward at a time per model)."""
    lock = _model_lock(lm)
    with lock:
        if plan.attention == "model":
            yield
            return
        _register_attention()
        cfg = lm.model.config
        old = cfg._attn_implementation
        cfg._attn_implementation = _ATTN_NAMES[plan.attention]
        try:
            yield
        finally:
            cfg._attn_implementation = old


_MODEL_LOCKS: dict[int, threading.RLock] = {}
_MODEL_LOCKS_GUARD = threading.Lock()


def _model_lock(lm: LoadedModel) -> threading.RLock:
    with _MODEL_LOCKS_GUARD:
        return _MODEL_LOCKS.setdefault(id(lm.model), threading.RLock())


@contextlib.contextmanager
def _models_locked(*lms: LoadedModel) -> Iterator[None]:
    """Hold each model's lock (re-entrant), taken in one global order so that two callers
    locking the same pair in opposite roles cannot deadlock."""
    locks = sorted({id(lm.model): _model_lock(lm) for lm in lms}.items())
    with contextlib.ExitStack() as stack:
        for _, lk in locks:
            stack.enter_context(lk)
        yield


# --------------------------------------------------------------------------- layouts
@dataclass
class Layout:
    """One forward pass: ``ids`` (B, L) on the device, optional ``mask`` (padded) or
    ``position_ids`` (packed), ``starts``/``lengths`` of each real text in the flattened
    B·L rows, extra keyword arguments for the attention kernel, and shared prefixes."""

    ids: Any
    mask: Any
    position_ids: Any
    starts: list[int]
    lengths: list[int]
    attn_kwargs: dict[str, Any]
    #: per text: None, or (index of the text in this layout whose first k tokens it shares, k);
    #: such a text's ``starts`` entry is where its own tokens k.. begin
    prefix: list[tuple[int, int] | None] | None = None

    @property
    def tokens(self) -> int:
        return int(self.ids.shape[0] * self.ids.shape[1])


def layout_padded(seqs: Sequence[Sequence[int]], device: str) -> Layout:
    """Right-padded (B, L) batch with an attention mask."""
    import torch

    L = max(len(s) for s in seqs)
    ids = torch.zeros((len(seqs), L), dtype=torch.long)
    mask = torch.zeros((len(seqs), L), dtype=torch.long)
    for b, s in enumerate(seqs):
        ids[b, : len(s)] = torch.tensor(s, dtype=torch.long)
        mask[b, : len(s)] = 1
    return Layout(ids.to(device), mask.to(device), None, [b * L for b in range(len(seqs))],
                  [len(s) for s in seqs], {})


def layout_packed(seqs: Sequence[Sequence[int]], device: str, *, bucket: int | None = None,
                  max_segment: int | None = None, max_length: int | None = None,
                  prefix: Sequence[tuple[int, int] | None] | None = None) -> Layout:
    """One (1, L) pack: texts concatenated, position ids 0..n-1 per text, the text
    boundaries as ``cu_seq_lens_q``/``cu_seq_lens_k`` (int32) and the longest text as
    ``max_length_q``/``max_length_k``.

    With ``bucket``, the pack is filled up to the next multiple of ``bucket`` with dummy
    segments (token id 0, at most ``max_segment`` tokens each, so positions stay inside
    the model's range); their outputs are never read. ``max_length`` overrides the
    longest-text bound (compiled runs pass a constant).

    With ``prefix`` (per text: None or ``(j, k)``, text ``j`` earlier in ``seqs`` having
    the same first k tokens), a text's first k tokens are not repeated: only its tokens
    k.. enter the pack, at positions k.., attending to text j's first k tokens
    (``vb_prefix``, for the ``segments`` kernel only).
    """
    import torch

    lengths = [len(s) for s in seqs]
    pre = list(prefix) if prefix is not None else [None] * len(seqs)
    flat: list[int] = []
    pos: list[int] = []
    bounds = [0]
    starts: list[int] = []
    seg_prefix: list[tuple[int, int] | None] = []
    for s, p in zip(seqs, pre):
        k = 0 if p is None else p[1]
        starts.append(len(flat))
        if len(s) > k:
            flat += list(s[k:])
            pos += list(range(k, len(s)))
            bounds.append(len(flat))
            seg_prefix.append(None if p is None else (starts[p[0]], k))
    total = len(flat)
    if bucket:
        target = -(-total // bucket) * bucket
        room, seg = target - total, max(1, int(max_segment or target))
        while room > 0:
            n = min(room, seg)
            flat += [0] * n
            pos += list(range(n))
            bounds.append(bounds[-1] + n)
            seg_prefix.append(None)
            room -= n
    ids = torch.tensor([flat], dtype=torch.long, device=device)
    position_ids = torch.tensor([pos], dtype=torch.long, device=device)
    cu = torch.tensor(bounds, dtype=torch.int32, device=device)
    mx = int(max_length or max(b - a for a, b in zip(bounds[:-1], bounds[1:])))
    kw: dict[str, Any] = {"cu_seq_lens_q": cu, "cu_seq_lens_k": cu, "max_length_q": mx, "max_length_k": mx}
    if any(p is not None for p in pre):
        kw["vb_prefix"] = seg_prefix
    return Layout(ids, None, position_ids, starts, lengths, kw, pre if any(p is not None for p in pre) else None)


def packs(lengths: Sequence[int], pack_tokens: int) -> list[list[int]]:
    """Indices grouped into packs of at most ``pack_tokens`` tokens (a longer text alone).

    Longest first; each pack is opened by the longest text left and its room filled with
    the shortest texts left while they fit (two pointers over the sorted lengths, O(n)).
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    out: list[list[int]] = []
    lo, hi = 0, len(order) - 1
    while lo <= hi:
        cur = [order[lo]]
        used = lengths[order[lo]]
        lo += 1
        while lo <= hi and used + lengths[order[lo]] <= pack_tokens:  # next longest that fits
            cur.append(order[lo])
            used += lengths[order[lo]]
            lo += 1
        while lo <= hi and used + lengths[order[hi]] <= pack_tokens:  # then the shortest
            cur.append(order[hi])
            used += lengths[order[hi]]
            hi -= 1
        out.append(cur)
    return out


def shared_prefixes(seqs: Sequence[Sequence[int]], min_shared: int) -> list[tuple[int, int] | None]:
    """Texts whose first tokens repeat another text's: per text None, or ``(j, k)``.

    fast-detect-gpt's AI texts continue the first ~30 tokens of their human text, so on
    its data about 16% of the tokens repeat; a causal LM's outputs over a shared prefix
    are the same for both texts, so they are computed once. Texts are sorted; a run of
    neighbours sharing at least ``min_shared`` tokens with the run's first text (the root
    ``j``, itself never a continuation) gets ``(j, k)`` with k their common prefix with it.
    """
    order = sorted(range(len(seqs)), key=lambda i: list(seqs[i]))
    out: list[tuple[int, int] | None] = [None] * len(seqs)
    root, run = None, 0
    for prev, cur in zip([None] + order[:-1], order):
        if prev is None:
            root, run = cur, 10**9
            continue
        a, b = seqs[prev], seqs[cur]
        n = 0
        m = min(len(a), len(b), run)
        while n < m and a[n] == b[n]:
            n += 1
        run = min(run, n)
        if run >= min_shared:
            out[cur] = (root, run)
        else:
            root, run = cur, 10**9
    return out


def _buckets(lengths: Sequence[int], batch_size: int, max_batch_tokens: int) -> list[list[int]]:
    """Indices grouped into length-sorted batches of ≤ batch_size texts and ≤ max_batch_tokens
    padded tokens (longest first)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    out: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        width = lengths[cur[0]] if cur else lengths[i]
        if cur and (len(cur) >= batch_size or (len(cur) + 1) * width > max_batch_tokens):
            out.append(cur)
            cur = []
        cur.append(i)
    if cur:
        out.append(cur)
    return out


def _groups(plan: Plan, lengths: Sequence[int]) -> list[list[int]]:
    if plan.packing == "packed":
        return packs(lengths, plan.pack_tokens)
    return _buckets(lengths, plan.batch_size, plan.max_batch_tokens)


def _position_limit(lm: LoadedModel) -> int | None:
    cfg = lm.model.config
    for attr in ("max_position_embeddings", "n_positions"):
        v = getattr(cfg, attr, None)
        if isinstance(v, int) and v > 0:
            return v
    return None


def _layout(lm: LoadedModel, plan: Plan, seqs: list[list[int]], cap: int,
            prefix: list[tuple[int, int] | None] | None = None) -> Layout:
    if plan.packing == "padded":
        return layout_padded(seqs, lm.device)
    if plan.compile:
        return layout_packed(seqs, lm.device, bucket=plan.bucket_tokens,
                             max_segment=min(cap, _position_limit(lm) or cap), max_length=cap)
    return layout_packed(seqs, lm.device, prefix=prefix)


# --------------------------------------------------------------------------- model plumbing
def _head_split(lm: LoadedModel):
    """(body, head) if ``head(body(x).last_hidden_state)`` reproduces the model's logits,
    checked once on a short input; else ``None`` (the full forward is used)."""
    cached = getattr(lm, "_vb_split", "unset")
    if cached != "unset":
        return cached
    import torch

    split = None
    try:
        model = lm.model
        body = getattr(model, model.base_model_prefix, None)
        head = model.get_output_embeddings()
        if body is not None and head is not None and body is not model:
            ids = torch.tensor([[1, 2, 3, 4]], device=lm.device) % lm.vocab_size
            with torch.inference_mode():
                full = model(input_ids=ids).logits.float()
                h = body(input_ids=ids).last_hidden_state
                mine = head(h).float()
            if full.shape == mine.shape and torch.allclose(full, mine, rtol=1e-3, atol=1e-3):
                split = (body, head)
    except Exception:  # any architecture quirk: fall back to the full forward
        split = None
    lm._vb_split = split  # type: ignore[attr-defined]
    return split


def model_cap(lm: LoadedModel, max_tokens: int) -> int:
    """The effective truncation cap: ``max_tokens``, bounded by the model's positions."""
    limit = _position_limit(lm)
    return int(min(max_tokens, limit)) if limit else int(max_tokens)


def tokenize(lm: LoadedModel, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of each text with the tokenizer's special tokens, not truncated."""
    enc = lm.tokenizer(list(texts), add_special_tokens=True, truncation=False, verbose=False)
    return [list(x) for x in enc["input_ids"]]


#: Compile bookkeeping per model: {"seconds": first-call time per shape, "shapes": set}.
COMPILE_LOG: dict[str, dict[str, Any]] = {}


def _compiled(lm: LoadedModel, fn: Any, plan: Plan) -> Any:
    cache = getattr(lm, "_vb_compiled", None)
    if cache is None:
        cache = {}
        lm._vb_compiled = cache  # type: ignore[attr-defined]
    key = (id(fn), plan.compile_backend, plan.compile_mode)
    if key not in cache:
        import torch

        mode = None if plan.compile_mode == "default" else plan.compile_mode
        cache[key] = torch.compile(fn, backend=plan.compile_backend, mode=mode)
    return cache[key]


def _hidden_or_logits(lm: LoadedModel, lay: Layout, plan: Plan):
    """Run the body (returns ('h', hidden, head)) or the full model (('z', logits, None)).

    The caller holds :func:`_attention_impl` for ``lm`` (once around all its packs, so
    that packs running side by side share one setting of the model's attention)."""
    kw: dict[str, Any] = {"input_ids": lay.ids, "use_cache": False}
    if lay.mask is not None:
        kw["attention_mask"] = lay.mask
    if lay.position_ids is not None:
        kw["position_ids"] = lay.position_ids
    if plan.attention in ("segments", "varlen", "flash_attention_2"):
        kw.update(lay.attn_kwargs)
    split = _head_split(lm)
    body, head = split if split is not None else (lm.model, None)
    run = _compiled(lm, body, plan) if plan.compile else body
    if plan.compile:
        shape = tuple(lay.ids.shape)
        rec = COMPILE_LOG.setdefault(lm.name, {"seconds": 0.0, "shapes": []})
        if shape not in rec["shapes"]:
            t0 = time.perf_counter()
            out = run(**kw)
            _sync(lm)
            rec["seconds"] += time.perf_counter() - t0
            rec["shapes"].append(shape)
        else:
            out = run(**kw)
    else:
        out = run(**kw)
    if split is not None:
        return "h", out.last_hidden_state, head
    return "z", out.logits, None


def _sync(lm: LoadedModel) -> None:
    if _device_type(lm.device) == "cuda":
        import torch

        torch.cuda.synchronize()


def _rows_logits(kind: str, t, head, rows, out=None):
    """fp32 logits of flattened rows ``rows`` (index into B·L) of hidden states/logits ``t``.

    ``out`` (CPU, fp32 linear head): a (≥ len(rows), V) fp32 buffer the logits are written
    into and returned as a view of (see :func:`_logit_buffer`).

    With half-precision weights the LM head runs on an fp32 copy of its weight, so the
    logits are never rounded to bf16/fp16 (rounded logits create rank ties); on CUDA
    that matmul uses TF32 when ``torch.backends.cuda.matmul.allow_tf32`` is set.
    """
    import torch

    flat = t.reshape(-1, t.shape[-1])
    x = flat.index_select(0, rows)
    if kind != "h":
        return x.float()
    if x.dtype == torch.float32:
        w = getattr(head, "weight", None)
        if (out is not None and isinstance(head, torch.nn.Linear) and w is not None and w.dtype == torch.float32
                and x.device.type == "cpu"):
            z = out[: x.shape[0]]
            torch.mm(x, w.t(), out=z)
            if head.bias is not None:
                z.add_(head.bias)
            return z
        return head(x).float()
    w32 = getattr(head, "_vb_w32", None)
    if w32 is None:
        w32 = head.weight.detach().float()
        b32 = head.bias.detach().float() if getattr(head, "bias", None) is not None else None
        head._vb_w32, head._vb_b32 = w32, b32
    return torch.nn.functional.linear(x.float(), w32, head._vb_b32)


_BUFFERS = threading.local()


def _logit_buffer(slot: int, rows: int, vocab: int, device: str):
    """This thread's reusable fp32 (rows, vocab) logit buffer number ``slot`` on CPU (None
    elsewhere). A fresh chunk of logits (tens of MB) is above the allocator's mmap
    threshold, so the OS maps and zero-fills it page by page on every chunk; writing
    each chunk into one buffer per thread made the LM head's product 1.3x faster
    (``benchmarks/README.md``). The caller is done with a chunk before the next overwrites it."""
    if _device_type(device) != "cpu":
        return None
    import torch

    bufs = getattr(_BUFFERS, "bufs", None)
    if bufs is None:
        bufs = _BUFFERS.bufs = {}
    b = bufs.get(slot)
    if b is None or b.numel() < rows * vocab:
        b = bufs[slot] = torch.empty(rows * vocab, dtype=torch.float32)
    return b[: rows * vocab].view(rows, vocab)


def _chunk_rows(vocab: int, chunk_bytes: int, copies: int = 4) -> int:
    return max(1, int(chunk_bytes // (vocab * 4 * copies)))


def _rows(lay: Layout, include_last: bool, device: str):
    """Flattened row indices of each text's scored positions, their labels (-1 for a
    last position) and per-text counts, from the layout's own token ids."""
    import torch

    flat = lay.ids.reshape(-1)
    rows, labels, counts = [], [], []
    pre = lay.prefix or [None] * len(lay.starts)
    for s, n, p in zip(lay.starts, lay.lengths, pre):
        if p is not None:  # positions 0..k-2 are the shared text's; compute k-1.. here
            if include_last:
                raise ValueError("shared prefixes are for single-model passes")
            j, k = p
            cnt = n - k
            if cnt > 0:
                r = torch.cat([torch.tensor([lay.starts[j] + k - 1], device=flat.device),
                               torch.arange(s, s + cnt - 1, device=flat.device)])
                lab = flat[s: s + cnt].clone()
                rows.append(r)
                labels.append(lab)
            counts.append(cnt)
            continue
        k = n if include_last else n - 1
        r = torch.arange(s, s + k, device=flat.device)
        lab = torch.full((k,), -1, dtype=torch.long, device=flat.device)
        lab[: n - 1] = flat[s + 1: s + n]
        rows.append(r)
        labels.append(lab)
        counts.append(k)
    return torch.cat(rows).to(device), torch.cat(labels).to(device), counts


# --------------------------------------------------------------------------- threads and progress
class _Threads:
    """Adaptive torch thread count on CPU: all of torch's threads or one, whichever measured faster.

    The first two groups run with each option; the faster (tokens/s) is kept and the
    other re-tried every ``every`` groups, so a machine that gets busy (or idle) mid-run
    is followed. A fixed setting or a non-CPU device leaves torch's threads alone.
    """

    def __init__(self, plan: Plan, n_groups: int, every: int = 6):
        import torch

        self.torch = torch
        self.orig = torch.get_num_threads()
        self.active = _device_type(plan.device) == "cpu"
        self.options: list[int] = []
        if self.active:
            if plan.threads == "auto":  # at most the threads torch was given (one per Ray actor, say)
                n = max(1, min(self.orig, os.cpu_count() or 1))
                self.options = [n, 1] if n > 1 and n_groups >= 3 else [self.orig]
            else:
                self.options = [int(plan.threads)]
        self.rate: dict[int, float] = {}
        self.i = 0
        self.every = every
        self.current: int | None = None

    def before(self) -> None:
        if not self.active or not self.options:
            return
        if len(self.options) == 1:
            choice = self.options[0]
        elif self.i < len(self.options):
            choice = self.options[self.i]
        else:
            best = max(self.rate, key=self.rate.get)
            other = [o for o in self.options if o != best]
            choice = other[0] if other and self.i % self.every == 0 else best
        if choice != self.torch.get_num_threads():
            self.torch.set_num_threads(choice)
        self.current = choice
        self.i += 1

    def after(self, tokens: int, seconds: float) -> None:
        if self.current is None or seconds <= 0:
            return
        r = tokens / seconds
        old = self.rate.get(self.current)
        self.rate[self.current] = r if old is None else 0.5 * old + 0.5 * r

    def close(self) -> None:
        if self.active and self.torch.get_num_threads() != self.orig:
            self.torch.set_num_threads(self.orig)


#: Progress sinks for long passes (see :func:`report_progress`).
_SINKS: list[tuple[Callable[[str], None], float, Any]] = []


@contextlib.contextmanager
def report_progress(sink: Callable[[str], None] | None = None, *, interval: float = 3.0,
                    console: Any = None) -> Iterator[None]:
    """Report the engine's forward passes while inside the block.

    On a terminal ``console`` (a rich Console), a progress bar with the text count and
    tokens/s; otherwise a line through ``sink`` (default: print to stderr) at most every
    ``interval`` seconds and when a pass ends: ``forward smollm2: 48/120 texts, 4,096
    tokens, 812 tokens/s, 5 s``.
    """
    import sys

    s = sink or (lambda m: print(m, file=sys.stderr, flush=True))
    entry = (s, float(interval), console)
    _SINKS.append(entry)
    try:
        yield
    finally:
        _SINKS.remove(entry)


class _Progress:
    def __init__(self, desc: str, total_texts: int, total_tokens: int, enabled: bool):
        self.desc, self.total, self.total_tokens = desc, total_texts, total_tokens
        self.done = self.tokens = 0
        self.t0 = self.last = time.perf_counter()
        self.bar = None
        self.sink: tuple[Callable[[str], None], float, Any] | None = _SINKS[-1] if _SINKS else None
        if self.sink is None and enabled:
            import sys

            self.sink = ((lambda m: print(m, file=sys.stderr, flush=True)), 3.0, None)
        if self.sink is not None and total_texts > 0:
            con = self.sink[2]
            if con is None and enabled:
                from rich.console import Console

                con = Console(stderr=True)
            if con is not None and getattr(con, "is_terminal", False):
                from rich.progress import (
                    BarColumn,
                    MofNCompleteColumn,
                    Progress,
                    TextColumn,
                    TimeElapsedColumn,
                )

                self.bar = Progress(TextColumn(desc), BarColumn(), MofNCompleteColumn(),
                                    TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), console=con,
                                    transient=True)
                self.bar.start()
                self.task = self.bar.add_task(desc, total=total_texts, rate="")

    def line(self) -> str:
        el = time.perf_counter() - self.t0
        rate = self.tokens / el if el > 0 else 0.0
        return (f"{self.desc}: {self.done}/{self.total} texts, {self.tokens:,} tokens, "
                f"{rate:,.0f} tokens/s, {el:.0f} s")

    def advance(self, texts: int, tokens: int) -> None:
        self.done += texts
        self.tokens += tokens
        if self.sink is None:
            return
        now = time.perf_counter()
        if self.bar is not None:
            el = now - self.t0
            self.bar.update(self.task, advance=texts, rate=f"{self.tokens / el:,.0f} tokens/s" if el > 0 else "")
        elif now - self.last >= self.sink[1] and self.done < self.total:
            self.last = now
            self.sink[0](self.line())

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
        if self.sink is not None and self.total > 0 and self.done:
            self.sink[0](self.line())


class PassesCancelled(RuntimeError):
    """Raised by a pass whose :func:`cancelled_by` event was set: the packs not yet started
    were skipped (the memo keeps those that finished)."""


_CANCEL = threading.local()


@contextlib.contextmanager
def cancelled_by(event: threading.Event) -> Iterator[None]:
    """Passes started on this thread inside the block stop at the next pack once
    ``event`` is set, raising :class:`PassesCancelled` (a background thread's forward
    that the program no longer needs, e.g. after Ctrl-C, ends within a pack)."""
    old = getattr(_CANCEL, "event", None)
    _CANCEL.event = event
    try:
        yield
    finally:
        _CANCEL.event = old


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


def _run_groups(desc: str, plan: Plan, items: list, groups: list[list[int]], fn: Callable[[list], None],
                progress: bool, sizes: list[tuple[int, int]] | None = None) -> None:
    """Run ``fn`` on each group of ``items``: side by side on :func:`plan_workers` workers,
    else one after the other with adaptive threads; with progress either way.

    ``sizes``: (texts, tokens) of each item (default: one text of ``len(item[1])`` tokens).
    ``fn`` must be safe to call from several threads at once (each call writes its own
    outputs). The first error of any group is raised once the groups already running end;
    groups not yet started are cancelled.
    """
    sizes = sizes or [(1, len(it[1])) for it in items]
    pr = _Progress(desc, sum(n for n, _ in sizes), sum(t for _, t in sizes), progress)
    workers = plan_workers(plan, len(groups))
    try:
        if workers > 1:
            _run_side_by_side(plan, items, groups, fn, sizes, pr, workers)
            return
        th = _Threads(plan, len(groups))
        cancel = getattr(_CANCEL, "event", None)
        try:
            for g in groups:
                if cancel is not None and cancel.is_set():
                    raise PassesCancelled("forward passes cancelled")
                grp = [items[j] for j in g]
                th.before()
                t0 = time.perf_counter()
                fn(grp)
                ntexts, ntok = sum(sizes[j][0] for j in g), sum(sizes[j][1] for j in g)
                th.after(ntok, time.perf_counter() - t0)
                pr.advance(ntexts, ntok)
        finally:
            th.close()
    finally:
        pr.close()


def _run_side_by_side(plan: Plan, items: list, groups: list[list[int]], fn: Callable[[list], None],
                      sizes: list[tuple[int, int]], pr: _Progress, workers: int) -> None:
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    import torch

    orig = torch.get_num_threads()
    base = orig if plan.threads == "auto" else int(plan.threads)
    torch.set_num_threads(max(1, base // workers))
    ex = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="veribench-pack")

    cancel = getattr(_CANCEL, "event", None)

    def task(grp: list) -> None:
        if cancel is not None and cancel.is_set():
            raise PassesCancelled("forward passes cancelled")
        fn(grp)

    try:
        futs = {ex.submit(task, [items[j] for j in g]): g for g in groups}
        pending = set(futs)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)  # progress as each pack ends
            for f in done:
                if f.exception() is not None:
                    for p in pending:
                        p.cancel()
                    raise f.exception()
                g = futs[f]
                pr.advance(sum(sizes[j][0] for j in g), sum(sizes[j][1] for j in g))
    finally:
        ex.shutdown(wait=True, cancel_futures=True)
        torch.set_num_threads(orig)


# --------------------------------------------------------------------------- single-model passes
def single_passes(
    lm: LoadedModel,
    texts: Sequence[str],
    max_tokens: int,
    *,
    batch_size: int = 16,
    max_batch_tokens: int = 16384,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    memo: PassMemo | None = MEMO,
    progress: bool = False,
    plan: Plan | None = None,
) -> list[SinglePass | TooShort]:
    """One pass of ``lm`` over each text not already in the memo; returns per-text outputs.

    Args:
        lm: a loaded causal LM.
        texts: non-empty texts.
        max_tokens: truncation cap in tokens (special tokens included); bounded further
            by the model's position limit.
        batch_size, max_batch_tokens: padded batches (texts, padded tokens per pass),
            used when ``plan`` is None or padded.
        chunk_bytes: fp32 logit bytes per vocabulary chunk.
        progress: report progress (see :func:`report_progress`).
        plan: execution plan (default: :func:`resolve_plan` for the device).
    """
    with _models_locked(lm):  # the memo is read under the model's lock: a text another caller
        # is forwarding right now is waited for and read from the memo, not forwarded twice
        return _single_passes(lm, texts, max_tokens, batch_size=batch_size, max_batch_tokens=max_batch_tokens,
                              chunk_bytes=chunk_bytes, memo=memo, progress=progress, plan=plan)


def _single_passes(lm: LoadedModel, texts: Sequence[str], max_tokens: int, *, batch_size: int,
                   max_batch_tokens: int, chunk_bytes: int, memo: PassMemo | None, progress: bool,
                   plan: Plan | None) -> list[SinglePass | TooShort]:
    plan = plan or resolve_plan(lm, batch_size=batch_size, max_batch_tokens=max_batch_tokens)
    cap = model_cap(lm, max_tokens)
    out: list[Any] = [None] * len(texts)
    shas = [text_sha256(t) for t in texts]
    todo = []
    for i, s in enumerate(shas):
        hit = memo.get(("single", lm.key, s), cap) if memo is not None else None
        if hit is not None:
            out[i] = hit
        else:
            todo.append(i)
    if not todo:
        return out
    toks = tokenize(lm, [texts[i] for i in todo])
    work = []
    for i, ids in zip(todo, toks):
        if len(ids) < 2:
            out[i] = TooShort(len(ids))
            if memo is not None:
                memo.put(("single", lm.key, shas[i]), out[i])
        else:
            work.append((i, ids[:cap], len(ids)))
    if not work:
        return out

    share = plan.share_prefixes and plan.packing == "packed" and plan.attention == "segments" and not plan.compile
    parent = shared_prefixes([w[1] for w in work], plan.min_shared_prefix) if share else [None] * len(work)
    fams: dict[int, list[int]] = {}
    for j, p in enumerate(parent):
        fams.setdefault(j if p is None else p[0], []).append(j)
    units = [sorted(f, key=lambda j: parent[j] is not None) for f in fams.values()]  # the root first
    fed = [sum(len(work[j][1]) - (parent[j][1] if parent[j] else 0) for j in u) for u in units]

    def run(unit_group: list) -> None:
        idx = [j for u in unit_group for j in u]
        items = [work[j] for j in idx]
        local = {j: n for n, j in enumerate(idx)}
        pre = [None if parent[j] is None else (local[parent[j][0]], parent[j][1]) for j in idx]
        lay = _layout(lm, plan, [it[1] for it in items], cap, prefix=pre if any(pre) else None)
        res = _forward_single(lm, lay, plan, chunk_bytes)
        for (i, ids, n_total), (ll, rank, ent, m2) in zip(items, res):
            sp = SinglePass(n_total, np.asarray(ids, dtype=np.int64), ll, rank, ent, m2)
            out[i] = sp
            if memo is not None:
                memo.put(("single", lm.key, shas[i]), sp)
        STATS.add(lm.key, len(items), sum(len(it[1]) for it in items), batches=1)

    sizes = [(len(u), sum(len(work[j][1]) for j in u)) for u in units]
    with _attention_impl(lm, plan):
        _run_groups(f"forward {lm.name}", plan, units, _groups(plan, fed), run, progress, sizes=sizes)
    return out


def _forward_single(lm: LoadedModel, lay: Layout, plan: Plan, chunk_bytes: int):
    import torch

    V = lm.vocab_size
    sub = plan.stats_rows
    step = _chunk_rows(V, chunk_bytes, copies=1 if sub else 4)
    parts: list[list[Any]] = [[], [], [], []]
    with torch.inference_mode():
        rows, labels, counts = _rows(lay, False, lm.device)
        kind, t, head = _hidden_or_logits(lm, lay, plan)
        buf = _logit_buffer(0, min(step, rows.shape[0]), V, lm.device)
        for a in range(0, rows.shape[0], step):
            z = _rows_logits(kind, t, head, rows[a:a + step], out=buf)
            lab = labels[a:a + step]
            k_rows = sub or z.shape[0]
            for b in range(0, z.shape[0], k_rows):  # sub-blocks whose vocabulary passes stay in cache
                ll, rank, ent, m2, _ = token_stats(z[b:b + k_rows], lab[b:b + k_rows])
                for k, v in enumerate((ll, rank, ent, m2)):
                    parts[k].append(v.cpu())
            del z
    cat = [torch.cat(p).numpy() for p in parts]
    out, o = [], 0
    for n in counts:
        out.append((cat[0][o:o + n].astype(np.float64), cat[1][o:o + n].astype(np.int64),
                    cat[2][o:o + n].astype(np.float64), cat[3][o:o + n].astype(np.float64)))
        o += n
    if lay.prefix is not None:  # a continuation reuses its shared text's first k-1 positions
        out = [o_ if p is None else tuple(np.concatenate([out[p[0]][q][: p[1] - 1], o_[q]]) for q in range(4))
               for o_, p in zip(out, lay.prefix)]
    return out


# --------------------------------------------------------------------------- pair passes
def pair_passes(
    lm_p: LoadedModel,
    lm_q: LoadedModel,
    texts: Sequence[str],
    max_tokens: int,
    *,
    batch_size: int = 16,
    max_batch_tokens: int = 16384,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    memo: PassMemo | None = MEMO,
    progress: bool = False,
    plan: Plan | None = None,
) -> list[tuple[PairPass, SinglePass, SinglePass] | TooShort | Mismatch]:
    """One pass of each model per text (p = sampling/observer, q = scoring/performer).

    Returns per text ``(pair, single_p, single_q)``; each model's single-model outputs
    are memoised too, so its single-model statistics need no further pass. When p and
    q are the same model, one pass serves both roles. Both models run on the same
    layout (the same packs), one after the other; ``plan`` is resolved for ``lm_p``.
    """
    with _models_locked(lm_p, lm_q):
        return _pair_passes(lm_p, lm_q, texts, max_tokens, batch_size=batch_size, max_batch_tokens=max_batch_tokens,
                            chunk_bytes=chunk_bytes, memo=memo, progress=progress, plan=plan)


def _pair_passes(lm_p: LoadedModel, lm_q: LoadedModel, texts: Sequence[str], max_tokens: int, *, batch_size: int,
                 max_batch_tokens: int, chunk_bytes: int, memo: PassMemo | None, progress: bool,
                 plan: Plan | None) -> list[tuple[PairPass, SinglePass, SinglePass] | TooShort | Mismatch]:
    plan = plan or resolve_plan(lm_p, batch_size=batch_size, max_batch_tokens=max_batch_tokens)
    cap = min(model_cap(lm_p, max_tokens), model_cap(lm_q, max_tokens))
    same = lm_p.key == lm_q.key
    pkey = ("pair", lm_p.key, lm_q.key)
    shas = [text_sha256(t) for t in texts]
    out: list[Any] = [None] * len(texts)
    todo = []
    for i, s in enumerate(shas):
        if memo is None:
            todo.append(i)
            continue
        pr = memo.get(pkey + (s,), cap)
        if isinstance(pr, (TooShort, Mismatch)):
            out[i] = pr
            continue
        sp = memo.get(("single", lm_p.key, s), cap)
        sq = sp if same else memo.get(("single", lm_q.key, s), cap)
        if same and isinstance(sp, SinglePass):
            pr = _pair_from_single(sp)
        if pr is not None and isinstance(sp, SinglePass) and isinstance(sq, SinglePass):
            out[i] = (pr, sp, sq)
        else:
            todo.append(i)
    if not todo:
        return out
    if same:
        sps = single_passes(lm_p, [texts[i] for i in todo], max_tokens, chunk_bytes=chunk_bytes, memo=memo,
                            progress=progress, plan=plan)
        for i, sp in zip(todo, sps):
            out[i] = sp if isinstance(sp, TooShort) else (_pair_from_single(sp), sp, sp)
        return out
    tp = tokenize(lm_p, [texts[i] for i in todo])
    tq = tokenize(lm_q, [texts[i] for i in todo])
    work = []
    for i, a, b in zip(todo, tp, tq):
        if a != b:
            out[i] = Mismatch(len(b))
        elif len(b) < 2:
            out[i] = TooShort(len(b))
        else:
            work.append((i, b[:cap], len(b)))
            continue
        if memo is not None:
            memo.put(pkey + (shas[i],), out[i])
    if not work:
        return out
    plan_q = plan if (lm_q.device, lm_q.dtype) == (lm_p.device, lm_p.dtype) else resolve_plan(
        lm_q, packing=plan.packing, compile="off")

    def run(items: list) -> None:
        seqs = [it[1] for it in items]
        lay = _layout(lm_p, plan, seqs, cap)
        res = _forward_pair(lm_p, lm_q, lay, plan, plan_q, chunk_bytes)
        for (i, ids, n_total), (sp_arr, sq_arr, pr_arr, vcut) in zip(items, res):
            arr = np.asarray(ids, dtype=np.int64)
            sp = SinglePass(n_total, arr, *sp_arr)
            sq = SinglePass(n_total, arr, *sq_arr)
            pr = PairPass(n_total, arr, *pr_arr, vocab_cut=vcut)
            out[i] = (pr, sp, sq)
            if memo is not None:
                memo.put(("single", lm_p.key, shas[i]), sp)
                memo.put(("single", lm_q.key, shas[i]), sq)
                memo.put(pkey + (shas[i],), pr)
        ntok = sum(len(s) for s in seqs)
        STATS.add(lm_p.key, len(items), ntok, batches=1)
        STATS.add(lm_q.key, len(items), ntok)

    with _attention_impl(lm_p, plan), _attention_impl(lm_q, plan_q):
        _run_groups(f"forward {lm_p.name} + {lm_q.name}", plan, work, _groups(plan, [len(w[1]) for w in work]),
                    run, progress)
    return out


def _pair_from_single(sp: SinglePass) -> PairPass:
    """Same model in both roles: Σ p log p = -H and Σ p (log p)² come from the single pass.

    Only the positions with a label are available (n-1 of them), which is all that
    Fast-DetectGPT uses. Binoculars with observer == performer is not supported here.
    """
    return PairPass(sp.n_total, sp.ids, sp.ll, -sp.ent, sp.m2, vocab_cut=-1)


def _to_device(lay: Layout, device: str) -> Layout:
    if str(lay.ids.device) == str(device) or (device == "cpu" and lay.ids.device.type == "cpu"):
        return lay
    mv = lambda x: x.to(device) if x is not None and hasattr(x, "to") else x  # noqa: E731
    return Layout(mv(lay.ids), mv(lay.mask), mv(lay.position_ids), lay.starts, lay.lengths,
                  {k: mv(v) for k, v in lay.attn_kwargs.items()})


def _forward_pair(lm_p: LoadedModel, lm_q: LoadedModel, lay: Layout, plan: Plan, plan_q: Plan, chunk_bytes: int):
    import torch

    Vp, Vq = lm_p.vocab_size, lm_q.vocab_size
    V = min(Vp, Vq)
    sub = plan.stats_rows
    step = _chunk_rows(max(Vp, Vq), chunk_bytes, copies=2 if sub else 8)
    names = ["p_ll", "p_rank", "p_ent", "p_m2", "q_ll", "q_rank", "q_ent", "q_m2", "x_ll", "x_mu", "x_m2"]
    parts: dict[str, list[Any]] = {k: [] for k in names}
    with torch.inference_mode():
        rows, labels, counts = _rows(lay, True, lm_p.device)
        kp, tp, hp = _hidden_or_logits(lm_p, lay, plan)
        kq, tq, hq = _hidden_or_logits(lm_q, _to_device(lay, lm_q.device), plan_q)
        n0 = min(step, rows.shape[0])
        bp, bq = _logit_buffer(1, n0, Vp, lm_p.device), _logit_buffer(2, n0, Vq, lm_q.device)
        for a in range(0, rows.shape[0], step):
            r = rows[a:a + step]
            lab = labels[a:a + step]
            zp_all = _rows_logits(kp, tp, hp, r, out=bp)
            zq_all = _rows_logits(kq, tq, hq, r.to(lm_q.device), out=bq).to(zp_all.device)
            k_rows = sub or zp_all.shape[0]
            for b in range(0, zp_all.shape[0], k_rows):
                zp, zq, lb = zp_all[b:b + k_rows], zq_all[b:b + k_rows], lab[b:b + k_rows]
                p_ll, p_rank, p_ent, p_m2, _ = token_stats(zp, lb)
                q_ll, q_rank, q_ent, q_m2, logq = token_stats(zq, lb)
                if V != Vq:  # upstream cuts both vocabularies to the smaller one before softmax
                    logq = torch.log_softmax(zq[:, :V], dim=-1).clamp_(min=LOG_FLOOR)
                    x_ll = logq.gather(-1, lb.clamp_min(0).unsqueeze(-1)).squeeze(-1)
                    x_ll = torch.where(lb < 0, torch.zeros_like(x_ll), x_ll)
                else:
                    x_ll = q_ll
                x_mu, x_m2 = cross_stats(zp[:, :V], logq)
                for k, v in zip(names, (p_ll, p_rank, p_ent, p_m2, q_ll, q_rank, q_ent, q_m2, x_ll, x_mu, x_m2)):
                    parts[k].append(v.cpu())
                del logq
            del zp_all, zq_all
    cat = {k: torch.cat(v).numpy() for k, v in parts.items()}
    out, o = [], 0
    f = lambda k, a, b: cat[k][a:b].astype(np.int64 if k.endswith("rank") else np.float64)  # noqa: E731
    for n in counts:  # n = len(seq): every position; labels exist for the first n-1
        m = n - 1
        sp = tuple(f(k, o, o + m) for k in ("p_ll", "p_rank", "p_ent", "p_m2"))
        sq = tuple(f(k, o, o + m) for k in ("q_ll", "q_rank", "q_ent", "q_m2"))
        pr = (f("x_ll", o, o + m), f("x_mu", o, o + n), f("x_m2", o, o + n))
        out.append((sp, sq, pr, V))
        o += n
    return out


def finite(x: float) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)
