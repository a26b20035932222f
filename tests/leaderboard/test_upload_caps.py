"""Issue 26: the board's uploads cost memory in proportion to the set, not to the upload.

A predictions.json or metadata.json at the board's upload cap (``limits.MAX_UPLOAD_BYTES``,
64 MiB) that holds millions of tiny values (``[{},{},...]`` and the like: ~21 million dicts,
well over 1 GB once parsed) is refused from a scan of its bytes before it is decoded or
parsed; a run export read with no detector named holds at most one row per text of the set.
"""

from __future__ import annotations

import io
import json
import random
import tracemalloc

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
