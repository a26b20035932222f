"""No interval of zero width is shown as certain (issue 25, "Zero-width 95% intervals shown
as certain"): where DeLong's variance is 0 or a bootstrap collapses, the interval is null
with its reason (veribench.metrics.intervals), in the metrics, the grid, the tables and a
demo run's every output."""

from __future__ import annotations

import csv
import json
import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score
from typer.testing import CliRunner

from veribench.cli.main import app
from veribench.evaluate import tables
from veribench.evaluate.grid import GridDetector, compute_grid
from veribench.metrics import intervals
from veribench.metrics.bootstrap import bootstrap_ci
from veribench.metrics.grouped import GroupedScores
from veribench.metrics.paired import delong_paired
from veribench.metrics.roc import auroc_ci
from veribench.metrics.threshold_bootstrap import tpr_at_fpr_interval_groups, tpr_at_fpr_interval_scores


def _plain_tpr(h: np.ndarray, a: np.ndarray, target: float) -> float:
    """A plain loop: the smallest human score t with #{h > t} <= floor(target * n), TPR = #{a > t}/n_a."""
    f = min(math.floor(target * h.size + 1e-9), h.size - 1)
    t = sorted(h)[h.size - 1 - f]
    return sum(1 for x in a if x > t) / a.size


def test_delong_at_perfect_separation_and_one_score_gives_no_interval():
    y = np.array([0] * 5 + [1] * 5)
    for s in (np.arange(10.0), np.ones(10)):
        r = auroc_ci(y, s)
        assert r.auc == pytest.approx(roc_auc_score(y, s))
        assert math.isnan(r.lo) and math.isnan(r.hi)
        assert r.reason == intervals.DELONG_ZERO
    g = GroupedScores(np.array([0] * 10 + [1] * 10), np.r_[y, y], np.r_[np.arange(10.0), np.ones(10)]).auroc()
    assert np.isnan(g.lo).all() and np.isnan(g.hi).all()
    assert g.ci_reasons() == [intervals.DELONG_ZERO, intervals.DELONG_ZERO]
    # a proper case keeps its interval
    r = auroc_ci(y, np.array([0, 1, 2, 6, 4, 3, 5, 7, 8, 9.0]))
    assert r.lo < r.auc < r.hi and r.reason is None


def test_a_difference_that_does_not_vary_keeps_its_estimate_with_no_interval():
    y = np.array([0] * 6 + [1] * 6)
    s = np.array([0.1, 0.3, 0.2, 0.5, 0.4, 0.9, 0.8, 0.6, 0.7, 1.0, 0.95, 0.85])
    r = delong_paired(y, s, 2 * s + 1)  # the same ranking: AUROC(a) - AUROC(b) is 0 in every resample
    assert r.estimate == 0.0 and r.lo is None and r.hi is None and r.p_value is None
    assert r.reason.startswith(intervals.NO_VARIATION)
    block = {"estimate": r.estimate, "ci95": None, "reason": r.reason}
    assert tables._diff_text(block, pct=False) == f"+0.000 (no interval: {r.reason})"


def test_a_bootstrap_that_gives_one_value_gives_no_interval():
    h, a = np.arange(1.0, 14.0), np.zeros(9)  # every AI score below every human one: TPR 0 in every resample
    r = tpr_at_fpr_interval_scores(h, a, 0.01, n_boot=200)
    assert r.tpr == _plain_tpr(h, a, 0.01) == 0.0
    assert r.lo is None and r.hi is None and r.interval_reason == intervals.BOOTSTRAP_ONE_VALUE
    g = tpr_at_fpr_interval_groups([h], [a], 0.01, n_boot=200)
    assert g.lo is None and g.interval_reason == intervals.BOOTSTRAP_ONE_VALUE
    b = bootstrap_ci(lambda v: 0.0 * float(np.mean(v)), [np.arange(8.0)], n_boot=50)
    assert math.isnan(b.lo) and math.isnan(b.hi) and b.reason == intervals.BOOTSTRAP_ONE_VALUE
    assert auroc_ci(np.array([0] * 4 + [1] * 4), np.arange(8.0), method="bootstrap", n_boot=50).reason \
        == intervals.BOOTSTRAP_ONE_VALUE


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_property_no_interval_has_zero_width_and_every_null_has_a_reason(data):
    nh, na = data.draw(st.integers(1, 12)), data.draw(st.integers(1, 12))
    levels = data.draw(st.integers(1, 4))  # few distinct scores: ties and perfect separations
    h = np.array(data.draw(st.lists(st.integers(0, levels), min_size=nh, max_size=nh)), float)
    a = np.array(data.draw(st.lists(st.integers(0, levels), min_size=na, max_size=na)), float)
    t = data.draw(st.sampled_from([0.01, 0.05, 0.2]))
    y, s = np.r_[np.zeros(nh), np.ones(na)], np.r_[h, a]
    r = tpr_at_fpr_interval_scores(h, a, t, n_boot=100)
    assert r.tpr == _plain_tpr(h, a, t)
    assert (r.lo is None) == (r.interval_reason is not None)
    assert r.lo is None or r.lo < r.hi
    c = auroc_ci(y, s)
    assert c.auc == pytest.approx(roc_auc_score(y, s))
    assert math.isnan(c.lo) or c.lo < c.hi
    g = GroupedScores(np.zeros(y.size, np.int64), y, s).auroc()
    assert math.isnan(g.lo[0]) == (g.ci_reasons()[0] is not None)
    assert math.isnan(g.lo[0]) or g.lo[0] < g.hi[0]
    grid = compute_grid({"m": np.where(y == 1, "x", "human").astype(object)}, y.astype(np.int64),
                        [GridDetector("d", s)], tags=["m"], n_boot=100)
    for row in grid["rows"]:
        _assert_no_point_intervals(row)


def _assert_no_point_intervals(doc, path="") -> int:
    """Every ``*ci95`` of ``doc`` is null with a reason beside it, or has low < high; returns how many were seen."""
    seen = 0
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k.endswith("ci95") or k in ("ci95_a", "ci95_b"):
                seen += 1
                if v is None:
                    reasons = [doc.get(f"{k}_reason"), doc.get("ci95_reason"), doc.get("reason"),
                               doc.get(k.replace("_ci95", "_reason"))]
                    assert any(reasons), f"{path}/{k}: null interval without a reason"
                else:
                    assert v[0] < v[1], f"{path}/{k}: {v} is a point shown as an interval"
            seen += _assert_no_point_intervals(v, f"{path}/{k}")
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            seen += _assert_no_point_intervals(v, f"{path}[{i}]")
    return seen


@pytest.fixture(scope="module")
def demo_out(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    r = CliRunner().invoke(app, ["demo", "--no-models", "--workspace", str(root / "ws"), "--out", str(root / "out")],
                           env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output[-3000:]
    return root / "out", r.output


def test_demo_run_shows_no_point_as_an_interval(demo_out):
    out, terminal = demo_out
    res = json.loads((out / "results.json").read_text())
    assert _assert_no_point_intervals(res) > 100
    collapsed = [b for r in res["table1"] + res["table2"] + res["side_rows"] for k, b in r.items()
                 if k.startswith("tpr_at_fpr_") and b.get("tpr") is not None and b["ci95"] is None]
    assert collapsed and all(b["ci95_reason"] == intervals.BOOTSTRAP_ONE_VALUE for b in collapsed)
    point = re.compile(r"\[([-+]?[0-9.]+), \1\]")
    for text in ((out / "tables.md").read_text(), terminal):
        assert not point.search(text), point.search(text).group(0)
    assert intervals.BOOTSTRAP_ONE_VALUE in (out / "tables.md").read_text()


def test_unreachable_target_is_null_with_the_reason_in_table1_and_the_grid_and_the_warning_agrees(demo_out):
    """One rule (veribench.metrics.thresholds.unreachable_reason) for Table 1 and the grid; the
    warning is the row's reason, and a borrowed threshold names the corpus that set it."""
    out, terminal = demo_out
    res = json.loads((out / "results.json").read_text())
    zippy = [r for r in res["table1"] if r["detector"].startswith("ZipPy")]
    assert {r["group"] for r in zippy} == {"corpus:fastdetectgpt", "corpus:liang2023"}
    for r in zippy:
        for key, pct in (("tpr_at_fpr_1", "1%"), ("tpr_at_fpr_5", "5%")):
            b = r[key]
            assert b["tpr"] is None and b["ci95"] is None
            assert "13 human texts" in b["reason"] and "1/13" in b["reason"] and f"in (0, {pct}]" in b["reason"]
            assert b["threshold_corpus"] == ["fastdetectgpt"] and "corpus fastdetectgpt" in b["threshold_source"]
            assert any(b["reason"] in w for w in res["warnings"])  # the warning is the row's own reason
    assert not any("achieved FPR is 0" in w for w in res["warnings"])
    # in-sample rows: a tie at the top human scores is unreachable too, never "0.0%† [0.0, 0.0]";
    # a refused cell carries no threshold, false-positive count or achieved FPR of the FPR-0
    # point that is not an operating point (JSON and table1.csv alike)
    refused = 0
    for r in res["table1"] + res["table2"] + res["side_rows"]:
        for k, b in r.items():
            if k.startswith("tpr_at_fpr_") and b.get("fp") == 0 and b.get("n_human"):
                assert b["tpr"] is None and "unreachable" in b["reason"]
            if k.startswith("tpr_at_fpr_") and "unreachable" in str(b.get("reason")):
                refused += 1
                assert b["tpr"] is None and b["threshold"] is None and b["achieved_fpr"] is None and b["fp"] is None, b
    assert refused
    seen = 0
    with (out / "table1.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            for col, v in row.items():
                m = re.fullmatch(r"(tpr_at_fpr_[0-9.]+)_reason", col)
                if m and "unreachable" in v:
                    key = m.group(1)
                    seen += 1
                    assert row[f"{key}_threshold"] == row[f"{key}_achieved_fpr"] == row[f"{key}_tpr"] == "", row
    assert seen
    md = (out / "tables.md").read_text()
    assert "0.0%† [0.0, 0.0]" not in md and "so no threshold gives a false-positive rate in (0, 1%]" in md
    # the grid, same texts and rule: 13 human texts, target 1%
    h, a = np.arange(13.0), np.arange(5.0, 25.0)
    y = np.r_[np.zeros(13), np.ones(20)].astype(np.int64)
    g = compute_grid({"m": np.where(y == 1, "x", "human").astype(object)}, y, [GridDetector("d", np.r_[h, a])],
                     tags=["m"], n_boot=50)
    cell = next(r for r in g["rows"] if r["m"] == "x")["tpr_at_fpr_1"]
    assert cell["tpr"] is None and "1/13" in cell["reason"] and "no threshold gives a false-positive rate in (0, 1%]" in cell["reason"]
