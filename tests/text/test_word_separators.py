"""A character separates words unless it is an assigned, visible character (issue 24, hostile
tester's third round): unassigned Default_Ignorable code points (U+2065, U+FFF0, U+E0000,
U+E0080, U+E01F0), private use (U+E000, U+F0000), other unassigned code points and blank
symbols such as U+1D159 joined 200 words into one, and the writing app accepted them."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veribench.rubric.write.evidence import diff_step
from veribench.rubric.write.store import WriteError, check_text
from veribench.text.hazards import DEFAULT_IGNORABLE, is_blank, is_blank_char
from veribench.text.words import js_blank_class, tokens, word_count

HOLES = ["\u2065", "\ufff0", "\ufff8", "\U000e0000", "\U000e0002", "\U000e0080", "\U000e01f0", "\U000e0fff",
         "\ue000", "\U000f0000", "\U00100000", "\U0001d159", "\u0378", "\U0003ffff"]
CATEGORIES = ("Cc", "Cf", "Cn", "Co", "Cs", "Zs", "Zl", "Zp")
# separators drawn from every class of the rule: categories (sampled across the code space),
# every Default_Ignorable range's ends, the blank-looking fillers
_BY_CATEGORY = [chr(c) for c in range(0, 0x110000, 97) if unicodedata.category(chr(c)) in CATEGORIES]
SEPARATORS = sorted(set(HOLES + _BY_CATEGORY + [chr(x) for r in DEFAULT_IGNORABLE for x in r]
                        + list("\u2800\u3164\u115f\u1160\uffa0\u034f\ufe0f\U000e0100")))
WORDS = st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyzé0123456789", min_size=1, max_size=8),
                 min_size=1, max_size=30)


@pytest.mark.parametrize("sep", HOLES, ids=lambda c: f"U+{ord(c):04X}")
def test_the_testers_separators_no_longer_join_words(sep):
    words = [f"lorem{i}" for i in range(200)]
    text = sep.join(words)
    assert word_count(text) == 200 and tokens(text) == words
    assert is_blank(sep * 3)


@settings(max_examples=300, deadline=None)
@given(WORDS, st.sampled_from(SEPARATORS))
def test_joining_words_with_any_separator_never_gives_fewer_words_than_a_space(words, sep):
    assert word_count(sep.join(words)) >= word_count(" ".join(words)) == len(words)


def test_the_rule_is_exactly_not_an_assigned_visible_character():
    """Checked against the ``regex`` package's Unicode tables (an independent reference)."""
    regex = pytest.importorskip("regex")
    ignorable = regex.compile(r"\p{Default_Ignorable_Code_Point}")
    for c in [*range(0x3000), *range(0xFE00, 0x10000), *range(0x1D100, 0x1D200), *range(0xE0000, 0xE1000)]:
        ch = chr(c)
        want = (ch.isspace() or unicodedata.category(ch) in CATEGORIES or bool(ignorable.match(ch))
                or ch in "\u2800\u2d7f\U0001d159")
        assert is_blank_char(ch) is want, f"U+{c:04X}"
    assert not any(is_blank_char(c) for c in "aZ9é漢ß.,!-_")


def test_the_browser_uses_the_same_separators():
    body = js_blank_class()
    ranges = [tuple(int(x, 16) for x in re.findall(r"\\u\{([0-9A-F]+)\}", part))
              for part in re.findall(r"\\u\{[0-9A-F]+\}(?:-\\u\{[0-9A-F]+\})?", body)]
    covered = lambda c: any(r[0] <= c <= r[-1] for r in ranges)  # noqa: E731
    assert all(covered(ord(c)) for c in HOLES) and not covered(ord("a"))


@pytest.mark.parametrize("sep", ["\u2065", "\ufff0", "\U000e0080", "\U000e01f0", "\u0378"])
def test_the_writing_app_refuses_an_unassigned_character(sep):
    with pytest.raises(WriteError, match=r"^the text holds an unassigned character \(U\+[0-9A-F]+\) at character 7"):
        check_text(sep.join(f"lorem{i}" for i in range(200)))


@pytest.mark.parametrize("sep", ["\ue000", "\U000f0000", "\U00100000"])
def test_the_writing_app_refuses_a_private_use_character(sep):
    with pytest.raises(WriteError, match=r"^the text holds a private-use character"):
        check_text(sep.join(f"lorem{i}" for i in range(200)))


@pytest.mark.parametrize("sep", ["\u200b", "\U0001d159", "\u2800"])
def test_a_paste_of_joined_words_counts_every_word(sep):
    """Characters the app accepts (assigned) still separate: a paste of 200 words is 200 inserted words."""
    step = diff_step("", check_text(sep.join(f"lorem{i}" for i in range(200))))
    assert step.words == step.inserted_words == step.largest_insertion_words == 200, step


# -- hostile tester's fourth round: U+16FE4 KHITAN SMALL SCRIPT FILLER (Mn) joined words -------

_VISIBLE_FILLERS = {0x2422, 0xA8F9, 0x10AF6, 0x1144E, 0x11945, 0x11C44, 0x11C45}  # So/Po marks that are drawn


@pytest.mark.parametrize("sep", ["\U00016fe4", "\U00016fe4\U00016fe4"], ids=["one", "two"])
def test_the_khitan_filler_separates_words(sep):
    assert word_count(f"one{sep}two") == 2 and tokens(f"one{sep}two") == ["one", "two"]
    assert is_blank(sep) and word_count(sep.join(f"lorem{i}" for i in range(200))) == 200
    assert any(r[0] <= 0x16FE4 <= r[-1] for r in _js_ranges())  # the browser's word rule too


def _js_ranges() -> list[tuple[int, ...]]:
    return [tuple(int(x, 16) for x in re.findall(r"\\u\{([0-9A-F]+)\}", part))
            for part in re.findall(r"\\u\{[0-9A-F]+\}(?:-\\u\{[0-9A-F]+\})?", js_blank_class())]


def test_every_mark_or_letter_named_filler_or_blank_separates_words():
    """A scan of all code points (``unicodedata.name``): each Mn/Me/Lo character whose name
    holds FILLER or BLANK is blank and separates words; the visible FILLER/BLANK marks do not."""
    named = [c for c in range(0x110000) if any(w in unicodedata.name(chr(c), "") for w in ("FILLER", "BLANK"))]
    marks = [c for c in named if unicodedata.category(chr(c)) in ("Mn", "Me", "Lo")]
    assert 0x16FE4 in marks and 0x3164 in marks
    for c in marks:
        assert is_blank_char(chr(c)) and word_count(f"one{chr(c)}two") == 2, f"U+{c:04X} {unicodedata.name(chr(c))}"
    for c in _VISIBLE_FILLERS & set(named):
        assert not is_blank_char(chr(c)) and word_count(f"one{chr(c)}two") == 1, f"U+{c:04X}"


# -- hostile tester's fifth round: U+2D7F TIFINAGH CONSONANT JOINER (Mn, draws nothing) joined words --


@pytest.mark.parametrize("sep", ["\u2d7f", "\u2d7f\u2d7f"], ids=["one", "two"])
def test_the_tifinagh_consonant_joiner_separates_words(sep):
    assert unicodedata.category("\u2d7f") == "Mn"
    assert word_count(f"one{sep}two") == 2 and tokens(f"one{sep}two") == ["one", "two"]
    assert is_blank(sep) and word_count(sep.join(f"lorem{i}" for i in range(200))) == 200
    assert any(r[0] <= 0x2D7F <= r[-1] for r in _js_ranges())  # the browser's word rule too
