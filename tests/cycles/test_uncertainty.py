"""Issue 28: humanizer rankings with their uncertainty (composite and rank intervals, paired
differences, Holm, tiers), checked against the published July 2026 cycle and independent references."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from veribench.cycles.create import score_directory
from veribench.cycles.scoring import compute_leaderboard, recognise_scoring
from veribench.cycles.uncertainty import (
    PAIRED_METRICS,
    Replicates,
    _prompt_of,
    bootstrap_cycle,
    composite_intervals,
    paired_differences,
    ranking_uncertainty,
    summary_lines,
    tiers_of,
)
from veribench.cycles.verify import verify_cycle
from veribench.metrics.intervals import BOOTSTRAP_ONE_VALUE_TEST, NO_VARIATION, ONE_POSSIBLE_RESAMPLE

B = 120  # resamples in these tests (the CLI default is 2000)


def _load(d: Path):
    return [json.loads((d / f).read_text(encoding="utf-8")) for f in ("samples.json", "tests.json",
                                                                       "detector-scores.json")]


def test_july_composites_published_with_intervals_rank_intervals_and_tiers(cli, july: Path, tmp_path: Path):
    code, out = cli("cycle", "score", july, "--out", tmp_path / "lb.json", "--resamples", str(B), "--seed", "5")
    assert code == 0, out
    mine = json.loads((tmp_path / "lb.json").read_text())
    pub = json.loads((july / "leaderboard.json").read_text())
    assert len(pub["humanizers"]) == 13
    assert [h["slug"] for h in mine["humanizers"]] == [h["slug"] for h in pub["humanizers"]]
    u = mine["uncertainty"]
    assert (u["seed"], u["n_resamples"], u["n_prompts"], u["correction"]) == (5, B, 11, "holm")
    assert u["verified"] is False and "outside the verified part" in u["verified_note"]
    n_tiers = len(u["tiers"]["composite"])
    for a, p in zip(mine["humanizers"], pub["humanizers"]):
        assert a["scores"]["composite"] == p["scores"]["composite"]  # exactly the published value
        lo, hi = a["score_intervals"]["composite_ci_95"]
        assert lo < a["scores"]["composite"] < hi
        r_lo, r_hi = a["rank_interval_95"]
        assert 1 <= r_lo <= p["rank"] <= r_hi <= 13
        assert 1 <= a["tier"] <= n_tiers
    # every humanizer is in exactly one composite tier; each family has 13 * 12 / 2 pairs
    assert sorted(s for t in u["tiers"]["composite"] for s in t["humanizers"]) == sorted(
        h["slug"] for h in pub["humanizers"])
    assert all(len(u["paired_differences"][m]) == 78 for m in PAIRED_METRICS)
    assert verify_cycle(july).ok  # the shared cycle still verifies


def test_paired_bootstrap_matches_a_plain_resampling_loop(july: Path):
    """The paired composite difference against a loop written here: stratified draws of prompts
    with the same generator, the published scoring function on each draw, percentiles of a - b."""
    samples, tests, dets = _load(july)
    rules = recognise_scoring((july / "scoring.js").read_bytes())
    seed, n = 11, 60
    r = bootstrap_cycle(samples, tests, dets, rules, seed=seed, n_resamples=n)
    rows = {(x["a"], x["b"]): x for x in paired_differences(r, "composite")}
    a, b = r.slugs[0], r.slugs[3]

    prompt = {s["id"]: s["prompt_slug"] for s in samples}
    category = {s["prompt_slug"]: s["category"] for s in samples}
    prompts = sorted(set(prompt.values()))
    strata = [sorted(set(category.values())).index(category[p]) for p in prompts]
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(n):
        drawn_prompts = []
        for code in sorted(set(strata)):
            members = [i for i, c in enumerate(strata) if c == code]
            drawn_prompts += [prompts[members[k]] for k in rng.integers(0, len(members), size=len(members))]
        drawn = [t for p in drawn_prompts for t in tests if prompt[t["sample_id"]] == p]
        comp = {h["slug"]: h["composite"] for h in compute_leaderboard(samples, drawn, dets, rules)}
        diffs.append(comp[a] - comp[b])
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    row = rows[(a, b)]
    assert row["ci_95"] == pytest.approx([lo, hi], abs=1e-9)
    full = {h["slug"]: h["composite"] for h in compute_leaderboard(samples, tests, dets, rules)}
    assert row["difference"] == pytest.approx(full[a] - full[b], abs=1e-12)
    d = np.array(diffs)
    k = min((d <= 0).sum(), (d >= 0).sum())
    assert row["p_value"] == pytest.approx(min(1.0, 2 * (k + 1) / (n + 1)))


def test_holm_matches_statsmodels(july: Path):
    samples, tests, dets = _load(july)
    rules = recognise_scoring((july / "scoring.js").read_bytes())
    r = bootstrap_cycle(samples, tests, dets, rules, seed=3, n_resamples=80)
    for m in PAIRED_METRICS:
        rows = paired_differences(r, m)
        ref = multipletests([x["p_value"] for x in rows], method="holm")[1]
        assert [x["p_adjusted"] for x in rows] == pytest.approx(list(ref), abs=1e-12)
        assert any(x["p_adjusted"] > x["p_value"] for x in rows)  # the correction did something


def test_identical_humanizers_no_variation_one_tier(july: Path):
    """An own cycle whose two humanizers returned identical outputs (same detector scores):
    difference 0, no interval, reason "no variation", one tier, one shared rank interval."""
    tests = json.loads((july / "tests.json").read_text())
    dets = json.loads((july / "detector-scores.json").read_text())
    src = "grammarly"
    clone = [dict(t, id=t["id"] + "-twin", humanizer_slug="twin") for t in tests if t["humanizer_slug"] == src]
    ids = {t["id"][:-5] for t in clone}
    dets += [dict(d, test_id=d["test_id"] + "-twin") for d in dets if d["test_id"] in ids]
    for name, data in (("tests.json", tests + clone), ("detector-scores.json", dets)):
        (july / name).chmod(0o644)
        (july / name).write_text(json.dumps(data), encoding="utf-8")
    lb = score_directory(july, seed=2, n_resamples=B)
    u = lb["uncertainty"]
    for m in PAIRED_METRICS:
        row = next(x for x in u["paired_differences"][m] if {x["a"], x["b"]} == {src, "twin"})
        assert row["difference"] == 0 and row["ci_95"] is None and row["ci_95_reason"] == NO_VARIATION
        assert row["p_adjusted"] == 1.0 and row["separated"] is False
        assert any({src, "twin"} <= set(t["humanizers"]) for t in u["tiers"][m])
    h = {x["slug"]: x for x in lb["humanizers"]}
    assert h[src]["tier"] == h["twin"]["tier"]
    assert h[src]["rank_interval_95"] == h["twin"]["rank_interval_95"]
    assert h[src]["score_intervals"]["composite_ci_95"] == h["twin"]["score_intervals"]["composite_ci_95"]


def test_ranking_uncertainty_records_seed_and_is_reproducible(july: Path):
    samples, tests, dets = _load(july)
    rules = recognise_scoring((july / "scoring.js").read_bytes())
    one = ranking_uncertainty(samples, tests, dets, rules, seed=9, n_resamples=30)
    assert one == ranking_uncertainty(samples, tests, dets, rules, seed=9, n_resamples=30)
    assert (one["seed"], one["n_resamples"]) == (9, 30)
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_cycle(samples, tests, dets, rules, n_resamples=0)


def test_cycle_score_prints_the_ranking_table(cli, july: Path, tmp_path: Path):
    code, out = cli("cycle", "score", july, "--out", tmp_path / "lb.json", "--resamples", "100", "--seed", "1")
    assert code == 0, out
    lb = json.loads((tmp_path / "lb.json").read_text())
    first = lb["uncertainty"]["humanizers"][0]
    lo, hi = first["rank_interval_95"]
    line = next(x for x in out.splitlines() if x.startswith(first["slug"] + " "))
    assert f"{first['composite']:.2f}" in line and f"{lo} to {hi}" in line and line.endswith(str(first["tier"]))
    assert "100 resamples, seed 1, 11 prompts in 7 categories" in out


def test_one_prompt_per_category_gives_no_test_one_tier_no_rank_interval(july: Path):
    """Issue 28: a cycle with 2 prompts in 2 categories has one possible resample (the cycle
    itself); the paired tests and rank intervals carry no information: p null with the reason,
    one tier, rank intervals null with the reason (never p = 2/(B+1) or "1 to 1")."""
    samples, tests, dets = _load(july)
    rules = recognise_scoring((july / "scoring.js").read_bytes())
    first: dict[str, str] = {}
    for s in samples:
        first.setdefault(s["category"], s["prompt_slug"])
    keep = set(list(first.values())[:2])
    samples = [s for s in samples if s["prompt_slug"] in keep]
    ids = {s["id"] for s in samples}
    tests = [t for t in tests if t["sample_id"] in ids]
    tids = {t["id"] for t in tests}
    dets = [d for d in dets if d["test_id"] in tids]
    u = ranking_uncertainty(samples, tests, dets, rules, seed=1, n_resamples=B)
    assert (u["n_prompts"], u["n_strata"]) == (2, 2)
    hs = u["humanizers"]
    assert len(hs) >= 2 and hs[0]["composite"] > hs[-1]["composite"]
    for m in PAIRED_METRICS:
        assert len(u["tiers"][m]) == 1
        for row in u["paired_differences"][m]:
            assert row["p_value"] is None and row["p_adjusted"] is None and row["separated"] is False
            assert row["p_value_reason"] == ONE_POSSIBLE_RESAMPLE and row["ci_95"] is None
    for h in hs:
        assert h["rank_interval_95"] is None and h["rank_interval_95_reason"] == ONE_POSSIBLE_RESAMPLE
        assert h["tier"] == 1
    lines = summary_lines(u)
    assert sum(f"none ({ONE_POSSIBLE_RESAMPLE})" in x for x in lines) == len(hs)
    # issue 25 walk: the reason there is no test (and so one tier) was only in the JSON
    n = len(u["paired_differences"]["composite"])
    assert lines[-1] == (f"no paired test for {n} of {n} composite pairs, so no tier separates them: "
                         f"{ONE_POSSIBLE_RESAMPLE}"), lines


def test_one_value_difference_in_varying_resamples_has_no_test():
    """A paired difference that took one nonzero value in every replicate (resamples vary, the
    difference does not): p null with "no test", not separated; varying ranks keep their interval."""
    reps = {m: np.column_stack([np.linspace(50, 60, B), np.linspace(40, 50, B)]) for m in PAIRED_METRICS}
    r = Replicates(["a", "b"], {m: np.array([55.0, 45.0]) for m in PAIRED_METRICS}, reps, 4, 2, 0, B)
    row = paired_differences(r, "composite")[0]
    assert row["p_value"] is None and row["p_value_reason"] == BOOTSTRAP_ONE_VALUE_TEST
    assert row["separated"] is False and row["ci_95"] is None
    assert tiers_of(r.slugs, [row]) == [{"tier": 1, "humanizers": ["a", "b"]}]
    ranks = {h["slug"]: h for h in composite_intervals(r)}
    assert ranks["a"]["rank_interval_95"] == [1, 1] and ranks["a"]["rank_interval_95_reason"] is None


def test_two_prompts_cannot_separate_humanizers_however_many_resamples(july: Path):
    """A hostile tester's case (issue 28): the July cycle cut to two prompts of one category
    has three distinct resamples; a bootstrap p fell to 1/(B + 1) with B = 6000 and separated
    52 of 78 pairs, while B = 300 separated none. With two units no paired test can reach
    p <= 0.05 (a sign test with both on one side gives 0.5): no test, the reason, one tier,
    whatever the number of resamples."""
    samples, tests, dets = _load(july)
    rules = recognise_scoring((july / "scoring.js").read_bytes())
    where = _prompt_of(samples)
    cat_of = {}
    for key, c in where.values():
        cat_of.setdefault(c, []).append(key)
    two = next(sorted(set(v))[:2] for v in cat_of.values() if len(set(v)) >= 2)
    keep = [t for t in tests if where.get(t["sample_id"], ("", ""))[0] in two]
    for b in (300, 3000):
        unc = ranking_uncertainty(samples, keep, dets, rules, seed=5, n_resamples=b)
        rows = [x for fam in unc["paired_differences"].values() for x in fam]
        assert rows and all((x["p_value"] is None and x["p_value_reason"]) or x["p_value"] == 1.0 for x in rows)
        assert any("2 unit(s) resampled" in (x["p_value_reason"] or "") for x in rows)
        assert not any(x["separated"] for x in rows)
        tail = [x for x in summary_lines(unc) if x.startswith("no paired test for ")]
        assert tail and any("2 unit(s) resampled" in x and "smallest p the data allow is 0.5" in x for x in tail), tail


def test_a_bootstrap_p_is_never_below_what_the_prompts_allow(july: Path):
    """The floor: with n prompts a p-value is at least 2 * 0.5**n (an exact sign test with every
    prompt on one side), checked on the July cycle (11 prompts)."""
    samples, tests, dets = _load(july)
    rules = recognise_scoring((july / "scoring.js").read_bytes())
    unc = ranking_uncertainty(samples, tests, dets, rules, seed=5, n_resamples=400)
    rows = [x for fam in unc["paired_differences"].values() for x in fam]
    ps = [x["p_value"] for x in rows if x["p_value"] is not None]
    assert ps and min(ps) >= 2 * 0.5 ** 11
