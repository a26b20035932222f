"""A text that shows nothing is empty, and a file whose every record is skipped holds
nothing to import (issue 24, from the hostile check): an HC3 answer of only spaces and a
zero-width space was imported as a document, and a MAGE file whose one record had an empty
text was recorded as an import of 0 documents with exit 0."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from veribench.cli.main import app
from veribench.corpus.document import Document
from veribench.text.hazards import BLANK_LOOKING, INVISIBLE_CATEGORIES, is_blank, is_default_ignorable

PUBLIC = Path(__file__).resolve().parents[1] / "data" / "public"
INVISIBLE = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) in INVISIBLE_CATEGORIES][:200] + [
    "\u2800", "\u3164", "\u115f", "\u1160", "\uffa0"]  # blank-looking fillers of other categories
SPACES = list(" \t\n\r\x0b\x0c\u00a0\u2002\u2003\u3000")


@given(st.lists(st.sampled_from(INVISIBLE + SPACES), max_size=30))
def test_only_white_space_and_invisible_characters_is_blank(chars):
    s = "".join(chars)
    assert is_blank(s)
    with pytest.raises(ValueError, match="only white space and invisible characters"):
        Document.model_validate({"id": "x", "text": s, "label": "human"})


@given(st.lists(st.sampled_from(INVISIBLE + SPACES), max_size=10), st.characters(
    blacklist_categories=("Cf", "Zs", "Zl", "Zp", "Cc", "Cs", "Cn", "Co")).filter(
        lambda c: c not in BLANK_LOOKING and not is_default_ignorable(c)), st.lists(st.sampled_from(INVISIBLE + SPACES), max_size=10))
def test_one_visible_character_is_not_blank(before, visible, after):
    assert not visible.isspace()
    assert not is_blank("".join(before) + visible + "".join(after))


def _tables(ws: Path) -> dict[str, int]:
    con = duckdb.connect(str(ws / "veribench.duckdb"), read_only=True)
    try:
        names = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
        return {n: con.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in names}
    finally:
        con.close()


@pytest.fixture()
def seeded(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    r = CliRunner().invoke(app, ["import", "mage", str(PUBLIC / "mage" / "train.csv"), "-w", str(ws), "-q"])
    assert r.exit_code == 0, r.output
    return ws


@pytest.mark.parametrize("name,make", [
    ("mage", lambda d: (d / "train.csv", "text,label,src\n\" \u200b \",1,cmv_human\n")),
    ("mage", lambda d: (d / "train.csv", "text,label,src\n,1,cmv_human\n\"\t\",0,yelp_machine_continuation_gpt\n")),
    ("hc3", lambda d: (d / "finance.jsonl", json.dumps({"question": "Why?", "human_answers": ["   \u200b "],
                                                        "chatgpt_answers": ["\ufeff"]}) + "\n")),
])
def test_a_file_whose_every_record_is_skipped_is_refused(tmp_path: Path, seeded: Path, name, make):
    d = tmp_path / "src"
    d.mkdir()
    path, body = make(d)
    path.write_text(body, encoding="utf-8")
    before = _tables(seeded)
    r = CliRunner().invoke(app, ["import", name, str(path), "-w", str(seeded)])
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert r.exit_code == 1 and len(lines) == 1 and "nothing to import: every record was skipped" in r.output, r.output
    assert str(path) in r.output and "Traceback" not in r.output
    assert _tables(seeded) == before
    assert CliRunner().invoke(app, ["log", "verify", "-w", str(seeded)]).exit_code == 0


def test_an_invisible_answer_is_not_a_document(tmp_path: Path):
    """One real answer and one that shows nothing: only the real one is stored."""
    src = tmp_path / "finance.jsonl"
    src.write_text(json.dumps({"question": "Why?", "human_answers": ["A real answer, written by a person."],
                               "chatgpt_answers": ["  \u200b\u2060 "]}) + "\n", encoding="utf-8")
    ws = tmp_path / "ws"
    r = CliRunner().invoke(app, ["import", "hc3", str(src), "-w", str(ws), "-q"])
    assert r.exit_code == 0, r.output
    con = duckdb.connect(str(ws / "veribench.duckdb"), read_only=True)
    try:
        texts = [t for (t,) in con.execute("SELECT text FROM documents").fetchall()]
    finally:
        con.close()
    assert texts == ["A real answer, written by a person."]
