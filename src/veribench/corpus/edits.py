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

import re
import threading
from collections.abc import Iterable, Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

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
    parts: list[str] = []
    pos = 0
    for s, t, r in check_edits(edits, len(source)):
        parts.append(source[pos:s])
        parts.append(r)
        pos = t
    parts.append(source[pos:])
    return "".join(parts)


def drop_noops(source: str, edits: Iterable[Edit]) -> list[Edit]:
    """``edits`` without those whose replacement equals the text they replace."""
    return [(s, t, r) for s, t, r in edits if source[s:t] != r]


def diff_edits(source: str, target: str) -> list[Edit]:
    """A valid edit list turning ``source`` into ``target`` (optimal token-level alignment).

    Both texts are cut into words, whitespace runs and single other characters; the
    Levenshtein alignment of the two token sequences (``rapidfuzz``) gives the spans,
    and adjacent changes are merged into one edit. ``apply_edits(source,
    diff_edits(source, target)) == target`` for any two strings.
    """
    if source == target:
        return []
    from rapidfuzz.distance import Levenshtein

    a = _DIFF_TOKEN_RE.findall(source)
    b = _DIFF_TOKEN_RE.findall(target)
    ao = _offsets(a)
    bo = _offsets(b)
    edits: list[Edit] = []
    for op in Levenshtein.opcodes(a, b):
        if op.tag == "equal":
            continue
        s, t = ao[op.src_start], ao[op.src_end]
        rep = target[bo[op.dest_start]:bo[op.dest_end]]
        if edits and edits[-1][1] == s:
            ps, _, pr = edits[-1]
            edits[-1] = (ps, t, pr + rep)
        else:
            edits.append((s, t, rep))
    return check_edits(drop_noops(source, edits), len(source))


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
    return seg


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text`` (pysbd, English rules), trailing
    whitespace excluded, in order and non-overlapping; whitespace-only pieces dropped.
    Memoised per text (pysbd takes ~10 ms a paragraph)."""
    return list(_sentence_spans(text))


@lru_cache(maxsize=4096)
def _sentence_spans(text: str) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    pos = 0
    for sp in _segmenter().segment(text):
        s, e = int(sp.start), int(sp.end)
        if not (0 <= s <= e <= len(text)) or text[s:e] != sp.sent or s < pos:
            # pysbd locates sentences by searching; fall back to our own search from pos.
            piece = sp.sent.strip()
            if not piece:
                continue
            s = text.find(piece, pos)
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
    from rapidfuzz.distance import Levenshtein

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
