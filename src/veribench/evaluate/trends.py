"""Trends: a rerun under the same protocol id compared with the run before it.

Per detector (by its table label), the headline catch rate and false-positive rate then
(the earlier run's Table 1) and now (this run's), their difference (now - then), and,
over the texts both runs counted (same document, same split side, headline, counted by
the rule in both), the paired difference with McNemar's exact test and Newcombe's
paired interval (:func:`veribench.metrics.paired.paired_rate_difference`, the method of
the detector comparisons). A paired difference that is exactly 0 on every text (no text
changed its decision) is 0 in every resample: an estimate of 0 with no interval and the
reason "no variation", never a zero-width interval.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from veribench.metrics.paired import paired_rate_difference

#: Why a trend's paired difference has no interval when no text changed its decision.
NO_VARIATION = "no variation"
#: Why a detector with Table 1 rows for several groups (corpora) has no paired trend (yet).
SEVERAL_GROUPS = ("the detector has Table 1 rows for several groups; the paired comparison per group is not "
                  "computed")
#: The two rates compared: results key -> (Table 1 column, label role of the texts,
#: :func:`veribench.protocol.roles.label_role`; shown as ``paired_texts`` "ai" / "human").
RATES = {"catch_rate": ("catch_rate", "positive"), "fpr": ("fpr", "negative")}
_SHOWN = {"positive": "ai", "negative": "human"}


def _decisions(con: Any, run_id: str) -> dict[tuple[str, str], tuple[str, bool]]:
    """``{(detector label, doc_id): (label role, flagged)}`` of the headline test-side texts a run counted."""
    rows = con.execute("SELECT detector, doc_id, label_role, flagged FROM run_rows WHERE run_id = ? AND headline "
                       "AND counted AND flagged IS NOT NULL AND split = 'test'", [run_id]).fetchall()
    return {(d, i): (str(role), bool(f)) for d, i, role, f in rows}


def compute_trends(ws: Any, res: dict[str, Any], now_rows: dict[str, np.ndarray]) -> dict[str, Any] | None:
    """The ``trends`` block of run ``res`` against the latest earlier run of its protocol id.

    Args:
        ws: the workspace (reads the earlier run's results and rows).
        res: this run's results (``run.protocol.earlier_runs`` names the earlier runs).
        now_rows: this run's per-document rows (:func:`veribench.evaluate.rows.document_rows`).

    Returns:
        ``None`` when no earlier run exists, else ``{"earlier_run": {run_id, tag,
        protocol_sha256}, "confidence", "rows": [{"detector", "group" (its Table 1 group),
        "paired_texts": {"ai", "human"},
        "catch_rate" | "fpr": {"then", "now", "difference", "paired_n", "estimate", "ci",
        "ci_reason", "test", "p_value", "p_reason"}}]}``: rates are proportions in [0, 1];
        ``difference`` = now - then (``None`` with ``reason`` when either is undefined);
        the paired fields cover the texts both runs counted.
    """
    p = (res.get("run") or {}).get("protocol") or {}
    earlier = [r for r in (p.get("earlier_runs") or []) if r.get("run_id")]
    if not earlier:
        return None
    last = earlier[-1]
    conf = float((res.get("run") or {}).get("confidence", 0.95))
    with ws.lock:
        got = ws.con.execute("SELECT results FROM runs WHERE run_id = ?", [last["run_id"]]).fetchall()
        then_flags = _decisions(ws.con, last["run_id"])
    if not got:
        return None
    then_res = json.loads(got[0][0]) if isinstance(got[0][0], str) else got[0][0]
    then_t1 = {(r.get("detector"), r.get("group")): r for r in then_res.get("table1") or []}
    groups: dict[Any, int] = {}
    for t in res.get("table1") or []:
        groups[t.get("detector")] = groups.get(t.get("detector"), 0) + 1
    now_flags: dict[tuple[str, str], tuple[str, bool]] = {}
    if now_rows:
        keep = (now_rows["headline"].astype(bool) & now_rows["counted"].astype(bool)
                & (now_rows["split"] == "test") & np.array([f is not None for f in now_rows["flagged"]]))
        for d, i, role, f in zip(now_rows["detector"][keep], now_rows["doc_id"][keep], now_rows["label_role"][keep],
                                 now_rows["flagged"][keep]):
            now_flags[(str(d), str(i))] = (str(role), bool(f))
    out_rows = []
    for t in res.get("table1") or []:
        det = t.get("detector")
        before = then_t1.get((det, t.get("group")))
        if before is None:
            continue
        row: dict[str, Any] = {"detector": det, "group": t.get("group"), "paired_texts": {}}
        several = groups[det] > 1  # Table 1 has a row per group: run rows do not name the group
        for key, (col, role) in RATES.items():
            pairs = [(now_flags[k][1], v[1]) for k, v in then_flags.items()
                     if k[0] == det and v[0] == role and k in now_flags and now_flags[k][0] == role]
            row["paired_texts"][_SHOWN[role]] = len(pairs)
            a, b = before.get(col), t.get(col)
            cell: dict[str, Any] = {"then": a, "now": b,
                                    "difference": (b - a) if a is not None and b is not None else None,
                                    "reason": None if a is not None and b is not None else
                                    f"the {col} of {'this' if b is None else 'the earlier'} run is undefined"}
            if several:
                why = SEVERAL_GROUPS
                cell.update({"paired_n": 0, "estimate": None, "ci": None, "ci_reason": why, "test": None,
                             "p_value": None, "p_reason": why})
                row["paired_texts"][_SHOWN[role]] = 0
                row[key] = cell
                continue
            pr = paired_rate_difference([x for x, _ in pairs], [y for _, y in pairs], alpha=1.0 - conf)
            still = pr.detail.get("a_only", 0) + pr.detail.get("b_only", 0) == 0
            cell.update({"paired_n": pr.n, "estimate": pr.estimate,
                         "ci": None if pr.lo is None or (still and pr.n) else [pr.lo, pr.hi],
                         "ci_reason": (NO_VARIATION if still and pr.n else pr.reason if pr.lo is None else None),
                         "test": pr.test, "p_value": pr.p_value, "p_reason": pr.reason if pr.p_value is None else None})
            row[key] = cell
        out_rows.append(row)
    return {"earlier_run": {k: last.get(k) for k in ("run_id", "tag", "protocol_sha256")}, "confidence": conf,
            "rows": out_rows}


def _pct(x: Any) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _diff(c: dict[str, Any]) -> str:
    if c.get("difference") is None:
        return f"difference null ({c.get('reason')})"
    s = f"{100 * c['difference']:+.1f} points"
    if c.get("ci"):
        lo, hi = c["ci"]
        s += f", paired {100 * lo:+.1f} to {100 * hi:+.1f} on {c['paired_n']} texts"
    elif c.get("paired_n"):
        s += f", paired interval null ({c.get('ci_reason')}) on {c['paired_n']} texts"
    elif c.get("ci_reason"):
        s += f", paired interval null ({c['ci_reason']})"
    if c.get("p_value") is not None:
        s += f", McNemar p = {c['p_value']:.3g}"
    return s


def trend_lines(res: dict[str, Any]) -> list[str]:
    """The trends as plain lines (terminal and Markdown): one per detector and rate."""
    tr = res.get("trends")
    if not tr:
        return []
    e = tr["earlier_run"]
    out = [f"Trends: this run against the earlier run {e.get('run_id')} (tag {e.get('tag')}) of the same protocol id"]
    for r in tr["rows"]:
        for key, name in (("catch_rate", "catch rate"), ("fpr", "false-positive rate")):
            c = r[key]
            who = r["detector"] + (f" ({r['group']})" if r.get("group") else "")
            out.append(f"{who}: {name} {_pct(c['then'])} then, {_pct(c['now'])} now ({_diff(c)})")
    return out
