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

Execution
---------
Texts are tokenised once (special tokens added as the tokenizer does; truncation keeps
the first ``max_tokens`` tokens, BOS included), sorted by length and cut into
length-bucketed batches padded on the right with an attention mask. The transformer
body runs in the model's dtype (bf16/fp16 on GPU); the LM head is applied only to the
valid positions, flattened, with an fp32 copy of its weight (so logits are never rounded
to half precision), in chunks of at most ``chunk_bytes`` of fp32 logits, and
every softmax, log-softmax and vocabulary sum runs in fp32. Memory is therefore
bounded by the chunk, never several B·L·V fp32 copies.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ...hashing import text_sha256
from .models import LoadedModel

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

    def prefix(self, n: int) -> "SinglePass":
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

    def prefix(self, n: int) -> "PairPass":
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

    def add(self, key: tuple, n_texts: int, n_tokens: int) -> None:
        self.texts_forwarded[key] = self.texts_forwarded.get(key, 0) + n_texts
        self.tokens_forwarded[key] = self.tokens_forwarded.get(key, 0) + n_tokens

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
    cfg = lm.model.config
    limit = None
    for attr in ("max_position_embeddings", "n_positions"):
        v = getattr(cfg, attr, None)
        if isinstance(v, int) and v > 0:
            limit = v
            break
    return int(min(max_tokens, limit)) if limit else int(max_tokens)


def tokenize(lm: LoadedModel, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of each text with the tokenizer's special tokens, not truncated."""
    enc = lm.tokenizer(list(texts), add_special_tokens=True, truncation=False, verbose=False)
    return [list(x) for x in enc["input_ids"]]


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


def _hidden_or_logits(lm: LoadedModel, ids, mask):
    """Run the body (returns ('h', hidden, head)) or the full model (('z', logits, None))."""
    split = _head_split(lm)
    if split is not None:
        body, head = split
        return "h", body(input_ids=ids, attention_mask=mask).last_hidden_state, head
    return "z", lm.model(input_ids=ids, attention_mask=mask).logits, None


def _rows_logits(kind: str, t, head, rows):
    """fp32 logits of flattened rows ``rows`` (index into B·L) of hidden states/logits ``t``.

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
        return head(x).float()
    w32 = getattr(head, "_vb_w32", None)
    if w32 is None:
        w32 = head.weight.detach().float()
        b32 = head.bias.detach().float() if getattr(head, "bias", None) is not None else None
        head._vb_w32, head._vb_b32 = w32, b32
    return torch.nn.functional.linear(x.float(), w32, head._vb_b32)


def _chunk_rows(vocab: int, chunk_bytes: int, copies: int = 4) -> int:
    return max(1, int(chunk_bytes // (vocab * 4 * copies)))


def _progress(total: int, desc: str, enabled: bool):
    if not enabled or total <= 1:
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    prog = Progress(TextColumn(desc), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    prog.start()
    return prog, prog.add_task(desc, total=total)


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
) -> list[SinglePass | TooShort]:
    """One pass of ``lm`` over each text not already in the memo; returns per-text outputs.

    Args:
        lm: a loaded causal LM.
        texts: non-empty texts.
        max_tokens: truncation cap in tokens (special tokens included); bounded further
            by the model's position limit.
        batch_size: texts per forward pass; max_batch_tokens: padded tokens per pass.
        chunk_bytes: fp32 logit bytes per vocabulary chunk.
    """

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
    groups = _buckets([len(w[1]) for w in work], batch_size, max_batch_tokens)
    bar = _progress(len(groups), f"forward {lm.name}", progress)
    try:
        for g in groups:
            items = [work[j] for j in g]
            res = _forward_single(lm, [it[1] for it in items], chunk_bytes)
            for (i, ids, n_total), (ll, rank, ent, m2) in zip(items, res):
                sp = SinglePass(n_total, np.asarray(ids, dtype=np.int64), ll, rank, ent, m2)
                out[i] = sp
                if memo is not None:
                    memo.put(("single", lm.key, shas[i]), sp)
            STATS.add(lm.key, len(items), sum(len(it[1]) for it in items))
            STATS.batches += 1
            if bar:
                bar[0].advance(bar[1])
    finally:
        if bar:
            bar[0].stop()
    return out


def _pad(lm: LoadedModel, seqs: list[list[int]]):
    import torch

    L = max(len(s) for s in seqs)
    ids = torch.zeros((len(seqs), L), dtype=torch.long)
    mask = torch.zeros((len(seqs), L), dtype=torch.long)
    for b, s in enumerate(seqs):
        ids[b, : len(s)] = torch.tensor(s, dtype=torch.long)
        mask[b, : len(s)] = 1
    return ids.to(lm.device), mask.to(lm.device), L


def _positions(seqs: list[list[int]], L: int, include_last: bool, device: str):
    """Flattened row indices into B·L, labels (-1 for a last position), and per-text counts."""
    import torch

    rows, labels, counts = [], [], []
    for b, s in enumerate(seqs):
        n = len(s) if include_last else len(s) - 1
        rows.append(torch.arange(n) + b * L)
        lab = torch.full((n,), -1, dtype=torch.long)
        m = len(s) - 1
        lab[:m] = torch.tensor(s[1:], dtype=torch.long)
        labels.append(lab)
        counts.append(n)
    return torch.cat(rows).to(device), torch.cat(labels).to(device), counts


def _forward_single(lm: LoadedModel, seqs: list[list[int]], chunk_bytes: int):
    import torch

    ids, mask, L = _pad(lm, seqs)
    rows, labels, counts = _positions(seqs, L, False, lm.device)
    V = lm.vocab_size
    step = _chunk_rows(V, chunk_bytes)
    parts: list[list[Any]] = [[], [], [], []]
    with torch.inference_mode():
        kind, t, head = _hidden_or_logits(lm, ids, mask)
        for a in range(0, rows.shape[0], step):
            z = _rows_logits(kind, t, head, rows[a:a + step])
            ll, rank, ent, m2, _ = token_stats(z, labels[a:a + step])
            for k, v in enumerate((ll, rank, ent, m2)):
                parts[k].append(v.cpu())
            del z
    cat = [torch.cat(p).numpy() for p in parts]
    out, o = [], 0
    for n in counts:
        out.append((cat[0][o:o + n].astype(np.float64), cat[1][o:o + n].astype(np.int64),
                    cat[2][o:o + n].astype(np.float64), cat[3][o:o + n].astype(np.float64)))
        o += n
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
) -> list[tuple[PairPass, SinglePass, SinglePass] | TooShort | Mismatch]:
    """One pass of each model per text (p = sampling/observer, q = scoring/performer).

    Returns per text ``(pair, single_p, single_q)``; each model's single-model outputs
    are memoised too, so its single-model statistics need no further pass. When p and
    q are the same model, one pass serves both roles.
    """
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
        sps = single_passes(lm_p, [texts[i] for i in todo], max_tokens, batch_size=batch_size,
                            max_batch_tokens=max_batch_tokens, chunk_bytes=chunk_bytes, memo=memo,
                            progress=progress)
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
    groups = _buckets([len(w[1]) for w in work], batch_size, max_batch_tokens)
    bar = _progress(len(groups), f"forward {lm_p.name} + {lm_q.name}", progress)
    try:
        for g in groups:
            items = [work[j] for j in g]
            res = _forward_pair(lm_p, lm_q, [it[1] for it in items], chunk_bytes)
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
            ntok = sum(len(it[1]) for it in items)
            STATS.add(lm_p.key, len(items), ntok)
            STATS.add(lm_q.key, len(items), ntok)
            STATS.batches += 1
            if bar:
                bar[0].advance(bar[1])
    finally:
        if bar:
            bar[0].stop()
    return out


def _pair_from_single(sp: SinglePass) -> PairPass:
    """Same model in both roles: Σ p log p = -H and Σ p (log p)² come from the single pass.

    Only the positions with a label are available (n-1 of them), which is all that
    Fast-DetectGPT uses. Binoculars with observer == performer is not supported here.
    """
    return PairPass(sp.n_total, sp.ids, sp.ll, -sp.ent, sp.m2, vocab_cut=-1)


def _forward_pair(lm_p: LoadedModel, lm_q: LoadedModel, seqs: list[list[int]], chunk_bytes: int):
    import torch

    ids, mask, L = _pad(lm_p, seqs)
    rows, labels, counts = _positions(seqs, L, True, lm_p.device)
    Vp, Vq = lm_p.vocab_size, lm_q.vocab_size
    V = min(Vp, Vq)
    step = _chunk_rows(max(Vp, Vq), chunk_bytes, copies=8)
    names = ["p_ll", "p_rank", "p_ent", "p_m2", "q_ll", "q_rank", "q_ent", "q_m2", "x_ll", "x_mu", "x_m2"]
    parts: dict[str, list[Any]] = {k: [] for k in names}
    with torch.inference_mode():
        kp, tp, hp = _hidden_or_logits(lm_p, ids, mask)
        kq, tq, hq = _hidden_or_logits(lm_q, ids.to(lm_q.device), mask.to(lm_q.device))
        for a in range(0, rows.shape[0], step):
            r = rows[a:a + step]
            lab = labels[a:a + step]
            zp = _rows_logits(kp, tp, hp, r)
            zq = _rows_logits(kq, tq, hq, r.to(lm_q.device)).to(zp.device)
            p_ll, p_rank, p_ent, p_m2, _ = token_stats(zp, lab)
            q_ll, q_rank, q_ent, q_m2, logq = token_stats(zq, lab)
            if V != Vq:  # upstream cuts both vocabularies to the smaller one before softmax
                logq = torch.log_softmax(zq[:, :V], dim=-1).clamp_(min=LOG_FLOOR)
                x_ll = logq.gather(-1, lab.clamp_min(0).unsqueeze(-1)).squeeze(-1)
                x_ll = torch.where(lab < 0, torch.zeros_like(x_ll), x_ll)
            else:
                x_ll = q_ll
            x_mu, x_m2 = cross_stats(zp[:, :V], logq)
            for k, v in zip(names, (p_ll, p_rank, p_ent, p_m2, q_ll, q_rank, q_ent, q_m2, x_ll, x_mu, x_m2)):
                parts[k].append(v.cpu())
            del zp, zq, logq
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
