"""The canary leak test: is an entry far more accurate on the canary texts than on matched
ordinary texts, as a model trained on leaked test data would be?

The board mixes canary texts (unique markers, never published before the reveal) into its
hidden set. For an entry, ``k_canary`` of ``n_canary`` canaries are classified correctly and
``k_matched`` of ``n_matched`` ordinary texts matched to them (same labels, arms and sources).
Under the null hypothesis (no leak) each canary is right with the matched texts' accuracy
p0 = k_matched / n_matched, independently; the one-sided exact binomial test gives
P(X >= k_canary) for X ~ Binomial(n_canary, p0) (``scipy.stats.binomtest``,
``alternative='greater'``; Clopper & Pearson's exact tail). The entry is flagged when the
p-value is below alpha (default 0.001).

p0 is estimated, not known: the matched set should be much larger than the canary set, or
the test is anti-conservative. The test is undefined (p-value None with a reason) when a count
is zero, when p0 is 0 or 1 (no binomial null is credible: every canary success, or none, would
be "impossible"), or when even all canaries right could not reach alpha (p0 ** n_canary >=
alpha: too few canaries for the test ever to flag).
"""

from __future__ import annotations

from dataclasses import dataclass

from scipy.stats import binomtest

from veribench.metrics._base import warn_undefined

#: The test as the board states it.
CANARY_TEST = ("one-sided exact binomial test (scipy.stats.binomtest, alternative='greater') of the canary "
               "successes against the matched ordinary texts' accuracy")


@dataclass(frozen=True)
class CanaryTest:
    """Result of :func:`canary_leak_test`.

    Attributes:
        p_value: P(X >= k_canary) under Binomial(n_canary, acc_matched), in [0, 1]; None
            when undefined (``reason``).
        flagged: p_value < alpha; None when the p-value is undefined.
        acc_canary: k_canary / n_canary (None when n_canary is 0).
        acc_matched: k_matched / n_matched (None when n_matched is 0).
        alpha: the test's level.
        test: :data:`CANARY_TEST`.
        reason: why the p-value is None, else None.
    """

    p_value: float | None
    flagged: bool | None
    acc_canary: float | None
    acc_matched: float | None
    alpha: float
    test: str
    reason: str | None = None


def _count(name: str, v: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"{name} must be a count (an integer >= 0), not {v!r}")


def canary_leak_test(k_canary: int, n_canary: int, k_matched: int, n_matched: int, *,
                     alpha: float = 0.001) -> CanaryTest:
    """One-sided exact binomial test of an entry's canary accuracy against its matched accuracy.

    Args:
        k_canary, n_canary: canaries classified correctly, canaries (0 <= k <= n).
        k_matched, n_matched: matched ordinary texts classified correctly, matched texts.
        alpha: the level, in (0, 1).

    Returns:
        :class:`CanaryTest` (p-value None with a reason when the test is undefined; an
        :class:`veribench.metrics.UndefinedMetricWarning` is emitted then).

    Raises:
        ValueError: a count that is not a non-negative integer, k > n, or alpha outside (0, 1).
    """
    for name, v in (("k_canary", k_canary), ("n_canary", n_canary), ("k_matched", k_matched),
                    ("n_matched", n_matched)):
        _count(name, v)
    if k_canary > n_canary or k_matched > n_matched:
        raise ValueError(f"successes exceed trials: k_canary={k_canary}, n_canary={n_canary}, "
                         f"k_matched={k_matched}, n_matched={n_matched}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), not {alpha!r}")
    acc_c = k_canary / n_canary if n_canary else None
    acc_m = k_matched / n_matched if n_matched else None

    def undefined(reason: str) -> CanaryTest:
        warn_undefined(f"canary leak test undefined: {reason}")
        return CanaryTest(None, None, acc_c, acc_m, alpha, CANARY_TEST, reason)

    if acc_c is None or acc_m is None:
        return undefined("no canary texts" if acc_c is None else "no matched ordinary texts")
    if acc_m in (0.0, 1.0):
        return undefined(f"the matched texts' accuracy is {acc_m:g} ({k_matched}/{n_matched}): no binomial null "
                         "to test against")
    if acc_m ** n_canary >= alpha:
        return undefined(f"too few canaries: with {n_canary} canaries and matched accuracy {acc_m:.3g}, even all "
                         f"canaries right gives p = {acc_m ** n_canary:.3g} >= alpha = {alpha:g}")
    p = float(binomtest(k_canary, n_canary, acc_m, alternative="greater").pvalue)
    return CanaryTest(p, p < alpha, acc_c, acc_m, alpha, CANARY_TEST)
