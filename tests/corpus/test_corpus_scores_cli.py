"""``import scores`` end to end through the CLI (cases c01, c09, c28), columns never read by
alias, and hazards on every imported score (score files and liang2023's recorded outputs)."""

from __future__ import annotations

import csv
import json

import pytest
from sklearn.metrics import roc_auc_score
from typer.testing import CliRunner

from veribench.cli.main import app
from veribench.corpus.importers import import_documents, import_liang2023, import_scores
from veribench.errors import InputError
from veribench.store import Workspace
from veribench.text.hazards import text_hazards


def cli(*args: str) -> str:
    r = CliRunner().invoke(app, list(args))
    assert r.exit_code == 0, r.output
    return r.output


def _evaluate(ws, tmp_path) -> dict:
    out = tmp_path / "res.json"
    cli("evaluate", "-w", str(ws), "--json", str(out), "-q")
    return json.loads(out.read_text())


def _corpus(tmp_path, labels: dict[str, str]):
    f = tmp_path / "corpus.jsonl"
    f.write_text("\n".join(json.dumps({"id": i, "text": f"An invented essay, number {i}, about a harbour town.",
                                       "label": lab}) for i, lab in labels.items()))
    return f


def _report(ws_path, kind="scores") -> dict:
    with Workspace(ws_path, read_only=True) as ws:
        return json.loads(ws.query("SELECT report FROM imports WHERE kind = ? ORDER BY created_at DESC LIMIT 1",
                                   [kind])[0][0])


def test_c28_ground_truth_column_is_never_a_verdict(cases_dir, tmp_path):
    ws = tmp_path / "ws"
    cli("import", "jsonl", str(cases_dir / "c28/corpus.jsonl"), "-w", str(ws), "-q")
    out = cli("import", "scores", str(cases_dir / "c28/scores.csv"), "--detector", "tool", "-w", str(ws))
    assert "unused fields" in out and "field=label" in out
    rep = _report(ws)
    assert [(u["field"], u["records"]) for u in rep["unused_fields"]] == [("label", 12)]
    assert "ground truth" in rep["unused_fields"][0]["action"]
    with Workspace(ws, read_only=True) as w:
        assert w.query("SELECT count(*) FROM scores WHERE verdict IS NOT NULL") == [(0,)]
    res = _evaluate(ws, tmp_path)
    [row] = res["table1"]
    assert (row["ai_n"], row["detections"], row["human_n"], row["false_positives"]) == (6, 5, 6, 2)
    assert row["catch_rate"] == pytest.approx(5 / 6) and row["fpr"] == pytest.approx(2 / 6)
    assert row["auroc"] == pytest.approx(0.9166667, abs=1e-7)
    # an independent check of the numbers from the raw files
    with open(cases_dir / "c28/scores.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    y, s = [r["label"] == "ai" for r in rows], [float(r["score"]) for r in rows]
    assert roc_auc_score(y, s) == pytest.approx(row["auroc"])
    assert sum(v > 0.5 for v, t in zip(s, y) if t) == 5 and sum(v > 0.5 for v, t in zip(s, y) if not t) == 2


def test_c28_a_named_verdict_field_is_read(cases_dir, tmp_path, workspace):
    import_documents(workspace, cases_dir / "c28/corpus.jsonl")
    rep = import_scores(workspace, cases_dir / "c28/scores.csv", detector="tool", verdict_field="label")
    assert rep.unused_fields == []
    assert workspace.query("SELECT DISTINCT verdict FROM scores ORDER BY 1") == [("ai",), ("human",)]
    with pytest.raises(InputError) as ei:
        import_scores(workspace, cases_dir / "c28/scores.csv", detector="other", verdict_field="verdict")
    assert ei.value.field == "verdict" and "not a field of any record" in str(ei.value) and "label" in str(ei.value)


def test_verdict_column_is_not_read_by_its_name_either(tmp_path, workspace):
    import_documents(workspace, _corpus(tmp_path, {"h1": "human", "a1": "ai"}))
    f = tmp_path / "s.csv"
    f.write_text("id,score,verdict,notes\nh1,0.2,Human,x\na1,0.9,AI,\n")
    rep = import_scores(workspace, f, detector="D")
    assert {u["field"]: u["records"] for u in rep.unused_fields} == {"verdict": 2, "notes": 1}
    assert workspace.query("SELECT count(*) FROM scores WHERE verdict IS NOT NULL") == [(0,)]


def test_c01_through_the_cli(cases_dir, tmp_path):
    with open(cases_dir / "c01/labels.csv", newline="") as fh:
        labels = {r["id"]: r["label"] for r in csv.DictReader(fh)}
    ws = tmp_path / "ws"
    cli("import", "jsonl", str(_corpus(tmp_path, labels)), "-w", str(ws), "-q")
    out = cli("import", "scores", str(cases_dir / "c01/predictions.json"), "--detector", "c01", "-w", str(ws))
    assert "nonfinite scores: 2" in out and "doc-c" in out and "doc-f" in out
    rep = _report(ws)
    assert sorted(x["doc_id"] for x in rep["nonfinite_scores"]) == ["doc-c", "doc-f"]
    assert rep["scores"] == {"c01": 4}
    [row] = _evaluate(ws, tmp_path)["table1"]
    assert row["auroc"] == pytest.approx(0.75) and row["human_n"] + row["ai_n"] == 4


def test_c09_through_the_cli(cases_dir, tmp_path):
    recs = [json.loads(x) for x in (cases_dir / "c09/zippy_outputs.jsonl").read_text().splitlines() if x]
    ws = tmp_path / "ws"
    cli("import", "jsonl", str(_corpus(tmp_path, {r["id"]: r["truth"] for r in recs})), "-w", str(ws), "-q")
    cli("import", "scores", str(cases_dir / "c09/zippy_outputs.jsonl"), "--detector", "zippy-recorded",
        "--scale", "zippy_confidence", "--value-field", "zippy", "-w", str(ws), "-q")
    assert [u["field"] for u in _report(ws)["unused_fields"]] == ["truth"]
    [row] = _evaluate(ws, tmp_path)["table1"]
    assert row["auroc"] == pytest.approx(0.75)


def test_imported_scores_record_hazards(cases_dir, tmp_path, workspace):
    plain = (cases_dir / "c08/plain.txt").read_text(encoding="utf-8")
    homo = (cases_dir / "c08/homoglyph.txt").read_text(encoding="utf-8")
    zw = (cases_dir / "c08/zero_width.txt").read_text(encoding="utf-8")
    docs = tmp_path / "docs.jsonl"
    docs.write_text("\n".join(json.dumps(r) for r in [
        {"id": "p", "text": plain, "label": "human"}, {"id": "h", "text": homo, "label": "ai"},
        {"id": "f", "text_sha256": "ab" * 32, "label": "human"}]), encoding="utf-8")
    import_documents(workspace, docs)
    f = tmp_path / "s.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in [
        {"id": "p", "score": 0.1}, {"id": "h", "score": 0.8},
        {"id": "f", "score": 0.3},  # fingerprint only: no text to scan
        {"id": "p", "score": 0.5, "detector": "Other", "text": zw},  # the tool was sent another text
    ]), encoding="utf-8")
    import_scores(workspace, f, detector="Tool")
    got = {(d, n): json.loads(det) for d, n, det in workspace.query(
        "SELECT u.doc_id, s.name, c.detail FROM submissions u JOIN specs s USING (spec_hash) JOIN scores c "
        "ON c.spec_hash = u.spec_hash AND c.text_sha256 = u.submitted_sha256")}
    assert got[("p", "Tool")]["hazards"] == text_hazards(plain)
    assert got[("h", "Tool")]["hazards"]["confusables"] == 30
    assert got[("p", "Other")]["hazards"]["invisible"] == 20  # hazards of the text as submitted
    assert got[("f", "Tool")]["hazards"] is None and "fingerprint" in got[("f", "Tool")]["hazards_reason"]


def test_liang2023_recorded_outputs_record_hazards(tmp_path, liang_dir):
    with Workspace(tmp_path / "ws") as ws:
        import_liang2023(ws, liang_dir)
        rows = ws.query(
            "SELECT c.text_sha256, c.detail, coalesce(t.text, d.text) FROM scores c "
            "LEFT JOIN submitted_texts t USING (text_sha256) "
            "LEFT JOIN (SELECT text_sha256, any_value(text) AS text FROM documents GROUP BY 1) d USING (text_sha256)")
        assert len(rows) > 3000
        for _, detail, text in rows:
            assert json.loads(detail)["hazards"] == text_hazards(text)
        # the Liang sets hold real invisible characters; they are counted, not lost
        assert sum(json.loads(d)["hazards"]["invisible"] > 0 for _, d, _ in rows) == sum(
            any(ch in t for ch in "\u200b\u200c\u200d\ufeff\u00ad\u2060") for _, _, t in rows)


def test_a_verdict_signed_scale_asks_for_the_verdict_field(tmp_path, workspace):
    import_documents(workspace, _corpus(tmp_path, {"h1": "human", "a1": "ai"}))
    f = tmp_path / "z.csv"
    f.write_text("id,confidence,verdict\nh1,0.05,Human\na1,0.02,AI\n")
    with pytest.raises(InputError, match="--verdict-field"):
        import_scores(workspace, f, detector="Z", scale="zippy_confidence", value_field="confidence")
    import_scores(workspace, f, detector="Z", scale="zippy_confidence", value_field="confidence",
                  verdict_field="verdict")
    assert sorted(workspace.query("SELECT raw FROM scores")) == [(-0.05,), (0.02,)]


def test_a_future_scan_date_is_refused_naming_file_record_and_field(tmp_path):
    """A scan cannot be dated after the import that logs it: the file is refused with one line
    naming the record and the field, and nothing is stored (the bundle would fail later)."""
    ws = tmp_path / "ws"
    cli("import", "jsonl", str(_corpus(tmp_path, {"t1": "human", "t2": "ai"})), "-w", str(ws), "-q")
    f = tmp_path / "s.csv"
    f.write_text("doc_id,detector,raw,scanned_at\nt1,detY,0.1,2026-01-01\nt2,detY,0.5,2099-01-01\n", encoding="utf-8")
    r = CliRunner().invoke(app, ["import", "scores", str(f), "-w", str(ws)])
    assert r.exit_code != 0 and r.exception is None or isinstance(r.exception, SystemExit), r.output
    line = r.output.strip()
    assert "\n" not in line and "s.csv" in line and "scanned_at" in line and "in the future" in line, line
    with Workspace(ws, read_only=True) as w:
        assert w.query("SELECT count(*) FROM scores")[0][0] == 0


def test_a_conflicting_re_import_counts_no_score_as_stored(tmp_path):
    """Stored scores are never overwritten: re-importing other values stores nothing, and the
    summary says so (0 scores, the conflicts named), also with -q."""
    ws = tmp_path / "ws"
    cli("import", "jsonl", str(_corpus(tmp_path, {"t1": "human", "t2": "ai"})), "-w", str(ws), "-q")
    f = tmp_path / "s.csv"
    f.write_text("doc_id,detector,raw\nt1,detA,0.3\nt2,detA,0.6\n", encoding="utf-8")
    assert "2 scores" in cli("import", "scores", str(f), "-w", str(ws), "-q")
    f.write_text("doc_id,detector,raw\nt1,detA,0.77\nt2,detA,0.6\n", encoding="utf-8")
    out = cli("import", "scores", str(f), "-w", str(ws), "-q")
    assert "0 scores" in out and "1 score conflicts (stored scores kept)" in out, out
    with Workspace(ws, read_only=True) as w:
        assert sorted(r[0] for r in w.query("SELECT raw FROM scores")) == [0.3, 0.6]
