"""Sentence-level scores from GPTZero, Sapling and Winston are kept as character spans of the
submitted text (``detail["sentences"]``, CONTRACTS.md), through the fake vendor server on
127.0.0.1 answering with each vendor's documented sentence fields."""

from __future__ import annotations

import pytest
from vendor_fakes import FAST

from veribench import registry

S1, S2 = "The harbour lantern was lit at dusk.", "Nobody saw the keeper leave."
S3 = ("A quiet ledger records every ship that passed the point in the last forty years; it was written in copper "
      "ink by three generations of keepers, each with a different hand, and it now sits in the village archive "
      "beside a box of brass compass needles that nobody has been able to explain.")
TEXT = S1 + " Nobody  saw the keeper leave.\n" + S3  # GPTZero and Winston need 250 / 300 characters


def bodies():
    return {
        "gptzero": {"version": "fake", "documents": [{
            "class_probabilities": {"ai": 0.6, "mixed": 0.1, "human": 0.3}, "predicted_class": "ai",
            "sentences": [{"sentence": S1, "generated_prob": 0.1, "perplexity": 40},
                          {"sentence": S2, "generated_prob": 0.2, "perplexity": 30},  # spacing differs from the text
                          {"sentence": "A sentence the text does not hold.", "generated_prob": 0.9},
                          {"sentence": S3, "generated_prob": 0.95}]}]},
        "sapling": {"score": 0.7, "sentence_scores": [{"sentence": S1, "score": 0.05}, {"sentence": S2, "score": 0.1},
                                                      {"sentence": S3, "score": 0.99}]},
        "winston": {"status": 200, "score": 40, "version": "fake", "credits_used": 20,
                    "sentences": [{"length": 36, "score": 90.0, "text": S1}, {"length": 28, "score": 85.5, "text": S2},
                                  {"length": 64, "score": 2.0, "text": S3}]},
    }


@pytest.mark.parametrize("vendor,expect", [
    ("gptzero", [(0.1, 0.1), (0.2, 0.2), (0.95, 0.95)]),
    ("sapling", [(0.05, 0.05), (0.1, 0.1), (0.99, 0.99)]),
    ("winston", [(0.1, 90.0), (0.145, 85.5), (0.98, 2.0)]),
])
def test_sentence_scores_become_character_spans(fake, keys, vendor, expect):
    fake.script[TEXT] = [{"http": 200, "body": bodies()[vendor]}]
    det = registry.create("detector", vendor, {"base_url": fake.url, **FAST})
    r = det.score_batch([TEXT])[0]
    assert r.status == "ok", r.detail
    sents = r.detail["sentences"]
    assert [(s["ai_probability"], s["raw"]) for s in sents] == [pytest.approx(e) for e in expect]
    spans = [TEXT[s["start"]:s["end"]] for s in sents]
    assert spans[0] == S1 and " ".join(spans[1].split()) == S2 and spans[2] == S3
    assert all(set(s) == {"start", "end", "ai_probability", "raw"} for s in sents)
    assert r.detail.get("sentences_unlocated", 0) == (1 if vendor == "gptzero" else 0)
    assert r.detail["response"]  # the raw body stays recorded as before


def test_no_sentences_in_the_response_adds_nothing(fake, keys):
    det = registry.create("detector", "gptzero", {"base_url": fake.url, **FAST})
    r = det.score_batch([TEXT])[0]
    assert r.status == "ok" and "sentences" not in r.detail
