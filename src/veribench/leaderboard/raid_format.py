"""RAID's leaderboard files, read and written unchanged: ``predictions.json`` and ``metadata.json``.

Formats (RAID, Dugan et al., ACL 2024; https://github.com/liamdugan/raid, MIT licence):

- ``predictions.json``: what ``raid.run_detection`` returns and the README's "Leaderboard
  Submission" section writes with ``json.dump``: a JSON list of objects ``{"id": <RAID id>,
  "score": <number>}``, one per text, higher meaning more likely machine-generated (RAID's
  ``run_evaluation`` picks the threshold at the target FPR on the human texts' scores).
  Example: ``leaderboard/submissions/<name>/predictions.json`` in the repository.
- ``metadata.json``: the fields of ``leaderboard/template-metadata.json`` as
  ``leaderboard/hydrate.py`` reads them into its ``SubmissionMetadata`` dataclass:
  ``date_released``, ``detector_name``, ``contact_info`` (required) and ``website``,
  ``paper_link``, ``huggingface_link``, ``github_link`` (optional strings) and
  ``additional_metadata`` (optional; RAID's dataclass says ``dict``, submitted files also
  hold a string). Any other key is refused, as the dataclass refuses it.

On a board the ids are the board's own (its texts file), not RAID's. Every refusal is an
:class:`veribench.errors.InputError` of one line naming the source, the record (index and id)
and the field.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.ipc as paipc
from pydantic import BaseModel, ConfigDict, ValidationError

from veribench.errors import ECHO_MAX, InputError, echo, unknown_key
from veribench.hashing import no_duplicate_keys
from veribench.leaderboard import parquet_child
from veribench.leaderboard.files import write_durably

#: The keys of one record of RAID's predictions.json.
PREDICTION_FIELDS: tuple[str, ...] = ("id", "score")
#: veribench's run export columns this module reads (``veribench export scores --run``:
#: ``veribench.evaluate.run.RUN_EXPORT_COLUMNS``): the document, the detector, its status and
#: the oriented native score (higher = more likely AI, ``veribench.evaluate.ranking``).
RUN_EXPORT_FIELDS: tuple[str, ...] = ("doc_id", "detector", "status", "ranking_score")

#: The most detectors a run export read for a named detector may hold: its rows are capped at
#: this many times the set's size (a Parquet file from its footer, then counted as decoded; a
#: CSV after that many rows + 1). An export read with no detector named must hold one
#: detector: its rows are capped at the set's size (the board reads uploads so).
EXPORT_MAX_DETECTORS = 64
#: Decoded bytes a run export's row may take beyond its ``doc_id``'s UTF-8 bytes: its
#: detector's name and status (strings), its score (8 bytes), offsets and validity. A row of
#: ``veribench export scores`` takes about 60 (a detector of ~30 characters, ``ok``).
EXPORT_ROW_BYTES = 256
#: Address space the Parquet child may take beyond its baseline (pyarrow imported), the
#: upload and twice the decoded cap (its output buffer): a batch of
#: :data:`parquet_child.BATCH_ROWS` rows, the column chunk being read, Arrow's own state.
PARQUET_CHILD_SLACK = 256 * 2**20
#: Wall-clock seconds the Parquet child may run before it is killed (its CPU is capped at
#: :data:`parquet_child.CPU_SECONDS`); a legit export of 672,000 rows takes a second or two.
PARQUET_CHILD_SECONDS = 120
#: The longest header a CSV run export may have, bytes (``veribench export scores``: ~300).
CSV_HEADER_MAX = 64 * 2**10
#: IPC bytes the parent reads beyond the decoded cap: the stream's schema and end marker.
IPC_SCHEMA_BYTES = 64 * 2**10
#: Decoded bytes a run export may take beyond its rows' (:func:`max_decoded_bytes`): the
#: batches' messages (:data:`parquet_child.IPC_BATCH_BYTES` each, a batch per
#: :data:`parquet_child.BATCH_ROWS` rows or row group).
EXPORT_DECODE_SLACK = 2**20


def max_decoded_bytes(ids: Collection[str], max_rows: int) -> int:
    """The most bytes the four read columns of a run export of ``max_rows`` rows may decode
    to, for the set of ``ids``: ``max_rows`` × (the longest id's UTF-8 bytes +
    :data:`EXPORT_ROW_BYTES`) + :data:`EXPORT_DECODE_SLACK`. RAID's test set (672,000 rows,
    36-character ids): 188 MiB.
    """
    longest = max((len(i.encode("utf-8", "surrogatepass")) for i in ids), default=0)
    return max_rows * (longest + EXPORT_ROW_BYTES) + EXPORT_DECODE_SLACK


#: How to submit one detector of a run of several (the board reads a run export with no detector named).
ONE_DETECTOR_HINT = ("for a run of several detectors, write one detector's predictions with "
                     "`veribench export raid-submission --run TAG --detector NAME`")


class RaidMetadata(BaseModel):
    """RAID's ``metadata.json`` (``leaderboard/hydrate.py`` ``SubmissionMetadata``), names unchanged."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    date_released: str
    detector_name: str
    contact_info: str
    website: str | None = None
    paper_link: str | None = None
    huggingface_link: str | None = None
    github_link: str | None = None
    additional_metadata: dict[str, Any] | str | None = None


def _nonfinite(name: str) -> float:
    """``parse_constant``: NaN/Infinity become floats, refused later with their record named."""
    return float(name.replace("Infinity", "inf"))


#: The deepest nesting of arrays and objects an uploaded JSON file may have (RAID's files
#: nest 2 deep; ``additional_metadata`` a few more). Deeper is refused before parsing, so
#: that no parser recursion limit is reached.
MAX_JSON_DEPTH = 32
#: JSON values a predictions.json holds per text of the set: the record (an object), its id
#: and its score. A valid file of ``n`` texts holds exactly ``3 n`` values besides its list.
PREDICTION_VALUES_PER_TEXT = 3
#: Values a predictions.json may hold beyond ``PREDICTION_VALUES_PER_TEXT`` per text, so that
#: a file with a few stray records or fields gets its own error (the duplicate or unknown id,
#: the unknown field) rather than the cap's.
PREDICTION_VALUES_SLACK = 64
#: The most JSON values a metadata.json may hold (RAID's template has 7 fields; the values
#: of ``additional_metadata`` count too).
METADATA_MAX_VALUES = 4096


def _max_prediction_values(texts: int) -> int:
    """The most JSON values (besides the list) a predictions.json of ``texts`` texts may hold."""
    return PREDICTION_VALUES_PER_TEXT * texts + PREDICTION_VALUES_SLACK


#: A run of bytes that are no JSON structure: JSON strings (their brackets and commas are no
#: structure) and whatever lies between them, matched possessively (no backtracking state is
#: kept per byte: O(1) memory on a string of any length). It stops at a bracket, a comma or a
#: ``"`` that opens no complete string.
_SKIP = re.compile(rb'(?:[^"\[\]{},]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+')
_WHITESPACE = re.compile(rb"[ \t\n\r]*")  # JSON's whitespace (RFC 8259, section 2)


def _json_shape_ok(data: bytes, source: str, *, max_values: int, texts: int | None) -> None:
    """Refuse ``data`` (JSON as UTF-8 bytes) nested deeper than :data:`MAX_JSON_DEPTH` or
    holding more than ``max_values`` values, before anything is decoded or parsed.

    A value is an element of an array or the value of an object's member (keys are not
    counted; the top-level value neither): there are as many as commas plus non-empty arrays
    and objects, outside strings. The bytes are scanned once, in O(1) memory, and the scan
    stops at the first bracket past the depth or the first value past the cap, so a hostile
    upload costs O(``max_values``) steps whatever its size. Files whose bracket and comma
    counts (strings included: an upper bound) are within both limits are not scanned. A
    ``"`` that opens no complete string ends the scan: the parser refuses the file there.
    UTF-8 multi-byte characters hold no ASCII byte, so scanning bytes is scanning the text.

    Args:
        data: the file's bytes.
        source: the file's name, named in the error.
        max_values: the most values the file may hold.
        texts: the set's size (predictions.json: its records, the top-level array's
            elements, are named when they alone pass the cap); None: not counted.

    Raises:
        InputError: one line naming the source and the depth limit, or the records found so
            far and the set's size (``N records at least; the set has M texts``), or the cap
            on values.
    """
    opens = data.count(b"[") + data.count(b"{")
    if opens <= MAX_JSON_DEPTH and opens + data.count(b",") <= max_values:
        return
    pos, end = 0, len(data)
    depth = values = records = 0
    last_open = -1  # the position of the bracket just read; -1 after a comma or a closing one
    in_list = False  # the top-level value is an array: its elements are the records
    while True:
        m = _SKIP.match(data, pos)  # always matches, possibly nothing
        pos = m.end() if m else pos
        if pos >= end:
            return
        c = data[pos]
        if c in b"[{":
            in_list = in_list or (depth == 0 and c == ord("["))
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise InputError(f"JSON nested more than {MAX_JSON_DEPTH} levels deep", file=source)
            last_open = pos
        elif c in b",]}":
            # a comma: one more value; a closing bracket: its container's first value, if any
            if c == ord(",") or last_open < 0 or _WHITESPACE.fullmatch(data, last_open + 1, pos) is None:
                values += 1
                records += in_list and depth == 1
            if values > max_values:
                if texts is not None and records > texts:
                    msg = f"{records} records at least; the set has {texts} texts (one record each)"
                else:
                    msg = (f"{values} JSON values at least, more than the {max_values} "
                           + ("a metadata.json may hold" if texts is None else
                              f"a predictions.json of the set's {texts} texts may hold "
                              f"({PREDICTION_VALUES_PER_TEXT} a record: the object, its id and its score, "
                              f"+ {PREDICTION_VALUES_SLACK})"))
                raise InputError(msg + ": refused before parsing", file=source)
            depth -= c != ord(",")
            last_open = -1
        else:  # an unterminated string: the parser refuses it
            return
        pos += 1


def _load_json(data: bytes, source: str, *, max_values: int, texts: int | None = None) -> Any:
    """``data`` parsed as JSON; every failure one :class:`InputError` line naming ``source``.

    The shape is checked first (:func:`_json_shape_ok` with ``max_values`` and ``texts``), so
    that the parsed document holds at most ``max_values`` values besides its top-level one:
    peak memory is the decoded text plus O(``max_values``) objects, whatever the upload.
    """
    try:
        raw = data if isinstance(data, bytes | bytearray) else data.encode("utf-8")
        _json_shape_ok(raw, source, max_values=max_values, texts=texts)
        text = data.decode("utf-8-sig") if isinstance(data, bytes | bytearray) else data
        return json.loads(text, object_pairs_hook=no_duplicate_keys, parse_constant=_nonfinite)
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text (byte {e.start})", file=source) from None
    except json.JSONDecodeError as e:
        raise InputError(f"not JSON: {e.msg} (line {e.lineno}, column {e.colno})", file=source) from None
    except ValueError as e:  # a duplicate key of an object; an integer over Python's digit limit
        raise InputError(f"not JSON RAID can read: {' '.join(str(e).split())}", file=source) from None
    except RecursionError:
        raise InputError("not JSON RAID can read: nested too deeply", file=source) from None


def _score(v: Any, source: str, where: str, field: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        kind = "null" if v is None else f"a {type(v).__name__}" if not isinstance(v, str) else f"a string ({v[:40]!r})"
        raise InputError(f"the score must be a number, not {kind}", file=source, record=where, field=field)
    try:
        f = float(v)
    except OverflowError:  # an integer literal beyond a float's range (about 1.8e308)
        raise InputError(f"the score must be finite, not an integer of {len(str(abs(v)))} digits", file=source,
                         record=where, field=field) from None
    if not math.isfinite(f):
        raise InputError(f"the score must be finite, not {v!r}", file=source, record=where, field=field)
    return f


def _check_ids(pairs: Iterable[tuple[int, Any, Any]], *, source: str, ids: Collection[str], id_field: str,
               score_field: str) -> dict[str, float]:
    """``(index, id, score)`` records as ``{id: score}``: every id known, none twice, none missing."""
    known = ids if isinstance(ids, set | frozenset | dict) else set(ids)
    out: dict[str, float] = {}
    first: dict[str, int] = {}
    for i, doc_id, score in pairs:
        where = f"{i} (id {echo(doc_id)})" if isinstance(doc_id, str) else str(i)
        if not isinstance(doc_id, str):
            raise InputError(f"the id must be a string, not {'null' if doc_id is None else type(doc_id).__name__}",
                             file=source, record=where, field=id_field)
        if doc_id not in known:
            raise InputError("unknown id: not a text of this set", file=source, record=where, field=id_field)
        if doc_id in first:
            raise InputError(f"duplicate id (first at record {first[doc_id]})", file=source, record=where,
                             field=id_field)
        first[doc_id] = i
        out[doc_id] = _score(score, source, where, score_field)
    if len(out) != len(known):
        missing = sorted(set(known) - out.keys())
        raise InputError(f"{len(missing)} id(s) of the set have no prediction (every text needs a score)",
                         file=source, record=f"missing (id {echo(missing[0])})", field=id_field)
    return out


def read_predictions(data: bytes, *, source: str, ids: Collection[str]) -> dict[str, float]:
    """RAID's ``predictions.json`` as ``{id: score}``.

    Args:
        data: the file's bytes (UTF-8 JSON).
        source: the file's name, named in every error.
        ids: the set's ids; each must occur exactly once.

    Returns:
        One finite float per id (RAID's direction: higher = more likely machine-generated).

    Raises:
        InputError: not JSON, not a list, a record that is not an object or has keys other
            than ``id`` and ``score``, an id that is not a string, unknown, repeated or missing,
            a score that is not a number (a string, null, a boolean) or not finite (NaN,
            Infinity, an overflowing literal such as 1e999); before parsing, nesting past
            :data:`MAX_JSON_DEPTH` or more values than :data:`PREDICTION_VALUES_PER_TEXT` a text
            of ``ids`` + :data:`PREDICTION_VALUES_SLACK` (``N records at least; the set has M
            texts`` where the records alone pass it).
    """
    doc = _load_json(data, source, max_values=_max_prediction_values(len(ids)), texts=len(ids))
    if not isinstance(doc, list):
        raise InputError(f'RAID\'s predictions.json is a JSON list of {{"id", "score"}} objects, not a JSON '
                         f"{type(doc).__name__}", file=source)

    def records() -> Iterable[tuple[int, Any, Any]]:
        for i, rec in enumerate(doc):
            if not isinstance(rec, dict):
                raise InputError(f'a prediction is an object {{"id", "score"}}, not a JSON {type(rec).__name__}',
                                 file=source, record=i)
            where = f"{i} (id {echo(rec.get('id'))})"
            for k in rec:
                if k not in PREDICTION_FIELDS:
                    short = k if len(k) <= ECHO_MAX else k[:ECHO_MAX] + "…"
                    raise InputError(unknown_key("field", short, PREDICTION_FIELDS), file=source, record=where,
                                     field=short)
            for k in PREDICTION_FIELDS:
                if k not in rec:
                    raise InputError("required field is missing", file=source, record=where, field=k)
            yield i, rec["id"], rec["score"]

    return _check_ids(records(), source=source, ids=ids, id_field="id", score_field="score")


def read_metadata(data: bytes, *, source: str) -> RaidMetadata:
    """RAID's ``metadata.json`` as :class:`RaidMetadata`.

    Raises:
        InputError: not JSON, nested past :data:`MAX_JSON_DEPTH`, more than
            :data:`METADATA_MAX_VALUES` values, not an object, a missing required field, an
            unknown field or a field of the wrong type; one line naming the source and the field.
    """
    doc = _load_json(data, source, max_values=METADATA_MAX_VALUES)
    if not isinstance(doc, dict):
        raise InputError(f"RAID's metadata.json is a JSON object, not a JSON {type(doc).__name__}", file=source)
    try:
        return RaidMetadata.model_validate(doc)
    except ValidationError as e:
        err = e.errors()[0]
        field = str(err["loc"][0]) if err.get("loc") else None
        if err["type"] == "extra_forbidden":
            msg = unknown_key("field", field or "", RaidMetadata.model_fields) + " (RAID's template-metadata.json)"
        elif err["type"] == "missing":
            msg = "required field is missing (RAID's template-metadata.json)"
        else:
            msg = f"{err['msg']} (got {type(err.get('input')).__name__})"
        raise InputError(msg, file=source, field=field) from None


def _unreadable(e: BaseException | str) -> str:
    text = e if isinstance(e, str) else str(e)
    first = text.splitlines()[0] if text else type(e).__name__
    return f"not a veribench run export (CSV or Parquet): {first}"


def _csv_header(data: bytes, source: str) -> list[str]:
    """The CSV's column names (Python's csv module on its first record), read from at most
    :data:`CSV_HEADER_MAX` bytes: a longer header is refused (one line)."""
    head = data[:CSV_HEADER_MAX]
    if len(data) > CSV_HEADER_MAX and b"\n" not in head:
        raise InputError(f"a header longer than {CSV_HEADER_MAX // 1024} KiB: not a veribench run export",
                         file=source)
    try:
        return next(csv.reader(io.StringIO(head.decode("utf-8-sig", errors="replace"), newline="")), [])
    except csv.Error as e:
        raise InputError(_unreadable(e), file=source) from None


def _read_csv(data: bytes, source: str, *, max_rows: int, too_many: str) -> pa.Table:
    """The CSV run export's columns of :data:`RUN_EXPORT_FIELDS`, streamed: refused past
    ``max_rows`` rows, or for one of them missing or named twice in the header (read by
    :func:`_csv_header`). Only those four columns are converted (a header of 100,000 columns in
    1 MB took 860 MiB when every column was), so what is held is bounded by the upload's bytes:
    CSV text decodes to its own bytes and Arrow's offsets."""
    names = _csv_header(data, source)
    for c in RUN_EXPORT_FIELDS:
        if names.count(c) > 1:
            raise InputError(f"the column appears {names.count(c)} times; a run export holds each column once",
                             file=source, field=c)
        if c not in names:
            raise InputError("column missing (write the file with `veribench export scores --run TAG`)",
                             file=source, field=c)
    try:
        reader = pcsv.open_csv(io.BytesIO(data), convert_options=pcsv.ConvertOptions(
            include_columns=list(RUN_EXPORT_FIELDS),
            column_types={"doc_id": pa.string(), "detector": pa.string(), "status": pa.string(),
                          "ranking_score": pa.float64()}))
        batches, n = [], 0
        for batch in reader:  # streamed: stops at max_rows + 1 rows, never reads the rest
            n += batch.num_rows
            if n > max_rows:
                raise InputError(too_many, file=source)
            batches.append(batch)
        return pa.Table.from_batches(batches, schema=reader.schema)
    except InputError:
        raise
    except Exception as e:  # any failure of the Arrow reader is the file's: one line
        raise InputError(_unreadable(e), file=source) from None


def _run_child(cmd: list[str], data: bytes, cap: int) -> tuple[int, bytes, str, bool]:
    """Run ``cmd`` with ``data`` on its stdin (a temporary file: no pipe to deadlock on), read at
    most ``cap`` + 1 bytes of its stdout (killing it there) within :data:`PARQUET_CHILD_SECONDS`.

    Returns:
        ``(exit status (negative: the signal that ended it), stdout, the last line of its stderr
        (at most 200 characters), whether it was killed for its time)``.
    """
    timed_out = threading.Event()
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stderr:
        stdin.write(data)
        stdin.seek(0)
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=stderr, bufsize=0,
                                env={**os.environ, **parquet_child.CHILD_ENV})

        def kill() -> None:
            timed_out.set()
            proc.kill()

        timer = threading.Timer(PARQUET_CHILD_SECONDS, kill)
        timer.start()
        try:
            assert proc.stdout is not None
            got = bytearray()
            while len(got) <= cap and (chunk := proc.stdout.read(2**20)):  # unbuffered: a read at a time, to cap + 1
                got += chunk
            if len(got) > cap:
                proc.kill()
            rc = proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        stderr.seek(max(0, stderr.seek(0, os.SEEK_END) - 4096))
        lines = stderr.read().decode("utf-8", "replace").strip().splitlines()
    return rc, bytes(got), (lines[-1][:200] if lines else ""), timed_out.is_set()


def _decode_parquet(data: bytes, source: str, *, max_rows: int, max_bytes: int, too_many: str) -> pa.Table:
    """The Parquet run export's four columns, decoded by :mod:`parquet_child` in a child process
    (``sys.executable -I``, never a fork) whose address space is capped at its baseline + the
    upload + 2 × ``max_bytes`` + :data:`PARQUET_CHILD_SLACK`, its CPU at
    :data:`parquet_child.CPU_SECONDS` and its wall time at :data:`PARQUET_CHILD_SECONDS`. The
    parent reads at most ``max_bytes`` + :data:`IPC_SCHEMA_BYTES` back: what the server holds is
    bounded by the set's size (:func:`max_decoded_bytes`), whatever the file says of itself.

    Raises:
        InputError: one line: more than ``max_rows`` rows (from the footer, or counted while
            decoding), a column missing, twice or of the wrong type, more than ``max_bytes``
            decoded (or the child out of memory: Python's or Arrow's error, an abort on a failed
            allocation, a kill), over its CPU or wall time, crashed (its signal named) or failed
            (its exit status and last line named), an unreadable file.
    """
    mib = f"{max_bytes / 2**20:.1f}"
    too_big = (f"decodes to more than {mib} MiB, the most a run export of {max_rows} rows of this set may "
               f"take ({EXPORT_ROW_BYTES} bytes a row and its id): refused")
    cap = max_bytes + IPC_SCHEMA_BYTES
    cmd = [sys.executable, "-I", str(Path(parquet_child.__file__)), str(max_rows), str(max_bytes),
           str(2 * max_bytes + PARQUET_CHILD_SLACK)]
    rc, out, err, timed_out = _run_child(cmd, data, cap)
    if rc == parquet_child.EXIT_REFUSED:
        try:
            r = json.loads(out)
        except ValueError:
            raise InputError(too_big, file=source) from None
        if r.get("kind") == "rows":
            raise InputError(f"{r['rows']} rows, {too_many}" if r.get("rows") is not None else too_many,
                             file=source)
        if r.get("kind") == "bytes":
            raise InputError(too_big, file=source)
        if r.get("kind") == "column":
            raise InputError(str(r.get("message")), file=source, field=r.get("field"))
        raise InputError(_unreadable(str(r.get("message"))), file=source)
    if timed_out or rc == -signal.SIGXCPU:
        raise InputError(f"takes more than {parquet_child.CPU_SECONDS} s of CPU or {PARQUET_CHILD_SECONDS} s to "
                         "decode: refused", file=source)
    if len(out) > cap or rc in (parquet_child.EXIT_MEMORY, -signal.SIGKILL, -signal.SIGABRT):
        raise InputError(too_big, file=source)  # past the output cap; out of memory (an abort: a failed new)
    if rc < 0:
        raise InputError(f"the Parquet decoder crashed on the file ({signal.Signals(-rc).name}): refused",
                         file=source)
    if rc != 0:
        raise InputError(f"the Parquet decoder failed (exit status {rc}: {echo(err)}): refused", file=source)
    try:
        return paipc.open_stream(out).read_all()
    except Exception as e:
        raise InputError(_unreadable(e), file=source) from None


def read_run_export(data: bytes, *, source: str, ids: Collection[str], detector: str | None = None) -> dict[str, float]:
    """A veribench run export (``veribench export scores --run TAG -o FILE``, CSV or Parquet) as
    ``{doc_id: ranking_score}``.

    Args:
        data: the file's bytes (Parquet when it starts with ``PAR1``, else CSV with a header).
        source: the file's name, named in every error.
        ids: the set's ids; each must occur exactly once for the detector.
        detector: the detector whose rows to read (the file may hold up to
            :data:`EXPORT_MAX_DETECTORS` times the set's size rows); None: the file must hold
            one detector, so at most one row per id.

    Returns:
        One finite oriented score per id (higher = more likely AI, the run's ranking score).

    A Parquet file is decoded in a child process (:func:`_decode_parquet`): what this process
    holds is at most :func:`max_decoded_bytes` of the rows cap, whatever the file's footer and
    page headers say.

    Raises:
        InputError: unreadable file, more rows than the set's size (no detector named) or
            :data:`EXPORT_MAX_DETECTORS` times it (a detector named), refused from the Parquet
            footer, or counted while decoding, or after that many CSV rows + 1, before decoding
            the rest; a Parquet file decoding to more than :func:`max_decoded_bytes` (or whose
            decoding runs out of its memory or time); a column of :data:`RUN_EXPORT_FIELDS`
            missing or named twice, or in a Parquet file not of its type (strings; the score a
            float or an integer); several detectors and none chosen, an unknown detector, an id
            unknown, repeated or missing, a row without a score (its status named) or a
            non-finite score.
    """
    if detector is None:  # one detector: one row per text
        max_rows = len(ids)
        too_many = (f"more than {max_rows} rows, one per text of the set: not an export of one detector of "
                    f"this set ({ONE_DETECTOR_HINT})")
    else:
        max_rows = len(ids) * EXPORT_MAX_DETECTORS
        too_many = (f"more than {max_rows} rows ({EXPORT_MAX_DETECTORS} detectors of the set's {len(ids)} texts): "
                    "not an export of this set")
    if bytes(data[:4]) == b"PAR1":
        table = _decode_parquet(data, source, max_rows=max_rows, max_bytes=max_decoded_bytes(ids, max_rows),
                                too_many=too_many)
    else:
        table = _read_csv(data, source, max_rows=max_rows, too_many=too_many)
    for c in RUN_EXPORT_FIELDS:
        if c not in table.column_names:
            raise InputError("column missing (write the file with `veribench export scores --run TAG`)",
                             file=source, field=c)
    cols = {c: table.column(c).to_pylist() for c in RUN_EXPORT_FIELDS}
    names = sorted({str(d) for d in cols["detector"]})
    if detector is None:
        if len(names) != 1:
            raise InputError(f"the export holds {len(names)} detectors ({', '.join(names)}); {ONE_DETECTOR_HINT}",
                             file=source, field="detector")
        detector = names[0]
    elif detector not in names:
        raise InputError(unknown_key("value", detector, names) + " of the export's detectors", file=source,
                         field="detector")

    def records() -> Iterable[tuple[int, Any, Any]]:
        for i, (doc_id, det, status, score) in enumerate(zip(*(cols[c] for c in RUN_EXPORT_FIELDS))):
            if det != detector:
                continue
            if score is None:
                raise InputError(f"no score (status {echo(status)}); every text needs one", file=source,
                                 record=f"{i} (id {echo(doc_id)})", field="ranking_score")
            yield i, doc_id, score

    return _check_ids(records(), source=source, ids=ids, id_field="doc_id", score_field="ranking_score")


def predictions_bytes(scores: Mapping[str, float]) -> bytes:
    """``scores`` as RAID's predictions.json bytes (``json.dump`` of ``[{"id", "score"}]``, ids
    sorted).

    Raises:
        InputError: an id that is not a string or a score that is not a finite number.
    """
    recs = []
    for i, (k, v) in enumerate(sorted(scores.items(), key=lambda kv: str(kv[0]))):
        if not isinstance(k, str):
            raise InputError("the id must be a string", file="predictions.json", record=i, field="id")
        recs.append({"id": k, "score": _score(v, "predictions.json", f"{i} (id {k!r})", "score")})
    return json.dumps(recs, allow_nan=False).encode("utf-8")


def write_submission(scores: Mapping[str, float], metadata: RaidMetadata, out_dir: Path) -> tuple[Path, Path]:
    """Write ``out_dir/predictions.json`` and ``out_dir/metadata.json`` as RAID's leaderboard expects
    them (each written to a temporary file, synced and renamed: a crash leaves the old file or the
    new one, never half of one).

    Returns:
        ``(predictions_path, metadata_path)``.

    Raises:
        InputError: a non-finite or non-numeric score, or ``out_dir`` cannot be created.
    """
    out = Path(out_dir)
    pred = predictions_bytes(scores)
    meta = (json.dumps(metadata.model_dump(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create the directory: {e.strerror}", file=str(out)) from None
    p, m = out / "predictions.json", out / "metadata.json"
    write_durably(p, pred)  # the board's one durable write: temporary file, fsync, rename, folder fsync
    write_durably(m, meta)
    return p, m
