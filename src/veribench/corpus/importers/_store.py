"""Writing an import to a workspace: all of it in one transaction, or nothing.

Importers validate every record first and hand over documents, score batches and the
report; :func:`store_import` then writes them inside one :meth:`Workspace.transaction`,
so a failure at any point leaves the workspace exactly as it was.

Besides the core tables this module owns ``submitted_texts (text_sha256, text)``: the
exact texts detectors saw when they differ from the corpus text (doubled, truncated or
substituted inputs), kept so every flagged score can be inspected.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping, Sequence

from ...detectors.base import ScoreResult
from ...errors import InputError
from ...spec import Spec
from ..document import Document
from ..report import ImportReport

SUBMITTED_TEXTS_SQL = "CREATE TABLE IF NOT EXISTS submitted_texts (text_sha256 VARCHAR PRIMARY KEY, text VARCHAR)"


@dataclass
class ScoreBatch:
    """Scores of one detector spec (and one scan date) to store.

    Attributes:
        spec: the detector spec.
        items: ``(submitted text sha256, ScoreResult)``.
        links: ``(doc_id, submitted text sha256)`` for the ``submissions`` table.
        scanned_at: scan date; ``None`` = now.
    """

    spec: Spec
    items: list[tuple[str, ScoreResult]] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)
    scanned_at: datetime | None = None


def _json(obj: Any) -> str | None:
    if obj is None:
        return None
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, allow_nan=False)


def _doc_rows(docs: Sequence[Document], corpus: str | None, import_id: str,
              corpora: Mapping[str, str | None] | None = None):
    """Arrow rows of ``docs``; each document's corpus is ``corpora[doc_id]`` where given,
    else ``corpus``."""
    import pyarrow as pa

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


def put_segments(con: Any, docs: Sequence[Document]) -> None:
    """Store the segments of mixed texts (``document_segments``; kept beside ``documents`` so
    its columns stay as they are)."""
    rows = [(d.id, _json([x.model_dump() for x in d.segments])) for d in docs if d.segments]
    if rows:
        con.executemany("INSERT OR REPLACE INTO document_segments VALUES (?, ?)", rows)


def new_import_id(kind: str) -> str:
    return f"{kind}-{datetime.now().strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"


#: Document fields compared on re-import (the text is the identity: a new text needs a new id).
CONFLICT_FIELDS = ("label", "arm", "kind", "subgroup", "group_key", "tags", "provenance", "generation")
_JSON_FIELDS = ("tags", "provenance", "generation")


def _field_value(name: str, v: Any) -> Any:
    """A stored or new column value in comparable form (JSON columns parsed)."""
    if name in _JSON_FIELDS and isinstance(v, str):
        return json.loads(v)
    return v


def put_submitted_texts(con: Any, texts: dict[str, str]) -> None:
    """Keep ``{text_sha256: text}`` in ``submitted_texts`` (first copy wins), inside ``con``'s transaction."""
    con.execute(SUBMITTED_TEXTS_SQL)
    if not texts:
        return
    import pyarrow as pa

    st = pa.table({"text_sha256": pa.array(list(texts), pa.string()),
                   "text": pa.array(list(texts.values()), pa.string())})
    con.register("_vb_submitted", st)
    try:
        con.execute("INSERT OR IGNORE INTO submitted_texts SELECT * FROM _vb_submitted")
    finally:
        con.unregister("_vb_submitted")


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
    for c in changes:
        f = c["field"]
        con.execute(f"UPDATE documents SET {f} = (SELECT {f} FROM {view} WHERE doc_id = ?) WHERE doc_id = ?",
                    [c["doc_id"], c["doc_id"]])
    report.document_updates.extend(changes)
    record_document_updates(con, report.import_id, changes)
    return present


def record_document_updates(con: Any, import_id: str | None, changes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The one place where applied document corrections are recorded, inside the import's transaction.

    Each change is also listed in the import report (``document_updates``, stored in the
    ``imports`` table) and appended to the event log as a ``document_update`` event with
    the changed rows' fingerprints (:func:`veribench.store.events.log_document_update`).

    Returns:
        The event payload ``{"import_id", "updates": [{doc_id, field, old, new}]}``, or
        ``None`` when nothing changed.
    """
    if not changes:
        return None
    from ...store.events import log_document_update

    payload = {"import_id": import_id, "updates": changes}
    log_document_update(con, payload)
    return payload


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
    from ..hazards import text_hazards

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
    or, with ``update``, applied and recorded (:func:`record_document_updates`). A stored
    id with a different text raises ``InputError`` and nothing is written. Stored scores
    are never overwritten (the cache rule). Every score gets ``detail["hazards"]``.

    Returns:
        ``report`` with ``import_id``, ``documents``, ``already_present`` and the conflict
        or update lists filled.
    """
    from ...store.workspace import now_utc

    import_id = new_import_id(report.kind)
    report.import_id = import_id
    docs = list(docs)
    with ws.transaction() as con:
        con.execute(SUBMITTED_TEXTS_SQL)
        present: set[str] = set()
        if docs:
            tbl = _doc_rows(docs, report.corpus, import_id, corpora)
            from ...store.workspace import arrow_view

            with arrow_view(con, tbl, "_vb_import_docs") as view:
                present = _reconcile(con, view, report, update)
                con.execute(f"INSERT INTO documents SELECT * FROM {view} WHERE doc_id NOT IN "
                            "(SELECT doc_id FROM documents)")
                put_segments(con, [d for d in docs if d.segments and d.id not in present])
        report.already_present = len(present)
        report.documents = len(docs) - len(present)
        _add_hazards(con, batches, docs, submitted_texts or {})
        _log_import(con, report, import_id)
        for b in batches:
            ws.put_scores(b.spec, b.items, links=b.links, scanned_at=b.scanned_at)
        put_submitted_texts(con, submitted_texts or {})
        con.execute(
            "INSERT INTO imports VALUES (?, ?, ?, ?, ?)",
            [import_id, report.kind, report.source, now_utc(),
             json.dumps(report.to_dict(), ensure_ascii=False, sort_keys=True, allow_nan=False, default=str)],
        )
    return report


def _log_import(con: Any, report: ImportReport, import_id: str) -> None:
    """Append the ``import`` event: one fingerprint per document this import stored."""
    from pathlib import PurePath

    from ...store import events as ev

    rows = con.execute("SELECT doc_id, text_sha256, label, arm, kind, subgroup, corpus, group_key, tags, provenance, "
                       "generation FROM documents WHERE import_id = ?", [import_id]).fetchall()
    src = PurePath(str(report.source)).name if report.source else None  # no local path in the log
    # the corpora its documents belong to (derived documents keep their sources' corpora,
    # so one import may span several): which runs' selections this import reaches
    corpora = sorted({str(r[6]) for r in rows if r[6] is not None})
    ev.append_event(con, "import", {"import_id": import_id, "kind": report.kind, "corpus": report.corpus,
                                    "corpora": corpora, "source": src},
                    items={"doc": [(r[0], None, ev.doc_leaf(*r)) for r in rows]})


def validation_error(e: Any, *, file: str, record: Any) -> InputError:
    """A pydantic ``ValidationError`` as an ``InputError`` naming the first bad field."""
    errs = e.errors()
    first = errs[0] if errs else {}
    loc = ".".join(str(x) for x in first.get("loc", ()) if x != "__root__") or None
    msg = first.get("msg", str(e))
    if first.get("type") == "missing":
        msg = "required field is missing"
    elif first.get("type") == "extra_forbidden":
        msg = "unknown field (see docs/corpus-schema.md)"
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    more = f" (and {len(errs) - 1} more problem(s) in this record)" if len(errs) > 1 else ""
    return InputError(msg + more, file=file, record=record, field=loc)
