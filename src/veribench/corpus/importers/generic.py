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

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from veribench.corpus.document import Document
from veribench.corpus.importers._io import (
    check_dotted_names,
    check_value,
    iter_csv,
    iter_jsonl,
    one_line,
    parse_json_text,
    plain_value,
    refuse_nonfinite,
)
from veribench.corpus.importers._store import store_import, validation_error
from veribench.corpus.report import ImportReport, text_quirks
from veribench.errors import InputError

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
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
    except Exception as e:  # pyarrow raises ArrowInvalid / OSError for a broken file
        raise InputError(f"cannot read Parquet: {one_line(e)}", file=str(path)) from e
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"duplicate column name(s) {dup}", file=str(path), record="schema", field=dup[0])
    check_dotted_names(names, file=str(path), record="schema")
    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as e:  # a broken file, or a column type pyarrow cannot turn into Python values
        raise InputError(f"cannot read Parquet: {one_line(e)}", file=str(path)) from e
    for i, row in enumerate(rows):
        rec = f"row {i}"
        out = {k: plain_value(v, file=str(path), record=rec, field=k) for k, v in row.items()}
        check_value(out, file=str(path), record=rec)
        yield rec, out


def _set_path(out: dict[str, Any], key: str, val: Any, *, file: str, record: str) -> None:
    parts = key.split(".")
    d = out
    for i, p in enumerate(parts[:-1]):
        nxt = d.setdefault(p, {})
        if not isinstance(nxt, dict):
            raise InputError(f"both {'.'.join(parts[:i + 1])!r} (a value) and {key!r} given", file=file,
                             record=record, field=key)
        d = nxt
    if parts[-1] in d:
        raise InputError(f"{key!r} is given twice (as a column and inside a JSON object)", file=file, record=record,
                         field=key)
    d[parts[-1]] = val


def _json_cell(val: str, *, file: str, record: str, field: str) -> dict[str, Any]:
    obj, _ = parse_json_text(val, file=file, record=record, field=field)
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object in this cell, got {type(obj).__name__}", file=file, record=record,
                         field=field)
    return obj


def _nest(row: dict[str, Any], *, file: str, record: str) -> dict[str, Any]:
    """Fold dotted columns and JSON-text cells into nested objects; drop ``None`` cells.

    A name that is the dotted prefix of another (``generation.settings`` beside
    ``generation.settings.x``) is refused: the one value would be an object and a value.
    """
    check_dotted_names([k for k, v in row.items() if v is not None], file=file, record=record)
    out: dict[str, Any] = {}
    for key, val in row.items():
        if val is None:
            continue
        if not isinstance(key, str):
            raise InputError("column names must be strings", file=file, record=record)
        top, _, rest = key.partition(".")
        if rest and top in _NESTED:
            if key == "generation.settings" and isinstance(val, str):
                val = _json_cell(val, file=file, record=record, field=key)
            _set_path(out, key, val, file=file, record=record)
            continue
        if key in _NESTED and isinstance(val, str):
            val = _json_cell(val, file=file, record=record, field=key)
        out[key] = val
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
        refuse_nonfinite(data, file=str(p), record=rec)
        try:
            doc = Document.model_validate(data)
        except ValidationError as e:
            raise validation_error(e, file=str(p), record=rec) from None
        # a string such as "nan" that the model read as a number
        refuse_nonfinite(doc.model_dump(exclude_none=True), file=str(p), record=rec)
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
