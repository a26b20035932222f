"""Scoring rules as data, and a Python replay of HumanizerBench's ``computeLeaderboard``.

Source of every formula: the frozen ``scoring.js`` of the HumanizerBench June and
July 2026 bundles (methodology in ``shared/spec/000_*.txt``, "Scoring formula").
Per humanizer, over its tests with ``status == "complete"``:

- per-test bypass = median of the test's detector ``raw_score`` values (human
  likelihood, 1 = human); ``bypass_rate`` = mean of those medians;
- ``meaning_preservation`` = mean of ``clamp01((cosine - floor) / (1 - floor))``;
- ``readability`` = mean of per-test ratings (missing counts as 0);
- ``consistency_across_categories`` = ``max(0, 1 - sd(category means))`` with the
  sample standard deviation, or a neutral value under ``min_categories`` categories;
- ``composite_raw = sum(weight * sub-score)``; penalties ``-min(count * per, cap)``;
  ``composite = max(0, composite_raw + sum(deltas))``;
- ``confidence``: high at >= ``high_min_tests`` tests and sd < ``high_max_stddev``,
  medium at >= ``medium_min_tests``, else low;
- ranking: composite descending, then slug ascending (UTF-16 code-unit order).

A bundle's ``scoring.js`` is recognised (:func:`recognise_scoring`) only when it equals a
known text byte for byte outside its constant holes; the holes give a
:class:`ScoringRules`. Anything else raises :class:`UnknownAlgorithm`
("cannot verify: unknown scoring algorithm"); the file is never executed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from veribench.bundles.jscompat import js_number_to_string, js_word_count, utf16_units
from veribench.bundles.reader import compile_template, match_frozen
from veribench.cycles.frozen import KNOWN_SCORING_FILES, KNOWN_SCORING_TEMPLATES, SCORING_JS_HOLES, SCORING_JS_TEMPLATE
from veribench.cycles.selection import UnknownAlgorithm
from veribench.hashing import sha256_bytes

SUB_SCORES = ("bypass_rate", "meaning_preservation", "readability", "consistency_across_categories")
PENALTY_CODES = ("refusal_in_output", "identical_to_input", "severe_meaning_drift", "length_inflation",
                 "length_deflation")
#: ``failure_reason_code`` of a flagged test -> penalty code (scoring.js ``switch``).
FLAGGED_PENALTY_CODES = {"refusal_in_output": "refusal_in_output", "refused_input": "refusal_in_output",
                         "identical_to_input": "identical_to_input"}


@dataclass(frozen=True)
class ScoringRules:
    """The constants of one scoring algorithm (every number that changes a leaderboard).

    Defaults are HumanizerBench July 2026 (methodology 1.2.0, scoring 1.3.0).

    Attributes:
        weights: composite weights of the four sub-scores (sum 100).
        penalty_rules: ``{code: {"per": points per occurrence, "cap": max points}}``.
        length_inflation_ratio: output/input word ratio above which a test counts as inflated.
        length_deflation_ratio: ratio below which it counts as deflated.
        meaning_cosine_floor: cosine mapped to 0 by the meaning rescale (a parameter of
            the embedding model: 0.75 for OpenAI text-embedding-3-large).
        severe_drift_cosine: raw per-test cosine below which ``severe_meaning_drift`` counts.
        min_categories: categories needed for a consistency score; fewer gives ``neutral_consistency``.
        high_min_tests, high_max_stddev, medium_min_tests: the confidence rule.
        family: the algorithm's structure (``humanizerbench-scoring-v1``).
        source: where these rules were read from.
    """

    weights: Mapping[str, float] = field(default_factory=lambda: {
        "bypass_rate": 42, "meaning_preservation": 32, "readability": 16, "consistency_across_categories": 10})
    penalty_rules: Mapping[str, Mapping[str, float]] = field(default_factory=lambda: {
        c: {"per": 2 if c == "identical_to_input" else 1, "cap": 10} for c in PENALTY_CODES})
    length_inflation_ratio: float = 1.4
    length_deflation_ratio: float = 0.6
    meaning_cosine_floor: float = 0.75
    severe_drift_cosine: float = 0.85
    min_categories: int = 3
    neutral_consistency: float = 0.5
    high_min_tests: int = 60
    high_max_stddev: float = 0.1
    medium_min_tests: int = 30
    family: str = "humanizerbench-scoring-v1"
    source: str = "veribench default (HumanizerBench July 2026 constants)"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["weights"] = dict(self.weights)
        d["penalty_rules"] = {k: dict(v) for k, v in self.penalty_rules.items()}
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ScoringRules:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})

    def replace(self, **kw: Any) -> ScoringRules:
        return ScoringRules.from_dict({**self.to_dict(), **kw})


# -- recognising scoring.js -----------------------------------------------------------

_MARK = re.compile(r"@([A-Z_]+)@")
_KNOWN: dict[str, Any] | None = None


def _known() -> dict[str, Any]:
    global _KNOWN
    if _KNOWN is None:

        _KNOWN = {name: compile_template(t, SCORING_JS_HOLES) for name, t in KNOWN_SCORING_TEMPLATES.items()}
    return _KNOWN


def recognise_scoring(data: bytes) -> ScoringRules:
    """Identify a bundle's ``scoring.js`` (raw bytes) and read its constants.

    The file must equal a known text (:data:`veribench.cycles.frozen.KNOWN_SCORING_TEMPLATES`)
    byte for byte outside its constant holes; a hole holds only a number or a JSON
    object of numbers. Any other byte - a comment marker with code behind it, a changed
    line ending - is refused.

    Raises:
        UnknownAlgorithm: "cannot verify: unknown scoring algorithm", or a constant with
            the wrong shape.
    """

    h = sha256_bytes(data)
    unknown = f"cannot verify: unknown scoring algorithm (scoring.js sha256 {h})"
    m = match_frozen(data, _known())
    if m is None:
        raise UnknownAlgorithm(unknown + "; only a known frozen text, byte for byte outside its constants, is "
                                         "accepted, and it is never executed")
    vals = {k: (_num(str(v)) if not isinstance(v, dict) else v) for k, v in m.constants.items()}
    w, pr = vals["WEIGHTS"], vals["PENALTY_RULES"]
    if not (isinstance(w, dict) and set(w) == set(SUB_SCORES)
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in w.values())):
        raise UnknownAlgorithm(unknown + "; WEIGHTS must name exactly the four sub-scores with numbers")
    if not (isinstance(pr, dict) and all(
            isinstance(r, dict) and set(r) == {"per", "cap"}
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in r.values())
            for r in pr.values())):
        raise UnknownAlgorithm(unknown + "; PENALTY_RULES must map codes to {per, cap} numbers")
    source = KNOWN_SCORING_FILES.get(h)
    return ScoringRules(
        weights=w, penalty_rules=pr,
        length_inflation_ratio=vals["LENGTH_INFLATION"], length_deflation_ratio=vals["LENGTH_DEFLATION"],
        meaning_cosine_floor=vals["MEANING_FLOOR"], severe_drift_cosine=vals["SEVERE_DRIFT"],
        min_categories=vals["MIN_CATEGORIES"], neutral_consistency=vals["NEUTRAL_CONSISTENCY"],
        high_min_tests=vals["HIGH_MIN_TESTS"], high_max_stddev=vals["HIGH_MAX_STDDEV"],
        medium_min_tests=vals["MEDIUM_MIN_TESTS"],
        source=(f"known file: {source}" if source else f"recognised as {m.name} with its constants") + f"; sha256 {h}",
    )


def _num(s: str) -> float | int:
    v = float(s)
    return int(v) if v.is_integer() and re.fullmatch(r"-?\d+", s) else v


def render_scoring_js(rules: ScoringRules) -> str:
    """The ``scoring.js`` text for ``rules`` (the known structure with the constants filled in)."""
    def js(v: Any) -> str:
        if isinstance(v, Mapping):
            return "{" + ",".join(json.dumps(k) + ":" + js(x) for k, x in v.items()) + "}"
        return js_number_to_string(v)

    vals = {
        "WEIGHTS": js(rules.weights), "PENALTY_RULES": js(rules.penalty_rules),
        "LENGTH_INFLATION": js(rules.length_inflation_ratio), "LENGTH_DEFLATION": js(rules.length_deflation_ratio),
        "MEANING_FLOOR": js(rules.meaning_cosine_floor), "SEVERE_DRIFT": js(rules.severe_drift_cosine),
        "MIN_CATEGORIES": js(rules.min_categories), "NEUTRAL_CONSISTENCY": js(rules.neutral_consistency),
        "HIGH_MIN_TESTS": js(rules.high_min_tests), "HIGH_MAX_STDDEV": js(rules.high_max_stddev),
        "MEDIUM_MIN_TESTS": js(rules.medium_min_tests),
    }
    return _MARK.sub(lambda m: vals[m.group(1)], SCORING_JS_TEMPLATE)


# -- the replay -------------------------------------------------------------------------


def _mean(xs: Sequence[float]) -> float:
    if not xs:
        return 0.0
    s = 0.0
    for x in xs:
        s += x
    return s / len(xs)


def _median(xs: Sequence[float]) -> float:
    if not xs:
        return 0.0
    s = sorted(xs)
    n = len(s)
    mid = n // 2
    return s[mid] if n % 2 == 1 else (s[mid - 1] + s[mid]) / 2


def _stddev(xs: Sequence[float]) -> float:
    if len(xs) < 2:
        return 0.0
    m = _mean(xs)
    s = 0.0
    for x in xs:
        s += (x - m) ** 2
    return math.sqrt(s / (len(xs) - 1))


def rescale_meaning(cosine: float, floor: float) -> float:
    """``clamp01((cosine - floor) / (1 - floor))`` (scoring.js ``rescaleMeaning``)."""
    return max(0.0, min(1.0, (cosine - floor) / (1 - floor)))


def _v(x: Any, default: float) -> float:
    return default if x is None else x  # JS ``??``


def per_test_bypass(detector_scores: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """``{test_id: {detector_slug: raw_score}}``; a repeated (test, detector) keeps the last row, as scoring.js does."""
    out: dict[str, dict[str, float]] = {}
    for s in detector_scores:
        out.setdefault(s["test_id"], {})[s["detector_slug"]] = s["raw_score"]
    return out


def compute_leaderboard(samples: Sequence[Mapping[str, Any]], tests: Sequence[Mapping[str, Any]],
                        detector_scores: Sequence[Mapping[str, Any]], rules: ScoringRules,
                        exclude: set[str] | frozenset[str] = frozenset(),
                        word_counts: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """Replay ``computeLeaderboard({samples, tests, detectorScores})`` in Python.

    Args:
        samples, tests, detector_scores: the parsed bundle files.
        rules: the recognised constants.
        exclude: humanizer slugs never to rank (the unavailable humanizers).
        word_counts: optional ``{text: js_word_count(text)}`` cache, filled as texts are
            counted and shared between calls (the bootstrap of
            :mod:`veribench.cycles.uncertainty` replays the same texts many times); the
            counts are the same with or without it. ``tests`` may hold a test more than
            once (a bootstrap resample): each occurrence counts, as a separate test would.

    Returns:
        Per-humanizer dicts in rank order, with unrounded values: ``slug``,
        ``composite_raw``, ``composite``, the four sub-scores, ``detector_breakdown``,
        ``category_breakdown``, ``penalties_applied``, ``successful_test_count``,
        ``flagged_test_count``, ``sample_count``, ``confidence``, and
        ``per_test`` (``{test_id: {"bypass": median, "meaning": rescaled}}``).
    """
    category = {s["id"]: s.get("category") for s in samples}
    scores = per_test_bypass(detector_scores)
    complete: dict[str, list[Mapping[str, Any]]] = {}
    flagged: dict[str, list[Mapping[str, Any]]] = {}
    for t in tests:
        if t["humanizer_slug"] in exclude:
            continue
        if t["status"] == "complete":
            complete.setdefault(t["humanizer_slug"], []).append(t)
        elif t["status"] == "flagged":
            flagged.setdefault(t["humanizer_slug"], []).append(t)

    w = rules.weights
    wc: dict[str, int] = {} if word_counts is None else word_counts  # word counts of the texts
    out = []
    for slug, ht in complete.items():
        fl = flagged.get(slug, [])
        medians = [_median(list(scores.get(t["id"], {}).values())) for t in ht]
        bypass = _mean(medians)
        meanings = [rescale_meaning(_v(t.get("meaning_preservation"), 0), rules.meaning_cosine_floor) for t in ht]
        meaning = _mean(meanings)
        read = _mean([_v(t.get("readability"), 0) for t in ht])

        det_slugs: dict[str, None] = {}
        for t in ht:
            for d in scores.get(t["id"], {}):
                det_slugs.setdefault(d)
        det_breakdown = {}
        for d in det_slugs:
            vals = [scores.get(t["id"], {}).get(d) for t in ht]
            det_breakdown[d] = _mean([v for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)])

        cats: dict[str, list[float]] = {}
        for t, m in zip(ht, medians):
            c = category.get(t["sample_id"])
            cats.setdefault("unknown" if c is None else c, []).append(m)
        cat_breakdown = {c: _mean(v) for c, v in cats.items()}
        sd = _stddev(list(cat_breakdown.values()))
        consistency = rules.neutral_consistency if len(cats) < rules.min_categories else max(0.0, 1 - sd)

        raw = (w["bypass_rate"] * bypass + w["meaning_preservation"] * meaning + w["readability"] * read
               + w["consistency_across_categories"] * consistency)

        counts = dict.fromkeys(PENALTY_CODES, 0)
        for t in ht:
            if _v(t.get("meaning_preservation"), 1) < rules.severe_drift_cosine:
                counts["severe_meaning_drift"] += 1
            in_w = wc.get(t["input_text"])
            if in_w is None:
                in_w = wc[t["input_text"]] = js_word_count(t["input_text"])
            out_t = _v(t.get("output_text"), "")
            out_w = wc.get(out_t)
            if out_w is None:
                out_w = wc[out_t] = js_word_count(out_t)
            if in_w > 0 and out_w / in_w > rules.length_inflation_ratio:
                counts["length_inflation"] += 1
            if in_w > 0 and out_w / in_w < rules.length_deflation_ratio:
                counts["length_deflation"] += 1
        for f in fl:
            code = FLAGGED_PENALTY_CODES.get(f.get("failure_reason_code"))
            if code:
                counts[code] += 1
        applied, total = [], 0.0
        for code, n in counts.items():
            rule = rules.penalty_rules.get(code)
            if not n or not rule:
                continue
            delta = -min(n * rule["per"], rule["cap"])
            if delta < 0:
                applied.append({"code": code, "count": n, "score_delta": delta})
                total += delta
        composite = max(0.0, raw + total)

        conf = "low"
        if len(ht) >= rules.high_min_tests and sd < rules.high_max_stddev:
            conf = "high"
        elif len(ht) >= rules.medium_min_tests:
            conf = "medium"
        out.append({
            "slug": slug, "composite_raw": raw, "composite": composite, "bypass_rate": bypass,
            "meaning_preservation": meaning, "readability": read, "consistency_across_categories": consistency,
            "detector_breakdown": det_breakdown, "category_breakdown": cat_breakdown,
            "penalties_applied": applied, "successful_test_count": len(ht), "flagged_test_count": len(fl),
            "sample_count": len(ht) + len(fl), "confidence": conf,
            "per_test": {t["id"]: {"bypass": b, "meaning": m} for t, b, m in zip(ht, medians, meanings)},
        })
    # JS: b.composite - a.composite || (slug order by UTF-16 code units); sort is stable.
    out.sort(key=lambda h: (-h["composite"], utf16_units(h["slug"])))
    return out


def ai_probability_by_detector(detector_scores: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Mean P(AI) per detector from ``raw_score`` rows: ``P(AI) = 1 - raw_score``.

    ``raw_score`` is HumanizerBench's human likelihood (1 = human; methodology,
    "Detectors"), the convention of :attr:`veribench.records.ScoreResult.human_likelihood`.
    """
    by: dict[str, list[float]] = {}
    for s in detector_scores:
        by.setdefault(s["detector_slug"], []).append(1.0 - s["raw_score"])
    return {k: _mean(v) for k, v in by.items()}
