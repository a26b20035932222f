"""Sample-size planning: how many texts a benchmark needs before anyone scans anything.

Three questions (the protocol's FAQ, ``docs/spec/002``: "with 100 human documents, a
measured 5% false positive rate spans roughly 2-11% at 95% confidence"):

1. **Precision of a rate.** Human texts needed for a Wilson interval of half-width w at
   an expected false-positive rate p (:func:`n_for_wilson_half_width`). The half-width
   is (hi - lo) / 2 of the Wilson (1927) interval computed at an observed rate equal to p
   (statsmodels ``proportion_confint(p n, n, method="wilson")``); the Wilson interval is
   asymmetric, both ends are reported.
2. **A subgroup gap** (independent groups, e.g. non-native against native writers): texts
   per group to detect FPR p_a against p_b at power 1 - beta and two-sided level alpha
   (:func:`n_for_two_proportions`). Power of the z-test with the pooled variance under
   H0 and the unpooled variance under H1 (Fleiss, Levin & Paik 2003, *Statistical Methods
   for Rates and Proportions*, 3rd ed., section 4.2; the same power as statsmodels
   ``power_proportions_2indep``), and the continuity-corrected size of Fleiss, Tytun & Ury
   (1980, Biometrics 36(2):343-346), n_cc = n/4 (1 + sqrt(1 + 2(r + 1)/(r n |d|)))^2,
   which approximates Fisher's exact test, the test veribench uses for gaps
   (:mod:`veribench.metrics.proportions`). The exact power of Fisher's test at the
   recommended size is computed by enumeration (:func:`exact_power_fisher`).
3. **A paired difference between two detectors** on the same texts (McNemar): texts to
   detect rate_a - rate_b = delta when a share psi of texts is discordant (one detector
   flags, the other not): Connor (1987, Biometrics 43(1):207-211),
   n = (z_{1-alpha/2} sqrt(psi) + z_{1-beta} sqrt(psi - delta^2))^2 / delta^2
   (:func:`n_for_paired`). Without a known psi, independence of the two detectors' flags
   is assumed, psi = r_a (1 - r_b) + r_b (1 - r_a), usually pessimistic (detectors agree
   more than chance, fewer discordant texts, fewer texts needed). The exact power of
   McNemar's exact test at that n is computed by enumeration (:func:`exact_power_mcnemar`).

Every ``n_for_*`` result is the smallest integer n whose power (or half-width) meets the
target under the stated approximation, found by search over n (doubling, then bisection),
not by rounding a closed-form expression. The exact tests' power is searched the same way;
it rises with n up to small ripples from the discreteness of the test, so the exact sizes
can be off by the width of a ripple (a few texts).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.special import gammaln
from scipy.stats import binom, norm

from veribench.metrics.rates import _check_alpha

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

#: Largest n any search goes to.
MAX_N = 10**8


class _Record:
    """``to_dict()`` for the plan dataclasses."""

    def to_dict(self: DataclassInstance) -> dict[str, Any]:
        return asdict(self)


def _check_p(name: str, p: Any, *, open_interval: bool = False) -> float:
    try:
        v = float(p)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in [0, 1], got {p!r}") from None
    ok = (0.0 < v < 1.0) if open_interval else (0.0 <= v <= 1.0)
    if not ok or math.isnan(v):
        raise ValueError(f"{name} must be in {'(0, 1)' if open_interval else '[0, 1]'}, got {p!r}")
    return v


def _smallest_n(ok: Callable[[int], bool], start: int = 1, what: str = "the target") -> int:
    """Smallest n >= start with ok(n), for ok monotone (False ... False True ... True)."""
    if ok(start):
        return start
    lo, hi = start, max(start * 2, 2)
    while not ok(hi):
        lo, hi = hi, hi * 2
        if hi > MAX_N:
            raise ValueError(f"{what} needs more than {MAX_N:,} texts")
    while hi - lo > 1:  # ok(lo) False, ok(hi) True
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


# --------------------------------------------------------------------------------------
# 1. Precision of one rate (Wilson)
# --------------------------------------------------------------------------------------


def wilson_interval_at(rate: float, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """The Wilson interval ``(lo, hi)`` an observed rate ``rate`` would get with n texts
    (statsmodels ``proportion_confint(rate * n, n, method="wilson")``; the count may be
    fractional: this is a planning figure)."""
    from statsmodels.stats.proportion import proportion_confint

    p = _check_p("rate", rate)
    alpha = _check_alpha(alpha)
    if int(n) < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    lo, hi = proportion_confint(p * int(n), int(n), alpha=alpha, method="wilson")
    # as veribench.metrics.rates.wilson: exact 0 / 1 ends, and the interval holds the rate
    lo = 0.0 if p == 0.0 else min(max(float(lo), 0.0), p)
    hi = 1.0 if p == 1.0 else max(min(float(hi), 1.0), p)
    return lo, hi


def wilson_half_width(rate: float, n: int, alpha: float = 0.05) -> float:
    """Half the width, (hi - lo) / 2, of :func:`wilson_interval_at`."""
    lo, hi = wilson_interval_at(rate, n, alpha)
    return (hi - lo) / 2.0


@dataclass(frozen=True)
class HalfWidthPlan(_Record):
    """Texts needed for a Wilson interval of a given half-width.

    Attributes:
        n: smallest n with half-width <= ``half_width`` at the expected rate.
        rate: expected rate (e.g. FPR). half_width: the target. confidence: 1 - alpha.
        lo, hi: the Wilson interval at that n (asymmetric around the rate).
        achieved_half_width: (hi - lo) / 2 at n.
        method: the interval used.
    """

    n: int
    rate: float
    half_width: float
    confidence: float
    lo: float
    hi: float
    achieved_half_width: float
    method: str = "Wilson score interval (Wilson 1927; statsmodels proportion_confint)"


def n_for_wilson_half_width(rate: float, half_width: float, alpha: float = 0.05) -> HalfWidthPlan:
    """Smallest number of texts for a Wilson interval of half-width <= ``half_width``.

    Args:
        rate: expected rate in [0, 1] (e.g. 0.05 for a 5% false-positive rate).
        half_width: target half-width in (0, 0.5], e.g. 0.02 for +-2 points.
        alpha: 0.05 for 95% intervals.

    Returns:
        :class:`HalfWidthPlan`. Example: rate 0.05, n = 100 gives the interval
        2.2%-11.2% (half-width 4.5 points), the protocol FAQ's "roughly 2-11%".

    Raises:
        ValueError: rate outside [0, 1], half-width outside (0, 0.5], alpha outside (0, 1).

    The half-width decreases with n at a fixed rate; the result is found by search
    (doubling, then bisection) on that monotone function.
    """
    p = _check_p("rate", rate)
    try:
        w = float(half_width)
    except (TypeError, ValueError):
        raise ValueError(f"half_width must be a number in (0, 0.5], got {half_width!r}") from None
    if not (0.0 < w <= 0.5):
        raise ValueError(f"half_width must be in (0, 0.5], got {half_width!r}")
    alpha = _check_alpha(alpha)
    n = _smallest_n(lambda k: wilson_half_width(p, k, alpha) <= w, what=f"a half-width of {w:g}")
    lo, hi = wilson_interval_at(p, n, alpha)
    return HalfWidthPlan(n, p, w, 1.0 - alpha, lo, hi, (hi - lo) / 2.0)


# --------------------------------------------------------------------------------------
# 2. Two independent groups (subgroup gap)
# --------------------------------------------------------------------------------------


def power_two_proportions(rate_a: float, rate_b: float, n_a: float, ratio: float = 1.0, alpha: float = 0.05) -> float:
    """Power of the two-sided z-test of rate_a = rate_b with n_a texts in group a and
    n_b = ratio * n_a in group b (normal approximation; Fleiss, Levin & Paik 2003, 4.2).

    power = Phi((|d| sqrt(n_a) - z s0) / s1) + Phi((-|d| sqrt(n_a) - z s0) / s1), with
    d = rate_a - rate_b, z = z_{1-alpha/2}, pbar = (rate_a + r rate_b) / (1 + r),
    s0 = sqrt(pbar (1 - pbar) (1 + 1/r)), s1 = sqrt(rate_a (1 - rate_a) + rate_b (1 - rate_b) / r).
    """
    pa, pb = _check_p("rate_a", rate_a), _check_p("rate_b", rate_b)
    alpha = _check_alpha(alpha)
    r = float(ratio)
    if not r > 0:
        raise ValueError(f"ratio must be > 0, got {ratio!r}")
    d = abs(pa - pb)
    pbar = (pa + r * pb) / (1.0 + r)
    s0 = math.sqrt(pbar * (1.0 - pbar) * (1.0 + 1.0 / r))
    s1 = math.sqrt(pa * (1.0 - pa) + pb * (1.0 - pb) / r)
    z = float(norm.isf(alpha / 2.0))
    root = math.sqrt(float(n_a))
    if s1 == 0.0:  # both rates at 0 or 1: the outcome is deterministic
        return 1.0 if d * root > z * s0 else float(alpha)
    return float(norm.sf((z * s0 - d * root) / s1) + norm.cdf((-z * s0 - d * root) / s1))


def exact_power_fisher(rate_a: float, rate_b: float, n_a: int, n_b: int, alpha: float = 0.05, tail: float = 1e-12) -> float:
    """Power of Fisher's exact two-sided test at level alpha, by enumeration.

    Sums P(k_a) P(k_b) over every outcome (k_a, k_b) with Fisher p-value <= alpha, where
    k_a ~ Bin(n_a, rate_a), k_b ~ Bin(n_b, rate_b) independently; outcomes with probability
    below ``tail`` in either binomial are left out (the result is low by at most 2 tail
    (n_a + n_b)). The p-value is the sum of the conditional hypergeometric probabilities no
    larger than the observed one (relative tolerance 1e-7, as ``scipy.stats.fisher_exact``).
    """
    pa, pb = _check_p("rate_a", rate_a), _check_p("rate_b", rate_b)
    alpha = _check_alpha(alpha)
    n_a, n_b = int(n_a), int(n_b)
    ka = np.arange(n_a + 1)
    kb = np.arange(n_b + 1)
    fa = binom.pmf(ka, n_a, pa)
    fb = binom.pmf(kb, n_b, pb)
    ka, fa = ka[fa >= tail], fa[fa >= tail]
    kb, fb = kb[fb >= tail], fb[fb >= tail]
    total = n_a + n_b
    lf = gammaln(np.arange(total + 1, dtype=np.float64) + 1.0)  # lf[k] = log k!
    log_choose_total = lf[total] - lf[np.arange(total + 1)] - lf[total - np.arange(total + 1)]
    power = 0.0
    # Group the outcomes by their total t = k_a + k_b: the conditional law of k_a given t
    # is hypergeometric, and the p-value of every outcome with that t comes from one pmf.
    for t in np.unique(ka[:, None] + kb[None, :]):
        lo_k, hi_k = max(0, t - n_b), min(n_a, t)
        support = np.arange(lo_k, hi_k + 1)
        # hypergeometric pmf C(n_a, k) C(n_b, t - k) / C(total, t), in log space
        pmf = np.exp(lf[n_a] - lf[support] - lf[n_a - support] + lf[n_b] - lf[t - support] - lf[n_b - t + support]
                     - log_choose_total[t])
        order = np.argsort(pmf, kind="stable")
        csum = np.cumsum(pmf[order])
        # p-value of k: sum of pmf values <= pmf(k) * (1 + 1e-7)
        idx = np.searchsorted(pmf[order], pmf * (1.0 + 1e-7), side="right") - 1
        pval = csum[idx]
        sig = support[pval <= alpha]
        if sig.size == 0:
            continue
        a_ok = np.isin(ka, sig)
        b_need = t - ka[a_ok]
        pos = np.searchsorted(kb, b_need)
        pos_ok = (pos < kb.size) & (kb[np.minimum(pos, kb.size - 1)] == b_need)
        power += float(np.sum(fa[a_ok][pos_ok] * fb[pos[pos_ok]]))
    return min(1.0, power)


@dataclass(frozen=True)
class TwoGroupPlan(_Record):
    """Texts per group to detect a gap between two independent rates.

    Attributes:
        n_a, n_b: texts per group, normal approximation (z-test), n_b = ceil(ratio * n_a).
        n_a_cc, n_b_cc: with the Fleiss-Tytun-Ury continuity correction (a closed-form
            approximation to Fisher's exact test).
        n_a_exact, n_b_exact: smallest sizes (n_b = ceil(ratio * n_a)) at which Fisher's exact
            test, the test veribench uses for gaps, reaches the power (by enumeration,
            :func:`exact_power_fisher`); ``None`` above :data:`MAX_EXACT_TWO_GROUP` texts per group.
        exact_power: Fisher's exact power at (n_a_exact, n_b_exact).
        rate_a, rate_b, difference (rate_a - rate_b), power, alpha, ratio: the inputs.
    """

    n_a: int
    n_b: int
    n_a_cc: int
    n_b_cc: int
    n_a_exact: int | None
    n_b_exact: int | None
    exact_power: float | None
    rate_a: float
    rate_b: float
    difference: float
    power: float
    alpha: float
    ratio: float
    method: str = ("two-sided z-test power, pooled H0 / unpooled H1 variance (Fleiss, Levin & Paik 2003); "
                   "continuity correction of Fleiss, Tytun & Ury 1980; exact power of Fisher's test by enumeration")


#: Largest group size for which the exact power of Fisher's test is searched.
MAX_EXACT_TWO_GROUP = 5000
#: Largest n for which the exact power of McNemar's test is searched.
MAX_EXACT_PAIRED = 50000


def _ceil(x: float) -> int:
    return int(math.ceil(x - 1e-9))


def _check_power(power: Any) -> float:
    try:
        v = float(power)
    except (TypeError, ValueError):
        raise ValueError(f"power must be a number in (0, 1), got {power!r}") from None
    if not 0.0 < v < 1.0:
        raise ValueError(f"power must be in (0, 1), got {power!r}")
    return v


def n_for_two_proportions(rate_a: float, rate_b: float, power: float = 0.8, alpha: float = 0.05,
                          ratio: float = 1.0, exact: bool = True) -> TwoGroupPlan:
    """Texts per group to detect rate_a != rate_b with the given power (two-sided alpha).

    Args:
        rate_a, rate_b: expected rates in the two groups (e.g. FPR 0.20 for non-native,
            0.05 for native writers); must differ.
        power: 1 - beta, e.g. 0.8.
        alpha: two-sided level, e.g. 0.05 (use the Holm-adjusted level if the gap is one of
            several tests).
        ratio: n_b / n_a.
        exact: also search the size for Fisher's exact test (enumeration; up to a few
            seconds for thousands of texts). ``False`` leaves the exact fields ``None``.

    Returns:
        :class:`TwoGroupPlan`: n_a is the smallest integer with
        :func:`power_two_proportions` >= power (the same power function as statsmodels
        ``power_proportions_2indep``); n_a_cc applies the continuity correction to it.

    Raises:
        ValueError: rates outside [0, 1] or equal, power or alpha outside (0, 1), ratio <= 0.
    """
    pa, pb = _check_p("rate_a", rate_a), _check_p("rate_b", rate_b)
    target = _check_power(power)
    alpha = _check_alpha(alpha)
    r = float(ratio)
    if not r > 0:
        raise ValueError(f"ratio must be > 0, got {ratio!r}")
    if pa == pb:
        raise ValueError("rate_a and rate_b are equal: no sample size detects a difference of 0")
    n_a = _smallest_n(lambda k: power_two_proportions(pa, pb, k, r, alpha) >= target, what="this difference")
    d = abs(pa - pb)
    n_cc = _ceil(n_a / 4.0 * (1.0 + math.sqrt(1.0 + 2.0 * (r + 1.0) / (r * n_a * d))) ** 2)
    n_ex: int | None = None
    exact_pw = None
    if exact and max(n_cc, _ceil(r * n_cc)) <= MAX_EXACT_TWO_GROUP:
        try:
            n_ex = _smallest_n(lambda k: exact_power_fisher(pa, pb, k, max(1, _ceil(r * k)), alpha) >= target,
                               start=max(1, n_a // 2), what="this difference (exact test)")
        except ValueError:
            n_ex = None
        if n_ex is not None and max(n_ex, _ceil(r * n_ex)) <= MAX_EXACT_TWO_GROUP:
            exact_pw = exact_power_fisher(pa, pb, n_ex, max(1, _ceil(r * n_ex)), alpha)
        else:
            n_ex = None
    return TwoGroupPlan(n_a, _ceil(r * n_a), n_cc, _ceil(r * n_cc), n_ex, None if n_ex is None else max(1, _ceil(r * n_ex)),
                        exact_pw, pa, pb, pa - pb, target, alpha, r)


def detectable_difference(n_a: int, n_b: int, rate_b: float, power: float = 0.8, alpha: float = 0.05) -> float | None:
    """Smallest gap d > 0 (rate_a = rate_b + d) that n_a and n_b texts detect with the
    given power, under :func:`power_two_proportions`; ``None`` when no d <= 1 - rate_b does.

    Found by bisection on d to 1e-6 (power increases with d for d > 0 at fixed rate_b).
    """
    pb = _check_p("rate_b", rate_b)
    target = _check_power(power)
    alpha = _check_alpha(alpha)
    if int(n_a) < 1 or int(n_b) < 1:
        raise ValueError("n_a and n_b must be >= 1")
    r = int(n_b) / int(n_a)

    def ok(d: float) -> bool:
        return power_two_proportions(pb + d, pb, int(n_a), r, alpha) >= target

    hi = 1.0 - pb
    if hi <= 0 or not ok(hi):
        return None
    lo = 0.0
    while hi - lo > 1e-6:
        mid = (lo + hi) / 2.0
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


# --------------------------------------------------------------------------------------
# 3. Paired difference between two detectors (McNemar)
# --------------------------------------------------------------------------------------


def discordant_probabilities(rate_a: float, rate_b: float, discordant: float | None = None) -> tuple[float, float]:
    """``(p_a_only, p_b_only)``: probabilities that only a / only b flags a text.

    Args:
        rate_a, rate_b: the two detectors' expected rates on the same texts.
        discordant: share psi of texts where they disagree; ``None`` assumes independent
            flags, psi = rate_a (1 - rate_b) + rate_b (1 - rate_a).

    Raises:
        ValueError: psi incompatible with the rates (it must satisfy |rate_a - rate_b| <=
            psi <= min(rate_a + rate_b, 2 - rate_a - rate_b)).
    """
    ra, rb = _check_p("rate_a", rate_a), _check_p("rate_b", rate_b)
    delta = ra - rb
    psi = ra * (1.0 - rb) + rb * (1.0 - ra) if discordant is None else _check_p("discordant", discordant)
    if not (abs(delta) - 1e-12 <= psi <= min(ra + rb, 2.0 - ra - rb) + 1e-12):
        raise ValueError(
            f"a discordant share of {psi:g} is impossible with rates {ra:g} and {rb:g}: it must lie in "
            f"[{abs(delta):g}, {min(ra + rb, 2.0 - ra - rb):g}]")
    return min(1.0, max(0.0, (psi + delta) / 2.0)), min(1.0, max(0.0, (psi - delta) / 2.0))


def power_paired(p_a_only: float, p_b_only: float, n: float, alpha: float = 0.05) -> float:
    """Power of McNemar's test (normal approximation, Connor 1987) with n paired texts.

    power = Phi((|delta| sqrt(n) - z sqrt(psi)) / sqrt(psi - delta^2)) + the other tail,
    delta = p_a_only - p_b_only, psi = p_a_only + p_b_only, z = z_{1-alpha/2}.
    """
    p10, p01 = _check_p("p_a_only", p_a_only), _check_p("p_b_only", p_b_only)
    alpha = _check_alpha(alpha)
    if p10 + p01 > 1.0 + 1e-12:
        raise ValueError("p_a_only + p_b_only must be <= 1")
    delta, psi = abs(p10 - p01), p10 + p01
    z = float(norm.isf(alpha / 2.0))
    sd1 = math.sqrt(max(psi - delta * delta, 0.0))
    root = math.sqrt(float(n))
    if sd1 == 0.0:
        return 1.0 if delta * root > z * math.sqrt(psi) else float(alpha)
    return float(norm.sf((z * math.sqrt(psi) - delta * root) / sd1) + norm.cdf((-z * math.sqrt(psi) - delta * root) / sd1))


def exact_power_mcnemar(p_a_only: float, p_b_only: float, n: int, alpha: float = 0.05) -> float:
    """Power of McNemar's exact two-sided test at level alpha with n paired texts, by
    enumeration: sum over m ~ Bin(n, psi) discordant texts of P(reject | m), where the a-only
    count b ~ Bin(m, p_a_only / psi) and the test rejects when
    min(1, 2 Bin(min(b, m - b); m, 1/2)) <= alpha (the p-value of statsmodels'
    ``mcnemar(exact=True)``).
    """
    p10, p01 = _check_p("p_a_only", p_a_only), _check_p("p_b_only", p_b_only)
    alpha = _check_alpha(alpha)
    n = int(n)
    psi = p10 + p01
    if psi == 0.0:
        return 0.0
    pi = p10 / psi
    pm = binom.pmf(np.arange(n + 1), n, psi)
    ms = np.flatnonzero(pm > 1e-15)
    ms = ms[ms > 0]
    if ms.size == 0:
        return 0.0
    # All m at once: for each m, the a-only counts b within 9 sd of m * pi (the rest carries
    # under 1e-18 of probability), on a common grid of width W.
    sd = np.sqrt(ms * pi * (1.0 - pi))
    lo = np.maximum(0, np.floor(ms * pi - 9.0 * sd - 1.0)).astype(np.int64)
    hi = np.minimum(ms, np.ceil(ms * pi + 9.0 * sd + 1.0)).astype(np.int64)
    width = int((hi - lo).max()) + 1
    b = lo[:, None] + np.arange(width)[None, :]
    m2 = ms[:, None]
    inside = b <= np.minimum(hi, ms)[:, None]
    bb = np.where(inside, b, 0)
    pval = np.minimum(1.0, 2.0 * binom.cdf(np.minimum(bb, m2 - bb), m2, 0.5))
    reject = inside & (pval <= alpha)
    power = float(np.sum(pm[ms] * np.sum(np.where(reject, binom.pmf(bb, m2, pi), 0.0), axis=1)))
    return min(1.0, float(power))


@dataclass(frozen=True)
class PairedPlan(_Record):
    """Texts (scored by both detectors) to detect a paired difference of rates.

    Attributes:
        n: smallest n with :func:`power_paired` >= power (Connor 1987).
        n_exact: smallest n at which McNemar's exact test (the test veribench uses, more
            conservative than the approximation) reaches the power, by enumeration
            (:func:`exact_power_mcnemar`); ``None`` above :data:`MAX_EXACT_PAIRED` texts.
        exact_power: the exact power at n_exact.
        rate_a, rate_b, difference, discordant (psi), p_a_only, p_b_only: the inputs and the
            discordant probabilities used. discordant_assumed: psi came from independence.
        power, alpha: the targets.
    """

    n: int
    n_exact: int | None
    exact_power: float | None
    rate_a: float
    rate_b: float
    difference: float
    discordant: float
    p_a_only: float
    p_b_only: float
    discordant_assumed: bool
    power: float
    alpha: float
    method: str = "McNemar, normal approximation of Connor 1987; exact power by enumeration"


def n_for_paired(rate_a: float, rate_b: float, power: float = 0.8, alpha: float = 0.05,
                 discordant: float | None = None, exact: bool = True) -> PairedPlan:
    """Texts needed to detect rate_a != rate_b between two detectors on the same texts.

    Args:
        rate_a, rate_b: expected rates of the two detectors (FPR on human texts or catch
            rate on AI texts); must differ.
        power, alpha: targets (two-sided alpha).
        discordant: expected share of texts where exactly one detector flags; ``None``
            assumes independent flags (see :func:`discordant_probabilities`).
        exact: also search the size for McNemar's exact test (enumeration). ``False``
            leaves ``n_exact`` and ``exact_power`` ``None``.

    Raises:
        ValueError: invalid rates, equal rates, impossible discordant share, power or alpha
            outside (0, 1).
    """
    ra, rb = _check_p("rate_a", rate_a), _check_p("rate_b", rate_b)
    target = _check_power(power)
    alpha = _check_alpha(alpha)
    if ra == rb:
        raise ValueError("rate_a and rate_b are equal: no sample size detects a difference of 0")
    p10, p01 = discordant_probabilities(ra, rb, discordant)
    n = _smallest_n(lambda k: power_paired(p10, p01, k, alpha) >= target, what="this paired difference")
    n_ex: int | None = None
    exact_pw = None
    if exact and n <= MAX_EXACT_PAIRED:
        n_ex = _smallest_n(lambda k: exact_power_mcnemar(p10, p01, k, alpha) >= target, start=max(1, n // 2),
                           what="this paired difference (exact test)")
        if n_ex <= MAX_EXACT_PAIRED:
            exact_pw = exact_power_mcnemar(p10, p01, n_ex, alpha)
        else:
            n_ex = None
    return PairedPlan(n, n_ex, exact_pw, ra, rb, ra - rb, p10 + p01, p10, p01, discordant is None, target, alpha)


# --------------------------------------------------------------------------------------
# Design check for a protocol (used at `protocol commit`)
# --------------------------------------------------------------------------------------

#: Defaults of :func:`design_warnings` (veribench's, not the protocol's).
DESIGN_DEFAULTS = {"expected_fpr": 0.05, "max_half_width": 0.05, "max_detectable_gap": 0.10, "power": 0.8}


def design_warnings(n_human: int, gaps: Sequence[tuple[str, int, int]] = (), *, alpha: float = 0.05,
                    expected_fpr: float = 0.05, max_half_width: float = 0.05, max_detectable_gap: float = 0.10,
                    power: float = 0.8) -> list[str]:
    """Warnings for a corpus too small for what a protocol declares (no warning = fine).

    Args:
        n_human: human texts the protocol selects (for the headline FPR).
        gaps: ``(name, n_group_a, n_group_b)`` human texts per declared subgroup gap.
        alpha: the protocol's comparison level.
        expected_fpr: FPR assumed for planning (default 5%).
        max_half_width: warn when the Wilson half-width at ``expected_fpr`` exceeds this.
        max_detectable_gap: warn when the smallest FPR gap detectable with ``power`` exceeds this.

    Returns:
        One line per problem, naming the numbers.
    """
    out: list[str] = []
    if n_human < 1:
        out.append("the selection holds no human texts: no false-positive rate can be measured")
    else:
        hw = wilson_half_width(expected_fpr, n_human, alpha)
        if hw > max_half_width:
            lo, hi = wilson_interval_at(expected_fpr, n_human, alpha)
            need = n_for_wilson_half_width(expected_fpr, max_half_width, alpha).n
            out.append(f"{n_human} human texts: a {expected_fpr:.0%} FPR would carry a {1 - alpha:.0%} interval of "
                       f"{lo:.1%}-{hi:.1%} (half-width {hw:.1%} > {max_half_width:.1%}); {need} are needed")
    for name, na, nb in gaps:
        if na < 1 or nb < 1:
            out.append(f"gap {name}: a group has no human texts ({na} and {nb}); the gap cannot be measured")
            continue
        mdd = detectable_difference(na, nb, expected_fpr, power, alpha)
        if mdd is None or mdd > max_detectable_gap:
            what = "no gap" if mdd is None else f"only gaps of {mdd:.1%} or more"
            out.append(f"gap {name}: with {na} and {nb} human texts, {what} in FPR (from {expected_fpr:.0%}) can be "
                       f"detected with {power:.0%} power at alpha {alpha:g}")
    return out
