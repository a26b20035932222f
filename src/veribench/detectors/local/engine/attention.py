"""Block-diagonal causal attention over a pack: the ``segments`` kernel (each text's slice
through transformers' SDPA, with shared prefixes), the ``varlen`` kernel (FlashAttention's
variable-length kernel), their registration with transformers, and :func:`_attention_impl`,
which runs a model with the plan's kernel and restores its own afterwards.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from veribench.detectors.local.engine.plan import Plan
from veribench.detectors.local.engine.schedule import _model_lock
from veribench.detectors.local.models import LoadedModel


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
