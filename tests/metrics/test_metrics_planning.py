"""Sample-size planning (issue 14) against the protocol FAQ's example, statsmodels' power
functions, brute-force searches over n, and exact power computed here by enumeration and
simulation with statsmodels' and scipy's own tests. Plus the `veribench plan` CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom, fisher_exact, norm
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import (
    power_proportions_2indep,
    proportion_confint,
    samplesize_confint_proportion,
    samplesize_proportions_2indep_onetail,
)
from typer.testing import CliRunner

from veribench.cli.main import app
from veribench.metrics import planning, wilson

# -- 1. Wilson half-width ------------------------------------------------------------------------------


def test_protocol_faq_example():
    """docs/spec/002 FAQ: "with 100 human documents, a measured 5% false positive rate spans
    roughly 2-11% at 95% confidence"."""
    lo, hi = planning.wilson_interval_at(0.05, 100)
    r = wilson(5, 100)
    assert (lo, hi) == pytest.approx((r.lo, r.hi), abs=1e-12)
    assert round(100 * lo) == 2 and round(100 * hi) == 11
    plan = planning.n_for_wilson_half_width(0.05, (hi - lo) / 2)
    assert plan.n == 100


def brute_force_half_width(rate, w, alpha=0.05, limit=100000):
    """Every n from 1 to limit at once; the first whose statsmodels Wilson interval is narrow enough."""
    n = np.arange(1, limit)
    lo, hi = proportion_confint(rate * n, n, alpha=alpha, method="wilson")
    lo = np.where(rate == 0, 0.0, np.clip(lo, 0.0, rate))
    hi = np.where(rate == 1, 1.0, np.clip(hi, rate, 1.0))
    ok = np.flatnonzero((hi - lo) / 2 <= w)
    assert ok.size, "not found"
    return int(n[ok[0]])


@settings(max_examples=60, deadline=None)
@given(st.floats(0.0, 1.0), st.floats(0.01, 0.3), st.sampled_from([0.05, 0.1, 0.01]))
def test_half_width_equals_brute_force_search(rate, w, alpha):
    plan = planning.n_for_wilson_half_width(rate, w, alpha)
    assert plan.n == brute_force_half_width(rate, w, alpha)
    assert plan.achieved_half_width <= w
    assert plan.lo <= rate <= plan.hi


def test_half_width_close_to_statsmodels_normal_sample_size():
    """Away from 0 and 1 the Wilson size approaches the Wald size of statsmodels."""
    plan = planning.n_for_wilson_half_width(0.3, 0.01)
    wald = samplesize_confint_proportion(0.3, 0.01)
    assert abs(plan.n - wald) / wald < 0.01


# -- 2. Two independent groups -------------------------------------------------------------------------


def brute_force_two_groups(pa, pb, power, alpha, ratio, limit=200000):
    """statsmodels' power at every n from 1 to limit at once; the first n with enough power."""
    n = np.arange(1, limit)
    pw = power_proportions_2indep(pa - pb, pb, n, ratio=ratio, alpha=alpha, return_results=False)
    ok = np.flatnonzero(pw >= power)
    assert ok.size, "not found"
    return int(n[ok[0]])


@settings(max_examples=25, deadline=None)
@given(st.floats(0.01, 0.6), st.floats(0.08, 0.4), st.sampled_from([0.8, 0.9]), st.sampled_from([0.05, 0.01]),
       st.sampled_from([1.0, 0.5, 2.0]))
def test_two_groups_equals_brute_force_over_statsmodels_power(pb, d, power, alpha, ratio):
    pa = min(pb + d, 0.99)
    plan = planning.n_for_two_proportions(pa, pb, power, alpha, ratio, exact=False)
    assert plan.n_a == brute_force_two_groups(pa, pb, power, alpha, ratio)
    assert planning.power_two_proportions(pa, pb, plan.n_a, ratio, alpha) == pytest.approx(
        power_proportions_2indep(pa - pb, pb, plan.n_a, ratio=ratio, alpha=alpha, return_results=False), abs=1e-12)
    # statsmodels' closed-form size neglects the far tail: never smaller than ours
    sm = samplesize_proportions_2indep_onetail(pa - pb, pb, power, ratio=ratio, alpha=alpha)
    assert plan.n_a <= math.ceil(sm) <= plan.n_a + 1
    # the continuity correction of Fleiss, Tytun & Ury (1980), written out here
    n = plan.n_a
    cc = n / 4 * (1 + math.sqrt(1 + 2 * (ratio + 1) / (ratio * n * abs(pa - pb)))) ** 2
    assert plan.n_a_cc == math.ceil(cc - 1e-9)


def fisher_power_by_scipy(pa, pb, na, nb, alpha=0.05):
    fa, fb = binom.pmf(np.arange(na + 1), na, pa), binom.pmf(np.arange(nb + 1), nb, pb)
    power = 0.0
    for ka in range(na + 1):
        for kb in range(nb + 1):
            if fisher_exact([[ka, na - ka], [kb, nb - kb]]).pvalue <= alpha:
                power += fa[ka] * fb[kb]
    return power


@pytest.mark.parametrize("pa,pb,na,nb", [(0.5, 0.1, 20, 25), (0.3, 0.05, 30, 30), (0.02, 0.4, 12, 18)])
def test_exact_fisher_power_equals_enumeration_with_scipy(pa, pb, na, nb):
    assert planning.exact_power_fisher(pa, pb, na, nb) == pytest.approx(fisher_power_by_scipy(pa, pb, na, nb), abs=1e-9)


def test_two_groups_exact_size_is_the_first_with_enough_exact_power():
    plan = planning.n_for_two_proportions(0.6, 0.1, 0.8)
    scan = next(n for n in range(1, 200) if planning.exact_power_fisher(0.6, 0.1, n, n) >= 0.8)
    assert plan.n_a_exact == scan
    assert plan.exact_power >= 0.8
    assert planning.exact_power_fisher(0.6, 0.1, plan.n_a_exact - 1, plan.n_a_exact - 1) < 0.8


def test_detectable_difference_inverts_the_power():
    d = planning.detectable_difference(91, 88, 0.05)
    assert planning.power_two_proportions(0.05 + d, 0.05, 91, 88 / 91) == pytest.approx(0.8, abs=1e-4)
    assert planning.detectable_difference(3, 3, 0.9, power=0.99) is None


# -- 3. Paired (McNemar) -------------------------------------------------------------------------------


def connor(p10, p01, power, alpha):
    d, psi = p10 - p01, p10 + p01
    return (norm.isf(alpha / 2) * math.sqrt(psi) + norm.isf(1 - power) * math.sqrt(psi - d * d)) ** 2 / d ** 2


@settings(max_examples=30, deadline=None)
@given(st.floats(0.02, 0.4), st.floats(0.0, 0.3), st.sampled_from([0.8, 0.9]), st.sampled_from([0.05, 0.01]))
def test_paired_size_brute_force_and_connor_formula(p10, p01, power, alpha):
    if abs(p10 - p01) < 0.03 or p10 + p01 > 0.7:
        return
    ra, rb = 0.5, 0.5 - (p10 - p01)
    plan = planning.n_for_paired(ra, rb, power, alpha, discordant=p10 + p01, exact=False)
    assert plan.n_exact is None and plan.exact_power is None
    assert (plan.p_a_only, plan.p_b_only) == pytest.approx((p10, p01))
    # brute force: Connor's power written out here, at every n at once
    n = np.arange(1, 200000)
    d, psi = abs(p10 - p01), p10 + p01
    z = norm.isf(alpha / 2)
    pw = norm.sf((z * math.sqrt(psi) - d * np.sqrt(n)) / math.sqrt(psi - d * d)) + \
        norm.cdf((-z * math.sqrt(psi) - d * np.sqrt(n)) / math.sqrt(psi - d * d))
    assert plan.n == int(n[np.flatnonzero(pw >= power)[0]])
    assert plan.n <= math.ceil(connor(p10, p01, power, alpha)) <= plan.n + 1


def mcnemar_power_by_statsmodels(p10, p01, n, alpha=0.05):
    """Exact power: every (m discordant, b a-only) outcome, rejection by statsmodels' mcnemar."""
    psi = p10 + p01
    power = 0.0
    for m in range(1, n + 1):
        pm = binom.pmf(m, n, psi)
        if pm < 1e-15:
            continue
        for b in range(m + 1):
            if mcnemar(np.array([[0, b], [m - b, 0]]), exact=True).pvalue <= alpha:
                power += pm * binom.pmf(b, m, p10 / psi)
    return power


def test_exact_mcnemar_power_equals_enumeration_with_statsmodels_and_simulation():
    p10, p01, n = 0.15, 0.05, 60
    got = planning.exact_power_mcnemar(p10, p01, n)
    assert got == pytest.approx(mcnemar_power_by_statsmodels(p10, p01, n), abs=1e-9)
    rng = np.random.default_rng(0)
    tables = rng.multinomial(n, [p10, p01, 1 - p10 - p01], size=2000)
    sim = np.mean([mcnemar(np.array([[0, t[0]], [t[1], 0]]), exact=True).pvalue <= 0.05 for t in tables])
    assert abs(sim - got) < 0.035  # Monte Carlo error about 0.011


def test_paired_exact_size_and_independence_default():
    plan = planning.n_for_paired(0.10, 0.05)
    assert plan.discordant_assumed and plan.discordant == pytest.approx(0.10 * 0.95 + 0.05 * 0.90)
    assert plan.n_exact >= plan.n  # the exact test is conservative
    assert plan.exact_power >= 0.8
    assert planning.exact_power_mcnemar(plan.p_a_only, plan.p_b_only, plan.n_exact - 1) < 0.8
    with pytest.raises(ValueError, match="impossible"):
        planning.n_for_paired(0.10, 0.05, discordant=0.01)
    with pytest.raises(ValueError, match="equal"):
        planning.n_for_paired(0.10, 0.10)


def test_bad_planning_input():
    with pytest.raises(ValueError, match="half_width"):
        planning.n_for_wilson_half_width(0.05, 0.0)
    with pytest.raises(ValueError, match="rate"):
        planning.n_for_wilson_half_width(1.5, 0.1)
    with pytest.raises(ValueError, match="power"):
        planning.n_for_two_proportions(0.2, 0.1, power=1.0)
    with pytest.raises(ValueError, match="equal"):
        planning.n_for_two_proportions(0.2, 0.2)


def test_design_warnings():
    w = planning.design_warnings(60, [("TOEFL vs US", 91, 88), ("empty", 0, 10)])
    assert any("TOEFL vs US" in x and "13.4%" in x for x in w)
    assert any("empty" in x and "cannot be measured" in x for x in w)
    assert any(x.startswith("60 human texts") and "needed" in x for x in w)
    assert not any("human texts:" in x for x in planning.design_warnings(100))  # 2.2%-11.2%: half-width 4.5
    assert planning.design_warnings(2000, [("big", 1000, 1000)]) == []
    assert "no human texts" in planning.design_warnings(0)[0]


# -- CLI -----------------------------------------------------------------------------------------------


def test_cli_plan_fpr(tmp_path):
    out = tmp_path / "plan.json"
    r = CliRunner().invoke(app, ["plan", "fpr", "--rate", "0.05", "--n", "100", "--half-width", "0.02",
                                 "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "2.2%-11.2%" in r.output
    data = json.loads(out.read_text())
    assert data["plan"]["n"] == planning.n_for_wilson_half_width(0.05, 0.02).n == brute_force_half_width(0.05, 0.02)
    assert data["at_n"]["n"] == 100


def test_cli_plan_gap_and_paired(tmp_path):
    r = CliRunner().invoke(app, ["plan", "gap", "--rate-a", "0.5", "--rate-b", "0.05", "--json", str(tmp_path / "g.json")])
    assert r.exit_code == 0, r.output
    g = json.loads((tmp_path / "g.json").read_text())["plan"]
    assert f"{g['n_a_exact']} texts in group a" in r.output
    r = CliRunner().invoke(app, ["plan", "paired", "--rate-a", "0.10", "--rate-b", "0.05", "--tests", "4"])
    assert r.exit_code == 0, r.output
    assert "0.0125" in r.output and "McNemar's exact test" in r.output


def test_cli_plan_bad_input_is_one_line_not_a_traceback():
    r = CliRunner().invoke(app, ["plan", "paired", "--rate-a", "0.10", "--rate-b", "0.05", "--discordant", "0.01"])
    assert r.exit_code == 2 and "impossible" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(app, ["plan", "fpr"])
    assert r.exit_code == 2 and "--half-width" in r.output
    r = CliRunner().invoke(app, ["plan", "gap", "--rate-a", "2", "--rate-b", "0.1"])
    assert r.exit_code == 2 and "--rate-a" in r.output
