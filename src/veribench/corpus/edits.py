"""Edits over a source text, edit measurement, and the C2 arm's edit budget (pure: the
import of edited drafts is :mod:`veribench.corpus.importers.edited`, the workspace's stored
documents :mod:`veribench.corpus.stored`).

Edit spans
----------
An edit is ``(start, end, replacement)``: replace ``source[start:end]`` by
``replacement``. Offsets are Python ``str`` indices, i.e. Unicode code points (not UTF-8
bytes) into the *source* text. A list of edits is valid when it is sorted, the spans do
not overlap (``end_i <= start_{i+1}``), no two insertions (``start == end``) share a
position, and no edit is a no-op. Applying a valid list (:func:`apply_edits`) is
unambiguous; every derived document (attack, paraphrase, humanized output, human edit)
stores such a list in ``provenance["edits"]`` and ``apply_edits(source, edits)`` gives
its text byte for byte.

Measuring a human edit (the C2 arm)
-----------------------------------
:func:`measure_edit` compares a draft with its edited version:

- **words**: maximal runs of ``\\w`` characters, joined by inner apostrophes or hyphens
  (``don't``, ``well-known``); punctuation and spacing are not words.
- **changed word share** = word-level Levenshtein distance (substitutions + insertions
  + deletions, case-sensitive) / number of draft words, i.e. the word error rate of the
  edited text against the draft (Levenshtein 1966; computed with ``rapidfuzz``). It is
  ``None`` (with a reason) for a draft without words.
- **sentences** come from ``pysbd`` (Sadvilkar & Neumann 2020, rule-based, offline).
  The optimal word alignment links every kept or substituted word of the draft to its
  counterpart; two sentences are linked when any of their words are. In each connected
  group of ``p`` draft and ``q`` edited sentences, ``q > p`` counts ``q - p`` splits and
  ``p > q`` counts ``p - q`` merges; a draft sentence with no link is *removed*, an
  edited sentence with no link is *added*. Sentences without words are ignored. So
  ``edited - draft = added - removed + split - merged`` always holds.

The budget (:class:`EditBudget`) is the protocol's: at most ``max_changed_word_share``
of words changed, at most ``sentences_added`` sentences added and at most
``sentences_removed`` removed, where a split counts as an added sentence and a merge as
a removed one (each changes the sentence count the protocol fixes). Defaults: 10%, 0, 0
(``docs/spec/002``: "up to 10% of words changed, no sentence added or deleted").
"""

from __future__ import annotations

import math
import re
import threading
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from rapidfuzz.distance import Levenshtein

from veribench.errors import InputError

Edit = tuple[int, int, str]

#: Words for the changed-word share: runs of word characters with inner ' ’ or - joins.
WORD_RE = re.compile(r"\w+(?:['’\-]\w+)*")
#: Tokens for span diffs: words, runs of whitespace, single other characters.
_DIFF_TOKEN_RE = re.compile(r"\w+|\s+|[^\w\s]", re.S)


# --------------------------------------------------------------------------- edit spans
def check_edits(edits: Sequence[Sequence[Any]], n: int | None = None) -> list[Edit]:
    """Validate an edit list and return it as ``[(start, end, replacement), ...]``.

    Args:
        edits: ``[start, end, replacement]`` items (lists or tuples).
        n: length of the source text (code points), to check bounds; ``None`` skips it.

    Raises:
        ValueError: a malformed item, an out-of-range or reversed span, unsorted or
            overlapping spans, two insertions at one position, or a no-op (empty span
            with empty replacement).
    """
    out: list[Edit] = []
    prev: Edit | None = None
    for i, e in enumerate(edits):
        if not isinstance(e, (list, tuple)) or len(e) != 3:
            raise ValueError(f"edit {i}: expected [start, end, replacement]")
        s, t, r = e
        if isinstance(s, bool) or isinstance(t, bool) or not isinstance(s, int) or not isinstance(t, int):
            raise ValueError(f"edit {i}: start and end must be integers")
        if not isinstance(r, str):
            raise ValueError(f"edit {i}: replacement must be a string")
        if s < 0 or t < s or (n is not None and t > n):
            raise ValueError(f"edit {i}: span [{s}, {t}) is out of range" + (f" for a text of {n}" if n is not None else ""))
        if s == t and not r:
            raise ValueError(f"edit {i}: no-op (empty span, empty replacement)")
        if prev is not None:
            if s < prev[1]:
                raise ValueError(f"edit {i}: span [{s}, {t}) overlaps or precedes [{prev[0]}, {prev[1]})")
            if s == t == prev[0] == prev[1]:
                raise ValueError(f"edit {i}: two insertions at position {s}")
        out.append((s, t, r))
        prev = out[-1]
    return out


def apply_edits(source: str, edits: Sequence[Sequence[Any]]) -> str:
    """The text obtained by applying ``edits`` to ``source`` (validated first).

    Raises:
        ValueError: invalid edits (see :func:`check_edits`).
    """
    return splice(source, check_edits(edits, len(source)))


def splice(source: str, edits: Sequence[Edit]) -> str:
    """:func:`apply_edits` for an edit list already returned by :func:`check_edits` (not checked again)."""
    parts: list[str] = []
    pos = 0
    for s, t, r in edits:
        parts.append(source[pos:s])
        parts.append(r)
        pos = t
    parts.append(source[pos:])
    return "".join(parts)


def drop_noops(source: str, edits: Iterable[Edit]) -> list[Edit]:
    """``edits`` without those whose replacement equals the text they replace."""
    return [(s, t, r) for s, t, r in edits if source[s:t] != r]


#: Token pairs (``len(a) * len(b)``) up to which :func:`diff_edits` aligns two texts in one
#: optimal piece (rapidfuzz's bit-parallel Levenshtein: time and memory grow with this product,
#: ~0.2 s at the cap, about 46,000 tokens or 120 KB of prose a side).
DIFF_EXACT_CELLS = 2**31
#: How many times a piece still over the cap is cut again at its own unique tokens.
DIFF_DEPTH = 4
#: How far from the proportional diagonal an anchor may lie, per token of the longer side (a
#: word the rewrite moved or borrowed from elsewhere, unique in both, would otherwise pull the
#: alignment across thousands of tokens).
DIFF_BAND = 0.02


def diff_edits(source: str, target: str) -> list[Edit]:
    """A valid edit list turning ``source`` into ``target``.

    Both texts are cut into words, whitespace runs and single other characters; the
    Levenshtein alignment of the two token sequences (``rapidfuzz``) gives the spans,
    and adjacent changes are merged into one edit. ``apply_edits(source,
    diff_edits(source, target)) == target`` for any two strings.

    Optimal (fewest token substitutions, insertions and deletions) when the two token counts
    multiply to at most :data:`DIFF_EXACT_CELLS`. Longer pairs (an exact alignment costs time
    and memory in proportion to that product: 11-17 s for two paraphrased 1 MB texts) are cut
    first, in O(n log n), at anchors: tokens that occur exactly once in each text, near the
    same place in both (:data:`DIFF_BAND`), the longest run of them in the same order in both
    (patience diff, Cohen; as in ``git diff --patience``). Each piece between anchors is aligned optimally when under the cap, else
    cut again at its own unique tokens (up to :data:`DIFF_DEPTH` times), else (a piece with no
    such token, e.g. repeated text) cut into parts at the same proportions of both sides, each
    under the cap and aligned optimally (a part still over it, impossible but for rounding, is
    replaced whole).
    The edits are then still valid, and optimal within each piece, but may change more tokens
    than the minimum.
    """
    if source == target:
        return []
    a = _DIFF_TOKEN_RE.findall(source)
    b = _DIFF_TOKEN_RE.findall(target)
    ao = _offsets(a)
    bo = _offsets(b)
    edits: list[Edit] = []
    for sa, ea, sb, eb in _token_changes(a, b):
        s, t = ao[sa], ao[ea]
        rep = target[bo[sb]:bo[eb]]
        if edits and edits[-1][1] == s:
            ps, _, pr = edits[-1]
            edits[-1] = (ps, t, pr + rep)
        else:
            edits.append((s, t, rep))
    return check_edits(drop_noops(source, edits), len(source))


def _token_changes(a: list[str], b: list[str]) -> list[tuple[int, int, int, int]]:
    """``(a_start, a_end, b_start, b_end)`` of each change turning tokens ``a`` into ``b``, in order."""
    if len(a) * len(b) <= DIFF_EXACT_CELLS:  # one optimal piece, exactly as before the cap
        return [(op.src_start, op.src_end, op.dest_start, op.dest_end)
                for op in Levenshtein.opcodes(a, b) if op.tag != "equal"]
    return _piece_changes(a, b, 0, len(a), 0, len(b), 0)


def _piece_changes(a: list[str], b: list[str], a0: int, a1: int, b0: int, b1: int,
                   depth: int) -> list[tuple[int, int, int, int]]:
    while a0 < a1 and b0 < b1 and a[a0] == b[b0]:
        a0, b0 = a0 + 1, b0 + 1
    while a1 > a0 and b1 > b0 and a[a1 - 1] == b[b1 - 1]:
        a1, b1 = a1 - 1, b1 - 1
    if a0 == a1 and b0 == b1:
        return []
    if a0 == a1 or b0 == b1:
        return [(a0, a1, b0, b1)]
    if (a1 - a0) * (b1 - b0) <= DIFF_EXACT_CELLS:
        return [(a0 + op.src_start, a0 + op.src_end, b0 + op.dest_start, b0 + op.dest_end)
                for op in Levenshtein.opcodes(a[a0:a1], b[b0:b1]) if op.tag != "equal"]
    anchors = _patience_anchors(a, b, a0, a1, b0, b1) if depth < DIFF_DEPTH else []
    if not anchors:  # cut both in k parts at the same proportions, each part under the cap
        la, lb = a1 - a0, b1 - b0
        k = math.isqrt(la * lb // DIFF_EXACT_CELLS) + 2
        out = []
        for i in range(k):
            pa, qa = a0 + la * i // k, a0 + la * (i + 1) // k
            pb, qb = b0 + lb * i // k, b0 + lb * (i + 1) // k
            out += _piece_changes(a, b, pa, qa, pb, qb, DIFF_DEPTH) if (qa - pa) * (qb - pb) <= DIFF_EXACT_CELLS \
                else [(pa, qa, pb, qb)]
        return out
    out: list[tuple[int, int, int, int]] = []
    pa, pb = a0, b0
    for i, j in anchors:
        out += _piece_changes(a, b, pa, i, pb, j, depth + 1)
        pa, pb = i + 1, j + 1
    return out + _piece_changes(a, b, pa, a1, pb, b1, depth + 1)


def _patience_anchors(a: list[str], b: list[str], a0: int, a1: int, b0: int,
                      b1: int) -> list[tuple[int, int]]:
    """The longest run of ``(i, j)``, increasing in both, with ``a[i] == b[j]`` a token that
    occurs once in ``a[a0:a1]`` and once in ``b[b0:b1]``, at about the same place in both (within
    :data:`DIFF_BAND` tokens per token of the longer side of the proportional diagonal);
    patience sorting, O(n log n)."""
    ca, cb = Counter(a[a0:a1]), Counter(b[b0:b1])
    in_b = {b[j]: j for j in range(b0, b1) if cb[b[j]] == 1 and ca[b[j]] == 1}
    la, lb = a1 - a0, b1 - b0
    # near the proportional diagonal j - b0 = (i - a0) * lb / la, within DIFF_BAND * max(la, lb) tokens (times la):
    # a unique word far from it is a coincidence or a moved word, not the same place
    band = DIFF_BAND * max(la, lb) * la
    pairs = [(i, j) for i in range(a0, a1) if a[i] in in_b
             for j in (in_b[a[i]],) if abs((i - a0) * lb - (j - b0) * la) <= band]
    tails: list[int] = []  # tails[k]: the smallest j ending an increasing run of length k + 1
    ends: list[int] = []  # the index in ``pairs`` of that run's last pair
    back = [-1] * len(pairs)
    for n, (_, j) in enumerate(pairs):
        k = bisect_left(tails, j)
        if k:
            back[n] = ends[k - 1]
        if k == len(tails):
            tails.append(j)
            ends.append(n)
        else:
            tails[k], ends[k] = j, n
    run: list[tuple[int, int]] = []
    n = ends[-1] if ends else -1
    while n >= 0:
        run.append(pairs[n])
        n = back[n]
    return run[::-1]


def _offsets(tokens: Sequence[str]) -> list[int]:
    out = [0]
    for tok in tokens:
        out.append(out[-1] + len(tok))
    return out


# --------------------------------------------------------------------------- words and sentences
def word_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every word (:data:`WORD_RE`) in ``text``."""
    return [m.span() for m in WORD_RE.finditer(text)]


_LOCAL = threading.local()


def _segmenter():
    """One pysbd segmenter per thread: a Segmenter keeps per-call state and is not thread-safe."""
    seg = getattr(_LOCAL, "segmenter", None)
    if seg is None:
        try:
            import pysbd
        except ImportError as e:  # pragma: no cover - pysbd is a core dependency
            raise InputError("sentence splitting needs the pysbd package: pip install pysbd") from e
        seg = _LOCAL.segmenter = pysbd.Segmenter(language="en", clean=False, char_span=True)
        if getattr(pysbd, "__version__", None) == _PYSBD_VERSION:
            seg.language_module = _english_without_repeats(seg.language_module)
    return seg


#: The pysbd release whose abbreviation scan :func:`_english_without_repeats` reproduces.
_PYSBD_VERSION = "0.3.4"


def _english_without_repeats(english: type) -> type:
    """pysbd 0.3.4's English rules with one change of speed, none of output: its abbreviation
    scan (``AbbreviationReplacer.search_for_abbreviations_in_string``) compiles each pattern
    once instead of through ``re``'s 512-entry cache (which its ~700 patterns overflow), finds
    each abbreviation with ``str.find`` (:func:`_occurrences`) instead of a regular expression, and
    applies each of its replacements ``(?<=\\s<abbr>)\\.(?=...)`` -> ``∯`` once per line
    instead of once per occurrence of the abbreviation (the same ``re.sub`` over the whole
    line, hundreds of times in a 2,000-character window: most of pysbd's time).

    Why skipping the repeats changes nothing: every replacement turns a ``.`` into ``∯``, and
    no atom of these patterns matches ``∯`` without also matching ``.`` (letters, ``\\s``,
    ``\\d``, ``[a-z]``, ``\\.`` match neither or only ``.``; ``.`` matches both). So a
    replacement never creates a match of any of them, and once a pattern has been applied
    to the line, applying it again, after any of the others, finds nothing. Checked against
    pysbd's own scan on real texts in tests/corpus/test_edits.py. Used only with pysbd 0.3.4
    (:data:`_PYSBD_VERSION`); any other release runs its own code.
    """
    base = english.AbbreviationReplacer
    abbreviation = english.Abbreviation
    prepositive, numbers = abbreviation.PREPOSITIVE_ABBREVIATIONS, abbreviation.NUMBER_ABBREVIATIONS
    finders: dict[str, tuple[re.Pattern[str], re.Pattern[str], bool]] = {}
    replacers: dict[tuple[str, str], re.Pattern[str]] = {}

    def finder(stripped: str) -> tuple[re.Pattern[str], re.Pattern[str], bool]:
        f = finders.get(stripped)
        if f is None:  # pysbd's two patterns, as it writes them (the abbreviation unescaped, then escaped)
            f = finders[stripped] = (re.compile(rf"(?:^|\s|\r|\n){stripped}", re.IGNORECASE),
                                     re.compile(r"(?<={" + str(re.escape(stripped)) + "} ).{1}"),
                                     _ABBREVIATION.fullmatch(stripped) is not None)
        return f

    def replacer(kind: str, abbr: str) -> re.Pattern[str]:
        r = replacers.get((kind, abbr))
        if r is None:  # pysbd's replace_prepositive_abbr, replace_pre_number_abbr, replace_period_of_abbr
            pattern = {"prepositive": rf"(?<=\s{abbr})\.(?=(\s|:\d+))",
                       "number": rf"(?<=\s{abbr})\.(?=(\s\d|\s+\())",
                       "period": rf"(?<=\s{re.escape(abbr)})\.(?=((\.|\:|-|\?|,)|(\s([a-z]|I\s|I'm|I'll|\d|\())))"}[kind]
            r = replacers[(kind, abbr)] = re.compile(pattern)
        return r

    class AbbreviationReplacer(base):  # type: ignore[misc,valid-type]
        def search_for_abbreviations_in_string(self, text: str) -> str:
            lowered = text.lower()
            plain_line = _FOLD_TRAPS.search(text) is None  # lowered matches as IGNORECASE does
            applied: set[tuple[str, str]] = set()
            for abbr in abbreviation.ABBREVIATIONS:
                stripped = abbr.strip()
                if stripped not in lowered:
                    continue
                find, next_char, findable = finder(stripped)
                matches = _occurrences(text, lowered, stripped) if plain_line and findable else find.findall(text)
                if not matches:
                    continue
                chars = next_char.findall(text) if "{" in text else []  # it looks for the literal "{abbr} "
                if not chars:  # then every match is replaced alike: the first of each spelling is enough
                    matches = list(dict.fromkeys(matches))
                for ind, am in enumerate(matches):
                    key = am.strip()
                    low = key.lower()
                    upper = ind < len(chars) and str(chars[ind]).isupper()
                    if upper and low not in prepositive:
                        continue
                    kind = "prepositive" if low in prepositive else "number" if low in numbers else "period"
                    if (kind, key) in applied:
                        continue
                    applied.add((kind, key))
                    text = replacer(kind, key).sub("∯", " " + text)[1:]
            return text

    return type("English", (english,), {"AbbreviationReplacer": AbbreviationReplacer})


#: The only characters on which ``str.lower`` and ``re.IGNORECASE`` disagree about an ASCII
#: letter or digit (dotted and dotless i, long s; found by trying every code point, see
#: tests/corpus/test_edits.py): without them, ``text.lower()`` has the length of ``text`` and
#: an ASCII word occurs in it exactly where ``re.IGNORECASE`` finds it in ``text``.
_FOLD_TRAPS = re.compile("[\u0130\u0131\u017f]")
#: An abbreviation :func:`_occurrences` finds: lower-case ASCII letters and digits, inner ``.``.
_ABBREVIATION = re.compile(r"[a-z0-9]+(?:\.[a-z0-9]*)*")


def _occurrences(text: str, lowered: str, word: str) -> list[str]:
    """What ``re.findall(r"(?:^|\\s|\\r|\\n)" + word, text, re.IGNORECASE)`` returns, for a
    ``word`` of lower-case ASCII letters and digits, each ``.`` in it standing for any character
    but a line break (pysbd puts the abbreviation in the pattern unescaped), and a ``text``
    free of :data:`_FOLD_TRAPS` when ``lowered`` (its lower case) was taken (its ``.`` since
    turned into ``∯`` at most, which matches no letter, digit or ``\\s``): each occurrence of
    ``word`` at the start or after a whitespace character, with that character, leftmost
    first and not overlapping the one before. Found with ``str.find`` in C instead of a
    regular expression tried at every position (pysbd's scan, ~200 abbreviations per line)."""
    out: list[str] = []
    n = len(word)
    head = word.split(".", 1)[0]
    rest = [(k, c) for k, c in enumerate(word) if k >= len(head)]
    last = 0  # end of the previous match: findall's matches do not overlap
    i = lowered.find(head)
    while i >= 0 and i + n <= len(text):
        if not rest or all(text[i + k] != "\n" if c == "." else lowered[i + k] == c for k, c in rest):
            s = i if i == 0 else i - 1 if text[i - 1].isspace() else -1
            if s >= last:
                out.append(text[s:i + n])
                last = i + n
        i = lowered.find(head, i + 1)
    return out


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text`` (pysbd, English rules), trailing
    whitespace excluded, in order and non-overlapping; whitespace-only pieces dropped.
    Memoised per text (pysbd takes ~10 ms a paragraph).

    Time linear in the length of the text. pysbd's own time grows about quadratically with
    what it is given (its rules are regular expressions and searches over the whole text: a
    44 KB line took 0.6 s, 1 MB minutes), so it is never given more than
    :data:`SEGMENT_MAX` characters at a time, and each character is given to it a bounded
    number of times:

    - a text of at most ``SEGMENT_BLOCK + 2 * SEGMENT_CONTEXT`` (3,000) characters: pysbd on
      the whole text, exactly as before;
    - a longer text: its lines (a line break always ends a sentence in pysbd) in blocks of
      whole lines of at most ``SEGMENT_BLOCK`` characters, each given to pysbd with up to
      ``SEGMENT_CONTEXT`` characters of neighbouring lines on either side, keeping the
      sentences that start in the block;
    - a line longer than ``SEGMENT_BLOCK``: window by window. Each window decides the
      sentence ends in the next ``SEGMENT_BLOCK - SEGMENT_CONTEXT`` characters, seeing
      ``SEGMENT_CONTEXT`` characters past them, and starts at the start of the open
      sentence, or ``SEGMENT_CONTEXT`` before the decided point when that sentence has run
      for more than ``SEGMENT_BLOCK`` characters; the sentence cut by a window's end is
      not kept;
    - a piece holding no character on which pysbd may end a sentence (:data:`_NEEDS_PYSBD`)
      is cut at its line breaks only, without calling pysbd (as pysbd would).

    The rule where this differs from pysbd on the whole text: a sentence end is decided from
    the open sentence (up to ``SEGMENT_BLOCK`` characters of it) and ``SEGMENT_CONTEXT``
    characters after it. pysbd's state that reaches farther is not followed: its quote
    tracking after a stray quote mark (it merged 2,700 characters into one "sentence" after
    one) and its numbered-list detection over the whole text. Those splits were artefacts
    of one mark far away; the windowed split is pysbd's on the text around each end. On the
    repository's real texts (13,551 distinct strings of its data files, checked by
    ``benchmarks/check_sentence_spans.py``) the spans equal pysbd's on every prose text; they
    differ on one Markdown table (numbered-list detection) and on 233 of 489 single-line HTML
    detector reports (quote tracking). tests/corpus/test_edits.py checks equality on real
    texts and the bound on what pysbd is given.
    """
    return list(_sentence_spans(text))


#: Lines are split in blocks (and long lines decided in steps of ``SEGMENT_BLOCK -
#: SEGMENT_CONTEXT``) of this many characters, seeing this much context (see :func:`sentence_spans`).
SEGMENT_BLOCK = 2000
SEGMENT_CONTEXT = 500
#: The most characters pysbd is given at once.
SEGMENT_MAX = 2 * SEGMENT_BLOCK
#: Characters after which, or around which, pysbd (English rules) may end a sentence: its
#: punctuation, ``)`` (list items ``a)``, ``1)``), ``-`` before a quote, a carriage return, and any
#: character outside ASCII (its own placeholder symbols among them). A piece of text holding
#: none of them is cut by pysbd only at its line breaks.
_NEEDS_PYSBD = re.compile(r"[.!?)\r]|-[\"']|[^\x00-\x7f]")
_LINE = re.compile(r"[^\n\r]+")


def _pysbd_sentences(piece: str) -> list[str]:
    """pysbd's sentences of ``piece`` as strings, without its own span search."""
    if _NEEDS_PYSBD.search(piece) is None:
        return piece.split("\n")
    return list(_segmenter().processor(piece).process())


def _pysbd_spans(text: str, a: int, b: int) -> list[tuple[int, int]]:
    piece = text[a:b]
    out: list[tuple[int, int]] = []
    pos = 0
    for sent in _pysbd_sentences(piece):
        found = sent.strip()
        if not found:
            continue
        s = piece.find(found, pos)
        if s < 0:
            continue
        e = s + len(found)
        out.append((a + s, a + e))
        pos = e
    return out


def _line_spans(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """The sentences of one line ``text[a:b]`` longer than ``SEGMENT_BLOCK``, window by window."""
    ends: list[int] = []
    if _NEEDS_PYSBD.search(text, a, b) is None:
        decided = b  # no mark pysbd ends a sentence on: the line is one sentence
    else:
        decided = a
    last = a  # sentence ends up to ``decided`` are final; ``last`` is the latest one
    while decided < b:
        # start at the open sentence's start when it began at most SEGMENT_BLOCK before (pysbd
        # then sees it whole); a longer one is entered SEGMENT_CONTEXT before the decided point
        w0 = last if decided - last <= SEGMENT_BLOCK else decided - SEGMENT_CONTEXT
        w1 = min(b, decided + SEGMENT_BLOCK)
        spans = _pysbd_spans(text, w0, w1)
        limit = b
        if w1 < b:
            limit = w1 - SEGMENT_CONTEXT
            if spans:
                spans.pop()  # cut by the window: its end is the window's, not a sentence's
        new = [e for _, e in spans if decided < e <= limit]
        if new:
            ends += new
            last = new[-1]
        decided = limit
    out: list[tuple[int, int]] = []
    s = a
    for e in [*ends, b]:
        while s < e and text[s].isspace():
            s += 1
        t = e
        while t > s and text[t - 1].isspace():
            t -= 1
        if t > s:
            out.append((s, t))
        s = max(s, e)
    return out


@lru_cache(maxsize=4096)
def _sentence_spans(text: str) -> tuple[tuple[int, int], ...]:
    n = len(text)
    if n <= SEGMENT_BLOCK + 2 * SEGMENT_CONTEXT:
        return tuple(_pysbd_spans(text, 0, n))
    lines = [m.span() for m in _LINE.finditer(text)]
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        a, b = lines[i]
        if b - a > SEGMENT_BLOCK:
            out += _line_spans(text, a, b)
            i += 1
            continue
        j = i
        while j + 1 < len(lines) and lines[j + 1][1] - a <= SEGMENT_BLOCK:
            j += 1
        end = lines[j][1]
        k, ca = i, a
        while k > 0 and a - lines[k - 1][0] <= SEGMENT_CONTEXT:
            k -= 1
            ca = lines[k][0]
        k, cb = j, end
        while k + 1 < len(lines) and lines[k + 1][1] - end <= SEGMENT_CONTEXT:
            k += 1
            cb = lines[k][1]
        out += [(s, min(e, end)) for s, e in _pysbd_spans(text, ca, cb) if a <= s < end]
        i = j + 1
    return tuple(out)


# --------------------------------------------------------------------------- measurement
class EditMeasure(BaseModel):
    """The measured size of one human edit (see the module docstring for definitions)."""

    model_config = ConfigDict(extra="forbid")
    draft_words: int
    edited_words: int
    words_changed: int = Field(description="word-level Levenshtein distance, draft -> edited")
    changed_word_share: float | None = Field(description="words_changed / draft_words; None without draft words")
    changed_word_share_reason: str | None = None
    draft_sentences: int
    edited_sentences: int
    sentences_added: int
    sentences_removed: int
    sentences_split: int
    sentences_merged: int

    def summary(self) -> str:
        share = "n/a" if self.changed_word_share is None else f"{100 * self.changed_word_share:.1f}%"
        return (f"{self.words_changed}/{self.draft_words} words changed ({share}); sentences "
                f"+{self.sentences_added} -{self.sentences_removed} split {self.sentences_split} "
                f"merged {self.sentences_merged}")


def _sentence_of(spans: list[tuple[int, int]], sents: list[tuple[int, int]]) -> list[int | None]:
    out: list[int | None] = []
    j = 0
    for s, _ in spans:
        while j < len(sents) and sents[j][1] <= s:
            j += 1
        out.append(j if j < len(sents) and sents[j][0] <= s else None)
    return out


def measure_edit(draft: str, edited: str) -> EditMeasure:
    """Measure how ``edited`` differs from ``draft`` (words changed, sentences added,
    removed, split, merged). Pure; see the module docstring for every definition."""
    dw_spans, ew_spans = word_spans(draft), word_spans(edited)
    dw = [draft[s:e] for s, e in dw_spans]
    ew = [edited[s:e] for s, e in ew_spans]
    dist = int(Levenshtein.distance(dw, ew))
    d_sent = _sentence_of(dw_spans, sentence_spans(draft))
    e_sent = _sentence_of(ew_spans, sentence_spans(edited))
    d_ids = sorted({x for x in d_sent if x is not None})
    e_ids = sorted({x for x in e_sent if x is not None})
    # Union-find over draft sentences ("d", i) and edited sentences ("e", j).
    parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def link(i: int, j: int) -> None:
        a, b = d_sent[i], e_sent[j]
        if a is None or b is None:
            return
        ra, rb = find(("d", a)), find(("e", b))
        if ra != rb:
            parent[ra] = rb

    for x in d_ids:
        find(("d", x))
    for x in e_ids:
        find(("e", x))
    for op in Levenshtein.opcodes(dw, ew):
        n_src, n_dst = op.src_end - op.src_start, op.dest_end - op.dest_start
        if op.tag == "equal":
            for k in range(n_src):
                link(op.src_start + k, op.dest_start + k)
        elif op.tag == "replace":
            for k in range(n_src):  # proportional pairing inside a substituted block
                link(op.src_start + k, op.dest_start + min(n_dst - 1, k * n_dst // n_src))
    groups: dict[tuple[str, int], list[int]] = {}
    for node in list(parent):
        g = groups.setdefault(find(node), [0, 0])
        g[0 if node[0] == "d" else 1] += 1
    added = removed = split = merged = 0
    for p, q in groups.values():
        if p == 0:
            added += q
        elif q == 0:
            removed += p
        elif q > p:
            split += q - p
        elif p > q:
            merged += p - q
    share = None if not dw else dist / len(dw)
    return EditMeasure(draft_words=len(dw), edited_words=len(ew), words_changed=dist, changed_word_share=share,
                       changed_word_share_reason=None if dw else "the draft has no words",
                       draft_sentences=len(d_ids), edited_sentences=len(e_ids), sentences_added=added,
                       sentences_removed=removed, sentences_split=split, sentences_merged=merged)


# --------------------------------------------------------------------------- the budget
#: Default C2 budget (docs/spec/002: "up to 10% of words changed, no sentence added or deleted").
DEFAULT_BUDGET = {"max_changed_word_share": 0.10, "sentences_added": 0, "sentences_removed": 0}
DEFAULT_ON_VIOLATION = "refuse"


class EditBudget(BaseModel):
    """The edit budget of an arm (protocol ``[arms].<arm>.edit_budget`` and ``on_violation``).

    Attributes:
        max_changed_word_share: in [0, 1]; the changed word share may equal it.
        sentences_added: most sentences added (splits included).
        sentences_removed: most sentences removed (merges included).
        on_violation: ``"refuse"`` (not imported, listed in the report) or
            ``"move:ARM"`` (imported into arm ``ARM``, tagged ``edit_budget=over``).
    """

    model_config = ConfigDict(extra="forbid")
    max_changed_word_share: float = Field(DEFAULT_BUDGET["max_changed_word_share"], ge=0, le=1)
    sentences_added: int = Field(DEFAULT_BUDGET["sentences_added"], ge=0)
    sentences_removed: int = Field(DEFAULT_BUDGET["sentences_removed"], ge=0)
    on_violation: str = DEFAULT_ON_VIOLATION

    @field_validator("on_violation")
    @classmethod
    def _action(cls, v: str) -> str:
        if v == "refuse" or (v.startswith("move:") and v[5:].strip()):
            return v
        raise ValueError("on_violation must be 'refuse' or 'move:ARM'")

    @property
    def move_to(self) -> str | None:
        return self.on_violation[5:].strip() if self.on_violation.startswith("move:") else None

    def violations(self, m: EditMeasure) -> list[str]:
        """Why ``m`` is outside the budget (empty list: inside). Exact rational comparison."""
        out = []
        if m.changed_word_share is None:
            if m.words_changed:
                out.append("the draft has no words, so the changed share is undefined")
        elif Fraction(m.words_changed, m.draft_words) > Fraction(str(self.max_changed_word_share)):
            out.append(f"{m.words_changed}/{m.draft_words} words changed ({100 * m.changed_word_share:.1f}%) "
                       f"> {100 * self.max_changed_word_share:g}%")
        if m.sentences_added + m.sentences_split > self.sentences_added:
            out.append(f"{m.sentences_added} sentence(s) added and {m.sentences_split} split > "
                       f"{self.sentences_added} allowed")
        if m.sentences_removed + m.sentences_merged > self.sentences_removed:
            out.append(f"{m.sentences_removed} sentence(s) removed and {m.sentences_merged} merged > "
                       f"{self.sentences_removed} allowed")
        return out


def edit_budget(protocol: Any = None, arm: str = "C2") -> EditBudget:
    """The edit budget of ``arm`` under a parsed protocol (its ``[arms].<arm>`` entry).

    Args:
        protocol: a :class:`veribench.protocol.model.Protocol` (its validated ``arm_specs``:
            ``edit_budget`` and ``on_violation``, range-checked when the file was loaded), or
            ``None`` for the defaults.
        arm: the arm whose budget applies.

    An arm the protocol does not list, or lists without an ``edit_budget``, takes the
    defaults (10% of words, 0 sentences added, 0 removed) with its ``on_violation``
    (default ``refuse``).
    """
    spec = (getattr(protocol, "arm_specs", None) or {}).get(arm)
    data: dict[str, Any] = {}
    if spec is not None:
        if spec.edit_budget is not None:
            data.update(spec.edit_budget.model_dump())
        data["on_violation"] = spec.on_violation
    return EditBudget.model_validate(data)
