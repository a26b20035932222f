"""Phase-2 wiring through the CLI on real data: Table 1 groups and agreement panels
(issue 18), robustness rows (issue 13) and comparisons, gaps, tiers and threshold
intervals (issue 14).

Every number is checked against an independent computation written here: counts taken
from the raw Liang et al. (2023) JSON files or straight from the workspace's score rows
(SQL, not through the evaluation), statsmodels' Wilson, Newcombe and McNemar, scipy's
Fisher test and scikit-learn's AUROC.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import fisher_exact
from sklearn.metrics import roc_auc_score
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint
from typer.testing import CliRunner

from tests.evaluate.test_properties import ref_newcombe_paired
from veribench.cli.main import app

LIANG = ["GPTZero", "OriginalityAI", "ZeroGPT", "Crossplag", "HFOpenAI", "Quil", "Sapling"]
TOEFL, US = "TOEFL_real_91", "HewlettStudentEssay_real_88"
ZIPPY = '''
[[detectors]]
name = "zippy"
label = "{label}"
settings = {{ engine = "{engine}" }}
rule = {{ field = "raw", op = ">=", threshold = 0.0, source = "thinkst-zippy default: AI when delta >= 0" }}
'''


def cli(*args: str) -> str:
    r = CliRunner().invoke(app, list(args))
    assert r.exit_code == 0, r.output
    return r.output


def liang_detectors(scoped: bool) -> str:
    scope = '\ncorpora = ["liang2023"]' if scoped else ""
    return "".join(f'\n[[detectors]]\nname = "{d}"{scope}\n'
                   'rule = { field = "ai_probability", op = ">", threshold = 0.5, source = "Liang et al. 2023" }\n'
                   for d in LIANG)


def liang_protocol(path: Path, name: str, scoped: bool) -> Path:
    path.write_text(f'''[protocol]
name = "{name}"
tag = "{name.upper()}"
[selection]
corpora = ["liang2023", "fastdetectgpt"]
[tables]
slices = ["subgroup"]
[comparisons]
metrics = ["auroc", "fpr", "catch_rate"]
[[gaps]]
slice = "subgroup"
group_a = "{TOEFL}"
group_b = "{US}"
label_a = "non-native (TOEFL)"
label_b = "native (US 8th grade)"
metric = "fpr"
''' + liang_detectors(scoped) + ZIPPY.format(label="ZipPy (brotli)", engine="brotli"), encoding="utf-8")
    return path


def _raw(liang_dir: Path, set_name: str, det: str) -> list[bool | None]:
    """P(AI) > 0.5 per essay, in file order, straight from the paper's files (None: no score)."""
    recs = json.loads(re.sub(r"\bNaN\b", "null", (liang_dir / "Human_Data" / set_name / f"{det}.json").read_text()))
    return [None if not isinstance(r.get("score"), (int, float)) else r["score"] > 0.5 for r in recs]


@pytest.fixture(scope="module")
def demo_style(tmp_path_factory, liang_dir):
    """Liang's seven (named for liang2023) plus ZipPy on everything, Liang + fast-detect-gpt."""
    pytest.importorskip("zippy.zippy")
    root = tmp_path_factory.mktemp("demo_style")
    ws = str(root / "ws")
    examples = Path(__file__).resolve().parents[2] / "examples" / "fastdetectgpt"
    cli("import", "liang2023", str(liang_dir), "--workspace", ws)
    cli("import", "fastdetectgpt", str(examples), "--workspace", ws)
    out = {}
    for name, scoped in (("scoped", True), ("unscoped", False)):
        p = liang_protocol(root / f"{name}.toml", name, scoped)
        extra = [] if scoped else ["--new-protocol"]  # a second, unrelated protocol after the first run
        out[f"{name}_commit"] = cli("protocol", "commit", str(p), "--workspace", ws, *extra)
        term = cli("evaluate", "--workspace", ws, "-p", str(p), "--json", str(root / f"{name}.json"),
                   "--out", str(root / name))
        out[name] = json.loads((root / f"{name}.json").read_text())
        out[f"{name}_term"] = term
        out[f"{name}_md"] = (root / name / "tables.md").read_text()
    return out


def test_one_table1_per_corpus_and_a_row_per_corpus_for_zippy(demo_style):
    res = demo_style["scoped"]
    groups = {g["id"]: g for g in res["table1_groups"]}
    assert list(groups) == ["corpus:fastdetectgpt", "corpus:liang2023"]
    assert groups["corpus:fastdetectgpt"]["detectors"] == ["ZipPy (brotli)"]
    assert groups["corpus:liang2023"]["detectors"] == LIANG + ["ZipPy (brotli)"]
    assert groups["corpus:liang2023"]["same_texts"] and "same 311" in groups["corpus:liang2023"]["note"]
    rows = {(r["detector"], r["group"]): r for r in res["table1"]}
    assert len(rows) == len(res["table1"]) == 9
    zl, zf = rows[("ZipPy (brotli)", "corpus:liang2023")], rows[("ZipPy (brotli)", "corpus:fastdetectgpt")]
    assert (zl["human_n"], zl["ai_n"]) == (249, 62) and zl["edited_n"] == 179
    assert zf["human_n"] + zf["ai_n"] == 120 - zf["excluded_n"]
    # the Liang detectors' rows count the Liang texts only: the fast-detect-gpt texts are another table
    assert all(rows[(d, "corpus:liang2023")]["excluded"] == {} for d in LIANG)
    for md in (demo_style["scoped_md"],):
        assert "## Table 1: corpus fastdetectgpt" in md and "## Table 1: corpus liang2023" in md
    assert "Table 1: corpus liang2023" in demo_style["scoped_term"]


def test_agreement_counts_the_detectors_the_protocol_names(demo_style, liang_dir):
    """TOEFL_real_91: the paper's 89 of 91 flagged by at least one and 18 by all seven. ZipPy
    scored the essays too, but the protocol names the seven for liang2023."""
    flags = [_raw(liang_dir, TOEFL, d) for d in LIANG]
    assert {len(f) for f in flags} == {91} and not any(x is None for f in flags for x in f)
    by_any = sum(any(f[i] for f in flags) for i in range(91))
    by_all = sum(all(f[i] for f in flags) for i in range(91))
    assert (by_any, by_all) == (89, 18)
    res = demo_style["scoped"]
    ag = next(a for a in res["agreement"] if a["subgroup"] == TOEFL and a["label"] == "human")
    assert (ag["n"], ag["flagged_by_any"], ag["flagged_by_all"], ag["n_detectors"]) == (91, by_any, by_all, 7)
    assert ag["detectors"] == LIANG and ag["group"] == "corpus:liang2023"
    g = next(g for g in res["table1_groups"] if g["id"] == "corpus:liang2023")
    assert g["agreement_detectors"] == LIANG and "names" in g["agreement_rule"]
    # the fast-detect-gpt table names no detector: its agreement counts all of its detectors
    fdg = [a for a in res["agreement"] if a["group"] == "corpus:fastdetectgpt"]
    assert fdg and all(a["detectors"] == ["ZipPy (brotli)"] for a in fdg)
    # without `corpora`, every detector of the table takes part: ZipPy is an eighth
    un = demo_style["unscoped"]
    ag8 = next(a for a in un["agreement"] if a["subgroup"] == TOEFL and a["label"] == "human")
    assert ag8["n_detectors"] == 8 and "ZipPy (brotli)" in ag8["detectors"]


def test_toefl_vs_us_fpr_gap_excludes_zero_for_every_liang_detector(demo_style, liang_dir):
    """Issue 14 acceptance: the FPR gap per detector, with the Newcombe hybrid interval and
    Fisher's test, recomputed from the raw files; all seven of the paper's gaps are large."""
    res = demo_style["scoped"]
    gaps = {r["detector"]: r for r in res["gaps"]}
    assert set(gaps) == set(LIANG) | {"ZipPy (brotli)"}
    for det in LIANG:
        a = [x for x in _raw(liang_dir, TOEFL, det) if x is not None]
        b = [x for x in _raw(liang_dir, US, det) if x is not None]
        ka, na, kb, nb = sum(a), len(a), sum(b), len(b)
        r = gaps[det]
        assert (r["k_a"], r["n_a"], r["k_b"], r["n_b"]) == (ka, na, kb, nb)
        lo, hi = confint_proportions_2indep(ka, na, kb, nb, method="newcomb", compare="diff")
        assert r["estimate"] == pytest.approx(ka / na - kb / nb)
        assert r["ci95"] == pytest.approx([lo, hi], abs=1e-9)
        assert r["p_value"] == pytest.approx(fisher_exact([[ka, na - ka], [kb, nb - kb]])[1], rel=1e-9)
        assert r["ci95"][0] > 0.2, det  # the interval excludes 0 by 20 points or more
        assert r["p_adjusted"] <= 0.05
    assert res["corrections"]["families"][1]["size"] == 8
    assert "Subgroup gaps" in demo_style["scoped_md"] and "non-native (TOEFL) − native (US 8th grade)" in \
        demo_style["scoped_term"]


def test_commit_warns_when_the_corpus_is_too_small_for_the_declared_gap(demo_style):
    """91 and 88 essays detect FPR gaps of about 13 points (from 5%) with 80% power, not 10."""
    out = demo_style["scoped_commit"]
    assert "committed" in out
    warn = [x for x in out.splitlines() if x.startswith("warning:")]
    assert len(warn) == 2, warn
    # the fast-detect-gpt corpus (its own table and comparisons) has 60 human texts
    assert warn[0].startswith("warning: corpus fastdetectgpt: 60 human texts: a 5% FPR would carry a 95% interval")
    assert "gap subgroup non-native (TOEFL) vs native (US 8th grade)" in warn[1]
    assert "with 91 and 88 human texts, only gaps of 13" in warn[1]


def test_comparisons_follow_the_groups_and_tiers_claim_only_supported_orderings(demo_style):
    res = demo_style["scoped"]
    rows = res["comparisons"]
    assert rows and {r["slice"].split(" · ")[0] for r in rows} == {"corpus:liang2023"}  # ZipPy is alone on fdg
    fam = res["corrections"]["families"][0]
    assert fam["size"] == sum(r["p_value"] is not None for r in rows)
    alpha = res["corrections"]["alpha"]
    for t in res["tiers"]:
        tiers = [x["detectors"] for x in t["tiers"]]
        for i, upper in enumerate(tiers):
            for lower in tiers[i + 1:]:
                for u in upper:
                    for lo in lower:
                        r = next(r for r in rows if r["slice"] == t["slice"] and r["metric"] == t["metric"]
                                 and {r["a"], r["b"]} == {u, lo})
                        assert r["p_adjusted"] <= alpha
                        sign = 1 if r["a"] == u else -1
                        assert sign * r["estimate"] * (1 if t["better"] == "higher" else -1) > 0
    assert "Which differences are real" in demo_style["scoped_md"]


# -- fast-detect-gpt with two attacks and two ZipPy engines -------------------------------------


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    pytest.importorskip("zippy.zippy")
    root = tmp_path_factory.mktemp("attacked")
    ws = str(root / "ws")
    examples = Path(__file__).resolve().parents[2] / "examples" / "fastdetectgpt"
    cli("import", "fastdetectgpt", str(examples), "--workspace", ws)
    assert "derived 120 document(s)" in cli("attack", "homoglyph", "--workspace", ws, "--seed", "1")
    assert "derived 60 document(s)" in cli("attack", "zero_width_space", "--workspace", ws, "--seed", "2",
                                           "--label", "ai")
    p = root / "p.toml"
    p.write_text('[protocol]\nname = "fdg-attacks"\ntag = "FDG-ATTACKS"\n[tables]\nslices = ["subgroup", "arm"]\n'
                 '[comparisons]\nmetrics = ["auroc", "fpr", "catch_rate"]\n'
                 + ZIPPY.format(label="ZipPy (brotli)", engine="brotli")
                 + ZIPPY.format(label="ZipPy (zlib)", engine="zlib"), encoding="utf-8")
    cli("protocol", "commit", str(p), "--workspace", ws)
    term = cli("evaluate", "--workspace", ws, "-p", str(p), "--json", str(root / "r.json"), "--out", str(root / "o"))
    from veribench.store import Workspace

    with Workspace(ws) as w:
        docs = w.query("SELECT doc_id, label, subgroup, json_extract_string(tags, '$.derivation'), "
                       "json_extract_string(tags, '$.attack'), json_extract_string(provenance, '$.source_id') "
                       "FROM documents")
        scores = w.query("SELECT u.doc_id, json_extract_string(s.settings, '$.engine'), c.status, c.raw "
                         "FROM submissions u JOIN specs s ON s.spec_hash = u.spec_hash "
                         "JOIN scores c ON c.spec_hash = u.spec_hash AND c.text_sha256 = u.submitted_sha256")
    return {"res": json.loads((root / "r.json").read_text()), "term": term, "docs": docs, "scores": scores,
            "md": (root / "o" / "tables.md").read_text()}


def _plain(attacked):
    docs = {d[0]: {"label": d[1], "subgroup": d[2], "derivation": d[3], "attack": d[4], "source": d[5]}
            for d in attacked["docs"]}
    raw = {}
    for doc_id, engine, status, v in attacked["scores"]:
        if status == "ok" and v is not None:
            raw[(f"ZipPy ({engine})", doc_id)] = v
    return docs, raw


def test_robustness_rows_equal_a_plain_computation(attacked):
    docs, raw = _plain(attacked)
    rows = attacked["res"]["robustness"]
    assert {(r["detector"], r["attack"], r["metric"]) for r in rows} == {
        (d, a, m) for d in ("ZipPy (brotli)", "ZipPy (zlib)")
        for a, m in (("homoglyph", "catch_rate"), ("homoglyph", "fpr"), ("zero_width_space", "catch_rate"))}
    for r in rows:
        lab = "ai" if r["metric"] == "catch_rate" else "human"
        derived = [i for i, d in docs.items() if d["attack"] == r["attack"] and d["label"] == lab]
        pairs = [(i, docs[i]["source"]) for i in derived
                 if (r["detector"], i) in raw and (r["detector"], docs[i]["source"]) in raw]
        fa = [raw[(r["detector"], i)] >= 0 for i, _ in pairs]
        fs = [raw[(r["detector"], s)] >= 0 for _, s in pairs]
        n = len(pairs)
        assert (r["n_derived"], r["n_pairs"]) == (len(derived), n) and n >= 55
        assert (r["attacked"]["k"], r["source"]["k"]) == (sum(fa), sum(fs))
        for side, k in (("attacked", sum(fa)), ("source", sum(fs))):
            lo, hi = proportion_confint(k, n, method="wilson")
            assert r[side]["ci95"] == pytest.approx([0.0 if k == 0 else lo, 1.0 if k == n else hi], abs=1e-12)
        both = sum(x and y for x, y in zip(fa, fs))
        a_only = sum(x and not y for x, y in zip(fa, fs))
        b_only = sum(y and not x for x, y in zip(fa, fs))
        theta, lo, hi = ref_newcombe_paired(both, a_only, b_only, n - both - a_only - b_only)
        d = r["difference"]
        assert d["estimate"] == pytest.approx((sum(fa) - sum(fs)) / n) == pytest.approx(theta)
        assert d["ci95"] == pytest.approx([lo, hi], abs=1e-9)
        if a_only + b_only:
            assert d["p_value"] == pytest.approx(mcnemar([[0, a_only], [b_only, 0]], exact=True).pvalue)
        else:
            assert d["p_value"] is None and "no discordant pairs" in d["reason"]
        assert d["test"].startswith("McNemar exact") and d["interval"].startswith("Newcombe 1998 method 10")
    # RAID's homoglyph attack breaks ZipPy's compression signal on the AI texts
    drop = next(r for r in rows if (r["detector"], r["attack"], r["metric"]) == ("ZipPy (zlib)", "homoglyph",
                                                                              "catch_rate"))
    assert drop["difference"]["ci95"][1] < 0
    assert "Robustness: each detector on derived texts" in attacked["term"]
    assert "zero_width_space" in attacked["term"] and "| homoglyph (seed 1) |" in attacked["md"]


def test_attacked_texts_never_enter_the_headline_rates(attacked):
    docs, raw = _plain(attacked)
    res = attacked["res"]
    for r in res["table1"]:
        own = [i for i, d in docs.items() if d["derivation"] is None and (r["detector"], i) in raw]
        assert r["human_n"] == sum(docs[i]["label"] == "human" for i in own)
        assert r["ai_n"] == sum(docs[i]["label"] == "ai" for i in own)
        assert r["false_positives"] == sum(raw[(r["detector"], i)] >= 0 for i in own if docs[i]["label"] == "human")
    # the attack is a Table 2 slice (added because derived texts exist), of derived texts only
    assert res["run"]["slices"]["added"] == ["tag:attack"]
    t2 = {(r["detector"], r["slice"]): r for r in res["table2"] if r["slice_type"] == "tag:attack"}
    assert set(t2) == {(d, a) for d in ("ZipPy (brotli)", "ZipPy (zlib)") for a in ("homoglyph", "zero_width_space")}
    h = t2[("ZipPy (zlib)", "homoglyph")]
    derived_h = [i for i, d in docs.items() if d["attack"] == "homoglyph" and d["label"] == "human"
                 and ("ZipPy (zlib)", i) in raw]
    assert h["human_n"] == len(derived_h) and "derived texts" in h["members"]


def test_pairwise_auroc_on_the_fast_detect_gpt_slice_and_threshold_intervals(attacked):
    docs, raw = _plain(attacked)
    res = attacked["res"]
    auc = [r for r in res["comparisons"] if r["metric"] == "auroc"]
    subsets = {r["slice"] for r in auc}
    assert "all" in subsets and sum(s.startswith("subgroup=") for s in subsets) == 5
    r = next(r for r in auc if r["slice"] == "all")
    both = [i for i, d in docs.items() if d["derivation"] is None and ("ZipPy (brotli)", i) in raw
            and ("ZipPy (zlib)", i) in raw]
    y = [1 if docs[i]["label"] == "ai" else 0 for i in both]
    want = roc_auc_score(y, [raw[("ZipPy (brotli)", i)] for i in both]) - \
        roc_auc_score(y, [raw[("ZipPy (zlib)", i)] for i in both])
    assert r["n"] == len(both) and r["estimate"] == pytest.approx(want)
    assert r["test"].startswith("paired DeLong") and r["ci95"][0] <= r["estimate"] <= r["ci95"][1]
    assert {s["slice"] for s in res["significance"]} == subsets
    assert "Which differences are real" in attacked["term"] and "all · AUROC" in attacked["md"]
    # TPR at a fixed FPR carries the threshold-refitting bootstrap interval, seed and count recorded
    assert res["run"]["tpr_ci"]["n_boot"] == 2000 and res["run"]["tpr_ci"]["seed"] == 0
    for row in res["table1"]:
        blk = row["tpr_at_fpr_5"]
        assert blk["ci95"][0] <= blk["tpr"] <= blk["ci95"][1] and blk["ci_method"].startswith("stratified")
    json.dumps(res, allow_nan=False)
    assert np.isfinite([r["estimate"] for r in res["comparisons"] if r["estimate"] is not None]).all()
