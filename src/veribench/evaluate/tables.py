"""Render a run's Tables 1 (one per group of detectors scored on the same texts), Table 2,
side rows, robustness rows, agreement, comparisons and gaps to the terminal (rich),
Markdown, CSV, JSON and HTML.

Every undefined value is shown as a dash **with its reason** (``— (no decision rule)``)
in the terminal, Markdown and HTML; in CSV the value cell is empty and the
``<column>_reason`` cell names the reason; in JSON the value is ``null`` beside its
``<key>_reason``. A TPR at a fixed FPR whose threshold was set on the very texts it
reports is marked ``†`` (an in-sample oracle operating point) wherever it is shown.
"""

from __future__ import annotations

import csv
import html
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from veribench.console import wide_console
from veribench.errors import InputError
from veribench.evaluate import honesty
from veribench.evaluate.reasons import null_reason
from veribench.evaluate.run import export_run
from veribench.evaluate.trends import trend_lines

#: Marker of an in-sample oracle operating point (threshold set on the texts it reports).
IN_SAMPLE_MARK = "†"
IN_SAMPLE_NOTE = (f"{IN_SAMPLE_MARK} in-sample oracle operating point: the threshold was set on the human texts "
                  "this figure reports (no calibration human texts for this detector)")

T1_COLUMNS = [
    ("detector", "Detector"), ("version", "Version"), ("scan_date", "Scan date"),
    ("human_n", "Human n"), ("false_positives", "FP"), ("fpr", "FPR [95% CI]"),
    ("ai_n", "AI n"), ("detections", "Detected"), ("catch_rate", "Catch rate [95% CI]"),
    ("balanced_accuracy", "Bal. acc."), ("auroc", "AUROC [95% CI]"),
    ("tpr_at_fpr_1", "TPR@1%FPR"), ("tpr_at_fpr_5", "TPR@5%FPR"),
    ("excluded", "Excluded (not in n)"), ("hazards", "Input hazards"), ("languages", "Declared languages"),
]
T2_EXTRA = [("slice_type", "Slice type"), ("slice", "Slice")]
#: Compact Table 2 for the terminal (the files carry every column).
T2_TERMINAL = [("detector", "Detector"), ("slice_name", "Slice"), ("human_n", "Human n"), ("fpr", "FPR [95% CI]"),
               ("ai_n", "AI n"), ("catch_rate", "Catch rate [95% CI]"), ("edited_rate", "Edited flagged"),
               ("auroc", "AUROC [95% CI]")]
SIDE = [("edited_rate", "Edited flagged [95% CI]"), ("mixed_rate", "Mixed flagged [95% CI]")]
SIDE_ROW_COLUMNS = [("detector", "Detector"), ("group", "Side group"), ("human_n", "Human n"),
                    ("fpr", "FPR [95% CI]"), ("ai_n", "AI n"), ("catch_rate", "Catch rate [95% CI]"),
                    ("auroc", "AUROC [95% CI]"), ("auroc_negatives", "AUROC negatives"),
                    ("tpr_at_fpr_1", "TPR@1%FPR"), ("tpr_at_fpr_5", "TPR@5%FPR")]
AGREE_COLUMNS = [("slice_name", "Slice"), ("label", "Label"), ("n", "n (scored by all)"),
                 ("n_partial", "Left out (not scored by all)"), ("n_detectors", "Detectors"),
                 ("flagged_by_any", "Flagged by any"), ("flagged_by_all", "Flagged by all")]
DASH = "—"
ROBUST_TITLE = "Robustness: each detector on derived texts beside their unattacked sources (paired)"
ROBUST_NOTE = ("Pairs: a derived text and its source, both scored validly by the detector. Rates with Wilson 95% "
               "intervals; difference = derived − source over the same pairs, Newcombe paired interval, McNemar "
               "exact test (docs/robustness.md). Derived texts never enter the headline rates.")
#: Columns that hold names (detector, attack): shown whole in the terminal, never folded mid-word.
_NAME_KEYS = frozenset({"detector", "rb_attack"})
ROBUST_COLUMNS = [("detector", "Detector"), ("rb_attack", "Attack"), ("rb_metric", "Metric"), ("n_pairs", "Pairs"),
                  ("rb_attacked", "Attacked [95% CI]"), ("rb_source", "Source [95% CI]"),
                  ("rb_difference", "Difference [95% CI]"), ("rb_p", "p (McNemar exact)"),
                  ("rb_p_adj", "p (adjusted)"), ("rb_unpaired", "Not paired")]
GAP_COLUMNS = [("detector", "Detector"), ("gap_name", "Gap (a − b)"), ("metric", "Metric"), ("gap_a", "a"),
               ("gap_b", "b"), ("gap_estimate", "Difference [95% CI]"), ("gap_p", "p"), ("gap_p_adj", "p (adjusted)")]
METRIC_NAMES = {"fpr": "FPR", "catch_rate": "catch rate", "auroc": "AUROC"}


def robust_note(res: dict[str, Any]) -> str:
    """:data:`ROBUST_NOTE` plus the correction family the robustness p-values belong to
    (``corrections.families``' ``robustness`` entry), so a raw p is never read as significant."""
    cor = res.get("corrections") or {}
    fam = next((f for f in cor.get("families") or [] if f.get("name") == "robustness"), None)
    if fam is None:
        return ROBUST_NOTE
    corr = "Holm's correction" if fam.get("correction") == "holm" else "no correction"
    return (f"{ROBUST_NOTE} p (adjusted): {corr} over the run's robustness family of {fam.get('size', 0)} tests "
            f"({fam.get('description')}); a change is significant only where the adjusted p is at most alpha "
            f"{cor.get('alpha', 0.05)}.")


def _slice_name(a: dict[str, Any]) -> str:
    kind = a.get("slice_type", "subgroup")
    return a["subgroup"] if kind in ("all", "subgroup") else f"{kind}={a['subgroup']}"


def _pct(x: Any) -> str:
    return DASH if x is None else f"{100 * x:.1f}%"


def _null(reason: Any) -> str:
    return f"{DASH} ({reason})" if reason else DASH


def _interval(ci: Any, f: Any, reason: Any) -> str:
    """``" [lo, hi]"`` with ``f`` formatting each end, or, where the interval is null, the
    reason: ``" (no interval: <reason>)"`` (``reason``: from :func:`reasons.null_reason`), or
    ``" (<reason>)"`` when the reason says "no interval" itself (the constants of
    :mod:`veribench.metrics.intervals` end so: never said twice)."""
    if ci:
        return f" [{f(ci[0])}, {f(ci[1])}]"
    if reason and "no interval" in str(reason):
        return f" ({reason})"
    return f" (no interval: {reason})" if reason else " (no interval)"


def _ci(rate: Any, ci: Any, pct: bool = True, reason: Any = None, ci_reason: Any = None) -> str:
    if rate is None:
        return _null(reason)
    f = (lambda v: f"{100 * v:.1f}") if pct else (lambda v: f"{v:.3f}")
    main = f"{100 * rate:.1f}%" if pct else f"{rate:.3f}"
    return main + _interval(ci, f, ci_reason)


def _excluded_text(row: dict[str, Any]) -> str:
    ex = row.get("excluded") or {}
    if not ex:
        return "0"
    return f"{sum(ex.values())} (" + ", ".join(f"{k} {v}" for k, v in ex.items()) + ")"


def _hazard_text(row: dict[str, Any]) -> str:
    hz = row.get("hazards")
    if hz is None:
        return _null(row.get("hazards_reason"))
    parts = [f"{k.replace('_', ' ')} {hz.get(k, 0)}" for k in ("confusables", "invisible", "degenerate_repetition")
             if hz.get(k)]
    return f"{', '.join(parts) or 'none'} (of {hz.get('checked', 0)})"


def _points(v: Any, signed: bool = True) -> str:
    return f"{100 * v:+.1f}" if signed else f"{100 * v:.1f}"


def _diff_text(block: dict[str, Any], pct: bool = True) -> str:
    """A difference (``block``'s ``estimate``) with its interval (``ci95``): ``+12.3 pts
    [+4.0, +20.1]`` (rates) or ``+0.052 [...]`` (AUROC); a null interval with its reason."""
    est = block.get("estimate")
    if est is None:
        return _null(block.get("reason"))
    f = (lambda v: f"{100 * v:+.1f}") if pct else (lambda v: f"{v:+.3f}")
    return f(est) + (" pts" if pct else "") + _interval(block.get("ci95"), f, null_reason(block, "ci95"))


def _p_text(p: Any, reason: Any = None) -> str:
    if p is None:
        return _null(reason)
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def _robust_cell(row: dict[str, Any], key: str) -> str:
    if key == "rb_attack":
        v = row.get("variant")
        extra = f" (seed {v.get('seed')})" if isinstance(v, dict) and v.get("seed") is not None else ""
        how = "" if row.get("derivation") in ("attack", row.get("attack")) else f" [{row.get('derivation')}]"
        return f"{row.get('attack')}{how}{extra}"
    if key == "rb_metric":
        return METRIC_NAMES.get(row.get("metric"), str(row.get("metric")))
    if key in ("rb_attacked", "rb_source"):
        b = row.get(key[3:]) or {}
        if b.get("rate") is None:
            return _null(b.get("reason"))
        return f"{b['k']}/{b['n']} " + _ci(b["rate"], b.get("ci95"), ci_reason=null_reason(b, "ci95"))
    d = row.get("difference") or {}
    if key == "rb_difference":
        return _diff_text(d)
    if key in ("rb_p", "rb_p_adj"):
        p = d.get("p_value" if key == "rb_p" else "p_adjusted")
        return _p_text(p, d.get("reason") if d.get("estimate") is None or p is None else None)
    un = row.get("unpaired") or {}
    return ", ".join(f"{k} {v}" for k, v in un.items()) or "0"


def _gap_cell(row: dict[str, Any], key: str) -> str:
    if key == "gap_name":
        return f"{row.get('label_a')} − {row.get('label_b')}"
    if key in ("gap_a", "gap_b"):
        s_ = key[-1]
        k, n, r = row.get(f"k_{s_}"), row.get(f"n_{s_}"), row.get(f"rate_{s_}")
        if r is not None:
            return f"{k}/{n} ({_pct(r)})"
        return f"{DASH} (no texts)" if not n else f"{DASH} (n={n}; {row.get('reason') or 'undefined'})"
    if key == "gap_estimate":
        return _diff_text(row)
    if key == "gap_p":
        return _p_text(row.get("p_value"), row.get("reason"))
    return _p_text(row.get("p_adjusted"), row.get("reason"))


def cell(row: dict[str, Any], key: str) -> str:
    """Formatted text of one table cell (undefined values as a dash with their reason)."""
    if key.startswith("rb_"):
        return _robust_cell(row, key)
    if key.startswith("gap_"):
        return _gap_cell(row, key)
    if key == "metric":
        return METRIC_NAMES.get(row.get("metric"), str(row.get("metric")))
    if key in ("fpr", "catch_rate", "edited_rate", "mixed_rate"):
        txt = _ci(row.get(key), row.get(f"{key}_ci95"), reason=row.get(f"{key}_reason"),
                  ci_reason=null_reason(row, f"{key}_ci95"))
        if key in ("edited_rate", "mixed_rate"):
            pre = key.split("_")[0]
            if not row.get(f"{pre}_n"):
                return _null(row.get(f"{key}_reason") or f"no {pre} texts")
            return f"{txt} (n={row[f'{pre}_n']})"
        return txt
    if key == "auroc":
        return _ci(row.get("auroc"), row.get("auroc_ci95"), pct=False, reason=row.get("auroc_reason"),
                   ci_reason=null_reason(row, "auroc_ci95"))
    if key == "balanced_accuracy":
        return _null(row.get("balanced_accuracy_reason")) if row.get(key) is None else f"{row[key]:.3f}"
    if key.startswith("tpr_at_fpr_"):
        v = row.get(key) or {}
        if v.get("tpr") is None:
            return _null(v.get("reason"))
        mark = IN_SAMPLE_MARK if "in-sample" in str(v.get("threshold_source") or "") else ""
        fpr = v.get("achieved_fpr")
        achieved = _pct(fpr) if fpr is not None else _null(null_reason(v, "achieved_fpr") or "not recorded")
        return (f"{_pct(v['tpr'])}{mark}" + _interval(v.get("ci95"), lambda x: f"{100 * x:.1f}",
                                                      null_reason(v, "ci95"))
                + f" (achieved FPR {achieved})" + _borrowed(row, v)
                + (f" ({v['threshold_note']})" if v.get("threshold_note") else ""))
    if key in ("false_positives", "detections"):
        v = row.get(key)
        denom = row.get("human_n" if key == "false_positives" else "ai_n")
        if v is None or denom == 0:  # no count of flags where there was nothing to flag
            return _null(row.get("fpr_reason" if key == "false_positives" else "catch_rate_reason"))
        return str(v)
    if key == "excluded":
        return _excluded_text(row)
    if key == "hazards":
        return _hazard_text(row)
    if key == "languages" and row.get(key) is None:
        return str(row.get("languages_reason") or DASH)
    if key == "slice_name":
        if "slice" not in row:
            return _slice_name(row)
        kind = row.get("slice_type", "subgroup")
        return row["slice"] if kind == "subgroup" else f"{kind}={row['slice']}"
    v = row.get(key)
    if isinstance(v, list):
        return ", ".join(map(str, v))
    return DASH if v is None else str(v)


def _borrowed(row: dict[str, Any], v: dict[str, Any]) -> str:
    """`` (threshold set on corpus X)`` when a TPR's threshold comes from another corpus's texts."""
    corp = v.get("threshold_corpus") or []
    grp = str(row.get("group") or "")
    if not corp or grp in (f"corpus:{c}" for c in corp):
        return ""
    return f" (threshold set on corpus {', '.join(corp)})"


def _has_side(rows: Iterable[dict[str, Any]]) -> bool:
    return any(r.get("edited_n") or r.get("mixed_n") for r in rows)


def _tpr_columns(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    keys = []
    for r in rows:
        for k, v in r.items():
            if k.startswith("tpr_at_fpr_") and isinstance(v, dict) and k not in keys:
                keys.append(k)
    return [(k, f"TPR@{100 * (rows[0][k].get('target_fpr') or 0):g}%FPR") for k in keys] if rows else []


def columns(table: str, rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    base = [c for c in T1_COLUMNS if not c[0].startswith("tpr_at_fpr_")]
    cols = base[:11] + _tpr_columns(rows) + base[11:]
    if table == "table2":
        cols = [cols[0]] + T2_EXTRA + [c for c in cols[1:] if c[0] not in ("excluded", "hazards", "languages")]
    if _has_side(rows):
        cols += SIDE
    return cols


def _in_sample_rows(rows: list[dict[str, Any]]) -> bool:
    """Whether any TPR-at-FPR cell of ``rows`` carries the :data:`IN_SAMPLE_MARK`."""
    return any(k.startswith("tpr_at_fpr_") and isinstance(v, dict) and v.get("tpr") is not None
               and "in-sample" in str(v.get("threshold_source") or "") for r in rows for k, v in r.items())


def _in_sample_used(res: dict[str, Any]) -> bool:
    return any(_in_sample_rows(res.get(name) or []) for name in ("table1", "table2", "side_rows"))


def _mark_note(rows: list[dict[str, Any]]) -> list[str]:
    """The Markdown lines that explain :data:`IN_SAMPLE_MARK` right under a table whose cells
    carry it (none when none does)."""
    return ["", IN_SAMPLE_NOTE] if _in_sample_rows(rows) else []


def _side_cols(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    cols = [c for c in SIDE_ROW_COLUMNS if not c[0].startswith("tpr_at_fpr_")]
    return cols + _tpr_columns(rows)


def per_length_lines(res: dict[str, Any]) -> list[str]:
    """The lines that say the run judges texts by per-length thresholds (``[thresholds]
    per_length``): a heading naming the bins, then each detector's bins and fitted thresholds
    (``run.per_length_thresholds``); empty without them. Every output prints them."""
    block = (res.get("run") or {}).get("per_length_thresholds")
    if not block:
        return []
    return [f"Per-length thresholds (fitted on the calibration split for each length bin: "
            f"{', '.join(block.get('bins') or [])}); every rate below uses them:", *(block.get("lines") or [])]


def print_tables(res: dict[str, Any], console: Any = None) -> None:
    """Print Table 1, Table 2, the side rows and the agreement table with rich."""
    from rich.table import Table

    con = console or wide_console()

    for line in honesty.lines(res):  # integrity first, before any rate
        con.print(line, style="bold red" if honesty.is_alert(line) else "bold", markup=False, highlight=False)
    for line in trend_lines(res):
        con.print(line, markup=False, highlight=False)
    run = res.get("run", {})
    proto = run.get("protocol") or {}
    head = f"run {run.get('tag')} ({run.get('split', {}).get('rule')} split)"
    if proto.get("hash"):
        head += f"\nprotocol {proto.get('name')} sha256 {proto['hash'][:16]}…"
        if proto.get("amendments"):
            head += f", {len(proto['amendments'])} amendment(s)"
    for line in per_length_lines(res):
        con.print(line, markup=False, highlight=False)
    tables = [(rows, f"{g['title']}: headline rates per detector — {head}", g.get("note"),
               columns("table1", rows)) for g, rows in table1_by_group(res)]
    tables.append((res["table2"], "Table 2: per slice (headline texts; attack slices: derived texts)", None,
                   T2_TERMINAL))
    if res.get("side_rows"):
        tables.append((res["side_rows"], "Side rows: side arms and derived texts (never headline)", None,
                       _side_cols(res["side_rows"])))
    if res.get("robustness"):
        tables.append((res["robustness"], ROBUST_TITLE, robust_note(res), ROBUST_COLUMNS))
    for rows, ttl, note, cols in tables:
        t = Table(title=ttl, caption=note, show_lines=False, header_style="bold")
        body = [[cell(r, k) for k, _ in cols] for r in rows]
        for i, (k, h) in enumerate(cols):
            # a name (detector, attack) is never folded mid-word: its column is as wide as its longest word
            wide = max((len(w) for row in body for w in row[i].split()), default=0) if k in _NAME_KEYS else None
            t.add_column(h, overflow="fold", min_width=min(wide, 24) if wide else None)
        for row in body:
            t.add_row(*row)
        con.print(t)
    if _in_sample_used(res):
        con.print(IN_SAMPLE_NOTE)
    if res.get("agreement"):
        cols = _agree_cols(res)
        t = Table(title="Agreement: texts flagged by at least one / by all detectors (texts every detector of "
                        "the row scored)", header_style="bold")
        for _, h in cols:
            t.add_column(h)
        for a in res["agreement"]:
            t.add_row(*[cell(a, k) for k, _ in cols])
        con.print(t)
    for line in comparison_lines(res, terminal=True):
        con.print(line, markup=False, highlight=False)


def table1_by_group(res: dict[str, Any]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """``(group, its Table 1 rows)`` for every Table 1 group of a run (one Table 1 per group of
    detectors scored on the same texts; a run without ``table1_groups`` is one table)."""
    groups = res.get("table1_groups") or [{"id": None, "title": "Table 1", "note": None}]
    return [(g, [r for r in res["table1"] if g["id"] is None or r.get("group") == g["id"]]) for g in groups]


def _agree_cols(res: dict[str, Any]) -> list[tuple[str, str]]:
    if len(res.get("table1_groups") or []) > 1:
        return [("group", "Table")] + AGREE_COLUMNS + [("detectors", "Detectors counted")]
    return AGREE_COLUMNS


def _matrix_lines(m: dict[str, Any]) -> list[str]:
    """A significance matrix as aligned text (``>`` row better than column, ``<`` worse,
    ``=`` not separated by the test after the correction, ``·`` undefined)."""
    names = m["detectors"]
    w = max(len(x) for x in names)
    head = " " * (w + 2) + "  ".join(f"{i + 1:>2}" for i in range(len(names)))
    out = [head]
    for i, nme in enumerate(names):
        cells = ["  " if i == j else f"{(c if c is not None else '·'):>2}" for j, c in enumerate(m["cells"][i])]
        out.append(f"{i + 1:>2} {nme:<{w}} " + "  ".join(cells))
    return out


def _survivors(res: dict[str, Any], sname: str, metric: str) -> list[dict[str, Any]]:
    cor = res.get("corrections") or {}
    alpha = cor.get("alpha", 0.05)
    return [r for r in res.get("comparisons") or [] if r["slice"] == sname and r["metric"] == metric
            and r.get("p_adjusted") is not None and r["p_adjusted"] <= alpha and r.get("estimate")]


def comparison_lines(res: dict[str, Any], terminal: bool) -> list[str]:
    """Issue 14's summary: which pairwise differences survive the correction (a matrix per
    slice and metric where any does), the tiers the tests support, and the declared gaps.
    The terminal shows the ``all`` slices' matrices and counts the rest; Markdown shows all.
    Detectors are ordered as in the protocol, never by their estimates."""
    cor = res.get("corrections") or {}
    if not cor.get("enabled"):
        return []
    out: list[str] = []
    fam = {f["name"]: f for f in cor.get("families") or []}
    corr = "Holm's correction" if cor.get("correction") == "holm" else "no correction"
    h = "" if terminal else "## "
    if res.get("significance"):
        out += ["", f"{h}Which differences are real: paired tests between detectors ({corr} over "
                f"{fam.get('comparisons', {}).get('size', 0)} tests, alpha {cor.get('alpha')})", ""]
        legend = ("`>` the row detector is significantly better than the column detector, `<` worse, `=` the "
                  "tests do not separate them, `·` undefined. Tiers: every detector of a tier is significantly "
                  "better than every detector of every later tier; within a tier, alphabetical (docs/statistics.md).")
        out.append(legend.replace("`", "") if terminal else legend)
        hidden = 0
        for m in res["significance"]:
            surv = _survivors(res, m["slice"], m["metric"])
            tier = next((t for t in res.get("tiers") or [] if t["slice"] == m["slice"] and t["metric"] == m["metric"]),
                        None)
            tline = _tier_text(tier) if tier else ""
            is_all = m["slice"] == "all" or m["slice"].endswith(" · all")
            if terminal and not is_all:
                hidden += len(surv)
                continue
            out += ["", f"{m['slice']} · {METRIC_NAMES.get(m['metric'], m['metric'])} ({m['better']} is better): "
                    f"{len(surv)} of {len(m['detectors']) * (len(m['detectors']) - 1) // 2} differences survive; {tline}"]
            if surv:
                lines = _matrix_lines(m)
                out += lines if terminal else ["", "```"] + lines + ["```"]
        if terminal and hidden:
            out += ["", f"… {hidden} more surviving differences in the other slices: tables.md and the results JSON"]
    if res.get("gaps"):
        out += ["", f"{h}Subgroup gaps ({corr} over {fam.get('gaps', {}).get('size', 0)} gap tests; Newcombe hybrid "
                "interval, Fisher exact test)", ""]
        if terminal:
            w = {k: max(len(hd), *(len(cell(r, k)) for r in res["gaps"])) for k, hd in GAP_COLUMNS}
            out.append("  ".join(f"{hd:<{w[k]}}" for k, hd in GAP_COLUMNS))
            out += ["  ".join(f"{cell(r, k):<{w[k]}}" for k, _ in GAP_COLUMNS) for r in res["gaps"]]
        else:
            out += _md_table(res["gaps"], GAP_COLUMNS)
    return out


def _tier_text(t: dict[str, Any]) -> str:
    parts = [f"tier {x['tier']}: {', '.join(x['detectors'])}" for x in t.get("tiers") or []]
    if t.get("not_ranked"):
        parts.append("not ranked: " + ", ".join(f"{x['detector']} ({x['reason']})" for x in t["not_ranked"]))
    return "; ".join(parts) or "no detectors"


def _md_table(rows: list[dict[str, Any]], cols: list[tuple[str, str]]) -> list[str]:
    out = ["| " + " | ".join(h for _, h in cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(cell(r, k).replace("|", "\\|") for k, _ in cols) + " |" for r in rows]
    return out


def markdown(res: dict[str, Any]) -> str:
    """Tables 1 and 2, the side rows and the agreement table as GitHub Markdown."""
    run = res.get("run", {})
    proto = run.get("protocol") or {}
    sp = run.get("split") or {}
    out = [f"# Run {run.get('run_id')}", "",
           f"- Tag: {run.get('tag')}; created {run.get('created_at')}; veribench {run.get('veribench_version')}",
           f"- Protocol: {proto.get('name')} (sha256 `{proto.get('hash')}`, committed {proto.get('committed_at')})",
           f"- Split: {json.dumps(sp)}",
           f"- Intervals: Wilson {int(100 * run.get('confidence', 0.95))}% for rates; AUROC CI by {run.get('auroc_ci_method')}",
           "- Headline rates count human (negative) and ai (positive) texts of headline arms that are not derived; "
           "ai-edited-human and mixed have their own columns; side arms and derived texts have side rows "
           "(docs/labels.md). Rates are over the texts each detector actually scored; excluded texts are listed.",
           ""]

    out[1:1] = [""] + honesty.markdown(res)[:-1]  # integrity first, before any rate
    tl = trend_lines(res)
    if tl:
        out += ["## Trends", "", f"{tl[0]}:", ""] + [f"- {x}" for x in tl[1:]] + [""]
    for a in proto.get("amendments") or []:
        out.append(f"- Amendment {a.get('date')}: {a.get('summary')} (supersedes `{a.get('supersedes')}`)")
    pl = per_length_lines(res)
    if pl:
        out += ["", pl[0], ""] + [f"- {x}" for x in pl[1:]]
    for g, rows in table1_by_group(res):
        out += ["", f"## {g['title']}: headline rates per detector", ""]
        if g.get("note"):
            out += [g["note"], ""]
        out += _md_table(rows, columns("table1", rows)) + _mark_note(rows)
    out += ["", "## Table 2: per slice (headline texts; attack slices: derived texts)", ""]
    out += _md_table(res["table2"], columns("table2", res["table2"])) + _mark_note(res["table2"])
    if res.get("side_rows"):
        out += ["", "## Side rows: side arms and derived texts (never in the headline rates)", ""]
        out += _md_table(res["side_rows"], _side_cols(res["side_rows"])) + _mark_note(res["side_rows"])
    if res.get("robustness"):
        out += ["", f"## {ROBUST_TITLE}", "", robust_note(res), ""] + _md_table(res["robustness"], ROBUST_COLUMNS)
    if res.get("agreement"):
        out += ["", "## Agreement", "", "Only texts that every detector of the row scored are counted (n); "
                "the others are left out. Each table's detectors are listed with it (docs/labels.md §8).", ""]
        out += _md_table(res["agreement"], _agree_cols(res))
    out += comparison_lines(res, terminal=False)
    out += ["", "## Decision rules and operating points", ""]
    for d in res["detectors"]:
        rule = d.get("rule") or {}
        state = "" if rule.get("defined", True) else f" — rates null: {rule.get('reason')}"
        out.append(f"- {d['detector']}: {rule.get('describe')} (source: {rule.get('source')}){state}; "
                   f"ranking score: {(d.get('ranking_score') or {}).get('field')} "
                   f"({(d.get('ranking_score') or {}).get('note')}); TPR at FPR: {d.get('operating_point')}; "
                   f"{d['n_text_differs']} scores on a text that differs from the corpus text")
    out += ["", "## Excluded texts (not in any denominator)", ""]
    for d in res["detectors"]:
        ex = d.get("excluded") or {}
        out.append(f"- {d['detector']}: " + (", ".join(f"{k}: {v}" for k, v in ex.items()) if ex else "none"))
    if res.get("warnings"):
        out += ["", "## Warnings", ""] + [f"- {w}" for w in res["warnings"]]
    return "\n".join(out) + "\n"


def _flat(row: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """One CSV row: a pair of numbers (an interval) as ``<key>_lo``/``<key>_hi``, other lists
    joined with ``"; "``, nested blocks as ``<key>_<field>`` at any depth."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        k = f"{prefix}{k}"
        if k.endswith("ci95") and (v is None or isinstance(v, list) and len(v) in (0, 2)):
            out[f"{k}_lo"], out[f"{k}_hi"] = (v[0], v[1]) if v else (None, None)  # an interval: always two columns
        elif isinstance(v, list):
            if not v:
                out[k] = None
            elif len(v) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
                out[f"{k}_lo"], out[f"{k}_hi"] = v[0], v[1]
            else:
                out[k] = "; ".join(map(str, v))
        elif isinstance(v, dict):
            out.update(_flat(v, f"{k}_"))
        else:
            out[k] = v
    return out


def print_warnings(res: dict[str, Any], con: Any, limit: int = 20) -> None:
    """The run's warnings on the terminal: the first ``limit`` in full; slice-level "AUROC
    undefined (one class)" notes summarised in one line (all are in the results JSON)."""
    warns = res.get("warnings") or []
    slice_notes = [w for w in warns if "AUROC undefined" in w]
    others = [w for w in warns if "AUROC undefined" not in w]
    for w in others[:limit]:
        con.print(f"warning: {w}", style="yellow", markup=False)
    if len(others) > limit:
        con.print(f"… {len(others) - limit} more warnings in the results JSON", style="yellow")
    if slice_notes:
        con.print(f"note: AUROC is undefined (null, with the reason) in {len(slice_notes)} slices that hold one "
                  "class only; listed in the results JSON", style="yellow")


def write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    """Rows as CSV: intervals as ``<key>_lo``/``<key>_hi``, nested blocks as ``<key>_<field>``;
    null is an empty cell, with the reason in the ``<key>_reason`` column."""
    flat = [_flat(r) for r in rows]
    keys: list[str] = []
    for r in flat:
        keys += [k for k in r if k not in keys]
    # an interval that is null in some rows is still two columns, not a third empty one
    for k in [k for k in keys if f"{k}_lo" in keys and all(r.get(k) is None for r in flat)]:
        i = min(keys.index(k), keys.index(f"{k}_lo"))  # where the interval first appears
        keys = [x for x in keys if x not in (k, f"{k}_lo", f"{k}_hi")]
        keys[i:i] = [f"{k}_lo", f"{k}_hi"]
        for r in flat:
            r.pop(k, None)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(flat)


def html_page(res: dict[str, Any]) -> str:
    """A simple self-contained HTML page with the run's tables (no scripts)."""
    def table(rows: list[dict[str, Any]], cols: list[tuple[str, str]]) -> str:
        head = "".join(f"<th scope='col'>{html.escape(h)}</th>" for _, h in cols)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(cell(r, k))}</td>" for k, _ in cols) + "</tr>" for r in rows)
        note = f"<p>{html.escape(IN_SAMPLE_NOTE)}</p>" if _in_sample_rows(rows) else ""  # the mark, under its table
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}"

    run = res.get("run", {})
    proto = run.get("protocol") or {}
    side = ""
    if res.get("side_rows"):
        side = (f"<h2>Side rows: side arms and derived texts (never headline)</h2>"
                f"{table(res['side_rows'], _side_cols(res['side_rows']))}")
    agree = (f"<h2>Agreement (texts every detector of the row scored)</h2>{table(res['agreement'], _agree_cols(res))}"
             if res.get("agreement") else "")
    if res.get("robustness"):
        agree += f"<h2>{html.escape(ROBUST_TITLE)}</h2><p>{html.escape(robust_note(res))}</p>" + table(res["robustness"],
                                                                                               ROBUST_COLUMNS)
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>veribench run {html.escape(str(run.get('run_id')))}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2rem;}}table{{border-collapse:collapse;margin:1rem 0;font-size:.9rem}}
th,td{{border:1px solid #ccc;padding:.3rem .5rem;text-align:left}}th{{background:#f3f3f3}}</style></head><body>
<h1>veribench run {html.escape(str(run.get('tag')))}</h1>
<p>Protocol {html.escape(str(proto.get('name')))}, sha256 <code>{html.escape(str(proto.get('hash')))}</code>.
Rates with Wilson {int(100 * run.get('confidence', 0.95))}% intervals; split: {html.escape(json.dumps(run.get('split')))}.
Raw per-document scores: <a href="raw_scores.csv">CSV</a>, <a href="raw_scores.parquet">Parquet</a>.</p>
{"".join(f"<p><strong>{html.escape(x)}</strong></p>" for x in honesty.arm_rule_lines(res))}
{"".join(f"<p>{html.escape(x)}</p>" for x in per_length_lines(res))}
{"".join(f"<h2>{html.escape(g['title'])}: headline rates per detector</h2><p>{html.escape(g.get('note') or '')}</p>"
          f"{table(rows, columns('table1', rows))}" for g, rows in table1_by_group(res))}
<h2>Table 2: per slice (headline texts; attack slices: derived texts)</h2>{table(res['table2'], columns('table2', res['table2']))}
{side}{agree}
</body></html>"""


#: The table files :func:`write_outputs` writes from the results alone (output key -> file
#: name); a bundle re-derives each byte for byte (``veribench.bundles.layout.TABLE_FILES``).
TABLE_OUTPUTS = {"markdown": "tables.md", "table1_csv": "table1.csv", "table2_csv": "table2.csv",
                 "side_rows_csv": "side_rows.csv", "rates_csv": "rates.csv", "agreement_csv": "agreement.csv",
                 "html": "index.html", "robustness_csv": "robustness.csv", "comparisons_csv": "comparisons.csv",
                 "gaps_csv": "gaps.csv"}


#: The files :func:`write_outputs` writes with a workspace, beside :data:`TABLE_OUTPUTS`.
WORKSPACE_OUTPUTS = {"raw_csv": "raw_scores.csv", "raw_parquet": "raw_scores.parquet", "run_rows_csv": "run_rows.csv"}
#: Every file name :func:`write_outputs` may write.
OUTPUT_FILES = frozenset({"results.json", *TABLE_OUTPUTS.values(), *WORKSPACE_OUTPUTS.values()})


def write_outputs(res: dict[str, Any], out_dir: Path, ws: Any = None, html: bool = True) -> dict[str, str]:
    """Write ``results.json``, ``tables.md``, ``table1.csv``, ``table2.csv``, ``side_rows.csv``,
    ``rates.csv``, ``agreement.csv``, ``index.html`` and (with a workspace) raw per-document
    scores and the run's per-document rows (``run_rows.csv``); returns ``{output key: file
    name}``. ``html=False`` does not write ``index.html``: the caller puts the report site
    there (``veribench demo``), whose ``index.html`` the listing (``files``) still names."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {"json": "results.json", **TABLE_OUTPUTS}
    if ws is not None:
        ws.export_scores(out_dir / "raw_scores.csv")
        ws.export_scores(out_dir / "raw_scores.parquet")
        files.update({k: WORKSPACE_OUTPUTS[k] for k in ("raw_csv", "raw_parquet")})
        run_id = (res.get("run") or {}).get("run_id")
        if run_id:

            try:
                export_run(ws, run_id, out_dir / "run_rows.csv")
                files["run_rows_csv"] = WORKSPACE_OUTPUTS["run_rows_csv"]
            except InputError:
                pass  # a run that was not recorded (record=False) has no rows
    res = {**res, "files": files}
    (out_dir / "results.json").write_text(json.dumps(res, indent=1, allow_nan=False), encoding="utf-8")
    (out_dir / "tables.md").write_text(markdown(res), encoding="utf-8")
    write_csv(res["table1"], out_dir / "table1.csv")
    write_csv(res["table2"], out_dir / "table2.csv")
    write_csv(res.get("side_rows") or [], out_dir / "side_rows.csv")
    write_csv(res["rates"], out_dir / "rates.csv")
    write_csv(res["agreement"], out_dir / "agreement.csv")
    for key in ("robustness", "comparisons", "gaps"):
        write_csv(res.get(key) or [], out_dir / f"{key}.csv")
    if html:
        (out_dir / "index.html").write_text(html_page(res), encoding="utf-8")
    return files
