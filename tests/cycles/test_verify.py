"""``veribench verify`` on the real HumanizerBench bundles, and the tamper suite (one case per class)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cycles.cycles_helpers import edit_json, rehash


def test_shared_bundles_verify_ok(cli, hb_dir: Path, tmp_path: Path):
    code, out = cli("verify", hb_dir, "--json", tmp_path / "r.json")
    assert code == 0, out
    assert "[ok] June 2026: 10 prompts verified, 13 humanizers replayed" in out
    assert "[ok] July 2026: 11 prompts verified, 13 humanizers replayed" in out
    # the gaps HumanizerBench's methodology allows are warnings on the [ok] line
    assert "6 detectors declared but 5 have scores" in out
    assert "lacks scores from copyleaks, winston" in out  # July: one test scored by 3 of 5
    assert "'bypassgpt'" in out  # June: unavailable humanizer's attempts not published
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["ok"] is True and [c["cycle"] for c in rep["cycles"]] == ["July 2026", "June 2026"]
    caps = {c["cycle"]: c["algorithms"]["scoring"]["penalty_rules"]["severe_meaning_drift"]["cap"]
            for c in rep["cycles"]}
    assert caps == {"June 2026": 8, "July 2026": 10}


def test_one_cycle_folder_and_strict(cli, hb_dir: Path):
    code, out = cli("verify", hb_dir / "July 2026")
    assert code == 0 and out.startswith("[ok] July 2026")
    code, out = cli("verify", "--strict", hb_dir / "July 2026")
    assert code == 1
    assert out.startswith("[FAIL] July 2026: completeness:")


def test_usage_errors_exit_2(cli, tmp_path: Path):
    code, out = cli("verify", tmp_path / "nope")  # refused input (a path that is not there): exit 1, docs/cli.md
    assert code == 1 and "nope: no such file or folder" in out
    (tmp_path / "empty").mkdir()
    code, out = cli("verify", tmp_path / "empty")
    assert code == 1 and "holds no cycle" in out
    assert cli("verify")[0] == 2  # usage: no path at all


def _fail(cli, cycle: Path, check: str, *needles: str) -> str:
    code, out = cli("verify", cycle)
    assert code == 1, out
    assert out.startswith("[FAIL] ")
    assert f"{check}: " in out, out
    for n in needles:
        assert n in out, out
    return out


# -- the tamper classes of the issue -----------------------------------------------------------

def test_tamper_nonce_changed(cli, july: Path):
    raw = (july / "nonce.txt").read_bytes()
    (july / "nonce.txt").write_bytes(raw[:10] + (b"0" if raw[10:11] != b"0" else b"1") + raw[11:])
    rehash(july, "nonce.txt")
    out = _fail(cli, july, "commit", "sha256(nonce) differs from the committed hash")
    # the changed nonce also re-derives different placeholders somewhere
    assert "manifest:" not in out


def test_tamper_nonce_changed_without_manifest(cli, july: Path):
    (july / "nonce.txt").write_bytes(b"f" * 64 + b"\n")
    out = _fail(cli, july, "commit")
    assert "manifest: nonce.txt: SHA-256 of raw bytes differs" in out


def test_tamper_resolved_prompt_edited(cli, july: Path):
    edit_json(july, "prompts.json", lambda p: p[2].__setitem__("resolved", p[2]["resolved"] + " "))
    _fail(cli, july, "prompts", "prompts.json, [2].resolved", "resolved text differs")


def test_tamper_selected_bank_value_edited(cli, july: Path):
    prompts = json.loads((july / "prompts.json").read_bytes())
    topic = prompts[0]["placeholders"]["TOPIC"]

    def edit(b):
        b["TOPIC"][b["TOPIC"].index(topic)] = topic + " (edited)"
    edit_json(july, "banks.json", edit)
    _fail(cli, july, "selection", "prompts.json, [0].placeholders.TOPIC", "(edited)")


def test_tamper_meaning_value_edited(cli, july: Path):
    tests = json.loads((july / "tests.json").read_bytes())
    slug = tests[0]["humanizer_slug"]
    edit_json(july, "tests.json", lambda t: t[0].__setitem__("meaning_preservation",
                                                             t[0]["meaning_preservation"] - 0.2))
    _fail(cli, july, "replay", f"humanizers[{slug}].scores.meaning_preservation")


def test_tamper_composite_plus_001(cli, july: Path):
    def edit(lb):
        lb["humanizers"][4]["scores"]["composite"] = round(lb["humanizers"][4]["scores"]["composite"] + 0.01, 2)
    edit_json(july, "leaderboard.json", edit)
    slug = json.loads((july / "leaderboard.json").read_bytes())["humanizers"][4]["slug"]
    _fail(cli, july, "replay", f"humanizers[{slug}].scores.composite")


@pytest.mark.parametrize("name", ["evil.json", "../tests.json", "sub/tests.json"])
def test_tamper_manifest_entry(cli, july: Path, name: str):
    edit_json(july, "cycle.json", lambda c: c["files"].__setitem__(name, "0" * 64), update_manifest=False)
    _fail(cli, july, "manifest", repr(name))


def test_tamper_detector_score_without_manifest_update(cli, july: Path):
    edit_json(july, "detector-scores.json", lambda d: d[0].__setitem__("raw_score", 0.5), update_manifest=False)
    _fail(cli, july, "manifest", "detector-scores.json: SHA-256 of raw bytes differs")


@pytest.mark.parametrize("name", ["tests.json", "nonce.txt", "scoring.js", "commit.json"])
def test_tamper_required_file_missing(cli, july: Path, name: str):
    (july / name).unlink()
    _fail(cli, july, "manifest", f"{name}: required file missing")


def test_tamper_file_truncated(cli, july: Path):
    raw = (july / "leaderboard.json").read_bytes()
    (july / "leaderboard.json").write_bytes(raw[: len(raw) // 2])
    out = _fail(cli, july, "manifest", "leaderboard.json: unparsable JSON")
    assert "SHA-256 of raw bytes differs" in out
    rehash(july, "leaderboard.json")  # even with the manifest updated, it fails cleanly
    _fail(cli, july, "manifest", "unparsable JSON")


def test_tamper_humanizer_moved_to_unavailable(cli, july: Path):
    def edit(lb):
        h = lb["humanizers"].pop(3)
        for i, x in enumerate(lb["humanizers"]):
            x["rank"] = i + 1
        lb["unavailable_humanizers"].append({"slug": h["slug"], "reason": "unavailable", "attempted_test_count": 33,
                                             "successful_test_count": 0, "unavailable_test_count": 33})
    edit_json(july, "leaderboard.json", edit)
    _fail(cli, july, "replay", "is listed unavailable but only 0 of its 33 attempts are access failures")


# -- further classes: both directions, algorithms, provenance, completeness -------------------

def test_unknown_scoring_algorithm_is_not_executed(cli, july: Path):
    js = (july / "scoring.js").read_text()
    (july / "scoring.js").write_text(js.replace("return n % 2 === 1 ? sorted[mid]", "return n % 2 === 0 ? sorted[mid]"))
    rehash(july, "scoring.js")
    _fail(cli, july, "algorithm", "cannot verify: unknown scoring algorithm")


def test_unknown_selection_algorithm(cli, june: Path):
    js = (june / "select-placeholders.js").read_text()
    (june / "select-placeholders.js").write_text(js.replace("h * 33", "h * 31"))
    rehash(june, "select-placeholders.js")
    _fail(cli, june, "algorithm", "cannot verify: unknown selection algorithm")


def test_changed_constant_is_read_and_replayed(cli, june: Path):
    """A recognised structure with another cap is parsed, not rejected: the replay then differs."""
    js = (june / "scoring.js").read_text()
    (june / "scoring.js").write_text(js.replace('"severe_meaning_drift":{"per":1,"cap":8}',
                                                '"severe_meaning_drift":{"per":1,"cap":1}'))
    rehash(june, "scoring.js")
    _fail(cli, june, "replay", "penalties_applied.severe_meaning_drift")


@pytest.mark.parametrize("where", ["detector_breakdown", "category_breakdown"])
def test_breakdown_compared_both_ways(cli, july: Path, where: str):
    edit_json(july, "leaderboard.json", lambda lb: lb["humanizers"][0][where].popitem())
    _fail(cli, july, "replay", "replayed key absent from the published breakdown")
    edit_json(july, "leaderboard.json", lambda lb: lb["humanizers"][0][where].__setitem__("extra", 0.5))
    _fail(cli, july, "replay", "published key absent from the replay")


def test_penalty_removed_and_added(cli, july: Path):
    lb = json.loads((july / "leaderboard.json").read_bytes())
    k = next(i for i, h in enumerate(lb["humanizers"]) if h["penalties_applied"])
    edit_json(july, "leaderboard.json", lambda lb: lb["humanizers"][k]["penalties_applied"].pop())
    _fail(cli, july, "replay", "penalty present on one side only")


def test_extra_ranked_humanizer(cli, july: Path):
    def edit(lb):
        lb["humanizers"].append(dict(lb["humanizers"][-1], slug="ghost", rank=len(lb["humanizers"]) + 1))
    edit_json(july, "leaderboard.json", edit)
    _fail(cli, july, "replay", "ranked humanizer has no complete test")


def test_rank_swapped(cli, july: Path):
    def edit(lb):
        h = lb["humanizers"]
        h[0], h[1] = h[1], h[0]
        h[0]["rank"], h[1]["rank"] = 1, 2
    edit_json(july, "leaderboard.json", edit)
    _fail(cli, july, "replay", "rank order differs")


def test_provenance_input_not_verbatim(cli, july: Path):
    edit_json(july, "tests.json", lambda t: t[5].__setitem__("input_text", t[5]["input_text"].replace(" ", "  ", 1)))
    _fail(cli, july, "provenance", "not fed the published sample verbatim")


def test_provenance_sample_from_uncommitted_prompt(cli, july: Path):
    edit_json(july, "samples.json", lambda s: s[0].__setitem__("prompt_slug", "secret_prompt"))
    _fail(cli, july, "provenance", "sample comes from no committed prompt")


def test_completeness_duplicate_test_id(cli, july: Path):
    edit_json(july, "tests.json", lambda t: t[1].__setitem__("id", t[0]["id"]))
    _fail(cli, july, "completeness", "test id used 2 times")


def test_cycle_name_inconsistent(cli, july: Path):
    edit_json(july, "leaderboard.json", lambda lb: lb.__setitem__("cycle", "August 2026"))
    _fail(cli, july, "commit", "cycle name differs from commit.json")


def test_invalid_raw_score_is_a_clean_failure(cli, july: Path):
    edit_json(july, "detector-scores.json", lambda d: d[3].__setitem__("raw_score", "0.5"))
    _fail(cli, july, "manifest", "detector-scores.json, [3].raw_score")


def test_duplicate_json_key_rejected(cli, july: Path):
    raw = (july / "commit.json").read_bytes()
    (july / "commit.json").write_bytes(raw.replace(b'  "cycle": "July 2026",', b'  "cycle": "July 2026",\n  "cycle": "X",'))
    _fail(cli, july, "manifest", "duplicate key 'cycle'")


def test_unlisted_extra_file_is_a_warning(cli, july: Path):
    (july / "notes.txt").write_text("hello")
    code, out = cli("verify", july)
    assert code == 0 and "notes.txt" in out
    assert cli("verify", "--strict", july)[0] == 1


def test_verify_json_report_names_failures(cli, july: Path, tmp_path: Path):
    edit_json(july, "tests.json", lambda t: t[0].__setitem__("readability", 0.0))
    code, _ = cli("verify", july, "--json", tmp_path / "rep.json")
    rep = json.loads((tmp_path / "rep.json").read_text())
    assert code == 1 and rep["ok"] is False
    f = next(f for f in rep["cycles"][0]["failures"] if f["field"].endswith("scores.readability"))
    assert f["check"] == "replay" and f["file"] == "leaderboard.json"
    assert isinstance(f["expected"], float) and isinstance(f["got"], float)


def test_rank_change_checked_against_previous_cycle(cli, july: Path, june: Path):
    assert cli("verify", july.parent)[0] == 0  # June -> July rank changes hold (e.g. writehuman 2 -> 1: +1)
    edit_json(july, "leaderboard.json", lambda lb: lb["humanizers"][0].__setitem__("rank_change", 2))
    assert cli("verify", july)[0] == 0  # alone, July has no previous cycle to compare with
    _fail(cli, july.parent, "replay", "humanizers[writehuman].rank_change", "June 2026")
