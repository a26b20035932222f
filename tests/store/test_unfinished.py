"""An import that has not finished (a streamed import killed mid-way) stores documents the
log does not cover yet: nothing that reads documents for numbers or export may use them."""

from __future__ import annotations

import json

import pytest

from tests.conftest import TEST_DATA
from veribench.corpus.importers.raid import import_raid
from veribench.corpus.stored import document_records
from veribench.errors import InputError
from veribench.evaluate import evaluate_workspace
from veribench.store import Workspace, writes


def _half_import(ws: Workspace) -> str:
    """A finished RAID import, then an import left unfinished (as a killed process leaves it)."""
    import_raid(ws, TEST_DATA / "public" / "raid" / "train.csv", progress=False)
    with ws.transaction() as con:
        writes.begin_import(con, "raid-killed", "raid", "train.csv", {"kind": "raid"})
        con.execute("INSERT INTO documents (doc_id, corpus, text, text_sha256, label, import_id) "
                    "VALUES ('half-1', 'raid', 'x', ?, 'human', 'raid-killed')", ["2d711642" + "0" * 56])
    return "raid-killed"


def test_evaluate_refuses_while_an_import_is_unfinished(workspace):
    iid = _half_import(workspace)
    with pytest.raises(InputError, match=f"import {iid} has not finished: its 1 documents are stored but not logged"):
        evaluate_workspace(workspace)
    assert workspace.query("SELECT count(*) FROM runs")[0][0] == 0


def test_export_leaves_out_the_documents_of_an_unfinished_import(workspace):
    _half_import(workspace)
    ids = [r["id"] for r in document_records(workspace)]
    assert "half-1" not in ids and len(ids) == 223
    assert json.dumps(ids)  # plain ids
