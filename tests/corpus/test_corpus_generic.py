"""JSONL / CSV / Parquet document import: the documented schema, and every kind of bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from veribench.corpus.importers import import_documents
from veribench.errors import InputError
from veribench.hashing import text_sha256

REPO = Path(__file__).resolve().parents[2]
SCHEMA_DOC = REPO / "docs" / "corpus-schema.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", SCHEMA_DOC.read_text(), flags=re.S)


def _docs(ws):
    return {r[0]: r for r in ws.query(
        "SELECT doc_id, text, text_sha256, label, arm, kind, subgroup, tags, group_key, provenance, generation, corpus "
        "FROM documents")}


def test_schema_doc_jsonl_example_imports(tmp_path, workspace):
    f = tmp_path / "docs.jsonl"
    f.write_text(_blocks("json")[0])
    rep = import_documents(workspace, f)
    d = _docs(workspace)
    assert rep.documents == 3 and set(d) == {"toefl-001", "gpt-001", "withheld-7"}
    assert json.loads(d["toefl-001"][7]) == {"writer": "non-native"}
    assert json.loads(d["gpt-001"][10])["settings"] == {"max_tokens": 400}
    assert d["withheld-7"][1] is None and d["withheld-7"][2] == "2eff6d49a1204b5240e435b48883f78c2507de20fe6ea67e80c35add77a3c6c2"
    assert d["toefl-001"][2] == text_sha256(d["toefl-001"][1])
    assert d["gpt-001"][11] == "docs"  # corpus defaults to the file stem


def test_schema_doc_csv_example_imports(tmp_path, workspace):
    f = tmp_path / "docs.csv"
    f.write_text(_blocks("csv")[0])
    import_documents(workspace, f, corpus="mine")
    d = _docs(workspace)
    assert json.loads(d["toefl-001"][7]) == {"writer": "non-native"}
    assert json.loads(d["toefl-001"][9])["licence"] == "CC BY 4.0"
    gen = json.loads(d["gpt-001"][10])
    assert gen["model"] == "gpt-4o" and gen["temperature"] == 1.0 and gen["settings"] == {"max_tokens": 400}
    assert d["gpt-001"][8] == "topic:cooking" and d["gpt-001"][11] == "mine"


def test_schema_doc_parquet_example_imports(tmp_path, workspace, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(_blocks("python")[0], {})
    import_documents(workspace, tmp_path / "corpus.parquet")
    d = _docs(workspace)
    assert json.loads(d["toefl-001"][7]) == {"writer": "non-native"}
    assert json.loads(d["gpt-001"][10])["model"] == "gpt-4o"
    assert d["toefl-001"][10] is None


def test_parquet_map_and_dotted_columns(tmp_path, workspace):
    t = pa.table({
        "id": [1, 2],
        "text": ["one text here", "another text"],
        "label": ["human", "mixed"],
        "tags": pa.array([[("writer", "native")], [("writer", "non-native")]], pa.map_(pa.string(), pa.string())),
        "provenance.licence": ["MIT", None],
    })
    pq.write_table(t, tmp_path / "c.parquet")
    import_documents(workspace, tmp_path / "c.parquet")
    d = _docs(workspace)
    assert json.loads(d["1"][7]) == {"writer": "native"} and json.loads(d["1"][9]) == {"licence": "MIT"}
    assert d["2"][3] == "mixed"


def test_duplicates_and_quirks_reported_not_dropped(tmp_path, workspace):
    f = tmp_path / "d.jsonl"
    rows = [{"id": "a", "text": "same text", "label": "human"}, {"id": "b", "text": "same text", "label": "human"},
            {"id": "c", "text": "don\u0092t \u00e2\u20ac\u2122 x", "label": "ai"}]
    f.write_text("\n".join(json.dumps(r) for r in rows))
    rep = import_documents(workspace, f)
    assert rep.documents == 3 and rep.records == 3
    assert rep.duplicates[0]["doc_ids"] == ["a", "b"]
    q = rep.suspicious_text[0]
    assert q["doc_id"] == "c" and q["control"] == ["U+0092"] and q["mojibake"]


def _bad(tmp_path, name: str, content: bytes | str) -> Path:
    p = tmp_path / name
    p.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return p


GOOD = '{"id": "ok1", "text": "fine", "label": "human"}\n'


@pytest.mark.parametrize("name,content,record,field,msg", [
    ("m.jsonl", GOOD + '{"id": "x", "text": "t", "label": "human"\n', "line 2", None, "malformed JSON"),
    ("m.jsonl", GOOD + '{"id": "x", "label": "human"}\n', "line 2", None, "text or text_sha256"),
    ("m.jsonl", GOOD + '{"text": "t", "label": "human"}\n', "line 2", "id", "missing"),
    ("m.jsonl", GOOD + '{"id": "x", "text": "t"}\n', "line 2", "label", "missing"),
    ("m.jsonl", GOOD + '{"id": "x", "text": "  \\n ", "label": "human"}\n', "line 2", "text", "empty"),
    ("m.jsonl", GOOD + '{"id": "x", "text": "t", "label": "robot"}\n', "line 2", "label", ""),
    ("m.jsonl", GOOD + '{"id": "x", "text": "t", "lable": "human", "label": "ai"}\n', "line 2", "lable", "unknown"),
    ("m.jsonl", GOOD + '{"id": "ok1", "text": "t", "label": "human"}\n', "line 2", "id", "duplicate id"),
    ("m.jsonl", GOOD + '{"id": "x", "text": "t", "text_sha256": "' + "0" * 64 + '", "label": "ai"}\n', "line 2",
     None, "does not match"),
    ("m.jsonl", GOOD.encode() + b'{"id": "x", "text": "caf\xe9", "label": "human"}\n', "line 2", "text", "UTF-8"),
    ("m.csv", 'id,text,label\nok1,fine,human\nx,"unclosed,human\n', "line 3", None, "malformed CSV"),
    ("m.csv", "id,text,label\nok1,fine,human\nx,t,human,extra\n", "line 3", None, "cells"),
    ("m.csv", "id,text,label\nok1,fine,human\nx,,human\n", "line 3", None, "text or text_sha256"),
    ("m.csv", "id,text,label\nok1,fine,human\nx,   ,human\n", "line 3", "text", "empty"),
    ("m.csv", b"id,text,label\nok1,fine,human\nx,na\xefve,ai\n", "line 3", "text", "UTF-8"),
    ("m.csv", "id,text,label,tags\nok1,fine,human,{not json}\n", "line 2", "tags", "JSON"),
])
def test_bad_input_names_file_record_field(tmp_path, workspace, name, content, record, field, msg):
    import_documents(workspace, _bad(tmp_path, "first.jsonl", '{"id": "keep", "text": "kept", "label": "ai"}'))
    before = workspace.query("SELECT * FROM documents ORDER BY ALL")
    p = _bad(tmp_path, name, content)
    with pytest.raises(InputError) as ei:
        import_documents(workspace, p)
    e = ei.value
    assert e.file == str(p) and e.record == record
    if field is not None:
        assert e.field == field
    assert msg.lower() in str(e).lower()
    assert workspace.query("SELECT * FROM documents ORDER BY ALL") == before


def test_bad_parquet_and_existing_id_with_other_text(tmp_path, workspace):
    p = _bad(tmp_path, "broken.parquet", b"PAR1 not really")
    with pytest.raises(InputError) as ei:
        import_documents(workspace, p)
    assert ei.value.file == str(p)
    f1 = _bad(tmp_path, "a.jsonl", '{"id": "d1", "text": "version one", "label": "human"}')
    import_documents(workspace, f1)
    again = import_documents(workspace, f1)
    assert again.already_present == 1 and again.documents == 0
    f2 = _bad(tmp_path, "b.jsonl", '{"id": "d1", "text": "version two", "label": "human"}')
    with pytest.raises(InputError) as ei:
        import_documents(workspace, f2)
    assert ei.value.record == "d1" and "different text" in str(ei.value)
    assert workspace.query("SELECT text FROM documents") == [("version one",)]
