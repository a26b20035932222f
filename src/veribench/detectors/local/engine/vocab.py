"""Per-position statistics over the vocabulary, in fp32: :func:`token_stats` (log-likelihood,
rank, entropy and Σ p (log p)² of one model's logits) and :func:`cross_stats` (Σ p log q and
Σ p (log q)² of two models' logits, Fast-DetectGPT and Binoculars). Formulas: the package
docstring (:mod:`veribench.detectors.local.engine`).
"""

from __future__ import annotations

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
