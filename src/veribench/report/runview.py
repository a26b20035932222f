"""What a detector-run page shows beyond the run's own tables: Table 1 per corpus, decision
rules in a short form, each detector's score scale, protocol-declared subgroup gaps, the
paired comparisons (significance matrices and tiers), robustness under attack, and the
three answers of the landing page.

Everything here *reads* the run results (``docs/results-schema.md``; the issue-14/18
keys ``table1_groups``, ``robustness``, ``comparisons``, ``gaps``, ``significance``,
``tiers`` and ``corrections``): it computes no rate, interval or test. A key the run does
not hold is shown as "not computed" with the reason, never guessed. The only derived
numbers are display helpers documented where they are added (the range of a rate across
detectors, whether an adjusted p-value is at or below the run's alpha, and a Wilson
interval for a gap's group when Table 2 does not hold it, from
:func:`veribench.metrics.rates.wilson`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from veribench.metrics.rates import wilson
from veribench.report import plots
from veribench.report.fmt import MINUS, format_value

#: Short display names of native score scales (text only; the scales themselves are
#: defined by the detectors: ``veribench.scales.SCALES`` and the local
#: detectors' statistics).
SCALE_SHORT = {
    "p_ai": "P(AI)", "percent_ai": "% AI", "p_human": "P(human)", "human_0_100": "human score (0-100)",
    "ai_percent_0_100": "% AI", "human_percent_0_100": "% human", "fraction_ai": "AI fraction",
    "zippy_signed_delta": "ZipPy compression delta", "zippy_confidence": "ZipPy confidence",
    "loglik": "mean token log-likelihood", "rank": "minus mean token rank", "logrank": "minus mean log-rank",
    "entropy": "mean token entropy", "gltr_top10_fraction": "GLTR top-10 share", "lrr": "log-likelihood/log-rank ratio",
    "fast_detectgpt_d": "Fast-DetectGPT curvature D", "detectgpt_z": "DetectGPT normalised discrepancy z",
    "detectgpt_d": "DetectGPT discrepancy d", "binoculars_score": "Binoculars score",
    "watermark_z": "watermark z-score",
    "score_higher_ai": "score", "score_higher_human": "score",
}
OPS = {">": ">", ">=": "\u2265", "<": "<", "<=": "\u2264"}
#: Human-readable metric names.
METRIC_NAMES = {"fpr": "false-positive rate", "catch_rate": "catch rate", "auroc": "AUROC"}
#: How the landing page names a multiple-comparison correction.
CORRECTION_NAMES = {"holm": "Holm's correction", "none": "no correction (p-values as computed)"}
#: Slice kinds the landing page prefers for "innocent writing flagged, by subgroup", in order.
SUBGROUP_KINDS = ("subgroup", "tag:writer")

NOT_IN_RUN = "this run's results have no {key!r} (veribench evaluate adds it; see docs/statistics.md)"


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def slug(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(s).lower()).strip("-") or "x"


# --------------------------------------------------------------------------- scales and rules
def scale_name(det: dict[str, Any]) -> tuple[str, bool]:
    """(scale text, negated) of a detector's ranking score from its ``ranking_score`` block."""
    rk = det.get("ranking_score") or {}
    scales = rk.get("scales") or []
    if rk.get("field") == "ai_probability" or scales == ["p_ai"]:
        return "P(AI)", False
    text = " / ".join(SCALE_SHORT.get(s, s.replace("_", " ")) for s in scales) or "native score"
    return text, rk.get("direction") == "higher_human"


def axis_label(det: dict[str, Any], hist: dict[str, Any] | None) -> str:
    """The x-axis label of a detector's score distribution: its own scale, never "AI probability"
    unless the detector reports one and the chart is drawn on it."""
    if (hist or {}).get("score") == "ai_probability":
        return "P(AI) as the detector reports it (0 to 1)"
    text, neg = scale_name(det)
    return (f"{MINUS}1 \u00d7 {text}" if neg else text) + " (own scale; higher = more AI)"


def rule_short(det: dict[str, Any]) -> str:
    """A decision rule in a few characters, its threshold at 4 significant digits
    (the exact value is in the rules table): ``P(AI) > 0.5``, ``ZipPy compression delta ≥ 0``."""
    rule = det.get("rule") or {}
    thr = rule.get("threshold")
    t = format_value(thr, "sig4") if _finite(thr) else None
    if rule.get("fit"):
        text, neg = scale_name(det)
        name = f"{MINUS}{text}" if neg else text
        if rule.get("per_length"):  # [thresholds] per_length: one threshold per length bin
            return f"{name} > " + "; ".join(f"{format_value(e.get('threshold'), 'sig4')} ({e.get('bin')})"
                                            for e in rule["per_length"]) + " (fitted per length)"
        return f"{name} > {t} (fitted)" if t is not None else "fitted rule, not fitted"
    fld = rule.get("field")
    if fld is None:
        return "no decision rule"
    if fld == "verdict":
        vals = rule.get("ai_values") or []
        return "verdict is " + (" or ".join(map(str, vals)) if vals else "AI")
    name = "P(AI)" if fld == "ai_probability" else scale_name(det)[0] if fld == "raw" else fld
    return f"{name} {OPS.get(rule.get('op'), rule.get('op') or '')} {t if t is not None else '?'}"


def rule_rows(detectors: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The decision-rules table: the short form, the exact threshold and where it came from."""
    out = []
    for d in detectors:
        rule = d.get("rule") or {}
        text, neg = scale_name(d)
        out.append({"detector": d.get("detector"), "anchor": f"rule-{slug(d.get('detector'))}",
                    "short": rule_short(d), "describe": rule.get("describe"),
                    "threshold": rule.get("threshold") if _finite(rule.get("threshold")) else None,
                    "threshold_reason": None if _finite(rule.get("threshold")) else
                    (rule.get("reason") or rule.get("threshold_reason") or ("verdict rule: no threshold" if rule.get("field") == "verdict" else
                                            "no threshold")),
                    "source": rule.get("source"), "operating_point": d.get("operating_point"),
                    "scale": ("\u2212" if neg else "") + text,
                    "ranking_note": (d.get("ranking_score") or {}).get("note")})
    return out


# --------------------------------------------------------------------------- Table 1 groups
def table1_groups(results: dict[str, Any], table1: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One Table 1 per group of detectors scored on the same texts.

    From the run's ``table1_groups`` when present (every Table 1 row names its ``group``);
    otherwise grouped by the corpora each detector has texts in (Table 2's ``corpus``
    slices), said so in the note; otherwise one table, whose note says the run does not
    record which texts each detector scored. Each group: ``{id, title, corpora,
    detectors, documents, same_texts, note, source, rows: [index into table1]}``.
    """
    given = results.get("table1_groups")
    if isinstance(given, list) and given:
        out, used = [], set()
        for g in given:
            rows = [i for i, r in enumerate(table1) if r.get("group") == g.get("id")]
            used.update(rows)
            out.append({**g, "source": "run", "rows": rows})
        rest = [i for i in range(len(table1)) if i not in used]
        if rest:
            out.append({"id": "ungrouped", "title": "Detectors without a group", "corpora": [],
                        "detectors": [table1[i].get("detector") for i in rest], "documents": None,
                        "same_texts": None, "note": "these rows name no group of the run's table1_groups",
                        "source": "report", "rows": rest})
        return out
    by_det: dict[str, list[str]] = {}
    for r in results.get("table2") or []:
        if r.get("slice_type") == "corpus" and ((r.get("human_n") or 0) + (r.get("ai_n") or 0)) > 0:
            by_det.setdefault(r.get("detector"), []).append(str(r.get("slice")))
    if by_det and all(r.get("detector") in by_det for r in table1):
        groups: dict[tuple[str, ...], list[int]] = {}
        for i, r in enumerate(table1):
            groups.setdefault(tuple(sorted(set(by_det[r.get("detector")]))), []).append(i)
        return [{"id": slug("+".join(c)), "title": "Corpus " + " + ".join(c) if len(c) == 1 else "Corpora " + " + ".join(c),
                 "corpora": list(c), "detectors": [table1[i].get("detector") for i in rows], "documents": None,
                 "same_texts": None, "source": "table2 corpus slices",
                 "note": "Grouped by the corpora each detector has texts in (Table 2's corpus slices); the run does not "
                         "record whether the detectors of a group scored the same texts.",
                 "rows": rows} for c, rows in groups.items()]
    return [{"id": "all", "title": "All detectors", "corpora": [], "detectors": [r.get("detector") for r in table1],
             "documents": None, "same_texts": None, "source": "report",
             "note": "This run does not record which corpus each detector scored (no table1_groups and no corpus "
                     "slice in Table 2), so rows may come from different texts: compare them with care.",
             "rows": list(range(len(table1)))}]


# --------------------------------------------------------------------------- gaps and comparisons
def _alpha(results: dict[str, Any]) -> float:
    a = (results.get("corrections") or {}).get("alpha")
    return float(a) if _finite(a) else 0.05


def _survives(p_adj: Any, alpha: float) -> bool | None:
    return None if not _finite(p_adj) else bool(p_adj <= alpha)


def _mark(row: dict[str, Any], survives: bool | None) -> dict[str, Any]:
    """``survives`` (bool or None) and its display text ``survives_text`` ("yes" / "no", or
    None with ``survives_text_reason``)."""
    row["survives"] = survives
    row["survives_text"] = None if survives is None else ("yes" if survives else "no")
    if survives is None:
        row["survives_text_reason"] = "no p-value: the test is undefined"
    return row


def _group_interval(table2: Sequence[dict[str, Any]], stype: str, group: str, det: str, metric: str,
                    k: Any, n: Any, confidence: float) -> list[float] | None:
    """The interval of one group's rate k/n: Table 2's when its row counts the same k of n
    texts, else the Wilson interval of k/n (:func:`veribench.metrics.rates.wilson`, Table 2's
    method), so the interval shown always belongs to the counts shown beside it."""
    ci_key, k_key, n_key = (("fpr_ci95", "false_positives", "human_n") if metric == "fpr" else
                            ("catch_rate_ci95", "detections", "ai_n"))
    for r in table2:
        if (r.get("slice_type"), str(r.get("slice")), r.get("detector")) == (stype, str(group), det) and \
                (r.get(k_key), r.get(n_key)) == (k, n) and r.get(ci_key):
            return r[ci_key]
    if isinstance(k, int) and isinstance(n, int) and n > 0:

        w = wilson(k, n, alpha=1.0 - confidence)
        return [w.lo, w.hi] if w.lo is not None else None
    return None


def gap_sets(results: dict[str, Any]) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]:
    """(gap rows with display fields, declared gaps with their row indices), or (None, None)
    when the run has no ``gaps`` key. Display fields added to each row: ``ci95_a``, ``ci95_b``
    (each group's interval), ``survives`` (adjusted p <= the run's alpha), ``p_display``."""
    rows = results.get("gaps")
    if not isinstance(rows, list) or not rows:  # none declared (or a run from before gaps)
        return None, None
    conf = float((results.get("run") or {}).get("confidence") or 0.95)
    alpha = _alpha(results)
    t2 = results.get("table2") or []
    out, sets = [], {}
    for i, r in enumerate(rows):
        row = dict(r)
        row["ci95_a"] = _group_interval(t2, r.get("slice"), r.get("group_a"), r.get("detector"), r.get("metric"),
                                        r.get("k_a"), r.get("n_a"), conf)
        row["ci95_b"] = _group_interval(t2, r.get("slice"), r.get("group_b"), r.get("detector"), r.get("metric"),
                                        r.get("k_b"), r.get("n_b"), conf)
        _mark(row, _survives(r.get("p_adjusted"), alpha))
        out.append(row)
        key = (r.get("slice"), r.get("group_a"), r.get("group_b"), r.get("metric"))
        s = sets.setdefault(key, {"slice": key[0], "group_a": key[1], "group_b": key[2], "metric": key[3],
                                  "metric_name": METRIC_NAMES.get(key[3], key[3]),
                                  "label_a": r.get("label_a") or key[1], "label_b": r.get("label_b") or key[2],
                                  "test": r.get("test"), "interval": r.get("interval"), "rows": [],
                                  "n_excluding_zero": 0, "n_defined": 0, "n_survive": 0, "n_adjusted": 0})
        s["rows"].append(i)
        ci = r.get("ci95")
        if isinstance(ci, list) and len(ci) == 2 and all(_finite(c) for c in ci):
            s["n_defined"] += 1
            s["n_excluding_zero"] += int(ci[0] > 0 or ci[1] < 0)
        s["n_survive"] += int(bool(row["survives"]))
        s["n_adjusted"] += int(row["survives"] is not None)
    return out, list(sets.values())


def comparison_view(results: dict[str, Any]) -> dict[str, Any] | None:
    """Significance matrices and tiers per slice and metric, with their comparison rows, or
    None when the run has none of the keys. Each ``entries[i]``: ``{slice, metric, better,
    alpha, detectors, cells, undefined, tiers, not_ranked, rows: [index into comparisons],
    n_pairs, n_survive}``."""
    sig, tiers, comps = results.get("significance"), results.get("tiers"), results.get("comparisons")
    if not any(isinstance(x, list) for x in (sig, tiers, comps)):
        return None
    alpha = _alpha(results)
    comps = comps if isinstance(comps, list) else []
    tier_by = {(t.get("slice"), t.get("metric")): t for t in tiers or []}
    entries = []
    for j, m in enumerate(sig or []):
        key = (m.get("slice"), m.get("metric"))
        t = tier_by.get(key) or {}
        rows = [i for i, r in enumerate(comps) if (r.get("slice"), r.get("metric")) == key]
        entries.append({**m, "index": j, "anchor": f"cmp-{slug(key[0])}-{slug(key[1])}",
                        "metric_name": METRIC_NAMES.get(key[1], key[1]),
                        "tiers": t.get("tiers") or [], "not_ranked": t.get("not_ranked") or [],
                        "tier_rule": t.get("rule"), "rows": rows, "n_pairs": len(rows),
                        "n_survive": sum(1 for i in rows if _survives(comps[i].get("p_adjusted"), alpha))})
    return {"alpha": alpha, "corrections": results.get("corrections"), "entries": entries,
            "rows": [_mark(dict(r), _survives(r.get("p_adjusted"), alpha)) for r in comps]}


def headline_entry(view: dict[str, Any] | None) -> dict[str, Any] | None:
    """The matrix the landing page shows: slice ``all``, first metric in AUROC, catch rate, FPR order."""
    if not view or not view["entries"]:
        return None
    for metric in ("auroc", "catch_rate", "fpr"):
        for e in view["entries"]:
            if is_all_slice(e["slice"]) and e["metric"] == metric:
                return e
    return view["entries"][0]


def robustness_rows(results: dict[str, Any]) -> list[dict[str, Any]] | None:
    rows = results.get("robustness")
    if not isinstance(rows, list):
        return None
    return [dict(r) for r in rows]


# --------------------------------------------------------------------------- page data
def is_all_slice(name: Any) -> bool:
    """A slice of all of a table's texts: ``all`` (one table), or ``<table> · all`` (one per
    corpus, as ``evaluate`` names the slices of each Table 1 group)."""
    return name == "all" or str(name).endswith(" · all")


def restrict(view: dict[str, Any] | None, slice_name: str) -> dict[str, Any] | None:
    """``view`` with only the entries of one slice (their ``rows`` re-indexed); ``"all"``
    keeps every table's all-texts slice (:func:`is_all_slice`)."""
    if view is None:
        return None
    keep = [e for e in view["entries"] if (is_all_slice(e["slice"]) if slice_name == "all" else e["slice"] == slice_name)]
    idx = sorted({i for e in keep for i in e["rows"]})
    where = {i: k for k, i in enumerate(idx)}
    return {**view, "entries": [{**e, "rows": [where[i] for i in e["rows"]]} for e in keep],
            "rows": [view["rows"][i] for i in idx]}


def enrich(data: dict[str, Any], results: dict[str, Any]) -> dict[str, Any] | None:
    """Add the report's run-page fields to ``data`` (built by ``runs.run_page_data``).

    Added: ``series_order`` (detector order: one style per detector in every chart),
    ``rules``, ``table1_groups``, ``gaps`` / ``gap_sets``, ``comparisons_view`` (the
    ``all`` slice only), ``robustness``, ``not_computed`` (key -> reason), each Table 1
    row's ``rule_short`` and ``rule_href``, and ``axis_label`` on each score histogram.

    Returns:
        The full comparisons view (every slice; :func:`comparison_view`), or None.
    """
    dets = data.get("detectors") or []
    data["series_order"] = [d.get("detector") for d in dets]
    data["rules"] = rule_rows(dets)
    short = {r["detector"]: r for r in data["rules"]}
    for row in data.get("table1") or []:
        rr = short.get(row.get("detector"))
        row["rule_short"] = rr["short"] if rr else None
        row["rule_href"] = f"#{rr['anchor']}" if rr else None
    data["table1_groups"] = table1_groups(results, data.get("table1") or [])
    by = {d.get("detector"): d for d in dets}
    for det, c in (data.get("curves") or {}).items():
        if c.get("hist"):
            c["hist"]["axis_label"] = axis_label(by.get(det, {}), c["hist"])
    not_computed: dict[str, str] = {}
    data["gaps"], data["gap_sets"] = gap_sets(results)
    if isinstance(results.get("gaps"), list) and not results["gaps"]:
        not_computed["gaps"] = ("the protocol declares no subgroup gap: declare the pairs to compare with [[gaps]] "
                                "(and [comparisons]) in the protocol")
    elif data["gaps"] is None:
        not_computed["gaps"] = NOT_IN_RUN.format(key="gaps") + "; declare the pairs to compare with [[gaps]] in the protocol"
    full = comparison_view(results)
    data["comparisons_view"] = restrict(full, "all")
    if full is None:
        not_computed["comparisons"] = NOT_IN_RUN.format(key="comparisons")
    elif not (data["comparisons_view"] or {}).get("entries"):
        not_computed["comparisons"] = (
            "no pairwise comparison on all texts: the protocol plans none ([comparisons]), or fewer than two "
            "detectors were compared on the same texts" if (results.get("corrections") or {}).get("enabled", True)
            is not False else "the protocol plans no pairwise comparisons (add a [comparisons] table)")
    data["robustness"] = robustness_rows(results)
    if data["robustness"] is None:
        not_computed["robustness"] = NOT_IN_RUN.format(key="robustness")
    data["corrections"] = results.get("corrections")
    data["tpr_ci"] = (results.get("run") or {}).get("tpr_ci")
    data["not_computed"] = not_computed
    return full


def _gap_chart_rows(data: dict[str, Any], gs: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for i in gs["rows"]:
        r = data["gaps"][i]
        rows.append({"group": gs["label_a"], "series": r["detector"], "v": r.get("rate_a"), "ci": r.get("ci95_a")})
        rows.append({"group": gs["label_b"], "series": r["detector"], "v": r.get("rate_b"), "ci": r.get("ci95_b")})
    return rows


def _subgroup_chart_rows(data: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """FPR per subgroup for the landing page: the first of :data:`SUBGROUP_KINDS` the run
    slices by, else Table 1's FPR per detector."""
    sub = data.get("subgroup_fpr") or []
    for kind in SUBGROUP_KINDS:
        rows = [r for r in sub if str(r.get("slice", "")).startswith(kind + ": ")]
        if rows:
            return ([{"group": r["slice"].partition(": ")[2], "series": r["detector"], "v": r.get("fpr"),
                      "ci": r.get("fpr_ci95")} for r in rows], kind)
    return ([{"group": "all human texts", "series": r.get("detector"), "v": r.get("fpr"), "ci": r.get("fpr_ci95")}
             for r in data.get("table1") or []], "all")


def _fig(figs: list, fid: str, p: Path, alt: str, caption: str) -> None:
    figs.append({"id": fid, "file": f"img/{p.name}", "alt": alt, "caption": caption})


def run_figures(data: dict[str, Any], img_dir: Path, stem: str) -> list[dict[str, str]]:
    """Write the run page's SVG charts; returns ``[{id, file, alt, caption}]`` (file relative to the site)."""
    figs: list[dict[str, str]] = []
    order = data.get("series_order")
    for k, gs in enumerate(data.get("gap_sets") or []):
        p = plots.interval_dots(_gap_chart_rows(data, gs), img_dir / f"{stem}-gap-{k}.svg", group_key="group",
                                series_key="series", value_key="v", ci_key="ci", order=order,
                                xlabel=f"{gs['metric_name']} (%), 95% interval")
        _fig(figs, f"gap-{k}", p, f"{gs['metric_name'].capitalize()} for {gs['label_a']} and {gs['label_b']} per detector, "
             "with 95% interval whiskers.", f"{gs['label_a']} against {gs['label_b']}: {gs['metric_name']} per detector.")
        rows = [{"label": data["gaps"][i]["detector"], "estimate": data["gaps"][i].get("estimate"),
                 "ci95": data["gaps"][i].get("ci95"), "survives": data["gaps"][i].get("survives")} for i in gs["rows"]]
        p = plots.difference_intervals(rows, img_dir / f"{stem}-gapdiff-{k}.svg",
                                       xlabel=f"{gs['label_a']} minus {gs['label_b']} (points), 95% interval")
        _fig(figs, f"gapdiff-{k}", p, f"Difference in {gs['metric_name']} between {gs['label_a']} and {gs['label_b']} "
             "per detector, with its 95% interval and a zero line.",
             f"The gap per detector ({gs['interval']}); filled where it survives the run's correction.")
    t1 = data.get("table1") or []
    auroc = {r.get("detector"): r.get("auroc") for r in t1}
    curves = data.get("curves") or {}
    for g in data.get("table1_groups") or []:
        dets = [t1[i].get("detector") for i in g["rows"]]
        roc = {d: curves[d]["roc"] for d in dets if (curves.get(d) or {}).get("roc", {}).get("fpr")}
        if roc:
            p = plots.roc_curves(roc, img_dir / f"{stem}-roc-{slug(g['id'])}.svg", auroc=auroc, order=order)
            _fig(figs, f"roc-{g['id']}", p, f"ROC curves of the detectors of {g['title']}, one line and marker per detector.",
                 f"ROC curves, {g['title']}: catch rate against false-positive rate at every threshold, on the evaluated "
                 "texts (the test split when the protocol declares one).")
        hists = {d: curves[d]["hist"] for d in dets if (curves.get(d) or {}).get("hist")}
        if hists:
            p = plots.score_histograms(hists, img_dir / f"{stem}-hist-{slug(g['id'])}.svg",
                                       axis_labels={d: h.get("axis_label", "score") for d, h in hists.items()})
            _fig(figs, f"hist-{g['id']}", p, f"Score distributions of human and AI texts for the detectors of {g['title']}, "
                 "one panel per detector on its own scale.",
                 f"Score distributions, {g['title']}: share of each label's texts per bin, on each detector's own scale.")
    if data.get("subgroup_fpr"):
        p = plots.interval_dots(data["subgroup_fpr"], img_dir / f"{stem}-subgroups.svg", group_key="slice",
                                series_key="detector", value_key="fpr", ci_key="fpr_ci95", order=order,
                                xlabel="false-positive rate (%), 95% Wilson interval")
        _fig(figs, "subgroups", p, "False-positive rate per subgroup and detector with 95% interval whiskers.",
             "False-positive rate per subgroup (human texts only), with 95% interval whiskers.")
    view = data.get("comparisons_view")
    for e in (view or {}).get("entries") or []:
        if not is_all_slice(e["slice"]):
            continue
        p = plots.significance_grid(e["detectors"], e["cells"], img_dir / f"{stem}-sig-{slug(e['anchor'])}.svg")
        _fig(figs, f"sig-{e['anchor']}", p, f"Significance matrix of {e['metric_name']} on all texts: a marker per pair "
             "of detectors saying whether the row is significantly better, worse, or not separated.",
             f"Which {e['metric_name']} differences survive the correction (all texts).")
    rob = data.get("robustness") or []
    for metric in ("catch_rate", "fpr"):
        rows = [{"attack": r.get("attack"), "detector": r.get("detector"), "rate": (r.get("attacked") or {}).get("rate"),
                 "ci95": (r.get("attacked") or {}).get("ci95"), "source_rate": (r.get("source") or {}).get("rate")}
                for r in rob if r.get("metric") == metric]
        if rows:
            p = plots.robustness_chart(rows, img_dir / f"{stem}-robust-{metric}.svg", order=order,
                                       xlabel=f"{METRIC_NAMES[metric]} on attacked texts (%), 95% interval")
            _fig(figs, f"robust-{metric}", p, f"{METRIC_NAMES[metric].capitalize()} per attack and detector with 95% interval "
                 "whiskers, beside the same detector on the unattacked sources.",
                 f"{METRIC_NAMES[metric].capitalize()} under each attack (filled, with whiskers) and on the same texts "
                 "before the attack (hollow).")
    return figs


# --------------------------------------------------------------------------- landing page
def _range(vals: Sequence[Any]) -> dict[str, Any]:
    v = [x for x in vals if _finite(x)]
    return {"lo": min(v) if v else None, "hi": max(v) if v else None, "n": len(v)}


def _correction_name(data: dict[str, Any]) -> Any:
    c = (data.get("corrections") or {}).get("correction")
    return CORRECTION_NAMES.get(c, c)


#: Fields of a gap row that the landing page shows (the estimate, its interval and adjusted
#: test), with every null's reason (``*_reason``) kept beside them.
_LANDING_GAP_KEYS = ("detector", "estimate", "ci95", "p_value", "p_adjusted", "survives", "survives_text")


def _landing_gap_row(r: dict[str, Any]) -> dict[str, Any]:
    """One detector's declared gap for the landing page: the gap in points with its interval,
    the adjusted p and whether it survives the correction; the reason of each null kept."""
    out = {k: r.get(k) for k in _LANDING_GAP_KEYS}
    out.update({k: v for k, v in r.items() if k.endswith("_reason") and v})
    return out


def landing(data: dict[str, Any]) -> dict[str, Any]:
    """The three answers of the landing page for one run: innocent writing flagged (FPR by
    subgroup), AI text caught (catch rate per detector and corpus), which differences are
    real (the headline significance matrix and tiers, else the declared gaps).

    A declared false-positive gap is summarised by its adjusted test (``n_survive`` of
    ``n_detectors`` gaps whose multiple-comparison-adjusted p is at most ``alpha``;
    ``n_adjusted`` have an adjusted p at all), never by whether its unadjusted interval
    excludes zero: an interval is not corrected for the family of tests. ``q1["rows"]``
    holds each detector's gap (points, a minus b) with its interval, test and adjusted p,
    as the run page's gap table does."""
    t1 = data.get("table1") or []
    q1: dict[str, Any] = {}
    if data.get("gap_sets") and any(g["metric"] == "fpr" for g in data["gap_sets"]):
        gs = next(g for g in data["gap_sets"] if g["metric"] == "fpr")
        rows = [data["gaps"][i] for i in gs["rows"]]
        q1 = {"kind": "gap", "label_a": gs["label_a"], "label_b": gs["label_b"],
              "a": _range([r.get("rate_a") for r in rows]), "b": _range([r.get("rate_b") for r in rows]),
              "n_detectors": len(rows), "n_survive": gs["n_survive"], "n_adjusted": gs["n_adjusted"],
              "correction": _correction_name(data), "alpha": _alpha(data), "interval": gs["interval"],
              "test": gs["test"], "rows": [_landing_gap_row(r) for r in rows]}
    else:
        rows, kind = _subgroup_chart_rows(data)
        q1 = {"kind": kind, "range": _range([r["v"] for r in rows]), "n_groups": len({r["group"] for r in rows})}
    q2 = {"groups": [{"title": g["title"], "range": _range([t1[i].get("catch_rate") for i in g["rows"]]),
                      "n_detectors": len(g["rows"])} for g in data.get("table1_groups") or []]}
    e = headline_entry(data.get("comparisons_view"))
    q3: dict[str, Any]
    if e is not None:
        q3 = {"kind": "matrix", "metric_name": e["metric_name"], "slice": e["slice"], "n_pairs": e["n_pairs"],
              "n_survive": e["n_survive"], "tiers": [{"tier": t["tier"], "detectors": ", ".join(t["detectors"])}
                                                     for t in e["tiers"]],
              "family_size": next((f.get("size") for f in ((data.get("corrections") or {}).get("families") or [])
                                   if f.get("name") == "comparisons"), None),
              "correction": _correction_name(data), "anchor": e["anchor"]}
    elif data.get("gap_sets"):
        gs = data["gap_sets"][0]
        q3 = {"kind": "gaps", "label_a": gs["label_a"], "label_b": gs["label_b"], "n_defined": gs["n_defined"],
              "n_survive": gs["n_survive"], "n_detectors": len(gs["rows"]), "metric_name": gs["metric_name"]}
    else:
        q3 = {"kind": "none", "reason": (data.get("not_computed") or {}).get("comparisons")}
    return {"q1": q1, "q2": q2, "q3": q3}


def landing_figures(data: dict[str, Any], img_dir: Path, stem: str, prefix: str = "") -> list[dict[str, str]]:
    """The three pictures of the landing page for one run (narrow, legend below); ids
    ``<prefix>-q1``, ``-q2``, ``-q3``."""
    figs: list[dict[str, str]] = []
    order = data.get("series_order")
    if data.get("gap_sets") and any(g["metric"] == "fpr" for g in data["gap_sets"]):
        gs = next(g for g in data["gap_sets"] if g["metric"] == "fpr")
        rows, what = _gap_chart_rows(data, gs), f"{gs['label_a']} and {gs['label_b']}"
    else:
        rows, kind = _subgroup_chart_rows(data)
        what = "each subgroup" if kind != "all" else "all human texts"
    if rows:
        p = plots.interval_dots(rows, img_dir / f"{stem}-q1.svg", group_key="group", series_key="series", value_key="v",
                                ci_key="ci", order=order, legend="below", width=4.4, compact=True,
                                xlabel="human texts flagged as AI (%), 95% interval")
        _fig(figs, f"{prefix}-q1", p, f"False-positive rate per detector on {what}, with 95% interval whiskers.",
             f"Human texts flagged as AI, per detector, on {what}.")
    t1 = data.get("table1") or []
    rows = [{"group": g["title"], "series": t1[i].get("detector"), "v": t1[i].get("catch_rate"),
             "ci": t1[i].get("catch_rate_ci95")} for g in data.get("table1_groups") or [] for i in g["rows"]]
    if any(_finite(r["v"]) for r in rows):
        p = plots.interval_dots(rows, img_dir / f"{stem}-q2.svg", group_key="group", series_key="series", value_key="v",
                                ci_key="ci", order=order, legend="below", width=4.4, compact=True,
                                xlabel="AI texts caught (%), 95% interval")
        _fig(figs, f"{prefix}-q2", p, "Catch rate per detector and corpus, with 95% interval whiskers.",
             "AI texts flagged as AI (catch rate), per detector, one row per corpus.")
    e = headline_entry(data.get("comparisons_view"))
    if e is not None:
        p = plots.significance_grid(e["detectors"], e["cells"], img_dir / f"{stem}-q3.svg", legend="below")
        _fig(figs, f"{prefix}-q3", p, f"Significance matrix of {e['metric_name']}: for each pair of detectors, whether the row detector "
             "is significantly better, worse, or not separated.",
             f"Pairwise {e['metric_name']} differences that survive the correction ({e['slice']} texts).")
    elif data.get("gap_sets"):
        gs = data["gap_sets"][0]
        rows = [{"label": data["gaps"][i]["detector"], "estimate": data["gaps"][i].get("estimate"),
                 "ci95": data["gaps"][i].get("ci95"), "survives": data["gaps"][i].get("survives")} for i in gs["rows"]]
        p = plots.difference_intervals(rows, img_dir / f"{stem}-q3.svg", legend="below", width=4.4,
                                       xlabel=f"{gs['label_a']} minus {gs['label_b']} (points)")
        _fig(figs, f"{prefix}-q3", p, f"Gap in {gs['metric_name']} between {gs['label_a']} and {gs['label_b']} per detector, "
             "with its interval and a zero line.", f"The {gs['metric_name']} gap per detector, with its 95% interval.")
    return figs
