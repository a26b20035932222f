"""Attacks as corpus operations: ``veribench attack`` and ``export documents`` on a real
corpus; source link, spec, seed and edits stored with every derived document; reruns
idempotent; human texts attacked too; ``pairs`` for paired evaluation."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from veribench import attacks
from veribench.cli.main import app
from veribench.corpus.edits import apply_edits

CHEAP = ("homoglyph", "number", "article_deletion", "insert_paragraphs", "upper_lower", "whitespace",
         "zero_width_space", "alternative_spelling")


@pytest.fixture()
def ws_path(tmp_path, data_dir):
    runner = CliRunner()
    p = tmp_path / "ws"
    r = runner.invoke(app, ["import", "fastdetectgpt", str(data_dir / "fastdetectgpt"), "--sets", "xsum_gpt2-xl",
                            "--pairs", "15", "--workspace", str(p), "-q"])
    assert r.exit_code == 0, r.output
    return p


def export(runner, ws_path, out):
    r = runner.invoke(app, ["export", "documents", "--workspace", str(ws_path), "--out", str(out)])
    assert r.exit_code == 0, r.output
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("name", CHEAP)
def test_attack_cli_and_export(name, ws_path, tmp_path):
    runner = CliRunner()
    r = runner.invoke(app, ["attack", name, "--workspace", str(ws_path), "--seed", "11", "--corpus", "fastdetectgpt"])
    assert r.exit_code == 0, r.output
    assert f"{name}: derived 30 document(s) from 30 source(s)" in r.output
    recs = export(runner, ws_path, tmp_path / "a.jsonl")
    by_id = {x["id"]: x for x in recs}
    derived = [x for x in recs if x["source_id"]]
    assert len(derived) == 30 and len(recs) == 60
    for d in derived:
        src = by_id[d["source_id"]]
        assert d["attack"] == {"name": name, "version": "1", "params": d["attack"]["params"], "seed": 11}
        assert d["attack"]["params"] == attacks.create(name).params.model_dump()  # RAID's defaults
        assert apply_edits(src["text"], d["edits"]) == d["text"]
        assert d["label"] == src["label"] and d["arm"] == src["arm"] and d["group_key"] == src["group_key"]
        assert d["tags"]["derivation"] == "attack" and d["tags"]["attack"] == name
        assert d["provenance"]["derivation"]["spec_hash"] == attacks.create(name).spec.hash
        if src["generation"]:
            assert "attack" in d["generation"]["post_editing"]
    for x in recs:
        if not x["source_id"]:
            assert x["attack"] is None and x["edits"] is None
    # rerun: nothing new; another seed: new documents beside the old ones
    r = runner.invoke(app, ["attack", name, "--workspace", str(ws_path), "--seed", "11"])
    assert "derived 0 document(s) from 30 source(s); 30 already present" in r.output
    r = runner.invoke(app, ["attack", name, "--workspace", str(ws_path), "--seed", "12", "--label", "human"])
    assert r.exit_code == 0 and "derived 15 document(s) from 15 source(s)" in r.output
    again = export(runner, ws_path, tmp_path / "b.jsonl")
    old = {x["id"]: x for x in again}
    assert all(old[d["id"]] == d for d in derived)  # same seed -> same stored output


def test_same_seed_same_output_across_workspaces(tmp_path, data_dir):
    from veribench.corpus.importers import import_fastdetectgpt
    from veribench.store import Workspace

    out = []
    for k, sets in enumerate((["xsum_gpt2-xl"], ["xsum_gpt2-xl", "pubmed_davinci"])):
        with Workspace(tmp_path / f"w{k}") as ws:
            import_fastdetectgpt(ws, data_dir / "fastdetectgpt", sets, 10)
            attacks.attack_documents(ws, "upper_lower", {"N": 0.3}, seed=4)
            out.append(dict(ws.query("SELECT doc_id, text FROM documents WHERE doc_id LIKE '%xsum%~%'")))
    assert out[0] == out[1] and len(out[0]) == 20  # a document's draw does not depend on what else is attacked


def test_pairs_and_derived_rows(fdg_workspace):
    ws = fdg_workspace
    attacks.attack_documents(ws, "homoglyph", seed=1)
    attacks.attack_documents(ws, "zero_width_space", {"N": 0.5}, seed=1, label="ai")
    p = attacks.pairs(ws)
    assert len(p) == 60
    assert len(attacks.pairs(ws, attack="zero_width_space")) == 20
    assert set(attacks.pairs(ws, derivation="attack")) == set(p)
    rows = attacks.derived_documents(ws)
    assert {r["doc_id"]: r["source_id"] for r in rows} == p
    labels = dict(ws.query("SELECT doc_id, label FROM documents"))
    assert all(labels[r["doc_id"]] == labels[r["source_id"]] == r["label"] for r in rows)
    # derived documents are never picked as sources
    rep = attacks.attack_documents(ws, "number", seed=1)
    assert rep.selected == 40


def test_cli_errors_are_one_line(ws_path, tmp_path):
    runner = CliRunner()
    r = runner.invoke(app, ["attack", "homoglyph", "--workspace", str(ws_path), "--set", "M=1"])
    assert r.exit_code == 1 and "--set: M: unknown parameter of attack 'homoglyph'" in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["attack", "homoglif", "--workspace", str(ws_path)])
    assert r.exit_code == 1 and "Did you mean 'homoglyph'" in r.output
    r = runner.invoke(app, ["attack", "homoglyph", "--workspace", str(tmp_path / "none")])
    assert r.exit_code == 1 and "no workspace" in r.output
    r = runner.invoke(app, ["list", "attacks"])
    assert r.exit_code == 0 and "perplexity_misspelling" in r.output and '"N": 0.2' in r.output


def test_exported_documents_reimport_unchanged(ws_path, tmp_path):
    runner = CliRunner()
    runner.invoke(app, ["attack", "homoglyph", "--workspace", str(ws_path), "--set", "N=0.4"])
    a = tmp_path / "a.jsonl"
    recs = export(runner, ws_path, a)
    r = runner.invoke(app, ["import", "jsonl", str(a), "--workspace", str(tmp_path / "ws2"), "-q"])
    assert r.exit_code == 0, r.output
    assert export(runner, tmp_path / "ws2", tmp_path / "b.jsonl") == recs


def test_document_model_checks_derived_fields():
    from pydantic import ValidationError

    from veribench.corpus.document import Document

    base = {"id": "x", "text": "Hello there", "label": "ai"}
    d = Document.model_validate({**base, "source_id": "s", "edits": [[0, 1, "J"]], "tags": {"derivation": "attack"}})
    assert d.source_id == "s" and d.provenance.edits == [[0, 1, "J"]]
    # a published corpus's derived text whose source the release does not name is allowed
    assert Document.model_validate({**base, "tags": {"derivation": "paraphrase"}}).source_id is None
    for bad in ({"tags": {"derivation": "attack"}, "edits": [[0, 1, "J"]]},  # edits but no source
                {"tags": {"derivation": "attack"}, "attack": {"name": "homoglyph", "params": {}}},
                {"source_id": "s", "tags": {"derivation": "remix"}},
                {"source_id": "s", "edits": [[3, 1, "x"]]},
                {"source_id": "s", "edits": [[0, 2, "a"], [1, 3, "b"]]},
                {"source_id": "s", "provenance": {"source_id": "t"}}):
        with pytest.raises(ValidationError):
            Document.model_validate({**base, **bad})


def test_robustness_doc_lists_every_attack_with_its_defaults_and_deviations():
    from pathlib import Path

    from veribench import registry

    doc = (Path(__file__).resolve().parents[2] / "docs" / "robustness.md").read_text(encoding="utf-8")
    for name in registry.BUILTINS["attack"]:
        cls = registry.get("attack", name)
        assert f"| `{name}` |" in doc
        for k, f in cls.Settings.model_fields.items():
            v = f.default
            shown = {True: "true", False: "false"}.get(v, v) if isinstance(v, bool) else v
            assert f"`{k}={shown}`" in doc or f"{k}={shown}" in doc, (name, k)
        for d in cls.deviations:
            assert d in doc, (name, d)
