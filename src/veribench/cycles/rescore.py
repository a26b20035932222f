"""Score humanizer outputs with veribench's own parts, and re-score published bundles.

- Detector scores: any registry detector, through the one scoring path
  (:func:`veribench.detectors.pipeline.score_texts`, cached in the workspace), stored
  per test as ``raw_score`` on the human-likelihood scale (1 = human) =
  ``1 - P(AI)``. A detector without a calibrated probability is mapped by a recorded
  rule (:func:`human_likelihood`).
- Meaning preservation: embedding cosine (registry kind ``embedder``; default
  ``minilm``), cached in the workspace; the embedder's rescale floor and drift
  threshold become the cycle's scoring rules.
- Readability: ``published`` (the source bundle's per-test values), ``none``
  (not measured; the leaderboard says so) or ``judge`` (``veribench.llm.judge``).
- Flags: :func:`veribench.cycles.flags.classify_output`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from veribench import registry
from veribench.bundles.jscompat import dumps_js
from veribench.cycles.bundle import Bundle
from veribench.cycles.create import _load, _write_work, publish_cycle, unavailable_humanizers
from veribench.cycles.flags import classify_output
from veribench.cycles.scoring import ScoringRules, recognise_scoring
from veribench.cycles.uncertainty import ranking_uncertainty
from veribench.cycles.verify import verify_cycle
from veribench.detectors.pipeline import score_texts
from veribench.errors import InputError, VeribenchError
from veribench.hashing import text_sha256
from veribench.llm.embedders import cosine01, describe, embed_cached
from veribench.records import ScoreResult

#: Verdict strings (lower-case prefixes) that mean "AI" for the ``verdict`` mapping.
AI_VERDICTS = ("ai", "machine", "generated", "fake", "gpt")


def human_likelihood(r: ScoreResult, mapping: str = "auto") -> tuple[float | None, str]:
    """Human likelihood in [0, 1] (1 = human) of one result, and the rule used.

    Rules:
        - ``probability``: ``1 - ai_probability`` (the detector's own calibrated value);
        - ``verdict``: 0 when the detector's verdict is AI, 1 otherwise (its own decision
          rule; HumanizerBench notes some vendors binarise the same way);
        - ``sigmoid:T`` or ``sigmoid:T:C``: ``1 - 1 / (1 + exp(-(oriented - C) / T))`` on the
          signed raw score (higher = more AI), centred at C (default 0);
        - ``auto``: probability when present, else verdict when present.

    Returns ``(None, reason)`` when the result is not ok or the rule does not apply.
    """
    if r.status != "ok":
        return None, r.status
    if mapping in ("auto", "probability") and r.ai_probability is not None:
        return 1.0 - r.ai_probability, "probability"
    if mapping in ("auto", "verdict") and r.verdict:
        return (0.0 if r.verdict.strip().lower().startswith(AI_VERDICTS) else 1.0), "verdict"
    if mapping.startswith("sigmoid:"):
        parts = mapping.split(":")
        t = float(parts[1])
        c = float(parts[2]) if len(parts) > 2 else 0.0
        o = r.oriented
        if o is None or not math.isfinite(o) or t <= 0:
            return None, "no signed score"
        z = (o - c) / t
        p_ai = 1 / (1 + math.exp(-z)) if z > -700 else 0.0
        return 1.0 - p_ai, mapping
    return None, f"mapping {mapping!r} does not apply (no probability or verdict)"


def check_mapping(mapping: str) -> str:
    """Validate a human-likelihood rule name (see :func:`human_likelihood`).

    Raises:
        InputError: not ``auto``, ``probability``, ``verdict`` or ``sigmoid:T[:C]`` with T > 0.
    """
    if mapping in ("auto", "probability", "verdict"):
        return mapping
    parts = mapping.split(":")
    try:
        ok = parts[0] == "sigmoid" and len(parts) in (2, 3) and float(parts[1]) > 0 and all(
            math.isfinite(float(x)) for x in parts[1:])
    except ValueError:
        ok = False
    if not ok:
        raise InputError("expected auto, probability, verdict or sigmoid:T[:C] with T > 0", field="mapping")
    return mapping


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _readability_judge(outputs: list[str], ws: Any, settings: Mapping[str, Any]) -> tuple[list[float | None], dict]:
    judge = registry.create("judge", "llm-readability", dict(settings))
    return judge.rate(outputs, ws=ws), judge.spec.to_dict()


def measure_cycle(directory: str | os.PathLike[str], ws: Any, *, detectors: Sequence[tuple[str, Mapping[str, Any]]],
                  embedder: str = "minilm", embedder_settings: Mapping[str, Any] | None = None,
                  readability: str = "none", judge_settings: Mapping[str, Any] | None = None,
                  mapping: str = "auto", base_rules: ScoringRules | None = None, seed: int = 20260701,
                  n_resamples: int = 2000) -> dict[str, Any]:
    """Score a cycle folder's complete tests; write tests.json, detector-scores.json, scoring-spec.json
    and provenance.json. Returns a summary; its ``ranking`` is the measured cycle's
    :func:`veribench.cycles.uncertainty.ranking_uncertainty` (seed and resamples recorded), or
    null with ``ranking_reason`` when no humanizer has a complete test or samples.json is absent.

    Raises:
        InputError: unknown readability mode; VeribenchError: judge unavailable.
    """
    directory = Path(directory)
    if readability not in ("none", "published", "judge"):
        raise InputError("readability must be none, published or judge", field="readability")
    check_mapping(mapping)
    tests = _load(directory / "tests.json")
    complete = [t for t in tests if t["status"] == "complete"]
    outputs = [t["output_text"] for t in complete]

    det_rows, det_records, declared, det_failures = [], [], [], []
    for name, settings in detectors:

        det = registry.create("detector", name, dict(settings))
        slug = det.spec.label
        declared.append(slug)
        res = score_texts(ws, det, outputs)
        used: dict[str, int] = {}
        failed: dict[str, int] = {}
        for t in complete:
            r = res.get(text_sha256(t["output_text"]))
            if r is None:
                failed["not scored"] = failed.get("not scored", 0) + 1
                continue
            h, rule = human_likelihood(r, mapping)
            if h is None:
                failed[rule] = failed.get(rule, 0) + 1
                det_failures.append({"test_id": t["id"], "detector_slug": slug, "status": r.status,
                                     "reason": rule if r.status == "ok" else (r.detail or {}).get("reason", rule)})
                continue
            used[rule] = used.get(rule, 0) + 1
            det_rows.append({"test_id": t["id"], "detector_slug": slug, "raw_score": h, "scored_at": _now()})
        det_records.append({"slug": slug, "spec": det.spec.to_dict(), "spec_hash": det.spec.hash,
                            "human_likelihood_rule": used, "unscored": failed})

    emb = registry.create("embedder", embedder, dict(embedder_settings or {}))
    vecs = embed_cached(ws, emb, [t["input_text"] for t in complete] + outputs)
    for t in complete:
        t["meaning_preservation"] = cosine01(vecs[text_sha256(t["input_text"])], vecs[text_sha256(t["output_text"])])

    read_rec: dict[str, Any] = {"mode": readability}
    if readability == "none":
        for t in tests:
            t["readability"] = None
        read_rec["note"] = "not measured"
    elif readability == "judge":
        vals, spec = _readability_judge(outputs, ws, judge_settings or {})
        for t, v in zip(complete, vals):
            t["readability"] = v
        read_rec["judge"] = spec
    else:
        read_rec["note"] = "per-test values taken from the source bundle as published"

    rules = (base_rules or ScoringRules()).replace(
        meaning_cosine_floor=emb.rescale_floor, severe_drift_cosine=emb.severe_drift_cosine,
        source=f"{(base_rules or ScoringRules()).source}; meaning floor and drift threshold from embedder "
               f"{emb.spec.label}")
    _write_work(directory / "tests.json", tests)
    _write_work(directory / "detector-scores.json", det_rows)
    _write_work(directory / "scoring-spec.json", {"rules": rules.to_dict(), "embedder": describe(emb)})
    prov_path = directory / "provenance.json"
    prov = _load(prov_path) if prov_path.exists() else {}
    prov.update({"measured_at": _now(), "detectors": det_records, "detectors_declared": declared,
                 "detector_failures": det_failures,
                 "human_likelihood_mapping": mapping, "embedder": describe(emb), "readability": read_rec})
    _write_work(prov_path, prov)
    ranking, why = None, "no complete test to rank"
    if not (directory / "samples.json").exists():
        why = "samples.json absent: no prompts to resample"
    elif complete:
        excl = {u["slug"] for u in unavailable_humanizers(tests)}
        ranking, why = ranking_uncertainty(_load(directory / "samples.json"), tests, det_rows, rules, excl, seed,
                                           n_resamples), None
    return {"complete_tests": len(complete), "detector_scores": len(det_rows), "detectors": declared,
            "embedder": emb.spec.label, "readability": readability,
            "unscored": {d["slug"]: d["unscored"] for d in det_records if d["unscored"]},
            "ranking": ranking, "ranking_reason": why}


def rescore_bundle(bundle: str | os.PathLike[str], out: str | os.PathLike[str], ws: Any, *,
                   detectors: Sequence[tuple[str, Mapping[str, Any]]], embedder: str = "minilm",
                   readability: str = "published", limit: int | None = None, mapping: str = "auto",
                   judge_settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Re-score a verified bundle's humanizer outputs and publish a veribench bundle at ``out``.

    Uses the source's commit, nonce, templates, banks and samples (bytes unchanged
    unless ``limit`` keeps only the first N samples), re-flags outputs, measures with
    veribench's parts, publishes, and compares the rankings (Kendall's tau,
    ``scipy.stats.kendalltau``, tau-b, over humanizers ranked in both).

    Raises:
        VeribenchError: the source bundle fails verification; ``out`` holds files.
    """
    from scipy.stats import kendalltau


    src, out = Path(bundle), Path(out)
    rep = verify_cycle(src)
    if not rep.ok:
        raise VeribenchError(f"source bundle does not verify: {rep.lines()[0]}")
    if out.exists() and any(out.iterdir()):
        raise InputError("folder already holds files; published cycles are never rewritten", file=str(out))
    b = Bundle.load(src)
    out.mkdir(parents=True, exist_ok=True)
    for f in ("commit.json", "templates.json", "banks.json", "select-placeholders.js"):
        (out / f).write_bytes(b.raw[f])
    samples = b.json("samples.json")
    if limit is not None:
        samples = samples[:limit]
        (out / "samples.json").write_text(dumps_js(samples), encoding="utf-8")
    else:
        (out / "samples.json").write_bytes(b.raw["samples.json"])
    keep = {s["id"] for s in samples}
    src_lb = b.json("leaderboard.json")
    rows = [dict(t) for t in b.json("tests.json") if t["sample_id"] in keep]
    reflagged = 0
    for t in rows:
        if t["status"] == "complete":
            st, code = classify_output(t["input_text"], t.get("output_text"))
            if st != "complete":
                t["status"], t["failure_reason_code"] = st, code
                reflagged += 1
        t["meaning_preservation"] = None
        if readability != "published":
            t["readability"] = None
    _write_work(out / "tests.json", rows)
    base = recognise_scoring(b.raw["scoring.js"])
    nonce = b.raw["nonce.txt"].strip(b" \t\r\n").decode("utf-8")
    src_lb_sha = b.sha256("leaderboard.json")
    _write_work(out / "provenance.json", {
        "derived_from": {"cycle": src_lb.get("cycle"), "folder": src.name, "cycle_json_sha256": b.sha256("cycle.json"),
                         "leaderboard_sha256": src_lb_sha, "verified": True},
        "reflagged_outputs": reflagged, "samples_kept": len(samples),
        "leaderboard_extra": {"derived_from": {"cycle": src_lb.get("cycle"), "leaderboard_sha256": src_lb_sha,
                                               "note": "re-scored by veribench with its own detectors and embedder"}},
    })
    summary = measure_cycle(out, ws, detectors=detectors, embedder=embedder, readability=readability,
                            mapping=mapping, base_rules=base, judge_settings=judge_settings)
    lb = publish_cycle(out, nonce=nonce)
    pub = {h["slug"]: h for h in src_lb["humanizers"]}
    mine = {h["slug"]: h for h in lb["humanizers"]}
    common = [s for s in pub if s in mine]
    tau, p = (kendalltau([pub[s]["rank"] for s in common], [mine[s]["rank"] for s in common])
              if len(common) >= 2 else (float("nan"), float("nan")))
    lines = [f"{'humanizer':<18} {'published':>9} {'composite':>9} {'bypass':>7}   {'veribench':>9} {'composite':>9} "
             f"{'bypass':>7} {'meaning':>7}"]
    for s in sorted(common, key=lambda s: mine[s]["rank"]):
        a, m = pub[s], mine[s]
        lines.append(f"{s:<18} {a['rank']:>9} {a['scores']['composite']:>9.2f} {a['scores']['bypass_rate']:>7.4f}   "
                     f"{m['rank']:>9} {m['scores']['composite']:>9.2f} {m['scores']['bypass_rate']:>7.4f} "
                     f"{m['scores']['meaning_preservation']:>7.4f}")
    return {"leaderboard": lb, "summary": summary, "kendall_tau": float(tau), "kendall_p": float(p),
            "n_common": len(common), "table": "\n".join(lines), "reflagged": reflagged}


__all__ = ["check_mapping", "human_likelihood", "measure_cycle", "rescore_bundle"]
