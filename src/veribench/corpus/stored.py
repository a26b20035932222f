"""Documents as stored in a workspace: derived documents written through the import path,
and documents read back by id, listed or exported (``veribench export documents``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from veribench.corpus.importers._store import store_import
from veribench.errors import InputError
from veribench.store import writes


def store_derived(ws: Any, report: Any, items: Sequence[tuple[Any, str | None]]) -> Any:
    """Store derived documents, each in its own corpus, and the report, in one transaction.

    Args:
        items: ``(Document, corpus)`` pairs; a derived document keeps its source's corpus.

    Returns:
        ``report`` as stored by :func:`veribench.corpus.importers._store.store_import`
        (``documents`` newly stored, ``already_present`` skipped as identical).
    """

    # each row is written with its corpus, so the import's logged fingerprints cover exactly
    # the stored rows (an UPDATE after the log would break `veribench log verify`)
    return store_import(ws, report, [d for d, _ in items], corpora={d.id: c for d, c in items})


def load_documents(ws: Any, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Stored documents by id: ``{doc_id: {text, text_sha256, label, arm, ..., tags, provenance, generation}}``."""
    rows = ws.query(
        "SELECT doc_id, corpus, text, text_sha256, label, arm, kind, subgroup, tags, group_key, provenance, "
        "generation FROM documents WHERE doc_id IN (SELECT unnest(?::VARCHAR[]))", [list(dict.fromkeys(ids))])
    out = {}
    for did, corp, text, sha, label, arm, kind, sub, tags, gk, prov, gen in rows:
        out[did] = {"doc_id": did, "corpus": corp, "text": text, "text_sha256": sha, "label": label, "arm": arm,
                    "kind": kind, "subgroup": sub, "tags": json.loads(tags) if tags else {}, "group_key": gk,
                    "provenance": json.loads(prov) if prov else {}, "generation": json.loads(gen) if gen else None}
    return out


# --------------------------------------------------------------------------- export
def document_records(ws: Any, *, corpus: str | None = None) -> Iterable[dict[str, Any]]:
    """Every stored document (ordered by id) as an import-schema object plus
    ``source_id``, ``attack`` (``{name, version, params, seed}``) and ``edits``
    (``[[start, end, replacement], ...]``), ``None`` for documents that are not derived.

    The three are taken out of ``provenance`` (where they are stored), so re-importing
    the file (``veribench import jsonl``) gives the same documents. A fingerprint-only
    document (:meth:`Workspace.fingerprint_only_ids`) is written with ``text`` and
    ``edits`` null: its SHA-256 and metadata only. The documents of an import that has not
    finished (:func:`veribench.store.writes.unfinished_imports`) are left out.
    """
    with ws.lock:
        unfinished = [iid for iid, _ in writes.unfinished_imports(ws.con)]
    # the documents of an import that has not finished are not logged yet: never exported
    where, params = "WHERE coalesce(import_id, '') NOT IN (SELECT unnest(?::VARCHAR[]))", [unfinished]
    if corpus is not None:
        where, params = where + " AND corpus = ?", [unfinished, corpus]
    ids = [r[0] for r in ws.query(f"SELECT doc_id FROM documents {where} ORDER BY doc_id", params)]
    hidden = ws.fingerprint_only_ids()  # the one publication rule (CONTRACTS.md, fingerprint-only)
    for b in range(0, len(ids), 500):
        chunk = ids[b:b + 500]
        docs = load_documents(ws, chunk)
        for i in chunk:
            d = docs[i]
            prov = dict(d["provenance"])
            derived = {k: prov.pop(k, None) for k in ("source_id", "attack", "edits")}
            if i in hidden:  # neither the text nor edit spans that could carry its words
                derived["edits"] = None
            yield {"id": i, "text": None if i in hidden else d["text"], "text_sha256": d["text_sha256"], "label": d["label"], "arm": d["arm"],
                   "kind": d["kind"], "subgroup": d["subgroup"], "tags": d["tags"], "group_key": d["group_key"],
                   "provenance": prov, "generation": d["generation"], **derived}


def export_documents(ws: Any, out: str | Path, *, corpus: str | None = None) -> int:
    """Write :func:`document_records` to ``out`` as JSONL (UTF-8); returns the count.

    Raises:
        InputError: ``out`` does not end in ``.jsonl``.
    """
    p = Path(out)
    if p.suffix.lower() not in (".jsonl", ".ndjson"):
        raise InputError("export documents writes JSONL: use a .jsonl file", file=str(p))
    p.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    tmp = p.with_name(p.name + ".part")
    with tmp.open("w", encoding="utf-8") as f:
        for rec in document_records(ws, corpus=corpus):
            f.write(json.dumps(rec, ensure_ascii=False, allow_nan=False) + "\n")
            n += 1
    tmp.replace(p)
    return n
