"""Issue #2 acceptance on the real Liang et al. 2023 data, through the CLI.

Every number is checked against an independent count taken straight from the raw JSON
files (not through veribench), statsmodels' Wilson interval and scikit-learn's AUROC.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from statsmodels.stats.proportion import proportion_confint
from typer.testing import CliRunner

from veribench.cli.main import app

DETECTORS = ["GPTZero", "OriginalityAI", "ZeroGPT", "Crossplag", "HFOpenAI", "Quil", "Sapling"]


def _load(p: Path):
    return json.loads(re.sub(r"\bNaN\b", "null", p.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def liang_run(tmp_path_factory, liang_dir):
    ws = tmp_path_factory.mktemp("ws")
    out = ws / "out.json"
    r = CliRunner().invoke(app, ["import", "liang2023", str(liang_dir), "--workspace", str(ws)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["evaluate", "--workspace", str(ws), "--json", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    return json.loads(out.read_text())


def test_toefl_published_figures(liang_run, liang_dir):
    rates = [r for r in liang_run["rates"] if r["subgroup"] == "TOEFL_real_91" and r["label"] == "human"]
    assert sorted(r["detector"] for r in rates) == sorted(DETECTORS)
    assert all(r["n"] == 91 for r in rates)
    mean_fpr = sum(r["rate"] for r in rates) / len(rates)
    assert round(100 * mean_fpr, 2) == 61.22
    ag = next(a for a in liang_run["agreement"] if a["subgroup"] == "TOEFL_real_91")
    assert (ag["n"], ag["flagged_by_any"], ag["flagged_by_all"]) == (91, 89, 18)


def test_every_rate_matches_an_independent_count(liang_run, liang_dir):
    root = liang_dir
    by_key = {(r["detector"], r["subgroup"], r["label"]): r for r in liang_run["rates"]}
    checked = 0
    for top in ("Human_Data", "GPT_Data"):
        for set_dir in sorted((root / top).iterdir()):
            kind = json.loads((set_dir / "name.json").read_text())["kind"]
            label = "human" if kind == "Human-Written" else ("ai-edited-human" if top == "Human_Data" else "ai")
            for det in DETECTORS:
                f = set_dir / f"{det}.json"
                if not f.exists():
                    continue
                scores = [rec.get("score") for rec in _load(f)]
                finite = [s for s in scores if isinstance(s, (int, float)) and math.isfinite(s)]
                k = sum(s > 0.5 for s in finite)
                row = by_key[(det, set_dir.name, label)]
                assert (row["n"], row["flagged"]) == (len(finite), k), (det, set_dir.name)
                lo, hi = proportion_confint(k, len(finite), method="wilson")
                assert row["ci95"][0] == pytest.approx(0.0 if k == 0 else lo, abs=1e-12)
                assert row["ci95"][1] == pytest.approx(1.0 if k == len(finite) else hi, abs=1e-12)
                checked += 1
    assert checked >= 40


def test_auroc_matches_sklearn(liang_run, liang_dir):
    root = liang_dir
    for det in DETECTORS:
        y, s = [], []
        for top in ("Human_Data", "GPT_Data"):
            for set_dir in sorted((root / top).iterdir()):
                kind = json.loads((set_dir / "name.json").read_text())["kind"]
                if top == "Human_Data" and kind != "Human-Written":
                    continue  # ai-edited-human: never in the headline AUROC
                f = set_dir / f"{det}.json"
                if not f.exists():
                    continue
                for rec in _load(f):
                    v = rec.get("score")
                    if isinstance(v, (int, float)) and math.isfinite(v):
                        y.append(int(top == "GPT_Data"))
                        s.append(float(v))
        row = next(r for r in liang_run["table1"] if r["detector"] == det)
        assert row["auroc"] == pytest.approx(roc_auc_score(np.array(y), np.array(s)), abs=1e-9), det
        assert row["human_n"] == len(y) - sum(y) and row["ai_n"] == sum(y)
        assert row["auroc_ci95"][0] <= row["auroc"] <= row["auroc_ci95"][1]
