"""Issue 25: the overview's integrity line is coloured by the run's status, by the same rule
as the run page (``runs.integrity_tone``): a pre-registered run's line is good (green), a run
that is not pre-registered, has no protocol or an unknown status is bad (red)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markupsafe import Markup

from veribench.report import runs as runmod
from veribench.report import runview
from veribench.report.site import Page, _env

CSS = Path(runmod.__file__).parent / "static" / "report.css"


def _results(before: int | None, hash_: str | None = "abc") -> dict:
    return {"run": {"confidence": 0.95, "protocol": {"hash": hash_, "id": "p1", "scores_total": 80,
                                                     "scores_before_commit": before, "scores_logged_before_commit": before,
                                                     "scores_dated_before_commit": before,
                                                     "committed_at": "2026-01-01"}},
            "corrections": {"alpha": 0.05, "correction": "holm"}, "gaps": []}


def _index(results: dict) -> str:
    integ = runmod.integrity_block(results)
    data = {"corrections": results["corrections"], "table1": [], "table1_groups": [], "gaps": [], "gap_sets": []}
    run = {"href": "run-x.html", "tag": "x", "source_kind": "workspace", "integrity": integ["lines"][0]["text"],
           "integrity_tone": integ["tone"], "n_documents": 80, "n_detectors": 1, "created_at": "2026-01-01",
           "protocol": "p1", "compare_href": None, "landing": runview.landing(data), "name": "run-x"}
    d = {"kind": "index", "runs": [run], "cycles": [], "ratings": [], "has_trends": False, "has_run_trends": False}
    return str(Markup(_env().get_template("index.html").render(
        d=d, page=Page("index", "t", "index.html", d, "Overview"), nav={}, figures=[], version="0",
        data_href="data/index.json")))


def _summary_class(html: str) -> set[str]:
    m = re.search(r'<p class="(integrity-summary[^"]*)"', html)
    assert m, html
    return set(m.group(1).split())


@pytest.mark.parametrize(("results", "tone"), [
    (_results(0), "ok"), (_results(3), "bad"), (_results(None), "bad"), (_results(0, hash_=None), "bad")])
def test_overview_integrity_line_follows_the_status(results: dict, tone: str):
    html = _index(results)
    other = {"ok": "bad", "bad": "ok"}[tone]
    cls = _summary_class(html)
    assert f"integrity-{tone}" in cls and f"integrity-{other}" not in cls
    if tone == "ok":
        assert "Pre-registered" in html


def test_css_colours_only_by_tone():
    css = CSS.read_text(encoding="utf-8")
    rules = dict(re.findall(r"([^{}]+)\{([^}]*)\}", css))
    by_sel = {k.strip(): v for k, v in rules.items()}
    assert "var(--ok)" in by_sel[".integrity-summary.integrity-ok"]
    assert "var(--bad)" in by_sel[".integrity-summary.integrity-bad"]
    # no unconditional red on the summary line
    assert ".integrity-summary" not in by_sel


def test_run_page_and_overview_share_the_rule():
    assert runmod.integrity_tone("pre-registered") == "ok"
    for status in ("not pre-registered", "no protocol", "unknown", "bundle failed"):
        assert runmod.integrity_tone(status) == "bad"
    src = (CSS.parent.parent / "templates" / "run.html").read_text(encoding="utf-8")
    assert "integrity-{{ d.integrity.tone }}" in src
