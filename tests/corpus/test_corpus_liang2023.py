"""liang2023 importer: acceptance figures from the stored scores, the import report, bad input.

Every expected number is counted here from the raw JSON files with plain Python,
never through veribench code.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from veribench.corpus.importers import import_liang2023
from veribench.errors import InputError
from veribench.hashing import text_sha256
from veribench.store import Workspace

DETECTORS = ["GPTZero", "OriginalityAI", "ZeroGPT", "Crossplag", "HFOpenAI", "Quil", "Sapling"]
ECHO = {"OriginalityAI": ("result_full", "content"), "Quil": ("result_full", "text"), "Sapling": ("result_full", "text")}


def _sets(root: Path):
    return sorted(p for g in ("Human_Data", "GPT_Data") for p in (root / g).iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def liang(tmp_path_factory, liang_dir):
    ws = Workspace(tmp_path_factory.mktemp("liang") / "ws")
    report = import_liang2023(ws, liang_dir)
    yield ws, report, liang_dir
    ws.close()


def _stored_p(ws, subgroup):
    """{(doc_id, detector): P(AI)} joined through submissions, by plain SQL."""
    rows = ws.query(
        """SELECT u.doc_id, s.name, c.ai_probability FROM submissions u
           JOIN specs s USING (spec_hash)
           JOIN scores c ON c.spec_hash = u.spec_hash AND c.text_sha256 = u.submitted_sha256
           JOIN documents d ON d.doc_id = u.doc_id
           WHERE d.subgroup = ? AND c.status = 'ok'""", [subgroup])
    return {(d, n): p for d, n, p in rows}


def test_toefl_published_figures_from_stored_scores(liang):
    ws, _, root = liang
    # independent count from the raw files
    raw = {det: [r["score"] for r in json.loads((root / "Human_Data/TOEFL_real_91" / f"{det}.json").read_text())]
           for det in DETECTORS}
    n = len(json.loads((root / "Human_Data/TOEFL_real_91/data.json").read_text()))
    assert n == 91
    fpr_raw = [sum(s > 0.5 for s in raw[d]) / n for d in DETECTORS]
    flags_raw = [sum(raw[d][i] > 0.5 for d in DETECTORS) for i in range(n)]
    assert round(100 * sum(fpr_raw) / 7, 2) == 61.22
    assert sum(f >= 1 for f in flags_raw) == 89 and sum(f == 7 for f in flags_raw) == 18

    # the same from the workspace
    docs = ws.query("SELECT doc_id, label FROM documents WHERE subgroup = 'TOEFL_real_91' ORDER BY doc_id")
    assert len(docs) == 91 and {lab for _, lab in docs} == {"human"}
    p = _stored_p(ws, "TOEFL_real_91")
    assert len(p) == 91 * 7
    fpr = [sum(p[(f"liang2023/TOEFL_real_91/{i}", d)] > 0.5 for i in range(n)) / n for d in DETECTORS]
    assert fpr == pytest.approx(fpr_raw, abs=0)
    assert round(100 * sum(fpr) / 7, 2) == 61.22
    flags = [sum(p[(f"liang2023/TOEFL_real_91/{i}", d)] > 0.5 for d in DETECTORS) for i in range(n)]
    assert flags == flags_raw


def test_every_set_every_detector_matches_raw(liang):
    ws, report, root = liang
    for sdir in _sets(root):
        data = json.loads((sdir / "data.json").read_text())
        kind = json.loads((sdir / "name.json").read_text())["kind"]
        want = "human" if kind == "Human-Written" else ("ai-edited-human" if sdir.parent.name == "Human_Data" else "ai")
        rows = ws.query("SELECT doc_id, label, text_sha256 FROM documents WHERE subgroup = ?", [sdir.name])
        assert len(rows) == len(data)  # counts follow the source records (duplicates kept)
        assert {r[1] for r in rows} == {want}
        by_id = {r[0]: r[2] for r in rows}
        for i, rec in enumerate(data):
            assert by_id[f"liang2023/{sdir.name}/{i}"] == text_sha256(rec["document"])
        p = _stored_p(ws, sdir.name)
        for det in DETECTORS:
            recs = json.loads((sdir / f"{det}.json").read_text())
            for i, r in enumerate(recs):
                assert p[(f"liang2023/{sdir.name}/{i}", det)] == float(r["score"])
        assert report.sets[sdir.name]["records"] == len(data)


def test_specs_tags_provenance(liang):
    ws, _, _ = liang
    specs = ws.query("SELECT name, version, settings FROM specs WHERE kind = 'detector' ORDER BY name")
    assert [s[0] for s in specs] == sorted(DETECTORS)
    assert {s[1] for s in specs} == {"liang2023-recorded"}
    assert {json.loads(s[2])["source"] for s in specs} == {"liang2023"}
    tags = dict(ws.query("SELECT subgroup, any_value(tags) FROM documents GROUP BY subgroup"))
    assert json.loads(tags["TOEFL_real_91"])["writer"] == "non-native"
    assert json.loads(tags["HewlettStudentEssay_real_88"])["writer"] == "native"
    assert json.loads(tags["CollegeEssay_real_70"])["writer"] == "native"
    prov = json.loads(ws.query("SELECT provenance FROM documents LIMIT 1")[0][0])
    assert prov["licence"].startswith("MIT") and "Weixin-Liang/ChatGPT-Detector-Bias" in prov["source_url"]
    assert "Patterns 4(7)" in prov["citation"]
    kinds = ws.query("SELECT DISTINCT kind FROM documents")
    assert kinds == [("essay",)]


def test_calibration_groups_keep_edited_text_with_its_source(liang):
    ws, _, root = liang
    g = dict(ws.query("SELECT doc_id, group_key FROM documents"))
    for i in range(91):
        assert g[f"liang2023/TOEFL_gpt4polished_91/{i}"] == g[f"liang2023/TOEFL_real_91/{i}"]
    for i in range(88):
        assert g[f"liang2023/HewlettStudentEssay_GPTsimplify_88/{i}"] == g[f"liang2023/HewlettStudentEssay_real_88/{i}"]
    # the two identical TOEFL essays share one group, so a duplicate never straddles the split
    assert g["liang2023/TOEFL_real_91/45"] == g["liang2023/TOEFL_real_91/50"]


def test_report_counts_follow_source_records(liang):
    ws, report, root = liang
    # duplicates: independent count of records whose text repeats inside their set
    dup_records = 0
    for sdir in _sets(root):
        c = Counter(r["document"] for r in json.loads((sdir / "data.json").read_text()))
        dup_records += sum(v for v in c.values() if v > 1)
    assert report.issue_counts()["duplicates"] == dup_records == 2
    assert report.duplicates[0]["doc_ids"] == ["liang2023/TOEFL_real_91/45", "liang2023/TOEFL_real_91/50"]

    # text differs: the detector's echo of the text it scored differs from data.json
    differs, seen_texts = 0, set()
    for sdir in _sets(root):
        data = [r["document"] for r in json.loads((sdir / "data.json").read_text())]
        for det in DETECTORS:
            for i, r in enumerate(json.loads((sdir / f"{det}.json").read_text())):
                seen = r.get("document", data[i])
                if det in ECHO:
                    e = r.get(ECHO[det][0], {}).get(ECHO[det][1])
                    seen = e if isinstance(e, str) and e.strip() else seen
                differs += seen != data[i]
                if seen != data[i]:
                    seen_texts.add(seen)
    assert len(report.text_differs) == differs > 0
    # ... and every one of them is flagged downstream through the submitted hash
    flagged = ws.query("SELECT count(*) FROM submissions u JOIN documents d USING (doc_id) "
                       "WHERE u.submitted_sha256 <> d.text_sha256")[0][0]
    assert flagged == differs
    hows = Counter(x["how"] for x in report.text_differs)
    assert hows["doubled"] > 0 and hows["truncated"] > 0
    # the texts the detectors saw are kept for inspection
    stored_texts = {t for (t,) in ws.query("SELECT text FROM submitted_texts")}
    assert stored_texts == seen_texts

    # bare NaN in nested fields: count NaN tokens in the raw files
    nan_tokens = sum((sdir / f"{det}.json").read_text().count("NaN") for sdir in _sets(root) for det in DETECTORS)
    assert len(report.nested_nonfinite) == nan_tokens == 7
    # integer scores
    ints = sum(isinstance(r["score"], int) for sdir in _sets(root) for det in DETECTORS
               for r in json.loads((sdir / f"{det}.json").read_text()))
    assert report.issue_counts()["integer_scores"] == ints == 15
    # control characters (C1 U+0092: cp1252 apostrophes decoded as latin-1)
    ctrl = sum(any(0x80 <= ord(ch) <= 0x9F or (ord(ch) < 0x20 and ch not in "\t\n\r") for ch in r["document"])
               for sdir in _sets(root) for r in json.loads((sdir / "data.json").read_text()))
    assert len(report.suspicious_text) == ctrl == 6
    assert report.missing_detector_files == [] and report.nonfinite_scores == []
    # the report is stored in the imports table as JSON
    stored = json.loads(ws.query("SELECT report FROM imports WHERE import_id = ?", [report.import_id])[0][0])
    assert stored["issue_counts"] == report.issue_counts() and stored["records"] == 490


def test_reimport_is_idempotent(liang):
    ws, _, root = liang
    before = ws.query("SELECT count(*) FROM scores")[0][0], ws.query("SELECT count(*) FROM documents")[0][0]
    r2 = import_liang2023(ws, root)
    assert r2.documents == 0 and r2.already_present == 490 and r2.score_conflicts == []
    assert (ws.query("SELECT count(*) FROM scores")[0][0], ws.query("SELECT count(*) FROM documents")[0][0]) == before


# -- quirks and bad input on small modified copies -------------------------------------

@pytest.fixture()
def small_copy(tmp_path, liang_dir):
    """A copy holding only TOEFL_real_91 (writable)."""
    root = tmp_path / "liang"
    shutil.copytree(liang_dir / "Human_Data/TOEFL_real_91", root / "Human_Data/TOEFL_real_91")
    for p in root.rglob("*"):
        p.chmod(0o644 if p.is_file() else 0o755)
    return root


def _dump(ws):
    return {t: ws.query(f"SELECT * FROM {t} ORDER BY ALL") for t in ("documents", "scores", "submissions", "specs")}


def _edit(path: Path, fn):
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


def test_missing_file_and_nonfinite_score_are_reported(small_copy, workspace):
    s = small_copy / "Human_Data/TOEFL_real_91"
    (s / "Quil.json").unlink()
    _edit(s / "ZeroGPT.json", lambda d: d[3].__setitem__("score", float("nan")))
    rep = import_liang2023(workspace, small_copy)
    assert rep.missing_detector_files == [{"set": "TOEFL_real_91", "detector": "Quil",
                                           "file": "liang/Human_Data/TOEFL_real_91/Quil.json"}]
    assert [x["doc_id"] for x in rep.nonfinite_scores] == ["liang2023/TOEFL_real_91/3"]
    assert rep.scores["ZeroGPT"] == 90 and "Quil" not in rep.scores
    # never coerced to 0: the document simply has no ZeroGPT score
    row = workspace.query("SELECT count(*) FROM submissions u JOIN specs s USING (spec_hash) "
                          "WHERE s.name = 'ZeroGPT' AND u.doc_id = 'liang2023/TOEFL_real_91/3'")
    assert row == [(0,)]


@pytest.mark.parametrize("case", ["malformed", "missing_score", "out_of_range", "empty_text", "bad_kind",
                                  "not_utf8", "string_score", "length"])
def test_bad_input_names_file_record_field_and_writes_nothing(case, small_copy, tmp_path, liang_dir):
    ws = Workspace(tmp_path / "ws")
    # something already stored must survive the failed import untouched
    import_liang2023(ws, _only(liang_dir, tmp_path, "CollegeEssay_gpt3_31"))
    before = _dump(ws)
    s = small_copy / "Human_Data/TOEFL_real_91"
    expect: tuple = ()
    if case == "malformed":
        (s / "GPTZero.json").write_text((s / "GPTZero.json").read_text()[:-20])
        expect = ("GPTZero.json", None, None)
    elif case == "missing_score":
        _edit(s / "Crossplag.json", lambda d: d[7].pop("score"))
        expect = ("Crossplag.json", 7, "score")
    elif case == "out_of_range":
        _edit(s / "Sapling.json", lambda d: d[12].__setitem__("score", 1.7))
        expect = ("Sapling.json", 12, "score")
    elif case == "string_score":
        _edit(s / "HFOpenAI.json", lambda d: d[2].__setitem__("score", "0.3"))
        expect = ("HFOpenAI.json", 2, "score")
    elif case == "empty_text":
        _edit(s / "data.json", lambda d: d[5].__setitem__("document", "   "))
        expect = ("data.json", 5, "document")
    elif case == "bad_kind":
        (s / "name.json").write_text('{"name": "x", "kind": "Robot", "model": "x"}')
        expect = ("name.json", None, "kind")
    elif case == "not_utf8":
        raw = json.loads((s / "data.json").read_text())
        raw[9]["document"] = "caf\u00e9 " + raw[9]["document"]
        (s / "data.json").write_bytes(json.dumps(raw, ensure_ascii=False).encode("latin-1", "replace"))
        expect = ("data.json", 9, "document")
    elif case == "length":
        _edit(s / "ZeroGPT.json", lambda d: d.pop())
        expect = ("ZeroGPT.json", None, None)
    with pytest.raises(InputError) as ei:
        import_liang2023(ws, small_copy)
    e = ei.value
    assert e.file.endswith(expect[0])
    if expect[1] is not None:
        assert e.record == expect[1]
    if expect[2] is not None:
        assert e.field == expect[2]
    assert _dump(ws) == before
    ws.close()


def _only(liang_dir, tmp_path, set_name):
    root = tmp_path / f"only_{set_name}"
    group = "GPT_Data" if "gpt3" in set_name and "Human" not in set_name else "Human_Data"
    shutil.copytree(liang_dir / group / set_name, root / group / set_name)
    return root


def test_failure_inside_the_transaction_rolls_back(small_copy, workspace, monkeypatch):
    """A failure after some rows were written (here: the 4th detector's scores) undoes all."""
    before = _dump(workspace)
    from veribench.store import writes

    real = writes.put_scores
    calls = []

    def failing(ws, spec, items, **kw):
        calls.append(spec.name)
        if len(calls) == 4:
            raise RuntimeError("disk full")
        return real(ws, spec, items, **kw)

    monkeypatch.setattr(writes, "put_scores", failing)
    with pytest.raises(RuntimeError):
        import_liang2023(workspace, small_copy)
    monkeypatch.undo()
    assert _dump(workspace) == before
    assert workspace.query("SELECT count(*) FROM imports") == [(0,)]


def test_nonfinite_values_never_reach_json(small_copy, workspace):
    s = small_copy / "Human_Data/TOEFL_real_91"
    _edit(s / "GPTZero.json", lambda d: d[0].__setitem__("perplexity", float("inf")))
    rep = import_liang2023(workspace, small_copy)
    assert {"path": "perplexity", "value": "Infinity"}.items() <= rep.nested_nonfinite[0].items()
    detail = workspace.query("SELECT c.detail FROM scores c JOIN specs s USING (spec_hash) WHERE s.name='GPTZero' "
                             "AND c.text_sha256 = (SELECT text_sha256 FROM documents WHERE doc_id = "
                             "'liang2023/TOEFL_real_91/0')")[0][0]
    assert json.loads(detail)["perplexity"] is None


def test_upstream_repository_layout(small_copy, tmp_path, workspace):
    """The upstream repo keeps some name.json/data.json files under data/<group>/<set>/."""
    repo = tmp_path / "ChatGPT-Detector-Bias"
    shutil.copytree(small_copy / "Human_Data", repo / "Data_and_Results/Human_Data")
    moved = repo / "data/human_data/TOEFL_real_91"
    moved.mkdir(parents=True)
    (repo / "Data_and_Results/Human_Data/TOEFL_real_91/name.json").rename(moved / "name.json")
    rep = import_liang2023(workspace, repo)
    assert rep.documents == 91 and rep.sets["TOEFL_real_91"]["labels"] == {"human": 91}
