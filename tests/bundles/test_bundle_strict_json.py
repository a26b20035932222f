"""A bundle JSON with duplicate keys fails ``verify`` (issue 24, hostile tester's third round):
two readers (Python: the last copy, SQL ``json_extract``: the first) must never read one
file two ways, so the verifier's one strict reader refuses it, wherever it is."""

from __future__ import annotations

from tests.bundles.bundle_helpers import rehash, verify


def _dup(bundle, rel: str, old: str, new: str) -> None:
    p = bundle / rel
    text = p.read_text(encoding="utf-8")
    assert old in text, (rel, old)
    p.write_text(text.replace(old, new, 1), encoding="utf-8")
    if rel != "manifest.json":  # the manifest's root hash is over its parsed fields: the copy read last is the same
        rehash(bundle)


def _fails(bundle, *needles: str) -> None:
    rep = verify(bundle)
    text = "\n".join(rep.lines())
    assert not rep.ok, text
    for n in needles:
        assert n in text, text


def test_a_duplicate_key_in_a_corpus_record_fails(bundle):
    _dup(bundle, "corpus.jsonl", ',"fingerprint_only":false', ',"fingerprint_only":true,"fingerprint_only":false')
    _fails(bundle, "corpus.jsonl", "duplicate key 'fingerprint_only'")


def test_a_duplicate_key_in_the_manifest_fails(bundle):
    _dup(bundle, "manifest.json", '"tag": ', '"tag": "OFFICIAL",\n  "tag": ')
    _fails(bundle, "manifest.json", "duplicate key 'tag'")


def test_a_duplicate_key_in_the_results_fails(bundle):
    _dup(bundle, "results.json", '"run": {', '"run": {"tag": "OFFICIAL", ')
    _fails(bundle, "results.json")
