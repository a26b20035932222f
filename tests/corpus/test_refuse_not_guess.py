"""Importers refuse rather than guess (issue 24, item 9): one rule for every importer.

Each fault class (an empty required field, a truncated record, a NUL, an extra cell, a file
with no records) is made from the real format fixtures in ``tests/data/public/`` (and the
demo-format CSV/JSONL), cut or edited in ``tmp_path``, at least two ways each, across
several importers. Every case goes through the command line: exit 1, one ``error: file
..., record ..., field ...`` line, no traceback; the workspace (seeded with an earlier
import) keeps every table exactly as it was, and ``log verify`` still passes.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from veribench.cli.main import app

PUBLIC = Path(__file__).resolve().parents[1] / "data" / "public"
RAID = PUBLIC / "raid" / "train.csv"
MAGE = PUBLIC / "mage" / "train.csv"
HC3 = PUBLIC / "hc3" / "finance.jsonl"
SEM_A = PUBLIC / "semeval" / "subtaskA" / "subtaskA_train_monolingual.jsonl"
SEM_C = PUBLIC / "semeval" / "subtaskC" / "subtaskC_train.jsonl"
M4 = PUBLIC / "m4" / "data" / "arxiv_chatGPT.jsonl"
BEEMO = PUBLIC / "beemo" / "data" / "train-00000-of-00001.parquet"
DETECTRL = PUBLIC / "detectrl" / "Benchmark" / "Benchmark_Data" / "Multi_Domain" / "multi_domains_arxiv_test.json"


# -- editing the real files -------------------------------------------------------------------
def _csv_rows(src: Path) -> tuple[list[str], list[list[str]]]:
    with open(src, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def _write_csv(dst: Path, header: list[str], rows: list[list[str]]) -> None:
    buf = io.StringIO(newline="")
    csv.writer(buf, lineterminator="\n").writerows([header, *rows])
    dst.write_text(buf.getvalue(), encoding="utf-8", newline="")


def csv_cell(src: Path, row: int, col: str, value: str) -> Callable[[Path], Path]:
    """The file with data row ``row``'s cell ``col`` set to ``value`` (written by ``csv``)."""
    def make(tmp: Path) -> Path:
        header, rows = _csv_rows(src)
        rows[row][header.index(col)] = value
        dst = tmp / src.name
        _write_csv(dst, header, rows)
        return dst
    return make


def csv_extra(src: Path, row: int, where: str = "end") -> Callable[[Path], Path]:
    """Data row ``row`` with one cell more than the header: appended, or an unquoted comma."""
    def make(tmp: Path) -> Path:
        header, rows = _csv_rows(src)
        if where == "end":
            rows[row].append("stray")
            dst = tmp / src.name
            _write_csv(dst, header, rows)
            return dst
        # the title cell written by hand without its quotes: its comma splits it in two
        buf = io.StringIO(newline="")
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        for i, r in enumerate(rows):
            if i == row:
                r = list(r)
                r[header.index(where)] = "A title, with a comma"
                buf.write(",".join(c if k == header.index(where) else ('"' + c.replace('"', '""') + '"')
                                   for k, c in enumerate(r)) + "\n")
            else:
                w.writerow(r)
        dst = tmp / src.name
        dst.write_text(buf.getvalue(), encoding="utf-8", newline="")
        return dst
    return make


def cut_bytes(src: Path, at: Callable[[bytes], int]) -> Callable[[Path], Path]:
    """The file cut at byte ``at(data)`` (a download or copy that stopped early)."""
    def make(tmp: Path) -> Path:
        data = src.read_bytes()
        dst = tmp / src.name
        dst.write_bytes(data[: at(data)])
        return dst
    return make


def edit_bytes(src: Path, fn: Callable[[bytes], bytes], name: str | None = None) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        dst = tmp / (name or src.name)
        dst.write_bytes(fn(src.read_bytes()))
        return dst
    return make


def jsonl_field(src: Path, line: int, key: str, value, raw: str | None = None) -> Callable[[Path], Path]:
    """JSON line ``line`` (0-based) with ``key`` set to ``value`` (or its JSON text ``raw``)."""
    def make(tmp: Path) -> Path:
        lines = src.read_text(encoding="utf-8").splitlines()
        obj = json.loads(lines[line])
        obj[key] = value
        text = json.dumps(obj)
        if raw is not None:
            text = text.replace(json.dumps(value), raw, 1)
        lines[line] = text
        dst = tmp / src.name
        dst.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return dst
    return make


def detectrl_field(record: int, key: str, value) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        data = json.loads(DETECTRL.read_text(encoding="utf-8"))
        data[record][key] = value
        dst = tmp / DETECTRL.name
        dst.write_text(json.dumps(data, indent=4), encoding="utf-8")
        return dst
    return make


def line_of_row(path: Path, row: int) -> int:
    """The line CSV data row ``row`` (0-based) starts on (line 1 is the header)."""
    with open(path, newline="", encoding="utf-8") as f:
        r = csv.reader(f)
        next(r)
        for _ in range(row):
            next(r)
        return r.line_num + 1


def _mid_quoted_text(data: bytes) -> int:
    """A byte in the middle of the file that lies inside a quoted RAID text."""
    i = data.index(b'"', len(data) // 2)  # an opening quote of a generation
    return i + 40


def _mid_line_outside_quotes(data: bytes) -> int:
    """Just after the 3rd comma of a row starting past the middle (inside the id columns)."""
    start = data.index(b"\n", len(data) // 2)
    while not data[start + 1: start + 37].count(b"-") == 4:  # the next line starting with a UUID
        start = data.index(b"\n", start + 1)
    i = start + 1
    for _ in range(3):
        i = data.index(b",", i) + 1
    return i


def _drop_closing_quote(data: bytes) -> bytes:
    """The closing quote of a quoted text (a row past the 20th spanning several lines) removed:
    the quote stays open, and later quotes pair up differently."""
    lines = data.split(b"\n")
    starts = [k for k, x in enumerate(lines) if x[:36].count(b"-") == 4 and x.count(b",") >= 10]
    for k, nxt in zip(starts[20:], starts[21:]):
        if nxt - k > 1 and lines[nxt - 1].endswith(b'"'):
            lines[nxt - 1] = lines[nxt - 1][:-1]
            return b"\n".join(lines)
    raise AssertionError("no quoted multi-line text found")


# -- the cases: (command, make, record in the error, field in the error, words of the error) ----
EMPTY_FIELD = {
    "raid-empty-model": ("raid", csv_cell(RAID, 5, "model", ""), ("row", 5), "model", "empty"),
    "raid-blank-model": ("raid", csv_cell(RAID, 7, "model", "   "), ("row", 7), "model", "empty"),
    "raid-empty-attack": ("raid", csv_cell(RAID, 9, "attack", ""), ("row", 9), "attack", "empty"),
    "mage-empty-src": ("mage", csv_cell(MAGE, 2, "src", ""), ("row", 2), "src", "empty"),
    "semeval-empty-model": ("semeval", jsonl_field(SEM_A, 1, "model", ""), "line 2", "model", "empty"),
    "semeval-empty-id": ("semeval", jsonl_field(SEM_C, 0, "id", ""), "line 1", "id", "empty"),
    "hc3-null-answers": ("hc3", jsonl_field(HC3, 1, "chatgpt_answers", None), "line 2", "chatgpt_answers", "empty"),
    "hc3-empty-question": ("hc3", jsonl_field(HC3, 0, "question", " "), "line 1", "question", "empty"),
    "m4-empty-model": ("m4", jsonl_field(M4, 2, "model", ""), "line 3", "model", "empty"),
    "detectrl-empty-data-type": ("detectrl", detectrl_field(3, "data_type", ""), "3", "data_type", "empty"),
}

TRUNCATED = {
    "raid-cut-inside-a-text": ("raid", cut_bytes(RAID, _mid_quoted_text), "line", None, "still open"),
    "raid-cut-mid-row": ("raid", cut_bytes(RAID, _mid_line_outside_quotes), "line", "decoding",
                         "truncated record"),
    "raid-unterminated-quote": ("raid", edit_bytes(RAID, _drop_closing_quote), "line", None, "malformed CSV"),
    "mage-cut-in-last-cell": ("mage", cut_bytes(MAGE, lambda d: len(d) - 4), "line", None, "no line end"),
    "mage-cut-mid-row": ("mage", cut_bytes(MAGE, lambda d: d.rindex(b",") - 3), "line", "label",
                         "truncated record"),
    "hc3-line-cut-short": ("hc3", cut_bytes(HC3, lambda d: len(d) - 30), "line 2", None, "cut short"),
    "semeval-line-cut-short": ("semeval", cut_bytes(SEM_A, lambda d: len(d) - 25), "line 6", None, "cut short"),
    "m4-line-cut-short": ("m4", cut_bytes(M4, lambda d: d.index(b"\n", len(d) // 2) - 10), None, None,
                          "cut short"),
    "detectrl-array-cut-short": ("detectrl", cut_bytes(DETECTRL, lambda d: len(d) * 2 // 3), None, None,
                                 "malformed JSON"),
}

NUL = {
    "raid-nul-in-title": ("raid", csv_cell(RAID, 4, "title", "Abstracts\x00story"), ("row", 4), "title", "NUL"),
    "raid-nul-in-text": ("raid", csv_cell(RAID, 6, "generation", "Some text\x00 more text."), ("row", 6), "generation",
                         "NUL"),
    "mage-nul-in-src": ("mage", csv_cell(MAGE, 1, "src", "cmv_\x00human"), ("row", 1), "src", "NUL"),
    "hc3-nul-escape": ("hc3", jsonl_field(HC3, 0, "question", "Why\x00?"), "line 1", "question", "NUL"),
    "semeval-raw-nul-byte": ("semeval", edit_bytes(SEM_A, lambda d: d.replace(b'"text": "', b'"text": "\x00', 1)),
                             "line 1", "text", "NUL"),
    "m4-nul-escape-in-extra-key": ("m4", jsonl_field(M4, 1, "source", "arx\x00iv"), "line 2", "source", "NUL"),
    "detectrl-nul-escape": ("detectrl", detectrl_field(2, "llm_type", "Chat\x00GPT"), "2", "llm_type",
                            "NUL"),
}

EXTRA_CELL = {
    "raid-extra-cell": ("raid", csv_extra(RAID, 8), "line", "cell 12", "extra cell"),
    "raid-unquoted-comma": ("raid", csv_extra(RAID, 10, "title"), "line", "cell 12", "extra cell"),
    "mage-extra-cell": ("mage", csv_extra(MAGE, 3), "line", "cell 4", "extra cell"),
}


#: A value outside the format's vocabulary that would set the label: refused, never read as "a model".
LABEL_VALUE = {
    "raid-model-capitalised": ("raid", csv_cell(RAID, 0, "model", "Human"), ("row", 0), "model", "unknown RAID model"),
    "raid-model-padded": ("raid", csv_cell(RAID, 0, "model", " human"), ("row", 0), "model", "unknown RAID model"),
}


def beemo(edit: Callable) -> Callable[[Path], Path]:
    """Beemo's released Parquet file with ``edit(table)`` applied."""
    def make(tmp: Path) -> Path:
        import pyarrow.parquet as pq

        dst = tmp / BEEMO.name
        pq.write_table(edit(pq.read_table(BEEMO)), dst)
        return dst
    return make


def beemo_cell(row: int, col: str, value: str) -> Callable[[Path], Path]:
    def edit(t):
        import pyarrow as pa

        vals = t.column(col).to_pylist()
        vals[row] = value
        return t.set_column(t.schema.get_field_index(col), col, pa.array(vals, t.schema.field(col).type))
    return beemo(edit)


EMPTY_FIELD["beemo-empty-model"] = ("beemo", beemo_cell(1, "model", ""), "row 1", "model", "empty")
NUL["beemo-nul-in-output"] = ("beemo", beemo_cell(0, "model_output", "An answer\x00."), "row 0", "model_output",
                              "NUL")


def _header_only(src: Path) -> Callable[[Path], Path]:
    return edit_bytes(src, lambda d: d.split(b"\n", 1)[0] + b"\n")


NO_RECORDS = {
    "raid-header-only": ("raid", _header_only(RAID), None, None, "no records"),
    "raid-header-and-blank-lines": ("raid", edit_bytes(RAID, lambda d: d.split(b"\n", 1)[0] + b"\n\n\n"), None, None,
                                    "no records"),
    "mage-header-only": ("mage", _header_only(MAGE), None, None, "no records"),
    "hc3-empty-file": ("hc3", edit_bytes(HC3, lambda d: b""), None, None, "no records"),
    "hc3-blank-lines": ("hc3", edit_bytes(HC3, lambda d: b"\n  \n"), None, None, "no records"),
    "semeval-empty-file": ("semeval", edit_bytes(SEM_C, lambda d: b""), None, None, "no records"),
    "m4-empty-file": ("m4", edit_bytes(M4, lambda d: b""), None, None, "no records"),
    "detectrl-empty-array": ("detectrl", edit_bytes(DETECTRL, lambda d: b"[]\n"), None, None, "no records"),
    "csv-header-only": ("csv", edit_bytes(MAGE, lambda d: b"id,text,label\n", name="docs.csv"), None, None,
                        "no records"),
    "jsonl-empty": ("jsonl", edit_bytes(SEM_C, lambda d: b"\n", name="docs.jsonl"), None, None, "no records"),
    "beemo-no-rows": ("beemo", beemo(lambda t: t.slice(0, 0)), None, None, "no records"),
}

#: Variants main already refused (the generic importers' "no records found", load_json's
#: syntax check): kept as guards, in their own test, so every case of the main test is a
#: fault that main let through.
GUARDS = ("csv-header-only", "jsonl-empty", "detectrl-array-cut-short")
ALL = {**EMPTY_FIELD, **TRUNCATED, **NUL, **EXTRA_CELL, **NO_RECORDS, **LABEL_VALUE}
CASES = {k: v for k, v in ALL.items() if k not in GUARDS}


# -- the workspace ------------------------------------------------------------------------------
def tables(ws: Path) -> dict[str, list[str]]:
    """Every table's rows, in a stable order (documents, imports and the event log among them)."""
    con = duckdb.connect(str(ws / "veribench.duckdb"), read_only=True)
    try:
        names = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall()]
        return {t: sorted(map(repr, con.execute(f'SELECT * FROM "{t}"').fetchall())) for t in names}
    finally:
        con.close()


@pytest.fixture(scope="module")
def seeded(tmp_path_factory) -> Path:
    """A workspace holding one earlier, logged import (MAGE's validation split)."""
    ws = tmp_path_factory.mktemp("seed") / "ws"
    r = CliRunner().invoke(app, ["import", "mage", str(PUBLIC / "mage" / "valid.csv"), "-w", str(ws), "-q",
                                 "--no-progress"])
    assert r.exit_code == 0, r.output
    return ws


@pytest.fixture()
def ws(seeded, tmp_path) -> Path:
    dst = tmp_path / "ws"
    shutil.copytree(seeded, dst)
    return dst


@pytest.mark.parametrize("case", sorted(CASES))
def test_refused_with_one_line_and_nothing_stored(case, ws, tmp_path):
    _refused(CASES[case], ws, tmp_path)


@pytest.mark.parametrize("case", GUARDS)
def test_faults_refused_before_stay_refused_in_the_same_style(case, ws, tmp_path):
    _refused(ALL[case], ws, tmp_path)


def _refused(spec, ws: Path, tmp_path: Path) -> None:
    kind, make, record, field, says = spec
    src_dir = tmp_path / "src"
    src_dir.mkdir()
    path = make(src_dir)
    if isinstance(record, tuple):
        record = f"line {line_of_row(path, record[1])}"
    before = tables(ws)
    streamed = ["--no-progress"] if kind not in ("csv", "jsonl") else []
    r = CliRunner().invoke(app, ["import", kind, str(path), "-w", str(ws), "-q", *streamed])
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert r.exit_code == 1, r.output
    assert isinstance(r.exception, SystemExit), repr(r.exception)
    assert len(lines) == 1 and "Traceback" not in r.output, r.output
    line = lines[0]
    assert line.startswith(f"error: file {path}"), line
    assert says.lower() in line.lower(), line
    if record is not None:
        assert f"record {record}" in line, line
    if field is not None:
        assert f"field '{field}'" in line, line
    assert tables(ws) == before  # no document, no import, no event: byte-for-byte the same rows
    v = CliRunner().invoke(app, ["log", "verify", "-w", str(ws)])
    assert v.exit_code == 0, v.output


def test_every_class_has_two_variants_across_importers():
    """The acceptance shape: each fault class has at least two variants and reaches several importers."""
    for cls in (EMPTY_FIELD, TRUNCATED, NUL, EXTRA_CELL, NO_RECORDS, LABEL_VALUE):
        assert len(cls) >= 2
    for cls in (EMPTY_FIELD, TRUNCATED, NUL, NO_RECORDS):
        assert len({c[0] for c in cls.values()}) >= 4


def test_a_complete_file_still_imports_with_its_counts(tmp_path):
    """The untouched fixtures import as before (counts of the release fixtures, known
    faults skipped and counted), through the same command line."""
    ws = str(tmp_path / "ws")
    run = CliRunner()
    expect = {("raid", RAID): 223, ("mage", MAGE): 10, ("hc3", HC3): 6, ("semeval", SEM_A): 6, ("m4", M4): 6,
              ("detectrl", DETECTRL): 6}
    for (kind, path), n in expect.items():
        r = run.invoke(app, ["import", kind, str(path), "-w", ws, "-q", "--no-progress"])
        assert r.exit_code == 0, r.output
        assert f": {n} documents" in r.output, (kind, r.output)


@pytest.mark.parametrize("case", ["raid-nul-in-last-row", "raid-cut-after-batches"])
def test_refused_after_committed_batches_leaves_every_table_as_it_was(case, ws, tmp_path):
    """The streamed path commits batches as it goes: a refusal at the end of the file (after
    several committed batches of 7) still leaves every table, the event log included,
    exactly as it was, and ``log verify`` passes."""
    from veribench.corpus.importers.raid import import_raid
    from veribench.errors import InputError
    from veribench.store import Workspace

    src = tmp_path / "src"
    src.mkdir()
    if case == "raid-nul-in-last-row":
        n = len(_csv_rows(RAID)[1])
        path, says = csv_cell(RAID, n - 1, "title", "T\x00")(src), "NUL"
    else:
        path, says = cut_bytes(RAID, lambda d: len(d) - 20)(src), "malformed CSV"
    before = tables(ws)
    w = Workspace(ws)
    try:
        with pytest.raises(InputError, match=says):
            import_raid(w, path, batch_size=7, progress=False)
    finally:
        w.close()
    assert tables(ws) == before
    v = CliRunner().invoke(app, ["log", "verify", "-w", str(ws)])
    assert v.exit_code == 0, v.output
