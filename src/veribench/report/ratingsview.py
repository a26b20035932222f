"""The ratings page: the editors' rubric (spec 001) per tool, in the rubric's terms and order.

Per tool: the mean meaning score (1-5) with both first readers' mean scores; dropped
claims, invented facts and changed numbers/names/dates; writing errors per 100 words per
writing class (a stacked bar chart and its table); third reads; Krippendorff's alpha with
its note. Every figure comes from ``veribench.rubric.results`` (``tool_results`` and
``output_results``, read-only); the report adds only the two readers' means, which are the
mean of each output's first and second read over the tool's complete outputs (the outputs
whose median enters the meaning score).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from veribench.report import plots
from veribench.rubric import results as rres
from veribench.rubric import rules as rrules
from veribench.rubric.db import store_exists


def _mean(xs: list[float]) -> float | None:
    return float(statistics.fmean(xs)) if xs else None


def ratings_data(ws, path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(page data, None) or (None, why there is no ratings page).

    Page data: ``{"kind": "ratings", "source", "rows": [tool results + reader means],
    "writing_classes": [ids], "class_names": {id: name}, "overall": {...}, "rules": {...}}``.
    """
    if not store_exists(path, ws.con):
        return None, "no rubric ratings in the workspace"
    try:
        rows = [dict(r) for r in rres.tool_results(ws) or []]
        outputs = rres.output_results(ws)
    except Exception as e:
        return None, f"could not read rubric ratings ({type(e).__name__}: {e})"
    if not rows:
        return None, "rubric tables hold no ratings"
    by_tool: dict[str, list[dict[str, Any]]] = {}
    for o in outputs:
        by_tool.setdefault(o.get("tool"), []).append(o)
    classes = list(rrules.WRITING_CLASSES)
    names = {c: rrules.CLASS_BY_ID[c]["label"] for c in classes}
    for r in rows:
        done = [o for o in by_tool.get(r.get("tool"), []) if o.get("complete")]
        for k, key in ((0, "first_read_mean"), (1, "second_read_mean")):
            r[key] = _mean([o["first_reads"][k] for o in done if (o.get("first_reads") or [None, None])[k] is not None])
        r["third_reads_note"] = None if r.get("third_reads") else "no output's first two scores differed by 2 or more"
        if r.get("meaning_score_mean") is None:  # the reason every per-tool figure shares (rubric results)
            for k in ("meaning_score_mean", "first_read_mean", "second_read_mean", "dropped_claims_mean",
                      "invented_facts_mean", "changed_facts_mean", "errors_per_100_words_total",
                      "errors_per_100_words", "dropped_claims_total", "invented_facts_total", "changed_facts_total"):
                r[f"{k}_reason"] = "no complete output yet (both first reads, and a due third read, are needed)"
    overall = None
    try:
        doc = rres.results_document(ws)
        overall, rules_doc = doc.get("overall"), doc.get("rules")
    except Exception:  # the per-tool rows stand on their own
        rules_doc = None
    extra = sorted({c for r in rows for c in (r.get("errors_per_100_words") or {}) if c not in classes})
    return ({"kind": "ratings", "source": path.name, "rows": rows, "writing_classes": classes + extra,
             "class_names": {**names, **{c: c.replace("_", " ") for c in extra}}, "overall": overall,
             "rules": rules_doc}, None)


def ratings_figures(data: dict[str, Any], img_dir: Path, stem: str) -> list[dict[str, str]]:
    """The stacked bar chart of writing errors per 100 words, one segment per writing class."""
    rows = data["rows"]
    classes = data["writing_classes"]
    parts = {data["class_names"].get(c, c): [(r.get("errors_per_100_words") or {}).get(c) for r in rows] for c in classes}
    if not any(plots._finite(v) for vals in parts.values() for v in vals):
        return []
    p = plots.stacked_bars([str(r.get("tool")) for r in rows], parts, img_dir / f"{stem}-errors.svg",
                           xlabel="writing errors per 100 words of output (counted when two readers mark them)")
    return [{"id": "errors", "file": f"img/{p.name}",
             "alt": "Stacked bars of writing errors per 100 words for each tool, one segment per writing class.",
             "caption": "Writing errors per 100 words per writing class (rubric 001: an error counts when two readers "
                        "mark the same sentence with the same class)."}]
