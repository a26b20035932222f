"""Inputs that fool detectors: hazards found in a text, and the canonical form that removes them.

Three hazards are recorded with every score, computed or imported, in
``ScoreResult.detail["hazards"]`` (shape fixed by CONTRACTS.md; see ``docs/hazards.md``)::

    {"confusables": int,                      # non-Latin look-alikes of Latin letters
     "invisible": int,                        # characters of Unicode category Cf (U+200B ...)
     "degenerate_repetition": bool,           # distinct word-3-gram ratio below the rule's bound
     "distinct_word_trigram_ratio": float | None}   # None: fewer than 3 words

over the text exactly as it was submitted for scoring, before any canonicalisation.

Definitions (the one place they live):

- **Letter**: a character of Unicode general category ``L*``. Its **script** comes from
  the Unicode Scripts data as packaged by ``confusable_homoglyphs`` (``categories.alias``).
- **Latin look-alike**: an entry of the Unicode confusables data (UTS #39
  ``confusables.txt``, as packaged by ``confusable_homoglyphs``) made of ASCII letters,
  possibly with combining marks. A non-Latin letter's target is its first one-character
  look-alike, else its first longer one, in the data's order (Cyrillic ``а`` → ``a``,
  Greek ``Ο`` → ``O``, MATHEMATICAL BOLD SMALL A → ``a``, Cyrillic ``ӕ`` → ``ae``).
- **Non-Latin confusable**: a letter that is not of the Latin script and has a Latin
  look-alike, in a *word* (a run of letters, marks and Cf characters) that either also
  holds a Latin letter (a mixed-script word such as ``pаper``, UTS #39 section 5), or is
  made only of look-alikes (``соре`` in Cyrillic) inside Latin-script text (more than
  :data:`LATIN_TEXT_MIN_SHARE` of the text's letters are Latin). A Russian or Greek text
  has none; a Russian word quoted in English text (``Спасибо``, which holds letters
  without a Latin look-alike) has none either.
- **Invisible**: a character whose general category is in :data:`INVISIBLE_CATEGORIES`
  (``Cf``: ZERO WIDTH SPACE/NON-JOINER/JOINER, WORD JOINER, SOFT HYPHEN, BOM, bidi controls).
- **Degenerate repetition**: the distinct word-3-gram ratio, #distinct / #all word
  trigrams (1 − seq-rep-3 of Welleck et al. 2020), is below :data:`REPETITION`'s bound.
  Words are ``\\w+`` runs of the canonical text (:func:`canonicalize`), case-folded, so
  homoglyphs or invisible characters sprinkled into a repeated text do not hide it.

Canonicalisation (the detector setting ``canonicalize = "skeleton"``, see
:data:`SETTING`) repeats, until the text no longer changes: strip invisible (Cf)
characters; Unicode NFKC; replace each non-Latin confusable by its Latin look-alike. The
result has no invisible characters and no non-Latin confusables, and is stable
(``canonicalize(canonicalize(t)) == canonicalize(t)``). An ASCII text is returned as is.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

#: The detector setting that turns canonicalisation on (registry and spec; see docs/hazards.md).
SETTING = "canonicalize"
#: Its values: ``none`` (default; the text goes to the detector byte for byte) and ``skeleton``.
CANONICALIZE_MODES = ("none", "skeleton")
#: General categories counted as invisible characters.
INVISIBLE_CATEGORIES = frozenset({"Cf"})


#: Characters that show nothing yet are neither white space, nor of a category in
#: :data:`SEPARATOR_CATEGORIES`, nor in :data:`DEFAULT_IGNORABLE`: U+2800 BRAILLE PATTERN BLANK
#: (``So``, drawn as an empty cell) and U+1D159 MUSICAL SYMBOL NULL NOTEHEAD (``So``, drawn as
#: nothing), with the Default_Ignorable letters and marks written out (the Hangul fillers
#: U+115F, U+1160, U+3164, U+FFA0 are ``Lo``; U+034F, U+17B4/5, the Mongolian and other
#: variation selectors are ``Mn``), and U+16FE4 KHITAN SMALL SCRIPT FILLER (``Mn``, not
#: Default_Ignorable, draws nothing) and U+2D7F TIFINAGH CONSONANT JOINER (``Mn``, draws
#: nothing). Every ``Mn``/``Me``/``Lo`` character whose Unicode name
#: holds FILLER or BLANK is here (tests/text/test_word_separators.py scans them); the other
#: FILLER/BLANK names are visible marks (U+2422 BLANK SYMBOL, the ``Po`` gap fillers) and
#: stay word characters. The one list of blank-looking assigned characters.
BLANK_LOOKING = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u2800\u2d7f\u3164\uffa0\U0001d159\U00016fe4"
    + "".join(chr(c) for c in range(0xFE00, 0xFE10))      # VARIATION SELECTOR-1..16
    + "".join(chr(c) for c in range(0xE0100, 0xE01F0)))   # VARIATION SELECTOR-17..256

#: General categories that separate words (and are blank): controls ``Cc``, format ``Cf``,
#: unassigned ``Cn``, private use ``Co``, surrogates ``Cs`` and the separators ``Zs``, ``Zl``,
#: ``Zp``: none is an assigned, visible character.
SEPARATOR_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Zs", "Zl", "Zp"})

#: The Unicode version :data:`DEFAULT_IGNORABLE` is taken from.
DEFAULT_IGNORABLE_VERSION = "15.1.0"
#: Every Default_Ignorable_Code_Point, as inclusive ranges of code points: Unicode 15.1.0,
#: DerivedCoreProperties.txt (https://www.unicode.org/Public/15.1.0/ucd/DerivedCoreProperties.txt;
#: the set is the same in 14.0.0, which added U+180F, and 16.0.0). It holds unassigned code
#: points (U+2065, U+FFF0..FFF8, U+E0000, U+E0002..E001F, U+E0080..E00FF, U+E01F0..E0FFF) that
#: a renderer must draw as nothing.
DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)


def is_default_ignorable(ch: str) -> bool:
    """True when the one character ``ch`` is a Default_Ignorable_Code_Point (:data:`DEFAULT_IGNORABLE`)."""
    c = ord(ch)
    return any(lo <= c <= hi for lo, hi in DEFAULT_IGNORABLE)


def is_blank_char(ch: str) -> bool:
    """True when the one character ``ch`` is not an assigned, visible character: white space
    (``str.isspace``), a category of :data:`SEPARATOR_CATEGORIES` (controls, format characters
    such as U+200B ZERO WIDTH SPACE and U+FEFF, unassigned and private-use code points,
    surrogates, space separators), a Default_Ignorable_Code_Point (:data:`DEFAULT_IGNORABLE`)
    or one of :data:`BLANK_LOOKING` (U+2800 BRAILLE PATTERN BLANK, U+3164 HANGUL FILLER,
    U+1D159, ...). Categories as of Python's ``unicodedata`` (``unicodedata.unidata_version``).

    The one rule for "shows nothing", used by :func:`is_blank` (an empty text or field) and
    by the word rule (:func:`veribench.text.words.tokens`: such a character separates words)."""
    return (ch.isspace() or ch in BLANK_LOOKING or unicodedata.category(ch) in SEPARATOR_CATEGORIES
            or is_default_ignorable(ch))


@lru_cache(maxsize=1)
def blank_ranges() -> tuple[tuple[int, int], ...]:
    """Every code point for which :func:`is_blank_char` is true, as sorted, merged inclusive
    ranges ``(first, last)`` of U+0000..U+10FFFF (most unassigned code points are blank, so a
    set of characters would be ~1M entries; computed once, ~0.5 s, for the word rule's
    regular expressions in Python and in the browser)."""
    out: list[tuple[int, int]] = []
    for c in range(0x110000):
        if is_blank_char(chr(c)):
            if out and out[-1][1] == c - 1:
                out[-1] = (out[-1][0], c)
            else:
                out.append((c, c))
    return tuple(out)


def is_blank(text: str) -> bool:
    """True when ``text`` shows a reader nothing: empty, or only characters for which
    :func:`is_blank_char` holds (white space, invisible ``Cf`` characters such as U+200B ZERO
    WIDTH SPACE or U+FEFF, and :data:`BLANK_LOOKING` fillers such as U+2800 or U+3164). The
    one rule for "an empty text or field" at import: ``str.strip`` alone let ``"  \u200b "``
    through as a document. Stops at the first visible character."""
    return all(is_blank_char(c) for c in text)


#: Above this share of Latin letters a text is Latin-script text.
LATIN_TEXT_MIN_SHARE = 0.5


@dataclass(frozen=True)
class RepetitionRule:
    """When a text counts as degenerate repetition.

    Attributes:
        n: n-gram length in words.
        min_distinct_ratio: a text whose distinct n-gram ratio is *below* this is flagged.
        source: where the measure and the bound come from.
    """

    n: int
    min_distinct_ratio: float
    source: str


#: The repetition rule as data. Natural prose has a distinct word-trigram ratio near 1
#: (Welleck et al. 2020 report seq-rep-4 of 0.006 for human Wikitext-103 continuations);
#: below 0.5 more than half of a text's trigrams repeat an earlier one (case c26: one
#: sentence 30 times gives 0.0335).
REPETITION = RepetitionRule(
    n=3, min_distinct_ratio=0.5,
    source="seq-rep-n = 1 - distinct n-grams / n-grams, Welleck et al. 2020, 'Neural Text Generation with "
           "Unlikelihood Training' (ICLR); bound 0.5 chosen by veribench (docs/hazards.md)",
)

_WORD = re.compile(r"\w+")

# Character classes used by the scan.
_LATIN, _CONF, _LETTER, _JOIN, _INVISIBLE, _OTHER = range(6)


@lru_cache(maxsize=1)
def _data() -> tuple[Any, Any]:
    from confusable_homoglyphs import categories, confusables

    return confusables.confusables_data, categories.alias


def _latin_look(s: str) -> bool:
    """True when ``s`` is ASCII letters, possibly with combining marks (``a``, ``ae``, ``ë``)."""
    d = unicodedata.normalize("NFD", s)
    return any(c.isascii() for c in d) and all((c.isascii() and c.isalpha()) or unicodedata.category(c) == "Mn"
                                               for c in d)


@lru_cache(maxsize=1 << 16)
def _info(ch: str) -> tuple[int, str | None]:
    """(class, Latin target) of one character; the target is set for ``_CONF`` only."""
    if ch.isascii():
        return (_LATIN, None) if ch.isalpha() else (_OTHER, None)
    cat = unicodedata.category(ch)
    if cat in INVISIBLE_CATEGORIES:
        return _INVISIBLE, None
    if cat.startswith("M"):
        return _JOIN, None
    if not cat.startswith("L"):
        return _OTHER, None
    data, alias = _data()
    if alias(ch) == "LATIN":
        return _LATIN, None
    looks = [d["c"] for d in data.get(ch, ()) if d["c"] and _latin_look(d["c"])]
    if not looks:
        return _LETTER, None
    single = [c for c in looks if len(c) == 1]
    return _CONF, (single or looks)[0]


def _scan(text: str) -> tuple[list[tuple[int, str]], int]:
    """(non-Latin confusables as (index, Latin target), count of invisible characters).

    A text none of whose distinct characters is a confusable or invisible gives ([], 0)
    without the per-character walk (:func:`_scan_chars`, which gives the same)."""
    if text.isascii() or not any(_info(ch)[0] in (_CONF, _INVISIBLE) for ch in set(text) if not ch.isascii()):
        return [], 0
    return _scan_chars(text)


def _scan_chars(text: str) -> tuple[list[tuple[int, str]], int]:
    """:func:`_scan` by walking every character (words, Latin share, invisibles)."""
    letters = latin = invisible = 0
    mixed: list[tuple[int, str]] = []  # in words that also hold a Latin letter
    whole: list[tuple[int, str]] = []  # in words made only of look-alikes
    word: list[tuple[int, str]] = []
    has_latin, all_conf = False, True

    def end_word() -> None:
        if has_latin:
            mixed.extend(word)
        elif all_conf:
            whole.extend(word)

    for i, ch in enumerate(text):
        k, target = _info(ch)
        if k == _INVISIBLE:
            invisible += 1
            continue  # inside or between words alike: it never splits a word
        if k == _JOIN:
            continue
        if k in (_LATIN, _CONF, _LETTER):
            letters += 1
            if k == _LATIN:
                latin += 1
                has_latin = True
            elif k == _CONF:
                word.append((i, target))  # type: ignore[arg-type]  # _info sets a target for every _CONF
            else:
                all_conf = False
            continue
        end_word()
        word, has_latin, all_conf = [], False, True
    end_word()
    if letters and latin / letters > LATIN_TEXT_MIN_SHARE:
        return sorted(mixed + whole), invisible
    return mixed, invisible


def confusable_count(text: str) -> int:
    """Number of non-Latin confusables in ``text`` (see the module docstring); >= 0."""
    return len(_scan(text)[0])


def invisible_count(text: str) -> int:
    """Number of characters of ``text`` whose category is in :data:`INVISIBLE_CATEGORIES`."""
    return _scan(text)[1]


def distinct_word_trigram_ratio(text: str, n: int = REPETITION.n) -> float | None:
    """#distinct / #all word ``n``-grams of the canonical, case-folded text, in (0, 1].

    Returns ``None`` (undefined) when the text has fewer than ``n`` words.
    """
    words = _WORD.findall(canonicalize(text).casefold())
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    if not grams:
        return None
    return len(set(grams)) / len(grams)


def text_hazards(text: str) -> dict[str, Any]:
    """The hazards of ``text`` as recorded in ``detail["hazards"]`` (shape in the module docstring).

    Example: case c08's ``homoglyph.txt`` gives ``confusables`` 30, ``zero_width.txt``
    gives ``invisible`` 20; case c26's ``repeated30.txt`` gives a ratio of 0.0335 and
    ``degenerate_repetition`` true. A fresh dict each call; the values of the last 1,024
    distinct texts of at most :data:`MEMO_MAX_CHARS` characters are memoised (every
    detector scoring the same texts asks again; the memo holds at most ~64 MB of text).
    """
    if len(text) <= MEMO_MAX_CHARS:
        confusables, invisible, ratio = _hazard_values(text)
    else:
        confusables, invisible, ratio = _hazard_values.__wrapped__(text)
    return {"confusables": confusables, "invisible": invisible,
            "degenerate_repetition": ratio is not None and ratio < REPETITION.min_distinct_ratio,
            "distinct_word_trigram_ratio": ratio}


#: Longer texts are not memoised by :func:`text_hazards` (1,024 x 64K characters bounds the memo).
MEMO_MAX_CHARS = 65_536


@lru_cache(maxsize=1024)
def _hazard_values(text: str) -> tuple[int, int, float | None]:
    confs, invisible = _scan(text)
    return len(confs), invisible, distinct_word_trigram_ratio(text)


def any_hazard(hazards: dict[str, Any] | None) -> bool:
    """True when a ``detail["hazards"]`` dict records at least one hazard."""
    if not hazards:
        return False
    return bool(hazards.get("confusables") or hazards.get("invisible") or hazards.get("degenerate_repetition"))


def _strip_invisible(text: str) -> str:
    if text.isascii() or not any(unicodedata.category(ch) in INVISIBLE_CATEGORIES for ch in set(text)):
        return text
    return "".join(ch for ch in text if unicodedata.category(ch) not in INVISIBLE_CATEGORIES)


def _fold(text: str) -> str:
    confs, _ = _scan(text)
    if not confs:
        return text
    chars = list(text)
    for i, target in confs:
        chars[i] = target
    return "".join(chars)


def canonicalize(text: str, mode: str = "skeleton") -> str:
    """``text`` in canonical form under ``mode`` (see the module docstring).

    ``"none"`` returns ``text`` unchanged; ``"skeleton"`` strips Cf characters, applies
    NFKC and folds non-Latin confusables to their Latin look-alikes, repeated until stable.

    Raises:
        ValueError: unknown ``mode``.
    """
    if mode not in CANONICALIZE_MODES:
        raise ValueError(f"{SETTING} must be one of {CANONICALIZE_MODES}, got {mode!r}")
    if mode == "none" or text.isascii():
        return text
    # Each pass after the first only replaces non-Latin letters by Latin ones, so this ends.
    for _ in range(len(text) + 3):
        new = _fold(unicodedata.normalize("NFKC", _strip_invisible(text)))
        if new == text:
            break
        text = new
    return text


def canonicalize_setting(value: Any) -> str:
    """The mode named by a ``canonicalize`` setting value (``None``/``false`` = ``"none"``).

    Raises:
        ValueError: a value that is not one of :data:`CANONICALIZE_MODES`.
    """
    if value is None or value is False:
        return "none"
    v = str(value).strip().lower()
    if v not in CANONICALIZE_MODES:
        import difflib

        close = difflib.get_close_matches(v, CANONICALIZE_MODES, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"{SETTING} must be one of {', '.join(CANONICALIZE_MODES)}, got {value!r}.{hint}")
    return v
