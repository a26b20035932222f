"""Edit spans and edit measurement: properties (hypothesis) and independent references."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
