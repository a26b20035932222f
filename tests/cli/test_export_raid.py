"""``veribench export raid-submission`` end to end: a RAID-format corpus from tests/data imported,
scored with the offline zippy detector, evaluated, exported as RAID's predictions.json and
metadata.json, and read back by the leaderboard's RAID reader."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from veribench.cli.main import app
from veribench.errors import InputError
from veribench.leaderboard.raid_format import read_metadata, read_predictions, read_run_export

DATA = Path(__file__).resolve().parents[1] / "data" / "public" / "raid"
PROTO = ('[protocol]\nname = "z"\ntag = "Z"\n\n[selection]\ncorpora = ["raid"]\n\n[[detectors]]\n'
         'name = "zippy"\nrule = { field = "raw", op = ">=", threshold = 0.0, source = "zippy default" }\n')


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("raidexp")
    w = root / "ws"
    assert run("import", "raid", DATA / "train.csv", "-w", w, "-q").exit_code == 0
    (root / "z.toml").write_text(PROTO)
    assert run("protocol", "commit", root / "z.toml", "-w", w).exit_code == 0
    r = run("evaluate", "-w", w, "-p", root / "z.toml", "-q")  # scores the documents with zippy first
    assert r.exit_code == 0, r.output
    return w


def test_export_reads_back_and_matches_the_run_rows(ws: Path, tmp_path: Path):
    out = tmp_path / "sub"
    r = run("export", "raid-submission", "--run", "Z", "-o", out, "--contact", "me@example.org", "-w", ws)
    assert r.exit_code == 0, r.output
    assert "predictions of detector zippy" in r.output
    rows_csv = tmp_path / "rows.csv"
    assert run("export", "scores", "--run", "Z", "-o", rows_csv, "-w", ws).exit_code == 0
    rows = list(csv.DictReader(io.StringIO(rows_csv.read_text())))
    # the texts outside zippy's declared languages are left out whatever their score (the rule of evaluation)
    scored = {x["doc_id"]: float(x["ranking_score"]) for x in rows if x["ranking_score"] not in ("", None)
              and not x["excluded"].startswith("language ")}
    assert len(scored) > 200
    got = read_predictions((out / "predictions.json").read_bytes(), source="predictions.json", ids=set(scored))
    assert got == pytest.approx(scored, rel=0, abs=0)
    # RAID's own shape, byte for byte: json.dump of [{"id", "score"}]
    first = json.loads((out / "predictions.json").read_text())[0]
    assert list(first) == ["id", "score"]
    meta = read_metadata((out / "metadata.json").read_bytes(), source="metadata.json")
    assert meta.contact_info == "me@example.org" and meta.detector_name == "zippy"
    assert isinstance(meta.additional_metadata, dict) and meta.additional_metadata["veribench_run_tag"] == "Z"
    assert meta.additional_metadata["texts_left_out"] == len(rows) - len(scored)
    # the veribench run export is accepted as a submission too, with the same scores
    ranked = {x["doc_id"] for x in rows if x["ranking_score"] not in ("", None)}
    back = read_run_export(rows_csv.read_bytes(), source="rows.csv", ids=ranked)
    assert {k: v for k, v in back.items() if k in scored} == got
    # RAID ids are kept: the corpus ids of the fixture are the ids in the file
    raid_ids = {x["id"] for x in csv.DictReader(io.StringIO((DATA / "train.csv").read_text()))}
    assert set(got) <= raid_ids


def test_include_out_of_scope_writes_every_scored_text_a_board_needs(ws: Path, tmp_path: Path):
    """The default export leaves out the texts outside zippy's declared languages, so a board
    holding the whole set refuses it; the message names --include-out-of-scope, which writes
    every text with a score and says how many were outside the declared languages."""
    rows_csv = tmp_path / "rows.csv"
    assert run("export", "scores", "--run", "Z", "-o", rows_csv, "-w", ws).exit_code == 0
    rows = list(csv.DictReader(io.StringIO(rows_csv.read_text())))
    every = {x["doc_id"]: float(x["ranking_score"]) for x in rows if x["ranking_score"] not in ("", None)}
    outside = {k for k in every if next(x for x in rows if x["doc_id"] == k)["excluded"].startswith("language ")}
    assert outside and len(every) > len(outside)
    r = run("export", "raid-submission", "--run", "Z", "-o", tmp_path / "d", "--contact", "me@example.org", "-w", ws)
    assert r.exit_code == 0, r.output
    left = [x for x in r.output.splitlines() if "texts outside the detector's declared languages" in x]
    assert len(left) == 1 and "--include-out-of-scope" in left[0] and "a board needs a score for every text" in left[0]
    with pytest.raises(InputError, match=f"{len(outside)} id\\(s\\) of the set have no prediction"):
        read_predictions((tmp_path / "d" / "predictions.json").read_bytes(), source="p", ids=set(every))
    r = run("export", "raid-submission", "--run", "Z", "-o", tmp_path / "i", "--contact", "me@example.org",
            "--include-out-of-scope", "-w", ws)
    assert r.exit_code == 0, r.output
    assert f"wrote {len(every)} predictions of detector zippy" in r.output
    assert f"wrote {len(outside)} texts outside the detector's declared languages" in r.output
    assert not [x for x in r.output.splitlines() if x.startswith("left out") and "declared languages" in x]
    got = read_predictions((tmp_path / "i" / "predictions.json").read_bytes(), source="p", ids=set(every))
    assert got == pytest.approx(every, rel=0, abs=0)
    meta = json.loads((tmp_path / "i" / "metadata.json").read_text())["additional_metadata"]
    assert meta["texts_out_of_scope"] == meta["texts_out_of_scope_written"] == len(outside)
    assert meta["texts_left_out"] == len(rows) - len(every) and "--include-out-of-scope" in meta["out_of_scope_rule"]
    assert "--include-out-of-scope" in run("export", "raid-submission", "--help").output


def test_export_with_a_raid_metadata_file(ws: Path, tmp_path: Path):
    m = tmp_path / "metadata.json"
    m.write_text(json.dumps({"date_released": "2024-05-25", "detector_name": "Zippy", "contact_info": "x@y.z"}))
    r = run("export", "raid-submission", "--run", "Z", "-o", tmp_path / "s", "--metadata", m, "-w", ws)
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "s" / "metadata.json").read_text())["detector_name"] == "Zippy"


@pytest.mark.parametrize(("args", "words"), [
    (["--run", "NOPE", "--contact", "c"], "no run with id or tag 'NOPE'"),
    (["--run", "Z", "--contact", "c", "-d", "zipy"], "unknown detector 'zipy' of run"),
    (["--run", "Z"], "--contact: RAID's metadata.json needs contact_info"),
])
def test_refusals_are_one_line(ws: Path, tmp_path: Path, args, words):
    r = run("export", "raid-submission", *args, "-o", tmp_path / "s", "-w", ws)
    assert r.exit_code != 0 and words in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output
    assert not (tmp_path / "s").exists()


def test_bad_metadata_file_is_one_line(ws: Path, tmp_path: Path):
    m = tmp_path / "metadata.json"
    m.write_text('{"date_released": "d", "detector_name": "x", "contact_info": "c", "websit": "w"}')
    r = run("export", "raid-submission", "--run", "Z", "-o", tmp_path / "s", "--metadata", m, "-w", ws)
    assert r.exit_code != 0 and "field 'websit'" in r.output and "did you mean 'website'" in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1


def test_a_text_without_a_score_is_left_out_and_counted_never_zero(tmp_path: Path):
    ws = tmp_path / "ws"
    docs = tmp_path / "c.jsonl"
    docs.write_text("".join(json.dumps({"id": f"t{i}", "text": f"Text number {i}.", "label": "ai" if i % 2 else "human"})
                            + "\n" for i in range(6)))
    assert run("import", "jsonl", docs, "-w", ws, "-q").exit_code == 0
    scores = tmp_path / "s.json"
    scores.write_text(json.dumps([{"doc_id": f"t{i}", "score": i / 10} for i in range(5)]
                                 + [{"doc_id": "t5", "status": "too_short", "reason": "under the minimum"}]))
    r = run("import", "scores", scores, "--detector", "det", "-w", ws, "-q")
    assert r.exit_code == 0, r.output
    proto = tmp_path / "p.toml"
    proto.write_text('[protocol]\nname = "lo"\ntag = "LO"\n')
    assert run("protocol", "commit", proto, "-w", ws).exit_code == 0
    assert run("evaluate", "-w", ws, "-p", proto, "-q").exit_code == 0
    r = run("export", "raid-submission", "--run", "LO", "-o", tmp_path / "s", "--contact", "c@d.e", "-w", ws)
    assert r.exit_code == 0, r.output
    assert "wrote 5 predictions" in r.output and "left out 1 texts without a score (too_short: 1; first: t5)" in r.output
    preds = json.loads((tmp_path / "s" / "predictions.json").read_text())
    assert {p["id"]: p["score"] for p in preds} == {f"t{i}": pytest.approx(i / 10) for i in range(5)}
    meta = json.loads((tmp_path / "s" / "metadata.json").read_text())
    assert meta["additional_metadata"]["texts_left_out"] == 1
    assert meta["additional_metadata"]["left_out_statuses"] == {"too_short": 1}
