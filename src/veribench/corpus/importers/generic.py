"""Import documents from JSONL, CSV or Parquet files (schema: ``docs/corpus-schema.md``).

Each record is one :class:`veribench.corpus.Document` (the field table is in
:mod:`veribench.corpus.document`). Nested fields may be given

- as objects (JSONL, Parquet structs or maps): ``"tags": {"writer": "native"}``;
- as JSON text in one cell (CSV): ``tags`` = ``{"writer": "native"}``;
- as dotted columns (CSV, Parquet): ``tags.writer``, ``provenance.source_url``,
  ``generation.model``, ``generation.settings.max_new_tokens``.

Empty CSV cells are absent values. Ids must be unique in the file. Records with the
same text are all kept and listed as duplicates in the report; control characters and
mojibake are reported. Every problem raises :class:`InputError` naming the file, the
record (``line N`` for JSONL/CSV, ``row N`` (0-based) for Parquet) and the field, and
the import then writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from ...errors import InputError
from ..document import Document
from ..report import ImportReport, text_quirks
from ._io import iter_csv, iter_jsonl
from ._store import store_import, validation_error

FORMATS = ("jsonl", "csv", "parquet")
_NESTED = ("tags", "provenance", "generation")


def detect_format(path: Path) -> str:
    """``jsonl``, ``csv`` or ``parquet`` from the file suffix (``.json``/``.ndjson`` = jsonl)."""
    suf = path.suffix.lower()
    fmt = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet",
           ".pq": "parquet"}.get(suf)
    if fmt is None:
        raise InputError(f"unknown document file type {suf!r}; use .jsonl, .csv or .parquet", file=str(path))
    return fmt


def _iter_parquet(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    try:
        import pyarrow.parquet as pq

        table = pq.read_table(path)
    except Exception as e:  # pyarrow raises ArrowInvalid / OSError for a broken file
        raise InputError(f"cannot read Parquet: {e}", file=str(path)) from e
    for i, row in enumerate(table.to_pylist()):
        rec = f"row {i}"
        for k, v in list(row.items()):
            if isinstance(v, (bytes, bytearray)):
                try:
                    row[k] = bytes(v).decode("utf-8")
                except UnicodeDecodeError as e:
                    raise InputError(f"not valid UTF-8 (byte 0x{v[e.start]:02x} at offset {e.start})",
                                     file=str(path), record=rec, field=k) from e
            elif isinstance(v, list) and v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
                row[k] = dict(v)  # a Parquet MAP column
        yield rec, row


def _nest(row: dict[str, Any], *, file: str, record: str) -> dict[str, Any]:
    """Fold dotted columns and JSON-text cells into nested objects; drop ``None`` cells."""
    out: dict[str, Any] = {}
    for key, val in row.items():
        if val is None:
            continue
        if not isinstance(key, str):
            raise InputError("column names must be strings", file=file, record=record)
        top, _, rest = key.partition(".")
        if rest and top in _NESTED:
            parts = rest.split(".")
            d = out.setdefault(top, {})
            if not isinstance(d, dict):
                raise InputError(f"both {top!r} and {key!r} given", file=file, record=record, field=key)
            for p in parts[:-1]:
                d = d.setdefault(p, {})
            d[parts[-1]] = val
            continue
        if key in _NESTED and isinstance(val, str):
            try:
                val = json.loads(val)
            except json.JSONDecodeError as e:
                raise InputError(f"expected a JSON object in this cell: {e.msg}", file=file, record=record,
                                 field=key) from e
            if not isinstance(val, dict):
                raise InputError("expected a JSON object", file=file, record=record, field=key)
        if key in _NESTED and isinstance(out.get(key), dict) and isinstance(val, dict):
            out[key] = {**val, **out[key]}
        else:
            out[key] = val
    gen = out.get("generation")
    if isinstance(gen, dict) and isinstance(gen.get("settings"), str):
        try:
            gen["settings"] = json.loads(gen["settings"])
        except json.JSONDecodeError as e:
            raise InputError(f"expected a JSON object: {e.msg}", file=file, record=record,
                             field="generation.settings") from e
    return out


def read_documents(path: str | Path, fmt: str | None = None, corpus: str | None = None) -> tuple[ImportReport, list[Document]]:
    """Read and validate a document file; nothing is written.

    Args:
        path: the JSONL, CSV or Parquet file.
        fmt: ``jsonl``, ``csv`` or ``parquet``; default from the suffix.
        corpus: corpus name stored with each document (default: the file stem).

    Raises:
        InputError: malformed file, missing/unknown field, empty text, bad label, text
            hash mismatch, a duplicate id, or bytes that are not UTF-8.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("file not found", file=str(p))
    fmt = (fmt or detect_format(p)).lower()
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; use one of {FORMATS}", file=str(p))
    rows = {"jsonl": iter_jsonl, "csv": iter_csv, "parquet": _iter_parquet}[fmt](p)
    report = ImportReport(kind=fmt, source=str(p), corpus=corpus or p.stem)
    entry = report.set_entry(p.name)
    docs: list[Document] = []
    first_line: dict[str, str] = {}
    by_sha: dict[str, list[str]] = {}
    for rec, row in rows:
        data = _nest(row, file=str(p), record=rec)
        try:
            doc = Document.model_validate(data)
        except ValidationError as e:
            raise validation_error(e, file=str(p), record=rec) from None
        if doc.id in first_line:
            raise InputError(f"duplicate id {doc.id!r} (first at {first_line[doc.id]})", file=str(p), record=rec,
                             field="id")
        first_line[doc.id] = rec
        docs.append(doc)
        entry["records"] += 1
        entry["labels"][doc.label] = entry["labels"].get(doc.label, 0) + 1
        by_sha.setdefault(doc.text_sha256, []).append(doc.id)
        if doc.text is not None:
            q = text_quirks(doc.text)
            if q:
                report.suspicious_text.append({"doc_id": doc.id, "record": rec, **q})
    if not docs:
        raise InputError("no records found", file=str(p))
    entry["documents"] = len(docs)
    for sha, ids in by_sha.items():
        if len(ids) > 1:
            report.duplicates.append({"set": p.name, "text_sha256": sha, "doc_ids": ids, "kept": "all"})
    return report, docs


def import_documents(ws: Any, path: str | Path, fmt: str | None = None, corpus: str | None = None) -> ImportReport:
    """Import a JSONL/CSV/Parquet document file into ``ws`` (all or nothing)."""
    report, docs = read_documents(path, fmt, corpus)
    return store_import(ws, report, docs)
