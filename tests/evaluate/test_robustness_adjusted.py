"""Robustness p-values join the run's correction (issue 25, "Robustness p-values not
adjusted"): every row carries ``p_adjusted`` (Holm over the run's robustness family, checked
against statsmodels), the family is stated in ``corrections.families``, and the tables show
the adjusted p beside the raw one."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from veribench.evaluate import tables
from veribench.evaluate.robustness import adjust_robustness, robustness_rows

P = [0.031, 0.2, 0.04, 0.5, 0.9, 0.012, 0.33, 0.07, 0.6, 0.8, 0.45, 0.27, 0.15, 0.99, 0.05]


def _row(p):
    return {"detector": "d", "attack": "a", "derivation": "attack", "variant": "a", "metric": "catch_rate",
            "n_derived": 10, "n_pairs": 10, "unpaired": {},
            "attacked": {"k": 2, "n": 10, "rate": 0.2, "ci95": [0.05, 0.5], "reason": None},
            "source": {"k": 5, "n": 10, "rate": 0.5, "ci95": [0.2, 0.8], "reason": None},
            "difference": {"estimate": -0.3, "ci95": [-0.6, 0.1], "p_value": p, "test": "McNemar exact",
                           "interval": "Newcombe", "reason": None if p is not None else "no discordant pairs",
                           "detail": {}}}


def test_holm_over_the_robustness_family_equals_statsmodels():
    rows = [_row(p) for p in P] + [_row(None)]
    fam = adjust_robustness(rows)
    ref = multipletests(np.array(P), method="holm")[1]
    assert [r["difference"]["p_adjusted"] for r in rows[:-1]] == pytest.approx(list(ref))
    assert rows[-1]["difference"]["p_adjusted"] is None
    assert fam["name"] == "robustness" and fam["size"] == 15 and fam["rows"] == 16 and fam["correction"] == "holm"
    # the raw 0.031 reads as significant; adjusted over 15 tests it is not
    assert rows[0]["difference"]["p_value"] < 0.05 < rows[0]["difference"]["p_adjusted"]


def test_rows_carry_p_adjusted_and_every_output_shows_it_with_the_family():
    # two attacked texts per source, one detector: a plain run of robustness_rows
    n = 8
    ids = [f"s{i}" for i in range(n)] + [f"d{i}" for i in range(n)]
    lab = np.ones(2 * n, dtype=np.int64)
    tags = [{}] * n + [{"derivation": "attack", "attack": "swap"}] * n
    src = [None] * n + [f"s{i}" for i in range(n)]
    flagged = np.array([True] * n + [False] * n)
    ones = np.ones(2 * n, bool)
    rows = robustness_rows(ids, lab, tags, src, [None] * n + ["swap"] * n, ["C"] * (2 * n), ones,
                           [{"name": "d", "scope": ones, "scored": ones, "counted": ones, "flagged": flagged,
                             "defined": True, "reason": None}], 0.05)
    assert rows and all("p_adjusted" in r["difference"] for r in rows)
    fam = adjust_robustness(rows)
    res = {"robustness": rows, "corrections": {"enabled": True, "alpha": 0.05, "families": [fam]}}
    assert ("rb_p_adj", "p (adjusted)") in tables.ROBUST_COLUMNS
    assert "Holm's correction over the run's robustness family of 1 tests" in tables.robust_note(res)
    assert tables.cell(rows[0], "rb_p_adj") == tables.cell(rows[0], "rb_p") == f"{rows[0]['difference']['p_value']:.2g}"
    raw = rows[0]["difference"]["p_value"]
    assert raw == pytest.approx(2 * 0.5 ** n)  # McNemar exact, 8 discordant pairs one way
    assert rows[0]["difference"]["p_adjusted"] == pytest.approx(raw)
