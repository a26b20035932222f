"""The hardened reader under the cycle verifier: what used to pass, or end in a traceback, now fails
with a clear verdict - and nothing in a bundle is ever executed."""

from __future__ import annotations

import json
import os
import resource
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cycles.cycles_helpers import edit_json, rehash


def _fail(cli, cycle: Path, check: str, *needles: str) -> str:
    code, out = cli("verify", cycle)
    assert code == 1, out
    assert out.startswith("[FAIL] ") and f"{check}: " in out, out
    for n in needles:
        assert n in out, out
    assert "Traceback" not in out
    return out


def test_symlink_to_a_file_outside_is_refused(cli, july: Path, tmp_path: Path):
    outside = tmp_path / "outside.json"
    outside.write_bytes((july / "tests.json").read_bytes())
    (july / "tests.json").unlink()
    os.symlink(outside, july / "tests.json")
    _fail(cli, july, "reader", "tests.json: a symbolic link; bundles hold only regular files")


def test_symlink_with_an_unknown_name_is_refused(cli, july: Path, tmp_path: Path):
    os.symlink("/etc/passwd", july / "notes.txt")
    out = _fail(cli, july, "reader", "notes.txt: a symbolic link")
    assert "root:" not in out


def test_fifo_is_refused_without_blocking(cli, july: Path):
    (july / "leaderboard.json").unlink()
    os.mkfifo(july / "leaderboard.json")
    _fail(cli, july, "reader", "leaderboard.json: a FIFO")


def test_deep_nesting_is_a_verdict_not_a_recursion_error(cli, july: Path):
    (july / "leaderboard.json").write_text("[" * 200_000 + "]" * 200_000)
    rehash(july, "leaderboard.json")
    _fail(cli, july, "manifest", "leaderboard.json: JSON nested 200000 levels deep, beyond the cap of 64; not parsed")


def test_deep_nesting_inside_strings_does_not_count(tmp_path: Path):
    from veribench.bundles.reader import json_depth, parse_json

    data = json.dumps({"a": "[" * 1000, "b": [[1]]}).encode()
    assert json_depth(data) == 3 and parse_json(data, "x.json")["b"] == [[1]]
    assert json_depth(b'{"a": "\\"[[[["}') == 1


def test_oversized_file_is_refused_from_its_size(cli, july: Path):
    """A 2 GB tests.json (sparse: it costs no disk) used to be read whole (4.2 GB RSS)."""
    with open(july / "tests.json", "r+b") as f:
        f.truncate(2 * 1024**3)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = _fail(cli, july, "reader", "tests.json: 2147483648 bytes exceeds the size cap of 256 MiB; not read")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 * 1024  # kB
    assert "required file missing" not in out  # one clear verdict for the file


def test_size_cap_is_an_option(cli, july: Path):
    code, out = cli("verify", july, "--max-file-mb", "1")
    assert code == 1 and "tests.json: 2267778 bytes exceeds the size cap of 1 MiB; not read" in out


HIDDEN = [
    '/**/ import("node:fs").then(f => f.writeFileSync("PWNED", "x")); // Pure ESM',
    '/* ok */ globalThis.process?.exit?.(0); // Pure ESM',
]


@pytest.mark.parametrize("payload", HIDDEN)
@pytest.mark.parametrize("name", ["scoring.js", "select-placeholders.js"])
def test_code_behind_a_comment_marker_is_refused_and_not_run(cli, july: Path, tmp_path: Path, monkeypatch, name,
                                                             payload):
    monkeypatch.chdir(tmp_path)
    js = (july / name).read_text()
    assert "// Pure ESM" in js
    (july / name).write_text(js.replace("// Pure ESM", payload, 1))
    rehash(july, name)
    _fail(cli, july, "algorithm", "cannot verify: unknown", "never executed")
    assert not (tmp_path / "PWNED").exists() and not (july / "PWNED").exists()


# -- published values at published precision -------------------------------------------------------

def _published_fields(lb: dict, replay: list[dict]):
    """(path, published, replayed, decimals) for every rounded number of every ranked humanizer."""
    from veribench.cycles.scoring import SUB_SCORES

    rep = {h["slug"]: h for h in replay}
    for h in lb["humanizers"]:
        r = rep[h["slug"]]
        yield f"{h['slug']}.composite", h["scores"]["composite"], r["composite"], 2
        for k in SUB_SCORES:
            yield f"{h['slug']}.{k}", h["scores"][k], r[k], 4
        for bd in ("detector_breakdown", "category_breakdown"):
            for k, v in h[bd].items():
                yield f"{h['slug']}.{bd}.{k}", v, r[bd][k], 4
        rp = {p["code"]: p for p in r["penalties_applied"]}
        for p in h["penalties_applied"]:
            yield f"{h['slug']}.penalty.{p['code']}", p["score_delta"], rp[p["code"]]["score_delta"], 2


@pytest.mark.parametrize("cycle", ["June 2026", "July 2026"])
def test_every_plus_one_in_the_last_printed_digit_fails(hb_dir: Path, cycle: str):
    """Exhaustive over both shared cycles: every published value matches at its precision, and a
    +1 (or -1) in its last printed digit never does (with the old 1e-4 tolerance most passed,
    and accepting a second rounding idiom let a -1 pass at ties)."""
    from veribench.bundles.reader import published_rounding_matches
    from veribench.cycles.scoring import compute_leaderboard, recognise_scoring

    d = hb_dir / cycle
    lb = json.loads((d / "leaderboard.json").read_bytes())
    replay = compute_leaderboard(json.loads((d / "samples.json").read_bytes()), json.loads((d / "tests.json").read_bytes()),
                                 json.loads((d / "detector-scores.json").read_bytes()),
                                 recognise_scoring((d / "scoring.js").read_bytes()),
                                 exclude={u["slug"] for u in lb.get("unavailable_humanizers") or []})
    n = 0
    for path, pub, rep, dec in _published_fields(lb, replay):
        assert published_rounding_matches(pub, rep, dec), path
        for step in (1, -1):
            bumped = round(pub + step * 10 ** -dec, dec)
            assert not published_rounding_matches(bumped, rep, dec), (path, pub, bumped)
        n += 1
    assert n > 200


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_plus_one_in_a_published_digit_fails_end_to_end(cli, hb_dir, tmp_path_factory, data):
    import shutil

    from tests.cycles.conftest import copy_cycle

    july = copy_cycle(hb_dir / "July 2026", tmp_path_factory.mktemp("c") / "July 2026")
    lb = json.loads((july / "leaderboard.json").read_bytes())
    i = data.draw(st.integers(0, len(lb["humanizers"]) - 1))
    key = data.draw(st.sampled_from(["bypass_rate", "meaning_preservation", "readability", "composite"]))
    dec = 2 if key == "composite" else 4
    slug = lb["humanizers"][i]["slug"]
    edit_json(july, "leaderboard.json", lambda x: x["humanizers"][i]["scores"].__setitem__(
        key, round(x["humanizers"][i]["scores"][key] + 10 ** -dec, dec)))
    code, out = cli("verify", july)
    assert code == 1 and f"humanizers[{slug}].scores.{key}" in out, out
    shutil.rmtree(july.parent)


# -- bundle text normalisation follows the reference implementation (JavaScript trim) -------------------

@settings(max_examples=40, deadline=None)
@given(st.text(alphabet=st.sampled_from("\t\n\v\f\r \u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"),
               max_size=4),
       st.text(alphabet=st.sampled_from("\t\n\v\f\r \u00a0\u2028\u3000\ufeff"), max_size=4))
def test_nonce_is_trimmed_with_javascripts_whitespace_set(hb_dir, tmp_path_factory, lead, trail):
    """Any ECMAScript WhiteSpace/LineTerminator around the nonce is trimmed (String.prototype.trim)."""
    from tests.cycles.conftest import copy_cycle
    from veribench.cycles.verify import verify_cycle

    july = copy_cycle(hb_dir / "July 2026", tmp_path_factory.mktemp("n") / "July 2026")
    nonce = (july / "nonce.txt").read_text().strip()
    (july / "nonce.txt").write_text(lead + nonce + trail, encoding="utf-8")
    rehash(july, "nonce.txt")
    r = verify_cycle(july)
    assert r.ok, r.lines()


@pytest.mark.parametrize("ch", ["\u0085", "\u001c", "\u001f", "\u200b"])
def test_python_only_whitespace_is_not_trimmed(july: Path, ch: str):
    """U+0085, U+001C..U+001F are whitespace to Python's str.strip but not to JavaScript's trim
    (U+200B is neither): the reference implementation hashes them, so the commit check fails."""
    from veribench.cycles.verify import verify_cycle

    nonce = (july / "nonce.txt").read_text().strip()
    (july / "nonce.txt").write_text(nonce + ch + "\n", encoding="utf-8")
    rehash(july, "nonce.txt")
    r = verify_cycle(july)
    assert not r.ok and r.failures[0].check == "commit", r.lines()


@pytest.mark.parametrize("name", ["commit.json", "leaderboard.json", "prompts.json"])
def test_a_file_holding_json_null_fails_even_outside_the_manifest(cli, july: Path, name: str):
    """commit.json is not listed in the manifest: as JSON null it used to be read as "absent"
    and the cycle passed [ok]. Null is a failure for every file, and a missing commitment too."""
    (july / name).write_text("null", encoding="utf-8")
    _fail(cli, july, "manifest", name)


def test_a_cycle_without_its_commitment_fails(cli, july: Path):
    (july / "commit.json").unlink()
    out = _fail(cli, july, "manifest")
    assert "commit.json" in out
