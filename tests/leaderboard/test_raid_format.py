"""RAID's predictions.json / metadata.json (veribench.leaderboard.raid_format): real files read
unchanged, every bad input refused with one line naming the source, the record and the field,
and a written submission read back."""

from __future__ import annotations

import io
import json
import resource

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from veribench.errors import InputError
from veribench.leaderboard import raid_format
from veribench.leaderboard.raid_format import (
    RaidMetadata,
    read_metadata,
    read_predictions,
    read_run_export,
    write_submission,
)

# The first records of a real RAID submission, byte for byte as `json.dump` wrote them
# (liamdugan/raid, leaderboard/submissions/CNI-v4/predictions.json).
REAL_PREDICTIONS = (b'[{"id": "64005577-3d63-4583-8945-7541d3e53e7d", "score": 0.06978081166744232}, '
                    b'{"id": "c2b9df67-4e29-45ca-bdcc-7065fb907b77", "score": 0.39571887254714966}, '
                    b'{"id": "07904f22-8530-4d3b-bf49-6bd1642d89f7", "score": 0.944101095199585}]')
REAL_IDS = {"64005577-3d63-4583-8945-7541d3e53e7d", "c2b9df67-4e29-45ca-bdcc-7065fb907b77",
            "07904f22-8530-4d3b-bf49-6bd1642d89f7"}
# liamdugan/raid leaderboard/template-metadata.json, verbatim.
TEMPLATE_METADATA = b"""{
  "date_released": "2024-05-25",
  "detector_name": "Template",
  "website": "Link to Homepage (Optional) e.g. https://example.com/",
  "paper_link": "Link to Paper (Optional) e.g. https://arxiv.org/abs/1706.03762",
  "huggingface_link": "Link to HF model (Optional) e.g. https://huggingface.co/google-bert/bert-base-uncased",
  "github_link": "Link to Github (Optional) e.g. https://github.com/google-research/bert",
  "contact_info": "Email Address: example@me.com"
}"""
# A submitted metadata.json with additional_metadata as a string (CNI-v4's, shortened).
SUBMITTED_METADATA = (b'{"detector_name": "CNI v4", "contact_info": "Alan Crawley", "date_released": "2025-05-21", '
                      b'"website": "", "paper_link": "", "huggingface_link": "", "github_link": "", '
                      b'"additional_metadata": "XGBoost classifier. Zero-shot on RAID."}')

IDS = {"a", "b", "c"}


def refused(data: bytes, *, ids=IDS, reader=read_predictions, **kw) -> str:
    with pytest.raises(InputError) as e:
        reader(data, source="preds.json", ids=ids, **kw)
    msg = str(e.value)
    assert "\n" not in msg and "file preds.json" in msg
    return msg


def test_real_raid_files_read_unchanged():
    got = read_predictions(REAL_PREDICTIONS, source="predictions.json", ids=REAL_IDS)
    assert got == {r["id"]: r["score"] for r in json.loads(REAL_PREDICTIONS)}
    m = read_metadata(TEMPLATE_METADATA, source="metadata.json")
    assert m.detector_name == "Template" and m.contact_info.startswith("Email") and m.additional_metadata is None
    m2 = read_metadata(SUBMITTED_METADATA, source="metadata.json")
    assert m2.additional_metadata == "XGBoost classifier. Zero-shot on RAID."


@pytest.mark.parametrize(("data", "record", "field", "words"), [
    (b'[{"id": "a", "score": 1}, {"id": "b", "score": 2}, {"id": "zz", "score": 3}]', "record 2 (id 'zz')", "'id'",
     "unknown id"),
    (b'[{"id": "a", "score": 1}, {"id": "b", "score": 2}]', "record missing (id 'c')", "'id'", "no prediction"),
    (b'[{"id": "a", "score": 1}, {"id": "b", "score": 2}, {"id": "a", "score": 3}, {"id": "c", "score": 0}]',
     "record 2 (id 'a')", "'id'", "duplicate id (first at record 0)"),
    (b'[{"id": "a", "score": NaN}, {"id": "b", "score": 2}, {"id": "c", "score": 3}]', "record 0 (id 'a')",
     "'score'", "finite"),
    (b'[{"id": "a", "score": 1}, {"id": "b", "score": Infinity}, {"id": "c", "score": 3}]', "record 1 (id 'b')",
     "'score'", "finite"),
    (b'[{"id": "a", "score": 1}, {"id": "b", "score": -Infinity}, {"id": "c", "score": 3}]', "record 1 (id 'b')",
     "'score'", "finite"),
    (b'[{"id": "a", "score": 1e999}, {"id": "b", "score": 2}, {"id": "c", "score": 3}]', "record 0 (id 'a')",
     "'score'", "finite"),
    (b'[{"id": "a", "score": "0.5"}, {"id": "b", "score": 2}, {"id": "c", "score": 3}]', "record 0 (id 'a')",
     "'score'", "a string ('0.5')"),
    (b'[{"id": "a", "score": null}, {"id": "b", "score": 2}, {"id": "c", "score": 3}]', "record 0 (id 'a')",
     "'score'", "not null"),
    (b'[{"id": "a", "score": true}, {"id": "b", "score": 2}, {"id": "c", "score": 3}]', "record 0 (id 'a')",
     "'score'", "not a bool"),
    (b'[{"id": 7, "score": 1}]', "record 0", "'id'", "must be a string"),
    (b'[{"id": "a"}]', "record 0 (id 'a')", "'score'", "required field is missing"),
    (b'[{"id": "a", "score": 1, "scroe": 2}]', "record 0 (id 'a')", "'scroe'", "unknown field 'scroe'"),
    (b'[["a", 1]]', "record 0", None, "not a JSON list"),
])
def test_each_bad_prediction_named(data, record, field, words):
    msg = refused(data)
    assert record in msg and words in msg, msg
    if field:
        assert f"field {field}" in msg, msg


@pytest.mark.parametrize(("data", "words"), [
    (b'{"a": 1}', "is a JSON list"),
    (b'"x"', "is a JSON list"),
    (b'[{"id": "a", "score": 1,}]', "not JSON"),
    (b'[{"id": "a", "id": "b", "score": 1}]', "duplicate key 'id'"),
    (b"\xff\xfe", "not UTF-8"),
])
def test_bad_shapes(data, words):
    assert words in refused(data)


@pytest.mark.parametrize(("data", "field", "words"), [
    (b'{"date_released": "2024-01-01", "detector_name": "x"}', "'contact_info'", "required field is missing"),
    (b'{"date_released": "2024-01-01", "detector_name": "x", "contact_info": "c", "websit": "w"}', "'websit'",
     "did you mean 'website'"),
    (b'{"date_released": 2024, "detector_name": "x", "contact_info": "c"}', "'date_released'", "string"),
    (b'{"date_released": "d", "detector_name": "x", "contact_info": "c", "additional_metadata": [1]}',
     "'additional_metadata'", ""),
    (b"[]", None, "is a JSON object"),
])
def test_bad_metadata_named(data, field, words):
    with pytest.raises(InputError) as e:
        read_metadata(data, source="metadata.json")
    msg = str(e.value)
    assert "\n" not in msg and "file metadata.json" in msg and words in msg, msg
    if field:
        assert f"field {field}" in msg, msg


def test_write_then_read_round_trip(tmp_path):
    scores = {"doc-2": 0.25, "doc-1": -3.5, "doc-3": 1e-300}
    meta = read_metadata(TEMPLATE_METADATA, source="metadata.json")
    p, m = write_submission(scores, meta, tmp_path / "sub")
    assert (p.name, m.name) == ("predictions.json", "metadata.json")
    raw = json.loads(p.read_bytes())
    assert raw == [{"id": "doc-1", "score": -3.5}, {"id": "doc-2", "score": 0.25}, {"id": "doc-3", "score": 1e-300}]
    assert read_predictions(p.read_bytes(), source=str(p), ids=set(scores)) == scores
    assert read_metadata(m.read_bytes(), source=str(m)) == meta
    assert not list((tmp_path / "sub").glob(".*.tmp"))
    with pytest.raises(InputError, match="finite") as e:
        write_submission({"x": float("nan")}, meta, tmp_path / "bad")
    assert "record 0 (id 'x')" in str(e.value)
    assert not (tmp_path / "bad" / "predictions.json").exists()
    assert isinstance(meta, RaidMetadata)


def run_export(rows: list[dict]) -> tuple[bytes, bytes]:
    t = pa.Table.from_pylist(rows)
    buf = io.BytesIO()
    pq.write_table(t, buf)
    head = "run_id,run_tag,doc_id,detector,status,ranking_score\n"
    csv = head + "".join(f"r,t,{r['doc_id']},{r['detector']},{r['status']},"
                         f"{'' if r['ranking_score'] is None else r['ranking_score']}\n" for r in rows)
    return buf.getvalue(), csv.encode()


def test_run_export_read_and_refused():
    rows = [{"doc_id": d, "detector": det, "status": "ok", "ranking_score": s}
            for det in ("zippy", "other") for d, s in (("a", 0.1), ("b", -2.0), ("c", 3.0))]
    for data in run_export(rows):
        assert read_run_export(data, source="run.x", ids=IDS, detector="zippy") == {"a": 0.1, "b": -2.0, "c": 3.0}
        assert "more than 3 rows, one per text of the set" in refused(data, reader=read_run_export)
        assert "unknown value 'zipy'" in refused(data, reader=read_run_export, detector="zipy")
    one = rows[:3]
    one[1] = {**one[1], "status": "error", "ranking_score": None}
    for data in run_export(one):
        msg = refused(data, reader=read_run_export)
        assert "record 1 (id 'b')" in msg and "field 'ranking_score'" in msg and "status 'error'" in msg
    assert "record missing (id 'c')" in refused(run_export(rows[:2])[0], reader=read_run_export)
    for data in run_export([rows[0], rows[4], rows[2]]):  # a (zippy), b (other), c (zippy): within the set's size
        assert "2 detectors (other, zippy); for a run of several detectors, write one detector's predictions with " \
            "`veribench export raid-submission --run TAG --detector NAME`" in refused(data, reader=read_run_export)
    assert "field 'ranking_score'" in refused(b"doc_id,detector,status\na,z,ok\n", reader=read_run_export)
    assert "not a veribench run export" in refused(b"PAR1garbage", reader=read_run_export)


def test_hostile_json_refused_in_one_line():
    """Nesting past MAX_JSON_DEPTH (even inside brackets in strings, not counted), a score
    integer beyond a float's range, one over Python's digit limit: InputError, one line."""
    ids = ["a"]
    for data, words in [(b"[" * 100000, "nested more than"), (b'{"x": ' * 40 + b"1" + b"}" * 40, "nested more than"),
                        (b'[{"id": "a", "score": ' + b"9" * 400 + b"}]", "integer of 400 digits"),
                        (b'[{"id": "a", "score": ' + b"9" * 5000 + b"}]", "not JSON RAID can read")]:
        with pytest.raises(InputError, match=words) as e:
            raid_format.read_predictions(data, source="p.json", ids=ids)
        assert "\n" not in str(e.value) and "p.json" in str(e.value)
        with pytest.raises(InputError) as e:
            raid_format.read_metadata(data, source="m.json")
        assert "\n" not in str(e.value) and "m.json" in str(e.value)
    assert raid_format.read_predictions(b'[{"id": "a", "score": 1}]', source="p", ids=ids) == {"a": 1.0}
    deep_in_string = ('[{"id": "a", "score": 0.5}' + ', "' + "[" * 100 + '"]').encode()
    with pytest.raises(InputError, match="an object"):  # the brackets in the string are no nesting
        raid_format.read_predictions(deep_in_string, source="p", ids=ids)


def _bomb_parquet(rows: int, chunk: int = 100_000) -> bytes:
    """A zstd Parquet run export of ``rows`` identical rows (a few hundred KB), written a row
    group at a time so that building it stays small."""
    part = pa.table({"doc_id": pa.array(["a"] * chunk), "detector": pa.array(["zippy"] * chunk),
                     "status": pa.array(["ok"] * chunk), "ranking_score": pa.array([0.5] * chunk)})
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, part.schema, compression="zstd") as w:
        for _ in range(rows // chunk):
            w.write_table(part)
    return buf.getvalue()


def test_a_parquet_decompression_bomb_is_refused_from_its_footer():
    """Issue 26 (F3): 3M rows in a few hundred KB are refused in one line from the footer's row
    count, before any column is decoded. Bound: the process's peak RSS grows < 64 MB (decoding
    3M rows into Python objects took hundreds of MB)."""
    data = _bomb_parquet(3_000_000)
    assert len(data) < 2_000_000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    with pytest.raises(InputError) as e:
        read_run_export(data, source="bomb.parquet", ids=IDS)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 64, grown_mb
    msg = str(e.value)
    assert "3000000 rows, more than 3 rows, one per text of the set" in msg and "bomb.parquet" in msg
    assert "\n" not in msg
    with pytest.raises(InputError, match=r"3000000 rows, more than 192 rows \(64 detectors of the set's 3 texts\)"):
        read_run_export(data, source="bomb.parquet", ids=IDS, detector="zippy")


def test_a_csv_export_is_read_only_up_to_the_cap():
    """A CSV run export longer than the set is refused once the rows pass the set's size (no
    detector named: one row a text) or 64 times it (a detector named)."""
    body = "doc_id,detector,status,ranking_score\n" + "a,zippy,ok,0.5\n" * 100_000
    with pytest.raises(InputError, match=r"more than 3 rows, one per text of the set"):
        read_run_export(body.encode(), source="long.csv", ids=IDS)
    with pytest.raises(InputError, match=r"more than 192 rows \(64 detectors of the set's 3 texts\)"):
        read_run_export(body.encode(), source="long.csv", ids=IDS, detector="zippy")


@pytest.mark.parametrize("rec", [{"id": "x" * 10_000, "score": 0.5}, {"id": "a", "score": 0.5, "k" * 10_000: 1}])
def test_an_error_echoes_at_most_64_characters_of_an_id_or_key(rec):
    """Issue 26: an error naming a hostile id or field echoes its first 64 characters and "…"."""
    data = json.dumps([rec]).encode()
    with pytest.raises(InputError) as e:
        raid_format.read_predictions(data, source="predictions.json", ids=IDS)
    msg = str(e.value)
    assert len(msg) < 400 and "…" in msg, msg


def test_a_run_export_error_echoes_at_most_64_characters():
    body = "doc_id,detector,status,ranking_score\n" + f"a,zippy,{'s' * 5000},\n"
    with pytest.raises(InputError) as e:
        read_run_export(body.encode(), source="run.csv", ids=IDS)
    assert len(str(e.value)) < 300 and "…" in str(e.value), str(e.value)
