"""Duplicate JSON keys cannot be read two ways (issue 24, hostile tester's third round, lead):
DuckDB's ``json_extract`` takes the first of two duplicate keys, Python's ``json.loads`` the
last, so ``{"fingerprint_only":false,"fingerprint_only":true}`` edited into a row kept the
logged leaf (Python) while the workspace published the text (SQL). Every JSON the store reads
is parsed by one strict reader (:func:`veribench.hashing.loads_strict`)."""

from __future__ import annotations

import json

import pytest

from tests.bundles.bundle_helpers import store_documents
from veribench.corpus.document import Document
from veribench.errors import InputError
from veribench.hashing import loads_strict
from veribench.records import ScoreResult
from veribench.store import writes
from veribench.store.logcheck import verify_workspace


@pytest.mark.parametrize("text,why", [('{"a":1,"a":2}', "duplicate key 'a'"), ('{"a":{"b":1,"b":1}}', "duplicate key"),
                                      ('{"a":NaN}', "NaN"), ('[Infinity]', "Infinity")])
def test_the_strict_reader_refuses_duplicates_and_constants(text, why):
    with pytest.raises(ValueError, match=why):
        loads_strict(text)
    assert loads_strict('{"a":1,"b":[1.5,null]}') == json.loads('{"a":1,"b":[1.5,null]}')


@pytest.fixture()
def docs(workspace):
    ds = [Document(id="fp", text="a private essay text", label="human", provenance={"fingerprint_only": True}),
          Document(id="src", text="a public source text", label="human"),
          Document(id="kid", text="a derived text", label="ai", provenance={"source_id": "src"})]
    store_documents(workspace, ds, "D", [ScoreResult(raw=0.2, ai_probability=0.2)] * 3, corpus="c")
    assert verify_workspace(workspace).ok and "fp" in workspace.fingerprint_only_ids()
    return workspace


@pytest.mark.parametrize("doc,prov", [
    ("fp", '{"fingerprint_only":false,"fingerprint_only":true}'),   # SQL read false: the text would be published
    ("kid", '{"source_id":"elsewhere","source_id":"src"}'),         # SQL read another source: a withdrawal misses it
    ("fp", '{"fingerprint_only":NaN}'),
])
def test_a_row_with_duplicate_keys_is_refused_by_log_verify_and_the_readers(docs, doc, prov):
    ws = docs
    ws.con.execute("UPDATE documents SET provenance = ? WHERE doc_id = ?", [prov, doc])
    rep = verify_workspace(ws)
    assert not rep.ok and "is not strict" in "\n".join(rep.lines()), rep.lines()
    with pytest.raises(InputError, match=f"^documents row doc {doc}: provenance is not strict JSON"):
        ws.fingerprint_only_ids()
    with pytest.raises(InputError, match="provenance is not strict JSON"):
        with ws.transaction():
            writes.withdraw_document(ws.con, "src")
    assert ws.query("SELECT count(*) FROM documents")[0][0] == 3  # nothing removed


def test_an_event_payload_with_duplicate_keys_fails_log_verify(docs):
    ws = docs
    first = ws.query("SELECT min(seq) FROM events")[0][0]
    ws.con.execute("UPDATE events SET payload = '{\"import_id\":\"x\",' || substr(payload, 2) WHERE seq = ?", [first])
    assert '"import_id":"x"' in ws.query("SELECT payload FROM events WHERE seq = ?", [first])[0][0]
    rep = verify_workspace(ws)
    assert not rep.ok and f"events row seq {first}: payload is not strict JSON (duplicate key 'import_id')" in \
        "\n".join(rep.lines()), rep.lines()
