"""Issue 26: the board's uploads cost memory in proportion to the set, not to the upload.

A predictions.json or metadata.json at the board's upload cap (``limits.MAX_UPLOAD_BYTES``,
64 MiB) that holds millions of tiny values (``[{},{},...]`` and the like: ~21 million dicts,
well over 1 GB once parsed) is refused from a scan of its bytes before it is decoded or
parsed; a run export read with no detector named holds at most one row per text of the set.
"""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from veribench.errors import InputError
from veribench.leaderboard import raid_format
from veribench.leaderboard.limits import MAX_UPLOAD_BYTES
from veribench.leaderboard.raid_format import (
    METADATA_MAX_VALUES,
    PREDICTION_VALUES_PER_TEXT,
    PREDICTION_VALUES_SLACK,
    read_metadata,
    read_predictions,
    read_run_export,
)

IDS = {"a", "b", "c"}
#: The bound on the Python memory (tracemalloc's peak) of refusing an upload of
#: MAX_UPLOAD_BYTES: the refusal comes from a scan of the bytes, before the text is decoded
#: (a decoded copy alone would be 64 MiB): a few KiB measured, bounded at 1 MiB.
PEAK_BOUND = 2**20


def _fill(head: bytes, item: bytes, tail: bytes, size: int = MAX_UPLOAD_BYTES) -> bytes:
    """``head + item, item, ..., item + tail`` of about ``size`` bytes (at most ``size``)."""
    n = (size - len(head) - len(tail)) // (len(item) + 1)
    return head + b",".join([item] * n) + tail


def _refusal_peak(read, data: bytes, **kw) -> tuple[str, int]:
    """The one-line message of ``read(data, **kw)``'s InputError and the Python memory peak (bytes)."""
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as e:
            read(data, **kw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    msg = str(e.value)
    assert "\n" not in msg, msg
    return msg, peak


def _cap() -> int:
    return PREDICTION_VALUES_PER_TEXT * len(IDS) + PREDICTION_VALUES_SLACK  # 73


@pytest.mark.parametrize(("item", "records"), [
    (b"{}", _cap() + 1),  # every comma a value: the cap passed at the 74th record
    (b"[]", _cap() + 1),
    (b"1", _cap() + 1),
    (b'"a"', _cap() + 1),
    (b'{"x": []}', (_cap() + 1) // 2),  # two values a record: the object's member and the comma
])
def test_a_json_bomb_of_records_is_refused_before_parsing(item, records):
    """64 MiB of tiny records: refused in one line naming the records read and the set's size,
    at a Python memory peak under PEAK_BOUND (the whole file was parsed before: > 1 GB)."""
    data = _fill(b"[", item, b"]")
    assert len(data) > MAX_UPLOAD_BYTES - 16
    msg, peak = _refusal_peak(read_predictions, data, source="predictions.json", ids=IDS)
    assert peak < PEAK_BOUND, peak
    assert msg == (f"file predictions.json: {records} records at least; the set has 3 texts (one record each): "
                   "refused before parsing"), msg


def test_one_record_holding_a_bomb_is_refused_before_parsing():
    """One record whose score is a 64 MiB array: its values pass the cap (3 a text + 64)."""
    data = _fill(b'[{"id": "a", "score": [', b"1", b"]}]")
    msg, peak = _refusal_peak(read_predictions, data, source="predictions.json", ids=IDS)
    assert peak < PEAK_BOUND, peak
    assert msg == ("file predictions.json: 74 JSON values at least, more than the 73 a predictions.json of the "
                   "set's 3 texts may hold (3 a record: the object, its id and its score, + 64): refused before "
                   "parsing"), msg


def test_a_metadata_bomb_is_refused_before_parsing():
    data = _fill(b'{"date_released": "d", "detector_name": "x", "contact_info": "c", "additional_metadata": {"k": [',
                 b"[]", b"]}}")
    msg, peak = _refusal_peak(read_metadata, data, source="metadata.json")
    assert peak < PEAK_BOUND, peak
    assert msg == (f"file metadata.json: {METADATA_MAX_VALUES + 1} JSON values at least, more than the "
                   f"{METADATA_MAX_VALUES} a metadata.json may hold: refused before parsing"), msg


def _predictions(ids: list[str], **dump) -> tuple[dict[str, float], bytes]:
    scores = {d: (i * 7919 % 1000) / 997 - 0.5 for i, d in enumerate(ids)}
    return scores, json.dumps([{"id": d, "score": s} for d, s in scores.items()], **dump).encode()


def test_correct_files_of_the_sets_size_are_read():
    """A predictions.json of exactly the set's size is read, laid out any way (json.dump's
    default, indented with CRLFs and tabs), and with ids holding commas and brackets (which
    pass the cheap count and make the exact scan run): the scan counts only what is outside
    strings, escaped quotes included."""
    ids = [f"doc-{i:05d}" for i in range(2000)]
    scores, data = _predictions(ids)
    assert read_predictions(data, source="p.json", ids=set(ids)) == scores
    spaced = json.dumps([{"id": d, "score": s} for d, s in scores.items()], indent="\t").replace("\n", "\r\n ")
    assert read_predictions(b"\xef\xbb\xbf" + spaced.encode(), source="p.json", ids=set(ids)) == scores
    odd = [f'doc,{i}[{{"]}}\\"",' for i in range(2000)]  # commas, brackets, an escaped quote in every id
    scores, data = _predictions(odd)
    assert data.count(b",") + data.count(b"[") + data.count(b"{") > 3 * len(odd) + PREDICTION_VALUES_SLACK
    assert read_predictions(data, source="p.json", ids=set(odd)) == scores


def test_a_few_stray_records_still_get_their_own_error():
    """Within the slack a duplicated record is named as such, not by the cap."""
    recs = [{"id": d, "score": 0.5} for d in sorted(IDS)] * 2
    with pytest.raises(InputError, match=r"record 3 \(id 'a'\), field 'id': duplicate id \(first at record 0\)"):
        read_predictions(json.dumps(recs).encode(), source="p.json", ids=IDS)


def _one_detector_rows(n: int) -> pa.Table:
    ids = sorted(IDS)
    return pa.table({"doc_id": [ids[i % 3] for i in range(n)], "detector": ["zippy"] * n, "status": ["ok"] * n,
                     "ranking_score": [float(i) for i in range(n)]})


def test_a_csv_export_of_one_detector_longer_than_the_set_is_refused():
    """No detector named: one detector, so one row per text; the 4th row of a 3-text set is
    refused (it was read as a duplicate id before: the cap was 64 rows a text)."""
    body = "doc_id,detector,status,ranking_score\n" + "".join(
        f"{r['doc_id']},{r['detector']},{r['status']},{r['ranking_score']}\n"
        for r in _one_detector_rows(4).to_pylist())
    with pytest.raises(InputError) as e:
        read_run_export(body.encode(), source="run.csv", ids=IDS)
    assert str(e.value) == ("file run.csv: more than 3 rows, one per text of the set: not an export of one detector "
                            "of this set (for a run of several detectors, write one detector's predictions with `veribench export raid-submission --run TAG --detector NAME`)")


def test_a_parquet_export_of_one_detector_longer_than_the_set_is_refused_from_its_footer():
    """Its column chunks are overwritten with garbage: read with the detector named (its cap,
    64 rows a text, lets 4 rows through) decoding fails, so the refusal with none named came
    from the footer alone."""
    buf = io.BytesIO()
    pq.write_table(_one_detector_rows(4), buf, compression="zstd")
    data = bytearray(buf.getvalue())
    footer_len = int.from_bytes(data[-8:-4], "little")
    data[4:len(data) - 8 - footer_len] = b"\xff" * (len(data) - 12 - footer_len)
    assert pq.ParquetFile(io.BytesIO(bytes(data))).metadata.num_rows == 4
    with pytest.raises(InputError, match="not a veribench run export"):
        read_run_export(bytes(data), source="run.parquet", ids=IDS, detector="zippy")
    with pytest.raises(InputError) as e:
        read_run_export(bytes(data), source="run.parquet", ids=IDS)
    assert str(e.value) == ("file run.parquet: 4 rows, more than 3 rows, one per text of the set: not an export of "
                            "one detector of this set (for a run of several detectors, write one detector's predictions with `veribench export raid-submission --run TAG --detector NAME`)")


def _values(doc) -> int:
    """The reference count of a parsed document's values besides the top-level one: a plain walk."""
    kids = list(doc.values()) if isinstance(doc, dict) else doc if isinstance(doc, list) else []
    return sum(1 + _values(k) for k in kids)


def _random_doc(rng: random.Random, depth: int = 0):
    kind = rng.choice("lldsnx" if depth < 5 else "snx")
    if kind == "l":
        return [_random_doc(rng, depth + 1) for _ in range(rng.choice([0, 1, 2, 5]))]
    if kind == "d":
        return {_random_text(rng): _random_doc(rng, depth + 1) for _ in range(rng.choice([0, 1, 3]))}
    if kind == "s":
        return _random_text(rng)
    return rng.choice([0, -1.5e300, True, None]) if kind == "x" else rng.random()


def _random_text(rng: random.Random) -> str:
    return "".join(rng.choice(['"', "\\", ",", "[", "]", "{", "}", ":", " ", "\n", "é", "\U0001f600", "a"])
                   for _ in range(rng.randrange(6)))


def test_the_scan_counts_values_as_a_plain_walk_of_the_parsed_file_does():
    """Random documents (strings full of quotes, backslashes, brackets and commas, empty and
    nested containers, any layout): each is read whole at a cap of its own value count, as
    counted by walking json.loads's result, and refused at one less."""
    rng = random.Random(26)
    for _ in range(400):
        doc = _random_doc(rng)
        n = _values(doc)
        indent = rng.choice([None, 1, "\t"])
        data = json.dumps(doc, indent=indent, ensure_ascii=rng.random() < 0.5).encode()
        assert raid_format._load_json(data, "f.json", max_values=n) == doc
        if n:
            with pytest.raises(InputError, match=f"{n} JSON values at least, more than the {n - 1} a metadata"):
                raid_format._load_json(data, "f.json", max_values=n - 1)


# --- F5/F6: a Parquet run export decodes in a child process whose memory is capped --------

SRC = str(Path(raid_format.__file__).parents[2])
#: 172 texts, as in the tester's files.
SET = [f"doc-{i:03d}" for i in range(172)]
#: The tester's value: a 20 MiB string (decoded 172 times: 3.4 GiB).
BIG = 20 * 2**20
#: What the process reading an upload may grow by (its peak RSS, MiB): what it holds is capped
#: at max_decoded_bytes (1.0 MiB for this set) + the IPC schema + Python objects of 172 rows;
#: the 20 MiB-string bombs took 3.9 GB before.
PARENT_GROWTH_MIB = 48
#: The process reading an upload runs under this address-space soft limit above its own size,
#: so that a bomb decoded in process fails (MemoryError) instead of taking the test host's
#: memory; the child's own cap is lower (its baseline + upload + 2 × 1.0 MiB + 256 MiB).
READER_AS = 1536 * 2**20

_READER = r"""
import json, os, resource, sys
from veribench.errors import InputError
from veribench.leaderboard.raid_format import read_run_export
data = sys.stdin.buffer.read()
size = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
limit = size + int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit if sys.argv[4] == "hard" else resource.RLIM_INFINITY))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    out = {"scores": read_run_export(data, source=sys.argv[3], ids=json.loads(sys.argv[1]))}
except InputError as e:
    out = {"error": str(e)}
except BaseException as e:
    out = {"crash": type(e).__name__}
out["grown_mib"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
out["child_mib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps(out))
"""


def _read_in_a_process(data: bytes, source: str = "up.parquet", ids: list[str] = SET, limit: int = READER_AS,
                       hard: bool = False) -> dict:
    """read_run_export(data) run in a fresh interpreter under an address-space soft limit of
    ``limit`` bytes above its size (``hard``: the hard limit too): its scores or its error, and
    how much its peak RSS grew (and its children's peak), MiB."""
    r = subprocess.run([sys.executable, "-c", _READER, json.dumps(ids), str(limit), source, "hard" if hard else "soft"],
                       input=data,
                       capture_output=True, timeout=300, env={**os.environ, "PYTHONPATH": SRC})
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    return json.loads(r.stdout)


def _export(n: int = len(SET), **cols) -> pa.Table:
    """A one-detector run export of the first n texts of SET, columns replaced by ``cols``."""
    base = {"doc_id": pa.array(SET[:n]), "detector": pa.array(["zippy"] * n), "status": pa.array(["ok"] * n),
            "ranking_score": pa.array([(i * 7919 % 1000) / 997 - 0.5 for i in range(n)])}
    return pa.table({**base, **cols})


def _parquet(table: pa.Table, **kw) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, **kw)
    return buf.getvalue()


def _big_dictionary_bomb() -> bytes:
    """172 rows whose status is one 20 MiB string, dictionary-encoded: ~2 KB of file."""
    status = pa.DictionaryArray.from_arrays(pa.array([0] * len(SET), pa.int32()), pa.array(["x" * BIG]))
    return _parquet(_export(status=status), compression="zstd")


def _big_plain_bomb() -> bytes:
    """172 rows whose status is a 20 MiB string each, plain-encoded and zstd-compressed (a row
    group a row, so that writing it holds one value at a time)."""
    buf = io.BytesIO()
    first = _export(1, status=pa.array(["x" * BIG]))
    with pq.ParquetWriter(buf, first.schema, compression="zstd", use_dictionary=False) as w:
        for i in range(len(SET)):
            t = _export(status=pa.array(["x"] * len(SET))).slice(i, 1)
            w.write_table(t.set_column(2, "status", pa.array(["x" * BIG])))
    return buf.getvalue()


def _varint(n: int, width: int | None = None) -> bytes:
    """``n`` as a Thrift compact varint (7 bits a byte, low first), padded to ``width`` bytes
    with continuation bits (a valid encoding Thrift decoders read as ``n``)."""
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        more = n or (width is not None and len(out) < width - 1)
        out.append(b | 0x80 if more else b)
        if not more:
            return bytes(out)


def _forged_rows_bomb(rows: int = 5_000_000) -> bytes:
    """The tester's F5b: ``rows`` identical rows in one row group (RLE: ~64 KB), the footer's
    FileMetaData.num_rows rewritten to claim 172 (the row group's own count left alone)."""
    t = pa.table({"doc_id": pa.array(["doc-000"] * rows), "detector": pa.array(["zippy"] * rows),
                  "status": pa.array(["ok"] * rows), "ranking_score": pa.array([0.5] * rows)})
    data = bytearray(_parquet(t, compression="zstd", row_group_size=rows))
    footer_len = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - footer_len
    real = _varint(2 * rows)  # i64 fields are zigzag varints
    first = data.find(real, start)  # FileMetaData.num_rows (field 3) comes before the row groups
    data[first:first + len(real)] = _varint(2 * len(SET), len(real))
    claimed = pq.ParquetFile(io.BytesIO(bytes(data))).metadata
    assert (claimed.num_rows, claimed.row_group(0).num_rows) == (len(SET), rows)
    return bytes(data)


@pytest.mark.parametrize("build", [_big_dictionary_bomb, _big_plain_bomb], ids=["dictionary", "zstd-plain"])
def test_a_parquet_of_huge_strings_is_refused_in_bounded_memory(build):
    """F5a: 172 rows of a 20 MiB string (3.4 GiB decoded) in a small file: refused in one line,
    the reading process's peak RSS grows under PARENT_GROWTH_MIB and its child's stays under
    its cap (it was 3.9 GB, decoded in the server)."""
    data = build()
    assert len(data) < 2**20
    out = _read_in_a_process(data)
    assert out.get("error") == ("file up.parquet: decodes to more than 1.0 MiB, the most a run export of 172 rows "
                                "of this set may take (256 bytes a row and its id): refused"), out
    assert out["grown_mib"] < PARENT_GROWTH_MIB, out
    assert out["child_mib"] < 1024, out


def test_a_parquet_whose_footer_lies_about_its_rows_is_refused_while_decoding():
    """F5b: the footer claims 172 rows, the row group holds 5,000,000: rows are counted as they
    are decoded and the 173rd is refused; the reading process grows under PARENT_GROWTH_MIB
    (it decoded all 5,000,000 rows: 847 MiB peak, 22 s CPU)."""
    out = _read_in_a_process(_forged_rows_bomb())
    assert out.get("error") == ("file up.parquet: more than 172 rows, one per text of the set: not an export of one "
                                f"detector of this set ({raid_format.ONE_DETECTOR_HINT})"), out
    assert out["grown_mib"] < PARENT_GROWTH_MIB, out


def _csv(table: pa.Table, header: str | None = None) -> bytes:
    lines = [header or ",".join(table.column_names)]
    lines += [",".join(str(v) for v in row.values()) for row in table.to_pylist()]
    return ("\n".join(lines) + "\n").encode()


def test_a_duplicate_column_is_refused_in_one_line():
    """F6: a column named twice (the tester's CSV header, or a Parquet schema) is named in one
    line; it escaped as a KeyError (HTTP 500) before."""
    ids = SET[:3]
    csv = "doc_id,doc_id,detector,status,ranking_score\n" + "".join(f"{d},{d},zippy,ok,0.5\n" for d in ids)
    t = _export(3)
    dup = pa.Table.from_arrays([t.column(0), *t.columns], names=["doc_id", *t.column_names])
    for data, source in ((csv.encode(), "up.csv"), (_parquet(dup), "up.parquet")):
        with pytest.raises(InputError) as e:
            read_run_export(data, source=source, ids=ids)
        assert str(e.value) == (f"file {source}, field 'doc_id': the column appears 2 times; a run export holds "
                                "each column once")


@pytest.mark.parametrize(("column", "values", "kind"), [
    ("detector", pa.nulls(172), "null"),
    ("detector", pa.array([["zippy"]] * 172), "list<element: string>"),
    ("detector", pa.array([7] * 172), "int64"),
    ("doc_id", pa.array(list(range(172))), "int64"),
    ("status", pa.array([1.5] * 172), "double"),
    ("ranking_score", pa.array(["0.5"] * 172), "string"),
    ("ranking_score", pa.array([True] * 172), "bool"),
])
def test_a_parquet_column_of_the_wrong_type_is_refused_naming_it(column, values, kind):
    """A column of the wrong type is refused from the schema, naming it and its type (a null
    detector column read as "172 id(s) of the set have no prediction" before)."""
    want = "a float or an integer" if column == "ranking_score" else "strings"
    with pytest.raises(InputError) as e:
        read_run_export(_parquet(_export(**{column: values})), source="up.parquet", ids=SET)
    assert str(e.value) == f"file up.parquet, field {column!r}: the column must hold {want}, not {kind}"


def test_a_legit_export_is_still_read_with_the_same_scores():
    """A run export with the other columns of `veribench export scores` (Parquet, dictionary
    and plain, and CSV): the scores are the file's, checked against a plain loop over its rows;
    integer scores are read as floats; the reading process grows under PARENT_GROWTH_MIB."""
    t = _export().append_column("raw", pa.array([0.25] * 172)).append_column("tags", pa.array(["[]"] * 172))
    want = {r["doc_id"]: r["ranking_score"] for r in t.to_pylist()}
    for data, source in ((_parquet(t), "up.parquet"), (_parquet(t, use_dictionary=False, compression="zstd"),
                                                       "up.parquet"), (_csv(t), "up.csv")):
        out = _read_in_a_process(data, source)
        assert out.get("scores") == want, out
        assert out["grown_mib"] < PARENT_GROWTH_MIB, out
    # a server under a hard address-space limit below the child's cap: the child keeps to it
    out = _read_in_a_process(_parquet(t), limit=128 * 2**20, hard=True)
    assert out.get("scores") == want, out
    ints = _export(ranking_score=pa.array(list(range(172)), pa.int32()))
    assert read_run_export(_parquet(ints), source="up.parquet", ids=SET) == {d: float(i) for i, d in enumerate(SET)}


def test_the_decoded_cap_is_a_function_of_the_set():
    """max_decoded_bytes: rows × (the longest id's UTF-8 bytes + 256) + 1 MiB (plain arithmetic)."""
    assert raid_format.max_decoded_bytes(SET, 172) == 172 * (7 + 256) + 2**20
    assert raid_format.max_decoded_bytes(["é" * 36], 672_000) == 672_000 * (72 + 256) + 2**20


TOO_BIG = ("file up.parquet: decodes to more than 1.0 MiB, the most a run export of 172 rows of this set may "
           "take (256 bytes a row and its id): refused")


def test_a_child_killed_for_its_time_is_one_line(monkeypatch):
    """A child killed before it answers (here at once: no wall time) is a one-line refusal
    naming the limits, never a traceback."""
    monkeypatch.setattr(raid_format, "PARQUET_CHILD_SECONDS", 0)
    with pytest.raises(InputError) as e:
        read_run_export(_parquet(_export()), source="up.parquet", ids=SET)
    assert str(e.value) == "file up.parquet: takes more than 60 s of CPU or 0 s to decode: refused"


@pytest.mark.parametrize(("script", "message"), [
    ("import os, signal; os.kill(os.getpid(), signal.SIGABRT)", TOO_BIG),  # std::bad_alloc aborts
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", TOO_BIG),  # the kernel's OOM killer
    ("import sys; sys.exit(4)", TOO_BIG),  # the child's MemoryError
    ("import sys; sys.stdout.write('x' * 2**21)", TOO_BIG),  # past the output cap
    ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)",
     "file up.parquet: the Parquet decoder crashed on the file (SIGSEGV): refused"),
    ("import sys; sys.stderr.write('Traceback\\nImportError: no pyarrow\\n'); sys.exit(1)",
     "file up.parquet: the Parquet decoder failed (exit status 1: 'ImportError: no pyarrow'): refused"),
    ("import sys; sys.stdout.write('not json'); sys.exit(3)", TOO_BIG),
    ("import sys; sys.stdout.write('not arrow')",
     "file up.parquet: not a veribench run export (CSV or Parquet): Expected to read 544501614 metadata bytes, "
     "but only read 5"),  # b"not " read as the message length
])
def test_every_end_of_the_child_is_one_line(monkeypatch, tmp_path, script, message):
    """However the child ends (a stand-in script run in its place), the refusal is one line:
    out of memory (its exit status 4, an abort, a kill) or past the output cap is the decoded
    cap's; a crash names its signal, a failure its status and last line."""
    child = tmp_path / "child.py"
    child.write_text(script + "\n")
    monkeypatch.setattr(raid_format.parquet_child, "__file__", str(child))
    with pytest.raises(InputError) as e:
        read_run_export(_parquet(_export()), source="up.parquet", ids=SET)
    assert str(e.value) == message


@pytest.mark.parametrize("extra", [9_000, 100_000])
def test_a_csv_of_many_columns_costs_memory_bounded_by_its_bytes(extra):
    """A CSV export with ``extra`` columns beyond the four (one row): only the four are
    converted, and a header past 64 KiB is refused in one line. The reading process grows
    under PARENT_GROWTH_MIB (every column was converted before: 860 MiB for 100,000 columns
    in 1.2 MB; under the test's 1.5 GiB cap the reader aborted on std::bad_alloc)."""
    header = "doc_id,detector,status,ranking_score," + ",".join(f"c{i}" for i in range(extra))
    data = f"{header}\ndoc-000,zippy,ok,0.5{',1' * extra}\n".encode()
    out = _read_in_a_process(data, "up.csv", ids=SET[:1])
    assert out["grown_mib"] < PARENT_GROWTH_MIB, out
    if len(header) < 64 * 1024:
        assert out.get("scores") == {"doc-000": 0.5}, out
    else:
        assert out.get("error") == "file up.csv: a header longer than 64 KiB: not a veribench run export", out
