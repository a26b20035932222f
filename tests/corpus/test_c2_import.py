"""The C2 arm: edited drafts imported beside their drafts, each edit measured and held to
the protocol's budget (10% of words, no sentence added or removed by default): inside,
just over, an added sentence, a deleted sentence; refused or moved as the protocol says."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from veribench.cli.main import app
from veribench.corpus.edits import apply_edits, edit_budget, sentence_spans, word_spans
from veribench.corpus.importers.edited import import_edited
from veribench.errors import InputError, ProtocolError
from veribench.protocol.model import load_protocol, parse_protocol


@pytest.fixture()
def drafts(workspace, data_dir):
    """20 AI drafts (arm C) and their human counterparts from xsum_gpt2-xl."""
    from veribench.corpus.importers import import_fastdetectgpt

    import_fastdetectgpt(workspace, data_dir / "fastdetectgpt", ["xsum_gpt2-xl"], 20)
    rows = workspace.query("SELECT doc_id, text FROM documents WHERE label = 'ai' ORDER BY doc_id")
    return workspace, dict(rows)


def substitute(text, k):
    """Replace the first k words of ``text`` by a word it does not contain (k word changes)."""
    spans = word_spans(text)[:k]
    out = text
    for s, e in reversed(spans):
        out = out[:s] + "zebra" + out[e:]
    return out


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def cases(docs):
    ids = sorted(docs)
    out = {}
    t = docs[ids[0]]
    n = len(word_spans(t))
    out["inside"] = (ids[0], substitute(t, n // 10))           # exactly at most 10%
    t = docs[ids[1]]
    n = len(word_spans(t))
    out["just_over"] = (ids[1], substitute(t, n // 10 + 1))    # one word more
    t = docs[ids[2]]
    e1 = sentence_spans(t)[0][1]
    out["added"] = (ids[2], t[:e1] + " It was fine." + t[e1:])  # a new sentence after the first
    t = docs[ids[3]]
    sents = sentence_spans(t)
    s, e = min(sents[:-1] or sents, key=lambda x: len(t[x[0]:x[1]].split()))
    out["deleted"] = (ids[3], t[:s] + t[e:].lstrip())
    return out


def test_budget_inside_just_over_added_deleted(drafts, tmp_path):
    ws, docs = drafts
    c = cases(docs)
    f = write(tmp_path / "edited.jsonl", [{"draft_id": d, "text": t, "id": f"edit-{k}", "editor": "ed1"}
                                         for k, (d, t) in c.items()])
    rep = import_edited(ws, f)
    by = {e["id"]: e for e in rep.edits}
    assert by["edit-inside"]["outcome"] == "imported" and not by["edit-inside"]["violations"]
    m = by["edit-inside"]["measure"]
    assert m["words_changed"] == m["draft_words"] // 10 and m["changed_word_share"] <= 0.10
    assert by["edit-just_over"]["outcome"] == "refused"
    assert "words changed" in by["edit-just_over"]["violations"][0]
    assert by["edit-added"]["outcome"] == "refused", by["edit-added"]
    assert by["edit-added"]["measure"]["sentences_added"] == 1
    assert any("added" in v for v in by["edit-added"]["violations"])
    assert by["edit-added"]["measure"]["changed_word_share"] <= 0.10  # refused for the sentence alone
    assert by["edit-deleted"]["outcome"] == "refused" and by["edit-deleted"]["measure"]["sentences_removed"] == 1
    assert rep.documents == 1
    stored = ws.query("SELECT doc_id, arm, label, text, tags, provenance FROM documents WHERE arm = 'C2'")
    assert [r[0] for r in stored] == ["edit-inside"]
    _, arm, label, text, tags, prov = stored[0]
    prov, tags = json.loads(prov), json.loads(tags)
    assert label == "ai" and tags["derivation"] == "edit" and prov["source_id"] == c["inside"][0]
    assert apply_edits(docs[c["inside"][0]], prov["edits"]) == text
    assert prov["derivation"]["measure"] == m and prov["derivation"]["editor"] == "ed1"
    # the import report, listing each record with its measured edit, is stored
    (report,) = ws.query("SELECT report FROM imports WHERE kind = 'edited'")[0]
    assert {e["id"]: e["outcome"] for e in json.loads(report)["edits"]} == {k: v["outcome"] for k, v in by.items()}


def test_protocol_moves_or_widens(drafts, tmp_path):
    ws, docs = drafts
    c = cases(docs)
    f = write(tmp_path / "edited.jsonl", [{"draft_id": d, "text": t, "id": f"e-{k}"} for k, (d, t) in c.items()])
    proto = tmp_path / "p.toml"
    proto.write_text('[protocol]\nname = "c2"\n[arms]\nC2 = { role = "side", edit_budget = { max_changed_word_share = 0.10, '
                     'sentences_added = 0, sentences_removed = 0 }, on_violation = "move:C2-over-budget" }\n')
    rep = import_edited(ws, f, protocol=proto)
    arms = dict(ws.query("SELECT doc_id, arm FROM documents WHERE doc_id LIKE 'e-%'"))
    assert arms == {"e-inside": "C2", "e-just_over": "C2-over-budget", "e-added": "C2-over-budget",
                    "e-deleted": "C2-over-budget"}
    (tags,) = ws.query("SELECT tags FROM documents WHERE doc_id = 'e-added'")[0]
    assert json.loads(tags)["edit_budget"] == "over"
    assert rep.documents == 4
    # The budget is the parsed protocol's [arms] entry (protocol.model validates it).
    def proto_of(arms):
        return parse_protocol({"protocol": {"name": "c2"}, "arms": arms})

    wide = edit_budget(proto_of({"C2": {"role": "side", "edit_budget": {"max_changed_word_share": 0.2,
                                                                          "sentences_added": 1}}}))
    assert (wide.max_changed_word_share, wide.sentences_added, wide.sentences_removed, wide.on_violation) == \
        (0.2, 1, 0, "refuse")
    assert edit_budget(None).max_changed_word_share == 0.10
    assert edit_budget(proto_of({"C2": "side"})).model_dump() == edit_budget(None).model_dump()
    assert edit_budget(load_protocol(proto)).move_to == "C2-over-budget"
    with pytest.raises(ProtocolError, match="arms.C2.on_violation"):
        edit_budget(proto_of({"C2": {"role": "side", "on_violation": "delete"}}))
    with pytest.raises(ProtocolError, match="max_changed_word_share"):
        edit_budget(proto_of({"C2": {"role": "side", "edit_budget": {"max_changed_word_share": 2}}}))


def test_bad_records_store_nothing(drafts, tmp_path):
    ws, docs = drafts
    d0 = sorted(docs)[0]
    n = ws.document_count()
    for rows, field in (([{"draft_id": "nope", "text": "x y"}], "draft_id"),
                        ([{"draft_id": d0, "text": "x", "colour": 1}], "colour"),
                        ([{"draft_id": d0, "text": "x", "draft_sha256": "0" * 64}], "draft_sha256"),
                        ([{"draft_id": d0, "text": "  "}], "text"),
                        ([{"draft_id": d0, "text": "a", "id": "z"}, {"draft_id": d0, "text": "b", "id": "z"}], "id")):
        with pytest.raises(InputError) as e:
            import_edited(ws, write(tmp_path / "bad.jsonl", rows))
        assert e.value.field == field and "bad.jsonl" in str(e.value)
    assert ws.document_count() == n


def test_cli_import_edited_and_export(drafts, tmp_path):
    ws, docs = drafts
    c = cases(docs)
    f = write(tmp_path / "edited.jsonl", [{"draft_id": d, "text": t} for d, t in c.values()])
    path = ws.path
    ws.close()
    runner = CliRunner()
    r = runner.invoke(app, ["import", "edited", str(f), "--workspace", str(path)])
    assert r.exit_code == 0, r.output
    assert "refused" in r.output and "imported" in r.output and "words changed" in r.output
    r = runner.invoke(app, ["import", "edited", str(f), "--workspace", str(path), "-q"])
    assert r.exit_code == 0 and "imported 1" in r.output and "refused 3" in r.output
    out = tmp_path / "docs.jsonl"
    r = runner.invoke(app, ["export", "documents", "--workspace", str(path), "--out", str(out)])
    assert r.exit_code == 0
    recs = {x["id"]: x for x in map(json.loads, out.read_text().splitlines())}
    edited = [x for x in recs.values() if x["arm"] == "C2"]
    assert len(edited) == 1 and edited[0]["attack"] is None
    assert apply_edits(recs[edited[0]["source_id"]]["text"], edited[0]["edits"]) == edited[0]["text"]
    r = runner.invoke(app, ["import", "edited", str(f), "--workspace", str(path), "--protocol",
                            str(tmp_path / "missing.toml")])
    assert r.exit_code == 1 and "missing.toml: no such file or folder" in r.output
