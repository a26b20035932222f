"""Writing an import to a workspace: all of it in one transaction, or nothing.

Importers validate every record first and hand over documents, score batches and the
report; :func:`store_import` then writes them through the one logged write path
(:mod:`veribench.store.writes`) inside one :meth:`Workspace.transaction`, so a failure at
any point leaves the workspace exactly as it was, and the import's event covers every
document it stored. Besides documents and scores an import may keep ``submitted_texts``:
the exact texts detectors saw when they differ from the corpus text (doubled, truncated or
substituted inputs), so every flagged score can be inspected.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa

from veribench.corpus.document import Document
from veribench.corpus.report import ImportReport
from veribench.errors import InputError, close_matches, did_you_mean
from veribench.protocol import arm_rules
from veribench.protocol.arm_rules import ArmRules
from veribench.records import ScoreResult
from veribench.spec import Spec
from veribench.store import writes
from veribench.store.commitments import committed_arm_rules
from veribench.store.sql import arrow_view
from veribench.store.writes import UPDATABLE_FIELDS as CONFLICT_FIELDS
from veribench.store.writes import json_text as _json
from veribench.store.writes import new_import_id
from veribench.text.hazards import text_hazards


@dataclass
class ScoreBatch:
    """Scores of one detector spec (and one scan date) to store.

    Attributes:
        spec: the detector spec.
        items: ``(submitted text sha256, ScoreResult)``.
        links: ``(doc_id, submitted text sha256)`` for the ``submissions`` table.
        scanned_at: scan date; ``None`` = now.
        replace: a rescan: these rows become the newest scan of their (spec, text) and the
            rows they replace move to ``scores_superseded`` (``put_scores(replace=True)``).
    """

    spec: Spec
    items: list[tuple[str, ScoreResult]] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)
    scanned_at: datetime | None = None
    replace: bool = False


def apply_arm_rules(doc: Document, rules: ArmRules, *, file: str, record: Any) -> Document:
    """Check ``doc`` against the arm rules in force (:mod:`veribench.protocol.arm_rules`) at
    import; an undated arm-A text is marked ``provenance.date_status = "unknown"``.

    Every import applies it through :func:`store_import` or :class:`StreamWriter`, before
    anything is written.

    Returns:
        ``doc`` (marked where undated).

    Raises:
        InputError: naming ``file``, ``record``, the field and the rule broken.
    """
    view = {"label": doc.label, "arm": doc.arm, "derived": doc.source_id is not None or "derivation" in doc.tags,
            "provenance": doc.provenance.model_dump(exclude_none=True)}
    b = arm_rules.check(view, rules)
    if b is not None:
        raise InputError(b.message, file=file, record=record, field=b.field)
    if arm_rules.undated(view) and (doc.provenance.model_extra or {}).get("date_status") != arm_rules.DATE_UNKNOWN:
        doc.provenance = doc.provenance.model_copy(update={"date_status": arm_rules.DATE_UNKNOWN})
    return doc


def _doc_rows(docs: Sequence[Document], corpus: str | None, import_id: str,
              corpora: Mapping[str, str | None] | None = None):
    """Arrow rows of ``docs`` (the columns of :data:`veribench.store.writes.DOCUMENT_COLUMNS`);
    each document's corpus is ``corpora[doc_id]`` where given, else ``corpus``."""
    cols: dict[str, list[Any]] = {k: [] for k in ("doc_id", "corpus", "text", "text_sha256", "label", "arm", "kind",
                                                  "subgroup", "tags", "group_key", "provenance", "generation",
                                                  "import_id")}
    for d in docs:
        cols["doc_id"].append(d.id)
        cols["corpus"].append(corpora.get(d.id, corpus) if corpora else corpus)
        cols["text"].append(d.text)
        cols["text_sha256"].append(d.text_sha256)
        cols["label"].append(d.label)
        cols["arm"].append(d.arm)
        cols["kind"].append(d.kind)
        cols["subgroup"].append(d.subgroup)
        cols["tags"].append(_json(d.tags))
        cols["group_key"].append(d.group_key)
        cols["provenance"].append(_json(d.provenance.model_dump(exclude_none=True)))
        cols["generation"].append(_json(d.generation.model_dump(exclude_none=True)) if d.generation else None)
        cols["import_id"].append(import_id)
    return pa.table({k: pa.array(v, pa.string()) for k, v in cols.items()})


def segment_rows(docs: Sequence[Document]) -> list[tuple[str, Any]]:
    """``(doc_id, [{start, end, label}])`` of the mixed texts among ``docs``."""
    return [(d.id, [x.model_dump() for x in d.segments]) for d in docs if d.segments]


#: Document fields compared on re-import: :data:`veribench.store.writes.UPDATABLE_FIELDS`
#: (the text is the identity: a new text needs a new id).
_JSON_FIELDS = ("tags", "provenance", "generation")


def _field_value(name: str, v: Any) -> Any:
    """A stored or new column value in comparable form (JSON columns parsed)."""
    if name in _JSON_FIELDS and isinstance(v, str):
        return json.loads(v)
    return v


def _reconcile(con: Any, view: str, report: ImportReport, update: bool) -> set[str]:
    """Compare re-imported documents with the stored ones; return the ids already stored.

    A different text raises :class:`InputError`. Every other differing field of
    :data:`CONFLICT_FIELDS` is one entry ``{doc_id, field, old, new}``: applied and listed
    in ``report.document_updates`` when ``update``, else listed in
    ``report.document_conflicts`` and left as stored.
    """
    cols = ", ".join(f"d.{f}, n.{f}" for f in CONFLICT_FIELDS)
    rows = con.execute(f"SELECT n.doc_id, d.text_sha256, n.text_sha256, {cols} FROM {view} n "
                       "JOIN documents d USING (doc_id) ORDER BY n.doc_id").fetchall()
    present: set[str] = set()
    changes: list[dict[str, Any]] = []
    for doc_id, old_sha, new_sha, *vals in rows:
        if old_sha != new_sha:
            raise InputError("document id already in the workspace with a different text; use new ids or a new "
                             "workspace", file=report.source, record=doc_id, field="id")
        present.add(doc_id)
        for i, f in enumerate(CONFLICT_FIELDS):
            old, new = _field_value(f, vals[2 * i]), _field_value(f, vals[2 * i + 1])
            if old != new:
                changes.append({"doc_id": doc_id, "field": f, "old": old, "new": new})
    if not update:
        report.document_conflicts.extend({**c, "action": "kept stored value (--update applies it)"} for c in changes)
        return present
    report.document_updates.extend(changes)
    writes.update_documents(con, report.import_id, changes)
    return present


def _texts_for_hashes(con: Any, shas: set[str], known: dict[str, str]) -> dict[str, str]:
    """Texts of ``shas``: from ``known``, then stored documents and submitted texts."""
    out = {s: known[s] for s in shas if s in known}
    rest = [s for s in shas if s not in out]
    if rest:
        out.update(dict(con.execute(
            "SELECT text_sha256, any_value(text) FROM (SELECT text_sha256, text FROM documents WHERE text IS NOT NULL "
            "UNION ALL SELECT text_sha256, text FROM submitted_texts) WHERE text_sha256 IN "
            "(SELECT unnest(?::VARCHAR[])) GROUP BY text_sha256", [rest]).fetchall()))
    return out


def _add_hazards(con: Any, batches: Sequence[ScoreBatch], docs: Sequence[Document], submitted: dict[str, str]) -> None:
    """Record ``detail["hazards"]`` on every imported score (of the text the tool was sent).

    A score whose text is not stored (a fingerprint-only document) gets ``hazards: None``
    and ``hazards_reason``.
    """
    need = {sha for b in batches for sha, r in b.items if "hazards" not in (r.detail or {})}
    if not need:
        return
    known = {d.text_sha256: d.text for d in docs if d.text is not None}
    known.update(submitted)
    texts = _texts_for_hashes(con, need, known)
    found: dict[str, dict[str, Any]] = {sha: text_hazards(t) for sha, t in texts.items()}
    for b in batches:
        for sha, r in b.items:
            if "hazards" in (r.detail or {}):
                continue
            extra: dict[str, Any] = {"hazards": found.get(sha)}
            if sha not in found:
                extra["hazards_reason"] = "text not stored (fingerprint only)"
            r.detail = {**(r.detail or {}), **extra}


def store_import(
    ws: Any,
    report: ImportReport,
    docs: Sequence[Document] = (),
    batches: Sequence[ScoreBatch] = (),
    submitted_texts: dict[str, str] | None = None,
    *,
    update: bool = False,
    corpora: Mapping[str, str | None] | None = None,
) -> ImportReport:
    """Write documents, scores, submitted texts and the report in one transaction.

    ``corpora`` (doc_id -> corpus) gives documents their own corpus (derived documents keep
    their source's); others get ``report.corpus``. Every stored row is final before the
    import's event logs its fingerprint: nothing may change a row after it is logged.

    A document whose id is already stored with the same text hash is not stored again
    (counted in ``report.already_present``); each other field that differs (see
    :data:`CONFLICT_FIELDS`) is a conflict, reported one line per field and left as stored,
    or, with ``update``, applied and recorded (:func:`veribench.store.writes.update_documents`). A stored
    id with a different text raises ``InputError`` and nothing is written. Stored scores
    are never overwritten (the cache rule). Every score gets ``detail["hazards"]``.

    Returns:
        ``report`` with ``import_id``, ``documents``, ``already_present`` and the conflict
        or update lists filled.
    """
    import_id = new_import_id(report.kind)
    report.import_id = import_id
    docs = list(docs)
    with ws.transaction() as con:
        rules = committed_arm_rules(con)
        for d in docs:
            apply_arm_rules(d, rules, file=report.source, record=d.id)
        writes.begin_import(con, import_id, report.kind, report.source, report.to_dict())
        present: set[str] = set()
        if docs:
            tbl = _doc_rows(docs, report.corpus, import_id, corpora)
            with arrow_view(con, tbl, "_vb_import_docs") as view:
                present = _reconcile(con, view, report, update)
            writes.add_documents(con, tbl, segment_rows([d for d in docs if d.id not in present]))
        report.already_present = len(present)
        report.documents = len(docs) - len(present)
        _add_hazards(con, batches, docs, submitted_texts or {})
        # the import's event first (its documents are final), then the scan batches of its scores
        writes.finish_import(con, import_id, report.kind, report.corpus, report.source, report.to_dict())
        for b in batches:
            writes.put_scores(ws, b.spec, b.items, links=b.links, scanned_at=b.scanned_at, replace=b.replace)
        writes.put_submitted_texts(con, submitted_texts or {})
    return report


def validation_error(e: Any, *, file: str, record: Any) -> InputError:
    """A pydantic ``ValidationError`` as an ``InputError`` naming the first bad field.

    A required field that is missing while an unknown field of the same record is close
    to its name (:func:`veribench.errors.close_matches`) is named as the misspelling it
    is: ``field 'label': required field is missing (did you mean 'label' for 'lable'?)``;
    that unknown field is then not counted again among the record's other problems."""
    errs = e.errors()
    first = errs[0] if errs else {}
    loc = ".".join(str(x) for x in first.get("loc", ()) if x != "__root__") or None
    msg = first.get("msg", str(e))
    explained = 0
    if first.get("type") == "missing":
        msg = "required field is missing"
        parent = tuple(first.get("loc", ()))[:-1]
        extras = [str(x["loc"][-1]) for x in errs
                  if x.get("type") == "extra_forbidden" and tuple(x.get("loc", ()))[:-1] == parent and x.get("loc")]
        name = str(first.get("loc", ("",))[-1])
        close = [x for x in extras if close_matches(name, [x], n=1)]
        if close:
            best = max(close, key=lambda x: difflib.SequenceMatcher(None, name.lower(), x.lower()).ratio())
            msg += f" (did you mean {name!r} for {best!r}?)"
            explained = 1
    elif first.get("type") == "extra_forbidden":
        key = str(first.get("loc", ("",))[-1])
        top = len(first.get("loc", ())) == 1 and getattr(e, "title", "") == Document.__name__
        fields = Document.model_fields if top else {}
        hint = did_you_mean(key, fields)
        msg = "unknown field (" + (f"{hint} " if hint else "") + "see docs/corpus-schema.md)"
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    others = len(errs) - 1 - explained
    more = f" (and {others} more problem(s) in this record)" if others > 0 else ""
    return InputError(msg + more, file=file, record=record, field=loc)
