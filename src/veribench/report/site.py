"""Build the static report site: ``veribench report [-w WS]... [BUNDLE_OR_RESULTS]... --out DIR``.

Layout of ``DIR``::

    index.html                  overview: per run, human texts flagged, AI texts caught, which differences are real
    run-<tag>.html              one per run: declared gaps, Table 1 per corpus, significance, robustness, ROC, Table 2
    compare-<tag>.html          every paired comparison of a run: matrices, tiers, intervals (when the run has them)
    cycle-<name>.html           one per HumanizerBench cycle bundle: leaderboard and breakdowns
    humanizer-<slug>.html       one per humanizer across all cycles given
    trends.html                 when two or more cycles are given
    ratings-<tag>.html          editors' rubric results, when the workspace has ratings
    report.pdf                  with --pdf: every page above as one printable PDF
    data/<page>.json            the JSON each page was built from (every number traces here)
    img/*.svg                   charts (static SVG, matplotlib)
    files/<tag>-raw_scores.{csv,parquet}   per-document raw scores of each run
    assets/report.css           the only stylesheet; pages load nothing else

The site is built in a sibling folder and replaces ``DIR`` only when complete, so a
failed build leaves an earlier report untouched; ``DIR`` is only ever replaced when it is
empty or holds an earlier report (marker file ``.veribench-report``).

No page runs a script or loads anything from outside ``DIR``. Pages aggregate: no
table has one row per document, so a one-million-document workspace builds as fast as
its raw-score export.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from veribench import __version__
from veribench.errors import InputError
from veribench.evaluate.reasons import reason_keys
from veribench.report import cycles as cyc
from veribench.report import ratingsview, runview
from veribench.report import runs as runmod
from veribench.report.fmt import NULL, cell, format_value, get_path, pointer
from veribench.report.pdf import write_pdf
from veribench.store import Workspace
from veribench.store.workspace import DB_NAME

HERE = Path(__file__).parent
MARKER = ".veribench-report"
PDF_NAME = "report.pdf"


@dataclass
class Col:
    """One table column: header text, key path inside each row, display format (see :mod:`.fmt`).

    ``of``: a second key shown as ``value / of`` (a count out of its denominator);
    ``sub``: a key shown on a second line of the cell in ``sub_fmt`` (an interval under its
    rate), after ``sub_label`` when given; ``link``: a row key holding an href for the cell;
    ``also``: further ``(label, key, fmt)`` lines of the cell, each shown (with its reason
    when null) whenever the main value is defined (the achieved FPR of a catch rate at FPR).
    """

    header: str
    key: str | tuple[str, ...]
    fmt: str = "text"
    help: str | None = None
    link: str | None = None
    of: str | tuple[str, ...] | None = None
    sub: str | tuple[str, ...] | None = None
    sub_fmt: str = "text"
    sub_label: str | None = None
    also: tuple[tuple[str, str | tuple[str, ...], str], ...] = ()

    @property
    def path(self) -> tuple[str, ...]:
        return _as_path(self.key)


def _as_path(key: str | tuple[str, ...]) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else tuple(key)


_MISSING = object()


def _lookup(row: Any, path: tuple[str, ...]) -> Any:
    cur = row
    for k in path:
        if isinstance(cur, dict) and k in cur:
            cur = cur[k]
        else:
            return _MISSING
    return cur


def reason_path(row: Any, path: tuple[str, ...]) -> tuple[str, ...] | None:
    """Where the reason for a null value at ``path`` lives in ``row``, if anywhere: the first
    of :func:`veribench.evaluate.reasons.reason_keys` in the value's own row or block, or the
    reason of a whole nested block that is null."""
    if len(path) >= 2:
        parent = _lookup(row, path[:-1])
        if isinstance(parent, dict):
            return next(((*path[:-1], k) for k in reason_keys(path[-1]) if parent.get(k)), None)
        if isinstance(row, dict) and parent is None and row.get(f"{path[0]}_reason"):
            return (f"{path[0]}_reason",)  # the whole block is null, with its reason
        return None
    if not isinstance(row, dict):
        return None
    return next(((k,) for k in reason_keys(path[0]) if row.get(k)), None)


def _value_cell(r: Any, path: tuple[str, ...], fmt: str, ptr_base: str) -> Markup:
    """One value with its null reason (a dash, then the reason in parentheses, when the row holds one)."""
    v = _lookup(r, path)
    inner = Markup(escape(NULL)) if v is _MISSING else cell(pointer(*path, base=ptr_base), v, fmt)
    if v is None or v is _MISSING:
        rp = reason_path(r, path)
        if rp is not None:
            inner += Markup(' <span class="reason">(') + cell(pointer(*rp, base=ptr_base), _lookup(r, rp),
                                                              "text") + Markup(")</span>")
    return inner


def render_table(rows: Sequence[dict[str, Any]], base: str, columns: Sequence[Col], caption: str,
                 empty: str = "No rows.", cls: str = "", index: Sequence[int] | None = None,
                 table_id: str | None = None, row_id: str | None = None) -> Markup:
    """A real ``<table>``: caption, ``<th scope=col>`` headers, first column as ``<th scope=row>``.

    ``base`` is the JSON pointer of ``rows`` in the page JSON; every cell points into it
    (``index[i]``: the position of ``rows[i]`` there, when ``rows`` is a selection). A null
    value is a dash followed by its reason in parentheses, when the row holds one
    (:func:`reason_path`): never a blank and never 0. Each data cell carries its column
    header as ``data-label``, which the stylesheet shows beside the value on narrow screens.
    ``row_id``: a row key holding an ``id`` for the row (a link target).
    """
    if not rows:
        return Markup(f'<p class="empty" data-prose>{escape(caption)}: {escape(empty)}</p>')
    tid = f' id="{escape(table_id)}"' if table_id else ""
    out = [f'<div class="tablewrap"><table class="data {escape(cls)}"{tid}><caption>{escape(caption)}</caption><thead><tr>']
    for c in columns:
        t = f' title="{escape(c.help)}"' if c.help else ""
        out.append(f'<th scope="col"{t}>{escape(c.header)}</th>')
    out.append("</tr></thead><tbody>")
    for i, r in enumerate(rows):
        rb = pointer(index[i] if index is not None else i, base=base)
        rid = r.get(row_id) if row_id and isinstance(r, dict) else None
        out.append(f'<tr id="{escape(rid)}">' if rid else "<tr>")
        for j, c in enumerate(columns):
            inner = _value_cell(r, c.path, c.fmt, rb)
            if c.of is not None:
                inner += Markup('<span class="of"> / </span>') + _value_cell(r, _as_path(c.of), "int", rb)
            if c.link and isinstance(r, dict) and r.get(c.link):
                inner = Markup(f'<a href="{escape(r[c.link])}">{inner}</a>')
            main = _lookup(r, c.path)
            if c.sub is not None and _lookup(r, _as_path(c.sub)) is not _MISSING and \
                    (main is not None and main is not _MISSING or c.sub_fmt == "text"):
                lab = Markup(f"{escape(c.sub_label)} ") if c.sub_label else Markup("")
                inner += Markup('<span class="sub">') + lab + _value_cell(r, _as_path(c.sub), c.sub_fmt, rb) + \
                    Markup("</span>")
            if main is not None and main is not _MISSING:
                for lab_, key_, fmt_ in c.also:
                    inner += Markup('<span class="sub">') + Markup(escape(lab_)) + Markup(" ") + \
                        _value_cell(r, _as_path(key_), fmt_, rb) + Markup("</span>")
            tag = "th" if j == 0 else "td"
            scope = ' scope="row"' if j == 0 else ""
            num = ' class="num"' if c.fmt != "text" and j else ""
            label = f' data-label="{escape(c.header)}"' if j else ""
            out.append(f"<{tag}{scope}{num}{label}>{inner}</{tag}>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return Markup("".join(out))


# --- column sets ---------------------------------------------------------------------
def _tpr_col(key: str, target: float | None) -> Col:
    pct = f"{target * 100:g}%" if isinstance(target, (int, float)) else key.rsplit("_", 1)[-1] + "%"
    return Col(f"Catch rate at FPR \u2264 {pct}", (key, "tpr"), "pct",
               f"catch rate at the threshold that keeps FPR at or below {pct} on the texts that set it; its interval "
               "(when the run has one) refits the threshold in every bootstrap resample; below it, the FPR that "
               "threshold achieves on the human texts this row reports (the test split's, when a calibration split "
               "set the threshold), which can exceed the target", sub=(key, "ci95"), sub_fmt="pctci",
               also=(("achieved FPR", (key, "achieved_fpr"), "pct"),))


def tpr_cols(rows: Sequence[dict[str, Any]]) -> list[Col]:
    """One column per TPR-at-FPR block the rows hold (``tpr_at_fpr_<k>``), by target."""
    keys: dict[str, float | None] = {}
    for r in rows:
        for k, v in r.items():
            if k.startswith("tpr_at_fpr_") and isinstance(v, dict):
                keys.setdefault(k, v.get("target_fpr"))
    return [_tpr_col(k, t) for k, t in sorted(keys.items(), key=lambda kv: (kv[1] is None, kv[1] or 0, kv[0]))]


#: The rate columns of Tables 1 and 2 and the side rows: each count out of its
#: denominator, each rate with its interval on the line below (so a table fits 1280 px).
RATE_COLS = [
    Col("Human texts flagged", "false_positives", "int", "human texts flagged as AI, out of the human texts scored",
        of="human_n"),
    Col("FPR (95% CI)", "fpr", "pct", "false-positive rate: share of human texts flagged; Wilson score interval",
        sub="fpr_ci95", sub_fmt="pctci"),
    Col("AI texts caught", "detections", "int", "AI texts flagged, out of the AI texts scored", of="ai_n"),
    Col("Catch rate (95% CI)", "catch_rate", "pct", "TPR: share of AI texts flagged; Wilson score interval",
        sub="catch_rate_ci95", sub_fmt="pctci"),
    Col("Balanced accuracy", "balanced_accuracy", "pct", "mean of catch rate and 1 \u2212 FPR"),
    Col("AUROC (95% CI)", "auroc", "num3", "area under the ROC curve (0.5 = chance), DeLong interval",
        sub="auroc_ci95", sub_fmt="num3ci"),
]
EXCLUDED_COL = Col("Excluded texts", "excluded_n", "int", "texts this detector did not score, or whose score its rule "
                   "cannot read; not in any denominator (reasons in the page JSON)")
TABLE1_COLS = [
    Col("Detector", "detector"),
    Col("Decision rule", "rule_short", help="short form; the exact threshold and its source are in the decision rules "
        "table below", link="rule_href"),
    *RATE_COLS,
]
#: Table 1's second part: versions, dates, operating points and input hazards.
TABLE1_DETAIL_COLS = [
    Col("Detector", "detector"), Col("Version", "version"), Col("Scan date", "scan_date"),
    Col("Catch-rate-at-FPR threshold from", ("tpr_at_fpr_5", "threshold_source"), "text",
        "calibration split, or an in-sample oracle operating point (threshold set on the texts it reports)"),
    EXCLUDED_COL,
    Col("Confusable inputs", ("hazards", "confusables"), "int", "scored texts holding characters that look like "
        "Latin letters (Unicode confusables)"),
    Col("Invisible-character inputs", ("hazards", "invisible"), "int", "scored texts holding invisible (Cf) characters"),
    Col("Degenerate inputs", ("hazards", "degenerate_repetition"), "int", "scored texts flagged as degenerate repetition"),
]
#: Side columns of Table 1 for labels never blended into the headline catch rate.
SIDE_COLS = {
    "edited": [Col("Edited texts flagged", "edited_flagged", "int", "AI-edited human texts flagged, out of those scored",
                   of="edited_n"),
               Col("Edited rate (95% CI)", "edited_rate", "pct", "share of AI-edited human texts flagged; not in the "
                   "catch rate", sub="edited_rate_ci95", sub_fmt="pctci")],
    "mixed": [Col("Mixed texts flagged", "mixed_flagged", "int", "mixed human/AI texts flagged, out of those scored",
                  of="mixed_n"),
              Col("Mixed rate (95% CI)", "mixed_rate", "pct", "share of mixed texts flagged; not in the catch rate",
                  sub="mixed_rate_ci95", sub_fmt="pctci")],
}


def table1_cols(rows: Sequence[dict[str, Any]]) -> list[Col]:
    """Table 1's headline columns (with one column per TPR-at-FPR target the rows hold)."""
    return [*TABLE1_COLS, *tpr_cols(rows)]


def table1_detail_cols(rows: Sequence[dict[str, Any]]) -> list[Col]:
    """Table 1's second part, plus the edited/mixed side columns when any detector has such texts."""
    cols = list(TABLE1_DETAIL_COLS)
    for side, extra in SIDE_COLS.items():
        if any(r.get(f"{side}_n") for r in rows):
            cols.extend(extra)
    return cols


def table2_cols(rows: Sequence[dict[str, Any]]) -> list[Col]:
    return [Col("Slice", "slice", sub="slice_type"), Col("Detector", "detector"), *RATE_COLS, *tpr_cols(rows)]


def side_row_cols(rows: Sequence[dict[str, Any]]) -> list[Col]:
    return [Col("Side group", "group"), Col("Detector", "detector"), *RATE_COLS, *tpr_cols(rows),
            Col("AUROC against", "auroc_negatives", help="the human texts this group's AI texts are ranked against")]


RULE_COLS = [Col("Detector", "detector"), Col("Rule (short form)", "short"),
             Col("Exact threshold", "threshold", "exact", "the threshold as applied, at full precision"),
             Col("Rule as the run records it", "describe"), Col("Threshold source", "source"),
             Col("Operating point of catch rate at FPR", "operating_point"),
             Col("Score scale", "scale", sub="ranking_note")]
SUBGROUP_COLS = [Col("Slice", "slice"), Col("Detector", "detector"),
                 Col("Human texts flagged", "false_positives", "int", of="human_n"),
                 Col("FPR (95% CI)", "fpr", "pct", sub="fpr_ci95", sub_fmt="pctci")]
LANGUAGE_SCOPE_COLS = [
    Col("Detector", "detector"),
    Col("Declared languages", "languages", help="the languages the detector's authors document it for "
        "(docs/detectors.md), ISO 639-1; a detector without them is labelled so and no text is excluded for it"),
    Col("Out-of-scope texts", "out_of_scope_n", "int", "texts whose language (identified at import) is outside "
        "the detector's declared languages: excluded from its rates with that reason"),
    Col("Out of scope by language", "out_of_scope")]
AGREE_COLS = [Col("Slice", "subgroup", sub="slice_type"), Col("Label", "label"),
              Col("Texts scored by all", "n", "int"), Col("Left out", "n_partial", "int", "texts some but not all of "
                                                          "the row's detectors scored"),
              Col("Detectors", "n_detectors", "int", "how many detectors the row counts (named in the page JSON)"),
              Col("Flagged by any detector", "flagged_by_any", "int"),
              Col("Flagged by all detectors", "flagged_by_all", "int")]


def gap_cols(gs: dict[str, Any]) -> list[Col]:
    """Columns of one declared gap's table (labels from the protocol's ``[[gaps]]``): the gap
    with its interval and adjusted test first, each group's counts and rate after (the table
    is a card per row on a phone, ``cls="stack"``)."""
    what = "flagged" if gs.get("metric") == "fpr" else "caught"
    return [Col("Detector", "detector"),
            Col("Gap, points (95% CI)", "estimate", "pp", f"{gs['label_a']} minus {gs['label_b']}; {gs.get('interval')}",
                sub="ci95", sub_fmt="pctci"),
            Col("Adjusted p", "p_adjusted", "p", "after the run's multiple-comparison correction (family: all gaps)"),
            Col("Survives the correction", "survives_text", "text"),
            Col("p", "p_value", "p", gs.get("test")),
            Col(f"{gs['label_a']}: texts {what}", "k_a", "int", of="n_a"),
            Col(f"{gs['label_a']}: rate (95% CI)", "rate_a", "pct", sub="ci95_a", sub_fmt="pctci"),
            Col(f"{gs['label_b']}: texts {what}", "k_b", "int", of="n_b"),
            Col(f"{gs['label_b']}: rate (95% CI)", "rate_b", "pct", sub="ci95_b", sub_fmt="pctci")]


def landing_gap_cols(q: dict[str, Any]) -> list[Col]:
    """The front page's gap table: the gap with its interval and adjusted test first, so it is
    seen on a narrow screen (the run page's :func:`gap_cols` holds each group's counts too)."""
    return [Col("Detector", "detector"),
            Col("Gap, points (95% CI)", "estimate", "pp", f"{q['label_a']} minus {q['label_b']}; {q.get('interval')}",
                sub="ci95", sub_fmt="pctci"),
            Col("Adjusted p", "p_adjusted", "p", f"{q.get('test')}, after {q.get('correction')}"),
            Col("Survives the correction", "survives_text", "text")]


COMPARISON_COLS = [Col("Detector a", "a"), Col("Detector b", "b"), Col("Texts both scored", "n", "int"),
                   Col("a", "value_a", "num3"), Col("b", "value_b", "num3"),
                   Col("Difference a \u2212 b (95% CI)", "estimate", "num3", sub="ci95", sub_fmt="num3ci"),
                   Col("p", "p_value", "p", sub="test"), Col("Adjusted p", "p_adjusted", "p"),
                   Col("Survives the correction", "survives_text", "text")]
RATE_COMPARISON_COLS = [*COMPARISON_COLS[:3], Col("a", "value_a", "pct"), Col("b", "value_b", "pct"),
                        Col("Difference a \u2212 b (95% CI)", "estimate", "pp", sub="ci95", sub_fmt="pctci"),
                        *COMPARISON_COLS[6:]]
ROBUST_COLS = [Col("Detector", "detector"), Col("Attack", "attack", sub="derivation"),
               Col("Pairs", "n_pairs", "int", "attacked texts whose unattacked source the detector also scored validly"),
               Col("Attacked: flagged", ("attacked", "k"), "int", of=("attacked", "n")),
               Col("Attacked: rate (95% CI)", ("attacked", "rate"), "pct", sub=("attacked", "ci95"), sub_fmt="pctci"),
               Col("Sources: flagged", ("source", "k"), "int", of=("source", "n")),
               Col("Sources: rate (95% CI)", ("source", "rate"), "pct", sub=("source", "ci95"), sub_fmt="pctci"),
               Col("Change, points (95% CI)", ("difference", "estimate"), "pp", "attacked minus source, paired over the "
                   "same texts", sub=("difference", "ci95"), sub_fmt="pctci"),
               Col("p", ("difference", "p_value"), "p", sub=("difference", "test")),
               Col("Adjusted p", ("difference", "p_adjusted"), "p", "Holm over the run's robustness family "
                   "(corrections.families)")]
DET_COLS = [Col("Detector", "detector"), Col("Version", "version"), Col("Spec hash", "spec_hash"),
            Col("Texts that differ from the corpus", "n_text_differs", "int", "the detector scored a different text than the document's"),
            Col("Failed calls", "n_failed", "int")]
AMEND_COLS = [Col("Date", "date"), Col("Logged", "committed_at"), Col("Summary", "summary"),
              Col("After results", "after_results", help="committed after runs under this protocol id existed"),
              Col("Hash", "hash")]
RUNS_COLS = [Col("Run", "run_id"), Col("Tag", "tag"), Col("Created", "created_at"), Col("Protocol id", "protocol_id"),
             Col("Protocol hash", "protocol_hash"), Col("Results sha256", "results_sha256", help="as the event log records it")]
EARLIER_COLS = [Col("Run", "run_id"), Col("Tag", "tag"), Col("Logged", "logged_at"), Col("Protocol hash", "protocol_sha256"),
                Col("Results sha256", "results_sha256")]
CHANGELOG_COLS = [Col("Tag", "tag"), Col("Run", "run_id"), Col("Created", "created_at"), Col("Protocol", "protocol"),
                  Col("Protocol id", "protocol_id"), Col("Protocol hash", "protocol_hash"),
                  Col("Scores before commitment", "scores_before_commit", "int"), Col("Scores", "scores_total", "int")]
AMEND_LOG_COLS = [Col("Version", "version", "int"), Col("Logged", "committed_at"), Col("File date", "date"),
                  Col("Summary", "summary"), Col("After results", "after_results"), Col("Hash", "hash")]
SUB_COLS = [
    Col("Composite", ("scores", "composite"), "num2", "0-100 after penalties"),
    Col("Bypass rate (95% CI)", ("scores", "bypass_rate"), "num3", "mean per-test median human-likelihood; interval "
        "as the bundle publishes it (method: see above)", sub=("score_intervals", "bypass_rate_ci_95"), sub_fmt="num3ci"),
    Col("Meaning (95% CI)", ("scores", "meaning_preservation"), "num3", "interval as the bundle publishes it",
        sub=("score_intervals", "meaning_preservation_ci_95"), sub_fmt="num3ci"),
    Col("Readability", ("scores", "readability"), "num3"),
    Col("Consistency", ("scores", "consistency_across_categories"), "num3"),
    Col("Penalties", "penalty_total", "signed", "sum of penalty deltas, points; codes below", sub="penalty_codes"),
    Col("Tests ok", "successful_test_count", "int", "successful tests; flagged tests below", sub="flagged_test_count",
        sub_fmt="int", sub_label="flagged"),
    Col("Plan", "plan_tier_used"),
]
LB_COLS = [Col("Rank", "rank", "int", sub="rank_change", sub_fmt="signed", sub_label="change"),
           Col("Humanizer", "slug", link="href"), *SUB_COLS]
UNAVAIL_COLS = [Col("Humanizer", "slug", link="href"), Col("Reason", "reason"), Col("Attempted", "attempted_test_count", "int"),
                Col("Successful", "successful_test_count", "int"), Col("Unavailable", "unavailable_test_count", "int")]
H_CYCLE_COLS = [Col("Cycle", "cycle", link="cycle_href"),
                Col("Rank", "rank", "int", "rank out of the humanizers ranked that cycle; change below", of="n_ranked",
                    sub="rank_change", sub_fmt="signed", sub_label="change"),
                *SUB_COLS, Col("Settings", "settings_used")]
PEN_COLS = [Col("Cycle", "cycle"), Col("Code", "code"), Col("Occurrences", "count", "int"), Col("Points", "score_delta", "signed")]
H_UNAVAIL_COLS = [Col("Cycle", "cycle", link="cycle_href"), Col("Reason", "reason"), Col("Attempted", "attempted_test_count", "int"),
                  Col("Successful", "successful_test_count", "int"), Col("Unavailable", "unavailable_test_count", "int")]
RATING_MEANING_COLS = [
    Col("Tool", "tool"),
    Col("Meaning score, mean (1-5)", "meaning_score_mean", "num2", "mean over complete outputs of each output's "
        "median read (two reads: their average); higher keeps more meaning"),
    Col("First reader, mean", "first_read_mean", "num2", "mean of the first read of each complete output"),
    Col("Second reader, mean", "second_read_mean", "num2", "mean of the second read of each complete output"),
    Col("Outputs complete", "outputs_complete", "int", of="outputs"),
    Col("Dropped claims", "dropped_claims_total", "num2", "total over complete outputs; mean per output below",
        sub="dropped_claims_mean", sub_fmt="num2", sub_label="per output"),
    Col("Invented facts", "invented_facts_total", "num2", sub="invented_facts_mean", sub_fmt="num2",
        sub_label="per output"),
    Col("Changed numbers, names, dates", "changed_facts_total", "num2", sub="changed_facts_mean", sub_fmt="num2",
        sub_label="per output"),
]
RATING_AGREE_COLS = [
    Col("Tool", "tool"),
    Col("Third reads due", "third_reads", "int", "outputs whose first two scores differed by 2 or more"),
    Col("Third reads done", "third_reads_done", "int"),
    Col("Krippendorff's alpha (ordinal)", "krippendorff_alpha_ordinal", "num3", "agreement of the two first readers "
        "over this tool's outputs; 1 = perfect agreement, 0 = chance; 95% CI: percentile bootstrap over outputs",
        sub="alpha_note", also=(("interval", "krippendorff_alpha_ci_95", "num3ci"),)),
    Col("Outputs with both first reads", "alpha_outputs", "int", "the units alpha is computed over"),
]


def rating_error_cols(d: dict[str, Any]) -> list[Col]:
    """Tool, one column per writing class (rubric 001's six), and the total, per 100 words."""
    return [Col("Tool", "tool"),
            *[Col(d["class_names"].get(c, c), ("errors_per_100_words", c), "num2") for c in d["writing_classes"]],
            Col("All writing classes", "errors_per_100_words_total", "num2", "lower is better"),
            Col("Words read", "output_words", "int", "words in the complete outputs")]


CHECK_COLS = [Col("Check", "name"), Col("Result", "result"), Col("Detail", "detail")]


def breakdown_cols(first: Col, key: str, names: Sequence[str], extra: Sequence[Col] = ()) -> list[Col]:
    return [first, *extra, *[Col(n, (key, n), "num3") for n in names]]


# --- pages ---------------------------------------------------------------------------
@dataclass
class Page:
    name: str
    title: str
    template: str
    data: dict[str, Any]
    section: str
    figures: list[dict[str, str]] = field(default_factory=list)


@dataclass
class ReportResult:
    """What :func:`build_report` wrote: the site folder, its pages and timings (seconds)."""

    out: Path
    pages: list[str]
    figures: int
    seconds: float
    notes: list[str] = field(default_factory=list)
    pdf: Path | None = None


def _unique(name: str, taken: set[str]) -> str:
    base, k = name, 2
    while name in taken:
        name, k = f"{base}-{k}", k + 1
    taken.add(name)
    return name


def classify(inputs: Sequence[str | Path]) -> tuple[list[Path], list[Path], list[Path]]:
    """Split inputs into (workspaces, cycle bundles, run-results JSON files).

    A folder holding ``veribench.duckdb`` is a workspace; one holding ``leaderboard.json``
    is a cycle bundle; a folder whose sub-folders are bundles contributes each of them.
    Raises :class:`InputError` naming any input that is none of these.
    """

    ws, bundles, files = [], [], []
    if not inputs:
        raise InputError("give at least one workspace, cycle bundle or folder of bundles")
    for raw in inputs:
        p = Path(raw)
        if not p.exists():
            raise InputError("no such file or folder", file=str(p))
        if p.is_file() and p.suffix.lower() == ".json":
            files.append(p)
        elif p.is_dir() and (p / DB_NAME).is_file():
            ws.append(p)
        elif p.is_dir() and runmod.is_published_run(p):
            files.append(p)  # a detector-run bundle: verified, then reported like a run results file
        elif cyc.is_bundle(p):
            bundles.append(p)
        elif p.is_dir() and any(cyc.is_bundle(c) for c in p.iterdir()):
            bundles.extend(sorted(c for c in p.iterdir() if cyc.is_bundle(c)))
        else:
            raise InputError(
                f"not a workspace (no {DB_NAME}), cycle bundle (no leaderboard.json), folder of bundles, "
                "or run results .json",
                file=str(p),
            )
    return ws, bundles, files


def check_out(out: Path, replaceable: Collection[str] = ()) -> None:
    """Refuse a site folder ``out`` that :func:`build_report` may not replace: a file, or a
    non-empty folder without an earlier report's marker (unless every entry in it is named
    in ``replaceable``, such as the flat files an earlier ``veribench demo`` wrote).

    Raises:
        InputError: naming ``out`` and what to do.
    """
    if out.exists():
        if not out.is_dir():
            raise InputError("output path exists and is not a folder", file=str(out))
        names = {p.name for p in out.iterdir()}
        if names and not (out / MARKER).exists() and not names <= set(replaceable):
            raise InputError("output folder is not empty and was not written by `veribench report`; "
                             "choose an empty or new folder", file=str(out))


def _staging(out: Path) -> Path:
    """A fresh sibling folder to build in; it replaces ``out`` only once the whole site is written."""
    st = out.with_name(f".{out.name}.building-{os.getpid()}")
    shutil.rmtree(st, ignore_errors=True)
    st.mkdir(parents=True)
    (st / MARKER).write_text("written by veribench report; safe to delete\n")
    for sub in ("data", "img", "files", "assets"):
        (st / sub).mkdir()
    return st


def _swap_in(staging: Path, out: Path) -> None:
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        shutil.rmtree(old, ignore_errors=True)
        out.rename(old)
    staging.rename(out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def build_report(inputs: Sequence[str | Path], out: str | Path, *, verify: bool = True,
                 progress: Callable[[str], None] | None = None, pdf: bool = False,
                 replaceable: Collection[str] = ()) -> ReportResult:
    """Write the static report site for workspaces, cycle bundles and run-results files.

    Args:
        inputs: workspace folders, cycle bundle folders, folders of bundles, or
            ``veribench evaluate --json`` files.
        out: site folder; created, or rebuilt if an earlier report lives there.
        verify: run ``veribench.cycles.verify`` on each bundle (when installed).
        progress: called with a short message per step.
        pdf: also write ``report.pdf`` in the site folder: the same pages, one section
            each, charts as vectors (:mod:`veribench.report.pdf`, WeasyPrint).
        replaceable: file names that may fill a folder ``out`` without the site's marker,
            which is then replaced (see :func:`check_out`).

    Raises:
        InputError: an input is none of the above, a workspace has no run, a bundle's
            leaderboard is malformed, or ``out`` holds unrelated files.
        PdfError: ``pdf`` was asked for and WeasyPrint or Pango is missing.
    """
    t0 = time.perf_counter()
    say = progress or (lambda m: None)
    out = Path(out)
    ws_paths, bundle_paths, run_files = classify(inputs)
    check_out(out, replaceable)
    final, out = out, _staging(out)
    try:
        res = _build(ws_paths, bundle_paths, run_files, out, verify, say)
        if pdf:
            say("PDF")
            write_pdf(out, res.pages, out / PDF_NAME)
            res.pdf = final / PDF_NAME
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)  # a failed build leaves the earlier report as it was
        raise
    _swap_in(out, final)
    res.out = final
    res.seconds = time.perf_counter() - t0
    return res


def _build(ws_paths: list[Path], bundle_paths: list[Path], run_files: list[Path], out: Path, verify: bool,
           say: Callable[[str], None]) -> ReportResult:
    img = out / "img"
    taken: set[str] = {"index", "trends", "run-trends"}
    trend_runs: list[dict[str, Any]] = []
    pages: list[Page] = []
    notes: list[str] = []

    # -- detector runs ----------------------------------------------------------------
    run_summaries: list[dict[str, Any]] = []
    ratings_summaries: list[dict[str, Any]] = []
    for p in ws_paths:
        _workspace_pages(p, out, taken, pages, notes, run_summaries, ratings_summaries, say, trend_runs)
    for f in run_files:
        verification = None
        if f.is_dir():
            results, verification = runmod.load_bundle_run(f, verify=verify)
            if verification["status"] != "verified":
                notes.append(f"{f}: bundle {verification['status']} ({verification['detail']})")
        else:
            try:
                results = json.loads(f.read_text(encoding="utf-8"))
            except json.JSONDecodeError as e:
                raise InputError(f"not valid JSON ({e.msg} at line {e.lineno})", file=str(f)) from None
            notes.append(f"{f}: run results file, so no raw per-document downloads")
        _run_page(results, str(f), [], None, out, taken, pages, run_summaries, say, verification=verification,
                  kind="published bundle" if f.is_dir() else "run results file")
        trend_runs.append(results)
    if len({str((r.get("run") or {}).get("tag")) for r in trend_runs}) >= 2:
        d = runmod.run_trends_data(trend_runs)
        pages.append(Page("run-trends", "Detector runs over time", "run_trends.html", d, "Detector runs",
                          runmod.run_trends_figures(d, img)))

    # -- cycles -----------------------------------------------------------------------
    bundles = cyc.sort_bundles([cyc.load_bundle(p, verify=verify) for p in dict.fromkeys(p.resolve() for p in bundle_paths)])
    seen: dict[str, Path] = {}
    for b in bundles:
        if b["name"] in seen:
            raise InputError(f"two bundles are both cycle {b['name']!r} (the other is {seen[b['name']]}); "
                             "give each cycle once", file=str(b["path"]))
        seen[b["name"]] = b["path"]
    cycle_names: dict[str, str] = {}
    for b in bundles:
        cycle_names[b["name"]] = _unique(f"cycle-{cyc.slugify(b['name'])}", taken)
    h_names: dict[str, str] = {}

    def h_href(slug: str) -> str:
        if slug not in h_names:
            h_names[slug] = _unique(f"humanizer-{cyc.slugify(slug)}", taken)
        return f"{h_names[slug]}.html"

    def c_href(name: str) -> str:
        return f"{cycle_names[name]}.html"

    cycle_summaries = []
    for b in bundles:
        say(f"cycle {b['name']}")
        d = cyc.cycle_page_data(b, h_href)
        name = cycle_names[b["name"]]
        pages.append(Page(name, f"Cycle {b['name']}", "cycle.html", d, "Humanizer cycles", cyc.cycle_figures(d, img, name)))
        top = d["leaderboard"][0] if d["leaderboard"] else None
        cycle_summaries.append({"cycle": b["name"], "href": f"{name}.html", "verification": d["verification"]["status"],
                                "methodology_version": d["meta"]["methodology_version"],
                                "ranked": len(d["leaderboard"]), "unavailable": len(d["unavailable"]),
                                "top": top["slug"] if top else None,
                                "top_href": top["href"] if top else None,
                                "top_composite": top["scores"].get("composite") if top else None})
        if d["verification"]["status"] == "not verified":
            notes.append(f"{b['path']}: not verified ({d['verification']['detail']})")
    for slug, d in cyc.humanizer_pages_data(bundles, c_href, h_href).items():
        name = h_href(slug)[: -len(".html")]
        pages.append(Page(name, f"Humanizer {slug}", "humanizer.html", d, "Humanizers", cyc.humanizer_figures(d, img, name)))
    if len(bundles) >= 2:
        d = cyc.trends_data(bundles, h_href)
        pages.append(Page("trends", "Trends across cycles", "trends.html", d, "Humanizer cycles", cyc.trends_figures(d, img)))

    # -- index ------------------------------------------------------------------------
    index = {"kind": "index", "runs": run_summaries, "cycles": cycle_summaries, "ratings": ratings_summaries,
             "has_trends": len(bundles) >= 2, "veribench_version": __version__,
             "has_run_trends": any(p.name == "run-trends" for p in pages)}
    index_figs = [f for r in run_summaries for f in r.pop("figures", [])]
    pages.insert(0, Page("index", "veribench report", "index.html", index, "Overview", index_figs))

    _write_site(out, pages)
    n_fig = sum(len(p.figures) for p in pages)
    return ReportResult(out=out, pages=[f"{p.name}.html" for p in pages], figures=n_fig, seconds=0.0, notes=notes)


def _workspace_pages(path: Path, out: Path, taken: set[str], pages: list[Page], notes: list[str],
                     run_summaries: list, ratings_summaries: list, say: Callable[[str], None],
                     trend_runs: list | None = None) -> None:
    """Run page (newest run) and ratings page of one workspace; it must hold at least one of them."""

    try:
        ws = Workspace(path, read_only=True)
    except Exception as e:
        raise InputError(f"cannot open workspace read-only ({e})", file=str(path)) from None
    try:
        try:
            results = runmod.latest_results(ws)
        except InputError as e:
            results, no_run = None, e
        name = None
        if results is not None:
            name = _run_page(results, str(path), runmod._runs_table(ws), ws, out, taken, pages, run_summaries, say,
                             kind="workspace")
            if trend_runs is not None:
                trend_runs.extend(runmod.all_results(ws))
        label = next(p.data["run"].get("tag") for p in pages if p.name == name) if name else path.name
        rdata, why = ratingsview.ratings_data(ws, path)
        if rdata:
            rname = _unique(f"ratings-{cyc.slugify(label or path.name)}", taken)
            rdata["run_tag"] = label
            pages.append(Page(rname, f"Ratings · {label}", "ratings.html", rdata, "Ratings",
                              ratingsview.ratings_figures(rdata, out / "img", rname)))
            ratings_summaries.append({"href": f"{rname}.html", "label": label, "tools": len(rdata["rows"])})
        else:
            notes.append(f"{path}: no ratings page ({why})")
            if results is None:
                raise no_run
    finally:
        ws.close()


def _add_reasons(data: dict[str, Any], results: dict[str, Any]) -> None:
    """Carry the reasons of null rates into the report's derived rows (subgroup FPR),
    and add the side rows, so the page shows why a value is missing."""
    by = {(r.get("slice_type"), r.get("slice"), r.get("detector")): r for r in data.get("table2") or []}
    for r in data.get("subgroup_fpr") or []:
        stype, _, sl = str(r.get("slice", "")).partition(": ")
        src = by.get((stype, sl, r.get("detector"))) or {}
        if r.get("fpr") is None and src.get("fpr_reason"):
            r["fpr_reason"] = src["fpr_reason"]
    data["side_rows"] = [dict(r) for r in results.get("side_rows") or []]


def _run_page(results: dict[str, Any], source: str, runs_list: list, ws, out: Path, taken: set[str],
              pages: list[Page], run_summaries: list, say: Callable[[str], None],
              verification: dict[str, Any] | None = None, kind: str = "workspace") -> str:
    """Add the run page (and its comparisons page) of ``results``; returns the page name.

    ``kind`` says where the run was read from (``workspace``, ``published bundle``, ``run
    results file``); ``verification`` is a bundle's verdict. A bundle that did not verify
    leads its page, and its index entry, with that verdict: its numbers are the bundle's
    claims, not checked ones."""
    data = runmod.run_page_data(results, source=source, runs=runs_list)
    data["source_kind"] = kind
    data["read_from"] = f"{kind} {data['source']}"  # one line of the facts: which copy this page shows
    data["verification"] = verification
    if verification is not None and verification["status"] != "verified":
        integ = data["integrity"]
        integ["status"] = f"bundle {verification['status']}"
        integ["tone"] = runmod.integrity_tone(integ["status"])
        integ["lines"].insert(0, {"text": f"This published bundle did not verify ({verification['status']}: "
                                          f"{verification['detail']}); the numbers on this page are what the "
                                          "bundle claims, not numbers veribench re-derived.", "alert": True})
    _add_reasons(data, results)
    full_view = runview.enrich(data, results)
    tag = data["run"].get("tag") or data["run"].get("run_id") or Path(source).stem
    name = _unique(f"run-{cyc.slugify(tag)}", taken)
    if ws is not None:
        say(f"run {tag}: exporting raw per-document scores")
        csv = ws.export_scores(out / "files" / f"{name}-raw_scores.csv")
        pq = ws.export_scores(out / "files" / f"{name}-raw_scores.parquet")
        data["downloads"] = {
            "csv": f"files/{csv.name}", "csv_bytes": csv.stat().st_size,
            "parquet": f"files/{pq.name}", "parquet_bytes": pq.stat().st_size,
            "rows": _row_count(ws),
        }
    compare = None
    if full_view and full_view["entries"]:
        compare = _unique(f"compare-{cyc.slugify(tag)}", taken)
        data["compare_href"] = f"{compare}.html"
    say(f"run {tag}: charts")
    figs = runview.run_figures(data, out / "img", name)
    pages.append(Page(name, f"Detector run {tag}", "run.html", data, "Detector runs", figs))
    if compare:
        pages.append(Page(compare, f"Which differences are real · {tag}", "comparisons.html",
                          {"kind": "comparisons", "run_tag": tag, "run_href": f"{name}.html", "source": data["source"],
                           "view": full_view, "gaps": data["gaps"], "gap_sets": data["gap_sets"],
                           "corrections": data["corrections"]}, "Detector runs"))
    land = runview.landing(data)
    run_summaries.append({"name": name, "href": f"{name}.html", "tag": tag,
                          "created_at": data["run"].get("created_at"),
                          "n_documents": data["run"].get("n_documents"),
                          "n_detectors": len({r.get("detector") for r in data["table1"]}),
                          "protocol": (data["run"].get("protocol") or {}).get("name"),
                          "integrity": data["integrity"]["lines"][0]["text"] if data["integrity"]["lines"] else None,
                          "integrity_tone": data["integrity"]["tone"],
                          "integrity_href": f"{name}.html#pre-registration" if data["integrity"].get("explanation")
                          else None,
                          "source_kind": kind,
                          "compare_href": data.get("compare_href"), "landing": land,
                          "figures": runview.landing_figures(data, out / "img", name, prefix=name)})
    return name


def _row_count(ws) -> int:
    return ws.query(f"SELECT count(*) FROM ({ws.RAW_SCORES_SQL})")[0][0]


def _env():
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    env = Environment(loader=FileSystemLoader(str(HERE / "templates")), autoescape=select_autoescape(["html"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals.update(cell=cell, pointer=pointer, table=render_table, get_path=get_path, fmt=format_value,
                       C=globals(), breakdown_cols=breakdown_cols, Col=Col,
                       table1_cols=table1_cols, table1_detail_cols=table1_detail_cols, table2_cols=table2_cols,
                       side_row_cols=side_row_cols, gap_cols=gap_cols, landing_gap_cols=landing_gap_cols, tpr_cols=tpr_cols,
                       rating_error_cols=rating_error_cols, pick=lambda seq, idx: [seq[i] for i in idx])
    return env


def _json_default(o: Any) -> Any:
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "isoformat"):
        return o.isoformat()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _clean(o: Any) -> Any:
    """Non-finite floats become null (shown as a dash): the JSON beside a page is strict JSON."""
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


def _write_site(out: Path, pages: list[Page]) -> None:
    env = _env()
    shutil.copyfile(HERE / "static" / "report.css", out / "assets" / "report.css")
    nav: dict[str, list[tuple[str, str]]] = {}
    for p in pages:
        nav.setdefault(p.section, []).append((f"{p.name}.html", p.title))
    for p in pages:
        text = json.dumps(_clean(p.data), ensure_ascii=False, indent=1, sort_keys=True, default=_json_default, allow_nan=False)
        (out / "data" / f"{p.name}.json").write_text(text + "\n", encoding="utf-8")
        # Render from the JSON as written, so the page and its data file cannot disagree.
        d = json.loads(text)
        html = env.get_template(p.template).render(d=d, page=p, nav=nav, figures=p.figures, version=__version__,
                                                   data_href=f"data/{p.name}.json")
        (out / f"{p.name}.html").write_text(html, encoding="utf-8")
