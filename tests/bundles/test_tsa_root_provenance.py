"""A ``--tsa-root`` must come from outside the material under test, by identity, not by name.

Hostile-test class 2 of issue 24: a second hard link to the root a bundle carries, kept
outside the bundle's folder, passed the path-name check and made the carried root trusted.
The verifier now compares each ``--tsa-root`` file's ``(st_dev, st_ino)`` with every file
under the folders being verified, and the bundle reader refuses any bundle file with
``st_nlink > 1``. A byte-identical copy kept outside is still a root the user supplies.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest


def _hard_link(src: Path, dst: Path) -> Path:
    try:
        os.link(src, dst)
    except OSError as e:  # pragma: no cover - a filesystem without hard links
        pytest.skip(f"no hard links here: {e}")
    return dst


@pytest.mark.parametrize("what", ["bundle", "folder"])
def test_a_hard_link_to_the_carried_root_is_not_a_root_the_user_supplies(site, cli_run, tmp_path, what):
    """Verifying the bundle itself or the folder of bundles: usage error, nothing verified."""
    carried = site / "run-q4/commitments/v1.roots.pem"
    root = _hard_link(carried, tmp_path / "outside-root.pem")
    target = site / "run-q4" if what == "bundle" else site
    code, out = cli_run("verify", target, "--tsa-root", root)
    assert code == 2, out
    assert out.startswith(f"error: --tsa-root {root}: lies inside {target}, which is being verified"), out
    assert "hard link" in out and "[ok]" not in out and len(out.strip().splitlines()) == 1, out


@pytest.mark.parametrize("rel", ["commitments/v1.roots.pem", "results.json"])
def test_a_bundle_file_with_a_second_name_is_refused_as_a_link(bundle, cli_run, tmp_path, rel):
    """The reader refuses a bundle file with st_nlink > 1 (its twin outside can change it)."""
    _hard_link(bundle / rel, tmp_path / "twin")
    code, out = cli_run("verify", bundle, "--format", "json")
    v = json.loads(out)
    assert code == 1 and not v["ok"], out
    assert "hard link" in out and rel in out, out


def test_a_byte_identical_root_kept_outside_is_trusted(liang_built, cli_run, tmp_path):
    """Same bytes, different file: a user may download the authority's root; the date is proven."""
    _, bundle, _ = liang_built
    copy = tmp_path / "downloaded-root.pem"
    shutil.copyfile(bundle / "commitments/v1.roots.pem", copy)
    code, out = cli_run("verify", bundle, "--tsa-root", copy, "--format", "json")
    ts = json.loads(out)["detector_runs"][0]["checks"]["timestamp"]
    assert code == 0 and ts["status"] == "ok", ts
