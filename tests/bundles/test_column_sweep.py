"""Every column of the published rows follows from the log and the protocol (hole H2).

A column-by-column sweep: each column of ``scores.csv``/``scores.parquet`` and each field of
``corpus.jsonl`` is edited in turn on one row, the manifest re-hashed (a careful forger), and
``verify`` must fail. A column added to the format without a check fails this test.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.bundles.bundle_helpers import (
    corpus_lines,
    edit_scores,
    evaluate_publish_verify,
    read_scores,
    store_documents,
    verify,
    write_corpus,
)
from veribench.bundles import layout
from veribench.commit import commit
from veribench.corpus.document import Document
from veribench.records import ScoreResult
from veribench.store import Workspace


def _other(v: Any) -> Any:
    """A different value of the same type (a string gains a character; a null becomes a value)."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 1
    if isinstance(v, float):
        return v / 2 + 0.25
    if isinstance(v, str):
        return v + "x"
    if isinstance(v, dict):
        return {**v, "x": 1}
    if isinstance(v, list):
        return [*v, "x"]
    return "vendor confirmed human-written"


def _failed(bundle) -> str:
    rep = verify(bundle)
    text = "\n".join(rep.lines())
    assert not rep.ok, text
    return text


@pytest.mark.parametrize("column", [c for c, _, _ in layout.SCORE_COLUMNS])
def test_each_score_column_edited_fails(bundle, column):
    kind = {c: t for c, t, _ in layout.SCORE_COLUMNS}[column]

    def edit(c):
        v = c[column][0]
        new = _other(v)
        if v is None:
            new = {"string": "vendor confirmed human-written", "float64": 0.5, "int64": 1, "bool": True}[kind]
        c[column][0] = new

    edit_scores(bundle, edit)
    _failed(bundle)


@pytest.mark.parametrize("text", ["vendor confirmed human-written", ""])
def test_free_text_reason_fails_on_an_ok_row(bundle, text):
    def edit(c):
        i = next(i for i, s in enumerate(c["status"]) if s == "ok")
        c["reason"][i] = text

    edit_scores(bundle, edit)
    assert "reason" in _failed(bundle)


def _corpus_fields(bundle) -> list[str]:
    return sorted(corpus_lines(bundle)[0])


@pytest.mark.parametrize("field", ["arm", "corpus", "doc_id", "generation", "group_key", "kind", "label",
                                   "provenance", "subgroup", "tags", "text_sha256", "doc_seq", "fingerprint_only",
                                   "in_run", "text"])
def test_each_corpus_field_edited_fails(bundle, field):
    docs = corpus_lines(bundle)
    d = docs[0]
    d[field] = _other(d[field])
    write_corpus(bundle, docs)
    _failed(bundle)


def test_the_corpus_sweep_covers_every_field(bundle):
    swept = {"arm", "corpus", "doc_id", "generation", "group_key", "kind", "label", "provenance", "subgroup", "tags",
             "text_sha256", "doc_seq", "fingerprint_only", "in_run", "text"}
    assert set(_corpus_fields(bundle)) == swept


def test_a_failed_score_publishes_its_status_and_no_free_text(tmp_path, cli_run):
    """A failure's reason text (``detail['reason']``, not fingerprinted) is not carried: the
    bundle's ``reason`` is null, its ``status`` the logged code, and it verifies."""
    proto = tmp_path / "p.toml"
    proto.write_text('[protocol]\nname = "small"\ntag = "F-1"\n[selection]\ncorpora = ["s"]\n[[detectors]]\n'
                     'name = "DetA"\nrule = { field = "ai_probability", op = ">", threshold = 0.5 }\n')
    ws = Workspace(tmp_path / "ws")
    commit(ws, proto)
    docs = [Document(id=f"d{i:02d}", text=f"essay {i} " + "w" * i, label="human" if i % 2 else "ai")
            for i in range(12)]
    res = [ScoreResult.failed("too_short", "vendor confirmed human-written") if i == 3 else
           ScoreResult(raw=(i % 5) / 5 + 0.1, ai_probability=(i % 5) / 5 + 0.1) for i in range(12)]
    store_documents(ws, docs, "DetA", res, corpus="s")
    out = tmp_path / "bundle"
    evaluate_publish_verify(ws, proto, "F-1", out, cli_run)
    c = read_scores(out)
    i = c["doc_id"].index("d03")
    assert c["status"][i] == "too_short" and c["reason"] == [None] * len(c["reason"])
    assert b"vendor confirmed" not in (out / "scores.csv").read_bytes()
