"""Every hostile input of issue 12, replayed through the command line.

For each refused input: exit code 1, exactly one line of output (``error: file ..., record
..., field ...: ...``), no traceback, and the workspace byte-identical before and after
(the database file's bytes after close, and a dump of every table). A subset runs in a
real subprocess (``python -m veribench.cli.main``), the rest through typer's CliRunner.
Inputs that must be accepted (long CSV texts, Parquet dates) are checked for what was
stored. Hypothesis then feeds random JSON/CSV text to the shared reader: nothing but an
``InputError`` may come out.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from veribench.cli.main import app
from veribench.errors import InputError

REPO = Path(__file__).resolve().parents[2]
GOOD = {"id": "h-1", "text": "An ordinary sentence of test text.", "label": "ai"}


def _line(**extra) -> str:
    return json.dumps({**GOOD, **extra})


def _raw(prefix: str, body: str) -> str:
    """A JSONL line whose last fields are written by hand (for NaN, escapes, duplicates)."""
    return "{" + json.dumps(GOOD)[1:-1] + ", " + body + "}" + prefix


# -- the workspace snapshot -------------------------------------------------------------
def snapshot(ws: Path) -> tuple[dict[str, str], dict[str, list]]:
    """(sha256 of every file in the folder, every table's rows in a stable order)."""
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(ws.iterdir()) if p.is_file()}
    con = duckdb.connect(str(ws / "veribench.duckdb"), read_only=True)
    try:
        tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall()]
        dump = {t: sorted(map(repr, con.execute(f'SELECT * FROM "{t}"').fetchall())) for t in tables}
    finally:
        con.close()
    return files, dump


@pytest.fixture(scope="module")
def seeded(tmp_path_factory, liang_dir) -> Path:
    """A workspace holding the real Liang et al. (2023) sets and their 3,430 recorded scores."""
    from veribench.corpus.importers import import_liang2023
    from veribench.store import Workspace

    path = tmp_path_factory.mktemp("seed") / "ws"
    with Workspace(path) as ws:
        import_liang2023(ws, liang_dir)
    return path


@pytest.fixture()
def ws(seeded, tmp_path) -> Path:
    dst = tmp_path / "ws"
    shutil.copytree(seeded, dst)
    return dst


# -- the hostile inputs -------------------------------------------------------------------
def _deep(n: int) -> str:
    return "[" * n + "]" * n


JSONL = {
    # id: (file text or bytes, substring of the message, field named or None)
    "nan-nested": (_raw("\n", '"generation": {"settings": {"k": NaN}}'), "NaN is not a finite number",
                   "generation.settings.k"),
    "infinity-nested": (_raw("\n", '"provenance": {"score": -Infinity}'), "-Infinity is not a finite",
                        "provenance.score"),
    "overflow-float": (_raw("\n", '"generation": {"temperature": 1e999}'), "Infinity is not a finite",
                       "generation.temperature"),
    "nan-as-text": (_line(generation={"temperature": "nan"}), "NaN is not a finite", "generation.temperature"),
    "deep-past-recursion-limit": (_raw("\n", f'"tags": {_deep(50_000)}'), "nested deeper than 100", None),
    "deep-past-limit": (_raw("\n", '"provenance": {"x": ' + _deep(150) + "}"), "nested deeper than 100", None),
    "integer-5000-digits": (_raw("\n", '"generation": {"seed": ' + "9" * 5000 + "}"), "5,000 digits", None),
    "duplicate-key": (_raw("\n", '"label": "human"'), "duplicate key 'label'", "label"),
    "duplicate-key-nested": (_raw("\n", '"generation": {"model": "a", "model": "b"}'), "duplicate key 'model'",
                             "model"),
    "lone-surrogate": (_raw("\n", '"subgroup": "x \\ud800 y"'), "lone surrogate U+D800", "subgroup"),
    "lone-surrogate-key": (_raw("\n", '"tags": {"\\udfff": "v"}'), "lone surrogate U+DFFF", "tags.<key>"),
    "not-utf8": (_line().encode()[:-2] + b'\xff"}\n', "not valid UTF-8", None),
    "utf16-bom": ((_line() + "\n").encode("utf-16"), "UTF-16 (little-endian)", None),
    "utf16-no-bom": ((_line() + "\n").encode("utf-16-le"), "NUL byte", None),
    "utf32": ((_line() + "\n").encode("utf-32"), "UTF-32", None),
    "tag-integer": (_line(tags={"year": 2020}), "tag 'year' must be a string", "tags"),
    "tag-list": (_line(tags={"who": ["a", "b"]}), "tag 'who' must be a string", "tags"),
    "date-words": (_line(provenance={"published": "yesterday"}), "not an ISO 8601 date", "provenance.published"),
    "date-impossible": (_line(generation={"date": "2023-02-30"}), "not an ISO 8601 date", "generation.date"),
    "date-number": (_line(provenance={"published": 2020}), "valid string", "provenance.published"),
    "truncated": ('{"id": "x", "text": "abc', "malformed JSON", None),
}

CSV = {
    "overlap-settings": ('id,text,label,generation.settings,generation.settings.x\nh-1,t,ai,"{""a"": 1}",3\n',
                         "columns 'generation.settings' and 'generation.settings.x' overlap", "generation.settings.x"),
    "overlap-reversed": ('id,text,label,generation.settings.x,generation.settings\nh-1,t,ai,3,"{""a"": 1}"\n',
                         "overlap", "generation.settings.x"),
    "overlap-tags": ('id,text,label,tags,tags.writer\nh-1,t,ai,"{""w"": ""x""}",native\n', "overlap",
                     "tags.writer"),
    "cell-nan": ('id,text,label,generation.settings\nh-1,t,ai,"{""a"": NaN}"\n', "NaN is not a finite",
                 "generation.settings.a"),
    "cell-duplicate-key": ('id,text,label,tags\nh-1,t,ai,"{""a"": ""1"", ""a"": ""2""}"\n', "duplicate key 'a'", "a"),
    "cell-deep": ('id,text,label,provenance\nh-1,t,ai,"{""x"": ' + _deep(5000) + '}"\n', "nested deeper",
                  "provenance"),
    "cell-bigint": ('id,text,label,generation\nh-1,t,ai,"{""seed"": ' + "1" * 4301 + '}"\n', "4,301 digits",
                    "generation"),
    "temperature-nan": ("id,text,label,generation.temperature\nh-1,t,ai,nan\n", "NaN is not a finite",
                        "generation.temperature"),
    "utf16": ("id,text,label\nh-1,t,ai\n".encode("utf-16"), "UTF-16", None),
    "date": ("id,text,label,provenance.published\nh-1,t,ai,02/05/2019\n", "not an ISO 8601 date",
             "provenance.published"),
    "not-utf8": (b"id,text,label\nh-1,caf\xe9,ai\n", "not valid UTF-8", "text"),
}


def _parquet(path: Path, kind: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    base = {"id": ["h-1"], "text": ["Some text."], "label": ["ai"]}
    if kind == "nan":
        t = pa.table({**base, "generation.temperature": [float("nan")]})
    elif kind == "tag-int":
        t = pa.table({**base, "tags.year": pa.array([2020], pa.int64())})
    elif kind == "overlap":
        t = pa.table({**base, "generation.settings": ['{"a": 1}'], "generation.settings.b": [2]})
    elif kind == "duplicate-columns":
        t = pa.Table.from_arrays([pa.array(["h-1"]), pa.array(["t"]), pa.array(["ai"]), pa.array(["x"])],
                                 names=["id", "text", "label", "text"])
    elif kind == "bytes":
        t = pa.table({**base, "kind": pa.array([b"caf\xe9"], pa.binary())})
    elif kind == "date-in-date-field":
        t = pa.table({**base, "provenance.published": [dt.date(2019, 5, 2)]})
    elif kind == "dates-in-free-fields":
        t = pa.table({**base, "generation.settings.when": [dt.datetime(2026, 11, 2, 10, 30)],
                      "provenance.archived": [dt.date(2020, 1, 31)], "generation.settings.dur": [dt.timedelta(1)]})
    else:  # pragma: no cover
        raise AssertionError(kind)
    pq.write_table(t, path)


PARQUET = {
    "nan": ("NaN is not a finite", "generation.temperature"),
    "tag-int": ("tag 'year' must be a string", "tags"),
    "overlap": ("overlap", "generation.settings.b"),
    "duplicate-columns": ("duplicate column name", "text"),
    "bytes": ("not valid UTF-8", "kind"),
}


def _liang(root: Path, liang_dir: Path, kind: str) -> Path:
    d = root / "liang"
    shutil.copytree(liang_dir, d)
    s = d / "Human_Data" / "TOEFL_real_91"
    data, gz = s / "data.json", s / "Sapling.json"
    if kind == "surrogate-document":
        data.write_text(data.read_text().replace('"document": "', '"document": "\\ud83d ', 1))
    elif kind == "surrogate-echo":
        gz.write_text(gz.read_text().replace('"text": "', '"text": "\\udc80', 1))
    elif kind == "nan-name":
        (s / "name.json").write_text('{"name": NaN, "kind": "Human-Written", "model": "Human"}')
    elif kind == "duplicate-key":
        gz.write_text(gz.read_text().replace('"score":', '"score": 0.5, "score":', 1))
    elif kind == "deep":
        gz.write_text(gz.read_text().replace('"score":', '"x": ' + _deep(3000) + ', "score":', 1))
    elif kind == "bigint":
        txt = gz.read_text()
        i = txt.index('"score":') + len('"score":')
        j = txt.index(",", i)
        gz.write_text(txt[:i] + " " + "7" * 4400 + txt[j:])
    elif kind == "utf16":
        data.write_bytes(data.read_text().encode("utf-16"))
    return d


LIANG = {
    "surrogate-document": ("data.json", "record 0", "lone surrogate U+D83D", "document"),
    "surrogate-echo": ("Sapling.json", "record 0", "lone surrogate U+DC80", "result_full.text"),  # an escape, not a byte
    "nan-name": ("name.json", None, "NaN is not a finite", "name"),
    "duplicate-key": ("Sapling.json", "record 0", "duplicate key 'score'", "score"),
    "deep": ("Sapling.json", "record 0", "nested deeper", None),
    "bigint": ("Sapling.json", "record 0", "4,400 digits", None),
    "utf16": ("data.json", "line 1", "UTF-16", None),
}


def _check_refused(out: str, *, file: str, says: str, field: str | None, record: str | None = "record") -> None:
    lines = [x for x in out.splitlines() if x.strip()]
    assert len(lines) == 1, out
    line = lines[0]
    assert "Traceback" not in out and line.startswith("error: file "), out
    assert file in line and says in line, line
    if record:
        assert record in line, line
    if field is not None:
        assert f"field '{field}'" in line, line


def _invoke(args: list[str]):
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 1, r.output
    assert isinstance(r.exception, SystemExit), repr(r.exception)
    return r.output


@pytest.mark.parametrize("fmt,case", [("jsonl", c) for c in sorted(JSONL)] + [("csv", c) for c in sorted(CSV)])
def test_text_file_refused_one_line_workspace_unchanged(fmt, case, ws, tmp_path):
    content, says, field = (JSONL if fmt == "jsonl" else CSV)[case]
    f = tmp_path / f"{case}.{fmt}"
    (f.write_bytes if isinstance(content, bytes) else f.write_text)(content)
    before = snapshot(ws)
    out = _invoke(["import", fmt, str(f), "-w", str(ws)])
    _check_refused(out, file=f.name, says=says, field=field)
    assert snapshot(ws) == before


@pytest.mark.parametrize("case", sorted(PARQUET))
def test_parquet_refused_one_line_workspace_unchanged(case, ws, tmp_path):
    says, field = PARQUET[case]
    f = tmp_path / f"{case}.parquet"
    _parquet(f, case)
    before = snapshot(ws)
    out = _invoke(["import", "parquet", str(f), "-w", str(ws)])
    _check_refused(out, file=f.name, says=says, field=field, record=None)
    assert snapshot(ws) == before


@pytest.mark.parametrize("case", sorted(LIANG))
def test_liang_layout_refused_one_line_workspace_unchanged(case, ws, tmp_path, liang_dir):
    fname, record, says, field = LIANG[case]
    d = _liang(tmp_path, liang_dir, case)
    before = snapshot(ws)
    out = _invoke(["import", "liang2023", str(d), "-w", str(ws)])
    _check_refused(out, file=fname, says=says, field=field, record=record)
    assert "TOEFL_real_91" in out
    assert snapshot(ws) == before


def _fdg(tmp_path: Path, data_dir: Path, kind: str) -> Path:
    d = tmp_path / "fdg"
    d.mkdir()
    for suf in ("raw_data", "args"):
        shutil.copy(data_dir / "fastdetectgpt" / f"xsum_gpt-3.5-turbo.{suf}.json", d)
    args = d / "xsum_gpt-3.5-turbo.args.json"
    raw = d / "xsum_gpt-3.5-turbo.raw_data.json"
    if kind == "nan-args":
        args.write_text(args.read_text().replace("{", '{"sampling_temperature": NaN, ', 1))
    elif kind == "duplicate-key":
        raw.write_text(raw.read_text().replace("{", '{"sampled": [], ', 1))
    elif kind == "utf16":
        raw.write_bytes(raw.read_text().encode("utf-16"))
    return d


@pytest.mark.parametrize("case,file,says", [("nan-args", "args.json", "NaN is not a finite"),
                                            ("duplicate-key", "raw_data.json", "duplicate key 'sampled'"),
                                            ("utf16", "raw_data.json", "UTF-16")])
def test_fastdetectgpt_refused(case, file, says, ws, tmp_path, data_dir):
    d = _fdg(tmp_path, data_dir, case)
    before = snapshot(ws)
    out = _invoke(["import", "fastdetectgpt", str(d), "-w", str(ws)])
    _check_refused(out, file=file, says=says, field=None, record=None)
    assert snapshot(ws) == before


SCORES = {
    "dup.json": ('[{"doc_id": "liang2023/TOEFL_real_91/0", "score": 0.1},\n'
                 ' {"doc_id": "liang2023/TOEFL_real_91/1", "score": 0.2, "score": 0.3}]', "duplicate key", "record 1"),
    "big.jsonl": ('{"doc_id": "liang2023/TOEFL_real_91/0", "score": ' + "1" * 4500 + "}\n", "4,500 digits",
                  "record line 1"),
    "deep.json": ('[{"doc_id": "liang2023/TOEFL_real_91/0", "score": 0.1, "x": ' + _deep(200) + "}]",
                  "nested deeper", "record 0"),
    "surrogate.jsonl": ('{"doc_id": "liang2023/TOEFL_real_91/0", "score": 0.1, "submitted_text": "a\\udbff"}\n',
                        "lone surrogate", "record line 1"),
    "utf16.csv": ("doc_id,score\nliang2023/TOEFL_real_91/0,0.1\n".encode("utf-16"), "UTF-16", "record line 1"),
}


@pytest.mark.parametrize("name", sorted(SCORES))
def test_score_files_refused(name, ws, tmp_path):
    content, says, record = SCORES[name]
    f = tmp_path / name
    (f.write_bytes if isinstance(content, bytes) else f.write_text)(content)
    before = snapshot(ws)
    out = _invoke(["import", "scores", str(f), "--detector", "D", "-w", str(ws)])
    _check_refused(out, file=name, says=says, field=None, record=record)
    assert snapshot(ws) == before


def test_score_command_input_refused(ws, tmp_path):
    f = tmp_path / "in.jsonl"
    f.write_text('{"id": "a", "text": "x \\ud800"}\n')
    before = snapshot(ws)
    out = _invoke(["score", "--detector", "zippy", "--input", str(f), "--out", str(tmp_path / "o.jsonl"),
                   "-w", str(ws), "--no-progress"])
    _check_refused(out, file="in.jsonl", says="lone surrogate", field="text", record="record line 1")
    assert snapshot(ws) == before and not (tmp_path / "o.jsonl").exists()


# -- a real subprocess --------------------------------------------------------------------
@pytest.mark.parametrize("fmt,case", [("jsonl", "nan-nested"), ("jsonl", "deep-past-recursion-limit"),
                                      ("jsonl", "integer-5000-digits"), ("jsonl", "utf16-bom"),
                                      ("csv", "overlap-settings")])
def test_refused_in_a_real_process(fmt, case, ws, tmp_path):
    content, says, field = (JSONL if fmt == "jsonl" else CSV)[case]
    f = tmp_path / f"{case}.{fmt}"
    (f.write_bytes if isinstance(content, bytes) else f.write_text)(content)
    before = snapshot(ws)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    p = subprocess.run([sys.executable, "-m", "veribench.cli.main", "import", fmt, str(f), "-w", str(ws)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 1, p.stderr
    assert p.stdout == ""
    _check_refused(p.stderr, file=f.name, says=says, field=field)
    assert snapshot(ws) == before


def test_liang_surrogate_in_a_real_process(ws, tmp_path, liang_dir):
    d = _liang(tmp_path, liang_dir, "surrogate-document")
    before = snapshot(ws)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    p = subprocess.run([sys.executable, "-m", "veribench.cli.main", "import", "liang2023", str(d), "-w", str(ws)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 1
    _check_refused(p.stderr, file="data.json", says="lone surrogate", field="document", record="record 0")
    assert snapshot(ws) == before


# -- accepted -----------------------------------------------------------------------------
def test_csv_text_longer_than_the_csv_module_limit_imports(tmp_path):
    long_text = ("A sentence of a long essay that goes on. " * 5000)[:200_000]
    f = tmp_path / "long.csv"
    f.write_text("id,text,label\nlong-1,\"" + long_text + "\",human\n")
    ws = tmp_path / "ws"
    r = CliRunner().invoke(app, ["import", "csv", str(f), "-w", str(ws), "-q"])
    assert r.exit_code == 0, r.output
    con = duckdb.connect(str(ws / "veribench.duckdb"), read_only=True)
    (text,), = con.execute("SELECT text FROM documents WHERE doc_id = 'long-1'").fetchall()
    con.close()
    assert text == long_text and len(text) == 200_000


def test_parquet_dates_import_as_iso_text(tmp_path):
    for kind in ("date-in-date-field", "dates-in-free-fields"):
        ws = tmp_path / f"ws-{kind}"
        f = tmp_path / f"{kind}.parquet"
        _parquet(f, kind)
        r = CliRunner().invoke(app, ["import", "parquet", str(f), "--corpus", kind, "-w", str(ws), "-q"])
        assert r.exit_code == 0, r.output
        ws_rows = duckdb.connect(str(ws / "veribench.duckdb"), read_only=True)
        prov, gen = ws_rows.execute("SELECT provenance, generation FROM documents WHERE corpus = ?",
                                    [kind]).fetchall()[0]
        ws_rows.close()
        if kind == "date-in-date-field":
            assert json.loads(prov)["published"] == "2019-05-02"
        else:
            g = json.loads(gen)
            assert g["settings"] == {"when": "2026-11-02T10:30:00", "dur": 86400.0}
            assert json.loads(prov)["archived"] == "2020-01-31"


# -- property: the reader never raises anything but InputError ----------------------------
TOKENS = st.sampled_from(['{', '}', '[', ']', ',', ':', '"', '"id"', '"text"', '"label"', '"ai"', '"tags"',
                          '"generation"', '"settings"', 'NaN', 'Infinity', '-Infinity', '1e999', '0', '-1',
                          '9' * 4400, 'true', 'null', '"\\ud800"', '"\\udc80"', '"a"', ' ', '\n', '\\', '\x00',
                          '\ufeff', 'é', '"2023-02-30"', '"published"', '"provenance"', '[' * 200, ']' * 200])
ANY_TEXT = st.lists(TOKENS, max_size=40).map("".join)


def _feed(suffix: str, data: bytes):
    from veribench.corpus.importers import read_documents

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / f"f{suffix}"
        p.write_bytes(data)
        try:
            read_documents(p)
        except InputError as e:
            assert str(e).startswith(f"file {p}") and "\n" not in str(e)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_TEXT, st.sampled_from(["utf-8", "utf-16", "latin-1"]))
def test_any_jsonl_gives_a_document_or_an_input_error(text, enc):
    base = json.dumps(GOOD)[:-1] + ", "
    _feed(".jsonl", (base + text).encode(enc, errors="surrogatepass") if enc != "latin-1"
          else (base + text).encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode("latin-1", "replace"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["id", "text", "label", "tags", "tags.a", "generation", "generation.settings",
                                 "generation.settings.x", "generation.temperature", "provenance.published"]),
                min_size=1, max_size=6, unique=True),
       st.lists(ANY_TEXT, min_size=1, max_size=6))
def test_any_csv_gives_a_document_or_an_input_error(header, cells):
    import csv as _csv
    import io

    buf = io.StringIO()
    w = _csv.writer(buf)
    w.writerow(header)
    w.writerow((cells * len(header))[: len(header)])
    _feed(".csv", buf.getvalue().encode("utf-8", "surrogatepass"))


@settings(max_examples=200, deadline=None)
@given(ANY_TEXT)
def test_any_json_array_file_gives_a_value_or_an_input_error(text):
    from veribench.corpus.importers._io import load_json_flagged

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "f.json"
        p.write_bytes(("[" + text).encode("utf-8", "surrogatepass"))
        try:
            load_json_flagged(p)
        except InputError:
            pass
