"""The engine's entry points: :func:`single_passes` (one model) and :func:`pair_passes` (a
model pair), each one forward pass per text not already in the memo. They look texts up in
the memo, tokenise, pack, run each pack (:func:`_forward_single`, :func:`_forward_pair`:
the per-position statistics of every text of a pack) and store the outputs in the memo.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from veribench.detectors.local.engine.attention import _attention_impl
from veribench.detectors.local.engine.forward import (
    DEFAULT_CHUNK_BYTES,
    _chunk_rows,
    _hidden_or_logits,
    _logit_buffer,
    _rows_logits,
)
from veribench.detectors.local.engine.layout import Layout, _groups, _layout, _rows, _to_device, shared_prefixes
from veribench.detectors.local.engine.memo import MEMO, STATS, PassMemo
from veribench.detectors.local.engine.plan import Plan, resolve_plan
from veribench.detectors.local.engine.records import Mismatch, PairPass, SinglePass, TooShort
from veribench.detectors.local.engine.schedule import _models_locked, _run_groups
from veribench.detectors.local.engine.tokens import model_cap, tokenize
from veribench.detectors.local.engine.vocab import LOG_FLOOR, cross_stats, token_stats
from veribench.detectors.local.models import LoadedModel
from veribench.hashing import text_sha256


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
