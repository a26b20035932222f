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
from typing import Any, Sequence

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


def _doc_rows(docs: Sequence[Document], corpus: str | None, import_id: str):
    import pyarrow as pa

    cols: dict[str, list[Any]] = {k: [] for k in ("doc_id", "corpus", "text", "text_sha256", "label", "arm", "kind",
                                                  "subgroup", "tags", "group_key", "provenance", "generation",
                                                  "import_id")}
    for d in docs:
        cols["doc_id"].append(d.id)
        cols["corpus"].append(corpus)
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


def new_import_id(kind: str) -> str:
    return f"{kind}-{datetime.now().strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"


def store_import(
    ws: Any,
    report: ImportReport,
    docs: Sequence[Document] = (),
    batches: Sequence[ScoreBatch] = (),
    submitted_texts: dict[str, str] | None = None,
) -> ImportReport:
    """Write documents, scores, submitted texts and the report in one transaction.

    A document whose id is already stored is skipped when its text hash and label
    match (counted in ``report.already_present``); otherwise ``InputError`` is raised
    and nothing is written. Stored scores are never overwritten (the cache rule).

    Returns:
        ``report`` with ``import_id``, ``documents`` and ``already_present`` filled.
    """
    from ...store.workspace import now_utc

    import_id = new_import_id(report.kind)
    report.import_id = import_id
    docs = list(docs)
    with ws.transaction() as con:
        con.execute(SUBMITTED_TEXTS_SQL)
        present: set[str] = set()
        if docs:
            tbl = _doc_rows(docs, report.corpus, import_id)
            view = "_vb_import_docs"
            con.register(view, tbl)
            try:
                clash = con.execute(
                    f"SELECT n.doc_id, d.text_sha256, n.text_sha256, d.label, n.label FROM {view} n "
                    "JOIN documents d USING (doc_id) ORDER BY n.doc_id"
                ).fetchall()
                for doc_id, old_sha, new_sha, old_label, new_label in clash:
                    if old_sha != new_sha or old_label != new_label:
                        what = "text" if old_sha != new_sha else f"label ({old_label} stored, {new_label} given)"
                        raise InputError(
                            f"document id already in the workspace with a different {what}; "
                            "use new ids or a new workspace",
                            file=report.source, record=doc_id, field="id" if old_sha != new_sha else "label",
                        )
                    present.add(doc_id)
                con.execute(f"INSERT INTO documents SELECT * FROM {view} WHERE doc_id NOT IN "
                            "(SELECT doc_id FROM documents)")
            finally:
                con.unregister(view)
        report.already_present = len(present)
        report.documents = len(docs) - len(present)
        _log_import(con, report, import_id)
        for b in batches:
            ws.put_scores(b.spec, b.items, links=b.links, scanned_at=b.scanned_at)
        if submitted_texts:
            import pyarrow as pa

            st = pa.table({"text_sha256": pa.array(list(submitted_texts), pa.string()),
                           "text": pa.array(list(submitted_texts.values()), pa.string())})
            con.register("_vb_submitted", st)
            try:
                con.execute("INSERT OR IGNORE INTO submitted_texts SELECT * FROM _vb_submitted")
            finally:
                con.unregister("_vb_submitted")
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
    ev.append_event(con, "import", {"import_id": import_id, "kind": report.kind, "corpus": report.corpus,
                                    "source": src},
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
