"""Process evidence and fingerprints of arm-B texts: properties (hypothesis), an independent
per-step reference, and real essays pasted and typed."""

from __future__ import annotations

import difflib
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.rubric.write_helpers import first_words, liang_texts, words
from veribench.hashing import text_sha256
from veribench.rubric.write import rules
from veribench.rubric.write.evidence import Step, describe, diff_step, summarise
from veribench.rubric.write.fingerprint import file_fingerprint, fingerprint, normalise_text

WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyzé0123456789", min_size=1, max_size=6)
TOKEN = st.one_of(WORD, st.sampled_from([",", ".", "—", "(", ")", "...", "'s"]), WORD.map(lambda w: w + "."))
TEXT = st.lists(TOKEN, max_size=40).map(" ".join)
T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=8))
def test_inserted_minus_deleted_is_the_final_word_count(texts):
    steps, prev = [], ""
    for t in texts:
        s = diff_step(prev, t)
        assert s.words == words(t)
        assert 0 <= s.largest_insertion_words <= s.inserted_words
        steps.append(s)
        prev = t
    assert sum(s.inserted_words - s.deleted_words for s in steps) == words(texts[-1])


@settings(max_examples=200, deadline=None)
@given(st.lists(WORD, max_size=60), st.lists(WORD, min_size=1, max_size=80), st.data())
def test_a_pure_insertion_is_one_block_of_its_size(base, block, data):
    """Inserting k words anywhere (even words that repeat their neighbours) is one block of k."""
    at = data.draw(st.integers(0, len(base)))
    new = base[:at] + block + base[at:]
    s = diff_step(" ".join(base), " ".join(new))
    assert (s.inserted_words, s.deleted_words, s.largest_insertion_words) == (len(block), 0, len(block))


def test_steps_match_an_independent_difflib_reference(liang_dir):
    """On real edits of a real essay: counts equal difflib over the whole token lists."""
    essay = liang_texts(liang_dir, "CollegeEssay_real_70")[3]
    toks = essay.split()
    edits = [toks[:40], toks[:40] + toks[60:120], toks[:10] + ["Indeed,"] + toks[12:120], toks[:10] + toks[12:200]]
    prev: list[str] = []
    for new in edits:
        s = diff_step(" ".join(prev), " ".join(new))
        ops = difflib.SequenceMatcher(None, prev, new, autojunk=False).get_opcodes()
        ins = sum(j2 - j1 for tag, _, _, j1, j2 in ops if tag in ("insert", "replace"))
        dele = sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag in ("delete", "replace"))
        assert len(new) - len(prev) == ins - dele
        assert s.inserted_words - s.deleted_words == words(" ".join(new)) - words(" ".join(prev))
        prev = new


def test_a_pasted_500_word_essay_is_one_large_insertion(liang_dir):
    essay = next(t for t in liang_texts(liang_dir, "CollegeEssay_real_70") if len(t.split()) >= 500)
    typed = first_words(essay, 30)
    pasted = typed + "\n\n" + first_words(" ".join(essay.split()[30:]), 500)
    steps = [diff_step("", first_words(typed, 15)), diff_step(first_words(typed, 15), typed), diff_step(typed, pasted)]
    times = [T0 + timedelta(seconds=s) for s in (20, 40, 41.5)]
    ev = summarise(steps, times, opened_at=T0)
    assert ev["revisions"] == 3 and ev["words"] == words(pasted)
    assert [(x["revision"], x["words"], x["seconds_since_previous"]) for x in ev["large_insertions"]] == [(3, 500, 1.5)]
    assert ev["large_insertion_words"] == 500
    assert ev["large_insertion_share"] == pytest.approx(500 / words(pasted), abs=1e-4)
    assert ev["writing_seconds"] == 41.5 and ev["span_seconds"] == 21.5 and ev["breaks"] == 0
    assert ev["words_per_revision"] == {"mean": round((15 + 15 + 500) / 3, 2), "median": 15.0, "max": 500}
    assert "1 large insertion (500 words)" in describe(ev)


def test_typed_text_has_no_large_insertion_and_breaks_are_not_writing_time(liang_dir):
    essay = liang_texts(liang_dir, "CollegeEssay_real_70")[0]
    toks = essay.split()
    texts = [" ".join(toks[:i]) for i in range(10, len(toks) + 10, 10)]
    steps, prev = [], ""
    for t in texts:
        steps.append(diff_step(prev, t))
        prev = t
    gaps = [8.0] * len(texts)
    gaps[5] = 3600.0  # an hour's break
    times, t = [], T0
    for g in gaps:
        t = t + timedelta(seconds=g)
        times.append(t)
    ev = summarise(steps, times, opened_at=T0)
    assert ev["large_insertions"] == [] and ev["large_insertion_share"] == 0.0
    assert ev["breaks"] == 1
    assert ev["writing_seconds"] == pytest.approx(8.0 * (len(texts) - 1))  # independent: every gap but the break
    assert ev["span_seconds"] == pytest.approx(sum(gaps[1:]))
    assert ev["words"] == words(essay) and ev["history"][-1][1] == words(essay)
    assert ev["history"][0][0] == 0.0 and len(ev["history"]) == len(texts)


def test_empty_history_is_null_not_zero():
    ev = summarise([], [], None)
    assert ev["revisions"] == 0 and ev["span_seconds"] is None and ev["writing_seconds"] is None
    assert ev["large_insertion_share"] is None and ev["large_insertion_share_reason"]
    one = summarise([Step(0, 0, 0, 0)], [T0], None)
    assert one["large_insertion_share"] is None and "no words" in one["large_insertion_share_reason"]
    assert one["writing_seconds"] == 0.0  # opening time unknown: the first gap is not counted
    with pytest.raises(ValueError):
        summarise([Step(1, 1, 0, 1)], [], None)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_normalisation_is_idempotent_and_the_fingerprint_its_sha256(text):
    n = normalise_text(text)
    assert normalise_text(n) == n
    assert "\r" not in n and n == n.strip(" \t\n")
    assert fingerprint(text) == text_sha256(n) == fingerprint(n)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)),
                        min_size=1, max_size=30), min_size=1, max_size=6))
def test_line_endings_and_a_final_newline_do_not_change_the_fingerprint(lines):
    lf = "\n".join(lines)
    assert fingerprint(lf) == fingerprint("\r\n".join(lines) + "\r\n") == fingerprint(lf + "\n\n")


def test_the_fingerprint_separates_texts_and_reads_files(tmp_path, liang_dir):
    essay = liang_texts(liang_dir, "CollegeEssay_real_70")[1]
    assert fingerprint(essay) != fingerprint(essay.replace(".", ",", 1))
    assert fingerprint(essay) != fingerprint(essay.upper())  # no case folding, no Unicode normalisation
    p = tmp_path / "mine.txt"
    p.write_bytes(b"\xef\xbb\xbf" + ("\r\n" + essay.replace("\n", "\r\n") + "\r\n").encode("utf-8"))
    assert file_fingerprint(p) == text_sha256(essay.strip(" \t\n"))
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("caf\xe9".encode("latin-1"))
    from veribench.errors import InputError

    with pytest.raises(InputError, match="not UTF-8"):
        file_fingerprint(bad)


def test_rules_are_the_protocols():
    assert rules.TARGET_WORDS == (300, 1200)
    assert set(rules.REGISTERS) == {"academic", "professional", "casual"}
    assert set(rules.SUBGROUPS.values()) == {"native volunteers", "non-native volunteers"}
    assert [rules.years_bucket(y) for y in (0, 4, 5, 19, 20, 120)] == ["0-4", "0-4", "5-9", "10-19", "20+", "20+"]
    with pytest.raises(ValueError):
        rules.years_bucket(121)
