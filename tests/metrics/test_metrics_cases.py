"""The shared cases in the metrics area (c01 metric part, c03, c05, c06), read from tests/data/cases."""

from __future__ import annotations

import csv
import json
import math
import warnings

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from veribench.metrics import (
    UndefinedMetricWarning,
    auroc,
    auroc_ci,
    drop_nonfinite,
    group_auroc,
    group_tpr_at_fpr,
    mean_of_defined,
    tpr_at_fpr,
    wilson,
    wilson_arrays,
)


def _csv(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_c01_auroc_on_finite_rows(cases_dir):
    labels = {r["id"]: r["label"] for r in _csv(cases_dir / "c01" / "labels.csv")}
    # the file holds bare NaN and -Infinity, which Python's json reads as floats
    preds = json.loads((cases_dir / "c01" / "predictions.json").read_text())
    ids = np.array([p["id"] for p in preds])
    y = np.array([labels[i] for i in ids])
    s = np.array([p["score"] for p in preds], dtype=float)
    # never coerced: the metric refuses non-finite input, naming the positions
    with pytest.raises(ValueError, match=r"non-finite.*\[2, 5\]"):
        auroc(y, s)
    (y_f, ids_f), s_f, dropped = drop_nonfinite(y, ids, scores=s)
    assert ids[dropped].tolist() == ["doc-c", "doc-f"]
    assert len(s_f) == 4
    assert auroc(y_f, s_f) == pytest.approx(0.75, abs=1e-12)
    assert auroc_ci(y_f, s_f).auc == pytest.approx(0.75, abs=1e-12)
    with pytest.raises(ValueError, match="does not match"):
        drop_nonfinite(y[:3], scores=s)
    # coercing NaN/-inf to 0 would give a different (wrong) answer
    coerced = np.nan_to_num(s, nan=0.0, neginf=0.0)
    assert roc_auc_score((y == "ai").astype(int), coerced) != pytest.approx(0.75)


@pytest.mark.parametrize("column", ["prob", "logit", "scaled"])
def test_c03_tpr_at_fpr_from_ranking(cases_dir, column):
    rows = _csv(cases_dir / "c03" / "scores.csv")
    y = [r["label"] for r in rows]
    s = [float(r[column]) for r in rows]
    assert auroc(y, s) == pytest.approx(0.9621875, abs=1e-12)
    res = tpr_at_fpr(y, s, 0.05)
    assert (res.k, res.n, res.fp, res.n_human) == (31, 40, 2, 40)
    assert res.tpr == pytest.approx(0.775)
    assert res.achieved_fpr == pytest.approx(0.05)
    assert res.reason is None
    # the threshold is one of the human scores (an exact quantile), not a stepped value
    human = [v for v, lab in zip(s, y) if lab == "human"]
    assert res.threshold in human


def test_c03_all_columns_same_threshold_rank(cases_dir):
    rows = _csv(cases_dir / "c03" / "scores.csv")
    y = [r["label"] for r in rows]
    picked = []
    for column in ("prob", "logit", "scaled"):
        s = [float(r[column]) for r in rows]
        t = tpr_at_fpr(y, s, 0.05).threshold
        picked.append([r["id"] for r in rows if float(r[column]) == t])
    assert picked[0] == picked[1] == picked[2] and "hum37" in picked[0]


def test_c05_one_class_split(cases_dir):
    rows = _csv(cases_dir / "c05" / "one_class_split.csv")
    splits = sorted({r["split"] for r in rows})
    codes = np.array([splits.index(r["split"]) for r in rows])
    y = np.array([r["label"] for r in rows])
    s = np.array([float(r["score"]) for r in rows])
    homo, none = splits.index("attack=homoglyph"), splits.index("attack=none")
    with pytest.warns(UndefinedMetricWarning, match="one class"):
        assert math.isnan(auroc(y[codes == homo], s[codes == homo]))
    with pytest.warns(UndefinedMetricWarning):
        res = auroc_ci(y[codes == homo], s[codes == homo])
    assert all(math.isnan(v) for v in res[:3])
    assert auroc(y[codes == none], s[codes == none]) == 1.0
    with pytest.warns(UndefinedMetricWarning, match="one class"):
        ga = group_auroc(codes, y, s)
    assert math.isnan(ga.auc[homo]) and ga.auc[none] == 1.0
    with pytest.warns(UndefinedMetricWarning):
        (gt,) = group_tpr_at_fpr(codes, y, s, 0.05)
    assert gt.reasons[homo] == "no human texts" and gt.reasons[none] is None
    with pytest.warns(UndefinedMetricWarning, match="no human texts"):
        r = tpr_at_fpr(y[codes == homo], s[codes == homo], 0.05)
    assert r.tpr is None and r.threshold is None and r.reason == "no human texts"
    # left out of every average: the mean over splits is the defined split's value
    mean, used, left_out = mean_of_defined(ga.auc)
    assert (mean, used, left_out) == (1.0, 1, 1)


def test_c06_wilson_cases(cases_dir):
    for r in _csv(cases_dir / "c06" / "wilson_cases.csv"):
        k, n = int(r["k"]), int(r["n"])
        res = wilson(k, n)
        if n == 0:
            assert res.rate is None and res.lo is None and res.hi is None
            assert res.reason == "no documents"
            rate, lo, hi = wilson_arrays(np.array([k]), np.array([n]))  # internal: NaN
            assert np.isnan(rate[0])
            continue
        assert res.lo == pytest.approx(float(r["expected_low"]), abs=1e-10)
        assert res.hi == pytest.approx(float(r["expected_high"]), abs=1e-10)
        if k == 0:
            assert res.lo == 0.0  # exactly
        if k == n:
            assert res.hi == 1.0  # exactly
        _, lo, hi = wilson_arrays(np.array([k]), np.array([n]))
        assert (lo[0], hi[0]) == (res.lo, res.hi)


def test_no_nan_leaks_from_wilson_with_warnings_as_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert wilson(0, 0).reason == "no documents"
