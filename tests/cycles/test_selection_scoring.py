"""JavaScript semantics, the selection algorithm and the scoring replay, against independent references."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from veribench.bundles.jscompat import (
    dumps_js,
    js_math_round,
    js_number_to_string,
    js_to_fixed,
    js_word_count,
    utf16_units,
)
from veribench.bundles.reader import published_rounding_matches
from veribench.cycles.scoring import (
    ScoringRules,
    ai_probability_by_detector,
    compute_leaderboard,
    recognise_scoring,
    render_scoring_js,
)
from veribench.cycles.selection import (
    UnknownAlgorithm,
    djb2,
    extract_placeholders,
    recognise_selection,
    resolve_prompts,
    substitute_placeholders,
)

CYCLES = ["June 2026", "July 2026"]


def _djb2_reference(s: str) -> int:
    """Independent reference: ECMAScript ToInt32 spelt out, over UTF-16 code units from surrogate arithmetic."""
    units = []
    for ch in s:
        cp = ord(ch)
        if cp > 0xFFFF:
            cp -= 0x10000
            units += [0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)]
        else:
            units.append(cp)
    h = 5381
    for u in units:
        x = h * 33  # exact in a double: |h| < 2**31
        x = int(x) % 2**32
        if x >= 2**31:
            x -= 2**32  # ToInt32
        h = x ^ u
        if h >= 2**31:
            h -= 2**32
    return h % 2**32  # h >>> 0


def test_utf16_units_emoji():
    assert utf16_units("a😀") == [0x61, 0xD83D, 0xDE00]
    # charCodeAt walks surrogates: the emoji contributes two steps of the hash
    assert djb2("😀") == (((5381 * 33) ^ 0xD83D) * 33 ^ 0xDE00) % 2**32
    assert djb2("😀") != ((5381 * 33) ^ 0x1F600) % 2**32


@given(st.text(max_size=40))
def test_djb2_matches_reference(s: str):
    assert djb2(s) == _djb2_reference(s)
    assert 0 <= djb2(s) < 2**32


def test_djb2_long_string_wraps():
    assert djb2("") == 5381
    assert djb2("x" * 1000) == _djb2_reference("x" * 1000)


def test_placeholders_and_substitution():
    assert extract_placeholders("[A] and [B_C] and [A] and [a] and [1X]") == ["A", "B_C"]
    text, missing = substitute_placeholders("x [A] y [B] z [C]", {"A": "$1 & \\1", "B": ""})
    assert text == "x $1 & \\1 y [B] z [C]" and missing == ["B", "C"]


@pytest.mark.parametrize("cycle", CYCLES)
def test_selection_reproduces_published_prompts(hb_dir: Path, cycle: str):
    d = hb_dir / cycle
    nonce = (d / "nonce.txt").read_text().strip()
    derived = resolve_prompts(nonce, json.loads((d / "templates.json").read_bytes()),
                              json.loads((d / "banks.json").read_bytes()))
    published = json.loads((d / "prompts.json").read_bytes())
    assert derived == published
    assert dumps_js(derived).encode() == (d / "prompts.json").read_bytes()  # byte for byte
    assert recognise_selection((d / "select-placeholders.js").read_bytes()).recognised_by == "exact text"


@pytest.mark.parametrize("edit", [
    lambda s: "// a new comment line\n" + s,  # harmless to Node, but any byte may be code: refused
    lambda s: s.replace("// Pure ESM", '/**/ import("node:fs").then(f => f.rmSync("x")); // Pure ESM'),
    lambda s: s.replace("function djb2(s) {", "function djb2(s) { /**/ globalThis.x = 1;"),
    lambda s: s.replace("\n", "\r\n"),
    lambda s: s.replace("% bank.length", "% (bank.length - 1)"),
    lambda s: s + " ",
])
def test_selection_recognised_only_byte_for_byte(hb_dir: Path, edit):
    js = (hb_dir / "July 2026" / "select-placeholders.js").read_text()
    with pytest.raises(UnknownAlgorithm, match="unknown selection algorithm"):
        recognise_selection(edit(js).encode())


@pytest.mark.parametrize("x,js", [(1.0, "1"), (0.5, "0.5"), (1e-7, "1e-7"), (1.5e-7, "1.5e-7"), (0.000001, "0.000001"),
                                  (1e21, "1e+21"), (123e18, "123000000000000000000"), (-0.0, "0"), (2**60, "1152921504606847000"),
                                  (0.1 + 0.2, "0.30000000000000004"), (-2.5e-8, "-2.5e-8"), (12, "12")])
def test_number_to_string(x, js):
    assert js_number_to_string(x) == js


@pytest.mark.parametrize("cycle", CYCLES)
def test_dumps_js_reproduces_every_published_file(hb_dir: Path, cycle: str):
    for f in ["templates.json", "banks.json", "samples.json", "tests.json", "leaderboard.json",
              "detector-scores.json", "cycle.json", "commit.json"]:
        raw = (hb_dir / cycle / f).read_bytes()
        assert dumps_js(json.loads(raw)).encode() == raw, f


def test_word_count_is_javascript_whitespace():
    assert js_word_count("  a  b\u00a0c\ufeffd\n") == 4  # NBSP and BOM split in JS
    assert js_word_count("a\x85b\x1cc") == 1  # Python's str.split() would give 3
    assert js_word_count("   ") == 0


@given(st.text(alphabet=st.sampled_from(list("ab \t\n\x1c\x1f\x85\xa0\u2028\u3000\ufeff")), max_size=30))
def test_word_count_fast_path_agrees(s: str):
    import re

    from veribench.bundles.jscompat import JS_WHITESPACE, js_trim
    ref = [w for w in re.split("[" + re.escape(JS_WHITESPACE) + "]+", js_trim(s)) if w]
    assert js_word_count(s) == len(ref)


def test_rounding_idioms():
    assert js_math_round(0.125, 2) == 0.13 and round(0.125, 2) == 0.12  # half up, not banker's
    assert js_math_round(-0.125, 2) == -0.12  # Math.round: half toward +infinity
    assert js_to_fixed(1.005, 2) == 1.0  # 1.005 is 1.00499999... in binary
    assert published_rounding_matches(73.07, 73.0749, 2)
    assert not published_rounding_matches(73.08, 73.0649, 2)
    assert not published_rounding_matches(None, 1.0, 2)
    assert published_rounding_matches(0.4321, 0.43214, 4)
    assert not published_rounding_matches(0.4322, 0.43214, 4)  # +1 in the last printed digit
    assert not published_rounding_matches(0.4320, 0.43214, 4)


@pytest.mark.parametrize("cycle,cap", [("June 2026", 8), ("July 2026", 10)])
def test_recognise_scoring_constants(hb_dir: Path, cycle: str, cap: int):
    r = recognise_scoring((hb_dir / cycle / "scoring.js").read_bytes())
    assert r.weights == {"bypass_rate": 42, "meaning_preservation": 32, "readability": 16,
                         "consistency_across_categories": 10}
    assert r.penalty_rules["severe_meaning_drift"]["cap"] == cap
    assert r.penalty_rules["identical_to_input"] == {"per": 2, "cap": 10}
    assert (r.length_inflation_ratio, r.length_deflation_ratio, r.meaning_cosine_floor) == (1.4, 0.6, 0.75)
    assert (r.severe_drift_cosine, r.min_categories, r.neutral_consistency) == (0.85, 3, 0.5)
    assert (r.high_min_tests, r.high_max_stddev, r.medium_min_tests) == (60, 0.1, 30)
    assert "known file" in r.source


def test_render_and_recognise_round_trip():
    rules = ScoringRules().replace(meaning_cosine_floor=0.73, severe_drift_cosine=0.84,
                                   penalty_rules={"identical_to_input": {"per": 3, "cap": 9}})
    back = recognise_scoring(render_scoring_js(rules).encode())
    assert back.meaning_cosine_floor == 0.73 and back.severe_drift_cosine == 0.84
    assert back.penalty_rules == {"identical_to_input": {"per": 3, "cap": 9}}
    assert back.source.startswith("recognised as veribench")


@pytest.mark.parametrize("edit", [
    lambda s: s.replace("Math.sqrt(s / (xs.length - 1))", "Math.sqrt(s / xs.length)"),
    lambda s: s.replace('const WEIGHTS = {"bypass_rate":42', 'const WEIGHTS = {"bypass_rate":fetch("x")'),
    lambda s: s + "\nimport('child_process').then(c => c.execSync('true'));\n",
    lambda s: s.replace('{"bypass_rate":42,', '{"bypass_rate":42,"bonus":5,'),
    # code hidden behind a comment marker on a comment line: Node runs it
    lambda s: s.replace("// Pure ESM", '/**/ import("node:fs").then(f => f.rmSync("x")); // Pure ESM'),
    lambda s: s.replace("function mean(xs) {", "function mean(xs) { /* */ globalThis.x = 1;"),
    lambda s: s.replace("const MEANING_COSINE_FLOOR = 0.75;", "const MEANING_COSINE_FLOOR = 0.75 /**/;"),
    lambda s: s.replace('"cap":10}', '"cap":(1)}', 1),
    lambda s: s.replace("\n", "\r\n"),
    lambda s: "// extra comment\n" + s,
])
def test_unknown_scoring_algorithm(hb_dir: Path, edit):
    js = (hb_dir / "July 2026" / "scoring.js").read_text()
    with pytest.raises(UnknownAlgorithm, match="cannot verify: unknown scoring algorithm"):
        recognise_scoring(edit(js).encode())


@pytest.mark.parametrize("cycle", CYCLES)
def test_bypass_rate_by_hand(hb_dir: Path, cycle: str):
    """The methodology's by-hand recipe (statistics.median / fmean), independent of the replay code."""
    d = hb_dir / cycle
    tests = json.loads((d / "tests.json").read_bytes())
    dets = json.loads((d / "detector-scores.json").read_bytes())
    lb = json.loads((d / "leaderboard.json").read_bytes())
    for h in lb["humanizers"]:
        th = [t for t in tests if t["humanizer_slug"] == h["slug"] and t["status"] == "complete"]
        meds = [statistics.median([s["raw_score"] for s in dets if s["test_id"] == t["id"]]) for t in th]
        assert abs(round(statistics.fmean(meds), 4) - h["scores"]["bypass_rate"]) <= 1e-4
    samples = json.loads((d / "samples.json").read_bytes())
    rep = compute_leaderboard(samples, tests, dets, recognise_scoring((d / "scoring.js").read_bytes()))
    assert [h["slug"] for h in rep] == [h["slug"] for h in lb["humanizers"]]


def test_c22_raw_score_is_human_likelihood(cases_dir: Path):
    """Case c22: raw_score is a human likelihood, P(AI) = 1 - raw. det-a -> 0.25, det-b -> 0.55."""
    rows = json.loads((cases_dir / "c22" / "detector-scores.json").read_bytes())
    p = ai_probability_by_detector(rows)
    assert p["det-a"] == pytest.approx(0.25, abs=1e-12)
    assert p["det-b"] == pytest.approx(0.55, abs=1e-12)
    # and the replay's detector breakdown (mean human likelihood) is the complement
    samples = [{"id": "s", "category": "c"}]
    tests = [{"id": f"u{i}", "sample_id": "s", "humanizer_slug": "h", "status": "complete", "input_text": "a b",
              "output_text": "a b", "meaning_preservation": 1, "readability": 1} for i in range(1, 5)]
    h = compute_leaderboard(samples, tests, rows, ScoringRules())[0]
    assert 1 - h["detector_breakdown"]["det-a"] == pytest.approx(0.25)
    assert 1 - h["detector_breakdown"]["det-b"] == pytest.approx(0.55)
