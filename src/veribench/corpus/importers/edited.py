"""``veribench import edited``: human-edited versions of stored drafts, measured against the
arm's edit budget (:mod:`veribench.corpus.edits`) and stored as derived documents."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from veribench.corpus.document import Document
from veribench.corpus.edits import EditMeasure, apply_edits, diff_edits, edit_budget, measure_edit
from veribench.corpus.importers._io import iter_csv, iter_jsonl
from veribench.corpus.importers._store import validation_error
from veribench.corpus.report import ImportReport
from veribench.corpus.stored import load_documents, store_derived
from veribench.errors import InputError
from veribench.hashing import text_sha256
from veribench.protocol.model import load_protocol


class EditedRecord(BaseModel):
    """One record of an edited-drafts file (``veribench import edited``; see ``docs/robustness.md``)."""

    model_config = ConfigDict(extra="forbid")
    draft_id: str = Field(min_length=1)
    text: str
    id: str | None = None
    draft_sha256: str | None = None
    editor: str | None = None
    edited_at: str | None = None
    attestation: str | None = None
    method: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)

    @field_validator("draft_id", "id", mode="before")
    @classmethod
    def _str_id(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @field_validator("text")
    @classmethod
    def _text(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("text is empty or whitespace only")
        return v

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, v: Any) -> Any:
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except ValueError:
                raise ValueError("tags must be a JSON object") from None
        if isinstance(v, dict):
            return {str(k): str(x) for k, x in v.items() if x is not None}
        return v


def _edited_report_cls():

    @dataclass
    class EditImportReport(ImportReport):
        """An :class:`ImportReport` plus one entry per edited record: its measured edit and outcome."""

        edits: list[dict[str, Any]] = field(default_factory=list)
        budget: dict[str, Any] = field(default_factory=dict)

        def print(self, console: Any = None, *, max_rows: int = 8) -> None:
            from rich.console import Console
            from rich.markup import escape

            con = console or Console()
            super().print(con, max_rows=max_rows)
            b = self.budget
            con.print(f"edit budget of arm {b.get('arm')}: at most {100 * b['max_changed_word_share']:g}% of words "
                      f"changed, {b['sentences_added']} sentence(s) added, {b['sentences_removed']} removed; "
                      f"outside: {b['on_violation']}")
            for e in self.edits:
                m = EditMeasure.model_validate(e["measure"])
                con.print(f"  {escape(e['id'])} (draft {escape(e['draft_id'])}): {m.summary()} -> {e['outcome']}",
                          soft_wrap=True)
                for v in e["violations"]:
                    con.print(f"      outside the budget: {escape(v)}", soft_wrap=True)

    return EditImportReport


def import_edited(ws: Any, path: str | Path, *, protocol: Any = None,
                  arm: str = "C2", corpus: str | None = None) -> Any:
    """Import human-edited versions of drafts already in ``ws`` as arm ``arm`` (default C2).

    Each record (JSONL or CSV; :class:`EditedRecord`) names its draft by ``draft_id``.
    Every record is validated first (any bad record: ``InputError`` naming file, record
    and field, nothing stored). Each edit is measured (:func:`measure_edit`) and checked
    against the arm's budget (:func:`edit_budget` of the protocol, given as a path or a
    parsed :class:`~veribench.protocol.model.Protocol`; defaults without one): inside, it is stored in ``arm``; outside, it is refused or moved to the arm
    the protocol names. The derived document keeps the draft's label, kind, subgroup,
    group_key and tags, adds ``tags.derivation = "edit"``, and records
    ``provenance.source_id``, ``provenance.edits`` (spans over the draft) and
    ``provenance.derivation`` (measure, budget, outcome, editor).

    Returns:
        the stored :class:`ImportReport` (kind ``edited``) with ``edits``: one entry per
        record ``{id, draft_id, outcome, measure, violations}`` (outcome ``imported``,
        ``refused`` or ``moved:ARM``).
    """

    p = Path(path)
    if not p.is_file():
        raise InputError("file not found", file=str(p))
    if isinstance(protocol, (str, Path)):

        protocol = load_protocol(protocol)
    budget = edit_budget(protocol, arm)
    suf = p.suffix.lower()
    if suf in (".jsonl", ".ndjson", ".json"):
        rows = iter_jsonl(p)
    elif suf == ".csv":
        rows = iter_csv(p)
    else:
        raise InputError(f"unknown file type {suf!r}; use .jsonl or .csv", file=str(p))
    records: list[tuple[str, EditedRecord]] = []
    seen: dict[str, str] = {}
    for rec, row in rows:
        try:
            r = EditedRecord.model_validate(row)
        except ValidationError as e:
            raise validation_error(e, file=str(p), record=rec) from None
        rid = r.id or f"{r.draft_id}~edit"
        if rid in seen:
            raise InputError(f"duplicate id {rid!r} (first at {seen[rid]})", file=str(p), record=rec, field="id")
        seen[rid] = rec
        records.append((rec, r))
    if not records:
        raise InputError("no records found", file=str(p))
    drafts = load_documents(ws, [r.draft_id for _, r in records])
    Report = _edited_report_cls()
    per_corpus: dict[str | None, list[Any]] = {}
    entries = []
    for rec, r in records:
        d = drafts.get(r.draft_id)
        if d is None:
            raise InputError(f"draft {r.draft_id!r} is not in the workspace (import the drafts first)",
                             file=str(p), record=rec, field="draft_id")
        if d["text"] is None:
            raise InputError(f"draft {r.draft_id!r} is stored without its text; an edit cannot be measured",
                             file=str(p), record=rec, field="draft_id")
        if r.draft_sha256 and r.draft_sha256.lower() != d["text_sha256"]:
            raise InputError(f"draft_sha256 does not match the stored draft {r.draft_id!r} "
                             f"(sha256 {d['text_sha256']})", file=str(p), record=rec, field="draft_sha256")
        m = measure_edit(d["text"], r.text)
        why = budget.violations(m)
        target = arm
        outcome = "imported"
        if why:
            if budget.move_to is None:
                outcome = "refused"
            else:
                target, outcome = budget.move_to, f"moved:{budget.move_to}"
        rid = r.id or f"{r.draft_id}~edit"
        entries.append({"id": rid, "draft_id": r.draft_id, "record": rec, "outcome": outcome,
                        "measure": m.model_dump(), "violations": why})
        if outcome == "refused":
            continue
        tags = {**d["tags"], **r.tags, "derivation": "edit"}
        if why:
            tags["edit_budget"] = "over"
        gen = dict(d["generation"]) if d["generation"] else None
        if gen is not None:
            gen["post_editing"] = f"human edit ({arm}): {m.summary()}"
        prov = {"source_id": r.draft_id, "edits": [list(e) for e in diff_edits(d["text"], r.text)],
                "method": r.method or "human edit", "attestation": r.attestation,
                "derivation": {"kind": "edit", "editor": r.editor, "edited_at": r.edited_at,
                               "measure": m.model_dump(), "budget": budget.model_dump(), "outcome": outcome,
                               "violations": why, "draft_sha256": d["text_sha256"]}}
        for k in ("licence", "citation"):
            if d["provenance"].get(k) is not None:
                prov.setdefault(k, d["provenance"][k])
        try:
            doc = Document.model_validate({
                "id": rid, "text": r.text, "label": d["label"], "arm": target, "kind": d["kind"],
                "subgroup": d["subgroup"], "tags": tags, "group_key": d["group_key"],
                "provenance": {k: v for k, v in prov.items() if v is not None}, "generation": gen})
        except ValidationError as e:
            raise validation_error(e, file=str(p), record=rec) from None
        if apply_edits(d["text"], prov["edits"]) != r.text or doc.text_sha256 != text_sha256(r.text):
            raise RuntimeError(f"edit spans of {rid} do not reproduce its text (a veribench bug; nothing stored)")
        per_corpus.setdefault(corpus or d["corpus"], []).append(doc)
    report = Report(kind="edited", source=str(p), corpus=corpus, edits=entries,
                    budget={"arm": arm, **budget.model_dump()})
    entry = report.set_entry(p.name)
    entry["records"] = len(records)
    entry["documents"] = sum(len(v) for v in per_corpus.values())
    for docs in per_corpus.values():
        for doc in docs:
            entry["labels"][doc.label] = entry["labels"].get(doc.label, 0) + 1
    refused = [e["id"] for e in entries if e["outcome"] == "refused"]
    moved = [e["id"] for e in entries if e["outcome"].startswith("moved:")]
    if refused:
        report.notes.append(f"{len(refused)} edited draft(s) outside the {arm} budget refused: {', '.join(refused)}")
    if moved:
        report.notes.append(f"{len(moved)} edited draft(s) outside the {arm} budget moved to arm {budget.move_to}")
    return store_derived(ws, report, [(doc, corp) for corp, docs in per_corpus.items() for doc in docs])
