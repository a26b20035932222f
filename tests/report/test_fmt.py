"""Display formats, JSON pointers and curve thinning of the report."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import auc

from veribench.report.fmt import NULL, cell, format_value, pointer, resolve
from veribench.report.plots import thin


@pytest.mark.parametrize(
    "value, fmt, shown",
    [
        (0.49450549, "pct", "49.5%"),
        (0.0, "pct", "0.0%"),
        (1.0, "pct", "100.0%"),
        ([0.0, 0.2775327999], "pctci", "[0.0, 27.8]"),
        ([0.661, 0.7487], "num3ci", "[0.661, 0.749]"),
        (0.391, "pp", "+39.1 pp"),
        (-0.0004, "pp", "0.0 pp"),
        (-0.25, "pp", "\u221225.0 pp"),
        (84.47, "num2", "84.47"),
        (-0.00001, "num3", "0.000"),
        (-8, "signed", "\u22128"),
        (3, "signed", "+3"),
        (0, "signed", "0"),
        (91, "int", "91"),
        ("2023-04-06", "text", "2023-04-06"),
        (None, "pct", NULL),
        (None, "pctci", NULL),
        ([None, 0.3], "pctci", NULL),
        (float("nan"), "num3", NULL),
    ],
)
def test_format_value(value, fmt, shown):
    assert format_value(value, fmt) == shown


def test_unknown_format_is_an_error():
    with pytest.raises(ValueError, match="unknown display format"):
        format_value(1, "percent")


def test_cell_escapes_and_points():
    html = str(cell(pointer("rows", 0, "a/b~c"), "<x>", "text"))
    assert 'data-v="/rows/0/a~1b~0c"' in html and "&lt;x&gt;" in html
    assert resolve({"rows": [{"a/b~c": 5}]}, "/rows/0/a~1b~0c") == 5
    with pytest.raises(KeyError):
        resolve({"rows": [{}]}, "/rows/0/missing")


def test_thin_keeps_shape_of_a_long_roc_curve():
    rng = np.random.default_rng(0)
    fpr = np.concatenate([[0], np.sort(rng.random(200_000)), [1]])
    tpr = np.sqrt(fpr)
    fx, ty = thin(list(fpr), list(tpr), 1000)
    assert len(fx) <= 1001 and fx[0] == 0 and fx[-1] == 1 and ty[-1] == 1
    assert np.all(np.diff(fx) >= 0)
    assert abs(auc(fx, ty) - auc(fpr, tpr)) < 1e-4
    assert thin([0, 1], [0, 1]) == ([0, 1], [0, 1])
