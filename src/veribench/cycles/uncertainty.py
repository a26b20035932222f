"""Humanizer rankings with their uncertainty: composite and rank intervals, paired differences, tiers.

Method (named in ``docs/statistics.md``, "Humanizer rankings"; recorded in every
leaderboard veribench writes under ``uncertainty``):

- **Unit and resampling.** The unit that varies is the *prompt* (``samples.json``
  ``prompt_slug``; 11 in July 2026), each with all of its samples and every humanizer's
  tests of them. A resample draws, within each prompt category (the strata), as many
  prompts as the category has, with replacement (stratified bootstrap, Efron & Tibshirani
  1993, *An Introduction to the Bootstrap*, ch. 13; strata as in
  :func:`veribench.metrics.bootstrap.resample_indices`). A prompt drawn twice contributes
  its tests twice.
- **Replay per resample.** Each resample's test list is scored by the one composite
  function, :func:`veribench.cycles.scoring.compute_leaderboard`, so penalties (counted
  per test occurrence), their caps, the consistency sub-score and the clipping at 0 are
  recomputed in every resample. The point values are that function on the full cycle
  (equal to the published ones where the cycle verifies).
- **Composite interval.** The 2.5th and 97.5th percentiles of the resampled composites
  (percentile interval); a degenerate interval is null with the reason of
  :mod:`veribench.metrics.intervals`.
- **Rank interval.** In every resample the humanizers are ranked by composite, descending;
  tied composites share a rank span (from the best to the worst position they occupy:
  ``scipy.stats.rankdata`` ``min`` and ``max``). The 95% rank interval is [2.5th percentile
  of the ``min`` ranks, 97.5th percentile of the ``max`` ranks] (``numpy.quantile``
  ``inverted_cdf``: integer ranks). Humanizers tied in every resample share one interval.
  A rank interval of one rank ("rank 1 to 1") is a statement about ranks (at least 97.5%
  of resamples put it there), not a zero-width interval of a continuous quantity. A
  humanizer with no complete test among a resample's prompts ranks last in it.
- **Paired differences.** For each pair (a, b) of ranked humanizers and each metric
  (composite, bypass rate = mean per-test median detector ``raw_score``, meaning
  preservation), the difference a - b is computed in the *same* resamples (paired
  bootstrap over prompts). Estimate: the point difference; interval: percentile; p-value:
  the two-sided bootstrap p-value ``min(1, 2 min(#(d <= 0) + 1, #(d >= 0) + 1) / (B + 1))``
  over the B finite replicates (about the smallest alpha whose percentile interval excludes
  0, Efron & Tibshirani 1993, sec. 15.4; the +1 keeps a Monte Carlo p-value above 0,
  Davison & Hinkley 1997, *Bootstrap Methods and their Application*, eq. 4.11).
  A difference exactly 0 in every resample has estimate 0, no interval, reason
  :data:`veribench.metrics.intervals.NO_VARIATION` and p = 1.
- **Degenerate resampling.** When every category has one prompt the resampling has one
  possible resample (:func:`veribench.metrics.intervals.one_possible_resample`): every
  interval, p-value and rank interval is ``None`` with
  :data:`veribench.metrics.intervals.ONE_POSSIBLE_RESAMPLE`, and no pair is separated. A
  difference with one nonzero value in every replicate has p ``None`` with
  :data:`veribench.metrics.intervals.BOOTSTRAP_ONE_VALUE_TEST`; a rank interval is ``None``
  with :data:`RANKS_ONE_VALUE` when no composite varied across resamples.
- **Family and correction.** One family per metric per cycle: all pairs of ranked
  humanizers; Holm's step-down adjustment (:func:`veribench.metrics.paired.adjust_pvalues`,
  statsmodels ``multipletests``).
- **Tiers.** Per metric, the humanizers the adjusted tests cannot separate, by the
  detector side's rule (:data:`veribench.evaluate.comparisons.TIER_RULE`,
  :func:`veribench.evaluate.comparisons.tiers_for`); higher is better for all three metrics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import rankdata

from veribench.cycles.scoring import ScoringRules, compute_leaderboard
from veribench.evaluate.comparisons import TIER_RULE, tiers_for
from veribench.metrics.bootstrap import resample_indices
from veribench.metrics.intervals import (
    BOOTSTRAP_ONE_VALUE_TEST,
    NO_VARIATION,
    ONE_POSSIBLE_RESAMPLE,
    bootstrap_reason,
    checked,
    one_possible_resample,
    one_value,
    sign_test_floor,
    too_few_units,
)
from veribench.metrics.paired import adjust_pvalues

METHOD = ("stratified percentile bootstrap over prompts (strata: prompt category), each resample replayed by "
          "compute_leaderboard (penalties, caps and clipping recomputed)")
#: The metrics compared pairwise, in output order; higher is better for each.
PAIRED_METRICS = ("composite", "bypass_rate", "meaning_preservation")
ALPHA = 0.05
#: The fewest resamples the command line accepts: below 100 the 2.5th and 97.5th percentiles
#: of a 95% percentile interval are among the two most extreme replicates, so the interval
#: can leave out the point (a hostile tester's ``--resamples 2``). The default is 2,000.
MIN_RESAMPLES = 100
#: What ``veribench verify`` says about this block (it re-derives the point values only).
VERIFIED_NOTE = ("outside the verified part: `veribench verify` re-derives the point values only; re-derive these "
                 "with `veribench cycle score --seed SEED --resamples N` on the cycle folder")


@dataclass(frozen=True)
class Replicates:
    """Point values and bootstrap replicates of one cycle.

    Attributes:
        slugs: ranked humanizers in point rank order (length H).
        point: ``{metric: array (H,)}`` on the full cycle.
        reps: ``{metric: array (B, H)}``; NaN where a humanizer has no complete test in a resample.
        n_prompts: prompts resampled; n_strata: categories.
        seed, n_resamples: as given.
        degenerate: True when every category has one prompt, so every resample is the cycle
            itself (:func:`veribench.metrics.intervals.one_possible_resample`).
    """

    slugs: list[str]
    point: dict[str, np.ndarray]
    reps: dict[str, np.ndarray]
    n_prompts: int
    n_strata: int
    seed: int
    n_resamples: int
    degenerate: bool = False


#: A rank interval from resamples in which every humanizer's composite never varied.
RANKS_ONE_VALUE = "every resample gave the same composites, so the same ranks: no rank interval"


def _prompt_of(samples: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, str]]:
    """``{sample_id: (prompt key, category)}``; a sample without ``prompt_slug`` is its own prompt."""
    out = {}
    for s in samples:
        c = s.get("category")
        out[s["id"]] = (str(s.get("prompt_slug") or f"sample:{s['id']}"), "unknown" if c is None else str(c))
    return out


def bootstrap_cycle(samples: Sequence[Mapping[str, Any]], tests: Sequence[Mapping[str, Any]],
                    detector_scores: Sequence[Mapping[str, Any]], rules: ScoringRules,
                    exclude: set[str] | frozenset[str] = frozenset(), seed: int = 20260701,
                    n_resamples: int = 2000) -> Replicates:
    """Replay the cycle on ``n_resamples`` stratified resamples of its prompts (module docstring).

    Args:
        samples, tests, detector_scores: the parsed cycle files.
        rules: the scoring constants; exclude: the unavailable humanizers.
        seed: ``numpy.random.default_rng(seed)`` drives every draw; n_resamples: >= 1.

    Raises:
        ValueError: ``n_resamples < 1``.
    """
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")
    wc: dict[str, int] = {}
    point = compute_leaderboard(samples, tests, detector_scores, rules, exclude=exclude, word_counts=wc)
    slugs = [h["slug"] for h in point]
    col = {s: i for i, s in enumerate(slugs)}
    where = _prompt_of(samples)
    by_prompt: dict[str, list[Mapping[str, Any]]] = {}
    cat: dict[str, str] = {}
    for t in tests:
        key, c = where.get(t["sample_id"], (f"sample:{t['sample_id']}", "unknown"))
        by_prompt.setdefault(key, []).append(t)
        cat.setdefault(key, c)
    prompts = sorted(by_prompt)
    cats = sorted(set(cat.values()))
    strata = np.array([cats.index(cat[p]) for p in prompts], dtype=np.int64)
    rng = np.random.default_rng(seed)
    reps = {m: np.full((n_resamples, len(slugs)), np.nan) for m in PAIRED_METRICS}
    for b in range(n_resamples):
        idx = resample_indices(len(prompts), rng, strata)
        drawn = [t for i in idx for t in by_prompt[prompts[i]]]
        for h in compute_leaderboard(samples, drawn, detector_scores, rules, exclude=exclude, word_counts=wc):
            j = col.get(h["slug"])
            if j is not None:
                for m in PAIRED_METRICS:
                    reps[m][b, j] = h[m]
    pt = {m: np.array([h[m] for h in point], dtype=float) for m in PAIRED_METRICS}
    return Replicates(slugs, pt, reps, len(prompts), len(cats), seed, n_resamples, one_possible_resample(strata))


def _percentiles(x: np.ndarray) -> tuple[float, float]:
    x = x[np.isfinite(x)]
    if x.size == 0:
        return math.nan, math.nan
    lo, hi = np.percentile(x, [100 * ALPHA / 2, 100 * (1 - ALPHA / 2)])
    return float(lo), float(hi)


def composite_intervals(r: Replicates) -> list[dict[str, Any]]:
    """Per humanizer (point rank order): ``{slug, composite, composite_ci_95, composite_ci_95_reason,
    rank_interval_95, rank_interval_95_reason}``; the interval is in composite points (0-100),
    the rank interval is ``[best, worst]`` (1 = first), or ``None`` with the reason when the
    resampling is degenerate (:data:`ONE_POSSIBLE_RESAMPLE`) or no humanizer's composite varied
    across resamples (:data:`RANKS_ONE_VALUE`): identical ranks then carry no information."""
    comp = np.where(np.isfinite(r.reps["composite"]), r.reps["composite"], -np.inf)
    rmin = np.vstack([rankdata(-row, method="min") for row in comp])
    rmax = np.vstack([rankdata(-row, method="max") for row in comp])
    rank_why = (ONE_POSSIBLE_RESAMPLE if r.degenerate else
                RANKS_ONE_VALUE if all(one_value(r.reps["composite"][:, j]) for j in range(len(r.slugs))) else None)
    out = []
    for j, s in enumerate(r.slugs):
        col = r.reps["composite"][:, j]
        lo, hi = _percentiles(col)
        ci, why = checked(lo, hi, "no resample ranked this humanizer",
                          ONE_POSSIBLE_RESAMPLE if r.degenerate else bootstrap_reason(col))
        rank: list[int] | None = None if rank_why else [int(np.quantile(rmin[:, j], ALPHA / 2, method="inverted_cdf")),
                int(np.quantile(rmax[:, j], 1 - ALPHA / 2, method="inverted_cdf"))]
        out.append({"slug": s, "composite": float(r.point["composite"][j]), "composite_ci_95": ci,
                    "composite_ci_95_reason": why, "rank_interval_95": rank,
                    "rank_interval_95_reason": rank_why})
    return out


def bootstrap_p(d: np.ndarray) -> float:
    """Two-sided paired-bootstrap p-value of "no difference" in (0, 1] over the finite replicates
    ``d``: ``min(1, 2 min(#(d <= 0) + 1, #(d >= 0) + 1) / (B + 1))`` (module docstring); 1 when
    there are none."""
    d = d[np.isfinite(d)]
    if d.size == 0:
        return 1.0
    k = min(int(np.sum(d <= 0)), int(np.sum(d >= 0)))
    return float(min(1.0, 2 * (k + 1) / (d.size + 1)))


def paired_differences(r: Replicates, metric: str) -> list[dict[str, Any]]:
    """All pairs (a before b in rank order) for one metric: ``{a, b, metric, difference,
    ci_95, ci_95_reason, p_value, p_value_reason, p_adjusted, separated}``, difference = a - b
    in the metric's units (composite points, or a [0, 1] score), Holm-adjusted over the list.
    A degenerate bootstrap distribution (the resampling has one possible resample, or the
    difference took one nonzero value in every replicate) has no test: ``p_value`` and
    ``p_adjusted`` are ``None`` with ``p_value_reason``, and the pair is not separated.

    Raises:
        KeyError: ``metric`` not in :data:`PAIRED_METRICS`.
    """
    reps, pt = r.reps[metric], r.point[metric]
    rows = []
    for i in range(len(r.slugs)):
        for j in range(i + 1, len(r.slugs)):
            d = reps[:, i] - reps[:, j]
            fin = d[np.isfinite(d)]
            est = float(pt[i] - pt[j])
            p_why: str | None = None
            p: float | None
            few = too_few_units(r.n_prompts, ALPHA)
            if r.degenerate:
                ci, why, p, p_why = None, ONE_POSSIBLE_RESAMPLE, None, ONE_POSSIBLE_RESAMPLE
            elif fin.size and np.all(fin == 0):
                ci, why, p = None, NO_VARIATION, 1.0
                est = 0.0
            elif fin.size and one_value(fin):
                ci, why, p, p_why = None, bootstrap_reason(fin), None, BOOTSTRAP_ONE_VALUE_TEST
            else:
                lo, hi = _percentiles(d)
                ci, why = checked(lo, hi, "no resample ranked both humanizers", bootstrap_reason(d))
                # never below what the prompts themselves allow (a sign test on them), so that
                # whether a pair is separated follows the data, not the number of resamples
                p, p_why = (None, few) if few else (max(bootstrap_p(d), sign_test_floor(r.n_prompts)), None)
            rows.append({"a": r.slugs[i], "b": r.slugs[j], "metric": metric, "difference": est, "ci_95": ci,
                         "ci_95_reason": why, "p_value": p, "p_value_reason": p_why})
    adj = adjust_pvalues([x["p_value"] for x in rows], "holm")
    for x, pa in zip(rows, adj):
        x["p_adjusted"] = pa
        x["separated"] = pa is not None and pa <= ALPHA and x["difference"] != 0
    return rows


def tiers_of(slugs: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``[{"tier": 1, "humanizers": [...]}, ...]`` best first, by :func:`tiers_for` on the
    separated pairs of ``rows`` (the better side is the one with the higher value)."""
    better: dict[tuple[str, str], bool] = {}
    for x in rows:
        if x["separated"]:
            win = (x["a"], x["b"]) if x["difference"] > 0 else (x["b"], x["a"])
            better[win] = True
    return [{"tier": i + 1, "humanizers": t} for i, t in enumerate(tiers_for(slugs, better))]


def ranking_uncertainty(samples: Sequence[Mapping[str, Any]], tests: Sequence[Mapping[str, Any]],
                        detector_scores: Sequence[Mapping[str, Any]], rules: ScoringRules,
                        exclude: set[str] | frozenset[str] = frozenset(), seed: int = 20260701,
                        n_resamples: int = 2000) -> dict[str, Any]:
    """The ``uncertainty`` block of a leaderboard (JSON-ready; module docstring for the method).

    Returns:
        ``{method, unit, strata, n_prompts, n_strata, seed, n_resamples, confidence_level,
        correction, alpha, families, tier_rule, verified, verified_note,
        humanizers: [{slug, composite, composite_ci_95, composite_ci_95_reason,
        rank_interval_95, rank_interval_95_reason, tier}], paired_differences: {metric: [...]}, tiers: {metric: [...]}}``;
        ``tier`` is the humanizer's composite tier.
    """
    r = bootstrap_cycle(samples, tests, detector_scores, rules, exclude, seed, n_resamples)
    hs = composite_intervals(r)
    diffs = {m: paired_differences(r, m) for m in PAIRED_METRICS}
    tiers = {m: tiers_of(r.slugs, diffs[m]) for m in PAIRED_METRICS}
    tier_of = {s: t["tier"] for t in tiers["composite"] for s in t["humanizers"]}
    for h in hs:
        h["tier"] = tier_of.get(h["slug"])
    return {
        "method": METHOD, "unit": "prompt (samples.json prompt_slug) with all its samples", "strata": "category",
        "n_prompts": r.n_prompts, "n_strata": r.n_strata, "seed": seed, "n_resamples": n_resamples,
        "rng": "numpy.random.default_rng(seed)", "confidence_level": 1 - ALPHA,
        "correction": "holm", "alpha": ALPHA,
        "families": {m: f"all pairs of ranked humanizers, {m}, this cycle" for m in PAIRED_METRICS},
        "tier_rule": TIER_RULE.replace("detector", "humanizer"),
        "verified": False, "verified_note": VERIFIED_NOTE,
        "humanizers": hs, "paired_differences": diffs, "tiers": tiers,
    }


def summary_lines(unc: Mapping[str, Any]) -> list[str]:
    """Terminal lines of an ``uncertainty`` block: one row per humanizer (composite, its 95%
    interval or the reason there is none, rank interval, composite tier), then the method line,
    then one line per reason a composite pair has no test (``p_value_reason``, with how many
    pairs it holds for)."""
    lines = [f"{'humanizer':<20} {'composite':>9}  {'95% interval':<17} {'rank':<9} tier"]
    for h in unc["humanizers"]:
        ci = h["composite_ci_95"]
        ci_s = f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"none ({h['composite_ci_95_reason']})"
        ri = h["rank_interval_95"]
        ri_s = f"{ri[0]} to {ri[1]}" if ri else f"none ({h['rank_interval_95_reason']})"
        lines.append(f"{h['slug']:<20} {h['composite']:>9.2f}  {ci_s:<17} {ri_s:<9} {h['tier']}")
    lines.append(f"{unc['method']}; {unc['n_resamples']} resamples, seed {unc['seed']}, {unc['n_prompts']} prompts in "
                 f"{unc['n_strata']} categories; tiers: {unc['correction']}-adjusted paired tests, alpha {unc['alpha']}")
    pairs = (unc.get("paired_differences") or {}).get("composite") or []
    why: dict[str, int] = {}
    for x in pairs:
        if x.get("p_value") is None and x.get("p_value_reason"):
            why[x["p_value_reason"]] = why.get(x["p_value_reason"], 0) + 1
    for reason, n in why.items():  # the JSON's p_value_reason, said where the tiers are read
        lines.append(f"no paired test for {n} of {len(pairs)} composite pairs, so no tier separates them: {reason}")
    return lines
