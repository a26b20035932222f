"""Edit spans and edit measurement: properties (hypothesis) and independent references."""

from __future__ import annotations

import random
import re
import string
import sys
import threading

import pysbd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veribench.corpus import edits
from veribench.corpus.edits import apply_edits, check_edits, diff_edits, measure_edit, sentence_spans, word_spans

ALPHABET = st.sampled_from(list("ab c.\n\u200bé,") + ["the ", "The cat. ", "x"])
TEXT = st.lists(ALPHABET, max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXT, TEXT)
def test_diff_edits_reproduce_the_target(a, b):
    edits = diff_edits(a, b)
    assert check_edits(edits, len(a)) == edits
    assert apply_edits(a, edits) == b
    assert (edits == []) == (a == b)


@settings(max_examples=200, deadline=None)
@given(TEXT, st.lists(st.tuples(st.integers(0, 40), st.integers(0, 5), TEXT), max_size=6))
def test_apply_matches_a_plain_splice(text, raw):
    """Applying valid edits equals splicing them right to left (reference written here)."""
    edits, pos = [], 0
    for start, length, rep in sorted(raw):
        s = max(start, pos)
        e = min(s + length, len(text))
        if s > len(text) or (s == e and not rep) or (edits and s == e == edits[-1][0] == edits[-1][1]):
            continue
        edits.append((s, e, rep))
        pos = e
    out = text
    for s, e, rep in reversed(edits):
        out = out[:s] + rep + out[e:]
    assert apply_edits(text, edits) == out


@pytest.mark.parametrize("bad", [[(2, 1, "x")], [(0, 3, "x"), (2, 4, "y")], [(1, 1, "a"), (1, 1, "b")],
                                 [(1, 1, "")], [(0, 99, "x")], [(0, 1)], [(True, 1, "x")], [(0, 1, 5)]])
def test_invalid_edits_are_refused(bad):
    with pytest.raises(ValueError):
        apply_edits("hello world", bad)


def levenshtein(a, b):
    """Plain dynamic-programming word edit distance (the reference)."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


WORDS = st.lists(st.sampled_from(["cat", "dog", "the", "a", "ran", "fast"]), max_size=12)
SENTS = st.lists(WORDS.filter(bool), min_size=1, max_size=5)


def join(sents):
    return " ".join(" ".join(s).capitalize() + "." for s in sents)


@settings(max_examples=200, deadline=None)
@given(SENTS, SENTS)
def test_measure_edit_counts(a, b):
    da, db = join(a), join(b)
    m = measure_edit(da, db)
    wa = [da[s:e] for s, e in word_spans(da)]
    wb = [db[s:e] for s, e in word_spans(db)]
    assert m.words_changed == levenshtein(wa, wb)
    assert m.changed_word_share == pytest.approx(m.words_changed / len(wa))
    assert m.edited_sentences - m.draft_sentences == (m.sentences_added - m.sentences_removed
                                                      + m.sentences_split - m.sentences_merged)
    if da == db:
        assert (m.words_changed, m.sentences_added, m.sentences_removed, m.sentences_split,
                m.sentences_merged) == (0, 0, 0, 0, 0)


def test_sentence_operations_are_named():
    draft = "The cat sat on the mat. It was warm there. Then it slept all day."
    assert measure_edit(draft, draft.replace("warm", "hot")).model_dump()["sentences_added"] == 0
    m = measure_edit(draft, draft + " A dog barked outside.")
    assert (m.sentences_added, m.sentences_removed) == (1, 0)
    m = measure_edit(draft, "The cat sat on the mat. Then it slept all day.")
    assert (m.sentences_added, m.sentences_removed, m.words_changed) == (0, 1, 4)
    m = measure_edit(draft, "The cat sat. On the mat it was. It was warm there. Then it slept all day.")
    assert m.sentences_split >= 1 and m.sentences_added == 0
    m = measure_edit(draft, "The cat sat on the mat and it was warm there. Then it slept all day.")
    assert m.sentences_merged == 1 and m.sentences_removed == 0


def test_empty_draft_share_is_undefined_not_zero():
    m = measure_edit("...", "Hello.")
    assert m.changed_word_share is None and m.changed_word_share_reason


def test_sentence_spans_are_exact_and_thread_safe(data_dir):
    import json

    d = json.loads((data_dir / "fastdetectgpt" / "xsum_gpt2-xl.raw_data.json").read_text())
    texts = d["original"][:60] + d["sampled"][:60]
    from veribench.corpus import edits

    want = []
    for t in texts:
        sp = edits._sentence_spans.__wrapped__(t)
        assert all(t[s:e].strip() == t[s:e] and t[s:e] for s, e in sp)
        assert all(a[1] <= b[0] for a, b in zip(sp, sp[1:]))
        want.append(sp)
    got: dict[int, tuple] = {}

    def work(k):
        for i in range(k, len(texts), 4):
            got[i] = edits._sentence_spans.__wrapped__(texts[i])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert [got[i] for i in range(len(texts))] == want
    assert sentence_spans(texts[0]) == list(want[0])


# -- sentence spans in linear time: equal to pysbd, pysbd given bounded pieces ------------------
def _pysbd_whole(text: str) -> tuple[tuple[int, int], ...]:
    """The reference: pysbd (English rules) on the whole text, as ``sentence_spans`` was before
    windowing (pysbd's own character spans; our search from the last end where they are off)."""
    import pysbd

    out, pos = [], 0
    for sp in pysbd.Segmenter(language="en", clean=False, char_span=True).segment(text):
        s, e = int(sp.start), int(sp.end)
        if not (0 <= s <= e <= len(text)) or text[s:e] != sp.sent or s < pos:
            piece = sp.sent.strip()
            s = text.find(piece, pos) if piece else -1
            if s < 0:
                continue
            e = s + len(piece)
        while e > s and text[e - 1].isspace():
            e -= 1
        while s < e and text[s].isspace():
            s += 1
        if e > s:
            out.append((s, e))
            pos = e
    return tuple(out)


def _real_texts(data_dir) -> list[str]:
    """Real prose of the repository: the Fast-DetectGPT pairs (all five sets, human and machine
    texts) and the Liang et al. essays, every distinct text."""
    import json
    from pathlib import Path

    out: set[str] = set()
    for p in sorted((data_dir / "fastdetectgpt").glob("*.raw_data.json")):
        d = json.loads(p.read_text(encoding="utf-8"))
        out.update(d["original"] + d["sampled"])
    liang = Path(__file__).resolve().parents[2] / "src" / "veribench" / "data" / "demo" / "liang2023"
    for p in sorted(liang.glob("*/*/data.json")):
        out.update(x["document"] for x in json.loads(p.read_text(encoding="utf-8")))
    return sorted(t for t in out if t.strip())


def test_sentence_spans_equal_pysbd_on_real_texts(data_dir):
    """Every real text of the repository's prose sets, and long texts and long single lines
    built from them (the windowed paths), split exactly as pysbd splits the whole text."""
    from veribench.corpus import edits

    texts = _real_texts(data_dir)
    assert len(texts) > 1200
    cut = edits.SEGMENT_BLOCK + 2 * edits.SEGMENT_CONTEXT
    windowed = [t for t in texts if len(t) > cut]  # the real texts that take the windowed path
    assert len(windowed) >= 10
    long_texts = ["\n\n".join(texts[i:i + 12]) for i in range(0, 180, 12)]  # 15 texts of ~12 essays
    assert all(len(t) > 2 * edits.SEGMENT_BLOCK for t in long_texts)
    for t in windowed + texts[::8] + long_texts:
        assert edits._sentence_spans.__wrapped__(t) == _pysbd_whole(t), t[:80]


NO_MARK = st.lists(st.sampled_from(list("abcXY 019,;:'\"(-\n\t") + ["the ", "Mr ", "e g ", "\n\n"]),
                   max_size=120).map("".join)


@settings(max_examples=300, deadline=None)
@given(NO_MARK)
def test_text_without_a_sentence_mark_is_cut_only_at_line_breaks_as_pysbd_does(text):
    from veribench.corpus import edits

    assert edits._sentence_spans.__wrapped__(text) == _pysbd_whole(text)


def test_pysbd_is_never_given_more_than_the_window(data_dir, monkeypatch):
    """Structural bound on the time: on 400 KB of prose, one 200 KB line with punctuation and
    one without, pysbd is given at most SEGMENT_MAX characters a call, and the calls cover
    each character a bounded number of times."""
    from veribench.corpus import edits

    texts = _real_texts(data_dir)
    prose = "\n\n".join(texts)[:400_000]
    line = " ".join(prose.split())[:200_000]
    bare = " ".join("".join(c for c in prose if c.isalnum() or c.isspace()).split())[:200_000]
    seen: list[int] = []
    real = edits._pysbd_sentences

    def spy(piece: str) -> list[str]:
        seen.append(len(piece))
        return real(piece)

    monkeypatch.setattr(edits, "_pysbd_sentences", spy)
    for t in (prose, line, bare):
        seen.clear()
        spans = edits._sentence_spans.__wrapped__(t)
        assert spans and all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
        assert max(seen, default=0) <= edits.SEGMENT_MAX
        # each window decides SEGMENT_BLOCK - SEGMENT_CONTEXT new characters: work per character <= 4x
        assert sum(seen) <= len(t) * edits.SEGMENT_MAX / (edits.SEGMENT_BLOCK - edits.SEGMENT_CONTEXT) + 1
    assert edits._sentence_spans.__wrapped__(bare) == ((0, len(bare)),)  # no mark: one sentence


def test_a_long_line_is_split_from_the_text_around_each_end(data_dir):
    """The documented difference. On one long line pysbd carries state far (an unbalanced
    quote, bracket or emphasis mark in one text merges thousands of characters of the texts
    after it into one "sentence"); the windowed split decides each end from the open
    sentence and SEGMENT_CONTEXT characters after it, so no sentence it gives outgrows the
    longest sentence of the texts joined by more than its windows, while pysbd's do."""
    from veribench.corpus import edits

    texts = _real_texts(data_dir)
    worst = 0
    for i in range(0, 400, 40):
        parts = texts[i:i + 10]
        line = " ".join(" ".join(parts).split())
        ours = edits._sentence_spans.__wrapped__(line)
        assert all(line[s:e] == line[s:e].strip() and s < e for s, e in ours)
        assert all(a[1] <= b[0] for a, b in zip(ours, ours[1:]))
        own = max(e - s for p in parts for s, e in _pysbd_whole(" ".join(p.split())))
        # a sentence ends within one window of where pysbd ends it in its own text
        assert max(e - s for s, e in ours) <= own + 2 * edits.SEGMENT_BLOCK
        merged = max(e - s for s, e in _pysbd_whole(line))
        worst = max(worst, merged - own)
    assert worst > 2 * edits.SEGMENT_BLOCK  # pysbd on the whole line does merge far (the case above)


# ----------------------------------------------------------------- pysbd's abbreviation scan, without repeats (issue 24)
ABBR_PIECES = st.sampled_from(["Mr. ", "Mr.", "mr. ", "e.g. ", "i.e., ", "U.S. ", "U.S.A. ", "No. 5 ", "no. ", "p.m. ",
                               "a.m. ", "St. ", "Inc. ", "Fig. 2", "fig. (", "Dr. Smith", "etc.. ", "approx. ", "Jan. 3",
                               "art. ", "pp. 4", "ſ", "İ", "\u212a", "\u00a0", " ", "\n", "\t", ".", ":", "a", "I ", "I'm ",
                               "(", ")", "?", "!", "-", ",", "The ", "in ", "x", "7", "“", "\u2026", "∯"])
ABBR_TEXT = st.lists(ABBR_PIECES, max_size=60).map("".join)


def _stock_sentences(text: str) -> list[str]:
    return list(pysbd.Segmenter(language="en", clean=False, char_span=True).processor(text).process())


def test_the_fast_scan_is_in_use():
    """With pysbd 0.3.4 the segmenter's English rules are the faster scan (else the tests below compare pysbd with itself)."""
    seg = edits._segmenter()
    assert pysbd.__version__ == edits._PYSBD_VERSION
    assert seg.language_module is not pysbd.Segmenter(language="en").language_module
    assert seg.language_module.AbbreviationReplacer.search_for_abbreviations_in_string is not \
        pysbd.abbreviation_replacer.AbbreviationReplacer.search_for_abbreviations_in_string


@settings(max_examples=400, deadline=None)
@given(ABBR_TEXT)
def test_the_fast_scan_splits_as_pysbd_does(text):
    """Abbreviations of every kind (prepositive, before a number, with inner periods, in
    any case), repeated, with non-ASCII look-alikes (long s, dotted I, Kelvin sign): the
    same sentences as pysbd's own code."""
    assert list(edits._segmenter().processor(text).process()) == _stock_sentences(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("adeghinopstmrugDEGHINOPSTMRUG .\n\t\r\x0b\x1c∯")), max_size=80),
       st.sampled_from(["no", "mr", "st", "a", "inc", "i", "nos", "e", "e.g", "i.e", "u.s", "ph.d", "dr.phil", "s.s",
                        "a.a"]))
def test_occurrences_equal_the_regular_expression(text, word):
    want = re.findall(rf"(?:^|\s|\r|\n){word}", text, flags=re.IGNORECASE)
    assert edits._occurrences(text, text.lower(), word) == want


def test_the_fast_scan_splits_real_texts_as_pysbd_does(data_dir):
    texts = _real_texts(data_dir)
    for t in texts[::3]:
        assert list(edits._segmenter().processor(t).process()) == _stock_sentences(t), t[:80]


def test_the_fold_traps_are_every_character_lower_and_ignorecase_disagree_on():
    """``str.lower`` and ``re.IGNORECASE`` agree on every code point about every ASCII letter and
    digit except :data:`edits._FOLD_TRAPS`, and ``\\s`` is ``str.isspace`` (what ``_occurrences`` relies on)."""
    one = re.compile("[a-z0-9]", re.IGNORECASE)
    found = set()
    for cp in range(0x80, sys.maxunicode + 1):
        c = chr(cp)
        low = c.lower()
        if one.fullmatch(c) or (len(low) == 1 and low.isascii() and low.isalnum()):
            if any((re.fullmatch(x, c, re.IGNORECASE) is not None) != (low == x) for x in string.ascii_lowercase + string.digits):
                found.add(c)
        if len(low) != 1:
            found.add(c)
    assert found == set(edits._FOLD_TRAPS.pattern.strip("[]"))
    space = re.compile(r"\s")
    assert all((space.fullmatch(chr(cp)) is not None) == chr(cp).isspace() for cp in range(sys.maxunicode + 1))


# ----------------------------------------------------------------- a bounded diff (issue 24)
def _paraphrased(n_words: int, seed: int = 0) -> tuple[str, str]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(3000)] + ["the", "a", "of", "and"] * 500
    src = [rng.choice(vocab) for _ in range(n_words)]
    out = [w if rng.random() > 0.3 else rng.choice(vocab) for w in src]
    del out[n_words // 3: n_words // 3 + 40]
    return " ".join(src) + ".", ". ".join(" ".join(out[i:i + 15]) for i in range(0, len(out), 15))


def test_the_diff_never_aligns_more_than_the_cap_in_one_piece(monkeypatch):
    """The exact alignment costs time and memory in len(a) * len(b) tokens (12 s for two
    paraphrased 1 MB texts): above DIFF_EXACT_CELLS the texts are cut at patience anchors and
    no piece given to rapidfuzz is over the cap; the edits still rebuild the target."""
    seen: list[int] = []
    real = edits.Levenshtein.opcodes

    class Spy:
        @staticmethod
        def opcodes(a, b):
            seen.append(len(a) * len(b))
            return real(a, b)

        distance = staticmethod(edits.Levenshtein.distance)

    monkeypatch.setattr(edits, "Levenshtein", Spy)
    monkeypatch.setattr(edits, "DIFF_EXACT_CELLS", 20_000)
    src, out = _paraphrased(3000)
    got = diff_edits(src, out)
    assert apply_edits(src, got) == out
    assert seen and max(seen) <= 20_000
    # the pieces are aligned optimally: no worse than a plain word-level count of what changed, within a margin
    tokens = len(edits._DIFF_TOKEN_RE.findall(src))
    changed = sum(len(edits._DIFF_TOKEN_RE.findall(src[s:t])) for s, t, _ in got)
    assert changed < 0.6 * tokens


def test_the_diff_under_the_cap_is_the_one_optimal_alignment():
    """Under the cap nothing changed: the edits are rapidfuzz's alignment of the whole texts."""
    src, out = _paraphrased(400, seed=1)
    a, b = edits._DIFF_TOKEN_RE.findall(src), edits._DIFF_TOKEN_RE.findall(out)
    assert len(a) * len(b) <= edits.DIFF_EXACT_CELLS
    want = [(op.src_start, op.src_end, op.dest_start, op.dest_end) for op in edits.Levenshtein.opcodes(a, b)
            if op.tag != "equal"]
    assert edits._token_changes(a, b) == want
    assert apply_edits(src, diff_edits(src, out)) == out


@settings(max_examples=200, deadline=None)
@given(TEXT, TEXT)
def test_the_anchored_diff_rebuilds_the_target(a, b):
    old = edits.DIFF_EXACT_CELLS
    edits.DIFF_EXACT_CELLS = 4  # every piece over the cap: anchors, recursion, whole replacements
    try:
        assert apply_edits(a, diff_edits(a, b)) == b
    finally:
        edits.DIFF_EXACT_CELLS = old


def test_patience_anchors_are_the_longest_increasing_run_of_unique_tokens(monkeypatch):
    a = list("xabcdyz")
    b = list("zdabcqx")
    monkeypatch.setattr(edits, "DIFF_BAND", 1.0)  # any place
    # unique in both: x, a, b, c, d, z; the longest run in the same order: a, b, c
    assert edits._patience_anchors(a, b, 0, len(a), 0, len(b)) == [(1, 2), (2, 3), (3, 4)]
    # a unique word far from the diagonal (moved, or borrowed from elsewhere) is no anchor
    a, b = ["u"] + ["x"] * 99, ["x"] * 99 + ["u"]
    assert edits._patience_anchors(a, b, 0, 100, 0, 100) == [(0, 99)]
    monkeypatch.setattr(edits, "DIFF_BAND", 0.02)
    assert edits._patience_anchors(a, b, 0, 100, 0, 100) == []
