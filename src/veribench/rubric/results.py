"""Aggregates of the editors' readings: per-output combination, per-tool results,
Krippendorff's alpha, and the ``ratings.csv`` export.

Schemas: ``docs/ratings-schema.md`` (ratings.csv and the results JSON). Rules: rubric 001
via :mod:`veribench.rubric.rules`.

Per output (only outputs whose readings are complete: both first reads, and the third
read when the gap called for one):

* meaning score, dropped claims, invented facts, changed numbers/names/dates: the median
  of the output's reads (:data:`rules.OUTPUT_COMBINE_RULE`);
* writing errors: a (sentence, class) mark counts once when at least ``MARK_QUORUM``
  readers of the output marked it (rubric: "counted only if two of three readers mark it").

Per tool: mean of per-output scores and counts; errors per 100 words = 100 x (counted
errors over the tool's complete outputs) / (their output words), per writing class and in
total, so a 600-word output with 6 errors and a 300-word output with 3 both read 1.0.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from veribench.metrics.intervals import bootstrap_reason, checked
from veribench.rubric import rules
from veribench.rubric.store import ensure_schema
from veribench.store.workspace import Workspace

SCHEMA_ID = "veribench.rubric.results/1"

#: ratings.csv columns, in order (documented in docs/ratings-schema.md).
RATINGS_COLUMNS = [
    "blind_id", "editor", "read_no", "third_read", "score", "claims_listed", "claims_found", "dropped_claims",
    "invented_facts", "changed_facts", "output_words", "fk_grade_delta", "submitted_at",
    "mark_class", "mark_group", "mark_source", "sentence_index", "sentence_text", "mark_readers", "mark_counted",
]


def errors_per_100_words(errors: int | float, words: int | float) -> float | None:
    """``errors`` per ``WORDS_PER_UNIT`` (100) words of output; None when ``words`` is 0.

    >>> errors_per_100_words(6, 600), errors_per_100_words(3, 300)
    (1.0, 1.0)
    """
    if not words:
        return None
    return errors * rules.WORDS_PER_UNIT / words


def ordinal_alpha(first: list[float | None], second: list[float | None]) -> tuple[float | None, str | None]:
    """Krippendorff's alpha, ordinal metric, for two readers over the same outputs, via the
    ``krippendorff`` package (Krippendorff 2011, "Computing Krippendorff's alpha-reliability").

    ``first[i]``/``second[i]`` are the two first reads of output ``i`` (None when missing).
    The value domain is the full 1-5 scale. Returns (alpha in [-1, 1], None) or (None, reason)
    when alpha is undefined: fewer than two outputs with both reads, or no variation at all.
    """
    import krippendorff

    pairs = [(a, b) for a, b in zip(first, second) if a is not None and b is not None]
    if len(pairs) < 2:
        return None, f"needs at least 2 outputs with both first reads (has {len(pairs)})"
    if len({v for p in pairs for v in p}) < 2:
        return None, "all scores are equal: no variation, alpha is undefined"
    data = np.array(pairs, dtype=float).T
    a = float(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal",
                                 value_domain=list(range(rules.SCORE_MIN, rules.SCORE_MAX + 1))))
    if not math.isfinite(a):
        return None, "alpha is undefined for these scores"
    return a, None


#: Resamples and seed of the alpha interval (recorded in every result that carries one).
ALPHA_CI_RESAMPLES = 2000
ALPHA_CI_SEED = 20260701
ALPHA_CI_METHOD = ("percentile bootstrap over units (outputs with both first reads), resampled with replacement; "
                   "alpha recomputed by ordinal_alpha on each resample; resamples where alpha is undefined are "
                   "left out (Efron & Tibshirani 1993, ch. 13; Krippendorff 2011 sec. on bootstrapping alpha)")


def alpha_interval(first: list[float | None], second: list[float | None], seed: int = ALPHA_CI_SEED,
                   n_resamples: int = ALPHA_CI_RESAMPLES) -> tuple[list[float] | None, str | None]:
    """95% percentile-bootstrap interval of :func:`ordinal_alpha` over units, as ``(interval, reason)``.

    Units are the outputs with both first reads (pairs ``(first[i], second[i])``); each
    resample draws as many units with replacement (``numpy.random.default_rng(seed)``) and
    recomputes alpha; resamples where alpha is undefined (no variation) are left out. The
    interval is in alpha's units ([-1, 1]). ``(None, reason)`` when alpha itself is undefined,
    when no resample gives a value, or when the interval degenerates (the one rule of
    :mod:`veribench.metrics.intervals`).
    """
    a, why = ordinal_alpha(first, second)
    if a is None:
        return None, why
    pairs = [(x, y) for x, y in zip(first, second) if x is not None and y is not None]
    rng = np.random.default_rng(seed)
    reps = []
    for _ in range(n_resamples):
        idx = rng.integers(0, len(pairs), size=len(pairs))
        v, _why = ordinal_alpha([pairs[i][0] for i in idx], [pairs[i][1] for i in idx])
        if v is not None:
            reps.append(v)
    if not reps:
        return None, "alpha is undefined in every bootstrap resample: no interval"
    r = np.asarray(reps)
    lo, hi = np.percentile(r, [2.5, 97.5])
    return checked(lo, hi, None, bootstrap_reason(r))


def alpha_fields(first: list[float | None], second: list[float | None]) -> dict[str, Any]:
    """``krippendorff_alpha_ordinal``, ``alpha_note``, ``krippendorff_alpha_ci_95`` and
    ``krippendorff_alpha_ci_95_reason`` of two readers (:func:`ordinal_alpha`, :func:`alpha_interval`)."""
    a, note = ordinal_alpha(first, second)
    ci, why = alpha_interval(first, second) if a is not None else (None, note)
    return {"krippendorff_alpha_ordinal": a, "alpha_note": note, "krippendorff_alpha_ci_95": ci,
            "krippendorff_alpha_ci_95_reason": why}


def _load(ws: Workspace) -> tuple[dict[str, dict], dict[str, list[dict]], dict[str, list[tuple]]]:
    ws = ensure_schema(ws)
    items = {}
    for b, tool, words, read, source, pair_id in ws.query(
            "SELECT blind_id, tool, output_words, readability, source, pair_id FROM rubric_items"):
        items[b] = {"blind_id": b, "tool": tool, "output_words": words,
                    "readability": json.loads(read) if read else {}, "source": source, "pair_id": pair_id}
    reads: dict[str, list[dict]] = defaultdict(list)
    for row in ws.query(
            "SELECT blind_id, editor, read_no, score, claims, claims_found, dropped_claims, invented_facts, "
            "changed_facts, submitted_at FROM rubric_ratings ORDER BY blind_id, read_no, editor"):
        b, e, n, s, claims, found, d, i, ch, at = row
        reads[b].append({"editor": e, "read_no": n, "score": s, "claims": json.loads(claims),
                         "found": json.loads(found), "dropped_claims": d, "invented_facts": i,
                         "changed_facts": ch, "submitted_at": at})
    marks: dict[str, list[tuple]] = defaultdict(list)
    for b, e, i, text, cls in ws.query(
            "SELECT blind_id, editor, sentence_index, sentence_text, class FROM rubric_marks "
            "ORDER BY blind_id, editor, sentence_index, class"):
        marks[b].append((e, i, text, cls))
    return items, reads, marks


def _iso(v: Any) -> str:
    """A stored time as ISO 8601 text ("" when absent)."""
    if v is None:
        return ""
    return v if isinstance(v, str) else v.isoformat()


def _third_read_due(rs: list[dict]) -> bool:
    first = [r["score"] for r in rs if r["read_no"] <= rules.READERS_PER_OUTPUT]
    return len(first) == rules.READERS_PER_OUTPUT and max(first) - min(first) >= rules.THIRD_READ_GAP


def output_results(ws: Workspace) -> list[dict[str, Any]]:
    """One dict per loaded output (including its tool), with its combined reading.

    Keys: blind_id, tool, output_words, fk_grade_delta, reads (count), scores (list by
    read number), third_read_due, third_read (submitted), complete, meaning_score,
    dropped_claims, invented_facts, changed_facts (medians; None until complete),
    writing_errors ({class: counted marks}), errors_per_100_words (None until complete).
    """
    items, reads, marks = _load(ws)
    out = []
    for b in sorted(items):
        it, rs = items[b], reads.get(b, [])
        first = [r for r in rs if r["read_no"] <= rules.READERS_PER_OUTPUT]
        due = _third_read_due(rs)
        third = [r for r in rs if r["read_no"] > rules.READERS_PER_OUTPUT]
        complete = len(first) == rules.READERS_PER_OUTPUT and (not due or bool(third))
        readers: dict[tuple[int, str], set[str]] = defaultdict(set)
        for e, i, _text, cls in marks.get(b, []):
            readers[(i, cls)].add(e)
        counted = dict.fromkeys(rules.WRITING_CLASSES, 0)
        for (_i, cls), es in readers.items():
            if cls in counted and len(es) >= rules.MARK_QUORUM:
                counted[cls] += 1
        med = (lambda k: float(statistics.median(r[k] for r in rs))) if complete else (lambda k: None)
        out.append({
            "blind_id": b, "tool": it["tool"], "output_words": it["output_words"],
            "fk_grade_delta": it["readability"].get("fk_grade_delta"),
            "reads": len(rs), "scores": [r["score"] for r in rs], "third_read_due": due,
            "third_read": bool(third), "complete": complete,
            "meaning_score": med("score"), "dropped_claims": med("dropped_claims"),
            "invented_facts": med("invented_facts"), "changed_facts": med("changed_facts"),
            "writing_errors": counted if complete else None,
            "errors_per_100_words": errors_per_100_words(sum(counted.values()), it["output_words"])
            if complete else None,
            "first_reads": [r["score"] for r in first] + [None] * (rules.READERS_PER_OUTPUT - len(first)),
        })
    return out


def _mean(xs: list[float]) -> float | None:
    return float(statistics.fmean(xs)) if xs else None


def tool_results(ws: Workspace) -> list[dict[str, Any]]:
    """Per-tool results of the editors' rubric, sorted by tool name.

    Each dict (schema ``veribench.rubric.results/1``, see docs/ratings-schema.md):

    ``tool``; ``outputs`` loaded; ``outputs_complete`` (all reads in); ``reads`` submitted;
    ``meaning_score_mean`` (1-5, higher keeps more meaning; mean over complete outputs of
    the per-output median); ``dropped_claims_total``/``_mean``, ``invented_facts_total``/
    ``_mean``, ``changed_facts_total``/``_mean`` (per-output medians, summed / averaged);
    ``output_words`` (of complete outputs); ``writing_errors`` ({class: counted errors});
    ``errors_per_100_words`` ({class: rate}); ``errors_per_100_words_total``;
    ``third_reads`` (outputs that went to a third read), ``third_reads_done``;
    ``krippendorff_alpha_ordinal`` (two first readers; None with ``alpha_note`` when
    undefined), ``krippendorff_alpha_ci_95`` with ``krippendorff_alpha_ci_95_reason``
    (:func:`alpha_interval`), ``alpha_outputs``; ``fk_grade_delta_mean`` (output minus input Flesch-Kincaid
    grade; reported, never scored). Values are None while no output of the tool is complete,
    and then ``reason`` says so ("no rated pairs: 0 of N outputs have all their reads"; else None).
    """
    per_tool: dict[str, list[dict]] = defaultdict(list)
    for o in output_results(ws):
        per_tool[o["tool"]].append(o)
    res = []
    for tool in sorted(per_tool):
        os_ = per_tool[tool]
        done = [o for o in os_ if o["complete"]]
        words = sum(o["output_words"] for o in done)
        errs = {c: sum(o["writing_errors"][c] for o in done) for c in rules.WRITING_CLASSES}
        agree = alpha_fields([o["first_reads"][0] for o in os_], [o["first_reads"][1] for o in os_])
        r: dict[str, Any] = {
            "tool": tool, "outputs": len(os_), "outputs_complete": len(done), "reads": sum(o["reads"] for o in os_),
            "meaning_score_mean": _mean([o["meaning_score"] for o in done]),
        }
        for k in ("dropped_claims", "invented_facts", "changed_facts"):
            r[f"{k}_total"] = float(sum(o[k] for o in done)) if done else None
            r[f"{k}_mean"] = _mean([o[k] for o in done])
        r.update({
            "output_words": words,
            "writing_errors": errs if done else None,
            "errors_per_100_words": {c: errors_per_100_words(n, words) for c, n in errs.items()} if done else None,
            "errors_per_100_words_total": errors_per_100_words(sum(errs.values()), words) if done else None,
            "third_reads": sum(1 for o in os_ if o["third_read_due"]),
            "third_reads_done": sum(1 for o in os_ if o["third_read"]),
            **agree,
            "alpha_outputs": sum(1 for o in os_ if None not in o["first_reads"]),
            "fk_grade_delta_mean": _mean([o["fk_grade_delta"] for o in os_ if o["fk_grade_delta"] is not None]),
        })
        r["reason"] = None if done else f"no rated pairs: 0 of {len(os_)} outputs have all their reads"
        res.append(r)
    return res


def results_document(ws: Workspace) -> dict[str, Any]:
    """The results JSON: ``{"schema", "rules", "overall_alpha", "tools": tool_results(ws)}``."""
    outs = output_results(ws)
    agree = alpha_fields([o["first_reads"][0] for o in outs], [o["first_reads"][1] for o in outs])
    return {
        "schema": SCHEMA_ID,
        "rules": {"source": "shared/spec/001 (editors' reading rubric)", "score_scale": [rules.SCORE_MIN, rules.SCORE_MAX],
                  "third_read_gap": rules.THIRD_READ_GAP, "mark_quorum": rules.MARK_QUORUM,
                  "words_per_unit": rules.WORDS_PER_UNIT, "output_combine": rules.OUTPUT_COMBINE_RULE,
                  "writing_classes": rules.WRITING_CLASSES},
        "overall": {"outputs": len(outs), "outputs_complete": sum(o["complete"] for o in outs),
                    **agree},
        "alpha_ci_method": {"method": ALPHA_CI_METHOD, "confidence_level": 0.95, "n_resamples": ALPHA_CI_RESAMPLES,
                            "seed": ALPHA_CI_SEED},
        "tools": tool_results(ws),
    }


def ratings_rows(ws: Workspace, *, unblind: bool = False) -> list[dict[str, Any]]:
    """Rows of ratings.csv: one per mark of each reading (a reading without marks gives one
    row with empty mark fields). Dropped claims are rows with ``mark_source = claim`` and
    the claim line as ``sentence_text``. With ``unblind`` a ``tool`` column is added."""
    items, reads, marks = _load(ws)
    rows = []
    for b in sorted(reads):
        it = items[b]
        readers: dict[tuple[int, str], set[str]] = defaultdict(set)
        for e, i, _t, cls in marks.get(b, []):
            readers[(i, cls)].add(e)
        for r in reads[b]:
            base = {
                "blind_id": b, "editor": r["editor"], "read_no": r["read_no"],
                "third_read": str(r["read_no"] > rules.READERS_PER_OUTPUT).lower(), "score": r["score"],
                "claims_listed": len(r["claims"]), "claims_found": len(r["found"]),
                "dropped_claims": r["dropped_claims"], "invented_facts": r["invented_facts"],
                "changed_facts": r["changed_facts"], "output_words": it["output_words"],
                "fk_grade_delta": it["readability"].get("fk_grade_delta"),
                "submitted_at": _iso(r["submitted_at"]),
            }
            if unblind:
                base["tool"] = it["tool"]
            mine = []
            found = set(r["found"])
            for ci, claim in enumerate(r["claims"]):
                if ci not in found:
                    mine.append({"mark_class": "dropped_claim", "mark_group": rules.MEANING, "mark_source": "claim",
                                 "sentence_index": ci, "sentence_text": claim, "mark_readers": "", "mark_counted": ""})
            for e, i, text, cls in marks.get(b, []):
                if e != r["editor"]:
                    continue
                grp = rules.CLASS_BY_ID[cls]["group"]
                n = len(readers[(i, cls)])
                mine.append({"mark_class": cls, "mark_group": grp, "mark_source": "output", "sentence_index": i,
                             "sentence_text": text, "mark_readers": n,
                             "mark_counted": str(n >= rules.MARK_QUORUM).lower() if grp == rules.WRITING else ""})
            if not mine:
                mine = [dict.fromkeys(RATINGS_COLUMNS[13:], "")]
            rows.extend({**base, **m} for m in mine)
    return rows


def write_ratings_csv(ws: Workspace, path: str | Path | None = None, *, unblind: bool = False) -> str:
    """Write ratings.csv (UTF-8, comma-separated, header row, ``\\n`` line ends) to ``path``
    when given; returns the CSV text."""
    cols = RATINGS_COLUMNS + (["tool"] if unblind else [])
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for row in ratings_rows(ws, unblind=unblind):
        w.writerow(row)
    text = buf.getvalue()
    if path is not None:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return text
