"""Arm B in the workspace: submitted texts become documents; withdrawals remove them.

:func:`import_submissions` turns every submitted, not yet imported text of the writing
store into one arm-``B`` ``human`` document (fields below) through the ordinary import path
(:func:`veribench.corpus.importers.store_import`: one transaction, an ``imports`` row and an
:class:`~veribench.corpus.report.ImportReport` whose ``process_evidence`` lists, per text,
how it was written).

==============  ==========================================================================
field           value
==============  ==========================================================================
id              ``arm-b/<invitation id>``
text            the submitted revision, as stored (kept for scoring even when only its
                fingerprint is published)
label, arm      ``human``, ``B``
kind            the register (``academic`` | ``professional`` | ``casual``)
subgroup        ``native volunteers`` | ``non-native volunteers`` (the protocol's slices)
tags            ``register``, ``english`` (native | non-native), ``first_language``
                (lower case), ``years_writing_english`` (0-4 | 5-9 | 10-19 | 20+)
group_key       the prompt id (``p-`` + 12 hex of the prompt's SHA-256)
provenance      ``method`` ("attested, with revision history"), ``attestation`` (id),
                ``published`` (submission date), ``submitted_at``, ``licence`` (CC BY 4.0
                for full text), ``fingerprint_only``, ``publication``, ``register``,
                ``prompt_id``, ``prompt``, ``target_words``, ``attestation_version``,
                ``consent_version``, ``consented_at``, ``self_report``, ``invitation_id``,
                ``process_evidence`` (:func:`.evidence.summarise`, with history)
==============  ==========================================================================

:func:`veribench.store.writes.withdraw_document` is the one place where a document is withdrawn from a workspace
and the withdrawal is logged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from veribench.corpus.document import Document, Provenance
from veribench.corpus.importers import store_import
from veribench.corpus.report import ImportReport
from veribench.errors import InputError
from veribench.rubric.write import rules, store
from veribench.rubric.write.db import WriteDB
from veribench.store import writes
from veribench.store.workspace import DB_NAME, Workspace, WorkspaceBusy


def apply_withdrawals(ws: Workspace, db: WriteDB) -> list[dict[str, Any]]:
    """Remove from the workspace every document withdrawn in the writing store and not
    removed yet (each in its own transaction, then marked in the store). Returns the
    payloads of the documents removed (withdrawals of texts never imported are marked
    without a workspace entry)."""
    done = []
    for w in store.pending_withdrawals(db):
        with ws.transaction() as con:
            p = writes.withdraw_document(con, w["doc_id"], invitation_id=w["invitation_id"], requested_at=w["requested_at"],
                                  via=w["via"])
        if p is not None:
            done.append(p)
        store.mark_withdrawal_applied(db, w["invitation_id"])
    return done


def compact_and_close(ws: Workspace) -> None:
    """Rewrite the workspace's DuckDB file so no byte of a deleted row is left, then close ``ws``.

    DuckDB marks deleted rows and reuses their blocks without zeroing them, so a withdrawn
    text would stay readable in the file. This copies every table into a fresh file
    (``COPY FROM DATABASE``) while ``ws`` still holds the workspace's lock, and puts it in
    place of the old one. ``ws`` must be this process's only connection to the workspace;
    it is closed afterwards (its connection points at the replaced file).
    """
    import os

    tmp = ws.db_path.with_name(ws.db_path.name + ".compact")
    with ws.lock:
        ws.con.execute("CHECKPOINT")
        name = ws.con.execute("SELECT current_database()").fetchone()[0]
        if tmp.exists():
            tmp.unlink()
        ws.con.execute("ATTACH ? AS vb_compact", [str(tmp)])
        try:
            ws.con.execute(f'COPY FROM DATABASE "{name}" TO vb_compact')
        finally:
            ws.con.execute("DETACH vb_compact")
        os.replace(tmp, ws.db_path)
        ws.close()


def close_after(ws: Workspace, removed: list[dict[str, Any]]) -> None:
    """Close ``ws``, compacting it first (:func:`compact_and_close`) when documents were removed."""
    if removed:
        compact_and_close(ws)
    else:
        ws.close()


def try_apply_withdrawals(workspace: str | Path, db: WriteDB) -> bool:
    """Apply pending withdrawals now when the workspace can be opened (no other process
    holds it); True when nothing is left pending. Used by the app right after a writer
    withdraws, so the server never holds the workspace for longer than that."""

    if not store.pending_withdrawals(db):
        return True
    if not (Path(workspace) / DB_NAME).exists():
        for w in store.pending_withdrawals(db):  # no workspace: nothing was imported
            store.mark_withdrawal_applied(db, w["invitation_id"])
        return True
    try:
        ws = Workspace(workspace, wait=0)  # never stall a request: the next import applies it
    except WorkspaceBusy:
        return False
    try:
        removed = apply_withdrawals(ws, db)
    except BaseException:
        ws.close()
        raise
    close_after(ws, removed)
    return not store.pending_withdrawals(db)


def _document(inv: dict[str, Any], sub: dict[str, Any]) -> Document:
    ev = sub["evidence"]
    fp_only = sub["publication"] == "fingerprint_only"
    prov = Provenance(
        method=rules.METHOD, attestation=sub["attestation_id"], published=sub["submitted_at"][:10],
        licence=None if fp_only else "CC BY 4.0",
        submitted_at=sub["submitted_at"], fingerprint_only=fp_only, publication=sub["publication"],
        register=inv["register"], prompt_id=inv["prompt_id"], prompt=inv["prompt"],
        target_words=[inv["min_words"], inv["max_words"]], attestation_version=sub["attestation_version"],
        consent_version=inv["consent_version"], consented_at=inv["consented_at"],
        self_report={"english": inv["english"], "first_language": inv["first_language"],
                     "years_writing_english": inv["years_writing_english"]},
        invitation_id=inv["invitation_id"], collected_with="veribench write", words=sub["words"],
        process_evidence=ev)
    return Document(
        id=sub["doc_id"], text=sub["text"], label="human", arm=rules.ARM, kind=inv["register"],
        subgroup=rules.SUBGROUPS[inv["english"]],
        tags={"register": inv["register"], "english": inv["english"], "first_language": inv["first_language"].lower(),
              "years_writing_english": rules.years_bucket(inv["years_writing_english"])},
        group_key=inv["prompt_id"], provenance=prov)


def evidence_row(doc: Document) -> dict[str, Any]:
    """One ``ImportReport.process_evidence`` entry: the text's evidence in numbers (no text)."""
    p = doc.provenance.model_dump()
    ev = p["process_evidence"]
    return {"doc_id": doc.id, "register": p["register"], "subgroup": doc.subgroup, "publication": p["publication"],
            "words": ev["words"], "revisions": ev["revisions"], "span_seconds": ev["span_seconds"],
            "writing_seconds": ev["writing_seconds"], "breaks": ev["breaks"],
            "large_insertions": [x["words"] for x in ev["large_insertions"]],
            "large_insertion_share": ev["large_insertion_share"],
            # None for a text submitted before the fast-insertion check existed (not measured)
            "fast_insertion_words": ev.get("fast_insertion_words"),
            "words_per_revision": ev["words_per_revision"]}


def import_submissions(ws: Workspace, db: WriteDB, *, corpus: str = rules.CORPUS) -> ImportReport:
    """Import every submitted text not yet in the workspace (all in one transaction).

    Returns the import report (``kind = "write"``), with one ``process_evidence`` entry per
    text. A text whose stored fingerprint no longer matches is refused (InputError) and
    nothing is imported.
    """

    report = ImportReport(kind="write", source=str(db.path), corpus=corpus)
    docs = []
    for p in store.pending_submissions(db):
        inv, sub = p["invitation"], p["submission"]
        doc = _document(inv, sub)
        if doc.text_sha256 != sub["text_sha256"]:
            raise InputError("the stored text no longer matches its fingerprint", file=str(db.path),
                             record=inv["invitation_id"], field="text")
        docs.append(doc)
        entry = report.set_entry(doc.subgroup or "")
        entry["records"] += 1
        entry["documents"] += 1
        entry["labels"]["human"] = entry["labels"].get("human", 0) + 1
        report.process_evidence.append(evidence_row(doc))
    n_fp = sum(1 for d in docs if d.provenance.model_dump().get("fingerprint_only"))
    if docs:
        report.notes.append(f"{n_fp} of {len(docs)} texts are fingerprint-only: their text is kept here for scoring "
                            "and never exported")
    store_import(ws, report, docs)
    store.mark_imported(db, [d.provenance.model_dump()["invitation_id"] for d in docs], report.import_id or "")
    return report


def sync(ws: Workspace, db: WriteDB, *, corpus: str = rules.CORPUS) -> tuple[ImportReport, list[dict[str, Any]]]:
    """Apply pending withdrawals, import new submissions, apply withdrawals that arrived meanwhile."""
    removed = apply_withdrawals(ws, db)
    report = import_submissions(ws, db, corpus=corpus)
    removed += apply_withdrawals(ws, db)
    return report, removed
