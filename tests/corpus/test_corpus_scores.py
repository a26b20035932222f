"""Recorded-score import (cases c01 and c09), the scale table, and bad score files."""

from __future__ import annotations

import csv
import json
import math

import pytest
from sklearn.metrics import roc_auc_score

from veribench import registry
from veribench.corpus.importers import import_documents, import_scores
from veribench.errors import InputError, VeribenchError
from veribench.scales import SCALES, ImportedDetector, get_scale, normalise


def _docs(ws, tmp_path, labels: dict[str, str]) -> None:
    f = tmp_path / "docs.jsonl"
    f.write_text("\n".join(json.dumps({"id": i, "text": f"invented text number {i}", "label": lab})
                           for i, lab in labels.items()))
    import_documents(ws, f)


def _stored(ws, detector: str):
    return ws.query(
        """SELECT u.doc_id, d.label, c.raw, c.ai_probability, c.verdict, c.scale FROM submissions u
           JOIN specs s USING (spec_hash) JOIN documents d USING (doc_id)
           JOIN scores c ON c.spec_hash = u.spec_hash AND c.text_sha256 = u.submitted_sha256
           WHERE s.name = ? ORDER BY u.doc_id""", [detector])


def test_c01_nonfinite_rows_named_never_zero(cases_dir, tmp_path, workspace):
    with open(cases_dir / "c01/labels.csv", newline="") as fh:
        labels = {r["id"]: r["label"] for r in csv.DictReader(fh)}
    _docs(workspace, tmp_path, labels)
    rep = import_scores(workspace, cases_dir / "c01/predictions.json", detector="c01-detector")
    rows = _stored(workspace, "c01-detector")
    assert [r[0] for r in rows] == ["doc-a", "doc-b", "doc-d", "doc-e"]  # the 4 finite rows
    assert sorted(x["doc_id"] for x in rep.nonfinite_scores) == ["doc-c", "doc-f"]
    assert {x["value"] for x in rep.nonfinite_scores} == {"NaN", "-Infinity"}
    assert all(r[2] is not None and math.isfinite(r[2]) for r in rows)
    y = [1 if r[1] == "ai" else 0 for r in rows]
    assert roc_auc_score(y, [r[3] for r in rows]) == pytest.approx(0.75)
    stored = json.loads(workspace.query("SELECT report FROM imports WHERE kind='scores'")[0][0])
    assert sorted(x["doc_id"] for x in stored["nonfinite_scores"]) == ["doc-c", "doc-f"]


def test_c09_zippy_confidence_is_signed_by_verdict(cases_dir, tmp_path, workspace):
    recs = [json.loads(line) for line in (cases_dir / "c09/zippy_outputs.jsonl").read_text().splitlines() if line]
    _docs(workspace, tmp_path, {r["id"]: r["truth"] for r in recs})
    import_scores(workspace, cases_dir / "c09/zippy_outputs.jsonl", detector="zippy-recorded",
                  scale="zippy_confidence", value_field="zippy")
    rows = _stored(workspace, "zippy-recorded")
    by = {r[0]: r for r in rows}
    for r in recs:
        verdict, conf = r["zippy"]
        assert by[r["id"]][2] == (conf if verdict == "AI" else -conf)
        assert by[r["id"]][4] == verdict and by[r["id"]][3] is None and by[r["id"]][5] == "zippy_signed_delta"
    y = [1 if r["truth"] == "ai" else 0 for r in recs]
    assert roc_auc_score(y, [by[r["id"]][2] for r in recs]) == pytest.approx(0.75)
    assert roc_auc_score(y, [r["zippy"][1] for r in recs]) == pytest.approx(0.5)  # what unsigned would give


@pytest.mark.parametrize("scale,value,p", [
    ("p_ai", 0.61, 0.61), ("percent_ai", 92, 0.92), ("human_0_100", 85, 0.15), ("percent_human", 30, 0.70),
    ("p_human", 0.75, 0.25), ("human_0_1", 0.45, 0.55), ("score_higher_ai", -3.2, None),
])
def test_scale_table(scale, value, p):
    r = normalise(value, scale)
    assert r.raw == value
    assert (r.ai_probability is None) if p is None else r.ai_probability == pytest.approx(p)
    assert r.direction == get_scale(scale).direction


def test_scale_errors():
    with pytest.raises(ValueError, match="above"):
        normalise(101, "percent_ai")
    with pytest.raises(ValueError, match="below"):
        normalise(-0.1, "p_ai")
    with pytest.raises(ValueError, match="not finite"):
        normalise(float("nan"), "p_ai")
    with pytest.raises(ValueError, match="verdict"):
        normalise(0.2, "zippy_confidence")
    with pytest.raises(InputError, match="known scales"):
        get_scale("furlongs")
    assert set(SCALES) >= {"p_ai", "percent_ai", "p_human", "human_0_100", "zippy_signed_delta"}


def test_imported_detector_spec_and_registry():
    d = registry.create("detector", "imported", {"name": "GPTZero", "version": "2024-05", "source": "manual"})
    assert isinstance(d, ImportedDetector)
    assert d.spec.to_dict() == {"kind": "detector", "name": "GPTZero", "version": "2024-05",
                                "settings": {"source": "manual"}}
    assert ImportedDetector("X").spec.settings == {"source": "imported"}
    with pytest.raises(VeribenchError, match="imported"):
        d.score_batch(["a text"])


def test_hand_gathered_csv_with_versions_dates_and_submitted_text(tmp_path, workspace):
    _docs(workspace, tmp_path, {"h1": "human", "a1": "ai"})
    f = tmp_path / "winston.csv"
    f.write_text("doc_id,detector,raw,scale,version,scan_date,submitted_text,status\n"
                 "h1,Winston AI,85,human_0_100,v3,2026-11-20,,\n"
                 "a1,Winston AI,3,human_0_100,v3,2026-11-21T10:00:00Z,pasted text that differs,\n"
                 "h1,GPTZero,,,,,,too_short\n")
    rep = import_scores(workspace, f)
    rows = {(r[0], r[1]): r for r in workspace.query(
        "SELECT u.doc_id, s.name, s.version, c.status, c.ai_probability, c.scanned_at, "
        "u.submitted_sha256 <> d.text_sha256 FROM submissions u JOIN specs s USING (spec_hash) "
        "JOIN documents d USING (doc_id) LEFT JOIN scores c ON c.spec_hash = u.spec_hash AND "
        "c.text_sha256 = u.submitted_sha256")}
    assert rows[("h1", "Winston AI")][4] == pytest.approx(0.15) and rows[("h1", "Winston AI")][2] == "v3"
    assert rows[("a1", "Winston AI")][4] == pytest.approx(0.97)
    assert rows[("a1", "Winston AI")][5].isoformat().startswith("2026-11-21T10:00:00")
    assert rows[("h1", "Winston AI")][5].date().isoformat() == "2026-11-20"
    assert rows[("a1", "Winston AI")][6] is True and rows[("h1", "Winston AI")][6] is False
    assert rows[("h1", "GPTZero")][3] == "too_short"
    assert rep.text_differs[0]["doc_id"] == "a1"
    assert workspace.query("SELECT text FROM submitted_texts") == [("pasted text that differs",)]


@pytest.mark.parametrize("content,record,field,msg", [
    ("doc_id,raw\nh1,1.5\n", "line 2", "raw", "out of range"),
    ("doc_id,raw\nzz,0.5\n", "line 2", "doc_id", "unknown document"),
    ("doc_id,raw\nh1,abc\n", "line 2", "raw", "number"),
    ("doc_id,raw\nh1,0.2\nh1,0.3\n", "line 3", "doc_id", "second score"),
    ("doc_id,raw,scan_date\nh1,0.2,yesterday\n", "line 2", "scan_date", "ISO"),
    ("doc_id,raw,scale\nh1,0.2,furlongs\n", "line 2", "scale", "unknown scale"),
    ("doc_id,raw\nh1,\n", "line 2", "raw", "missing"),
    ("raw\n0.2\n", "line 2", "doc_id", "missing"),
    ('doc_id,raw\nh1,"0.2\n', "line 2", None, "malformed CSV"),
])
def test_bad_score_files(tmp_path, workspace, content, record, field, msg):
    _docs(workspace, tmp_path, {"h1": "human"})
    f = tmp_path / "s.csv"
    f.write_text(content)
    with pytest.raises(InputError) as ei:
        import_scores(workspace, f, detector="D")
    e = ei.value
    assert e.file == str(f) and e.record == record and msg.lower() in str(e).lower()
    if field:
        assert e.field == field
    assert workspace.query("SELECT count(*) FROM scores") == [(0,)]


def test_bad_json_score_file(tmp_path, workspace):
    _docs(workspace, tmp_path, {"h1": "human"})
    f = tmp_path / "s.json"
    f.write_text('[{"id": "h1", "score": 0.2},\n {"id": "h1" "score": 0.3}]')
    with pytest.raises(InputError) as ei:
        import_scores(workspace, f, detector="D")
    assert ei.value.record == "line 2" and "malformed JSON" in str(ei.value)
    f.write_bytes(b'[{"id": "h1", "score": 0.2, "verdict": "r\xe9el"}]')
    with pytest.raises(InputError) as ei:
        import_scores(workspace, f, detector="D")
    assert ei.value.record == 0 and ei.value.field == "verdict"


def test_two_records_of_one_text_with_different_scores_are_a_conflict_never_silently_one(tmp_path, workspace):
    """A score is a text's (one per detector and text). Two documents of one text scored
    differently in one file: the first is stored and the second is reported as a score conflict
    naming its document (found by a leaderboard whose hidden set held one RAID text under two
    ids: one team score silently stood for both); equal scores are no conflict."""
    f = tmp_path / "docs.jsonl"
    f.write_text("\n".join(json.dumps({"id": i, "text": "one and the same invented text", "label": "ai"})
                           for i in ("t1", "t2", "t3")))
    import_documents(workspace, f)
    s = tmp_path / "scores.csv"
    s.write_text("doc_id,detector,raw,scale\nt1,det,0.25,p_ai\nt2,det,0.75,p_ai\nt3,det,0.25,p_ai\n")
    rep = import_scores(workspace, s)
    assert [(c["doc_id"], c["score"], c["stored_score"]) for c in rep.score_conflicts] == [("t2", 0.75, 0.25)]
    assert "record of t1" in rep.score_conflicts[0]["stored_from"]
    assert sorted(r[2] for r in _stored(workspace, "det")) == [0.25, 0.25, 0.25]
