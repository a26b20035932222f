"""Detector-run pages: the newest evaluation run of a workspace, published bundles, and runs over time.

The input is a run results dict (see ``veribench evaluate --json``; the contract is
``docs/results-schema.md``): every rate, interval and curve is already aggregated by
``veribench.evaluate``, so the report does no per-document work except writing the raw
per-document CSV and Parquet downloads with :meth:`Workspace.export_scores`.

Every run page opens with the run's integrity statements (:mod:`veribench.evaluate.honesty`):
scores that predate the commitment, amendments made after results existed, earlier
runs under the same protocol id with their results' SHA-256. A published bundle
(``veribench publish``) is verified before its page is built and shows the verdict.
:func:`run_trends_data` puts several runs with different tags side by side: per
detector, FPR and catch rate with their intervals per tag, and the amendment changelog
between runs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from veribench import registry
from veribench.bundles import layout, reader
from veribench.bundles.verify import is_detector_bundle, verify_bundle
from veribench.errors import InputError
from veribench.evaluate import honesty
from veribench.evaluate.reasons import NONE_OUT_OF_SCOPE, outside_language
from veribench.evaluate.run import latest_run
from veribench.report import plots
from veribench.store.events import read_events


def _runs_table(ws) -> list[dict[str, Any]]:
    """Every run of the workspace, newest first, with its protocol id and results SHA-256 from the event log."""

    rows = ws.query("SELECT run_id, tag, protocol_hash, created_at FROM runs ORDER BY created_at DESC, run_id")
    try:
        logged = {e["payload"].get("run_id"): e for e in read_events(ws.con, types=("run",))}
    except Exception:  # a workspace from before the event log
        logged = {}
    out = []
    for r in rows:
        e = logged.get(r[0])
        out.append({"run_id": r[0], "tag": r[1], "protocol_hash": r[2],
                    "created_at": r[3].isoformat() if r[3] is not None else None,
                    "protocol_id": e["payload"].get("protocol_id") if e else None,
                    "results_sha256": e["payload"].get("results_sha256") if e else None})
    return out


def all_results(ws) -> list[dict[str, Any]]:
    """The newest run of each tag in a workspace (for runs over time), oldest first."""
    rows = ws.query("SELECT tag, results FROM runs QUALIFY row_number() OVER (PARTITION BY tag ORDER BY created_at "
                    "DESC, run_id DESC) = 1 ORDER BY created_at")
    return [json.loads(r[1]) for r in rows if r[1]]


def is_published_run(path: Path) -> bool:
    """A folder holding a detector-run bundle (``veribench publish``)."""

    return is_detector_bundle(path)


def load_bundle_run(path: Path, verify: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """(results, verification) of a published detector-run bundle, read with the hardened reader.

    ``verification`` is ``{"status": "verified" | "FAILED" | "not verified", "detail", "checks"}``.
    """

    try:
        results = reader.read_json(path, layout.RESULTS)
    except reader.ReadError as e:
        raise InputError(e.message, file=str(path / e.file)) from None
    if not verify:
        return results, {"status": "not verified", "detail": "verification skipped (--no-verify)", "checks": []}
    rep = verify_bundle(path)
    checks = [{"name": c, "result": rep.status(c), "detail": rep.to_dict()["checks"][c].get("detail", "")}
              for c in rep.to_dict()["checks"]]
    for f in rep.failures[:20]:
        checks.append({"name": f.check, "result": "FAIL", "detail": f.line()})
    return results, {"status": "verified" if rep.ok else "FAILED",
                     "detail": rep.lines()[0], "checks": checks}


#: The integrity statuses shown as good; every other status (not pre-registered, no protocol,
#: unknown, a bundle that did not verify) is shown as bad.
INTEGRITY_GOOD = frozenset({"pre-registered"})


def integrity_tone(status: Any) -> str:
    """``"ok"`` for a status in :data:`INTEGRITY_GOOD`, else ``"bad"``: the one rule for the
    colour of an integrity statement (CSS classes ``integrity-ok`` / ``integrity-bad``) on the
    run page and the site overview."""
    return "ok" if status in INTEGRITY_GOOD else "bad"


def integrity_block(results: dict[str, Any]) -> dict[str, Any]:
    """The integrity statements of a run, for the top of its page; ``tone`` is
    :func:`integrity_tone` of ``status``."""

    f = honesty.facts(results)
    lines = honesty.lines(results)
    return {"status": f["status"], "tone": integrity_tone(f["status"]), "lines": [{"text": x, "alert": honesty.is_alert(x)} for x in lines],
            "explanation": honesty.explanation(results),
            "scores_before_commit": f["scores_before_commit"], "scores_total": f["scores_total"],
            "amended_after_results": len(f["amended_after_results"]), "earlier_runs": f["earlier_runs"]}


def latest_results(ws) -> dict[str, Any]:
    """The newest run's results dict from the workspace ``runs`` table.

    Raises:
        InputError: the workspace has no run.
    """
    res = latest_run(ws)
    if not res:
        raise InputError("the workspace has no evaluation run; run `veribench evaluate --workspace WS` first",
                         file=str(ws.db_path), field="runs")
    return res


def _rule_text(rule: dict[str, Any] | None) -> str | None:
    if not rule:
        return None
    if rule.get("describe"):
        return str(rule["describe"]) + (f" ({rule['source']})" if rule.get("source") else "")
    thr = rule.get("threshold")
    thr_s = f"{thr:g}" if isinstance(thr, (int, float)) else str(thr)
    src = f" ({rule['source']})" if rule.get("source") else ""
    return f"{rule.get('field', 'score')} {rule.get('op', '>')} {thr_s}{src}"


#: The Table 2 slice kinds the run page's "Languages and lengths" section shows.
LANGUAGE_SLICES = ("language", "length", "language_scope")


def language_scope(detectors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per detector row of the run (``results["detectors"]``): ``languages`` (its declared
    languages, comma-separated ISO 639-1 codes, or null with ``languages_reason`` "languages not
    declared"), ``out_of_scope_n`` (texts excluded because their language is outside them:
    the run's ``excluded`` counts under :data:`veribench.evaluate.reasons.OUTSIDE_LANGUAGES`;
    null with the same reason when no languages are declared, never 0) and ``out_of_scope``
    (``"de 14, fr 14"``, or null with ``out_of_scope_reason`` when there are none)."""
    out = []
    for d in detectors:
        langs = d.get("languages")
        row: dict[str, Any] = {"detector": d.get("detector"), "languages": ", ".join(langs) if langs else None}
        if not langs:
            why = d.get("languages_reason") or registry.NOT_DECLARED
            none = NONE_OUT_OF_SCOPE.format(why=why)
            row.update(languages_reason=why, out_of_scope_n=None, out_of_scope_n_reason=none,
                       out_of_scope=None, out_of_scope_reason=none)
        else:
            per: dict[str, int] = {}
            for k, n in (d.get("excluded") or {}).items():  # one language may stand under several
                if (lang := outside_language(k)) is not None:  # reasons (its texts' scoring statuses): summed
                    per[lang] = per.get(lang, 0) + int(n)
            row.update(out_of_scope_n=sum(per.values()),
                       out_of_scope=", ".join(f"{k} {v}" for k, v in sorted(per.items())) or None)
            if not per:
                row["out_of_scope_reason"] = "every text is in its declared languages"
        out.append(row)
    return out


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def run_page_data(results: dict[str, Any], *, source: str, runs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The JSON a run page is built from: the run's tables, plus the report's derived fields.

    Derived fields (documented in the page): ``table1[i].rule`` (decision rule text),
    ``subgroup_fpr`` (table 2 rows with human texts), ``language_scope`` (per detector: its
    declared languages and its texts outside them, :func:`language_scope`),
    ``language_slices`` (table 2's ``language`` and ``length`` rows),
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
    language_slices = [r for r in table2 if r.get("slice_type") in LANGUAGE_SLICES]
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
        "integrity": integrity_block(results),
        "verification": None,
        "run": run,
        "runs_in_workspace": runs or [],
        "detectors": list(dets.values()),
        "table1": table1,
        "table2": table2,
        "subgroup_fpr": subgroup_fpr,
        "language_scope": language_scope(results.get("detectors") or []),
        "language_slices": language_slices,
        "agreement": list(results.get("agreement") or []),
        "warnings": list(results.get("warnings") or []),
        "curves": curves,
        "downloads": {},
    }


# -- runs over time -------------------------------------------------------------------------

TREND_METRICS = (("fpr", "fpr_ci95", "human_n", "false_positives", "false-positive rate"),
                 ("catch_rate", "catch_rate_ci95", "ai_n", "detections", "catch rate"))


def run_trends_data(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Several runs with different tags side by side (oldest first).

    Returns ``{"kind": "run_trends", "tags", "runs", "rows", "changelog"}``: ``rows`` has one
    entry per detector with, per tag, FPR and catch rate with counts and Wilson intervals
    as each run published them (Table 1); ``changelog`` lists each run's protocol and the
    amendments logged since the previous run (with ``after_results``).
    """
    runs = sorted(runs, key=lambda r: ((r.get("run") or {}).get("created_at") or "", (r.get("run") or {}).get("tag")))
    tags: list[str] = []
    by_tag: dict[str, dict[str, Any]] = {}
    for r in runs:
        t = str((r.get("run") or {}).get("tag"))
        if t not in by_tag:
            tags.append(t)
        by_tag[t] = r  # the newest run of a tag wins
    dets: dict[str, dict[str, Any]] = {}
    for t in tags:
        for row in by_tag[t].get("table1") or []:
            d = dets.setdefault(row.get("detector"), {"detector": row.get("detector"), "by_tag": {}})
            d["by_tag"][t] = {k: row.get(k) for m in TREND_METRICS for k in m[:4]} | {
                "version": row.get("version"), "scan_date": row.get("scan_date")}
    for d in dets.values():
        for t in tags:
            d["by_tag"].setdefault(t, None)
    changelog, prev_at, seen = [], "", set()
    for t in tags:
        run = by_tag[t].get("run") or {}
        p = run.get("protocol") or {}
        new = [a for a in p.get("amendments") or [] if a.get("hash") not in seen]
        seen |= {a.get("hash") for a in p.get("amendments") or []}
        changelog.append({"tag": t, "run_id": run.get("run_id"), "created_at": run.get("created_at"),
                          "protocol": p.get("name"), "protocol_id": p.get("id"), "protocol_hash": p.get("hash"),
                          "scores_before_commit": p.get("scores_before_commit"), "scores_total": p.get("scores_total"),
                          "amendments": new, "since": prev_at or None})
        prev_at = run.get("created_at") or prev_at
    return {"kind": "run_trends", "tags": tags, "rows": list(dets.values()), "changelog": changelog}


def run_trends_figures(data: dict[str, Any], img_dir: Path) -> list[dict[str, str]]:
    """One interval chart per metric: a row per detector, a dot per tag, whiskers = 95% interval."""
    figs = []
    for key, ci, _, _, name in TREND_METRICS:
        rows = [{"group": d["detector"], "series": t, "v": (d["by_tag"][t] or {}).get(key),
                 "ci": (d["by_tag"][t] or {}).get(ci)} for d in data["rows"] for t in data["tags"]]
        if not any(_finite(r["v"]) for r in rows):
            continue
        p = plots.interval_dots(rows, img_dir / f"run-trends-{key}.svg", group_key="group", series_key="series",
                                value_key="v", ci_key="ci", xlabel=f"{name} (%), 95% Wilson interval, per run tag")
        figs.append({"id": key, "file": f"img/{p.name}",
                     "alt": f"{name.capitalize()} per detector for each run tag, with 95% interval whiskers.",
                     "caption": f"{name.capitalize()} per detector across runs (one dot per tag, oldest first)."})
    return figs
