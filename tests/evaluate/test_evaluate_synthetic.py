"""The evaluation layer against independent references (scikit-learn, statsmodels, plain counts)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from statsmodels.stats.proportion import proportion_confint

from veribench.commit import commit
from veribench.evaluate import evaluate_workspace
from veribench.evaluate.tables import markdown, write_outputs
from veribench.hashing import text_sha256
from veribench.protocol.model import load_protocol
from veribench.records import ScoreResult
from veribench.spec import Spec
from veribench.store import writes


def _fill(ws, n=300, seed=1):
    rng = np.random.default_rng(seed)
    labels = rng.choice(["human", "ai", "ai-edited-human", "mixed"], size=n, p=[0.45, 0.4, 0.1, 0.05])
    groups = rng.choice(["g1", "g2", "g3"], size=n)
    writer = rng.choice(["native", "non-native"], size=n)
    rows = []
    for i in range(n):
        text = f"document number {i} " + "x" * int(rng.integers(1, 50))
        rows.append([f"d{i:04d}", "synth", text, text_sha256(text), labels[i], "A" if labels[i] == "human" else "C",
                     "essay", groups[i], json.dumps({"writer": writer[i]}), f"pair{i // 2}", None, None, None])
    ws.con.executemany("INSERT INTO documents VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    y = np.array([1 if lab in ("ai", "ai-edited-human", "mixed") else 0 for lab in labels])
    p1 = np.clip(rng.normal(0.35 + 0.3 * y, 0.2), 0, 1)
    raw2 = rng.normal(1.0 * y, 1.0)
    s1, s2 = Spec("detector", "DetA", "v1", {}), Spec("detector", "DetB", "v2", {})
    items1, items2, links = [], [], []
    for i, r in enumerate(rows):
        sha = r[3]
        links.append((r[0], sha))
        items1.append((sha, ScoreResult(raw=float(p1[i]), ai_probability=float(p1[i]))))
        st = "ok" if i % 37 else "too_short"
        items2.append((sha, ScoreResult(status=st, raw=float(raw2[i]) if st == "ok" else None, scale="stat")))
    writes.put_scores(ws, s1, items1, links=links)
    writes.put_scores(ws, s2, items2, links=links)
    return rows, labels, groups, p1, raw2


def test_default_rules_match_independent_counts(workspace):
    rows, labels, groups, p1, raw2 = _fill(workspace)
    res = evaluate_workspace(workspace)
    t1 = {r["detector"]: r for r in res["table1"]}
    a = t1["DetA"]
    hum, ai = labels == "human", labels == "ai"
    fp, tp = int((p1[hum] > 0.5).sum()), int((p1[ai] > 0.5).sum())
    assert (a["human_n"], a["false_positives"], a["ai_n"], a["detections"]) == (hum.sum(), fp, ai.sum(), tp)
    lo, hi = proportion_confint(fp, hum.sum(), method="wilson")
    assert a["fpr_ci95"] == pytest.approx([lo, hi], abs=1e-12)
    sel = hum | ai
    assert a["auroc"] == pytest.approx(roc_auc_score(ai[sel], p1[sel]), abs=1e-12)
    assert a["balanced_accuracy"] == pytest.approx((tp / ai.sum() + 1 - fp / hum.sum()) / 2)
    # Side labels never enter headline rates.
    ed = labels == "ai-edited-human"
    assert a["edited_n"] == ed.sum() and a["edited_flagged"] == int((p1[ed] > 0.5).sum())
    # DetB has no probability: no decision, but AUROC on the raw statistic; failures excluded.
    b = t1["DetB"]
    ok = np.array([i % 37 != 0 for i in range(len(rows))])
    sel = (hum | ai) & ok
    assert b["auroc"] == pytest.approx(roc_auc_score(ai[sel], raw2[sel]), abs=1e-12)
    # No decision rule: the counts are the texts it scored, the rates null with the reason (never n = 0).
    assert b["human_n"] == int((hum & ok).sum()) and b["ai_n"] == int((ai & ok).sum())
    assert b["fpr"] is None and b["fpr_reason"] == "no decision rule" and b["false_positives"] is None
    assert b["catch_rate"] is None and b["balanced_accuracy_reason"] == "no decision rule"
    assert b["excluded"] == {"too_short": int(((hum | ai) & ~ok).sum())}
    det_b = next(d for d in res["detectors"] if d["detector"] == "DetB")
    assert det_b["status_counts"]["too_short"] == sum(1 for i in range(len(rows)) if i % 37 == 0)
    # Rates per subgroup match plain counts, and agreement counts match.
    for r in res["rates"]:
        if r["detector"] == "DetA" and r["subgroup"] == "g2" and r["label"] == "human":
            m = (groups == "g2") & hum
            assert (r["n"], r["flagged"]) == (m.sum(), int((p1[m] > 0.5).sum()))
    json.dumps(res, allow_nan=False)  # no NaN anywhere


def test_protocol_fitted_threshold_and_split(workspace, tmp_path):
    rows, labels, groups, p1, raw2 = _fill(workspace, n=400, seed=3)
    f = tmp_path / "p.toml"
    f.write_text("""
[protocol]
name = "synthetic"
tag = "T-1"
[split]
rule = "hash"
[tables]
slices = ["subgroup", "tag:writer"]
[[detectors]]
name = "DetB"
rule = { fit = "best_balanced_accuracy" }
[[detectors]]
name = "DetA"
rule = { field = "ai_probability", op = ">=", threshold = 0.6 }
""")
    proto = load_protocol(f)
    with pytest.raises(Exception, match="not committed"):
        evaluate_workspace(workspace, proto)
    commit(workspace, f)
    res = evaluate_workspace(workspace, proto)
    assert res["run"]["protocol"]["hash"] == proto.hash
    sp = res["run"]["split"]
    assert sp["calibration_n"] + sp["test_n"] == len(rows) and sp["calibration_n"] > 0
    det_b = next(d for d in res["detectors"] if d["detector"] == "DetB")
    assert det_b["rule"]["threshold"] is not None and "fitted" in det_b["rule"]["source"]
    slices = {(r["slice_type"], r["slice"]) for r in res["table2"]}
    assert ("tag:writer", "non-native") in slices
    a = next(r for r in res["table1"] if r["detector"] == "DetA")
    assert a["human_n"] + a["ai_n"] < int(((labels == "human") | (labels == "ai")).sum())  # test split only
    out = write_outputs(res, tmp_path / "out", workspace)
    assert (tmp_path / "out" / "raw_scores.parquet").stat().st_size > 0
    assert "Table 1" in markdown(res) and out["html"] == "index.html"
