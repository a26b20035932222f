"""How far two float32 evaluations of one model-derived score may lie apart.

The one rule (documented in ``docs/statistics.md``, "Numerical tolerance across CPUs")
for every comparison of scores a local language model computes in float32: the same
text scored on another CPU instruction set (PyTorch's ATen kernels for ``default``,
``avx2`` or ``avx512``), with another thread count, under load, packed with other texts
or alone. Each of these changes the order of the float32 reductions, so the bits differ;
the rule says by how much they may.

The statistics of :mod:`veribench.detectors.local.zeroshot` end in reductions over the
scored tokens and the vocabulary (log-softmax sums, the predictive mean and variance):
``n = tokens * vocab`` rounded terms. Higham's worst-case bound for a sum or inner
product of ``n`` terms is ``gamma_n = n*u / (1 - n*u)`` relative to the sum of absolute
values (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., SIAM 2002,
§3.1, Lemma 3.1 and eq. 3.5; §4.2 for summation). With ``u = 2**-24`` and
``n = 200 * 49152`` it is 0.6: true, and useless as a test tolerance. Rounding errors
of independent sign grow like ``sqrt(n)``: Higham and Mary ("A New Approach to
Probabilistic Rounding Error Analysis", SIAM J. Sci. Comput. 41(5), 2019, §2-3) bound a
sum of ``n`` terms by ``lambda * sqrt(n) * u`` to first order. Their probability
statement (at least ``1 - 2n*exp(-lambda**2 (1-u)**2 / 2)``) says little at our ``n``, so
the rule takes the ``sqrt(n)`` form from them and ``lambda`` from measurement:
:func:`fp32_score_tolerance` is ``LAMBDA * sqrt(tokens * vocab) * u * (1 + |value|)``,
with an absolute floor (a score near 0 has no relative accuracy).

That bound covers the final reductions only; the 30 layers of the forward pass round too,
and no a-priori bound of them is tight. The rule is therefore stated as empirical plus
bound: on SmolLM2-135M (vocab 49152), 18 texts of 2 to 200 tokens, every statistic under
``ATEN_CPU_CAPABILITY`` = default, avx2 and avx512, 1 and 2 threads, packs of 4096 and
150 tokens, the largest difference between any two runs was 0.59 of
``sqrt(n) * u * (1 + |value|)`` (fast-detectgpt, 200 tokens, default against avx512), so
``lambda = 4`` leaves a margin of about 7. The AVX2-only EPYC's -0.4400471595 against
-0.4400526846 (fast-detectgpt on "Short.", 2 tokens) is 0.2 of it.

Statistics built on per-token ranks (rank, log-rank, GLTR, LRR) move only
when two logits lie within rounding of each other, a step of at least ``1/tokens`` that
no float tolerance covers. None moved in the measurement above.
"""

from __future__ import annotations

import math

#: Unit roundoff of IEEE binary32, ``2**-24`` (Higham 2002, §2.1, Table 2.1).
U32 = 2.0 ** -24

#: Multiplier of the probabilistic bound (Higham and Mary 2019): the measured worst case
#: on SmolLM2-135M is 0.59 (module docstring), so 4 leaves a margin of about 7.
LAMBDA = 4.0


def gamma(n: int, u: float = U32) -> float:
    """Higham's worst-case relative bound ``gamma_n = n*u / (1 - n*u)`` for a float sum or
    inner product of ``n`` terms (Higham 2002, §3.1, Lemma 3.1), relative to the sum of
    the terms' absolute values. Dimensionless, in [0, inf).

    Raises:
        ValueError: ``n < 0``, or ``n*u >= 1`` (the bound does not exist).
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if n * u >= 1.0:
        raise ValueError(f"gamma_n undefined: n*u = {n * u:.3g} >= 1")
    return n * u / (1.0 - n * u)


def fp32_score_tolerance(value: float, *, tokens: int, vocab: int, lam: float = LAMBDA) -> float:
    """How far two float32 evaluations of one model score may lie apart, in the score's
    own units: ``lam * sqrt(tokens * vocab) * U32 * (1 + |value|)`` (module docstring:
    Higham and Mary 2019's probabilistic bound over the ``tokens * vocab`` terms of the
    statistic's reductions, with an absolute floor of 1 for a score near 0).

    Args:
        value: the score (either evaluation; any finite float).
        tokens: tokens the score reduces over (>= 1; the text's ``tokens_used``).
        vocab: the model's vocabulary size (>= 1; 49152 for SmolLM2).
        lam: multiplier (> 0; :data:`LAMBDA`).

    Returns:
        A tolerance >= 0; compare ``abs(a - b) <= tolerance``.

    Raises:
        ValueError: a non-finite value, or tokens, vocab or lam out of range.
    """
    if not math.isfinite(value):
        raise ValueError(f"value must be finite, got {value}")
    if tokens < 1 or vocab < 1 or not lam > 0:
        raise ValueError(f"tokens and vocab must be >= 1 and lam > 0, got {tokens}, {vocab}, {lam}")
    return lam * math.sqrt(tokens * vocab) * U32 * (1.0 + abs(value))


def within_fp32(a: float, b: float, *, tokens: int, vocab: int) -> bool:
    """True when ``|a - b|`` is within :func:`fp32_score_tolerance` of the larger of the two.

    Raises:
        ValueError: as :func:`fp32_score_tolerance`.
    """
    v = max(abs(a), abs(b))
    return abs(a - b) <= fp32_score_tolerance(v, tokens=tokens, vocab=vocab)


def discrepancy_tolerance(ll_x: float, lls: list[float], *, tokens: int, vocab: int,
                          lam: float = LAMBDA) -> tuple[float, float]:
    """(tolerance of d, tolerance of z) for DetectGPT's discrepancy
    (:mod:`veribench.detectors.local.detectgpt`) built from float32 log-likelihoods.

    Each log-likelihood ``ll`` may move by ``t = fp32_score_tolerance(ll)`` (the rule
    above; ``tokens`` the longest text's tokens used). First-order propagation:
    ``|δd| <= t_x + max_i t_i`` (d = ll_x − mean ll̃ and a mean moves by at most its
    largest term's move); the population std moves by at most ``max_i |δ_i − δ̄| <=
    2 max_i t_i`` (it is the 2-norm of the centred vector over sqrt(k), and the centred
    perturbation has entries at most ``2 max t_i``); so ``|δz| <= (|δd| + |z| · 2 max_i
    t_i) / std``. The z tolerance is infinite when std is 0 (z is then undefined).

    Args:
        ll_x: base log-likelihood (nats per token, finite).
        lls: the perturbed log-likelihoods (at least one, finite).
        tokens, vocab, lam: as :func:`fp32_score_tolerance`.

    Raises:
        ValueError: as :func:`fp32_score_tolerance`, or ``lls`` empty.
    """
    if not lls:
        raise ValueError("lls must hold at least one perturbed log-likelihood")
    tx = fp32_score_tolerance(ll_x, tokens=tokens, vocab=vocab, lam=lam)
    tp = max(fp32_score_tolerance(v, tokens=tokens, vocab=vocab, lam=lam) for v in lls)
    mean = sum(lls) / len(lls)
    std = math.sqrt(sum((v - mean) ** 2 for v in lls) / len(lls))
    td = tx + tp
    if std == 0:
        return td, math.inf
    z = (ll_x - mean) / std
    return td, (td + abs(z) * 2 * tp) / std
