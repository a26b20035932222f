"""RAID's grid (``veribench.evaluate.grid``) against an independent per-cell implementation
written here (scikit-learn AUROC, DeLong from ``metrics.roc``, thresholds by a plain loop,
each cell's TPR interval from the tables' bootstrap functions on the cell's texts gathered by
a plain loop), against RAID's own ``raid.evaluate.run_evaluation`` (PyPI
``raid-bench``, installed with ``--no-deps``) when present, and end to end through
``veribench evaluate --grid``."""

from __future__ import annotations

import itertools
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import norm
from sklearn.metrics import roc_auc_score

from veribench.corpus.importers import import_scores
from veribench.corpus.importers.raid import import_raid
from veribench.evaluate import grid as grid_mod
from veribench.evaluate.grid import (
    ALL,
    NO_TPR_INTERVAL,
    RAID_TAGS,
    CodedTag,
    GridDetector,
    compute_grid,
    raid_leaderboard,
    unattacked_mask,
)
from veribench.metrics.roc import auroc_ci
from veribench.metrics.threshold_bootstrap import tpr_at_fpr_interval_groups, tpr_at_fpr_interval_scores

PUBLIC = Path(__file__).resolve().parents[1] / "data" / "public"
#: Resamples of the grid's TPR intervals in these tests (the seed is the default, 0).
N_BOOT = 200
KEYS = set(RAID_TAGS) | {"detector", "n_human", "n_ai", "auroc", "auroc_ci95", "auroc_ci95_reason", "tpr_at_fpr_5",
                          "tpr_at_fpr_1"}


# -- a RAID-shaped frame --------------------------------------------------------------------------
def raid_frame(domains=3, sources=100, seed=0, rounding=(None, 1, 2)):
    """Per source: one human text and 2 API models x 2 decodings (penalty no) + 2 open models x
    2 x 2, each in three attack variants (none, homoglyph, paraphrase; gpt4 has no paraphrase)."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(domains):
        for _s in range(sources):
            for a in ("none", "homoglyph", "paraphrase"):
                rows.append(("human", None, None, a, f"dom{d}"))
                for m in ("gpt4", "chatgpt", "mistral", "mpt"):
                    if a == "paraphrase" and m == "gpt4":
                        continue
                    for dec in ("greedy", "sampling"):
                        for rp in (("no",) if m in ("gpt4", "chatgpt") else ("yes", "no")):
                            rows.append((m, dec, rp, a, f"dom{d}"))
    cols = {t: np.array([r[i] for r in rows], dtype=object) for i, t in enumerate(
        ("model", "decoding", "repetition_penalty", "attack", "domain"))}
    label = (cols["model"] != "human").astype(np.int64)
    shift = {"gpt4": 0.2, "chatgpt": 0.9, "mistral": 1.3, "mpt": 0.6}
    eff = np.array([shift.get(m, 0.0) for m in cols["model"]]) * np.where(cols["attack"] == "paraphrase", 0.5, 1.0)
    scores = []
    for r in rounding:
        z = rng.standard_normal(label.size) + label * eff + np.array([int(x[3:]) * 0.2 for x in cols["domain"]])
        p = 1 / (1 + np.exp(-z))
        scores.append(p if r is None else np.round(p, r))
    return cols, label, scores


# -- the independent per-cell implementation --------------------------------------------------
def plain_threshold(h: np.ndarray, target: float):
    """Smallest human score t with share(h > t) <= target, by trying every human score."""
    for t in np.unique(h):
        fp = int((h > t).sum())
        if fp / h.size <= target + 1e-12:
            return float(t), fp
    raise AssertionError("unreachable: the largest human score always qualifies")


def plain_grid(cols, label, score, tags, tb, unatt, targets=(0.05, 0.01)):
    fin = np.isfinite(score)
    ai = fin & (label == 1)
    hu = fin & (label == 0)
    groups = sorted({str(v) for v in cols[tb][fin] if v is not None}) if tb else [ALL]
    gval = (lambda i: cols[tb][i]) if tb else (lambda i: ALL)
    thr, hum_g = {}, {}
    for g in groups:
        hs = np.array([score[i] for i in np.flatnonzero(hu & unatt) if gval(i) == g])
        hum_g[g] = hs
        for t in targets:
            if hs.size == 0:
                thr[(g, t)] = None
                continue
            tt, fp = plain_threshold(hs, t)
            thr[(g, t)] = (tt, fp, hs.size)
    values = [sorted({str(v) for v in cols[t][ai]}) + [ALL] for t in tags]
    out = {}
    for cell in itertools.product(*values):
        sel = ai.copy()
        for t, v in zip(tags, cell):
            if v != ALL:
                sel &= np.array([str(x) == v for x in cols[t]])
        if not sel.any():
            continue
        hsel = hu.copy()
        if tb in tags and cell[tags.index(tb)] != ALL:
            hsel &= cols[tb] == cell[tags.index(tb)]
        a_s, h_s = score[sel], score[hsel]
        row = {"n_ai": int(sel.sum()), "n_human": int(hsel.sum())}
        if h_s.size:
            y = np.r_[np.ones(a_s.size), np.zeros(h_s.size)]
            row["auroc"] = roc_auc_score(y, np.r_[a_s, h_s])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ci = auroc_ci(y, np.r_[a_s, h_s])
            row["auroc_ci95"] = [ci.lo, ci.hi] if a_s.size >= 2 and h_s.size >= 2 else None
        else:
            row["auroc"] = row["auroc_ci95"] = None
        for t in targets:
            key = f"tpr_at_fpr_{int(round(t * 100))}"
            gs = sorted({gval(i) for i in np.flatnonzero(sel)})
            ok = h_s.size > 0 and all(thr[(g, t)] is not None and thr[(g, t)][1] > 0 for g in gs)
            if not ok:
                row[key] = None
                continue
            k = sum(int(score[i] > thr[(gval(i), t)][0]) for i in np.flatnonzero(sel))
            # issue 25: the tables' interval, every group's threshold refitted per resample
            hums = [hum_g[g] for g in gs]
            ais = [np.array([score[i] for i in np.flatnonzero(sel) if gval(i) == g]) for g in gs]
            r = tpr_at_fpr_interval_groups(hums, ais, t, n_boot=N_BOOT, seed=0)
            lo, hi = r.lo, r.hi
            if len(gs) == 1:  # one threshold group: exactly the tables' two-class function
                r1 = tpr_at_fpr_interval_scores(hums[0], ais[0], t, n_boot=N_BOOT, seed=0)
                assert (r1.tpr, r1.lo, r1.hi) == (k / row["n_ai"], lo, hi)
            fpr = sum(thr[(g, t)][1] for g in gs) / sum(thr[(g, t)][2] for g in gs)
            row[key] = {"tpr": k / row["n_ai"], "ci95": [lo, hi], "achieved_fpr": fpr,
                        "threshold": thr[(gs[0], t)][0] if len(gs) == 1 else {g: thr[(g, t)][0] for g in gs}}
        out[cell] = row
    return out


def assert_same(grid_rows, plain, tags, name):
    ours = {tuple(r[t] for t in tags): r for r in grid_rows if r["detector"] == name}
    assert set(ours) == set(plain)
    for cell, p in plain.items():
        o = ours[cell]
        assert (o["n_ai"], o["n_human"]) == (p["n_ai"], p["n_human"]), cell
        if p["auroc"] is None:
            assert o["auroc"] is None and o["auroc_ci95"] is None
        else:
            assert o["auroc"] == pytest.approx(p["auroc"], abs=1e-12), cell
            if p["auroc_ci95"] is None or not np.isfinite(p["auroc_ci95"][0]):
                assert o["auroc_ci95"] is None or p["auroc_ci95"] is not None
            elif p["auroc_ci95"][0] == p["auroc_ci95"][1]:  # DeLong variance 0: null with the reason
                assert o["auroc_ci95"] is None and o["auroc_ci95_reason"], cell
            else:
                assert o["auroc_ci95"] == pytest.approx(p["auroc_ci95"], abs=1e-9), cell
        for key in ("tpr_at_fpr_5", "tpr_at_fpr_1"):
            e = o[key]
            assert set(e) == {"tpr", "threshold", "achieved_fpr", "ci95", "ci95_reason", "reason", "threshold_fit"}
            assert e["threshold_fit"] == "in-sample"
            if p[key] is None:
                assert e["tpr"] is None and e["ci95"] is None and e["reason"], (cell, key)
            else:
                assert e["reason"] is None
                assert e["tpr"] == pytest.approx(p[key]["tpr"], abs=1e-15), (cell, key)
                if p[key]["ci95"][0] == p[key]["ci95"][1]:  # collapsed: null with the reason, never a point
                    assert e["ci95"] is None and e["ci95_reason"]
                else:
                    assert e["ci95"] == pytest.approx(p[key]["ci95"], abs=1e-12)
                assert e["achieved_fpr"] == pytest.approx(p[key]["achieved_fpr"], abs=1e-15)
                assert e["threshold"] == p[key]["threshold"]


def test_grid_equals_a_plain_per_cell_implementation():
    cols, label, scores = raid_frame(domains=2, sources=30)
    unatt = unattacked_mask(cols["attack"])
    tags = list(RAID_TAGS)
    g = compute_grid(cols, label, [GridDetector(f"d{i}", s) for i, s in enumerate(scores)], tags=tags,
                     threshold_by="domain", unattacked=unatt, n_boot=N_BOOT)
    assert all(set(r) == KEYS for r in g["rows"])
    for i, s in enumerate(scores):
        assert_same(g["rows"], plain_grid(cols, label, s, tags, "domain", unatt), tags, f"d{i}")


def test_unattacked_mask_is_the_per_text_rule():
    """Issue 26 (the rule once per distinct value, not per text): the same mask as the plain
    rule ``x is None or str(x) == "none"`` and ``derivation is None``, missing values that
    are not ``None`` (NaN) counting as attacked."""
    rng = np.random.default_rng(3)
    pool = [None, "none", float("nan"), "homoglyph", np.str_("none"), 1, "None", "paraphrase", np.nan]
    attack = [pool[i] for i in rng.integers(0, len(pool), 5000)]
    deriv = [[None, None, "paraphrase", float("nan")][i] for i in rng.integers(0, 4, 5000)]
    plain = np.array([x is None or str(x) == "none" for x in attack])
    assert unattacked_mask(attack).tolist() == plain.tolist()
    assert unattacked_mask(attack, deriv).tolist() == (plain & np.array([x is None for x in deriv])).tolist()
    assert unattacked_mask(np.array(attack, dtype=object)).tolist() == plain.tolist()
    assert unattacked_mask([]).shape == (0,)
    assert unattacked_mask([None, None], [None, None]).tolist() == [True, True]


def test_grid_points_only_equal_a_plain_per_cell_reference():
    """Issue 26 (a leaderboard's headline, the benchmark against RAID): ``tpr_intervals=False``
    skips the TPR bootstrap; every point (sklearn AUROC, plain-loop thresholds and TPRs) and
    the DeLong interval are those of the plain reference and of the full grid, and every TPR
    interval is null with its reason, never a number."""
    cols, label, scores = raid_frame(domains=2, sources=30, rounding=(None, 2))
    unatt = unattacked_mask(cols["attack"])
    tags = list(RAID_TAGS)
    dets = [GridDetector(f"d{i}", s) for i, s in enumerate(scores)]
    pts = compute_grid(cols, label, dets, tags=tags, threshold_by="domain", unattacked=unatt, tpr_intervals=False)
    full = compute_grid(cols, label, dets, tags=tags, threshold_by="domain", unattacked=unatt, n_boot=N_BOOT)
    assert pts["info"]["tpr_ci"]["computed"] is False and full["info"]["tpr_ci"]["computed"] is True
    assert len(pts["rows"]) == len(full["rows"]) > 500
    compared = 0
    for p_row, f_row in zip(pts["rows"], full["rows"], strict=True):
        for key in ("tpr_at_fpr_5", "tpr_at_fpr_1"):
            assert p_row[key]["ci95"] is None
            assert p_row[key]["ci95_reason"] == (p_row[key]["reason"] or NO_TPR_INTERVAL)
            compared += p_row[key]["tpr"] is not None
            f_row = {**f_row, key: {**f_row[key], "ci95": None, "ci95_reason": p_row[key]["ci95_reason"]}}
        assert p_row == f_row
    assert compared > 500
    for i, s in enumerate(scores):
        plain = plain_grid(cols, label, s, tags, "domain", unatt)
        ours = {tuple(r[t] for t in tags): r for r in pts["rows"] if r["detector"] == f"d{i}"}
        assert set(ours) == set(plain)
        for cell, p in plain.items():
            o = ours[cell]
            assert (o["n_ai"], o["n_human"]) == (p["n_ai"], p["n_human"])
            assert o["auroc"] == pytest.approx(p["auroc"], abs=1e-12), cell
            for key in ("tpr_at_fpr_5", "tpr_at_fpr_1"):
                if p[key] is None:
                    assert o[key]["tpr"] is None and o[key]["reason"], (cell, key)
                else:
                    assert o[key]["tpr"] == p[key]["tpr"], (cell, key)
                    assert o[key]["threshold"] == p[key]["threshold"]
                    assert o[key]["achieved_fpr"] == pytest.approx(p[key]["achieved_fpr"], abs=1e-15)


@pytest.mark.parametrize("chunk", [1 << 6, 1 << 9])
def test_grid_delong_in_chunks_equals_a_plain_per_cell_reference(monkeypatch, chunk):
    """Issue 26 (the S01 histogram of DeLong's variance, cumulated once per chunk and taken
    chunk by chunk as slices of the AI texts grouped by position): with many small chunks,
    AI scores above every human score (in no chunk) and ties, every AUROC interval equals the
    plain reference's DeLong (``metrics.roc.auroc_ci`` on the cell's texts), and the rows are
    those of the default chunk size."""
    cols, label, scores = raid_frame(domains=2, sources=30, rounding=(None, 2))
    scores[0][np.flatnonzero(label == 1)[:40]] = 50.0  # above every human score
    unatt = unattacked_mask(cols["attack"])
    tags = list(RAID_TAGS)
    dets = [GridDetector(f"d{i}", s) for i, s in enumerate(scores)]
    ref = compute_grid(cols, label, dets, tags=tags, threshold_by="domain", unattacked=unatt, tpr_intervals=False)
    monkeypatch.setattr(grid_mod, "_CHUNK", chunk)
    small = compute_grid(cols, label, dets, tags=tags, threshold_by="domain", unattacked=unatt, tpr_intervals=False)
    assert small["rows"] == ref["rows"]
    checked_ci = 0
    for i, s in enumerate(scores):
        plain = plain_grid(cols, label, s, tags, "domain", unatt)
        for r in small["rows"]:
            if r["detector"] != f"d{i}":
                continue
            p = plain[tuple(r[t] for t in tags)]
            assert r["auroc"] == pytest.approx(p["auroc"], abs=1e-12)
            if r["auroc_ci95"] is not None:
                assert r["auroc_ci95"] == pytest.approx(p["auroc_ci95"], abs=1e-9)
                checked_ci += 1
    assert checked_ci > 500



def plain_delong(a: np.ndarray, h: np.ndarray) -> tuple[float, float]:
    """DeLong's 95% interval by a plain loop over the two samples (structural components
    V10_i, V01_j; DeLong et al. 1988), clipped to [0, 1]."""
    psi = (a[:, None] > h[None, :]) + 0.5 * (a[:, None] == h[None, :])
    auc = float(psi.mean())
    var = psi.mean(axis=1).var(ddof=1) / a.size + psi.mean(axis=0).var(ddof=1) / h.size
    half = float(norm.isf(0.025)) * math.sqrt(var)
    return max(0.0, auc - half), min(1.0, auc + half)


@pytest.mark.parametrize("seed", [3, 11])
def test_grid_points_with_coded_tags_equal_a_plain_sklearn_reference(seed):
    """Issue 26 (the faster points path: tags coded once per board as ``CodedTag``, each
    threshold group's positions read from the all-human positions, DeLong's S01 rolled up once
    per chunk): on random data with heavy ties, many small cells (most hold 1-5 AI texts), AI
    scores above every human score, missing scores, a domain with no human text and a missing
    tag value, ``compute_grid(..., tpr_intervals=False)`` over coded tags gives the rows of the
    raw columns, and every cell equals a plain per-cell reference: scikit-learn's AUROC,
    DeLong's interval by a plain loop, the threshold of each domain by trying every unattacked
    human score, and the TPR counted by a loop."""
    rng = np.random.default_rng(seed)
    n = 900
    cols = {"domain": rng.choice(["d0", "d1", "d2", "d3", "d4"], n).astype(object),
            "model": rng.choice(["m0", "m1", "m2", "m3", "m4", "m5"], n).astype(object),
            "decoding": rng.choice(["greedy", "sampling", "beam"], n).astype(object),
            "attack": rng.choice(["none", "none", "swap", "typo"], n).astype(object)}
    label = (rng.random(n) < 0.75).astype(np.int64)
    label[cols["domain"] == "d4"] = 1  # no human text in d4: its cells have n_human 0 on the domain side
    cols["model"][label == 0] = "human"
    cols["decoding"][label == 0] = None
    cols["model"][np.flatnonzero(label == 1)[:3]] = None  # a missing tag value: "(missing)"
    score = np.round(rng.random(n) * 0.8 + 0.25 * label, 2)  # two decimals: ties everywhere
    score[np.flatnonzero(label == 1)[5:25]] = 5.0  # above every human score
    score[rng.random(n) < 0.05] = np.nan
    tags = ["domain", "model", "decoding", "attack"]
    unatt = unattacked_mask(cols["attack"])
    kw = {"tags": tags, "threshold_by": "domain", "unattacked": unatt, "targets": (0.05, 0.2), "tpr_intervals": False}
    coded = compute_grid({t: CodedTag(c) for t, c in cols.items()}, label, [GridDetector("d", score)], **kw)
    raw = compute_grid(cols, label, [GridDetector("d", score)], **kw)
    assert coded["rows"] == raw["rows"]
    fin = np.isfinite(score)
    ai, hu = fin & (label == 1), fin & (label == 0)
    sval = {t: np.array(["(missing)" if v is None else str(v) for v in c], dtype=object) for t, c in cols.items()}
    thr = {}
    for d in sorted(set(sval["domain"][fin].tolist())):
        hs = score[hu & unatt & (sval["domain"] == d)]
        for t in (0.05, 0.2):
            if hs.size:
                tt, fp = plain_threshold(hs, t)
                thr[(d, t)] = (tt, fp, hs.size) if fp > 0 else None  # fp = 0: the target is unreachable
            else:
                thr[(d, t)] = None
    rows = {tuple(r[t] for t in tags): r for r in coded["rows"]}
    values = [sorted(set(sval[t][ai].tolist())) + [ALL] for t in tags]
    small = checked_ci = 0
    for cell in itertools.product(*values):
        sel = ai.copy()
        for t, v in zip(tags, cell, strict=True):
            if v != ALL:
                sel &= sval[t] == v
        if not sel.any():
            assert cell not in rows
            continue
        r = rows.pop(cell)
        hsel = hu & (sval["domain"] == cell[0]) if cell[0] != ALL else hu
        a_s, h_s = score[sel], score[hsel]
        assert (r["n_ai"], r["n_human"]) == (a_s.size, h_s.size), cell
        small += a_s.size <= 5
        if h_s.size == 0:
            assert r["auroc"] is None and r["auroc_ci95"] is None and r["auroc_ci95_reason"]
            assert r["tpr_at_fpr_5"]["tpr"] is None and r["tpr_at_fpr_5"]["reason"]
            continue
        y = np.r_[np.ones(a_s.size), np.zeros(h_s.size)]
        assert r["auroc"] == pytest.approx(roc_auc_score(y, np.r_[a_s, h_s]), abs=1e-12), cell
        if a_s.size < 2:
            assert r["auroc_ci95"] is None and r["auroc_ci95_reason"]
        else:
            lo, hi = plain_delong(a_s, h_s)
            if lo == hi:
                assert r["auroc_ci95"] is None and r["auroc_ci95_reason"]
            else:
                assert r["auroc_ci95"] == pytest.approx([lo, hi], abs=1e-9), cell
                checked_ci += 1
        for t, key in ((0.05, "tpr_at_fpr_5"), (0.2, "tpr_at_fpr_20")):
            e = r[key]
            doms = sorted(set(sval["domain"][sel].tolist()))
            if any(thr[(d, t)] is None for d in doms):
                assert e["tpr"] is None and e["reason"], (cell, key)
                continue
            k = sum(int(score[i] > thr[(sval["domain"][i], t)][0]) for i in np.flatnonzero(sel))
            assert e["tpr"] == k / a_s.size, (cell, key)
            assert e["ci95"] is None and e["ci95_reason"] == NO_TPR_INTERVAL
            assert e["achieved_fpr"] == pytest.approx(sum(thr[(d, t)][1] for d in doms)
                                                      / sum(thr[(d, t)][2] for d in doms), abs=1e-15)
    assert not rows  # no cell beyond the reference's
    assert small > 200 and checked_ci > 200, (small, checked_ci)

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_grid_property_any_tags_ties_missing_scores(data):
    """Random small corpora: two or three tags, heavy ties, missing scores, attacked texts,
    a threshold tag inside or outside the grid (or none)."""
    n = data.draw(st.integers(12, 70))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    cols = {"domain": rng.choice(["a", "b", "c"], n).astype(object),
            "model": rng.choice(["x", "y"], n).astype(object),
            "attack": rng.choice(["none", "none", "swap"], n).astype(object)}
    label = (rng.random(n) < data.draw(st.floats(0.2, 0.8))).astype(np.int64)
    cols["model"][label == 0] = "human"
    score = np.round(rng.random(n) + 0.3 * label, data.draw(st.sampled_from([1, 2, 6])))
    score[rng.random(n) < 0.1] = np.nan
    tags = data.draw(st.sampled_from([["domain", "model"], ["model", "attack"], ["domain", "model", "attack"]]))
    tb = data.draw(st.sampled_from(["domain", None]))
    unatt = unattacked_mask(cols["attack"])
    g = compute_grid(cols, label, [GridDetector("d", score)], tags=tags, threshold_by=tb, unattacked=unatt,
                     n_boot=N_BOOT)
    assert_same(g["rows"], plain_grid(cols, label, score, tags, tb, unatt), tags, "d")
    ex = g["info"]["excluded"]["d"]
    assert ex["ai_without_score"] + ex["human_without_score"] == int(np.isnan(score).sum())


def test_unreachable_targets_and_missing_humans_are_null_with_reasons():
    cols = {"domain": np.array(["a"] * 30 + ["b"] * 30 + ["c"] * 5, dtype=object),
            "model": np.array((["human"] * 10 + ["m"] * 20) * 2 + ["m"] * 5, dtype=object)}
    label = (cols["model"] != "human").astype(np.int64)
    score = np.linspace(0, 1, 65)
    score[30:40] = 0.9  # domain b: every human text ties at 0.9
    score[40:60] = np.linspace(0.91, 0.99, 20)
    g = compute_grid(cols, label, [GridDetector("d", score)], tags=["domain", "model"], threshold_by="domain")
    rows = {(r["domain"], r["model"]): r for r in g["rows"]}
    a = rows[("a", "m")]
    assert a["tpr_at_fpr_5"]["tpr"] is None and "1/10 = 0.1" in a["tpr_at_fpr_5"]["reason"]  # 10 humans: FPR 5% unreachable
    # a refused cell's threshold group shows no threshold, count or achieved FPR of a point that is not one
    th = g["info"]["thresholds"]["d"]["0.05"]["a"]
    assert th["threshold"] is None and th["false_positives"] is None and th["achieved_fpr"] is None and th["reason"]
    assert a["tpr_at_fpr_5"].get("threshold") is None and a["tpr_at_fpr_5"].get("achieved_fpr") is None
    assert rows[("b", "m")]["auroc"] == 1.0
    c = rows[("c", "m")]
    assert c["n_human"] == 0 and c["auroc"] is None and c["auroc_ci95"] is None
    assert "no human texts" in c["tpr_at_fpr_5"]["reason"]
    every = rows[(ALL, ALL)]
    assert every["tpr_at_fpr_5"]["tpr"] is None and "domain=c" in every["tpr_at_fpr_5"]["reason"]
    assert every["n_human"] == 20 and every["n_ai"] == 45 and every["auroc"] is not None
    # a reachable target next to them: 30% FPR on 10 humans is 3 false positives
    g = compute_grid(cols, label, [GridDetector("d", score)], tags=["domain"], threshold_by="domain", targets=(0.3,))
    ra = next(r for r in g["rows"] if r["domain"] == "a")
    assert ra["tpr_at_fpr_30"]["achieved_fpr"] == pytest.approx(0.3) and ra["tpr_at_fpr_30"]["tpr"] == 1.0
    rb = next(r for r in g["rows"] if r["domain"] == "b")  # 3 false positives allowed, but the 10 humans tie
    assert rb["tpr_at_fpr_30"]["tpr"] is None and "tie" in rb["tpr_at_fpr_30"]["reason"]


def test_grid_refuses_bad_input():
    cols = {"domain": np.array(["a", "all"], dtype=object)}
    with pytest.raises(ValueError, match="roll-up"):
        compute_grid(cols, [1, 1], [GridDetector("d", np.array([0.1, 0.2]))], tags=["domain"], threshold_by=None)
    with pytest.raises(ValueError, match="no values"):
        compute_grid(cols, [1, 0], [], tags=["model"])
    with pytest.raises(ValueError, match="target"):
        compute_grid(cols, [1, 0], [], tags=["domain"], targets=(1.5,))


def test_raid_leaderboard_shape():
    cols, label, scores = raid_frame(domains=2, sources=60, rounding=(1,))
    g = compute_grid(cols, label, [GridDetector("det", scores[0])], tags=list(RAID_TAGS), threshold_by="domain",
                     unattacked=unattacked_mask(cols["attack"]))
    lb = raid_leaderboard(g, "det")
    assert {"score_agg", "scores", "thresholds", "fpr"} <= set(lb)
    s0 = lb["scores"][0]
    assert list(s0) == ["domain", "model", "decoding", "repetition_penalty", "attack", "accuracy", "auroc"]
    assert set(s0["accuracy"]) == {"0.05", "0.01"}
    agg = lb["score_agg"]["all"]
    assert all(agg[t] == ALL for t in RAID_TAGS)
    row = next(r for r in g["rows"] if all(r[t] == ALL for t in RAID_TAGS))
    if agg["accuracy"]["0.05"] is not None:
        acc = agg["accuracy"]["0.05"]
        assert acc["tp"] + acc["fn"] == row["n_ai"] and acc["tp"] / row["n_ai"] == pytest.approx(row["tpr_at_fpr_5"]["tpr"])
    assert lb["score_agg"]["no_adversarial"]["attack"] == "none"
    assert set(lb["thresholds"]["0.05"]) == {"dom0", "dom1"}
    with pytest.raises(ValueError, match="RAID's leaderboard shape"):
        raid_leaderboard(compute_grid(cols, label, [GridDetector("det", scores[0])], tags=["domain"],
                                      threshold_by="domain"), "det")


def test_grid_equals_raids_run_evaluation():
    """RAID's own evaluation on the same RAID-format frame: AUROC within 1e-12 in every cell;
    TPR equal in every cell whose domains' RAID thresholds split the domain's scores exactly
    as the exact quantile does (``score >= t_raid`` == ``score > t``)."""
    raid_eval = pytest.importorskip("raid.evaluate", reason="raid-bench not installed (pip install --no-deps raid-bench)")
    import pandas as pd

    cols, label, scores = raid_frame(domains=3, sources=100, rounding=(None, 1))
    n = label.size
    assert n > 10_000
    df = pd.DataFrame({"id": np.arange(n), **{t: cols[t] for t in RAID_TAGS}})
    df.loc[df["model"] == "human", ["decoding", "repetition_penalty"]] = np.nan
    g = compute_grid(cols, label, [GridDetector(f"d{i}", s) for i, s in enumerate(scores)], tags=list(RAID_TAGS),
                     threshold_by="domain", unattacked=unattacked_mask(cols["attack"]))
    compared = 0
    for i, s in enumerate(scores):
        res = raid_eval.run_evaluation([{"id": int(k), "score": float(v)} for k, v in zip(range(n), s)], df.copy(),
                                       target_fpr=[0.05, 0.01])
        ours = {tuple(r[t] for t in RAID_TAGS): r for r in g["rows"] if r["detector"] == f"d{i}"}
        theirs = {tuple(r[t] for t in RAID_TAGS): r for r in res["scores"]}
        assert set(ours) == set(theirs)
        th = g["info"]["thresholds"][f"d{i}"]
        for tk, rk in (("0.05", "tpr_at_fpr_5"), ("0.01", "tpr_at_fpr_1")):
            agree = {}
            for d in sorted(set(cols["domain"])):
                m = cols["domain"] == d
                ot = th[tk][d]
                agree[d] = ot["reason"] is None and bool(np.all((s[m] >= res["thresholds"][tk][d]) == (s[m] > ot["threshold"])))
            for cell, r in theirs.items():
                assert abs(r["auroc"] - ours[cell]["auroc"]) <= 1e-12, cell
                acc = r["accuracy"][tk]
                doms = sorted(agree) if cell[0] == ALL else [cell[0]]
                if acc is not None and all(agree[d] for d in doms):
                    compared += 1
                    assert acc["tp"] / (acc["tp"] + acc["fn"]) == ours[cell][rk]["tpr"], (cell, tk)
    assert compared > 100  # the rounded detector's thresholds land on the exact quantile


def test_cli_evaluate_grid_on_the_raid_fixture(tmp_path):
    from typer.testing import CliRunner

    from veribench.cli.main import app

    ws = str(tmp_path / "ws")
    run = CliRunner()
    assert run.invoke(app, ["import", "raid", str(PUBLIC / "raid"), "-w", ws, "-q", "--no-progress"]).exit_code == 0
    r = run.invoke(app, ["import", "scores", str(PUBLIC / "raid" / "predictions.json"), "--detector", "my-detector",
                         "--scale", "score_higher_ai", "-w", ws, "-q"])
    assert r.exit_code == 0, r.output
    out = tmp_path / "out.json"
    r = run.invoke(app, ["evaluate", "-w", ws, "--no-score", "-q", "--grid", ",".join(RAID_TAGS), "--json", str(out),
                         "--raid-json", str(tmp_path / "raid")])
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text())
    rows = res["grid"]
    assert rows and all(set(r) == KEYS for r in rows)
    top = next(r for r in rows if all(r[t] == ALL for t in RAID_TAGS))
    preds = json.loads((PUBLIC / "raid" / "predictions.json").read_text())
    assert top["n_ai"] + top["n_human"] == len(preds)  # only train.csv has predictions
    assert res["grid_info"]["threshold_by"] == "domain"
    lb = json.loads((tmp_path / "raid" / "my-detector.json").read_text())
    assert lb["score_agg"]["all"]["auroc"] == top["auroc"]
    assert math.isfinite(top["auroc"])
    r = run.invoke(app, ["evaluate", "-w", ws, "--no-score", "-q", "--grid", "domain,split", "--json", str(out),
                         "--raid-json", str(tmp_path / "raid2")])
    assert r.exit_code == 1 and "RAID's leaderboard shape" in r.output
    # a tag no document carries is refused before anything runs (it would be a grid of "(missing)")
    r = run.invoke(app, ["evaluate", "-w", ws, "--no-score", "-q", "--grid", "domian,model"])
    assert r.exit_code == 2 and "error: --grid: unknown tag 'domian' (did you mean 'domain'? known: " in r.output
    r = run.invoke(app, ["evaluate", "-w", ws, "--no-score", "-q", "--grid", "domain,model",
                         "--grid-threshold-by", "bogus"])
    assert r.exit_code == 2 and "error: --grid-threshold-by: unknown tag 'bogus' (" in r.output, r.output
    assert "known: arm, attack, corpus, decoding, " in r.output, r.output


def test_grid_results_refuse_a_tag_no_document_carries(tmp_path):
    """The API's rule (``evaluate_workspace(grid=...)``): a misspelled tag or threshold tag is
    a ProtocolError with "did you mean", never a grid of "(missing)" nor an IndexError."""
    from veribench.errors import ProtocolError
    from veribench.evaluate import evaluate_workspace
    from veribench.store.workspace import Workspace

    ws_path = tmp_path / "ws"
    with Workspace(ws_path) as ws:
        import_raid(ws, PUBLIC / "raid" / "train.csv", progress=False)
        import_scores(ws, PUBLIC / "raid" / "predictions.json", detector="my-detector", scale="score_higher_ai")
        with pytest.raises(ProtocolError, match="no selected document carries the tag 'domian' \\(did you mean "
                                                "'domain'\\?"):
            evaluate_workspace(ws, None, allow_scoring=False, grid=["domian"])
        with pytest.raises(ProtocolError, match="'bogus'"):
            evaluate_workspace(ws, None, allow_scoring=False, grid=["domain", "model"], grid_threshold_by="bogus")
        res = evaluate_workspace(ws, None, allow_scoring=False, grid=["tag:domain"], grid_threshold_by="none")
        assert res["grid"] and res["grid_info"]["threshold_by"] is None


def test_grid_tpr_interval_refits_the_threshold_and_is_labelled_in_sample():
    """Issue 25: a grid TPR's threshold is fitted on the same evaluation's human texts, so
    the row says ``threshold_fit: "in-sample"`` and its interval is the tables' bootstrap
    (threshold refitted per resample), wider than the Wilson interval on k/n that treats
    the threshold as known (at 1% FPR on 200 human texts the threshold is the 3rd-largest
    human score; the test in tests/metrics finds the bootstrap 1.3x wider there too)."""
    from veribench.metrics import wilson

    rng = np.random.default_rng(0)
    n_h, n_a = 200, 400
    cols = {"model": np.array(["human"] * n_h + ["m"] * n_a, dtype=object)}
    label = np.r_[np.zeros(n_h, np.int64), np.ones(n_a, np.int64)]
    score = np.r_[rng.normal(0, 1, n_h), rng.normal(1.8, 1, n_a)]
    g = compute_grid(cols, label, [GridDetector("d", score)], tags=["model"], targets=(0.01,), n_boot=1000, seed=5)
    (row,) = [r for r in g["rows"] if r["model"] == "m"]
    e = row["tpr_at_fpr_1"]
    assert e["threshold_fit"] == "in-sample" and g["info"]["threshold_fit"] == "in-sample"
    want = tpr_at_fpr_interval_scores(score[:n_h], score[n_h:], 0.01, n_boot=1000, seed=5)
    assert (e["tpr"], e["threshold"], e["ci95"]) == (want.tpr, want.threshold, [want.lo, want.hi])
    assert g["info"]["tpr_ci"]["n_boot"] == 1000 and g["info"]["tpr_ci"]["seed"] == 5
    assert g["info"]["tpr_ci"]["method"] == want.method
    w = wilson(round(e["tpr"] * n_a), n_a)
    assert (e["ci95"][1] - e["ci95"][0]) > 1.3 * (w.hi - w.lo)
    with pytest.raises(ValueError, match="n_boot"):
        compute_grid(cols, label, [GridDetector("d", score)], tags=["model"], n_boot=0)
