"""The one word rule (issue 24): an invisible or blank-looking character between two words
separates them as a space does. Joined by U+200B, U+2800 or U+3164, a text counted as one
word, so it dodged the rubric's per-100-words denominator, the writing app's word limits
and the evidence diff."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.rubric.write_helpers import PROMPT
from veribench.rubric.write import store
from veribench.rubric.write.db import open_store
from veribench.rubric.write.evidence import diff_step
from veribench.text.hazards import BLANK_LOOKING, is_blank, is_blank_char
from veribench.text.words import js_blank_class, tokens, word_count

#: The characters named in the issue and the class they stand for, written out here
#: (independent of the rule's own list): every Cf character, and the blank-looking fillers.
NAMED = ["\u200b", "\u2800", "\u3164", "\ufeff", "\u2060", "\u180e", "\u115f", "\u1160", "\uffa0",
         "\u200c", "\u200d", "\u00ad", "\u2061", "\u034f", "\ufe0f"]
CF = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"]
JOINERS = sorted(set(NAMED + CF))
WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyzé0123456789ßЖ", min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(st.lists(WORD, min_size=2, max_size=30), st.data())
def test_a_joiner_between_words_never_makes_fewer_words_than_a_space(ws, data):
    joiners = data.draw(st.lists(st.sampled_from(JOINERS), min_size=len(ws) - 1, max_size=len(ws) - 1))
    joined = ws[0] + "".join(j + w for j, w in zip(joiners, ws[1:], strict=True))
    spaced = " ".join(ws)
    assert word_count(spaced) == len(ws)  # plain loop reference: each drawn word holds a letter or digit
    assert word_count(joined) >= word_count(spaced)
    assert tokens(joined) == ws


@pytest.mark.parametrize("ch", NAMED)
def test_each_named_character_separates_and_is_blank(ch):
    assert word_count(f"one{ch}two{ch}three") == 3
    assert is_blank(f" {ch} ") and is_blank_char(ch)
    assert word_count(ch * 5) == 0


def test_the_blank_list_is_one_list_shared_by_is_blank_and_the_browser():
    assert {"\u2800", "\u3164", "\u115f", "\u1160", "\uffa0"} <= BLANK_LOOKING
    assert not any(is_blank_char(c) for c in "aZ9éЖß.,-_ㄱ가")  # letters, even Hangul, stay visible
    ranges = re.findall(r"\\u\{([0-9A-F]+)\}(?:-\\u\{([0-9A-F]+)\})?", js_blank_class())
    in_browser = {c for a, b in ranges for c in range(int(a, 16), int(b or a, 16) + 1)}
    assert {ord(c) for c in JOINERS} | {ord(c) for c in " \t\n\u00a0\u3000"} <= in_browser
    assert in_browser == {c for c in range(0x110000) if is_blank_char(chr(c))}


@pytest.mark.parametrize("ch", ["\u200b", "\u2800", "\u3164", "\u2060", "\u180e", "\ufeff"])
def test_the_evidence_diff_counts_joined_words_as_spaced_ones(ch):
    base = "one two three"
    for new_sep in (" ", ch):
        block = new_sep.join(["four", "five", "six", "seven", "eight"])
        s = diff_step(base, f"{base} {block}")
        assert (s.words, s.inserted_words, s.largest_insertion_words) == (8, 5, 5)


@pytest.mark.parametrize("ch", ["\u200b", "\u2800", "\u3164", "\ufeff"])
def test_the_writing_app_counts_joined_words(tmp_path, ch):
    """A draft of 60 words joined by an invisible character is 60 words, as with spaces: stored
    revision words, the evidence, and the submit range check all see them."""
    ws = [f"word{i}" for i in range(60)]
    counts = []
    for sep in (" ", ch):
        with open_store(tmp_path / f"ws{ord(sep)}") as db:
            [(inv, tok)] = store.create_invitations(db, PROMPT, register="casual")
            store.redeem(db, tok)
            store.record_consent(db, inv, adult=True, agree=True, form_token=store.issue_form(db, inv, "consent"))
            store.record_self_report(db, inv, store.parse_self_report("native", "English", "20"),
                                     form_token=store.issue_form(db, inv, "about"))
            got = store.save_revision(db, inv, sep.join(ws), 0)
            counts.append((got["words"], got["evidence"]["words"], store.latest_revision(db, inv)["words"]))
    assert counts[0] == counts[1] == (60, 60, 60)
