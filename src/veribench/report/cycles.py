"""HumanizerBench cycle pages: leaderboard, one page per humanizer, trends across cycles.

A cycle bundle is a folder holding ``leaderboard.json`` (plus ``cycle.json``,
``commit.json``, ``scoring.js`` and the raw files). The report shows the published
leaderboard as published; whether those numbers re-derive from the raw files is the
job of ``veribench.cycles.verify``, whose verdict each cycle page shows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from veribench.cycles.verify import verify_cycle
from veribench.errors import InputError
from veribench.report import plots

#: Sub-scores of the composite, in the methodology's order (spec 000, "Scoring formula").
SUBSCORES = ("bypass_rate", "meaning_preservation", "readability", "consistency_across_categories")


def is_bundle(path: Path) -> bool:
    return path.is_dir() and (path / "leaderboard.json").is_file()


def slugify(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(s).lower()).strip("-") or "x"


def _read_json(path: Path, required: bool = True) -> Any:
    if not path.is_file():
        if required:
            raise InputError("file missing from cycle bundle", file=str(path))
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON ({e.msg} at line {e.lineno})", file=str(path)) from None


def weights_from_scoring_js(path: Path) -> dict[str, float] | None:
    """The composite weights as frozen in the bundle's ``scoring.js`` (``const WEIGHTS = {...};``).

    Read as text, never executed. None when the file or the constant is absent.
    """
    if not path.is_file():
        return None
    m = re.search(r"const\s+WEIGHTS\s*=\s*(\{[^}]*\})", path.read_text(encoding="utf-8", errors="replace"))
    if not m:
        return None
    try:
        w = json.loads(m.group(1))
    except json.JSONDecodeError:
        return None
    return {k: float(w[k]) for k in SUBSCORES if k in w} or None


def verification(path: Path) -> dict[str, Any]:
    """Verification status of a bundle (:func:`veribench.cycles.verify.verify_cycle`).

    Returns ``{"status": "verified" | "failed" | "not verified", "detail": str, "checks": [...]}``.
    """
    try:
        res = verify_cycle(path)
    except Exception as e:  # a failed verification is a result, not a crash of the report
        return {"status": "failed", "detail": f"{type(e).__name__}: {e}", "checks": []}
    return _verdict(res)


def _verdict(res: Any) -> dict[str, Any]:
    """Normalise a verifier result (``CycleReport``-like object, dict or bool) to status/detail/checks."""
    d: Any = res
    if hasattr(res, "to_dict"):
        d = res.to_dict()
    elif hasattr(res, "model_dump"):
        d = res.model_dump()
    if isinstance(d, bool):
        return {"status": "verified" if d else "failed", "detail": "", "checks": [], "weights": None}
    if not isinstance(d, dict):
        return {"status": "not verified", "detail": f"unrecognised verifier result {type(res).__name__}",
                "checks": [], "weights": None}
    ok = d.get("ok", d.get("passed", d.get("verified")))
    checks = []
    for sev, items in (("failed", d.get("failures") or []), ("warning", d.get("warnings") or [])):
        for f in items:
            f = f if isinstance(f, dict) else getattr(f, "__dict__", {"message": str(f)})
            where = ", ".join(str(x) for x in (f.get("file"), f.get("field")) if x)
            checks.append({"name": str(f.get("check") or ""), "result": sev,
                           "detail": (where + ": " if where else "") + str(f.get("message") or "")})
    parts = []
    if d.get("prompts_verified") is not None:
        parts.append(f"{d['prompts_verified']} prompts re-derived from the nonce")
    if d.get("humanizers_replayed") is not None:
        parts.append(f"{d['humanizers_replayed']} humanizers' scores replayed from the raw files")
    weights = ((d.get("algorithms") or {}).get("scoring") or {}).get("weights")
    return {"status": "verified" if ok else "failed", "detail": "; ".join(parts), "checks": checks,
            "weights": weights if isinstance(weights, dict) else None}


def load_bundle(path: Path, verify: bool = True) -> dict[str, Any]:
    """Read one cycle bundle's published files (leaderboard, cycle, commit, weights)."""
    lb = _read_json(path / "leaderboard.json")
    if not isinstance(lb, dict) or not isinstance(lb.get("humanizers"), list):
        raise InputError("expected an object with a 'humanizers' list", file=str(path / "leaderboard.json"), field="humanizers")
    for i, h in enumerate(lb["humanizers"]):
        if not isinstance(h, dict) or "slug" not in h:
            raise InputError("humanizer entry without 'slug'", file=str(path / "leaderboard.json"), record=i, field="slug")
    cycle = _read_json(path / "cycle.json", required=False) or {}
    commit = _read_json(path / "commit.json", required=False) or {}
    out = {
        "path": path,
        "name": str(lb.get("cycle") or cycle.get("cycle") or path.name),
        "leaderboard": lb,
        "cycle": cycle,
        "commit": commit,
        "verification": verification(path) if verify else {"status": "not verified", "detail": "verification skipped (--no-verify)", "checks": []},
    }
    # The composite weights: as the verifier read them from the frozen scoring.js, else read here.
    v = out["verification"]
    out["weights"] = {k: float(v["weights"][k]) for k in SUBSCORES if k in (v.get("weights") or {})} or \
        weights_from_scoring_js(path / "scoring.js")
    v.pop("weights", None)
    return out


def _sort_key(b: dict[str, Any]) -> tuple:
    return (str(b["leaderboard"].get("generated_at") or b["commit"].get("started_at") or ""), b["name"])


def sort_bundles(bundles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(bundles, key=_sort_key)


def _union(dicts: list[dict[str, Any] | None]) -> list[str]:
    out: dict[str, None] = {}
    for d in dicts:
        for k in d or {}:
            out.setdefault(k, None)
    return sorted(out)


def rank_interval_text(ri: Any, reason: Any = None) -> str | None:
    """``[2, 5]`` -> ``"2 to 5"`` (a humanizer's 95% rank interval, 1 = first); ``"none (reason)"``
    when the interval is null with a reason; None when absent."""
    if isinstance(ri, (list, tuple)) and len(ri) == 2:
        return f"{ri[0]} to {ri[1]}"
    if reason:
        return f"none ({reason})"
    return None


def uncertainty_statement(lb: dict[str, Any]) -> dict[str, Any]:
    """What the cycle page says about the ranking's uncertainty, read from ``leaderboard.json``'s
    ``uncertainty`` block (:mod:`veribench.cycles.uncertainty`): ``documented``, ``method``,
    ``seed``, ``n_resamples``, ``correction``, ``verified_note`` and ``tiers`` (rows
    ``{metric, tier, humanizers}``), or ``documented: False`` with the reason in ``source``."""
    u = lb.get("uncertainty")
    if not isinstance(u, dict) or not u.get("method"):
        return {"documented": False, "tiers": [],
                "source": "leaderboard.json has no uncertainty block (composite and rank intervals, tiers); "
                          "`veribench cycle score` computes them from the cycle folder"}
    tiers = [{"metric": str(m).replace("_", " "), "tier": t.get("tier"), "humanizers": ", ".join(t.get("humanizers") or [])}
             for m, ts in (u.get("tiers") or {}).items() for t in ts or []]
    return {"documented": True, "method": str(u["method"]), "seed": u.get("seed"), "n_resamples": u.get("n_resamples"),
            "correction": u.get("correction"), "verified_note": u.get("verified_note"), "tiers": tiers,
            "source": "leaderboard.json: uncertainty"}


def _lb_row(h: dict[str, Any], href: str) -> dict[str, Any]:
    pens = [dict(p) for p in h.get("penalties_applied") or []]
    total = sum(p.get("score_delta") or 0 for p in pens)
    settings = h.get("settings_used")
    return {
        "rank": h.get("rank"),
        "rank_change": h.get("rank_change"),
        "slug": h["slug"],
        "href": href,
        "scores": dict(h.get("scores") or {}),
        "score_intervals": dict(h.get("score_intervals") or {}),
        "rank_interval_95": h.get("rank_interval_95"),
        "rank_interval_text": rank_interval_text(h.get("rank_interval_95"), h.get("rank_interval_95_reason")),
        "tier": h.get("tier"),
        "penalties": pens,
        "penalty_total": total,
        "penalty_codes": ", ".join(p.get("code", "?") for p in pens) or None,
        "confidence": h.get("confidence"),
        "plan_tier_used": h.get("plan_tier_used"),
        "settings_used": settings if settings is None or isinstance(settings, str) else json.dumps(settings, sort_keys=True),
        "sample_count": h.get("sample_count"),
        "successful_test_count": h.get("successful_test_count"),
        "flagged_test_count": h.get("flagged_test_count"),
        "last_tested_at": h.get("last_tested_at"),
        "detector_breakdown": dict(h.get("detector_breakdown") or {}),
        "category_breakdown": dict(h.get("category_breakdown") or {}),
    }


def bundle_statements(b: dict[str, Any]) -> dict[str, Any]:
    """What the cycle page says about the bundle, each statement read from the bundle itself,
    with the file and field it comes from (``source``), never assumed.

    Keys: ``intervals`` (how the published intervals were computed: ``documented`` and the
    method as ``leaderboard.json``'s ``score_intervals_method`` records it), ``weights``
    (whether the composite weights were read from the bundle's ``scoring.js``) and
    ``readability`` (``readability_measured`` / ``readability_note`` when present).
    """
    lb = b["leaderboard"]
    m = lb.get("score_intervals_method")
    if isinstance(m, dict) and m.get("method"):
        intervals = {"documented": True, "method": str(m.get("method")), "confidence_level": m.get("confidence_level"),
                     "n_resamples": m.get("n_resamples"), "seed": m.get("seed"), "rng": m.get("rng"),
                     "source": "leaderboard.json: score_intervals_method"}
    elif isinstance(m, str) and m.strip():
        intervals = {"documented": True, "method": m, "confidence_level": None, "n_resamples": None, "seed": None,
                     "rng": None, "source": "leaderboard.json: score_intervals_method"}
    else:
        intervals = {"documented": False, "method": None, "source": "leaderboard.json has no score_intervals_method"}
    weights = {"from_bundle": bool(b.get("weights")),
               "source": "scoring.js: const WEIGHTS" if b.get("weights") else "no readable WEIGHTS in the bundle's scoring.js"}
    readability = None
    if "readability_measured" in lb or lb.get("readability_note"):
        readability = {"measured": lb.get("readability_measured"), "note": lb.get("readability_note"),
                       "source": "leaderboard.json: readability_measured, readability_note"}
    return {"intervals": intervals, "weights": weights, "readability": readability,
            "uncertainty": uncertainty_statement(lb)}


def cycle_page_data(b: dict[str, Any], humanizer_href) -> dict[str, Any]:
    """The JSON a cycle page is built from (leaderboard as published, plus penalty totals)."""
    lb = b["leaderboard"]
    rows = [_lb_row(h, humanizer_href(h["slug"])) for h in sorted(lb["humanizers"], key=lambda h: (h.get("rank") is None, h.get("rank") or 0))]
    unavailable = [dict(u, href=humanizer_href(u.get("slug", "?"))) for u in lb.get("unavailable_humanizers") or []]
    meta = {
        "generated_at": lb.get("generated_at"),
        "methodology_version": lb.get("methodology_version"),
        "scoring_version": lb.get("scoring_version"),
        "prompt_set_version": lb.get("prompt_set_version"),
        "cycle_sample_count": lb.get("cycle_sample_count"),
        "committed_hash": b["commit"].get("committed_hash"),
        "started_at": b["commit"].get("started_at"),
        "source_models": ", ".join(f"{k}: {v}" for k, v in sorted((lb.get("source_model_versions") or {}).items())) or None,
        "counts": dict(b["cycle"].get("counts") or {}),
    }
    return {
        "kind": "cycle",
        "statements": bundle_statements(b),
        "cycle": b["name"],
        "source": b["path"].name,  # folder name only: no local absolute path in a published site
        "meta": meta,
        "verification": b["verification"],
        "weights": b["weights"],
        "leaderboard": rows,
        "detectors": _union([r["detector_breakdown"] for r in rows]),
        "categories": _union([r["category_breakdown"] for r in rows]),
        "unavailable": unavailable,
    }


def cycle_figures(data: dict[str, Any], img_dir: Path, stem: str) -> list[dict[str, str]]:
    figs = []
    rows = data["leaderboard"]
    if rows and data.get("weights"):
        p = plots.stacked_composite(rows, data["weights"], img_dir / f"{stem}-composite.svg")
        figs.append({"id": "composite", "file": f"img/{p.name}",
                     "alt": "Stacked bars of each humanizer's weighted sub-scores and penalties.",
                     "caption": "Composite per humanizer: weighted sub-scores (weights from the bundle's scoring.js), penalties in grey (drawn back from the stack)."})
    ci_rows = [{"humanizer": r["slug"], "series": "composite", "value": r["scores"]["composite"] / 100,
                "ci": [x / 100 for x in r["score_intervals"]["composite_ci_95"]]}
               for r in rows if r["scores"].get("composite") is not None and r["score_intervals"].get("composite_ci_95")]
    if ci_rows:
        p = plots.interval_dots(ci_rows, img_dir / f"{stem}-composite-intervals.svg", group_key="humanizer",
                                series_key="series", value_key="value", ci_key="ci",
                                xlabel="composite (points out of 100) with its 95% interval")
        figs.append({"id": "composite-intervals", "file": f"img/{p.name}",
                     "alt": "Dots with whiskers: each humanizer's composite and its bootstrap interval.",
                     "caption": "Composite per humanizer with its interval (stratified bootstrap over prompts; "
                                "method and seed above)."})
    for key, cols, what in (("detector_breakdown", data["detectors"], "detector"), ("category_breakdown", data["categories"], "category")):
        if rows and cols:
            m = [[r[key].get(c) for c in cols] for r in rows]
            p = plots.heatmap(m, [r["slug"] for r in rows], cols, img_dir / f"{stem}-{what}.svg", label="bypass (human-likelihood)")
            figs.append({"id": what, "file": f"img/{p.name}",
                         "alt": f"Heatmap of mean bypass per humanizer and {what}.",
                         "caption": f"Per-{what} breakdown: mean human-likelihood (1 = evaded every time)."})
    return figs


def humanizer_pages_data(bundles: list[dict[str, Any]], cycle_href, humanizer_href) -> dict[str, dict[str, Any]]:
    """One page's JSON per humanizer slug seen in any bundle (ranked or unavailable)."""
    pages: dict[str, dict[str, Any]] = {}
    for b in bundles:
        lb = b["leaderboard"]
        for h in lb["humanizers"]:
            row = _lb_row(h, humanizer_href(h["slug"]))
            row.update({"cycle": b["name"], "cycle_href": cycle_href(b["name"]), "status": "ranked",
                        "n_ranked": len(lb["humanizers"])})
            pages.setdefault(h["slug"], {"kind": "humanizer", "slug": h["slug"], "cycles": [], "unavailable": []})["cycles"].append(row)
        for u in lb.get("unavailable_humanizers") or []:
            slug = u.get("slug", "?")
            pages.setdefault(slug, {"kind": "humanizer", "slug": slug, "cycles": [], "unavailable": []})["unavailable"].append(
                dict(u, cycle=b["name"], cycle_href=cycle_href(b["name"])))
    for p in pages.values():
        p["detectors"] = _union([c["detector_breakdown"] for c in p["cycles"]])
        p["categories"] = _union([c["category_breakdown"] for c in p["cycles"]])
        p["penalties"] = [dict(pen, cycle=c["cycle"]) for c in p["cycles"] for pen in c["penalties"]]
    return pages


def humanizer_figures(data: dict[str, Any], img_dir: Path, stem: str) -> list[dict[str, str]]:
    panels = {}
    if data["cycles"] and data["detectors"]:
        panels["per detector"] = {c["cycle"]: c["detector_breakdown"] for c in data["cycles"]}
    if data["cycles"] and data["categories"]:
        panels["per writing category"] = {c["cycle"]: c["category_breakdown"] for c in data["cycles"]}
    if not panels:
        return []
    p = plots.bar_panels(panels, img_dir / f"{stem}-breakdown.svg", ylabel="mean human-likelihood")
    return [{"id": "breakdown", "file": f"img/{p.name}",
             "alt": f"Bar charts of {data['slug']}'s bypass per detector and per writing category, one colour per cycle.",
             "caption": "Bypass per detector and per writing category (1 = every output judged human)."}]


def trends_data(bundles: list[dict[str, Any]], humanizer_href) -> dict[str, Any]:
    """Composite, bypass rate and rank per humanizer across cycles (oldest first)."""
    cycles = [b["name"] for b in bundles]
    slugs: dict[str, None] = {}
    for b in bundles:
        for h in sorted(b["leaderboard"]["humanizers"], key=lambda h: h.get("rank") or 0):
            slugs.setdefault(h["slug"], None)
    rows = []
    for s in slugs:
        row: dict[str, Any] = {"slug": s, "href": humanizer_href(s), "by_cycle": {}}
        for b in bundles:
            h = next((h for h in b["leaderboard"]["humanizers"] if h["slug"] == s), None)
            row["by_cycle"][b["name"]] = None if h is None else {
                "rank": h.get("rank"), "composite": (h.get("scores") or {}).get("composite"),
                "bypass_rate": (h.get("scores") or {}).get("bypass_rate")}
        first, last = row["by_cycle"][cycles[0]], row["by_cycle"][cycles[-1]]
        row["composite_change"] = (last["composite"] - first["composite"]) if first and last and \
            isinstance(first.get("composite"), (int, float)) and isinstance(last.get("composite"), (int, float)) else None
        rows.append(row)
    return {"kind": "trends", "cycles": cycles, "rows": rows,
            "methodology_versions": {b["name"]: b["leaderboard"].get("methodology_version") for b in bundles}}


def trends_figures(data: dict[str, Any], img_dir: Path) -> list[dict[str, str]]:
    figs = []
    for key, ylabel, lim in (("composite", "composite (0-100)", (0, 100)), ("bypass_rate", "bypass rate", (0, 1))):
        series = {r["slug"]: [(c, (r["by_cycle"][c] or {}).get(key)) for c in data["cycles"]] for r in data["rows"]}
        p = plots.trend_lines(series, img_dir / f"trends-{key}.svg", ylabel=ylabel, ylim=lim)
        figs.append({"id": key, "file": f"img/{p.name}", "alt": f"Line chart of each humanizer's {key.replace('_', ' ')} across cycles.",
                     "caption": f"{key.replace('_', ' ').capitalize()} per humanizer across cycles (methodology versions differ between cycles; see the table)."})
    return figs
