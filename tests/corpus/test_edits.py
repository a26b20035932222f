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
