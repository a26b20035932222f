"""Each text's language at import, with lingua (``lingua-language-detector``, Apache-2.0;
its n-gram models ship in the wheel, so nothing is fetched from a hub).

The identifier is restricted to :data:`LANGUAGES` (ISO 639-1 codes, data): the languages
of the multilingual public corpora veribench imports (M4: ar, bg, de, en, id, it, ru, ur,
zh; SemEval-2024 task 8 subtask A multilingual: those plus others of the same set), the
languages the registry's detectors declare, and the other major languages of the web.
A fixed set keeps the import fast (lingua's cost grows with the number of languages and
with the characters read: about 0.18 ms a text on this set reading :data:`MAX_CHARS`
characters, against about 0.65 ms reading 1,000; CPU, ``benchmarks/README.md``) and the
result reproducible (the set is part of the method, :data:`METHOD`). A text in a language
outside the set is attributed to the closest one in it, with a low confidence.

Confidence is lingua's relative confidence of the top language, in [0, 1] (its values over
the set sum to 1; lingua's ``compute_language_confidence_values``). A text with no letters
(empty, digits only) has no language: ``(None, None)``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from lingua import IsoCode639_1, Language, LanguageDetector, LanguageDetectorBuilder

from veribench.text.hazards import canonicalize

#: The languages the identifier chooses among (ISO 639-1, sorted): data, the one list.
LANGUAGES: tuple[str, ...] = (
    "ar", "bg", "de", "en", "es", "fa", "fr", "hi", "id", "it", "ja", "ko", "nl", "pl", "pt", "ru", "tr", "uk",
    "ur", "vi", "zh")
#: Characters of a text the identifier reads (the first ones, about 30 words): lingua's cost
#: is linear in them; its low-accuracy mode is reliable from about 120 characters (lingua README).
MAX_CHARS = 200
#: Characters read before the skeleton form is taken (invisible characters such as a
#: zero-width space after every letter are removed first, so MAX_CHARS counts visible ones).
READ_CHARS = 4 * MAX_CHARS
#: The method recorded with each language (the library, its mode and the set's size).
METHOD = f"lingua low-accuracy mode over {len(LANGUAGES)} languages (veribench.text.language.LANGUAGES)"


@functools.lru_cache(maxsize=1)
def _detector() -> LanguageDetector:
    langs = [Language.from_iso_code_639_1(getattr(IsoCode639_1, c.upper())) for c in LANGUAGES]
    return LanguageDetectorBuilder.from_languages(*langs).with_low_accuracy_mode().build()


def identify(texts: Sequence[str | None]) -> list[tuple[str | None, float | None]]:
    """Per text, ``(ISO 639-1 code, confidence in [0, 1])``, or ``(None, None)`` for a text
    with no letter (or ``None``: a fingerprint-only document). Same length and order as
    ``texts``; runs lingua over the texts in parallel (its own threads).

    Each text is read in its skeleton form (:func:`veribench.text.hazards.canonicalize` of
    its first :data:`READ_CHARS` characters: invisible characters removed, Cyrillic or
    Greek look-alikes inside Latin-script text folded to Latin), of which the first
    :data:`MAX_CHARS` are identified; so a homoglyph or zero-width-space attack does not
    change a text's language (without it lingua calls homoglyph-attacked English
    Bulgarian, and English with a zero-width space after each letter French); text in
    another script is left as it is."""
    idx = [i for i, t in enumerate(texts) if t and any(ch.isalpha() for ch in t[:READ_CHARS])]
    out: list[tuple[str | None, float | None]] = [(None, None)] * len(texts)
    if not idx:
        return out
    res = _detector().compute_language_confidence_values_in_parallel(
        [canonicalize(str(texts[i])[:READ_CHARS])[:MAX_CHARS] for i in idx])
    for i, vals in zip(idx, res):
        if vals:
            top = vals[0]
            out[i] = (top.language.iso_code_639_1.name.lower(), round(float(top.value), 4))
    return out

