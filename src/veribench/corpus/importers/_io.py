"""The one hardened reader every importer uses: text, JSON, JSONL and CSV with locations.

Every failure raises :class:`veribench.errors.InputError` naming the file, the record
(0-based index in a JSON array, ``"line N"`` in JSONL and CSV files, where line 1 of a
CSV file is its header) and, where known, the field. No input makes it raise anything
else: each hostile class below is refused here, once, for every importer.

Refused, as a class (limits are data below, with the reason for each):

- bytes that are not UTF-8, and UTF-16/UTF-32 files (a byte-order mark or NUL bytes):
  reported as an encoding problem, not as malformed JSON;
- JSON nested deeper than :data:`MAX_DEPTH` levels (Python's recursion limit is ~1,000;
  every later step walks nested values, so the limit sits well below it);
- integers longer than :data:`MAX_INT_DIGITS` digits (CPython refuses to convert longer
  ones: ``sys.int_info.default_max_str_digits``);
- duplicate keys in one JSON object (the JSON standard leaves the meaning open; Python
  would keep the last silently);
- lone surrogates (``"\\ud800"`` escapes): not Unicode characters, they cannot be
  encoded as UTF-8 or hashed;
- CSV headers with a repeated name, or with overlapping dotted names
  (``generation.settings`` beside ``generation.settings.x``).

Refuse rather than guess (issue 24): the one rule every importer applies to every record,
here and nowhere else, so that no importer changes a label or a total instead of stopping:

- a NUL character anywhere in a stored string (a key or a value, at any depth): a raw NUL
  byte in the file or a ``\\u0000`` escape (:func:`check_strings`);
- a field the format requires that is empty (:func:`check_record`, with each importer's
  list of required fields);
- a truncated record: a CSV row with fewer cells than the header, a quoted cell the file
  ends inside, a last CSV record without its line end, a JSON line cut short
  (:class:`CsvStream`, :func:`jsonl_records`);
- an extra cell: a CSV row with more cells than the header (:class:`CsvStream`);
- a file with no records: empty, a header only, blank lines only, or an empty JSON array
  (:func:`no_records`).

Each gives one :class:`~veribench.errors.InputError` naming the file, the record and the
field. The CSV and JSONL readers stream (one line at a time): memory does not grow with
the file.

Accepted: CSV cells of any length (the :mod:`csv` module's 131,072-character default
field limit is lifted), and bare ``NaN``/``Infinity``, parsed as floats and flagged, so
that each importer decides (document fields refuse them, :func:`nonfinite_paths`; score
importers report the record and leave it out).
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from veribench.errors import InputError
from veribench.text.hazards import is_blank

#: Deepest nesting accepted in any JSON value (objects and arrays count one level each).
MAX_DEPTH = 100
#: Longest integer accepted (CPython's ``int``/``str`` conversion limit).
MAX_INT_DIGITS = 4300
#: Largest CSV cell, in characters (Python's default is 131,072).
CSV_FIELD_LIMIT = 2**31 - 1

csv.field_size_limit(CSV_FIELD_LIMIT)

_BAD_BYTE = re.compile("[\udc80-\udcff]")
#: What :func:`check_strings` refuses in a string: a NUL, or a surrogate.
_SURROGATE = re.compile("[\x00\ud800-\udfff]")
#: A JSON escape that decodes to NUL.
_NUL_ESCAPE = re.compile(r"\\u0000")
#: A JSON escape that may decode to a surrogate (``\\uD800``..``\\uDFFF``, any case). Text
#: with neither this nor a surrogate cannot decode to a string that holds one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32 (little-endian)"), (b"\x00\x00\xfe\xff", "UTF-32 (big-endian)"),
         (b"\xff\xfe", "UTF-16 (little-endian)"), (b"\xfe\xff", "UTF-16 (big-endian)"))
_WS = re.compile(r"[ \t\n\r]*")


def one_line(msg: object, limit: int = 300) -> str:
    """A foreign library's message as one line of at most ``limit`` characters."""
    s = " ".join(str(msg).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, max(0, pos)) + 1


def read_text(path: Path, *, label: str | None = None) -> str:
    """The file's text, decoded as UTF-8 (a leading UTF-8 BOM is dropped).

    Bytes that are not UTF-8 are kept as lone surrogates (``surrogateescape``) so the
    caller can name the record and field that holds them (:func:`check_strings`).

    Raises:
        InputError: the file cannot be read, or it is UTF-16/UTF-32 (a byte-order mark,
            or NUL bytes, which UTF-8 text never holds).
    """
    name = label or str(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read: {one_line(e.strerror or e)}", file=name) from e
    for bom, enc in _BOMS:
        if data.startswith(bom):
            raise InputError(f"the file is encoded as {enc} (byte-order mark {bom.hex(' ')}), not UTF-8; "
                             "re-save it as UTF-8", file=name, record="line 1")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise InputError(f"NUL byte at byte offset {nul}: the file looks like UTF-16 or UTF-32 (or binary), "
                         "not UTF-8 text; re-save it as UTF-8", file=name, record=f"line {line}")
    return data.decode("utf-8", errors="surrogateescape")


def check_strings(value: Any, *, file: str, record: Any, field: str | None = None, bad_bytes: bool = True) -> None:
    """Raise ``InputError`` if any string (key or value) inside ``value`` holds a NUL or a surrogate.

    A surrogate from ``surrogateescape`` (U+DC80..U+DCFF, in text read by :func:`read_text`
    from bytes that were not UTF-8) is reported as a bad byte; any other is a lone
    surrogate written as a JSON escape (``"\\ud800"``). ``bad_bytes=False`` says the text
    ``value`` was decoded from had no undecodable byte (:func:`has_bad_bytes`), so a
    U+DC80..U+DCFF can only be an escape too. Iterative: any depth.
    """
    for path, s in _strings(value, field):
        m = _SURROGATE.search(s)
        if m:
            cp = ord(m.group())
            if cp == 0:
                raise InputError(f"NUL character at character {m.start()}: a stored text or name cannot hold one "
                                 "(a corrupted or binary file?); remove it", file=file, record=record, field=path)
            if bad_bytes and _BAD_BYTE.match(m.group()):
                msg = (f"not valid UTF-8 (byte 0x{cp - 0xDC00:02x} at character {m.start()}); "
                       "re-save the file as UTF-8")
            else:
                msg = (f"lone surrogate U+{cp:04X} at character {m.start()} (an unpaired UTF-16 escape such as "
                       f"\\u{cp:04x}): not a Unicode character, so the text cannot be stored or hashed")
            raise InputError(msg, file=file, record=record, field=path)


#: Kept for callers of the earlier name.
check_utf8 = check_strings


def _join(path: str | None, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _strings(value: Any, path: str | None) -> Iterator[tuple[str | None, str]]:
    stack: list[tuple[Any, str | None]] = [(value, path)]
    while stack:
        v, p = stack.pop()
        if isinstance(v, str):
            yield p, v
        elif isinstance(v, dict):
            items = list(v.items())
            for k, x in reversed(items):
                if isinstance(k, str) and _SURROGATE.search(k):
                    yield _join(p, "<key>"), k
                stack.append((x, _join(p, k)))
        elif isinstance(v, (list, tuple)):
            for i in range(len(v) - 1, -1, -1):
                stack.append((v[i], f"{p}[{i}]" if p else f"[{i}]"))


def first_bad_line(text: str) -> int | None:
    """1-based line of the first non-UTF-8 byte in ``text`` (from :func:`read_text`)."""
    m = _BAD_BYTE.search(text)
    return None if m is None else _line_of(text, m.start())


def has_bad_bytes(text: str) -> bool:
    """True when :func:`read_text` met bytes that are not UTF-8."""
    return _BAD_BYTE.search(text) is not None


def depth_path(obj: Any, limit: int = MAX_DEPTH) -> str | None:
    """The path of the first value nested deeper than ``limit`` levels, or ``None``. Iterative."""
    stack: list[tuple[Any, int, str]] = [(obj, 0, "")]
    while stack:
        v, d, p = stack.pop()
        if isinstance(v, (dict, list)):
            if d + 1 > limit:
                return p or "(top level)"
            items = v.items() if isinstance(v, dict) else enumerate(v)
            for k, x in items:
                if isinstance(x, (dict, list)):
                    stack.append((x, d + 1, _join(p, k) if isinstance(v, dict) else f"{p}[{k}]"))
    return None


def _deep_position(text: str, start: int, limit: int) -> int | None:
    """Offset where bracket nesting first exceeds ``limit`` (strings skipped), or ``None``."""
    depth, i, n, in_str = 0, start, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            if c == "\\":
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "[{":
            depth += 1
            if depth > limit:
                return i
        elif c in "]}":
            depth -= 1
        i += 1
    return None


class _Refused(Exception):
    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.message, self.field = message, field


def _pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in items:
        if k in out:
            raise _Refused(f"duplicate key {k!r} in one JSON object (which value is meant is undefined); "
                           "keep one", field=k)
        out[k] = v
    return out


def _parse_int(s: str) -> int:
    digits = len(s) - (s[0] == "-")
    if digits > MAX_INT_DIGITS:
        raise _Refused(f"integer with {digits:,} digits (at most {MAX_INT_DIGITS:,} are accepted)")
    return int(s)


class _Decoder:
    """A strict ``json.JSONDecoder`` that also records whether NaN/Infinity were read."""

    def __init__(self) -> None:
        self.nonfinite = False

        def constant(c: str) -> float:
            self.nonfinite = True
            return float(c.replace("Infinity", "inf"))

        def parse_float(s: str) -> float:
            f = float(s)
            if math.isinf(f):  # 1e999 overflows to infinity
                self.nonfinite = True
            return f

        self.dec = json.JSONDecoder(object_pairs_hook=_pairs, parse_int=_parse_int, parse_constant=constant,
                                    parse_float=parse_float)

    def raw_decode(self, text: str, pos: int, *, file: str, record: Any, line_base: int = 0,
                   field: str | None = None) -> tuple[Any, int]:
        """Decode one JSON value starting at ``pos``; every failure becomes an ``InputError``."""
        where = (lambda p: f"line {line_base + _line_of(text, p)}") if record is None else (lambda p: record)
        try:
            return self.dec.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            ch = text[e.pos] if e.pos < len(text) else ""
            if ch and _BAD_BYTE.match(ch):
                raise InputError(f"not valid UTF-8 (byte 0x{ord(ch) - 0xDC00:02x}); re-save the file as UTF-8",
                                 file=file, record=where(e.pos), field=field) from None
            col = e.pos - text.rfind("\n", 0, e.pos)
            at = f"line {line_base + e.lineno}, column {col}" if "\n" in text else f"column {col}"
            # a syntax error is located by its line (an array index is not known past it)
            rec = record if isinstance(record, str) else f"line {line_base + e.lineno}"
            raise InputError(f"malformed JSON: {e.msg} ({at})", file=file, record=rec, field=field) from None
        except RecursionError:
            at = _deep_position(text, pos, MAX_DEPTH)
            raise InputError(f"JSON nested deeper than {MAX_DEPTH} levels (the deepest accepted)", file=file,
                             record=where(at if at is not None else pos), field=field) from None
        except _Refused as e:
            raise InputError(e.message, file=file, record=where(pos), field=e.field or field) from None
        except ValueError as e:  # any other conversion limit
            raise InputError(f"unreadable JSON value: {one_line(e)}", file=file, record=where(pos), field=field) from None


def may_hold_surrogates(text: str) -> bool:
    """False only when no string JSON-decoded from ``text`` can hold a surrogate or a NUL:
    ``text`` has none itself (no byte :func:`read_text` could not decode) and no escape of
    one. A shortcut for :func:`check_strings` over every value of a file; never a false "no"."""
    return (_SURROGATE.search(text) is not None or _SURROGATE_ESCAPE.search(text) is not None
            or _NUL_ESCAPE.search(text) is not None)


def check_value(obj: Any, *, file: str, record: Any, field: str | None = None, strings: bool = True,
                bad_bytes: bool = True) -> None:
    """Refuse ``obj`` (decoded JSON) nested deeper than :data:`MAX_DEPTH` or holding a
    surrogate (:func:`check_strings`, with its ``bad_bytes``; skipped with
    ``strings=False``, which a caller passes only when :func:`may_hold_surrogates` cleared
    the text it was decoded from).

    Raises:
        InputError: naming ``file``, ``record`` and the field path of the offending value.
    """
    p = depth_path(obj)
    if p is not None:
        raise InputError(f"JSON nested deeper than {MAX_DEPTH} levels (the deepest accepted)", file=file,
                         record=record, field=_join(field, p) if field and p != "(top level)" else (field or p))
    if strings:
        check_strings(obj, file=file, record=record, field=field, bad_bytes=bad_bytes)


def parse_json_text(text: str, *, file: str, record: Any = None, field: str | None = None) -> tuple[Any, bool]:
    """Parse one JSON value held in ``text`` (a JSONL line, a CSV cell) under every rule above.

    Returns ``(value, saw_nonfinite)``. Raises ``InputError`` naming ``file``, ``record`` and ``field``.
    """
    d = _Decoder()
    start = _WS.match(text).end()
    obj, end = d.raw_decode(text, start, file=file, record=record, field=field)
    end = _WS.match(text, end).end()
    if end != len(text):
        raise InputError(f"malformed JSON: extra data after the value (column {end + 1})", file=file, record=record,
                         field=field)
    check_value(obj, file=file, record=record, field=field, strings=may_hold_surrogates(text),
                bad_bytes=has_bad_bytes(text))
    return obj, d.nonfinite


def load_json(path: Path, *, label: str | None = None) -> Any:
    """Parse a JSON file under every rule above (bare ``NaN``/``Infinity`` are accepted).

    Args:
        label: the file name to show in errors (default ``str(path)``).

    Raises ``InputError`` naming the record (array index) and field.
    """
    return load_json_flagged(path, label=label)[0]


def load_json_flagged(path: Path, *, label: str | None = None) -> tuple[Any, bool]:
    """Like :func:`load_json`; also says whether any NaN/Infinity was parsed.

    A top-level array is read element by element, so a problem inside it names the
    0-based index of the record that holds it.
    """
    name = label or str(path)
    text = read_text(path, label=name)
    d = _Decoder()
    strings, bad = may_hold_surrogates(text), has_bad_bytes(text)
    pos = _WS.match(text).end()
    if pos >= len(text):
        raise InputError("malformed JSON: the file is empty", file=name, record="line 1")
    if text[pos] != "[":
        obj, end = d.raw_decode(text, pos, file=name, record=None)
        end = _WS.match(text, end).end()
        if end != len(text):
            raise InputError("malformed JSON: extra data after the value", file=name,
                             record=f"line {_line_of(text, end)}")
        check_value(obj, file=name, record=None, strings=strings, bad_bytes=bad)
        return obj, d.nonfinite
    out: list[Any] = []
    pos = _WS.match(text, pos + 1).end()
    if text.startswith("]", pos):
        pos += 1
    else:
        while True:
            i = len(out)
            val, pos = d.raw_decode(text, pos, file=name, record=i)
            check_value(val, file=name, record=i, strings=strings, bad_bytes=bad)
            out.append(val)
            pos = _WS.match(text, pos).end()
            if text.startswith(",", pos):
                pos = _WS.match(text, pos + 1).end()
                continue
            if text.startswith("]", pos):
                pos += 1
                break
            raise InputError(f"malformed JSON: expected ',' or ']' after record {i} (line {_line_of(text, pos)})",
                             file=name, record=i)
    pos = _WS.match(text, pos).end()
    if pos != len(text):
        raise InputError("malformed JSON: extra data after the array", file=name, record=f"line {_line_of(text, pos)}")
    return out, d.nonfinite


def nothing_importable(file: str, skipped: dict[str, tuple[int, list[str]]]) -> InputError:
    """The error for a file whose every record was skipped as a known data fault (an empty
    text, ...): it holds nothing to import, like a file with no records, and an import of
    0 documents is never recorded. ``skipped``: reason -> (count, examples)."""
    why = "; ".join(f"{k}: {n} (e.g. {ex[0]})" if ex else f"{k}: {n}" for k, (n, ex) in sorted(skipped.items()))
    return InputError(f"nothing to import: every record was skipped ({why}); give a file with at least one "
                      "importable record", file=file)


def no_records(file: str, record: Any = None) -> InputError:
    """The error for a file that holds no record (empty, a header only, blank lines only,
    an empty array): refused, never recorded as an import of 0 documents."""
    return InputError("no records: the file holds nothing to import (empty, a header only, or blank lines); give "
                      "the complete file", file=file, record=record)


def check_record(row: Any, *, file: str, record: Any, required: Iterable[str] = (), what: str = "the format",
                 strings: bool = True) -> None:
    """The one rule every importer applies to each record before mapping it (module docstring).

    Args:
        row: the record as read (a mapping; nested values are walked).
        required: the fields the format always fills; an empty one (missing, ``None``, or
            text that is only white space) would have to be guessed, so it is refused.
        what: the format's name, for the message (``"RAID"``).
        strings: ``False`` only where the reader already applied :func:`check_strings`
            to this record (:class:`CsvStream` does, to every row where a NUL or a bad
            byte was read).

    Raises:
        InputError: a NUL character or a surrogate in any key or value (the field path is
            named), or an empty required field.
    """
    if strings:
        check_strings(row, file=file, record=record)
    for f in required:
        v = row.get(f)
        if v is None or (isinstance(v, str) and is_blank(v)):
            raise InputError(f"empty, but {what} always fills this field: its value would have to be guessed; "
                             "fill it, or remove the record", file=file, record=record, field=f)


def _nul_in_line(raw: bytes, *, file: str, rec: str) -> InputError:
    """A raw NUL byte in a JSON line: inside a string it is a NUL in that field (named);
    elsewhere the file is UTF-16/UTF-32 or binary."""
    text = raw.replace(b"\x00", b"\\u0000").decode("utf-8", errors="surrogateescape")
    try:
        parse_json_text(text, file=file, record=rec)
    except InputError as e:
        if "NUL character" in e.reason:
            return e
    off = raw.find(b"\x00")
    return InputError(f"NUL byte at byte offset {off} of the line: the file looks like UTF-16 or UTF-32 (or binary), "
                      "not UTF-8 text; re-save it as UTF-8", file=file, record=rec)


def jsonl_records(lines: Iterable[bytes], *, file: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``("line N", object)`` for each non-blank line of JSON Lines given as raw byte
    lines (a binary file object), one line in memory at a time.

    Raises:
        InputError: a byte-order mark of UTF-16/32, a NUL (:func:`check_strings`), a line
            that is not one JSON object (a last line cut short says so), every rule of
            :func:`parse_json_text`, or no records at all (:func:`no_records`).
    """
    n = 0
    found = False
    for n, raw in enumerate(lines, start=1):
        if n == 1:
            for bom, enc in _BOMS:
                if raw.startswith(bom):
                    raise InputError(f"the file is encoded as {enc} (byte-order mark {bom.hex(' ')}), not UTF-8; "
                                     "re-save it as UTF-8", file=file, record="line 1")
            if raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
        rec = f"line {n}"
        if b"\x00" in raw:
            raise _nul_in_line(raw, file=file, rec=rec)
        line = raw.decode("utf-8", errors="surrogateescape")
        if not line.strip():
            continue
        try:
            obj, _ = parse_json_text(line, file=file, record=rec)
        except InputError as e:
            if not raw.endswith(b"\n") and e.reason.startswith("malformed JSON"):
                raise InputError(f"malformed JSON: the last line ends inside its record (the file is cut short?): "
                                 f"{e.reason.removeprefix('malformed JSON: ')}", file=file, record=rec) from None
            raise
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object, got {type(obj).__name__}", file=file, record=rec)
        found = True
        yield rec, obj
    if not found:
        raise no_records(file, f"line {max(n, 1)}")


def iter_jsonl(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``("line N", object)`` for each non-blank line of a JSONL file, streamed
    (:func:`jsonl_records`)."""
    try:
        fh = open(path, "rb")
    except OSError as e:
        raise InputError(f"cannot read: {one_line(e.strerror or e)}", file=str(path)) from e
    with fh:
        yield from jsonl_records(fh, file=str(path))


def check_dotted_names(names: Iterable[str], *, file: str, record: Any) -> None:
    """Refuse a column name that is the dotted prefix of another (``a.b`` beside ``a.b.c``).

    Both cannot be folded into one nested object: the first would be a value and an
    object at once.
    """
    names = [n for n in names if isinstance(n, str)]
    have = set(names)
    for n in names:
        parts = n.split(".")
        for k in range(1, len(parts)):
            pre = ".".join(parts[:k])
            if pre in have:
                raise InputError(f"columns {pre!r} and {n!r} overlap: give {pre!r} either as one value (a JSON "
                                 "object) or as dotted columns under it, not both", file=file, record=record,
                                 field=n)


class CsvStream:
    """A CSV file read one record at a time, under the rules of the module docstring.

    ``header`` is the first row (names stripped, checked: not empty, no repeated name);
    iterating yields ``(row index, first line, {column: cell})`` for each data row (0-based
    index over the non-blank rows; ``None`` for an empty cell). Blank lines are skipped.

    Args:
        lines: text lines of the file, decoded, read with ``newline=""`` (a text file object).
        file: the file name for errors.

    Raises:
        InputError: an empty file; a malformed header; a row with fewer cells than the
            header (cut short), or more (an extra cell); a quoted cell still open at the
            end of the file; a last record without its line end (the file is cut short);
            a NUL or a byte that is not UTF-8 in a cell (:func:`check_strings`); any other
            quoting error; no data rows (:func:`no_records`).
    """

    def __init__(self, lines: Iterable[str], *, file: str):
        self.file = file
        self._last: list[Any] = ["", False]  # the last physical line read; whether a line held NUL or a bad byte
        self._reader = csv.reader(self._track(lines), strict=True)
        try:
            header = next(self._reader)
        except StopIteration:
            raise no_records(file, "line 1") from None
        except csv.Error as e:
            raise InputError(f"malformed CSV: {one_line(e)}", file=file, record="line 1") from None
        if header and header[0].startswith("\ufeff"):
            header[0] = header[0][1:]
        header = [h.strip() for h in header]
        if not any(header):
            raise InputError("empty CSV header", file=file, record="line 1")
        if self._last[1]:
            check_strings(header, file=file, record="line 1")
        dup = sorted({h for h in header if header.count(h) > 1})
        if dup:
            raise InputError(f"duplicate column name(s) {dup}", file=file, record="line 1", field=dup[0])
        self.header = header

    def _track(self, lines: Iterable[str]) -> Iterator[str]:
        last = self._last
        for line in lines:
            last[0] = line
            if "\x00" in line or _BAD_BYTE.search(line):
                last[1] = True
            yield line

    def __iter__(self) -> Iterator[tuple[int, int, dict[str, str | None]]]:
        header, file, reader, last = self.header, self.file, self._reader, self._last
        width = len(header)
        index = 0
        start = reader.line_num + 1
        while True:
            start = reader.line_num + 1
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as e:
                rec = f"line {start}"
                if "end of data" in str(e):
                    raise InputError(f"malformed CSV: truncated record: a quoted cell opened in this record is still open at the end "
                                     f"of the file (line {reader.line_num}); the file is cut short, or a quote is "
                                     "missing", file=file, record=rec) from None
                raise InputError(f"malformed CSV: {one_line(e)}", file=file, record=rec) from None
            except UnicodeDecodeError as e:
                raise InputError(f"not valid UTF-8 (byte 0x{e.object[e.start]:02x}); re-save the file as UTF-8",
                                 file=file, record=f"line {start}") from None
            if not row or (len(row) == 1 and not row[0].strip() and width > 1):
                continue
            if len(row) != width:
                if len(row) < width:
                    raise InputError(f"malformed CSV: truncated record: {len(row)} cells, but the header has {width} (a row cut "
                                     "short, or a line break outside quotes)", file=file, record=f"line {start}",
                                     field=header[len(row)])
                raise InputError(f"malformed CSV: extra cell: {len(row)} cells, but the header has {width}; each cell needs its "
                                 "column (an unquoted comma?)", file=file, record=f"line {start}",
                                 field=f"cell {width + 1}")
            out = {h: (None if c == "" else c) for h, c in zip(header, row)}
            if last[1]:
                check_strings(out, file=file, record=f"line {start}")
            yield index, start, out
            index += 1
        if not index:
            raise no_records(file, f"line {max(start, 2)}")
        end = last[0]
        if end and not end.endswith(("\n", "\r")) and end.strip():
            raise InputError(f"malformed CSV: truncated record: the last record has no line end (line {reader.line_num}); the file "
                             "is cut short (if it is complete, end it with a line break)", file=file,
                             record=f"line {start}")


def iter_csv(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``("line N", row)`` for each CSV data row, streamed (:class:`CsvStream`, whose
    errors it raises); empty cells become ``None``. Column names that overlap as dotted
    paths are refused too (:func:`check_dotted_names`). Cells may be of any length."""
    try:
        fh = open(path, encoding="utf-8", errors="surrogateescape", newline="")
        head = fh.buffer.peek(4)[:4]
    except OSError as e:
        raise InputError(f"cannot read: {one_line(e.strerror or e)}", file=str(path)) from e
    with fh:
        for bom, enc in _BOMS:
            if head.startswith(bom):
                raise InputError(f"the file is encoded as {enc} (byte-order mark {bom.hex(' ')}), not UTF-8; "
                                 "re-save it as UTF-8", file=str(path), record="line 1")
        stream = CsvStream(fh, file=str(path))
        check_dotted_names(stream.header, file=str(path), record="line 1")
        for _, line, row in stream:
            yield f"line {line}", row


def nonfinite_paths(obj: Any, path: str = "") -> Iterator[tuple[str, float]]:
    """``(dotted path, value)`` of every NaN or infinite float inside ``obj``. Iterative."""
    stack: list[tuple[Any, str]] = [(obj, path)]
    while stack:
        v, p = stack.pop()
        if isinstance(v, float):
            if not math.isfinite(v):
                yield p, v
        elif isinstance(v, dict):
            for k, x in reversed(list(v.items())):
                stack.append((x, _join(p, k)))
        elif isinstance(v, (list, tuple)):
            for i in range(len(v) - 1, -1, -1):
                stack.append((v[i], f"{p}[{i}]"))


def refuse_nonfinite(obj: Any, *, file: str, record: Any, path: str = "") -> None:
    """Raise ``InputError`` naming the first NaN or infinite number inside ``obj``.

    JSON has no NaN: such a value cannot be stored, and a silent ``null`` would change
    what the file says.
    """
    for p, v in nonfinite_paths(obj, path):
        raise InputError(f"{fmt_value(v)} is not a finite number (JSON has no NaN or Infinity); use null for "
                         "an unknown value", file=file, record=record, field=p or None)


def json_safe(obj: Any) -> Any:
    """A copy of ``obj`` with NaN/infinity replaced by ``None`` (JSON has no NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def plain_value(v: Any, *, file: str, record: Any, field: str) -> Any:
    """A value read from a columnar file (Parquet) as plain JSON data.

    Dates and times become ISO 8601 strings, durations seconds, decimals numbers, maps
    objects, bytes UTF-8 text. Raises ``InputError`` for bytes that are not UTF-8 and for
    a type JSON cannot hold.
    """
    import datetime as dt
    from decimal import Decimal

    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (dt.datetime, dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, dt.timedelta):
        return v.total_seconds()
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v)
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(f"not valid UTF-8 (byte 0x{b[e.start]:02x} at offset {e.start})", file=file,
                             record=record, field=field) from None
    if isinstance(v, dict):
        return {str(k): plain_value(x, file=file, record=record, field=_join(field, k)) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):  # a Parquet MAP
            return {str(k): plain_value(x, file=file, record=record, field=_join(field, k)) for k, x in v}
        return [plain_value(x, file=file, record=record, field=f"{field}[{i}]") for i, x in enumerate(v)]
    raise InputError(f"a value of type {type(v).__name__} cannot be stored as JSON", file=file, record=record,
                     field=field)


def fmt_value(v: Any) -> str:
    """A non-finite float as JSON-ish text (``NaN``, ``Infinity``, ``-Infinity``)."""
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, float) and math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return repr(v)
