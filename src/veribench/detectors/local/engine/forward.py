"""One forward of a model over a :class:`~veribench.detectors.local.engine.layout.Layout`: the
body, compiled or not (:func:`_hidden_or_logits`; the body/head split is checked once per
model by :func:`_head_split`), and the fp32 logits of the scored rows only
(:func:`_rows_logits`, in chunks of :data:`DEFAULT_CHUNK_BYTES`, written into a reusable
per-thread buffer on CPU, :func:`_logit_buffer`). Compilation is logged in :data:`COMPILE_LOG`.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from veribench.detectors.local.engine.layout import Layout
from veribench.detectors.local.engine.plan import Plan, _device_type
from veribench.detectors.local.models import LoadedModel

#: Default fp32 logit bytes per vocabulary chunk (c·V·4 bytes); a few such copies live at once.
DEFAULT_CHUNK_BYTES = 64 * 2**20


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
