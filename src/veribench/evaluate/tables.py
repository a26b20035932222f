"""Render a run's Table 1 and Table 2 to the terminal (rich), Markdown, CSV, JSON and HTML."""

from __future__ import annotations

import csv
import html
import json
from pathlib import Path
from typing import Any, Iterable

T1_COLUMNS = [
    ("detector", "Detector"), ("version", "Version"), ("scan_date", "Scan date"),
    ("human_n", "Human n"), ("false_positives", "FP"), ("fpr", "FPR [95% CI]"),
    ("ai_n", "AI n"), ("detections", "Detected"), ("catch_rate", "Catch rate [95% CI]"),
    ("balanced_accuracy", "Bal. acc."), ("auroc", "AUROC [95% CI]"),
    ("tpr_at_fpr_1", "TPR@1%FPR"), ("tpr_at_fpr_5", "TPR@5%FPR"),
]
T2_EXTRA = [("slice_type", "Slice type"), ("slice", "Slice")]
#: Compact Table 2 for the terminal (the files carry every column).
T2_TERMINAL = [("detector", "Detector"), ("slice_name", "Slice"), ("human_n", "Human n"), ("fpr", "FPR [95% CI]"),
               ("ai_n", "AI n"), ("catch_rate", "Catch rate [95% CI]"), ("edited_rate", "Edited flagged"),
               ("auroc", "AUROC [95% CI]")]
SIDE = [("edited_rate", "Edited flagged [95% CI]"), ("mixed_rate", "Mixed flagged [95% CI]")]


def _slice_name(a: dict[str, Any]) -> str:
    kind = a.get("slice_type", "subgroup")
    return a["subgroup"] if kind in ("all", "subgroup") else f"{kind}={a['subgroup']}"


def _pct(x: Any) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _ci(rate: Any, ci: Any, pct: bool = True) -> str:
    if rate is None:
        return "—"
    f = (lambda v: f"{100 * v:.1f}") if pct else (lambda v: f"{v:.3f}")
    main = f"{100 * rate:.1f}%" if pct else f"{rate:.3f}"
    return f"{main} [{f(ci[0])}, {f(ci[1])}]" if ci else main


def cell(row: dict[str, Any], key: str) -> str:
    """Formatted text of one table cell."""
    if key == "fpr":
        return _ci(row.get("fpr"), row.get("fpr_ci95"))
    if key == "catch_rate":
        return _ci(row.get("catch_rate"), row.get("catch_rate_ci95"))
    if key == "auroc":
        return _ci(row.get("auroc"), row.get("auroc_ci95"), pct=False)
    if key == "balanced_accuracy":
        return "—" if row.get(key) is None else f"{row[key]:.3f}"
    if key.startswith("tpr_at_fpr_"):
        v = row.get(key) or {}
        return "—" if v.get("tpr") is None else _pct(v["tpr"])
    if key in ("edited_rate", "mixed_rate"):
        pre = key.split("_")[0]
        if not row.get(f"{pre}_n"):
            return "—"
        return f"{_ci(row.get(key), row.get(key + '_ci95'))} (n={row[f'{pre}_n']})"
    if key == "slice_name":
        kind = row.get("slice_type", "subgroup")
        return row["slice"] if kind == "subgroup" else f"{kind}={row['slice']}"
    v = row.get(key)
    return "—" if v is None else str(v)


def _has_side(rows: Iterable[dict[str, Any]]) -> bool:
    return any(r.get("edited_n") or r.get("mixed_n") for r in rows)


def columns(table: str, rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    cols = list(T1_COLUMNS)
    if table == "table2":
        cols = [cols[0]] + T2_EXTRA + cols[1:]
    if _has_side(rows):
        cols += SIDE
    return cols


def wide_console() -> Any:
    """A rich Console at least 160 columns wide, so the tables do not fold in pipes and CI logs."""
    import shutil

    from rich.console import Console

    return Console(width=max(shutil.get_terminal_size((200, 40)).columns, 160))


def print_tables(res: dict[str, Any], console: Any = None) -> None:
    """Print Table 1 and Table 2 with rich."""
    from rich.table import Table

    con = console or wide_console()
    from ..bundles import honesty

    for line in honesty.lines(res):  # integrity first, before any rate
        con.print(line, style="bold red" if honesty.is_alert(line) else "bold", markup=False, highlight=False)
    run = res.get("run", {})
    proto = run.get("protocol") or {}
    title = f"Table 1: headline rates per detector — run {run.get('tag')} ({run.get('split', {}).get('rule')} split)"
    if proto.get("hash"):
        title += f"\nprotocol {proto.get('name')} sha256 {proto['hash'][:16]}…"
        if proto.get("amendments"):
            title += f", {len(proto['amendments'])} amendment(s)"
    for name, rows, ttl in (("table1", res["table1"], title), ("table2", res["table2"],
                                                                 "Table 2: per subgroup and per arm")):
        t = Table(title=ttl, show_lines=False, header_style="bold")
        cols = columns(name, rows) if name == "table1" else T2_TERMINAL
        for _, h in cols:
            t.add_column(h, overflow="fold")
        for r in rows:
            t.add_row(*[cell(r, k) for k, _ in cols])
        con.print(t)
    if res.get("agreement"):
        t = Table(title="Agreement: texts flagged by at least one / by all detectors", header_style="bold")
        for h in ("Slice", "n", "Detectors", "Flagged by any", "Flagged by all"):
            t.add_column(h)
        for a in res["agreement"]:
            t.add_row(_slice_name(a), str(a["n"]), str(a.get("n_detectors", "")), str(a["flagged_by_any"]),
                      str(a["flagged_by_all"]))
        con.print(t)


def markdown(res: dict[str, Any]) -> str:
    """Tables 1 and 2 and the agreement table as GitHub Markdown."""
    run = res.get("run", {})
    proto = run.get("protocol") or {}
    out = [f"# Run {run.get('run_id')}", "",
           f"- Tag: {run.get('tag')}; created {run.get('created_at')}; veribench {run.get('veribench_version')}",
           f"- Protocol: {proto.get('name')} (sha256 `{proto.get('hash')}`, committed {proto.get('committed_at')})",
           f"- Split: {json.dumps(run.get('split'))}",
           f"- Intervals: Wilson {int(100 * run.get('confidence', 0.95))}% for rates; AUROC CI by {run.get('auroc_ci_method')}",
           ""]
    from ..bundles import honesty

    out[1:1] = [""] + honesty.markdown(res)[:-1]  # integrity first, before any rate
    for a in proto.get("amendments") or []:
        out.append(f"- Amendment {a.get('date')}: {a.get('summary')} (supersedes `{a.get('supersedes')}`)")
    for name, ttl in (("table1", "Table 1: headline rates per detector"), ("table2", "Table 2: per subgroup and arm")):
        rows = res[name]
        cols = columns(name, rows)
        out += ["", f"## {ttl}", "", "| " + " | ".join(h for _, h in cols) + " |",
                "|" + "---|" * len(cols)]
        out += ["| " + " | ".join(cell(r, k).replace("|", "\\|") for k, _ in cols) + " |" for r in rows]
    if res.get("agreement"):
        out += ["", "## Agreement", "", "| Slice | n | Detectors | Flagged by any | Flagged by all |", "|---|---|---|---|---|"]
        out += [f"| {_slice_name(a)} | {a['n']} | {a.get('n_detectors', '')} | {a['flagged_by_any']} | {a['flagged_by_all']} |"
                for a in res["agreement"]]
    out += ["", "## Decision rules", ""]
    out += [f"- {d['detector']}: {d['rule'].get('describe')} (source: {d['rule'].get('source')}); "
            f"{d['n_text_differs']} scores on a text that differs from the corpus text" for d in res["detectors"]]
    if res.get("warnings"):
        out += ["", "## Warnings", ""] + [f"- {w}" for w in res["warnings"]]
    return "\n".join(out) + "\n"


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in row.items():
        if isinstance(v, list):
            out[f"{k}_lo"], out[f"{k}_hi"] = (v[0], v[1]) if v else (None, None)
        elif isinstance(v, dict):
            for kk, vv in v.items():
                out[f"{k}_{kk}"] = vv
        else:
            out[k] = v
    return out


def write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    flat = [_flat(r) for r in rows]
    keys: list[str] = []
    for r in flat:
        keys += [k for k in r if k not in keys]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(flat)


def html_page(res: dict[str, Any]) -> str:
    """A simple self-contained HTML page with the run's tables (no scripts)."""
    def table(name: str) -> str:
        rows = res[name]
        cols = columns(name, rows)
        head = "".join(f"<th scope='col'>{html.escape(h)}</th>" for _, h in cols)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(cell(r, k))}</td>" for k, _ in cols) + "</tr>" for r in rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    run = res.get("run", {})
    proto = run.get("protocol") or {}
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>veribench run {html.escape(str(run.get('run_id')))}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2rem;}}table{{border-collapse:collapse;margin:1rem 0;font-size:.9rem}}
th,td{{border:1px solid #ccc;padding:.3rem .5rem;text-align:left}}th{{background:#f3f3f3}}</style></head><body>
<h1>veribench run {html.escape(str(run.get('tag')))}</h1>
<p>Protocol {html.escape(str(proto.get('name')))}, sha256 <code>{html.escape(str(proto.get('hash')))}</code>.
Rates with Wilson {int(100 * run.get('confidence', 0.95))}% intervals; split: {html.escape(json.dumps(run.get('split')))}.
Raw per-document scores: <a href="raw_scores.csv">CSV</a>, <a href="raw_scores.parquet">Parquet</a>.</p>
<h2>Table 1: headline rates per detector</h2>{table('table1')}
<h2>Table 2: per subgroup and arm</h2>{table('table2')}
</body></html>"""


def write_outputs(res: dict[str, Any], out_dir: Path, ws: Any = None) -> dict[str, str]:
    """Write ``results.json``, ``tables.md``, ``table1.csv``, ``table2.csv``, ``rates.csv``,
    ``agreement.csv``, ``index.html`` and (with a workspace) raw per-document scores."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {"json": "results.json", "markdown": "tables.md", "table1_csv": "table1.csv", "table2_csv": "table2.csv",
             "rates_csv": "rates.csv", "agreement_csv": "agreement.csv", "html": "index.html"}
    if ws is not None:
        ws.export_scores(out_dir / "raw_scores.csv")
        ws.export_scores(out_dir / "raw_scores.parquet")
        files.update({"raw_csv": "raw_scores.csv", "raw_parquet": "raw_scores.parquet"})
    res = {**res, "files": files}
    (out_dir / "results.json").write_text(json.dumps(res, indent=1, allow_nan=False), encoding="utf-8")
    (out_dir / "tables.md").write_text(markdown(res), encoding="utf-8")
    write_csv(res["table1"], out_dir / "table1.csv")
    write_csv(res["table2"], out_dir / "table2.csv")
    write_csv(res["rates"], out_dir / "rates.csv")
    write_csv(res["agreement"], out_dir / "agreement.csv")
    (out_dir / "index.html").write_text(html_page(res), encoding="utf-8")
    return files
