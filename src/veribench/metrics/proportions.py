"""Difference of two independent proportions: subgroup gaps in a false-positive rate (or a
catch rate), e.g. non-native against native writers, archive against fresh text.

The two groups hold different texts, so the paired methods of :mod:`veribench.metrics.paired`
do not apply; the two counts are independent binomials k_a ~ Bin(n_a, p_a), k_b ~ Bin(n_b, p_b).

* Interval: Newcombe's hybrid score interval (Newcombe 1998, "Interval estimation for the
  difference between independent proportions: comparison of eleven methods", Statistics
  in Medicine 17(8):873-890, method 10), computed by statsmodels
  ``confint_proportions_2indep(method="newcomb", compare="diff")``. With the Wilson
  intervals (l_a, u_a), (l_b, u_b) of the two rates,
  L = d - sqrt((p_a - l_a)^2 + (u_b - p_b)^2), U = d + sqrt((u_a - p_a)^2 + (p_b - l_b)^2).
  It is closed-form, stays within [-1, 1] and is defined with zero counts (the
  Miettinen-Nurminen score interval of statsmodels fails when both groups have 0 events).
* Test: Fisher's exact test, two-sided (Fisher 1935; ``scipy.stats.fisher_exact``), which
  is valid at every sample size (no large-sample approximation; it conditions on the
  total number of flagged texts and is conservative). Chosen over the asymptotic z / score
  tests because subgroups in detector benchmarks are often small (tens of texts) and
  rates near 0 are the rule for human texts.

The interval and the test are separate procedures: in borderline cases the interval may
exclude 0 while p is just above alpha (Fisher's test is conservative), or the reverse.
Decisions ("survives the correction") always use the test.

Undefined results are ``None`` with a reason, never NaN or 0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from veribench.metrics.rates import _check_alpha, _check_counts

GAP_TEST = "Fisher exact, two-sided (scipy)"
GAP_INTERVAL = "Newcombe hybrid score (statsmodels confint_proportions_2indep, method='newcomb')"

#: Reason when Fisher's conditional test has no information.
NO_EVENTS_VARIATION = "every text in both groups has the same outcome (all flagged or none): Fisher's test has no information"


@dataclass(frozen=True)
class IndependentDifference:
    """rate_a - rate_b for two independent groups.

    Attributes:
        estimate: k_a/n_a - k_b/n_b in [-1, 1], or ``None`` (a group has no texts).
        lo, hi: the (1 - alpha) Newcombe hybrid score interval, or ``None``.
        p_value: Fisher's exact two-sided p-value, or ``None`` (see ``reason``).
        k_a, n_a, k_b, n_b: the counts.
        rate_a, rate_b: the two rates, ``None`` for an empty group.
        test, interval: method names.
        reason: why something is ``None``, else ``None``.
    """

    estimate: float | None
    lo: float | None
    hi: float | None
    p_value: float | None
    k_a: int
    n_a: int
    k_b: int
    n_b: int
    rate_a: float | None
    rate_b: float | None
    test: str = GAP_TEST
    interval: str = GAP_INTERVAL
    reason: str | None = None

    @property
    def ci(self) -> tuple[float | None, float | None]:
        return (self.lo, self.hi)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def proportion_difference(k_a: int, n_a: int, k_b: int, n_b: int, alpha: float = 0.05) -> IndependentDifference:
    """Difference of two independent proportions with interval and test.

    Args:
        k_a, n_a: events (e.g. human texts flagged) and texts in group a; 0 <= k_a <= n_a.
        k_b, n_b: the same for group b.
        alpha: 0.05 for a 95% interval.

    Returns:
        :class:`IndependentDifference` with ``estimate`` = k_a/n_a - k_b/n_b. A group with
        no texts makes everything ``None`` (reason names the group); when every text of both
        groups has the same outcome the estimate (0) and the interval stand and the p-value
        is ``None`` (:data:`NO_EVENTS_VARIATION`).

    Raises:
        ValueError: counts outside 0 <= k <= n, non-integral counts, alpha outside (0, 1).

    Sources: Newcombe (1998, Stat Med 17:873, method 10) via statsmodels for the interval;
    Fisher's exact test via scipy for the p-value.
    """
    from scipy.stats import fisher_exact
    from statsmodels.stats.proportion import confint_proportions_2indep

    alpha = _check_alpha(alpha)
    k_a, n_a = _check_counts(k_a, n_a)
    k_b, n_b = _check_counts(k_b, n_b)
    rate_a = k_a / n_a if n_a else None
    rate_b = k_b / n_b if n_b else None
    if n_a == 0 or n_b == 0:
        empty = " and ".join(g for g, n in (("group a", n_a), ("group b", n_b)) if n == 0)
        return IndependentDifference(None, None, None, None, k_a, n_a, k_b, n_b, rate_a, rate_b,
                                     reason=f"no texts in {empty}")
    est = k_a / n_a - k_b / n_b  # rate_a - rate_b (both groups hold texts here)
    lo, hi = confint_proportions_2indep(k_a, n_a, k_b, n_b, method="newcomb", compare="diff", alpha=alpha)
    lo, hi = max(-1.0, min(float(lo), est)), min(1.0, max(float(hi), est))
    events = k_a + k_b
    if events == 0 or events == n_a + n_b:
        return IndependentDifference(est, lo, hi, None, k_a, n_a, k_b, n_b, rate_a, rate_b, reason=NO_EVENTS_VARIATION)
    p = float(fisher_exact([[k_a, n_a - k_a], [k_b, n_b - k_b]], alternative="two-sided").pvalue)
    return IndependentDifference(est, lo, hi, min(1.0, p), k_a, n_a, k_b, n_b, rate_a, rate_b)
