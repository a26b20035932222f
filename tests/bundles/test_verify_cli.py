"""``veribench verify FOLDER`` reports every candidate with its verdict (issue 24, item 3).

A candidate is a sub-folder holding a bundle's file (``manifest.json``, ``cycle.json``, ...),
or any link or unreadable entry; plain files (a licence) are not candidates. One failing or
refused candidate makes the exit code 1, whatever else passes. Real bundles: the Liang
detector run built by ``tests/bundles/conftest.py`` and the shared HumanizerBench cycles.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest


def _verdict(cli_run, *args) -> tuple[int, dict]:
    code, out = cli_run("verify", *args, "--format", "json")
    return code, json.loads(out)


def test_damaged_and_symlinked_bundles_beside_a_good_one(site, cli_run, tmp_path):
    """The case as reported: a good bundle, a damaged one and a symlinked one: exit 1, each listed."""
    shutil.copytree(site / "run-q4", site / "run-damaged")
    (site / "run-damaged/manifest.json").write_text("{not json", encoding="utf-8")
    (site / "run-linked").symlink_to(site / "run-q4", target_is_directory=True)
    code, out = cli_run("verify", site, "--json", tmp_path / "v.json")
    assert code == 1, out
    heads = [x for x in out.splitlines() if not x.startswith(" ")]  # one verdict line per candidate
    assert len(heads) == 3, out
    assert sum(x.startswith("[ok] LIANG-BUNDLE-2 (run ") for x in heads) == 1, out
    assert sum(x.startswith("[FAIL] run-damaged: manifest: ") for x in heads) == 1, out
    assert "[FAIL] run-linked: reader: run-linked: a symbolic link: not followed, not verified" in out
    assert "LICENSE" not in out  # a plain file is not a candidate
    v = json.loads((tmp_path / "v.json").read_text())
    assert v["ok"] is False
    assert sorted((Path(r["path"]).name, r["ok"]) for r in v["detector_runs"]) == [("run-damaged", False),
                                                                                  ("run-q4", True)]
    assert [(r["kind"], Path(r["path"]).name, r["ok"]) for r in v["refused"]] == [("link", "run-linked", False)]
    assert v["refused"][0]["failures"][0]["check"] == "reader"


@pytest.mark.parametrize("make,name,kind,why", [
    (lambda s: os.symlink(s / "LICENSE", s / "notes.txt"), "notes.txt", "link", "a symbolic link"),
    (lambda s: os.symlink(s / "gone", s / "dangling"), "dangling", "link", "a symbolic link"),
    (lambda s: os.mkfifo(s / "pipe"), "pipe", "unreadable", "a FIFO, neither a file nor a folder"),
])
def test_links_and_special_entries_are_refused_candidates(site, cli_run, make, name, kind, why):
    """A link to a plain file, a dangling link, a FIFO: never followed or opened; each fails."""
    make(site)
    code, v = _verdict(cli_run, site)
    assert code == 1 and v["ok"] is False
    assert [r["ok"] for r in v["detector_runs"]] == [True]
    (r,) = v["refused"]
    assert (r["kind"], Path(r["path"]).name) == (kind, name) and why in r["failures"][0]["message"]


def test_a_bundle_without_its_manifest_is_still_a_candidate(site, cli_run):
    """Variant: the damaged bundle's manifest removed (its other files still name it a bundle)."""
    shutil.copytree(site / "run-q4", site / "run-stripped")
    (site / "run-stripped/manifest.json").unlink()
    code, v = _verdict(cli_run, site)
    assert code == 1
    bad = [r for r in v["detector_runs"] if not r["ok"]]
    assert [Path(r["path"]).name for r in bad] == ["run-stripped"]


def test_a_damaged_cycle_beside_good_ones(cli_run, data_dir, tmp_path):
    """Variant with cycles: June and July verify, a copy of July with a truncated cycle.json fails."""
    root = tmp_path / "cycles"
    root.mkdir()
    for c in ("June 2026", "July 2026"):
        shutil.copytree(data_dir / "humanizerbench" / c, root / c)
    shutil.copytree(data_dir / "humanizerbench" / "July 2026", root / "July copy")
    cj = root / "July copy" / "cycle.json"
    cj.write_bytes(cj.read_bytes()[:40])
    code, v = _verdict(cli_run, root)
    assert code == 1 and v["ok"] is False
    assert {Path(c["path"]).name: c["ok"] for c in v["cycles"]} == {"June 2026": True, "July 2026": True,
                                                                     "July copy": False}, v["cycles"]


def test_a_folder_holding_only_a_link_fails_and_names_it(liang_built, cli_run, tmp_path):
    root = tmp_path / "only-link"
    root.mkdir()
    (root / "run").symlink_to(liang_built[1], target_is_directory=True)
    code, out = cli_run("verify", root)
    assert code == 1 and out.startswith("[FAIL] run: reader: run: a symbolic link"), out


def test_plain_files_only_is_not_a_bundle(cli_run, tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "LICENSE").write_text("MIT\n", encoding="utf-8")
    (root / "NOTICE").write_text("notes\n", encoding="utf-8")
    code, out = cli_run("verify", root)
    assert code == 1 and out.strip() == (f"error: {root}: not a bundle: holds no cycle or detector-run bundle folders "
                                         "(give a folder written by `veribench publish` or a cycle bundle)"), out


def _only(sub: Path, src: Path, rels: list[str]) -> None:
    for rel in rels:
        (sub / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel, sub / rel)


# each: what a damaged or misplaced bundle left in the sub-folder "bad" (hole H3)
_STRAYS = {
    "tables-only": lambda sub, src: _only(sub, src, ["tables.md"]),
    "readme-only": lambda sub, src: _only(sub, src, ["README.md"]),
    "log-only": lambda sub, src: _only(sub, src, ["log/events.jsonl"]),
    "commitment-only": lambda sub, src: (sub / "commitments").mkdir() or (sub / "commitments/v1.json").write_text(
        "{}", encoding="utf-8"),
    "protocol-only": lambda sub, src: (sub / "protocol").mkdir() or (sub / "protocol/v1.toml").write_text(
        "x = 1\n", encoding="utf-8"),
    "upper-case-manifest": lambda sub, src: shutil.copyfile(src / "manifest.json", sub / "MANIFEST.JSON"),
    "gzipped-corpus": lambda sub, src: (sub / "corpus.jsonl.gz").write_bytes(b"\x1f\x8b"),
    "nested-bundle": lambda sub, src: shutil.copytree(src, sub / "b"),
    "empty": lambda sub, src: None,
}


@pytest.mark.parametrize("stray", sorted(_STRAYS))
def test_a_sub_folder_that_is_no_bundle_beside_a_good_one_fails_and_is_named(site, cli_run, stray):
    """Every sub-folder is a candidate: one holding no marker file is reported, exit 1."""
    sub = site / "bad"
    sub.mkdir()
    _STRAYS[stray](sub, site / "run-q4")
    code, out = cli_run("verify", site)
    assert code == 1, out
    assert "[FAIL] bad: reader: bad: not a bundle or cycle (holds none of their marker files" in out, out
    assert sum(x.startswith("[ok] LIANG-BUNDLE-2 (run ") for x in out.splitlines()) == 1, out
    code, v = _verdict(cli_run, site)
    assert code == 1 and v["ok"] is False
    assert [(Path(r["path"]).name, r["kind"], r["ok"]) for r in v["refused"]] == [("bad", "unrecognised", False)]


def test_good_bundles_and_a_licence_still_pass(site, cli_run):
    shutil.copytree(site / "run-q4", site / "run-q5")
    code, out = cli_run("verify", site)
    assert code == 0, out
    assert sum(x.startswith("[ok] LIANG-BUNDLE-2 (run ") for x in out.splitlines()) == 2, out
    assert "LICENSE" not in out and "[FAIL]" not in out


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads a folder without permissions")
def test_an_unlistable_sub_folder_is_refused(site, cli_run):
    sub = site / "locked"
    sub.mkdir()
    sub.chmod(0)
    try:
        code, v = _verdict(cli_run, site)
    finally:
        sub.chmod(0o755)
    assert code == 1 and [(r["kind"], Path(r["path"]).name) for r in v["refused"]] == [("unreadable", "locked")]


def test_the_cycle_verifiers_folder_walk_reports_links(data_dir, tmp_path):
    """``veribench.cycles.verify.verify_paths`` walks folders the same way: a link is a failed report."""
    from veribench.cycles.verify import verify_paths

    root = tmp_path / "cycles"
    root.mkdir()
    shutil.copytree(data_dir / "humanizerbench" / "July 2026", root / "July 2026")
    (root / "June 2026").symlink_to(data_dir / "humanizerbench" / "June 2026", target_is_directory=True)
    reps = {r.cycle: r for r in verify_paths([root])}
    assert reps["July 2026"].ok and not reps["June 2026"].ok
    assert "a symbolic link" in reps["June 2026"].failures[0].message


# -- --tsa-root: repeatable; a bad file is refused in the one error style -------------------------

def test_tsa_root_is_repeatable_and_names_the_root_that_anchors(liang_built, cli_run, tmp_path):
    from cryptography.hazmat.primitives.serialization import Encoding

    from tests.bundles.tsa_server import make_authority

    _, bundle, ca = liang_built
    other = tmp_path / "other-root.pem"
    other.write_bytes(make_authority("another authority")[0].public_bytes(Encoding.PEM))
    code, v = _verdict(cli_run, bundle, "--tsa-root", other)
    ts = v["detector_runs"][0]["checks"]["timestamp"]
    assert code == 0 and ts["status"] == "note" and f"--tsa-root {other}" in ts["detail"], ts
    code, v = _verdict(cli_run, bundle, "--tsa-root", other, "--tsa-root", ca)
    ts = v["detector_runs"][0]["checks"]["timestamp"]
    assert code == 0 and ts["status"] == "ok", ts
    assert {a["trusted_by"] for a in ts["anchors"]} == {f"--tsa-root {ca}"}
    assert {a["root"] for a in ts["anchors"]} == {"O=veribench tests,CN=veribench test TSA root"}


@pytest.mark.parametrize("content,why", [
    (b"not a certificate\n", "not a PEM or DER certificate"),
    (b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "not a PEM or DER certificate"),
])
def test_a_tsa_root_that_is_no_certificate_is_refused(liang_built, cli_run, tmp_path, content, why):
    bad = tmp_path / "root.pem"
    bad.write_bytes(content)
    code, out = cli_run("verify", liang_built[1], "--tsa-root", bad)
    assert code == 1 and out.startswith(f"error: {bad}: {why}") and len(out.strip().splitlines()) == 1, out
    assert "give a PEM file of the authority's root certificate(s) to --tsa-root" in out
    code, out = cli_run("verify", liang_built[1], "--tsa-root", tmp_path / "missing.pem")
    assert code == 1 and "missing.pem: no such file" in out, out


@pytest.mark.parametrize("inside", ["commitments/v1.roots.pem", "../site-root.pem"], ids=["in-bundle", "in-folder"])
def test_a_tsa_root_taken_from_the_material_under_test_is_refused(site, cli_run, inside):
    """The bundle's own certificate (or one shipped beside the bundles) passed as --tsa-root
    would make the carried root trusted by the back door: a usage error, nothing verified."""
    root = (site / "run-q4" / inside).resolve()
    if not root.exists():
        root.write_bytes((site / "run-q4/commitments/v1.roots.pem").read_bytes())
    code, out = cli_run("verify", site, "--tsa-root", root)
    assert code == 2 and out.startswith(f"error: --tsa-root {root}: lies inside {site}, which is being verified"), out
    assert "[ok]" not in out and len(out.strip().splitlines()) == 1


@pytest.mark.parametrize("name", ["x\n[ok] OFFICIAL-2026-Q4 (run r): 12 checks passed", "x\r[ok] y", "x\u2028[ok] y"],
                         ids=["newline", "carriage-return", "line-separator"])
def test_a_name_cannot_forge_a_verdict_line(site, cli_run, name):
    """A candidate's name is shown escaped: a damaged bundle, or a link, named so that its
    verdict would print a line of its own starting with [ok], is refused on one line."""
    shutil.copytree(site / "run-q4", site / name)
    (site / ("link-" + name)).symlink_to(site / "run-q4", target_is_directory=True)
    code, out = cli_run("verify", site)
    assert code == 1
    heads = [x for x in out.splitlines() if not x.startswith(" ")]
    assert sum(x.startswith("[ok] ") for x in heads) == 1 and len(heads) == 3, out
    assert "OFFICIAL" not in "".join(x for x in heads if x.startswith("[ok]"))
    assert any("not printable (shown escaped)" in x for x in heads) and any("a symbolic link" in x for x in heads)
