"""Case c08 on the zero-shot engine: with ``canonicalize = "skeleton"`` the three texts are one
submission with one score; without it the homoglyphs and zero-width spaces change the score."""

from __future__ import annotations

import json

import pytest

from veribench import registry
from veribench.corpus.importers import import_documents
from veribench.detectors.pipeline import score_documents
from veribench.hashing import text_sha256

C08 = ("plain", "homoglyph", "zero_width")


@pytest.mark.parametrize("name", ["loglik", "fast-detectgpt"])
def test_c08_one_score_with_canonicalisation(name, cases_dir, tmp_path, workspace, gpt2_path):
    texts = {n: (cases_dir / "c08" / f"{n}.txt").read_text(encoding="utf-8") for n in C08}
    f = tmp_path / "c08.jsonl"
    f.write_text("\n".join(json.dumps({"id": n, "text": t, "label": "human"}) for n, t in texts.items()),
                 encoding="utf-8")
    import_documents(workspace, f)
    raw = registry.create("detector", name, {"model": gpt2_path})
    canon = registry.create("detector", name, {"model": gpt2_path, "canonicalize": "skeleton"})
    assert canon.spec.hash != raw.spec.hash and canon.spec.settings["model"] == gpt2_path
    plain = score_documents(workspace, raw)
    assert len({plain[n].raw for n in C08}) == 3  # each hazard changes the tokens, so the score
    same = score_documents(workspace, canon)
    assert all(r.status == "ok" for r in same.values())
    assert same["homoglyph"].raw == same["zero_width"].raw == same["plain"].raw == pytest.approx(plain["plain"].raw)
    subs = workspace.query("SELECT DISTINCT submitted_sha256 FROM submissions WHERE spec_hash = ?", [canon.spec.hash])
    assert subs == [(text_sha256(texts["plain"]),)]
    assert (same["homoglyph"].hazards["confusables"], same["zero_width"].hazards["invisible"]) == (30, 20)
