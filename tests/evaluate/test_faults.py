"""Each fault class of issue 10 in the evaluation, through the CLI where a user meets it.

Undefined rules are refused in every output (terminal, Markdown, CSV, JSON, report site);
agreement counts only texts every detector scored; TPR at a fixed FPR takes its threshold
from the calibration split; ranking metrics exist per slice without a rule; excluded
texts are counted; side arms and derived texts stay on side rows; evaluate never pays;
a run's rows export so that its tables recompute from the file; one scale per detector.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from typer.testing import CliRunner

from veribench.cli.main import app
from veribench.hashing import text_sha256
from veribench.records import ScoreResult
from veribench.spec import Spec
from veribench.store import Workspace, writes


def run(*args: str, code: int = 0):
    r = CliRunner().invoke(app, list(args))
    assert r.exit_code == code, r.output
    return r


def put_docs(ws: Workspace, docs: list[dict]) -> dict[str, str]:
    """Insert documents (id, label, arm, subgroup, group_key, tags, corpus); returns id -> text sha."""
    rows, shas = [], {}
    for d in docs:
        text = d.get("text") or f"An invented text for document {d['id']} written for this test."
        sha = text_sha256(text)
        shas[d["id"]] = sha
        rows.append([d["id"], d.get("corpus", "synth"), text, sha, d["label"], d.get("arm"), "essay", d.get("subgroup"),
                     json.dumps(d.get("tags") or {}), d.get("group_key"), None, None, None])
    ws.con.executemany("INSERT INTO documents VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    return shas


def put(ws: Workspace, name: str, shas: dict[str, str], values: dict[str, ScoreResult], version: str = "1") -> Spec:
    spec = Spec("detector", name, version, {})
    writes.put_scores(ws, spec, [(shas[i], r) for i, r in values.items()], links=[(i, shas[i]) for i in values])
    return spec


def committed_run(workspace: Workspace, tmp_path: Path, toml: str) -> dict:
    """Write ``toml`` as a protocol, commit it and evaluate the workspace under it (no scoring)."""
    from veribench.commit import commit
    from veribench.evaluate import evaluate_workspace
    from veribench.protocol.model import load_protocol

    f = tmp_path / "p.toml"
    f.write_text(toml)
    commit(workspace, f)
    return evaluate_workspace(workspace, load_protocol(f), allow_scoring=False)


def stat(v: float, scale: str = "stat", direction: str = "higher_ai") -> ScoreResult:
    return ScoreResult(raw=v, scale=scale, direction=direction)


def prob(v: float) -> ScoreResult:
    return ScoreResult(raw=v, ai_probability=v)


def synthetic(n: int = 80, seed: int = 0, **extra) -> list[dict]:
    rng = np.random.default_rng(seed)
    docs = []
    for i in range(n):
        lab = "human" if i % 2 == 0 else "ai"
        docs.append({"id": f"d{i:03d}", "label": lab, "arm": "A" if lab == "human" else "C",
                     "subgroup": f"s{i % 3}", "group_key": f"g{i // 2}",
                     "tags": {"writer": "native" if rng.random() < 0.5 else "non-native"}, **extra})
    return docs


# --------------------------------------------------------------------------- undefined rules
def test_no_rule_is_null_with_reason_in_every_output(tmp_path, ):
    """A statistic without a rule: rates null with "no decision rule" in JSON, CSV, Markdown,
    terminal and the report site; its counts and ranking metrics per slice are reported."""
    from veribench.report.site import build_report

    sys.path.insert(0, str(Path(__file__).parents[1] / "report"))
    from report_pagecheck import check_page

    ws_dir = tmp_path / "ws"
    docs = synthetic() + [{"id": f"c2-{i}", "label": "ai", "arm": "C2"} for i in range(5)]
    rng = np.random.default_rng(1)
    with Workspace(ws_dir) as ws:
        shas = put_docs(ws, docs)
        put(ws, "statistic", shas, {d["id"]: stat(float(rng.normal(d["label"] == "ai"))) for d in docs})
        put(ws, "prob", shas, {d["id"]: prob(float(rng.uniform())) for d in docs})
    out = tmp_path / "out"
    r = run("evaluate", "--workspace", str(ws_dir), "--out", str(out), "--no-score")
    assert "— (no decision rule)" in r.output
    res = json.loads((out / "results.json").read_text())
    t1 = {x["detector"]: x for x in res["table1"]}
    s = t1["statistic"]
    assert (s["human_n"], s["ai_n"]) == (40, 40)  # never n = 0
    for k in ("fpr", "catch_rate", "balanced_accuracy"):
        assert s[k] is None and s[f"{k}_reason"] == "no decision rule"
    assert s["false_positives"] is None and s["detections"] is None and s["auroc"] is not None
    # ranking metrics per slice for the detector without a rule
    t2 = [x for x in res["table2"] if x["detector"] == "statistic"]
    assert t2 and all(x["auroc"] is not None and x["human_n"] > 0 for x in t2 if x["slice_type"] == "subgroup")
    md = (out / "tables.md").read_text()
    assert "| statistic |" in md and "— (no decision rule)" in md
    with open(out / "table1.csv", newline="") as f:
        row = next(x for x in csv.DictReader(f) if x["detector"] == "statistic")
    assert row["fpr"] == "" and row["fpr_reason"] == "no decision rule" and row["false_positives"] == ""
    site = tmp_path / "site"
    build_report([ws_dir], site)
    page = site / "run-adhoc.html"
    html = page.read_text()
    assert "no decision rule" in html and "Side rows" in html and "no hazard record on these scores" in html
    assert json.loads((site / "data" / "run-adhoc.json").read_text())["side_rows"][0]["group"] == "arm=C2"
    check_page(page, site / "data" / "run-adhoc.json")


def test_fitted_rule_without_split_is_refused_at_commit(tmp_path):
    ws = tmp_path / "ws"
    f = tmp_path / "p.toml"
    f.write_text('[protocol]\nname = "p"\n[[detectors]]\nname = "zippy"\nrule = { fit = "best_balanced_accuracy" }\n')
    r = run("protocol", "commit", str(f), "--workspace", str(ws), code=1)
    assert "detectors[0].rule.fit" in r.output and "calibration split" in r.output


def test_fitted_rule_on_a_split_without_ai_texts_is_null_with_reason(workspace, tmp_path):
    docs = synthetic(40)
    # the split applies only to corpus "cal", which holds human texts only
    for d in docs[:10]:
        d.update(corpus="cal", label="human", arm="A")
    shas = put_docs(workspace, docs)
    rng = np.random.default_rng(2)
    put(workspace, "stat", shas, {d["id"]: stat(float(rng.normal())) for d in docs})
    res = committed_run(workspace, tmp_path, '[protocol]\nname = "p"\n[split]\nrule = "hash"\nevery = 2\n'
                        'corpora = ["cal"]\n[[detectors]]\nname = "stat"\nrule = { fit = "best_balanced_accuracy" }\n')
    t = res["table1"][0]
    assert t["fpr"] is None and t["catch_rate"] is None
    assert t["fpr_reason"].startswith("threshold not fitted: the calibration split holds no AI texts")
    assert res["detectors"][0]["rule"]["defined"] is False and res["detectors"][0]["rule"]["threshold"] is None
    assert "oriented score > None" not in json.dumps(res)


# --------------------------------------------------------------------------- agreement
def test_agreement_counts_only_texts_every_detector_scored(workspace):
    from veribench.evaluate import evaluate_workspace

    docs = [{"id": f"h{i}", "label": "human", "arm": "A"} for i in range(6)]
    shas = put_docs(workspace, docs)
    # A flags every text; B scores only h0..h2 (flags h0); B never saw h3..h5.
    put(workspace, "A", shas, {d["id"]: prob(0.9) for d in docs})
    put(workspace, "B", shas, {"h0": prob(0.9), "h1": prob(0.1), "h2": prob(0.2)})
    res = evaluate_workspace(workspace)
    a = next(x for x in res["agreement"] if x["slice_type"] == "all" and x["label"] == "human")
    assert a["detectors"] == ["A", "B"] and a["n_detectors"] == 2
    assert (a["n"], a["n_partial"], a["flagged_by_any"], a["flagged_by_all"]) == (3, 3, 3, 1)


# --------------------------------------------------------------------------- operating points
def test_tpr_at_fpr_threshold_from_calibration_humans(workspace, tmp_path):
    from veribench.commit import commit
    from veribench.evaluate import evaluate_workspace
    from veribench.protocol.model import load_protocol
    from veribench.protocol.split import calibration_mask

    docs = synthetic(200, seed=5)
    shas = put_docs(workspace, docs)
    rng = np.random.default_rng(3)
    vals = {d["id"]: float(np.clip(rng.normal(0.35 + 0.3 * (d["label"] == "ai"), 0.2), 0, 1)) for d in docs}
    put(workspace, "P", shas, {i: prob(v) for i, v in vals.items()})
    f = tmp_path / "p.toml"
    f.write_text('[protocol]\nname = "p"\n[split]\nrule = "hash"\nsalt = "x"\n[metrics]\ntpr_at_fpr = [0.05]\n'
                 '[[detectors]]\nname = "P"\nrule = { field = "ai_probability", op = ">", threshold = 0.5 }\n')
    commit(workspace, f)
    res = evaluate_workspace(workspace, load_protocol(f), allow_scoring=False)
    ids = [d["id"] for d in docs]
    calib = calibration_mask(ids, None, [d["group_key"] for d in docs], every=5, salt="x")
    cal_h = sorted(vals[i] for i, c, d in zip(ids, calib, docs) if c and d["label"] == "human")
    n = len(cal_h)
    thr = cal_h[n - 1 - math.floor(0.05 * n)]  # exact quantile, independently
    test_h = [vals[i] for i, c, d in zip(ids, calib, docs) if not c and d["label"] == "human"]
    test_a = [vals[i] for i, c, d in zip(ids, calib, docs) if not c and d["label"] == "ai"]
    tp = res["table1"][0]["tpr_at_fpr_5"]
    assert tp["threshold_corpus"] == ["synth"]  # put_docs' corpus: the corpus that set the threshold is named
    assert tp["threshold_source"] == f"calibration split: {n} human texts of corpus synth"
    assert tp["threshold_n_human"] == n
    assert tp["threshold"] == thr
    assert tp["tpr"] == pytest.approx(sum(v > thr for v in test_a) / len(test_a))
    assert tp["achieved_fpr"] == pytest.approx(sum(v > thr for v in test_h) / len(test_h))
    sp = res["run"]["split"]
    assert sp["groups_on_both_sides"] == 0 and sp["achieved_human_share"] == pytest.approx(n / 100)
    assert res["detectors"][0]["operating_point"].startswith("calibration split")


def test_in_sample_operating_point_is_labelled_and_warned(workspace):
    from veribench.evaluate import evaluate_workspace
    from veribench.evaluate.tables import markdown

    docs = [{"id": f"h{i}", "label": "human", "arm": "A"} for i in range(20)] + \
           [{"id": f"a{i}", "label": "ai", "arm": "C"} for i in range(20)]
    shas = put_docs(workspace, docs)
    put(workspace, "P", shas, {d["id"]: prob(0.1 + 0.02 * int(d["id"][1:]) + (0.4 if d["label"] == "ai" else 0))
                               for d in docs})
    put(workspace, "Flat", shas, {d["id"]: prob(0.7) for d in docs})
    res = evaluate_workspace(workspace)
    tp = next(r for r in res["table1"] if r["detector"] == "P")["tpr_at_fpr_1"]
    assert tp["threshold_source"] == "in-sample oracle operating point"
    md = markdown(res)
    assert "†" in md and "in-sample oracle operating point" in md
    w = " | ".join(res["warnings"])
    # the warning is the row's own reason (one rule with the grid: null, never 0)
    assert tp["tpr"] is None and tp["ci95"] is None and "1/20 = 0.05 (5.0%)" in tp["reason"]
    assert any(x.startswith("P (") and x.endswith(f"): {tp['reason']}") for x in res["warnings"])
    assert "Flat: a single distinct score (0.7) over 40 texts" in w


def test_targets_that_select_the_same_threshold_say_so_in_the_row(workspace, tmp_path):
    """20 human texts, targets 5% and 6%: both allow f = 1 false positive (floor(0.05 * 20) =
    floor(0.06 * 20) = 1), so both pick the 2nd-largest human score and report the same TPR;
    the rows say why (issue 25)."""
    from veribench.evaluate.tables import markdown

    docs = [{"id": f"h{i}", "label": "human", "arm": "A"} for i in range(20)] + \
           [{"id": f"a{i}", "label": "ai", "arm": "C"} for i in range(20)]
    shas = put_docs(workspace, docs)
    put(workspace, "P", shas, {d["id"]: prob(0.1 + 0.02 * int(d["id"][1:]) + (0.4 if d["label"] == "ai" else 0))
                               for d in docs})
    res = committed_run(workspace, tmp_path, '[protocol]\nname = "p"\n[metrics]\ntpr_at_fpr = [0.05, 0.06]\n'
                        '[[detectors]]\nname = "P"\nrule = { field = "ai_probability", op = ">", threshold = 0.5 }\n')
    row = res["table1"][0]
    a, b = row["tpr_at_fpr_5"], row["tpr_at_fpr_6"]
    h = sorted(0.1 + 0.02 * i for i in range(20))
    thr = h[20 - 1 - 1]  # f = 1: the 2nd-largest human score, independently
    assert a["threshold"] == b["threshold"] == pytest.approx(thr)
    assert a["tpr"] == b["tpr"] == pytest.approx(sum(0.5 + 0.02 * i > thr for i in range(20)) / 20)
    note = "20 human texts set the threshold: the smallest achievable FPR step is 1/20 = 5.0%, so the 5% and 6% " \
           "targets select the same threshold"
    assert a["threshold_note"] == b["threshold_note"] == note
    assert note in markdown(res) and any(note in w for w in res["warnings"])


# --------------------------------------------------------------------------- exclusions and hazards
def test_excluded_texts_are_counted_per_reason(workspace, tmp_path):
    from veribench.evaluate import evaluate_workspace
    from veribench.evaluate.tables import markdown

    docs = synthetic(30)
    shas = put_docs(workspace, docs)
    vals = {}
    for k, d in enumerate(docs):
        if k < 3:
            vals[d["id"]] = ScoreResult.failed("too_short", "below the minimum")
        elif k < 5:
            vals[d["id"]] = ScoreResult.failed("unscorable", "nothing left")
        elif k < 7:
            continue  # never scored
        else:
            vals[d["id"]] = ScoreResult(raw=0.6 if d["label"] == "ai" else 0.4, ai_probability=0.6 if d["label"] == "ai" else 0.4,
                                        detail={"hazards": {"confusables": 3 if k == 8 else 0, "invisible": 2 if k in (8, 9) else 0,
                                                            "degenerate_repetition": k == 10,
                                                            "distinct_word_trigram_ratio": 0.5}})
    put(workspace, "P", shas, vals)
    # a second detector scores every text, so the unscored ones are in the selection
    put(workspace, "Q", shas, {d["id"]: prob(0.5) for d in docs})
    res = evaluate_workspace(workspace)
    t = next(r for r in res["table1"] if r["detector"] == "P")
    assert t["excluded"] == {"not scored": 2, "too_short": 3, "unscorable": 2} and t["excluded_n"] == 7
    assert t["human_n"] + t["ai_n"] == 23  # denominators: texts actually scored
    assert t["hazards"] == {"checked": 23, "confusables": 1, "invisible": 2, "degenerate_repetition": 1}
    q = next(r for r in res["table1"] if r["detector"] == "Q")
    assert q["hazards"] is None and q["hazards_reason"] == "no hazard record on these scores"
    md = markdown(res)
    assert "- P: not scored: 2, too_short: 3, unscorable: 2" in md
    assert "7 (not scored 2, too_short 3, unscorable 2)" in md


# --------------------------------------------------------------------------- roles
def test_side_arms_and_derived_texts_stay_on_side_rows(workspace, tmp_path):
    """C2 texts labelled ``ai`` and attacked texts never enter the headline catch rate."""
    from veribench.evaluate import evaluate_workspace
    from veribench.metrics import auroc

    docs = synthetic(40)
    docs += [{"id": f"c2-{i}", "label": "ai", "arm": "C2"} for i in range(10)]
    docs += [{"id": f"att-{i}", "label": "ai", "arm": "C", "tags": {"derivation": "attack", "attack": "homoglyph"}}
             for i in range(8)]
    docs += [{"id": f"ed-{i}", "label": "ai-edited-human", "arm": "C"} for i in range(5)]
    shas = put_docs(workspace, docs)
    v = {d["id"]: (0.2 if d["label"] == "human" else 0.8) for d in docs}
    v.update({f"c2-{i}": 0.1 for i in range(10)})  # the detector misses every C2 text
    v.update({f"att-{i}": 0.3 + 0.05 * i for i in range(8)})
    put(workspace, "P", shas, {i: prob(x) for i, x in v.items()})
    res = evaluate_workspace(workspace)
    t = res["table1"][0]
    assert (t["ai_n"], t["detections"], t["catch_rate"]) == (20, 20, 1.0)
    assert t["edited_n"] == 5
    side = {r["group"]: r for r in res["side_rows"]}
    assert set(side) == {"arm=C2", "derivation=attack:homoglyph"}
    assert (side["arm=C2"]["ai_n"], side["arm=C2"]["detections"]) == (10, 0)
    att = side["derivation=attack:homoglyph"]
    assert att["auroc_negatives"] == "headline human texts"
    hum = [v[d["id"]] for d in docs if d["id"].startswith("d") and d["label"] == "human"]
    atk = [v[f"att-{i}"] for i in range(8)]
    assert att["auroc"] == pytest.approx(roc_auc_score([0] * len(hum) + [1] * 8, hum + atk))
    # a protocol may give C2 the headline role: then, and only then, it counts
    f = tmp_path / "p.toml"
    f.write_text('[protocol]\nname = "p"\n[arms]\nC2 = { role = "headline" }\n')
    from veribench.commit import commit
    from veribench.protocol.model import load_protocol

    commit(workspace, f)
    res2 = evaluate_workspace(workspace, load_protocol(f), allow_scoring=False)
    assert res2["table1"][0]["ai_n"] == 30 and res2["run"]["arms"] == {"C2": "headline"}
    # the public metric and the table agree on the label convention
    with pytest.raises(ValueError, match="side labels"):
        auroc(["human", "ai-edited-human"], [0.1, 0.9])
    labs = [d["label"] for d in docs if d["id"].startswith("d")]
    assert auroc(labs, [v[d["id"]] for d in docs if d["id"].startswith("d")]) == t["auroc"]


# --------------------------------------------------------------------------- scales
def test_one_scale_per_detector_or_refused(tmp_path):
    ws_dir = tmp_path / "ws"
    docs = synthetic(10)
    with Workspace(ws_dir) as ws:
        shas = put_docs(ws, docs)
        vals = {d["id"]: stat(float(k), scale="score_higher_ai" if k % 2 else "score_higher_human",
                              direction="higher_ai" if k % 2 else "higher_human") for k, d in enumerate(docs)}
        put(ws, "mixed-scales", shas, vals)
    r = run("evaluate", "--workspace", str(ws_dir), "--no-score", "--quiet", code=1)
    assert "mixed-scales" in r.output and "scales" in r.output and "Traceback" not in r.output


def test_probability_scales_rank_on_their_common_probability(workspace):
    from veribench.evaluate import evaluate_workspace

    docs = synthetic(20)
    shas = put_docs(workspace, docs)
    rng = np.random.default_rng(4)
    p = {d["id"]: float(rng.uniform()) for d in docs}
    vals = {}
    for k, d in enumerate(docs):  # ZeroGPT style: some rows as percent AI, others as percent human
        x = p[d["id"]]
        vals[d["id"]] = (ScoreResult(raw=100 * x, scale="ai_percent_0_100", ai_probability=x) if k % 2 else
                         ScoreResult(raw=100 * (1 - x), scale="human_percent_0_100", direction="higher_human",
                                     ai_probability=x))
    put(workspace, "Z", shas, vals)
    res = evaluate_workspace(workspace)
    y = [d["label"] == "ai" for d in docs]
    assert res["table1"][0]["auroc"] == pytest.approx(roc_auc_score(y, [p[d["id"]] for d in docs]))
    assert res["detectors"][0]["ranking_score"]["field"] == "ai_probability"


# --------------------------------------------------------------------------- paid APIs
def test_evaluate_never_pays_without_allow_paid(tmp_path, monkeypatch):
    sys.path.insert(0, str(Path(__file__).parents[1] / "api"))
    from vendor_fakes import FAST, VENDOR_KEYS, FakeVendors

    monkeypatch.setenv("VERIBENCH_SAPLING_API_KEY", VENDOR_KEYS["sapling"])
    srv = FakeVendors()
    try:
        ws = tmp_path / "ws"
        docs = synthetic(6)
        with Workspace(ws) as w:
            put_docs(w, docs)
        settings = ", ".join(f"{k} = {json.dumps(v)}" for k, v in {"base_url": srv.url, **FAST}.items())
        f = tmp_path / "p.toml"
        f.write_text(f'[protocol]\nname = "paid"\n[[detectors]]\nname = "sapling"\nsettings = {{ {settings} }}\n')
        run("protocol", "commit", str(f), "--workspace", str(ws))
        r = run("evaluate", "--workspace", str(ws), "--protocol", str(f), "--quiet", code=1)
        assert "paid API" in r.output and "--allow-paid" in r.output
        assert sum(srv.counter.values()) == 0  # not one call
        r = run("evaluate", "--workspace", str(ws), "--protocol", str(f), "--quiet", "--allow-paid", code=2)
        assert "--max-spend" in r.output and sum(srv.counter.values()) == 0
        words = len("An invented text for document d000 written for this test.".split())
        out = tmp_path / "o.json"
        run("evaluate", "--workspace", str(ws), "--protocol", str(f), "--quiet", "--allow-paid",
            "--max-spend", str(3 * words), "--json", str(out))
        assert sum(srv.counter.values()) == 3  # within the budget, then stopped
        t = json.loads(out.read_text())["table1"][0]
        assert t["excluded"] == {"not scored": 3} and t["human_n"] + t["ai_n"] == 3
        # every score is now stored: a second evaluate calls nothing and needs no flag
        run("evaluate", "--workspace", str(ws), "--protocol", str(f), "--quiet", "--allow-paid",
            "--max-spend", "1000")
        assert sum(srv.counter.values()) == 6
        run("evaluate", "--workspace", str(ws), "--protocol", str(f), "--quiet")
        assert sum(srv.counter.values()) == 6
    finally:
        srv.close()


# --------------------------------------------------------------------------- export by run
def test_export_run_recomputes_table1(tmp_path):
    ws = tmp_path / "ws"
    docs = synthetic(120, seed=9)
    docs += [{"id": f"c2-{i}", "label": "ai", "arm": "C2", "group_key": f"x{i}"} for i in range(6)]
    rng = np.random.default_rng(6)
    with Workspace(ws) as w:
        shas = put_docs(w, docs)
        put(w, "P", shas, {d["id"]: prob(float(np.clip(rng.normal(0.4 + 0.2 * (d["label"] == "ai"), 0.2), 0, 1)))
                           for d in docs})
        put(w, "S", shas, {d["id"]: stat(float(rng.normal(d["label"] == "ai"))) for k, d in enumerate(docs) if k % 7})
    f = tmp_path / "p.toml"
    f.write_text('[protocol]\nname = "x"\ntag = "EXP-1"\n[split]\nrule = "hash"\n'
                 '[[detectors]]\nname = "P"\n'
                 '[[detectors]]\nname = "S"\nrule = { fit = "best_balanced_accuracy" }\n')
    run("protocol", "commit", str(f), "--workspace", str(ws))
    out = tmp_path / "r.json"
    run("evaluate", "--workspace", str(ws), "--protocol", str(f), "--json", str(out), "--quiet")
    res = json.loads(out.read_text())
    csv_path = tmp_path / "rows.csv"
    r = run("export", "scores", "--run", "EXP-1", "--out", str(csv_path), "--workspace", str(ws))
    assert "rows of run EXP-" in r.output
    with open(csv_path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert all(d["rule"]["defined"] for d in res["detectors"])
    for t in res["table1"]:
        mine = [x for x in rows if x["detector"] == t["detector"] and x["split"] == "test" and x["headline"] == "true"]
        hum = [x for x in mine if x["label"] == "human" and x["counted"] == "true"]
        ai = [x for x in mine if x["label"] == "ai" and x["counted"] == "true"]
        assert len(hum) == t["human_n"] and sum(x["flagged"] == "true" for x in hum) == t["false_positives"]
        assert len(ai) == t["ai_n"] and sum(x["flagged"] == "true" for x in ai) == t["detections"]
        ex = [x for x in mine if x["excluded"]]
        assert len(ex) == t["excluded_n"]
        ranked = [x for x in mine if x["label"] in ("human", "ai") and x["ranking_score"]]
        assert t["auroc"] == pytest.approx(roc_auc_score([x["label"] == "ai" for x in ranked],
                                                         [float(x["ranking_score"]) for x in ranked]), abs=1e-12)
        thr = {x["threshold"] for x in mine}
        assert len(thr) == 1  # one rule and threshold per detector, on every row
    assert {x["side_group"] for x in rows if x["doc_id"].startswith("c2-")} == {"arm=C2"}
    run("export", "scores", "--run", "NOPE", "--out", str(csv_path), "--workspace", str(ws), code=1)


def test_hazards_come_from_the_one_reader(workspace, monkeypatch):
    """Table 1's hazard counts come from :func:`veribench.evaluate.run.submission_hazards` (the
    one reader that gives each document the hazards of its own text under canonicalisation)."""
    from veribench.evaluate import evaluate_workspace
    from veribench.evaluate import run as run_mod

    docs = synthetic(10)
    shas = put_docs(workspace, docs)
    put(workspace, "P", shas, {d["id"]: prob(0.4) for d in docs})
    seen = []

    def submission_hazards(ws, spec):
        seen.append(spec.name)
        return {d["id"]: {"confusables": 30 if k < 3 else 0, "invisible": 20 if k == 0 else 0,
                          "degenerate_repetition": k == 9, "distinct_word_trigram_ratio": 0.03}
                for k, d in enumerate(docs)}

    monkeypatch.setattr(run_mod, "submission_hazards", submission_hazards)
    res = evaluate_workspace(workspace)
    assert seen == ["P"]
    assert res["table1"][0]["hazards"] == {"checked": 10, "confusables": 3, "invisible": 1, "degenerate_repetition": 1}


def test_csv_columns_do_not_depend_on_which_rows_are_null(tmp_path):
    """An interval is always two columns (<key>_lo, <key>_hi), at any depth, whether the first
    row's is null or not; no cell holds a Python list; the column order is the same."""
    import csv as _csv

    from veribench.evaluate.tables import write_csv

    a = {"d": "x", "ci95": None, "tpr_at_fpr_5": {"tpr": None, "ci95": None, "reason": "no AI texts"}}
    b = {"d": "y", "ci95": [0.1, 0.2], "tpr_at_fpr_5": {"tpr": 0.5, "ci95": [0.3, 0.6], "reason": None}}
    heads = []
    for rows in ([a, b], [b, a]):
        f = tmp_path / "t.csv"
        write_csv(rows, f)
        got = list(_csv.reader(f.open(encoding="utf-8")))
        heads.append(got[0])
        assert "ci95" not in got[0] and "tpr_at_fpr_5_ci95" not in got[0]
        assert not any(c.startswith("[") for r in got[1:] for c in r)
    assert heads[0] == heads[1] == ["d", "ci95_lo", "ci95_hi", "tpr_at_fpr_5_tpr", "tpr_at_fpr_5_ci95_lo",
                                    "tpr_at_fpr_5_ci95_hi", "tpr_at_fpr_5_reason"]
    write_csv([a], f)  # null in every row: still the same two columns
    assert next(_csv.reader(f.open(encoding="utf-8"))) == heads[0]


def test_an_empty_side_column_shows_its_reason_in_the_terminal_and_markdown():
    """Edited/Mixed flagged with no such texts: a dash with the reason, as in the CSV and JSON."""
    from veribench.evaluate.tables import cell

    row = {"edited_n": 0, "edited_rate": None, "edited_rate_reason": "no ai-edited-human texts",
           "mixed_n": 0, "mixed_rate": None, "mixed_rate_reason": None}
    assert cell(row, "edited_rate") == "— (no ai-edited-human texts)"
    assert cell(row, "mixed_rate") == "— (no mixed texts)"


def test_no_flag_count_is_printed_beside_an_empty_denominator():
    """Table 2's FP / Detected cells: with human n = 0 (or AI n = 0) a dash and the reason,
    never "0" beside "— (no human texts)"."""
    from veribench.evaluate.tables import cell

    row = {"human_n": 0, "false_positives": 0, "fpr": None, "fpr_reason": "no human texts",
           "ai_n": 5, "detections": 2, "catch_rate": 0.4}
    assert cell(row, "false_positives") == "— (no human texts)"
    assert cell(row, "detections") == "2"
