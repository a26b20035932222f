"""Issue 25, "The report site": numbers shown as they are.

- a catch rate at a fixed FPR carries the FPR its threshold achieved, in the same cell, in
  the site, the terminal and Markdown (a 70% catch rate "at FPR <= 1%" whose test FPR was
  35% must say so);
- the landing page's sentence on a declared gap follows the adjusted test, never the
  unadjusted interval;
- a null interval keeps its reason in the terminal and Markdown, as the JSON does, whatever
  reason field it carries (``<key>_ci95_reason``, ``ci95_reason``, the block's ``reason``).
"""

from __future__ import annotations

import html as htmllib
import re

import pytest
from markupsafe import Markup

from veribench.evaluate.reasons import null_reason, reason_keys
from veribench.evaluate.tables import cell, markdown
from veribench.report import runview
from veribench.report.site import Col, Page, _env, gap_cols, render_table, tpr_cols

Col0 = Col("Detector", "detector")


def _tpr(tpr: float, fpr: float | None, source: str, **extra) -> dict:
    return {"target_fpr": 0.01, "tpr": tpr, "k": 7, "n": 10, "threshold": 0.9, "achieved_fpr": fpr, "fp": 7,
            "n_human": 20, "threshold_source": source, "reason": None, "ci95": [0.4, 0.9], "ci95_reason": None,
            **extra}


def _text(html: Markup) -> str:
    return htmllib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", str(html))))


@pytest.mark.parametrize("source", ["calibration split", "in-sample oracle operating point"])
def test_catch_rate_at_fpr_shows_its_achieved_fpr_everywhere(source):
    row = {"detector": "D", "tpr_at_fpr_1": _tpr(0.7, 0.35, source)}
    # terminal and Markdown (both print evaluate.tables.cell)
    txt = cell(row, "tpr_at_fpr_1")
    assert txt.startswith("70.0%") and "achieved FPR 35.0%" in txt, txt
    # the report site: the same cell holds the catch rate, its interval and the achieved FPR
    (col,) = tpr_cols([row])
    html = _text(render_table([row], "/table1", [Col0, col], "t"))
    assert re.search(r"70\.0%\s*\[40\.0, 90\.0\]\s*achieved FPR 35\.0%", html), html


def test_achieved_fpr_null_keeps_its_reason():
    row = {"detector": "D", "tpr_at_fpr_1": _tpr(0.7, None, "calibration split",
                                                achieved_fpr_reason="no human texts")}
    assert "achieved FPR — (no human texts)" in cell(row, "tpr_at_fpr_1")
    html = _text(render_table([row], "/table1", [Col0, *tpr_cols([row])], "t"))
    assert "achieved FPR — (no human texts)" in html, html


def test_undefined_catch_rate_shows_no_achieved_fpr_but_its_reason():
    row = {"detector": "D", "tpr_at_fpr_1": {**_tpr(0.7, None, "calibration split"), "tpr": None,
                                             "reason": "no AI texts"}}
    assert cell(row, "tpr_at_fpr_1") == "— (no AI texts)"
    html = _text(render_table([row], "/table1", [Col0, *tpr_cols([row])], "t"))
    assert "— (no AI texts)" in html and "achieved" not in html


def _gap(est: float, ci: list[float] | None, p: float, p_adj: float, **extra) -> dict:
    return {"detector": "D", "metric": "fpr", "slice": "subgroup", "group_a": "a", "group_b": "b",
            "label_a": "TOEFL", "label_b": "US", "estimate": est, "ci95": ci, "p_value": p, "p_adjusted": p_adj,
            "test": "Fisher exact", "interval": "Newcombe", "k_a": 5, "n_a": 20, "rate_a": 0.25, "k_b": 1,
            "n_b": 20, "rate_b": 0.05, "reason": None, **extra}


def test_landing_gap_sentence_follows_the_adjusted_test():
    """One of three gaps has an interval that excludes zero but an adjusted p above alpha:
    the landing page says the gap is significant for 0 of 3 detectors, not 1."""
    results = {"run": {"confidence": 0.95}, "corrections": {"alpha": 0.05, "correction": "holm"},
               "gaps": [_gap(0.2, [0.01, 0.4], 0.03, 0.09), _gap(0.05, [-0.1, 0.2], 0.5, 1.0),
                        _gap(0.0, [-0.1, 0.1], 1.0, 1.0)]}
    data = {"corrections": results["corrections"], "table1": [], "table1_groups": []}
    data["gaps"], data["gap_sets"] = runview.gap_sets(results)
    q1 = runview.landing(data)["q1"]
    assert (q1["n_survive"], q1["n_detectors"], q1["n_adjusted"]) == (0, 3, 3)
    run = {"href": "run-x.html", "tag": "x", "source_kind": "workspace", "integrity": None, "n_documents": 60,
           "n_detectors": 1, "created_at": "2026-01-01", "protocol": None, "compare_href": None,
           "landing": runview.landing(data), "name": "run-x"}
    d = {"kind": "index", "runs": [run], "cycles": [], "ratings": [], "has_trends": False, "has_run_trends": False}
    html = _text(Markup(_env().get_template("index.html").render(
        d=d, page=Page("index", "t", "index.html", d, "Overview"), nav={}, figures=[], version="0",
        data_href="data/index.json")))
    assert "excludes zero" not in html
    assert "After Holm's correction, the gap is significant (adjusted p at most 0.05) for 0 of 3 detectors" in html, html
    # a gap that survives is counted
    results["gaps"][0]["p_adjusted"] = 0.04
    data["gaps"], data["gap_sets"] = runview.gap_sets(results)
    assert runview.landing(data)["q1"]["n_survive"] == 1


@pytest.mark.parametrize("field", ["fpr_ci95_reason", None])
def test_null_rate_interval_keeps_its_reason_in_terminal_and_markdown(field):
    row = {"detector": "D", "human_n": 20, "false_positives": 0, "fpr": 0.0, "fpr_ci95": None, "fpr_reason": None}
    if field == "fpr_ci95_reason":
        row[field] = "no variation"
    txt = cell(row, "fpr")
    if field == "fpr_ci95_reason":
        assert txt == "0.0% (no interval: no variation)"
    else:  # no reason recorded: still never shown as a bare point
        assert txt == "0.0% (no interval)"
    row2 = {"detector": "D", "auroc": 1.0, "auroc_ci95": None, "auroc_reason": None,
            "auroc_ci95_reason": "DeLong variance is 0"}
    assert cell(row2, "auroc") == "1.000 (no interval: DeLong variance is 0)"


def test_null_difference_interval_keeps_its_reason():
    """A gap and a robustness difference that are exactly 0 in every resample: an estimate,
    no interval, and the reason, whichever field carries it."""
    gap = _gap(0.0, None, 1.0, 1.0, reason="no variation")
    assert cell(gap, "gap_estimate") == "+0.0 pts (no interval: no variation)"
    gap2 = _gap(0.0, None, 1.0, 1.0, ci95_reason="no variation")
    assert cell(gap2, "gap_estimate") == "+0.0 pts (no interval: no variation)"
    rb = {"detector": "D", "attack": "homoglyph", "metric": "catch_rate",
          "attacked": {"k": 3, "n": 3, "rate": 1.0, "ci95": None, "ci95_reason": "all pairs agree"},
          "source": {"k": 3, "n": 3, "rate": 1.0, "ci95": [0.4, 1.0]},
          "difference": {"estimate": 0.0, "ci95": None, "reason": "no variation", "p_value": 1.0}}
    assert cell(rb, "rb_difference") == "+0.0 pts (no interval: no variation)"
    assert cell(rb, "rb_attacked") == "3/3 100.0% (no interval: all pairs agree)"
    # the site shows the same reason under the gap
    gs = {"label_a": "TOEFL", "label_b": "US", "metric": "fpr", "interval": "Newcombe", "test": "Fisher"}
    html = _text(render_table([gap], "/gaps", gap_cols(gs), "t"))
    assert "0.0 pp— (no variation)" in html.replace(" —", "—"), html


def test_markdown_carries_the_interval_reason():
    row = {"detector": "D", "version": "1", "scan_date": None, "human_n": 20, "false_positives": 0, "fpr": 0.0,
           "fpr_ci95": None, "fpr_reason": None, "fpr_ci95_reason": "no variation", "ai_n": 10, "detections": 7,
           "catch_rate": 0.7, "catch_rate_ci95": [0.4, 0.9], "catch_rate_reason": None, "balanced_accuracy": 0.85,
           "auroc": 0.9, "auroc_ci95": [0.8, 1.0], "tpr_at_fpr_1": _tpr(0.7, 0.35, "calibration split"),
           "excluded": {}, "hazards": None, "hazards_reason": "not checked"}
    res = {"run": {"run_id": "r", "tag": "t"}, "table1": [row], "table2": [], "agreement": [], "detectors": []}
    md = markdown(res)
    assert "0.0% (no interval: no variation)" in md and "achieved FPR 35.0%" in md


def test_reason_keys_is_the_one_reading():
    assert reason_keys("fpr_ci95") == ("fpr_ci95_reason", "fpr_reason", "reason")
    assert reason_keys("ci95") == ("ci95_reason", "reason")
    assert reason_keys("false_positives") == ("false_positives_reason", "fpr_reason", "reason")
    assert null_reason({"ci95": None, "reason": "x"}, "ci95") == "x"
    assert null_reason({"ci95": None, "ci95_reason": "y", "reason": "x"}, "ci95") == "y"
    assert null_reason(None, "ci95") is None


def test_landing_shows_each_declared_gap_with_its_interval_and_adjusted_test():
    """Issue 25 walk: the README says the front page shows the declared gap with its
    interval; it showed only the two groups' ranges. Each detector's gap is on the front
    page with its interval and adjusted p, in a table whose gap column comes right after
    the detector (seen first on a phone); a gap without an interval shows its reason."""
    results = {"run": {"confidence": 0.95}, "corrections": {"alpha": 0.05, "correction": "holm"},
               "gaps": [_gap(0.2, [0.013, 0.4], 0.03, 0.09),
                        _gap(0.0, None, 1.0, 1.0, ci95_reason="no variation: the gap is 0 in every resample")]}
    results["gaps"][1]["detector"] = "E"
    data = {"corrections": results["corrections"], "table1": [], "table1_groups": []}
    data["gaps"], data["gap_sets"] = runview.gap_sets(results)
    land = runview.landing(data)
    assert [r["detector"] for r in land["q1"]["rows"]] == ["D", "E"]
    run = {"href": "run-x.html", "tag": "x", "source_kind": "workspace", "integrity": None, "n_documents": 60,
           "n_detectors": 2, "created_at": "2026-01-01", "protocol": None, "compare_href": None,
           "landing": land, "name": "run-x"}
    d = {"kind": "index", "runs": [run], "cycles": [], "ratings": [], "has_trends": False, "has_run_trends": False}
    raw = _env().get_template("index.html").render(
        d=d, page=Page("index", "t", "index.html", d, "Overview"), nav={}, figures=[], version="0",
        data_href="data/index.json")
    html = _text(Markup(raw))
    assert re.search(r"D\s*\+20\.0 pp\s*\[1\.3, 40\.0\]\s*0\.0900\s*no", html), html  # gap, interval, adjusted p
    assert re.search(r"E\s*0\.0 pp\s*— \(no variation: the gap is 0 in every resample\)\s*1\.0000", html), html
    assert "Newcombe" in html and "Fisher exact" in html, html
    heads = re.findall(r'<th scope="col"[^>]*>([^<]*)</th>', raw)
    assert heads[:3] == ["Detector", "Gap, points (95% CI)", "Adjusted p"], heads
    assert 'class="data stack"' in raw
    heads = re.findall(r'<th scope="col"[^>]*>([^<]*)</th>', str(render_table(
        data["gaps"], "/gaps", gap_cols(data["gap_sets"][0]), "t")))
    assert heads[1] == "Gap, points (95% CI)", heads  # the run page's gap table: the gap first too


def test_an_interval_reason_that_says_no_interval_is_not_said_twice():
    """Issue 25 walk: the terminal and Markdown showed "(no interval: bootstrap gave one value
    in every replicate: no interval)". A reason that already says "no interval" is shown once;
    any other keeps the "no interval:" lead."""
    from veribench.metrics.intervals import BOOTSTRAP_ONE_VALUE, DELONG_ZERO

    row = {"detector": "D", "human_n": 20, "false_positives": 3, "fpr": 0.15, "fpr_ci95": None, "fpr_reason": None,
           "fpr_ci95_reason": BOOTSTRAP_ONE_VALUE}
    assert cell(row, "fpr") == f"15.0% ({BOOTSTRAP_ONE_VALUE})"
    row2 = {"detector": "D", "auroc": 1.0, "auroc_ci95": None, "auroc_reason": None, "auroc_ci95_reason": DELONG_ZERO}
    assert cell(row2, "auroc") == f"1.000 ({DELONG_ZERO})"
    assert all(t.count("no interval") == 1 for t in (cell(row, "fpr"), cell(row2, "auroc")))


def test_the_in_sample_mark_is_explained_under_the_table_that_carries_it():
    """Issue 25 walk: the † of an in-sample TPR cell was explained only at the end of the
    Markdown (after the robustness table) and of the HTML page. The note now sits right under
    each table whose cells carry the mark (Markdown and HTML), and nowhere else."""
    from veribench.evaluate.tables import IN_SAMPLE_MARK, IN_SAMPLE_NOTE, html_page

    row = {"detector": "D", "version": "1", "scan_date": None, "human_n": 20, "false_positives": 1, "fpr": 0.05,
           "fpr_ci95": [0.01, 0.2], "fpr_reason": None, "ai_n": 10, "detections": 7,
           "catch_rate": 0.7, "catch_rate_ci95": [0.4, 0.9], "catch_rate_reason": None, "balanced_accuracy": 0.85,
           "auroc": 0.9, "auroc_ci95": [0.8, 1.0], "tpr_at_fpr_1": _tpr(0.7, 0.05, "in-sample oracle operating point"),
           "excluded": {}, "hazards": None, "hazards_reason": "not checked"}
    plain = {**row, "tpr_at_fpr_1": _tpr(0.7, 0.05, "calibration split"), "slice_type": "all", "slice": "all"}
    res = {"run": {"run_id": "r", "tag": "t"}, "table1": [row], "table2": [plain], "agreement": [], "detectors": [],
           "robustness": [], "side_rows": []}
    md = markdown(res)
    assert IN_SAMPLE_MARK in md and md.count(IN_SAMPLE_NOTE) == 1, md
    table1 = md[md.index("headline rates per detector"):md.index("## Table 2")]
    assert IN_SAMPLE_NOTE in table1, md  # under Table 1, before the next heading
    page = html_page(res)
    assert page.count(IN_SAMPLE_NOTE) == 1, page
    first_table_end = page.index("</table>")
    assert page[first_table_end:].startswith(f"</table><p>{IN_SAMPLE_NOTE}</p>"), page[first_table_end:][:200]
