"""Issue 14 assembly (evaluate/comparisons.py): comparison and gap rows, the Holm family,
undefined cases, the significance matrix and tiers; the Liang et al. (2023) TOEFL vs US
essay gap per detector; paired AUROC comparisons of two ZipPy engines on the
fast-detect-gpt slice."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import fisher_exact
from sklearn.metrics import roc_auc_score
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep

from veribench.errors import ProtocolError
from veribench.evaluate.comparisons import (
    NO_COMMON,
    NO_TEXTS,
    TIER_RULE,
    ComparisonConfig,
    DetectorInput,
    compute_comparisons,
    format_significance,
    format_tiers,
    pairwise_comparisons,
    parse_comparisons,
    parse_gaps,
    slice_masks,
    tiers_for,
)
from veribench.metrics.paired import NO_DISCORDANT, delong_paired, paired_rate_difference

ISSUE_COMPARISON_KEYS = {"slice", "metric", "a", "b", "estimate", "ci95", "p_value", "p_adjusted", "test"}
ISSUE_GAP_KEYS = {"detector", "metric", "group_a", "group_b", "estimate", "ci95", "p_value", "test"}


def _synthetic(n=240, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    group = np.where(rng.random(n) < 0.5, "g1", "g2").astype(object)
    good = rng.normal(0, 1, n) + 2.0 * y
    weak = rng.normal(0, 1, n) + 0.4 * y
    mid = 0.6 * good + rng.normal(0, 0.8, n)
    dets = [DetectorInput("good", good, good > 1.0), DetectorInput("mid", mid, mid > 0.6),
            DetectorInput("weak", weak, weak > 0.2)]
    return y, group, dets


def test_rows_have_the_issue_keys_and_match_direct_calls():
    y, group, dets = _synthetic()
    slices = slice_masks({"subgroup": group})
    assert list(slices) == ["all", "subgroup=g1", "subgroup=g2"]
    res = compute_comparisons(y, dets, slices)
    rows = res["comparisons"]
    assert len(rows) == 3 * 3 * 3  # slices x metrics x pairs
    for r in rows:
        assert ISSUE_COMPARISON_KEYS <= set(r)
        assert r["metric"] in ("auroc", "fpr", "catch_rate")
    r = next(r for r in rows if (r["slice"], r["metric"], r["a"], r["b"]) == ("subgroup=g1", "auroc", "good", "weak"))
    m = slices["subgroup=g1"]
    ref = delong_paired(y[m], dets[0].score[m], dets[2].score[m])
    assert r["estimate"] == pytest.approx(ref.estimate) and r["ci95"] == pytest.approx([ref.lo, ref.hi])
    assert r["estimate"] == pytest.approx(roc_auc_score(y[m], dets[0].score[m]) - roc_auc_score(y[m], dets[2].score[m]))
    assert r["p_value"] == pytest.approx(ref.p_value)
    r = next(r for r in rows if (r["slice"], r["metric"], r["a"], r["b"]) == ("all", "fpr", "good", "mid"))
    ref = paired_rate_difference(dets[0].flag[y == 0], dets[1].flag[y == 0])
    assert (r["estimate"], r["p_value"], r["n"]) == (pytest.approx(ref.estimate), pytest.approx(ref.p_value), 120)
    json.dumps(res, allow_nan=False)


def test_pairs_use_only_texts_both_detectors_scored_validly():
    y, group, dets = _synthetic()
    a, b = dets[0], dets[2]
    score_b = b.score.copy()
    score_b[::7] = np.nan  # b failed on every 7th text
    flag_valid_a = np.ones(y.size, bool)
    flag_valid_a[1::5] = False  # a's rule gave no flag on every 5th
    a2 = DetectorInput("good", a.score, a.flag, flag_valid=flag_valid_a)
    b2 = DetectorInput("weak", score_b, b.flag)
    rows = pairwise_comparisons(y, [a2, b2], {"all": np.ones(y.size, bool)})
    both_score = np.isfinite(score_b)
    auc = next(r for r in rows if r["metric"] == "auroc")
    assert auc["n"] == int(both_score.sum())
    assert auc["estimate"] == pytest.approx(roc_auc_score(y[both_score], a.score[both_score])
                                            - roc_auc_score(y[both_score], score_b[both_score]))
    fpr = next(r for r in rows if r["metric"] == "fpr")
    keep = flag_valid_a & both_score & (y == 0)
    assert fpr["n"] == int(keep.sum())
    assert fpr["estimate"] == pytest.approx(a.flag[keep].mean() - b.flag[keep].mean())


def test_holm_over_the_whole_run_family():
    y, group, dets = _synthetic()
    res = compute_comparisons(y, dets, slice_masks({"subgroup": group}))
    rows = res["comparisons"]
    defined = [r for r in rows if r["p_value"] is not None]
    with mock.patch("gc.collect", lambda *a: 0):
        reject, adj, _, _ = multipletests([r["p_value"] for r in defined], alpha=0.05, method="holm")
    assert [r["p_adjusted"] for r in defined] == pytest.approx(list(adj))
    fam = res["corrections"]["families"][0]
    assert (fam["name"], fam["size"], fam["rows"]) == ("comparisons", len(defined), len(rows))
    assert res["corrections"]["family"] == "run" and res["corrections"]["correction"] == "holm"
    none = pairwise_comparisons(y, dets, {"all": np.ones(y.size, bool)}, {"correction": "none"})
    assert all(r["p_adjusted"] == r["p_value"] for r in none)
    # matrix cells follow the adjusted p-values
    mat = next(m for m in res["significance"] if (m["slice"], m["metric"]) == ("all", "auroc"))
    for r, rej in zip(defined, reject):
        if (r["slice"], r["metric"]) != ("all", "auroc"):
            continue
        i, j = mat["detectors"].index(r["a"]), mat["detectors"].index(r["b"])
        assert mat["cells"][i][j] == ((">" if r["estimate"] > 0 else "<") if rej else "=")


def test_undefined_cases_are_null_with_reason_never_nan():
    n = 40
    y = np.repeat([0, 1], n // 2)
    only_h = np.zeros(n, bool)
    only_h[: n // 2] = True
    s = np.linspace(0, 1, n)
    same = DetectorInput("a", s, s > 0.5)
    twin = DetectorInput("b", s * 2, s > 0.5)  # same ranking, same flags
    empty = DetectorInput("c", np.full(n, np.nan), np.zeros(n, bool))
    res = compute_comparisons(y, [same, twin, empty], {"all": np.ones(n, bool), "humans": only_h})
    text = json.dumps(res, allow_nan=False)
    assert "NaN" not in text
    rows = {(r["slice"], r["metric"], r["a"], r["b"]): r for r in res["comparisons"]}
    r = rows[("humans", "auroc", "a", "b")]
    assert r["estimate"] is None and r["ci95"] is None and "one class" in r["reason"]
    r = rows[("humans", "catch_rate", "a", "b")]
    assert r["estimate"] is None and r["reason"] == NO_TEXTS["catch_rate"]  # the slice holds no AI text at all
    r = rows[("all", "fpr", "a", "b")]
    assert r["estimate"] == 0.0 and r["p_value"] is None and r["p_adjusted"] is None and r["reason"] == NO_DISCORDANT
    r = rows[("all", "auroc", "a", "b")]
    assert r["estimate"] == 0.0 and r["p_value"] is None and "variance" in r["reason"]
    for key in [k for k in rows if k[3] == "c"]:
        want = NO_TEXTS[key[1]] if key[:2] == ("humans", "catch_rate") else \
            NO_TEXTS["auroc_class"] if key[:2] == ("humans", "auroc") else NO_COMMON
        assert rows[key]["estimate"] is None and rows[key]["reason"] == want, key
    tier = next(t for t in res["tiers"] if (t["slice"], t["metric"]) == ("all", "auroc"))
    assert [x["detector"] for x in tier["not_ranked"]] == ["c"]
    assert tier["tiers"] == [{"tier": 1, "detectors": ["a", "b"]}]
    tier = next(t for t in res["tiers"] if (t["slice"], t["metric"]) == ("humans", "auroc"))
    assert tier["tiers"] == [] and len(tier["not_ranked"]) == 3


def test_tiers_worked_examples():
    rel = lambda pairs: dict.fromkeys(pairs, True)  # noqa: E731
    assert tiers_for(["A", "B", "C"], rel([("A", "B"), ("B", "C"), ("A", "C")])) == [["A"], ["B"], ["C"]]
    # A beats C only: B is not separated from either, so no ordering at all
    assert tiers_for(["A", "B", "C"], rel([("A", "C")])) == [["A", "B", "C"]]
    assert tiers_for(["C", "B", "A"], rel([("A", "B"), ("A", "C")])) == [["A"], ["B", "C"]]
    assert tiers_for(["A", "B", "C", "D"], rel([("A", "C"), ("A", "D"), ("B", "C"), ("B", "D")])) == [["A", "B"], ["C", "D"]]
    assert tiers_for([], {}) == []
    assert "alphabetically" in TIER_RULE


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6).flatmap(lambda k: st.tuples(st.just(k), st.lists(st.sampled_from([-1, 0, 1]),
                                                                             min_size=k * (k - 1) // 2,
                                                                             max_size=k * (k - 1) // 2))))
def test_tiers_claim_only_supported_orderings_and_are_finest(data):
    k, outcomes = data
    names = [f"d{i}" for i in range(k)]
    rel = {}
    for (x, y), o in zip(itertools.combinations(names, 2), outcomes):
        if o == 1:
            rel[(x, y)] = True
        elif o == -1:
            rel[(y, x)] = True
    ts = tiers_for(names, rel)
    assert sorted(sum(ts, [])) == sorted(names)
    for i, t in enumerate(ts):
        assert t == sorted(t)
        for later in ts[i + 1:]:
            assert all(rel.get((u, v), False) for u in t for v in later)  # every claimed order is supported
    # finest: no tier can be split into an upper part that beats the rest of it and all later tiers
    for i, t in enumerate(ts):
        rest = sum(ts[i + 1:], [])
        for r in range(1, len(t)):
            for upper in itertools.combinations(t, r):
                lower = [x for x in t if x not in upper] + rest
                assert not all(rel.get((u, v), False) for u in upper for v in lower)


def test_config_parsing_and_disabled():
    cfg = parse_comparisons({"enabled": True, "metrics": ["auroc", "fpr", "catch_rate"], "correction": "holm",
                             "family": "run", "alpha": 0.05})
    assert cfg == ComparisonConfig()
    with pytest.raises(ProtocolError, match=r"comparisons\.correction"):
        parse_comparisons({"correction": "bonferroni"})
    with pytest.raises(ProtocolError, match=r"comparisons\.metrix.*unknown key"):
        parse_comparisons({"metrix": ["auroc"]})
    with pytest.raises(ProtocolError, match=r"gaps\[1\]\.group_b"):
        parse_gaps([{"group_a": "x", "group_b": "y"}, {"group_a": "x"}])
    y, group, dets = _synthetic()
    off = compute_comparisons(y, dets, {"all": np.ones(y.size, bool)}, {"enabled": False})
    assert off["comparisons"] == [] and off["corrections"] == {"enabled": False}
    only = pairwise_comparisons(y, dets, {"all": np.ones(y.size, bool)}, {"metrics": ["fpr"]})
    assert {r["metric"] for r in only} == {"fpr"}
    with pytest.raises(ValueError, match="unique"):
        pairwise_comparisons(y, [dets[0], dets[0]], {"all": np.ones(y.size, bool)})
    with pytest.raises(ValueError, match="mask"):
        pairwise_comparisons(y, dets, {"all": np.ones(3, bool)})


def test_formatting_helpers():
    y, group, dets = _synthetic()
    res = compute_comparisons(y, dets, {"all": np.ones(y.size, bool)})
    md = format_significance(res["significance"][0])
    assert md.splitlines()[0].startswith("| all · auroc (higher is better) | good | mid | weak |")
    assert len(md.splitlines()) == 5
    line = format_tiers(res["tiers"][0])
    assert line.startswith("all · auroc: tier 1:")


# -- real data: Liang et al. (2023) --------------------------------------------------------------------

DETECTORS = ["GPTZero", "OriginalityAI", "ZeroGPT", "Crossplag", "HFOpenAI", "Quil", "Sapling"]
TOEFL, US = "TOEFL_real_91", "HewlettStudentEssay_real_88"


def _raw_counts(liang_dir: Path, set_name: str, det: str) -> tuple[int, int]:
    """Flagged (score > 0.5) and finite scores, straight from the upstream JSON."""
    recs = json.loads(re.sub(r"\bNaN\b", "null", (liang_dir / "Human_Data" / set_name / f"{det}.json").read_text()))
    vals = [r.get("score") for r in recs]
    finite = [v for v in vals if isinstance(v, (int, float)) and math.isfinite(v)]
    return sum(v > 0.5 for v in finite), len(finite)


def _arrays_from_workspace(ws, spec_name_key="detector"):
    rows = ws.raw_scores().to_pylist()
    docs = sorted({r["doc_id"] for r in rows})
    idx = {d: i for i, d in enumerate(docs)}
    meta = {r["doc_id"]: r for r in rows}
    roles = {"human": 0, "ai": 1}
    y = np.array([roles.get(meta[d]["label"], -1) for d in docs])
    subgroup = np.array([meta[d]["subgroup"] for d in docs], dtype=object)
    per: dict[str, dict[str, np.ndarray]] = {}
    for r in rows:
        key = r[spec_name_key]
        a = per.setdefault(key, {"p": np.full(len(docs), np.nan), "raw": np.full(len(docs), np.nan)})
        if r["status"] == "ok":
            i = idx[r["doc_id"]]
            a["p"][i] = np.nan if r["ai_probability"] is None else r["ai_probability"]
            a["raw"][i] = np.nan if r["raw"] is None else r["raw"]
    return y, subgroup, per


@pytest.fixture(scope="module")
def liang_arrays(tmp_path_factory, liang_dir):
    from veribench.corpus.importers import import_liang2023
    from veribench.store import Workspace

    with Workspace(tmp_path_factory.mktemp("liang") / "ws") as ws:
        import_liang2023(ws, liang_dir)
        return _arrays_from_workspace(ws)


def test_liang_toefl_vs_us_fpr_gap_excludes_zero_for_every_detector(liang_arrays, liang_dir):
    """Liang et al. (2023): the seven detectors flag 61% of TOEFL essays on average and
    almost none of the US 8th-grade essays; the gap is large for all seven, and every
    interval excludes 0. The flag is the paper's rule, P(AI) > 0.5."""
    y, subgroup, per = liang_arrays
    dets = [DetectorInput(d, per[d]["p"], per[d]["p"] > 0.5) for d in DETECTORS]
    gaps = [{"slice": "subgroup", "group_a": TOEFL, "group_b": US, "label_a": "non-native (TOEFL)",
             "label_b": "native (US 8th grade)", "metric": "fpr"}]
    res = compute_comparisons(y, dets, slice_masks({"subgroup": subgroup}), gaps=gaps, columns={"subgroup": subgroup})
    rows = {r["detector"]: r for r in res["gaps"]}
    assert sorted(rows) == sorted(DETECTORS)
    for det, r in rows.items():
        assert ISSUE_GAP_KEYS <= set(r)
        ka, na = _raw_counts(liang_dir, TOEFL, det)
        kb, nb = _raw_counts(liang_dir, US, det)
        assert (r["k_a"], r["n_a"], r["k_b"], r["n_b"]) == (ka, na, kb, nb), det
        assert r["estimate"] == pytest.approx(ka / na - kb / nb)
        lo, hi = confint_proportions_2indep(ka, na, kb, nb, method="newcomb", compare="diff")
        assert r["ci95"] == pytest.approx([lo, hi], abs=1e-12)
        assert r["p_value"] == pytest.approx(fisher_exact([[ka, na - ka], [kb, nb - kb]]).pvalue)
        assert r["ci95"][0] > 0.0, det  # the interval excludes 0
        assert r["p_adjusted"] < 0.05, det
        assert (r["label_a"], r["label_b"]) == ("non-native (TOEFL)", "native (US 8th grade)")
    assert rows["GPTZero"]["n_a"] == 91 and rows["GPTZero"]["k_b"] == 0
    assert res["corrections"]["families"][1]["size"] == 7
    json.dumps(res, allow_nan=False)


def test_liang_pairwise_rows_on_human_only_slices(liang_arrays):
    """On the TOEFL slice (human texts only) AUROC and catch rate comparisons are refused
    with a reason; FPR comparisons are paired on the essays both detectors scored."""
    y, subgroup, per = liang_arrays
    dets = [DetectorInput(d, per[d]["p"], per[d]["p"] > 0.5) for d in DETECTORS]
    rows = pairwise_comparisons(y, dets, {"toefl": subgroup == TOEFL})
    assert len(rows) == 3 * 21
    for r in rows:
        if r["metric"] == "fpr":
            assert r["estimate"] is not None and r["n"] > 0
        else:
            assert r["estimate"] is None and r["reason"]
    r = next(r for r in rows if (r["metric"], r["a"], r["b"]) == ("fpr", "GPTZero", "OriginalityAI"))
    assert r["value_a"] == pytest.approx(47 / 91) and r["value_b"] == pytest.approx(69 / 91)


# -- real data: fast-detect-gpt slice, two ZipPy engines ----------------------------------------------


@pytest.fixture(scope="module")
def zippy_arrays(tmp_path_factory):
    pytest.importorskip("zippy.zippy")
    from veribench.corpus.importers import import_fastdetectgpt
    from veribench.detectors.local.zippy import ZippyDetector
    from veribench.detectors.pipeline import score_documents
    from veribench.store import Workspace

    examples = Path(__file__).resolve().parents[2] / "examples" / "fastdetectgpt"
    with Workspace(tmp_path_factory.mktemp("fdg") / "ws") as ws:
        import_fastdetectgpt(ws, examples)
        for engine in ("brotli", "zlib"):
            score_documents(ws, ZippyDetector(engine=engine))
        return _arrays_from_workspace(ws, "detector_settings")


def test_pairwise_auroc_on_fast_detect_gpt_with_two_zippy_engines(zippy_arrays):
    y, subgroup, per = zippy_arrays
    by_engine = {json.loads(k)["engine"]: v for k, v in per.items()}
    dets = [DetectorInput(f"ZipPy ({e})", by_engine[e]["raw"], by_engine[e]["raw"] >= 0.0) for e in ("brotli", "zlib")]
    res = compute_comparisons(y, dets, slice_masks({"subgroup": subgroup}))
    auc = [r for r in res["comparisons"] if r["metric"] == "auroc"]
    assert len(auc) == 1 + len(set(subgroup))  # all + five sets
    r_all = next(r for r in auc if r["slice"] == "all")
    ok = np.isfinite(dets[0].score) & np.isfinite(dets[1].score)
    assert r_all["n"] == int(ok.sum()) == 120
    assert r_all["estimate"] == pytest.approx(roc_auc_score(y[ok], dets[0].score[ok]) - roc_auc_score(y[ok], dets[1].score[ok]))
    for r in auc:
        assert r["a"] == "ZipPy (brotli)" and r["b"] == "ZipPy (zlib)"
        assert r["ci95"][0] <= r["estimate"] <= r["ci95"][1]
        assert 0.0 <= r["p_value"] <= r["p_adjusted"] <= 1.0
        assert r["test"].startswith("paired DeLong")
    assert {t["metric"] for t in res["tiers"]} == {"auroc", "fpr", "catch_rate"}
    json.dumps(res, allow_nan=False)


@st.composite
def messy_runs(draw):
    n = draw(st.integers(0, 30))
    y = np.array(draw(st.lists(st.sampled_from([0, 1, -1]), min_size=n, max_size=n)), dtype=np.int64)
    k = draw(st.integers(1, 3))
    dets = []
    for i in range(k):
        s = draw(st.lists(st.one_of(st.just(float("nan")), st.integers(0, 4).map(float)), min_size=n, max_size=n))
        f = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        fv = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        dets.append(DetectorInput(f"d{i}", np.array(s, float), np.array(f, bool), flag_valid=np.array(fv, bool)))
    groups = np.array(draw(st.lists(st.sampled_from(["x", "y", None]), min_size=n, max_size=n)), dtype=object)
    return y, dets, groups


@settings(max_examples=150, deadline=None)
@given(messy_runs())
def test_any_input_gives_json_rows_with_a_reason_for_every_null(run):
    """The class of fault "NaN or 0 for undefined": whatever the data (empty slices, one
    class, all scores missing, ties, identical flags), every number is finite or null, and
    every null estimate, interval or p-value carries a reason."""
    y, dets, groups = run
    with mock.patch("gc.collect", lambda *a: 0):
        res = compute_comparisons(y, dets, slice_masks({"g": groups}, n=y.size),
                                  gaps=[{"slice": "g", "group_a": "x", "group_b": "y"}], columns={"g": groups})
    json.dumps(res, allow_nan=False)
    for r in res["comparisons"] + res["gaps"]:
        if r["estimate"] is None or r["ci95"] is None or r["p_value"] is None:
            assert r["reason"], r
        if r["ci95"] is not None:
            assert -1.0 <= r["ci95"][0] <= r["estimate"] <= r["ci95"][1] <= 1.0
        if r["p_value"] is not None:
            assert 0.0 <= r["p_value"] <= r["p_adjusted"] <= 1.0


def test_a_detector_that_judged_neither_group_gets_no_gap_row():
    """A detector of another corpus (no valid decision on any text of either group) has no
    row for the gap; one that judged only group b keeps its row, null with the reason."""
    y, group, dets = _synthetic()
    n = len(y)
    other = DetectorInput("other corpus", np.full(n, np.nan), np.zeros(n, bool), score_valid=np.zeros(n, bool),
                          flag_valid=np.zeros(n, bool))
    only_b = DetectorInput("only b", dets[0].score, dets[0].flag, flag_valid=group == "g2")
    gaps = [{"slice": "subgroup", "group_a": "g1", "group_b": "g2", "metric": "fpr"}]
    res = compute_comparisons(y, [*dets, other, only_b], slice_masks({"subgroup": group}), gaps=gaps,
                              columns={"subgroup": group})
    names = [r["detector"] for r in res["gaps"]]
    assert names == ["good", "mid", "weak", "only b"]
    row = res["gaps"][-1]
    assert row["estimate"] is None and row["n_a"] == 0 and row["reason"] == "no texts in group a"
    assert all(r["estimate"] is not None for r in res["gaps"][:3])


def test_a_detector_without_a_decision_rule_gets_its_reason_not_no_texts():
    """A threshold that could not be fitted: the detector's rate comparisons and gap rows are
    null with that reason (never "no texts" or n = 0 as if nothing had been scored), and its
    AUROC comparisons, which need no rule, are computed."""
    y, group, dets = _synthetic()
    n = len(y)
    why = "threshold not fitted: the calibration split holds no AI text"
    unfit = DetectorInput("unfitted", dets[0].score, np.zeros(n, bool), flag_valid=np.zeros(n, bool), rule_reason=why)
    gaps = [{"slice": "subgroup", "group_a": "g1", "group_b": "g2", "metric": "fpr"}]
    res = compute_comparisons(y, [dets[1], unfit], slice_masks({"subgroup": group}), gaps=gaps,
                              columns={"subgroup": group})
    rows = {(r["slice"], r["metric"]): r for r in res["comparisons"] if r["slice"] == "all"}
    for m, lab in (("fpr", 0), ("catch_rate", 1)):
        assert rows[("all", m)]["estimate"] is None and rows[("all", m)]["reason"] == f"unfitted: {why}"
        assert rows[("all", m)]["n"] == int((y == lab).sum())  # texts both scored, never 0
    assert rows[("all", "auroc")]["estimate"] is not None
    g = next(r for r in res["gaps"] if r["detector"] == "unfitted")
    assert g["estimate"] is None and g["reason"] == f"no decision rule: {why}"
    assert (g["n_a"], g["n_b"]) == (int(((group == "g1") & (y == 0)).sum()), int(((group == "g2") & (y == 0)).sum()))
    assert g["k_a"] is None and g["rate_a"] is None
    tier = next(t for t in res["tiers"] if (t["slice"], t["metric"]) == ("all", "fpr"))
    assert {"detector": "unfitted", "reason": why} in tier["not_ranked"] or \
        any(x["detector"] == "unfitted" and x["reason"] == why for x in tier["not_ranked"])
