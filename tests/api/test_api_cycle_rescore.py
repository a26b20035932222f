"""Real use: re-scoring a HumanizerBench cycle's humanizer outputs with API detectors
(through ``veribench.cycles.rescore``, the registry and ``score_texts``) against the fake
vendor server, with the readability judge on the fake OpenAI-compatible endpoint."""

from __future__ import annotations

import json
import shutil
import stat

import numpy as np
import pytest
from vendor_fakes import FAST, value_for

from veribench import registry
from veribench.hashing import text_sha256
from veribench.spec import Spec


class HashingEmbedder:
    """A light stand-in embedder (feature-hashed word counts, unit rows) so this test needs no
    torch model; meaning preservation is not what is under test here."""

    rescale_floor = 0.75
    severe_drift_cosine = 0.85

    def __init__(self, dim: int = 512):
        self.dim = dim
        self.spec = Spec("embedder", "test-hashing", "1", {"dim": dim})

    def embed(self, texts):
        out = np.zeros((len(texts), self.dim))
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, int(text_sha256(w)[:8], 16) % self.dim] += 1.0
        n = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(n == 0, 1, n)


@pytest.fixture()
def bundle_copy(tmp_path, data_dir):
    src = data_dir / "humanizerbench" / "July 2026"
    dst = tmp_path / "July 2026"
    shutil.copytree(src, dst)
    for p in [dst, *dst.iterdir()]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    return dst


@pytest.mark.slow  # verifies and re-publishes a real cycle bundle
def test_cycle_rescore_with_api_detectors(bundle_copy, tmp_path, fake, keys, workspace):
    rescore = pytest.importorskip("veribench.cycles.rescore")
    from veribench.cycles.verify import verify_cycle

    registry.register("embedder", "test-hashing", HashingEmbedder)
    try:
        s = {"base_url": fake.url, **FAST}
        dets = [("winston", s), ("gptzero", s), ("copyleaks", s)]
        judge = {"base_url": fake.url + "/v1", "model": "judge", "provider": "vllm"}
        out = tmp_path / "rescored"
        res = rescore.rescore_bundle(bundle_copy, out, workspace, detectors=dets, embedder="test-hashing",
                                     readability="judge", judge_settings=judge, limit=2)
        tests = [t for t in json.loads((out / "tests.json").read_text()) if t["status"] == "complete"]
        assert tests, "no complete tests in the subset"
        outputs = {t["output_text"] for t in tests}
        # every distinct complete output went to each vendor exactly once
        for v in ("winston", "gptzero", "copyleaks"):
            sent = {c["json"].get("text") or c["json"].get("document") for c in fake.calls if c["vendor"] == v}
            assert sent == {o for o in outputs if len(o) >= {"winston": 300, "gptzero": 250, "copyleaks": 255}[v]}
            assert all(fake.count(v, o) <= 1 for o in outputs)
        # raw_score is the human likelihood 1 - P(AI), per the vendor's documented scale
        rows = json.loads((out / "detector-scores.json").read_text())
        slugs = {d["slug"]: n for d, (n, _) in zip(json.loads((out / "provenance.json").read_text())["detectors"], dets)}
        by_test = {t["id"]: t["output_text"] for t in tests}
        want = {"winston": lambda v: v, "gptzero": lambda v: round(v - round(v * 0.25, 6), 6), "copyleaks": lambda v: v}
        checked = 0
        for r in rows:
            name = slugs[r["detector_slug"]]
            p_ai = want[name](value_for(by_test[r["test_id"]]))
            assert r["raw_score"] == pytest.approx(1 - p_ai, abs=1e-9)
            checked += 1
        assert checked >= len(tests)
        # readability from the judge endpoint, on [0, 1]
        assert all(t["readability"] == value_for(t["output_text"]) for t in tests)
        assert res["leaderboard"]["humanizers"] and verify_cycle(out).ok
        # a second re-score of the same outputs is served from the workspace: no vendor call repeated
        n = len([c for c in fake.calls if c["vendor"] != "copyleaks-login"])
        rescore.rescore_bundle(bundle_copy, tmp_path / "again", workspace, detectors=dets, embedder="test-hashing",
                               readability="judge", judge_settings=judge, limit=2)
        assert len([c for c in fake.calls if c["vendor"] != "copyleaks-login"]) == n
    finally:
        registry._REGISTERED.get("embedder", {}).pop("test-hashing", None)
