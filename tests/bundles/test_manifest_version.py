"""The manifest's ``veribench_version`` is the run's own (issue 24, hostile tester's third
round): a well-formed but different version, manifest rehashed, used to pass ``verify``."""

from __future__ import annotations

import json

import pytest

from tests.bundles.bundle_helpers import edit_json, rehash, verify


def test_publish_writes_the_runs_version(bundle):
    m = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    run = json.loads((bundle / "results.json").read_text(encoding="utf-8"))["run"]
    assert m["veribench_version"] == run["veribench_version"]
    assert verify(bundle).ok


@pytest.mark.parametrize("version", ["99.0.post1", "0.0.1", "1!2.0"])
def test_a_well_formed_other_version_in_the_manifest_fails(bundle, version):
    run_v = json.loads((bundle / "results.json").read_text(encoding="utf-8"))["run"]["veribench_version"]
    if version == run_v:
        pytest.skip("the run's own version")
    edit_json(bundle, "manifest.json", lambda m: m.__setitem__("veribench_version", version), update_manifest=False)
    rehash(bundle)
    rep = verify(bundle)
    text = "\n".join(rep.lines())
    assert not rep.ok and rep.status("manifest") == "FAIL", text
    assert "veribench_version differs from the run's" in text and version in text, text
