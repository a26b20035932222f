"""RAID's rule-based attacks (no model): homoglyph, number, article_deletion,
insert_paragraphs, upper_lower, whitespace, zero_width_space, alternative_spelling.

Each follows ``liamdugan/raid`` ``generation/adversarial/attackers/<name>.py`` (the
commit in :data:`~veribench.attacks.base.RAID_SOURCE`), with RAID's default
``N`` from ``attack.py``'s ``get_attack``. The count RAID changes is always
``int(count * N)`` of the eligible items, sampled uniformly without replacement (with
replacement for ``whitespace``, as RAID does). Where this module differs from RAID the
class's ``deviations`` say so; ``docs/robustness.md`` lists them all.
"""

from __future__ import annotations

import random
import re
from functools import lru_cache
from typing import Literal

from pydantic import Field

from veribench.attacks.base import (
    Attack,
    AttackError,
    AttackResult,
    Params,
    choice,
    choices,
    n_of,
    nltk_word_spans,
    sample,
    share_params,
)
from veribench.corpus.edits import sentence_spans

# --------------------------------------------------------------------------- homoglyph
#: RAID's homoglyph table (``attackers/homoglyph.py``): Latin letter -> Cyrillic/Greek look-alikes.
RAID_HOMOGLYPHS: dict[str, tuple[str, ...]] = {
    "a": ("\u0430",), "A": ("\u0410", "\u0391"), "B": ("\u0412", "\u0392"), "e": ("\u0435",),
    "E": ("\u0415", "\u0395"), "c": ("\u0441",), "p": ("\u0440",), "K": ("\u041a", "\u039a"),
    "O": ("\u041e", "\u039f"), "P": ("\u0420", "\u03a1"), "M": ("\u041c", "\u039c"), "H": ("\u041d", "\u0397"),
    "T": ("\u0422", "\u03a4"), "X": ("\u0425", "\u03a7"), "C": ("\u0421",), "y": ("\u0443",), "o": ("\u043e",),
    "x": ("\u0445",), "I": ("\u0406", "\u0399"), "i": ("\u0456",), "N": ("\u039d",), "Z": ("\u0396",),
}


@lru_cache(maxsize=1)
def unicode_homoglyphs() -> dict[str, tuple[str, ...]]:
    """ASCII letter -> its single-code-point Cyrillic and Greek confusables, from Unicode's
    ``confusables.txt`` as shipped by the ``confusable-homoglyphs`` package."""
    try:
        from confusable_homoglyphs import categories, confusables
    except ImportError as e:
        raise AttackError("table=confusables needs confusable-homoglyphs: pip install 'veribench[attacks]'") from e
    import string

    out = {}
    for c in string.ascii_letters:
        r = confusables.is_confusable(c, greedy=True, preferred_aliases=[])
        hs = sorted({h["c"] for h in (r[0]["homoglyphs"] if r else []) if len(h["c"]) == 1
                     and categories.alias(h["c"]) in ("CYRILLIC", "GREEK")})
        if hs:
            out[c] = tuple(hs)
    return out


class HomoglyphParams(Params):
    N: float = Field(1.0, ge=0.0, le=1.0, description="share of mappable characters replaced")
    table: Literal["raid", "confusables"] = "raid"


class Homoglyph(Attack):
    """Replace a share ``N`` of the characters that have a look-alike by one of them."""

    name = "homoglyph"
    Settings = HomoglyphParams
    deviations = ("RAID replaces every mappable character whatever its N (its N is ignored); here exactly "
                  "int(N x mappable characters) are replaced, chosen uniformly, so N=1.0 (the default) is RAID.",
                  "table=confusables (not the default) uses Unicode's confusables.txt instead of RAID's table.")

    def setup(self) -> None:
        self.table = RAID_HOMOGLYPHS if self.params.table == "raid" else unicode_homoglyphs()

    def attack_one(self, text: str, rng: random.Random) -> AttackResult:
        elig = [i for i, c in enumerate(text) if c in self.table]
        chosen = sample(rng, len(elig), n_of(self.params.N, len(elig)))
        edits = [(elig[j], elig[j] + 1, choice(rng, self.table[text[elig[j]]])) for j in chosen]
        return AttackResult(edits=edits, stats={"eligible": len(elig), "selected": len(chosen)})


# --------------------------------------------------------------------------- number
NumberParams = share_params("NumberParams", 0.5, "share of numbers altered")


class AlterNumbers(Attack):
    """Re-draw every digit of a share ``N`` of the numbers (``[0-9]+\\.?[0-9]*``)."""

    name = "number"
    Settings = NumberParams
    deviations = ("Numbers are ASCII digit runs (RAID's \\d also matches other scripts' digits, which it "
                  "would overwrite with ASCII ones).",)
    PATTERN = re.compile(r"[0-9]+\.?[0-9]*")

    def attack_one(self, text: str, rng: random.Random) -> AttackResult:
        spans = [m.span() for m in self.PATTERN.finditer(text)]
        chosen = sample(rng, len(spans), n_of(self.params.N, len(spans)))
        edits = []
        for j in chosen:
            s, e = spans[j]
            new = "".join(choice(rng, "0123456789") if c.isdigit() else c for c in text[s:e])
            edits.append((s, e, new))
        return AttackResult(edits=edits, stats={"eligible": len(spans), "selected": len(chosen)})


# --------------------------------------------------------------------------- article_deletion
ArticleParams = share_params("ArticleParams", 0.5, "share of articles deleted")


class ArticleDeletion(Attack):
    """Delete a share ``N`` of the articles ``" a "``, ``" an "``, ``" the "`` (lower case,
    space-delimited, as RAID finds them), keeping one space."""

    name = "article_deletion"
    Settings = ArticleParams
    ARTICLES = (" a ", " an ", " the ")

    def attack_one(self, text: str, rng: random.Random) -> AttackResult:
        found = []
        for art in self.ARTICLES:  # RAID's find_article_indices: restart at index + len - 1
            start = 0
            while start < len(text):
                i = text.find(art, start)
                if i < 0:
                    break
                found.append((i, art))
                start = i + len(art) - 1
        chosen = sample(rng, len(found), n_of(self.params.N, len(found)))
        edits = sorted((found[j][0], found[j][0] + len(found[j][1]) - 1, "") for j in chosen)
        return AttackResult(edits=edits, stats={"eligible": len(found), "selected": len(chosen)})


# --------------------------------------------------------------------------- insert_paragraphs
ParagraphParams = share_params("ParagraphParams", 0.5, "share of sentence boundaries given a blank line")


class InsertParagraphs(Attack):
    """Insert ``"\\n\\n"`` before a share ``N`` of the sentences after the first."""

    name = "insert_paragraphs"
    Settings = ParagraphParams
    deviations = ("Sentences come from pysbd (RAID: NLTK punkt, whose model is not shipped offline).",
                  "RAID re-joins all sentences with single spaces, changing every original separator "
                  "(newlines included); here only the blank lines are inserted, at the start of the chosen "
                  "sentences, and all other text is kept.")

    def attack_one(self, text: str, rng: random.Random) -> AttackResult:

        starts = [s for s, _ in sentence_spans(text)][1:]
        chosen = sample(rng, len(starts), n_of(self.params.N, len(starts)))
        return AttackResult(edits=[(starts[j], starts[j], "\n\n") for j in chosen],
                            stats={"eligible": len(starts), "selected": len(chosen)})


# --------------------------------------------------------------------------- upper_lower
UpperLowerParams = share_params("UpperLowerParams", 0.05, "share of word-initial letters whose case is flipped")


class UpperLowerFlip(Attack):
    """Flip the case of the first letter of a share ``N`` of the word tokens."""

    name = "upper_lower"
    Settings = UpperLowerParams
    deviations = ("Eligible tokens start with a cased letter (RAID: any alphabetic first character, so a "
                  "caseless letter could be 'flipped' to itself and counted).",)

    def attack_one(self, text: str, rng: random.Random) -> AttackResult:
        def flip(c: str) -> str:
            return c.lower() if c.isupper() else c.upper()

        idx = [s for s, e in nltk_word_spans(text) if e > s and text[s].isalpha() and flip(text[s]) != text[s]]
        chosen = sample(rng, len(idx), n_of(self.params.N, len(idx)))
        return AttackResult(edits=[(idx[j], idx[j] + 1, flip(text[idx[j]])) for j in chosen],
                            stats={"eligible": len(idx), "selected": len(chosen)})


# --------------------------------------------------------------------------- whitespace
WhitespaceParams = share_params("WhitespaceParams", 0.2, "extra spaces per space-separated piece")


class WhiteSpace(Attack):
    """Insert ``int(N x pieces)`` extra spaces after space-separated pieces drawn *with*
    replacement (a piece can get several), as RAID does."""

    name = "whitespace"
    Settings = WhitespaceParams

    def attack_one(self, text: str, rng: random.Random) -> AttackResult:
        pieces = text.split(" ")
        ends, pos = [], 0
        for p in pieces:
            pos += len(p)
            ends.append(pos)
            pos += 1
        k = n_of(self.params.N, len(pieces))
        counts: dict[int, int] = {}
        for i in choices(rng, len(pieces), k):
            counts[i] = counts.get(i, 0) + 1
        return AttackResult(edits=[(ends[i], ends[i], " " * c) for i, c in sorted(counts.items())],
                            stats={"eligible": len(pieces), "selected": k, "positions": len(counts)})


# --------------------------------------------------------------------------- zero_width_space
ZeroWidthParams = share_params("ZeroWidthParams", 1.0, "share of characters followed by U+200B")


class ZeroWidthSpace(Attack):
    """Insert U+200B ZERO WIDTH SPACE after a share ``N`` of the characters."""

    name = "zero_width_space"
    Settings = ZeroWidthParams
    ZWSP = "\u200b"

    def attack_one(self, text: str, rng: random.Random) -> AttackResult:
        chosen = sample(rng, len(text), n_of(self.params.N, len(text)))
        return AttackResult(edits=[(i + 1, i + 1, self.ZWSP) for i in chosen],
                            stats={"eligible": len(text), "selected": len(chosen)})


# --------------------------------------------------------------------------- alternative_spelling
@lru_cache(maxsize=1)
def us_to_uk() -> dict[str, str]:
    """American -> British spellings from the ``breame`` package (Apache-2.0)."""
    try:
        from breame.spelling import AMERICAN_ENGLISH_SPELLINGS
    except ImportError as e:
        raise AttackError("alternative_spelling needs breame: pip install 'veribench[attacks]'") from e
    return {k: v for k, v in AMERICAN_ENGLISH_SPELLINGS.items() if k and v and k != v}


SpellingParams = share_params("SpellingParams", 1.0, "share of American spellings made British")


class AlternativeSpelling(Attack):
    """Swap a share ``N`` of the American spellings for British ones (US -> UK)."""

    name = "alternative_spelling"
    Settings = SpellingParams
    WORD = re.compile(r"\w+")
    deviations = ("Word list: the breame package's AMERICAN_ENGLISH_SPELLINGS (RAID downloads "
                  "hyperreality/American-British-English-Translator's american_spellings.json at run time).",
                  "Whole words only, and also Capitalised and UPPER-CASE forms (case kept); RAID matches "
                  "lower-case keys anywhere, even inside longer words.")

    def setup(self) -> None:
        self.table = us_to_uk()
        if not all(w.isalpha() for w in self.table):  # whole \w+ tokens are then exactly whole-word matches
            raise AttackError("alternative_spelling: the word list holds non-alphabetic keys")

    def _target(self, word: str) -> str | None:
        low = word.lower()
        uk = self.table.get(low)
        if uk is None:
            return None
        if word == low:
            return uk
        if word == low.capitalize():
            return uk.capitalize()
        if word == low.upper():
            return uk.upper()
        return None  # mixed case: not a spelling variant we can map faithfully

    def attack_one(self, text: str, rng: random.Random) -> AttackResult:
        found = [(m.start(), m.end(), t) for m in self.WORD.finditer(text)
                 if (t := self._target(m.group())) is not None]
        chosen = sample(rng, len(found), n_of(self.params.N, len(found)))
        return AttackResult(edits=[found[j] for j in chosen], stats={"eligible": len(found), "selected": len(chosen)})
