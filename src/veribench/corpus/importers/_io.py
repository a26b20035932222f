"""Reading helpers shared by the importers: strict UTF-8, JSON/JSONL/CSV with locations.

Every failure raises :class:`veribench.errors.InputError` naming the file, the record
(0-based index in a JSON array, ``"line N"`` in JSONL and CSV files, where line 1 of a
CSV file is its header) and, where known, the field.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any, Iterator

from ...errors import InputError

_BAD_BYTE = re.compile("[\udc80-\udcff]")


def read_text(path: Path) -> str:
    """The file's text, decoded as UTF-8 (a leading BOM is dropped).

    Bytes that are not UTF-8 are kept as lone surrogates (``surrogateescape``) so the
    caller can name the record and field that holds them; call :func:`check_utf8`
    on each parsed record. Raises ``InputError`` if the file cannot be read.
    """
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", file=str(path)) from e
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.decode("utf-8", errors="surrogateescape")


def check_utf8(value: Any, *, file: str, record: Any, field: str | None = None) -> None:
    """Raise ``InputError`` if any string inside ``value`` holds bytes that were not UTF-8."""
    for path, s in _strings(value, field):
        m = _BAD_BYTE.search(s)
        if m:
            byte = ord(m.group()) - 0xDC00
            raise InputError(
                f"not valid UTF-8 (byte 0x{byte:02x} at character {m.start()}); re-save the file as UTF-8",
                file=file, record=record, field=path,
            )


def _strings(value: Any, path: str | None) -> Iterator[tuple[str | None, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str) and _BAD_BYTE.search(k):
                yield (f"{path}.{k}" if path else k), k
            yield from _strings(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]" if path else f"[{i}]")


def first_bad_line(text: str) -> int | None:
    """1-based line of the first non-UTF-8 byte in ``text`` (from :func:`read_text`)."""
    m = _BAD_BYTE.search(text)
    return None if m is None else text.count("\n", 0, m.start()) + 1


def has_bad_bytes(text: str) -> bool:
    """True when :func:`read_text` met bytes that are not UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def load_json(path: Path, *, label: str | None = None) -> Any:
    """Parse a JSON file (bare ``NaN``/``Infinity`` are accepted, as Python's json does).

    Args:
        label: the file name to show in errors (default ``str(path)``).

    Raises ``InputError`` with the line and column of a syntax error, or naming the
    record (array index) and field holding bytes that are not UTF-8.
    """
    return load_json_flagged(path, label=label)[0]


def load_json_flagged(path: Path, *, label: str | None = None) -> tuple[Any, bool]:
    """Like :func:`load_json`; also says whether any bare NaN/Infinity was parsed."""
    name = label or str(path)
    text = read_text(path)
    seen = []

    def constant(c: str) -> float:
        seen.append(c)
        return float(c.replace("Infinity", "inf"))

    try:
        obj = json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as e:
        raise InputError(f"malformed JSON: {e.msg} (line {e.lineno}, column {e.colno})", file=name,
                         record=f"line {e.lineno}") from e
    if has_bad_bytes(text):
        if isinstance(obj, list):
            for i, rec in enumerate(obj):
                check_utf8(rec, file=name, record=i)
        else:
            check_utf8(obj, file=name, record=None)
        raise InputError("not valid UTF-8; re-save the file as UTF-8", file=name,
                         record=f"line {first_bad_line(text)}")
    return obj, bool(seen)


def iter_jsonl(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``("line N", object)`` for each non-blank line of a JSONL file."""
    text = read_text(path)
    bad = has_bad_bytes(text)
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        rec = f"line {n}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"malformed JSON: {e.msg} (column {e.colno})", file=str(path), record=rec) from e
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object, got {type(obj).__name__}", file=str(path), record=rec)
        if bad:
            check_utf8(obj, file=str(path), record=rec)
        yield rec, obj


def iter_csv(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``("line N", row)`` for each CSV data row; empty cells become ``None``.

    Raises ``InputError`` for a missing header, duplicate column names, a row with more
    or fewer cells than the header, or a quoting error.
    """
    text = read_text(path)
    bad = has_bad_bytes(text)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError("empty CSV file (no header)", file=str(path)) from None
    except csv.Error as e:
        raise InputError(f"malformed CSV: {e}", file=str(path), record="line 1") from e
    header = [h.strip() for h in header]
    if not any(header):
        raise InputError("empty CSV header", file=str(path), record="line 1")
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise InputError(f"duplicate column name(s) {dup}", file=str(path), record="line 1", field=dup[0])
    check_utf8(header, file=str(path), record="line 1")
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise InputError(f"malformed CSV: {e}", file=str(path), record=f"line {start}") from e
        if not row or all(not c.strip() for c in row):
            continue
        rec = f"line {start}"
        if len(row) != len(header):
            raise InputError(f"row has {len(row)} cells but the header has {len(header)}", file=str(path), record=rec)
        out = {h: (None if c == "" else c) for h, c in zip(header, row)}
        if bad:
            check_utf8(out, file=str(path), record=rec)
        yield rec, out


def nonfinite_paths(obj: Any, path: str = "") -> Iterator[tuple[str, float]]:
    """``(dotted path, value)`` of every NaN or infinite float inside ``obj``."""
    if isinstance(obj, float):
        if not math.isfinite(obj):
            yield path, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from nonfinite_paths(v, f"{path}.{k}" if path else str(k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from nonfinite_paths(v, f"{path}[{i}]")


def json_safe(obj: Any) -> Any:
    """A copy of ``obj`` with NaN/infinity replaced by ``None`` (JSON has no NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def fmt_value(v: Any) -> str:
    """A non-finite float as JSON-ish text (``NaN``, ``Infinity``, ``-Infinity``)."""
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, float) and math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return repr(v)
