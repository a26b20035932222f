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


# -- sustained insertion faster than typing ---------------------------------------------------
def _history(texts: list[str], gaps: list[float]) -> tuple[list[Step], list[datetime]]:
    """Steps and save times as the app records them: each text saved ``gaps[i]`` s after the last."""
    steps, times, prev, t = [], [], "", T0
    for text, g in zip(texts, gaps):
        steps.append(diff_step(prev, text))
        t = t + timedelta(seconds=g)
        times.append(t)
        prev = text
    return steps, times


def test_420_words_pasted_in_20_word_steps_are_flagged(liang_dir):
    essay = next(t for t in liang_texts(liang_dir, "CollegeEssay_real_70") if len(t.split()) >= 450)
    toks = essay.split()
    typed = [" ".join(toks[:i]) for i in range(8, 33, 8)]  # 32 words typed, 8 every 8 s (60 a minute)
    pasted = [" ".join(toks[:32 + i]) for i in range(20, 421, 20)]  # then 21 pastes of 20 words, 4 s apart
    steps, times = _history(typed + pasted, [8.0] * len(typed) + [4.0] * len(pasted))
    ev = summarise(steps, times, opened_at=T0)
    assert ev["large_insertions"] == []  # no single block reaches 25 words: the old check saw nothing
    cap = rules.FAST_INSERTION_WORDS_PER_SECOND * rules.FAST_INSERTION_WINDOW_SECONDS
    assert cap == 75
    # by hand: saves at 8, 16, 24, 32 s (typed), then 36, 40, ... 116 s (pastes). The third
    # paste (revision 7, at 44 s) closes the first window over 75 words: revisions 3-7 after
    # the save at 16 s (28 s earlier) inserted 8 + 8 + 3 x 20 = 76. Every later paste does too.
    (x,) = ev["fast_insertions"]
    assert (x["from_revision"], x["to_revision"], x["words"], x["seconds"]) == (3, 25, 436, 100.0)
    assert ev["fast_insertion_words"] == 436
    assert ev["rules"]["fast_insertion_window_seconds"] == 30
    assert "faster than typing" in describe(ev)


def _brute(steps: list[Step], times: list[datetime], opened: datetime | None) -> set[int]:
    """Every save k that closes a window of at most 30 s holding more than 75 inserted words
    (all pairs j < k; j = 0 is the opening), or whose stretch from the latest save at least
    30 s before it (else the first known time) inserted more than 2.5 words a second over
    max(its seconds, 30): the module docstring's two readings, all pairs written out."""
    ts = [opened, *times]
    ws = [0] + [s.inserted_words for s in steps]
    first = 0 if opened else 1
    out = set()
    for k in range(first + 1, len(ts)):
        for j in range(first, k):
            if (ts[k] - ts[j]).total_seconds() <= 30 and sum(ws[j + 1:k + 1]) > 75:
                out.add(k)
        back = [j for j in range(first, k) if (ts[k] - ts[j]).total_seconds() >= 30]
        j = back[-1] if back else first
        span = (ts[k] - ts[j]).total_seconds()
        if sum(ws[j + 1:k + 1]) > 2.5 * max(span, 30):
            out.add(k)
    return out


@pytest.mark.parametrize(("words", "every", "flagged"), [
    (24, 7.6, True),    # 3.16 words/s in saves under the large-insertion size: sustained, flagged
    (24, 10.0, False),  # 2.4 words/s: a fast typist's pace, never flagged
    (13, 5.0, True),    # 2.6 words/s
])
def test_a_steady_pace_over_the_rate_is_flagged_whatever_the_save_size(words, every, flagged):
    """The hostile check's case: 24 words every 7.6 s (3.2 words/s, 1,440 words) passed,
    because the window held only the saves within 30 s (22.8 s of typing)."""
    steps = [Step(words=words * (i + 1), inserted_words=words, deleted_words=0, largest_insertion_words=words)
             for i in range(60)]
    times = [T0 + timedelta(seconds=every * (i + 1)) for i in range(60)]
    ev = summarise(steps, times, opened_at=T0)
    assert bool(ev["fast_insertions"]) is flagged, ev["fast_insertions"]
    if flagged:
        assert ev["fast_insertion_words"] >= words * 55


def test_a_burst_after_a_long_pause_is_flagged():
    """200 words in 20 s in saves of 20 (no large insertion) after 100 s of nothing."""
    steps = [Step(words=5, inserted_words=5, deleted_words=0, largest_insertion_words=5)]
    steps += [Step(words=5 + 20 * (i + 1), inserted_words=20, deleted_words=0, largest_insertion_words=20)
              for i in range(10)]
    times = [T0 + timedelta(seconds=5)] + [T0 + timedelta(seconds=105 + 2 * (i + 1)) for i in range(10)]
    ev = summarise(steps, times, opened_at=T0)
    assert ev["fast_insertions"] and ev["fast_insertions"][0]["to_revision"] == 11


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.floats(0.0, 40.0)), min_size=1, max_size=25), st.booleans())
def test_fast_insertion_matches_a_brute_force_reading(pairs, known_opening):
    steps = [Step(words=0, inserted_words=w, deleted_words=0, largest_insertion_words=w) for w, _ in pairs]
    times, t = [], T0
    for _, g in pairs:
        t = t + timedelta(seconds=g)
        times.append(t)
    opened = T0 if known_opening else None
    got = summarise(steps, times, opened_at=opened)["fast_insertions"]
    flagged = _brute(steps, times, opened)
    assert {x["to_revision"] for x in got} <= flagged  # every stretch ends at a flagged save
    # and every flagged save lies in a stretch, with the stretch's words its saves' words
    assert flagged <= set().union(*[set(range(x["from_revision"], x["to_revision"] + 1)) for x in got])
    for x in got:
        assert x["words"] == sum(s.inserted_words for s in steps[x["from_revision"] - 1:x["to_revision"]])


def test_typing_and_a_paste_after_a_long_gap_are_not_fast(liang_dir):
    essay = liang_texts(liang_dir, "CollegeEssay_real_70")[1]
    toks = essay.split()
    # 100 words a minute (a fast typist): 10 words every 6 s, saved as the editor would
    texts = [" ".join(toks[:i]) for i in range(10, 301, 10)]
    steps, times = _history(texts, [6.0] * len(texts))
    ev = summarise(steps, times, opened_at=T0)
    assert ev["fast_insertions"] == [] and ev["fast_insertion_words"] == 0
    # 60 words appearing 5 minutes after the last save: measured against nothing (the words may
    # have been typed over the whole gap); 60 words is no large insertion either
    steps2, times2 = _history(texts + [" ".join(toks[:360])], [6.0] * len(texts) + [300.0])
    assert summarise(steps2, times2, opened_at=T0)["fast_insertions"] == []
    # the first save of an editor whose opening is unknown cannot be timed
    assert summarise([Step(80, 80, 0, 80)], [T0], None)["fast_insertions"] == []
    assert summarise([Step(80, 80, 0, 80)], [T0 + timedelta(seconds=20)], T0)["fast_insertions"] == [
        {"from_revision": 1, "to_revision": 1, "words": 80, "seconds": 20.0}]
