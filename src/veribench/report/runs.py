"""Detector-run pages: the newest evaluation run of a workspace, as page data.

The input is a run results dict (see ``veribench evaluate --json``; the contract is
``notes/run-schema.md``): every rate, interval and curve is already aggregated by
``veribench.evaluate``, so the report does no per-document work except writing the raw
per-document CSV and Parquet downloads with :meth:`Workspace.export_scores`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..errors import InputError
from . import plots

def _runs_table(ws) -> list[dict[str, Any]]:
    rows = ws.query("SELECT run_id, tag, protocol_hash, created_at FROM runs ORDER BY created_at DESC, run_id")
    return [
        {"run_id": r[0], "tag": r[1], "protocol_hash": r[2], "created_at": r[3].isoformat() if r[3] is not None else None}
        for r in rows
    ]


def latest_results(ws) -> dict[str, Any]:
    """The newest run's results dict from the workspace ``runs`` table.

    Uses ``veribench.evaluate.latest_run`` when that module is installed, else reads the
    table directly. Raises :class:`InputError` when the workspace has no run.
    """
    try:
        from ..evaluate import latest_run  # type: ignore[attr-defined]
    except ImportError:
        latest_run = None
    if latest_run is not None:
        try:
            res = latest_run(ws)
        except Exception:  # fall back to the table itself
            res = None
        if res:
            return res if isinstance(res, dict) else json.loads(res)
    rows = ws.query("SELECT results FROM runs ORDER BY created_at DESC, run_id DESC LIMIT 1")
    if not rows or rows[0][0] is None:
        raise InputError(
            "the workspace has no evaluation run; run `veribench evaluate --workspace WS` first",
            file=str(ws.db_path),
            field="runs",
        )
    res = rows[0][0]
    return json.loads(res) if isinstance(res, str) else res


def _rule_text(rule: dict[str, Any] | None) -> str | None:
    if not rule:
        return None
    if rule.get("describe"):
        return str(rule["describe"]) + (f" ({rule['source']})" if rule.get("source") else "")
    thr = rule.get("threshold")
    thr_s = f"{thr:g}" if isinstance(thr, (int, float)) else str(thr)
    src = f" ({rule['source']})" if rule.get("source") else ""
    return f"{rule.get('field', 'score')} {rule.get('op', '>')} {thr_s}{src}"


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def run_page_data(results: dict[str, Any], *, source: str, runs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The JSON a run page is built from: the run's tables, plus the report's derived fields.

    Derived fields (documented in the page): ``table1[i].rule`` (decision rule text),
    ``subgroup_fpr`` (table 2 rows with human texts),
    ``curves`` (ROC thinned to at most :data:`plots.MAX_CURVE_POINTS` points).
    """
    if not isinstance(results, dict) or "run" not in results:
        raise InputError("not a run results dict: no 'run' key", file=source, field="run")
    run = dict(results.get("run") or {})
    dets = {d.get("detector"): d for d in results.get("detectors") or []}
    table1 = []
    for r in results.get("table1") or []:
        row = dict(r)
        d = dets.get(r.get("detector"), {})
        row["rule"] = _rule_text(d.get("rule"))
        row["n_failed"] = d.get("n_failed")
        row["n_text_differs"] = d.get("n_text_differs")
        table1.append(row)
    table2 = [dict(r) for r in results.get("table2") or []]
    subgroup_fpr = [
        {"slice": f"{r.get('slice_type')}: {r.get('slice')}", "detector": r.get("detector"),
         "human_n": r.get("human_n"), "false_positives": r.get("false_positives"),
         "fpr": r.get("fpr"), "fpr_ci95": r.get("fpr_ci95")}
        for r in table2
        if (r.get("human_n") or 0) > 0 and not str(r.get("slice_type", "")).startswith("label")
    ]
    curves = {}
    for det, c in (results.get("curves") or {}).items():
        roc = (c or {}).get("roc") or {}
        fx, ty = plots.thin(roc.get("fpr") or [], roc.get("tpr") or [])
        curves[det] = {"roc": {"fpr": fx, "tpr": ty, "points_in_run": len(roc.get("fpr") or [])},
                       "hist": (c or {}).get("hist")}
    protocol = dict(run.get("protocol") or {})
    protocol["amendments"] = list(protocol.get("amendments") or [])
    run["protocol"] = protocol
    return {
        "kind": "run",
        "source": Path(source).name,  # folder or file name only: no local absolute path in a published site
        "run": run,
        "runs_in_workspace": runs or [],
        "detectors": list(dets.values()),
        "table1": table1,
        "table2": table2,
        "subgroup_fpr": subgroup_fpr,
        "agreement": list(results.get("agreement") or []),
        "warnings": list(results.get("warnings") or []),
        "curves": curves,
        "downloads": {},
    }
