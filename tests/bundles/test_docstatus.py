"""The fingerprint-only rule a bundle applies (veribench.bundles.docstatus): logged provenance only."""

from __future__ import annotations

import json

import pytest

from veribench.bundles import docstatus


@pytest.mark.parametrize("prov,want", [
    ({"fingerprint_only": True}, True),
    ('{"fingerprint_only": true}', True),
    ({"fingerprint_only": 1}, True),
    ({"fingerprint_only": 0.0}, False),
    ({"fingerprint_only": "true"}, False),  # a string is not the workspace's flag
    ({"fingerprint_only": False}, False),
    ({}, False),
    (None, False),
    ("not json", False),
    ([True], False),
])
def test_marked(prov, want):
    assert docstatus.marked(prov) is want


def test_derived_documents_follow_their_source_at_any_depth():
    docs = [("a", {"fingerprint_only": True}), ("b", {"source_id": "a"}), ("c", json.dumps({"source_id": "b"})),
            ("d", {"source_id": "x"}), ("x", None), ("e", {"source_id": {"nested": "a"}})]
    assert docstatus.fingerprint_only_ids(docs) == {"a", "b", "c"}


def test_a_cycle_of_sources_ends():
    docs = [("a", {"source_id": "b", "fingerprint_only": True}), ("b", {"source_id": "a"})]
    assert docstatus.fingerprint_only_ids(docs) == {"a", "b"}
