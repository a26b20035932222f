"""``verify FOLDER`` fails when the folder is itself a damaged bundle or holds a packed one
(issue 24, hostile tester's third round): a bundle's files at the top without
``manifest.json``, a stray ``results.json`` or ``scores.csv``, or an archive, beside a good
sub-bundle, used to leave only the good bundle reported and exit 0."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from veribench.bundles import layout


@pytest.fixture()
def site(site) -> Path:
    """The shared site (``tests/bundles/conftest.py``) with a README and the good bundle as ``good``."""
    (site / "run-q4").rename(site / "good")
    (site / "README.md").write_text("# our bundles\n", encoding="utf-8")
    return site


def _top_bundle_without_manifest(root: Path) -> None:
    for p in (root / "good").iterdir():
        if p.is_file() and p.name != layout.MANIFEST:
            shutil.copyfile(p, root / p.name)


def _tar(root: Path) -> None:
    with tarfile.open(root / "evil-bundle.tar", "w") as t:
        t.add(root / "good", arcname="evil")


_CASES = {
    "bundle-without-manifest-at-top": (_top_bundle_without_manifest, "site", "looks like a bundle without manifest"),
    "stray-results-json": (lambda r: shutil.copyfile(r / "good" / layout.RESULTS, r / layout.RESULTS), "site",
                           "looks like a bundle without manifest.json (holds results.json"),
    "stray-scores-csv": (lambda r: shutil.copyfile(r / "good" / layout.SCORES_CSV, r / layout.SCORES_CSV), "site",
                         "looks like a bundle without manifest.json (holds scores.csv"),
    "stray-tables-md": (lambda r: shutil.copyfile(r / "good" / "tables.md", r / "tables.md"), "site",
                        "looks like a bundle without manifest.json (holds tables.md"),
    "tar-of-a-bundle": (_tar, "evil-bundle.tar", "an archive is not verified: unpack it and verify the folder"),
    "zip-upper-case": (lambda r: (r / "RUN.ZIP").write_bytes(b"PK\x05\x06" + b"\0" * 18), "RUN.ZIP",
                       "an archive is not verified"),
    "tgz": (lambda r: (r / "run.tgz").write_bytes(b"\x1f\x8b"), "run.tgz", "an archive is not verified"),
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_a_damaged_or_packed_bundle_beside_a_good_one_fails(site, cli_run, case):
    make, name, why = _CASES[case]
    make(site)
    code, out = cli_run("verify", site)
    assert code == 1, out
    assert f"[FAIL] {name}: reader: {name}: {why}" in out, out
    assert sum(x.startswith("[ok] LIANG-BUNDLE-2 (run ") for x in out.splitlines()) == 1, out
    code, js = cli_run("verify", site, "--format", "json")
    v = json.loads(js)
    assert code == 1 and v["ok"] is False
    assert [(Path(r["path"]).name, r["kind"]) for r in v["refused"]] == [(name, "unrecognised")]


def test_a_licence_readme_and_notes_stay_ignored(site, cli_run):
    (site / "NOTES.txt").write_text("published 2026\n", encoding="utf-8")
    code, out = cli_run("verify", site)
    assert code == 0 and "[FAIL]" not in out, out


# -- hostile tester's fourth round: a bundle's files from any depth, copied loose to the top --

def _loose(rel: str, name: str | None = None):
    def make(root: Path) -> None:
        shutil.copyfile(root / "good" / rel, root / (name or Path(rel).name))
    return make


_DEEP = {
    "commitment-record": ("commitments/v1.json", None),
    "timestamp-token": ("commitments/v1.tsr", None),
    "carried-roots": ("commitments/v1.roots.pem", None),
    "protocol-version": ("protocol/v1.toml", None),
    "event-log": (layout.EVENTS, None),
    "leaves": (layout.LEAVES, None),
    "any-token-name": ("commitments/v2.tsr", "x.tsr"),
}


@pytest.mark.parametrize("case", sorted(_DEEP))
def test_a_bundle_file_from_any_depth_loose_at_the_top_fails(site, cli_run, case):
    rel, name = _DEEP[case]
    _loose(rel, name)(site)
    shown = name or Path(rel).name
    code, out = cli_run("verify", site)
    assert code == 1, out
    assert f"[FAIL] {site.name}: reader: {site.name}: looks like a bundle without manifest.json (holds {shown}" \
        in out, out
    assert sum(x.startswith("[ok] LIANG-BUNDLE-2 (run ") for x in out.splitlines()) == 1, out


@pytest.mark.parametrize("name", [".DS_Store", "._results.json", "LICENSE.md"])
def test_hidden_os_litter_and_plain_files_stay_ignored(site, cli_run, name):
    """OS litter (a leading dot) and plain files are not candidates; a bundle's README.md
    copied to the top cannot be told from the folder's own README (docs/bundles.md)."""
    (site / name).write_bytes(b"\0\0\0\1Bud1")
    shutil.copyfile(site / "good" / layout.README, site / layout.README)
    code, out = cli_run("verify", site)
    assert code == 0 and "[FAIL]" not in out, out


# -- hostile tester's fifth round: a bundle file's name in another letter case passed -------------

_CASED = {
    "Results.JSON": "results.json",
    "SCORES.CSV": "scores.csv",
    "v1.TSR": "commitments/v1.tsr",
    "v1.roots.PEM": "commitments/v1.roots.pem",
}


@pytest.mark.parametrize("name", sorted(_CASED))
def test_a_bundle_file_name_in_another_letter_case_at_the_top_fails(site, cli_run, name):
    shutil.copyfile(site / "good" / _CASED[name], site / name)
    code, out = cli_run("verify", site)
    assert code == 1, out
    assert f"[FAIL] {site.name}: reader: {site.name}: looks like a bundle without manifest.json (holds {name}" \
        in out, out
