"""Vendor detectors through the one scoring path: hazards on every stored result, and the
``canonicalize`` setting changing what is sent (real HTTP to the fake vendor on 127.0.0.1)."""

from __future__ import annotations

import json

import pytest
from vendor_fakes import FAST, value_for

from veribench import registry
from veribench.detectors.pipeline import score_texts
from veribench.hashing import text_sha256

C08 = ("plain", "homoglyph", "zero_width")


@pytest.mark.parametrize("name", ["sapling", "zerogpt"])
def test_vendor_scores_record_hazards_and_canonicalise(name, fake, keys, workspace, cases_dir):
    texts = {n: (cases_dir / "c08" / f"{n}.txt").read_text(encoding="utf-8") for n in C08}
    raw = registry.create("detector", name, {"base_url": fake.url, **FAST})
    res = score_texts(workspace, raw, list(texts.values()))
    by = {n: res[text_sha256(t)] for n, t in texts.items()}
    assert all(r.status == "ok" for r in by.values())
    assert {n: r.ai_probability for n, r in by.items()} == {n: pytest.approx(value_for(t)) for n, t in texts.items()}
    stored = {s: json.loads(d)["hazards"] for s, d in workspace.query(
        "SELECT text_sha256, detail FROM scores WHERE spec_hash = ?", [raw.spec.hash])}
    assert stored[text_sha256(texts["homoglyph"])]["confusables"] == 30
    assert stored[text_sha256(texts["zero_width"])]["invisible"] == 20

    canon = registry.create("detector", name, {"base_url": fake.url, **FAST, "canonicalize": "skeleton"})
    res = score_texts(workspace, canon, list(texts.values()))
    by = {n: res[text_sha256(t)] for n, t in texts.items()}
    # the vendor was sent the canonical (plain) text for all three: one call, one P(AI)
    assert [r.ai_probability for r in by.values()] == [pytest.approx(value_for(texts["plain"]))] * 3
    assert workspace.query("SELECT count(*) FROM scores WHERE spec_hash = ?", [canon.spec.hash]) == [(1,)]
    assert (by["homoglyph"].hazards["confusables"], by["zero_width"].hazards["invisible"]) == (30, 20)
