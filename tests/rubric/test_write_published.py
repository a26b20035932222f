"""The one export rule for fingerprint-only documents (Workspace.fingerprint_only_ids and
published_documents), against a plain per-document reference, over random derivation graphs."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.rubric.write_helpers import liang_texts
from veribench.corpus.document import Document
from veribench.corpus.importers import store_import
from veribench.corpus.report import ImportReport
from veribench.store import Workspace

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
        prov: dict = {"attestation": f"att-{i}"}  # arm B: every text attested (rule B.attestation)
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
    for i, _d in enumerate(docs):
        rec = pub[f"d{i}"]
        assert rec["fingerprint_only"] == (f"d{i}" in expect)
        assert rec["text"] == (None if f"d{i}" in expect else texts[i])
        assert rec["text_sha256"]


def test_export_documents_holds_no_byte_of_a_fingerprint_only_text_or_its_attack(tmp_path, liang_dir):
    """``veribench export documents`` applies the same rule: a fingerprint-only text, and an
    attacked copy of it, are written with their SHA-256 and metadata only (no text, no edits)."""
    from typer.testing import CliRunner

    from veribench.cli.main import app

    texts = liang_texts(liang_dir, "TOEFL_real_91")
    ws = Workspace(tmp_path / "ws")
    docs = [Document(id="open", label="human", arm="B", text=texts[0], provenance={"attestation": "att-1"}),
            Document(id="private", label="human", arm="B", text=texts[1],
                     provenance={"attestation": "att-2", "fingerprint_only": True})]
    store_import(ws, ImportReport(kind="jsonl", source="<test>", corpus="t"), docs)
    ws.close()
    r = CliRunner().invoke(app, ["attack", "article_deletion", "--workspace", str(tmp_path / "ws"), "--seed", "1"])
    assert r.exit_code == 0, r.output
    out = tmp_path / "docs.jsonl"
    r = CliRunner().invoke(app, ["export", "documents", "--workspace", str(tmp_path / "ws"), "--out", str(out)])
    assert r.exit_code == 0, r.output
    body = out.read_text(encoding="utf-8")
    sentences = [s.strip() for s in texts[1].split(".") if len(s.strip()) > 30]
    assert sentences and not any(s in body for s in sentences)
    assert texts[0].split(".")[0] in body  # the open text is published
    import json

    recs = {d["id"]: d for d in map(json.loads, body.splitlines())}
    hidden = [d for i, d in recs.items() if i == "private" or d.get("source_id") == "private"]
    assert len(hidden) == 2 and all(d["text"] is None and not d.get("edits") and d["text_sha256"] for d in hidden)
