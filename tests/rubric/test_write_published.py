"""The one export rule for fingerprint-only documents (Workspace.fingerprint_only_ids and
published_documents), against a plain per-document reference, over random derivation graphs."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from veribench.corpus.document import Document
from veribench.corpus.importers import store_import
from veribench.corpus.report import ImportReport
from veribench.store import Workspace

from .write_helpers import liang_texts

DOC = st.fixed_dictionaries({"text": st.booleans(), "fp": st.sampled_from([None, False, True]),
                             "source": st.one_of(st.none(), st.integers(0, 11))})


def reference(docs: list[dict]) -> set[str]:
    """Per document: fingerprint-only itself, or any ancestor through source ids is."""
    by_id = {f"d{i}": d for i, d in enumerate(docs)}

    def private(i: str, seen: frozenset = frozenset()) -> bool:
        d = by_id[i]
        if not d["text"] or d["fp"] is True:
            return True
        src = f"d{d['source']}" if d["source"] is not None else None
        return src in by_id and src not in seen and private(src, seen | {i})

    return {i for i in by_id if private(i)}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory, liang_dir):
    ws = Workspace(tmp_path_factory.mktemp("pub") / "ws")
    yield ws, liang_texts(liang_dir, "TOEFL_real_91")
    ws.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(DOC, min_size=1, max_size=12))
def test_fingerprint_only_follows_every_derivation(scratch, docs):
    ws, texts = scratch
    with ws.transaction() as c:
        c.execute("DELETE FROM documents")
    out = []
    for i, d in enumerate(docs):
        prov = {}
        if d["fp"] is not None:
            prov["fingerprint_only"] = d["fp"]
        if d["source"] is not None:
            prov["source_id"] = f"d{d['source']}"
        kw = {"text": texts[i]} if d["text"] else {"text_sha256": f"{i:064x}"}
        out.append(Document(id=f"d{i}", label="human", arm="B", provenance=prov, **kw))
    store_import(ws, ImportReport(kind="jsonl", source="<test>", corpus="t"), out)
    expect = reference(docs)
    assert ws.fingerprint_only_ids() == expect
    pub = {d["doc_id"]: d for d in ws.published_documents()}
    for i, d in enumerate(docs):
        rec = pub[f"d{i}"]
        assert rec["fingerprint_only"] == (f"d{i}" in expect)
        assert rec["text"] == (None if f"d{i}" in expect else texts[i])
        assert rec["text_sha256"]
