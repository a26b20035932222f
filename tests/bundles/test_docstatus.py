"""The fingerprint-only rule a bundle applies (veribench.bundles.docstatus): logged provenance only."""

from __future__ import annotations

import json

import pytest
from pydantic import TypeAdapter, ValidationError

from tests.rubric.write_helpers import liang_texts
from veribench.bundles import docstatus
from veribench.corpus.document import Document
from veribench.corpus.importers import store_import
from veribench.corpus.report import ImportReport
from veribench.store import Workspace


@pytest.mark.parametrize("prov,want", [
    ({"fingerprint_only": True}, True),
    ('{"fingerprint_only": true}', True),
    ({"fingerprint_only": 1}, True),
    ({"fingerprint_only": 0.0}, False),
    ({"fingerprint_only": "true"}, True),  # the workspace withholds it, so the bundle rule does too
    ({"fingerprint_only": "no"}, False),
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


SWEEP = [True, False, 1, 0, 1.0, 0.0, -2, 0.5, 1e-300, "true", "TRUE", " yes ", "yes", "y", "t", "on", "1",
         "false", "no", "0", "2", "1.0", "off", "", "fingerprint_only", None, [], {}, [True], {"x": True}]


def _reference(v: object) -> bool:
    """A plain reading of the rule, independent of veribench: JSON true, a non-zero number, or
    one of the strings pydantic's lax bool reads as true (after strip/lower)."""
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return v != 0
    if isinstance(v, str):
        try:
            return TypeAdapter(bool).validate_python(v.strip().lower())
        except ValidationError:
            return False
    return False


def test_the_workspace_and_the_bundle_verifier_give_one_verdict(tmp_path, liang_dir):
    """Issue 24: the workspace's SQL (TRY_CAST) and docstatus.marked disagreed on "true", "yes",
    "t": a value a tester edits into the stored provenance gets the same verdict both ways."""
    texts = liang_texts(liang_dir, "TOEFL_real_91")
    ws = Workspace(tmp_path / "ws")
    try:
        docs = [Document(id=f"d{i}", label="human", arm="B", text=texts[i], provenance={"attestation": "volunteer form"})
                for i in range(len(SWEEP))]
        store_import(ws, ImportReport(kind="jsonl", source="<test>", corpus="t"), docs)
        with ws.transaction() as c:  # the tester's edit, below the importer's coercion
            for i, v in enumerate(SWEEP):
                c.execute("UPDATE documents SET provenance = ? WHERE doc_id = ?",
                          [json.dumps({"fingerprint_only": v}), f"d{i}"])
        in_ws = ws.fingerprint_only_ids()
        stored = dict(ws.query("SELECT doc_id, provenance::VARCHAR FROM documents"))
    finally:
        ws.close()
    for i, v in enumerate(SWEEP):
        want = _reference(v)
        assert (f"d{i}" in in_ws) is want, v
        assert docstatus.marked(stored[f"d{i}"]) is want, v
        assert docstatus.marked({"fingerprint_only": v}) is want, v
    assert docstatus.fingerprint_only_ids(stored.items()) == in_ws
