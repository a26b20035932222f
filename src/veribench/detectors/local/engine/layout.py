"""Packing texts into forward passes: which texts share a pass (:func:`packs`, longest first;
:func:`_buckets` for padded batches), prefixes several texts share (:func:`shared_prefixes`),
the tensors of one pass (:class:`Layout`, :func:`layout_packed`, :func:`layout_padded`) and the
flattened rows of each text's scored positions with their labels (:func:`_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from veribench.detectors.local.engine.plan import Plan
from veribench.detectors.local.engine.tokens import _position_limit
from veribench.detectors.local.models import LoadedModel


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


def _layout(lm: LoadedModel, plan: Plan, seqs: list[list[int]], cap: int,
            prefix: list[tuple[int, int] | None] | None = None) -> Layout:
    if plan.packing == "padded":
        return layout_padded(seqs, lm.device)
    if plan.compile:
        return layout_packed(seqs, lm.device, bucket=plan.bucket_tokens,
                             max_segment=min(cap, _position_limit(lm) or cap), max_length=cap)
    return layout_packed(seqs, lm.device, prefix=prefix)


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


def _to_device(lay: Layout, device: str) -> Layout:
    if str(lay.ids.device) == str(device) or (device == "cpu" and lay.ids.device.type == "cpu"):
        return lay
    mv = lambda x: x.to(device) if x is not None and hasattr(x, "to") else x  # noqa: E731
    return Layout(mv(lay.ids), mv(lay.mask), mv(lay.position_ids), lay.starts, lay.lengths,
                  {k: mv(v) for k, v in lay.attn_kwargs.items()})
