"""Re-importing corrected documents: every changed field is a conflict (not applied) unless
``--update``, which applies and records it; all or nothing, nothing else lost."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from veribench.cli.main import app
from veribench.corpus.importers import import_documents, import_scores, read_documents, store_import
from veribench.errors import InputError
from veribench.store import Workspace

BASE = [
    {"id": "d1", "text": "The first invented essay about a quiet harbour.", "label": "human", "arm": "A",
     "subgroup": "toefl", "group_key": "g1", "tags": {"writer": "non-native"},
     "provenance": {"source_url": "https://example.org/1", "licence": "CC-BY-4.0", "published": "2019"}},
    {"id": "d2", "text": "The second invented essay, on a mountain road.", "label": "ai", "arm": "C",
     "group_key": "g2", "generation": {"provider": "openai", "model": "gpt-4o"}},
]


def _write(path, recs):
    path.write_text("\n".join(json.dumps(r) for r in recs), encoding="utf-8")
    return path


def _corrected():
    recs = json.loads(json.dumps(BASE))
    recs[0].update(group_key="g9", subgroup="us", tags={"writer": "native"}, arm="C2", label="ai-edited-human",
                   provenance={"source_url": "https://example.org/1b", "licence": "CC-BY-4.0", "published": "2019"})
    recs[1]["generation"]["model"] = "gpt-4o-mini"
    recs.append({"id": "d3", "text": "A third, new essay.", "label": "human"})
    return recs


WANT = [("d1", "arm", "A", "C2"), ("d1", "label", "human", "ai-edited-human"), ("d1", "subgroup", "toefl", "us"),
        ("d1", "group_key", "g1", "g9"),
        ("d1", "tags", {"writer": "non-native"}, {"writer": "native"}),
        ("d1", "provenance", {"source_url": "https://example.org/1", "licence": "CC-BY-4.0", "published": "2019"},
         {"source_url": "https://example.org/1b", "licence": "CC-BY-4.0", "published": "2019"})]


def _doc(ws, doc_id):
    cols = ("label", "arm", "subgroup", "group_key", "tags", "provenance", "generation")
    row = ws.query(f"SELECT {', '.join(cols)} FROM documents WHERE doc_id = ?", [doc_id])[0]
    return {c: json.loads(v) if c in ("tags", "provenance", "generation") and v else v for c, v in zip(cols, row)}


def _as_set(entries):
    return {(e["doc_id"], e["field"], json.dumps(e["old"], sort_keys=True), json.dumps(e["new"], sort_keys=True))
            for e in entries}


def _want():
    out = {(d, f, json.dumps(o, sort_keys=True), json.dumps(n, sort_keys=True)) for d, f, o, n in WANT}
    gen = {"provider": "openai", "model": "gpt-4o", "settings": {}}
    return out | {("d2", "generation", json.dumps(gen, sort_keys=True),
                   json.dumps({**gen, "model": "gpt-4o-mini"}, sort_keys=True))}


def test_changed_fields_are_conflicts_and_not_applied(tmp_path, workspace):
    import_documents(workspace, _write(tmp_path / "v1.jsonl", BASE))
    before = {d: _doc(workspace, d) for d in ("d1", "d2")}
    rep = import_documents(workspace, _write(tmp_path / "v2.jsonl", _corrected()))
    assert _as_set(rep.document_conflicts) == _want()  # one entry per field
    assert rep.document_updates == [] and rep.already_present == 2 and rep.documents == 1
    assert {d: _doc(workspace, d) for d in ("d1", "d2")} == before  # nothing applied
    assert workspace.query("SELECT count(*) FROM documents") == [(3,)]  # the new document is stored
    stored = json.loads(workspace.query("SELECT report FROM imports ORDER BY created_at DESC LIMIT 1")[0][0])
    assert _as_set(stored["document_conflicts"]) == _want() and stored["issue_counts"]["document_conflicts"] == 7
    again = import_documents(workspace, _write(tmp_path / "v1b.jsonl", BASE))  # the same data: no conflict
    assert again.document_conflicts == [] and again.already_present == 2


def test_update_applies_and_records_each_change(tmp_path, workspace):
    import_documents(workspace, _write(tmp_path / "v1.jsonl", BASE))
    import_scores(workspace, _write(tmp_path / "s.jsonl", [{"id": "d1", "score": 0.2}, {"id": "d2", "score": 0.9}]),
                  detector="Tool")
    scores_before = workspace.query("SELECT * FROM scores ORDER BY ALL")
    report, docs = read_documents(_write(tmp_path / "v2.jsonl", _corrected()))
    rep = store_import(workspace, report, docs, update=True)
    assert _as_set(rep.document_updates) == _want() and rep.document_conflicts == []
    d1 = _doc(workspace, "d1")
    assert (d1["label"], d1["arm"], d1["subgroup"], d1["group_key"], d1["tags"]) == (
        "ai-edited-human", "C2", "us", "g9", {"writer": "native"})
    assert _doc(workspace, "d2")["generation"]["model"] == "gpt-4o-mini"
    assert workspace.query("SELECT * FROM scores ORDER BY ALL") == scores_before  # scores keyed by text: kept
    stored = json.loads(workspace.query("SELECT report FROM imports WHERE import_id = ?", [rep.import_id])[0][0])
    assert _as_set(stored["document_updates"]) == _want()


def test_a_different_text_is_refused_and_nothing_is_written(tmp_path, workspace):
    import_documents(workspace, _write(tmp_path / "v1.jsonl", BASE))
    before = workspace.query("SELECT * FROM documents ORDER BY ALL")
    recs = _corrected()
    recs[1]["text"] = "A changed text."
    for update in (False, True):
        report, docs = read_documents(_write(tmp_path / "v3.jsonl", recs))
        with pytest.raises(InputError) as ei:
            store_import(workspace, report, docs, update=update)
        assert ei.value.record == "d2" and "different text" in str(ei.value)
        assert workspace.query("SELECT * FROM documents ORDER BY ALL") == before  # all or nothing


def test_cli_reports_one_line_per_field_and_update_applies(tmp_path):
    ws = tmp_path / "ws"
    runner = CliRunner()
    assert runner.invoke(app, ["import", "jsonl", str(_write(tmp_path / "v1.jsonl", BASE)), "-w", str(ws),
                               "-q"]).exit_code == 0
    v2 = _write(tmp_path / "v2.jsonl", _corrected())
    r = runner.invoke(app, ["import", "jsonl", str(v2), "-w", str(ws)], terminal_width=200)
    assert r.exit_code == 0, r.output
    assert "document conflicts: 7" in r.output
    assert "d1: group_key g1 → g9" in r.output and "d1: subgroup toefl → us" in r.output
    assert "d1: label human → ai-edited-human" in r.output and "--update" in r.output
    q = runner.invoke(app, ["import", "jsonl", str(v2), "-w", str(ws), "-q"])
    assert "7 conflicts not applied (--update applies them)" in q.output
    r = runner.invoke(app, ["import", "jsonl", str(v2), "-w", str(ws), "--update"], terminal_width=200)
    assert r.exit_code == 0 and "document updates: 7" in r.output and "d1: arm A → C2" in r.output
    with Workspace(ws, read_only=True) as w:
        assert w.query("SELECT group_key, subgroup FROM documents WHERE doc_id = 'd1'") == [("g9", "us")]
    r = runner.invoke(app, ["import", "jsonl", str(v2), "-w", str(ws), "-q"])
    assert r.exit_code == 0 and "conflicts" not in r.output  # applied: the file now matches
