"""Edits over a source text, edit measurement, and the C2 arm's edit budget.

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

import json
import re
import threading
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import InputError

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
    changed_word_share: Optional[float] = Field(description="words_changed / draft_words; None without draft words")
    changed_word_share_reason: Optional[str] = None
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


# --------------------------------------------------------------------------- import of edited drafts
class EditedRecord(BaseModel):
    """One record of an edited-drafts file (``veribench import edited``; see ``docs/robustness.md``)."""

    model_config = ConfigDict(extra="forbid")
    draft_id: str = Field(min_length=1)
    text: str
    id: Optional[str] = None
    draft_sha256: Optional[str] = None
    editor: Optional[str] = None
    edited_at: Optional[str] = None
    attestation: Optional[str] = None
    method: Optional[str] = None
    tags: dict[str, str] = Field(default_factory=dict)

    @field_validator("draft_id", "id", mode="before")
    @classmethod
    def _str_id(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @field_validator("text")
    @classmethod
    def _text(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("text is empty or whitespace only")
        return v

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, v: Any) -> Any:
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except ValueError:
                raise ValueError("tags must be a JSON object") from None
        if isinstance(v, dict):
            return {str(k): str(x) for k, x in v.items() if x is not None}
        return v


def _edited_report_cls():
    from .report import ImportReport

    @dataclass
    class EditImportReport(ImportReport):
        """An :class:`ImportReport` plus one entry per edited record: its measured edit and outcome."""

        edits: list[dict[str, Any]] = field(default_factory=list)
        budget: dict[str, Any] = field(default_factory=dict)

        def print(self, console: Any = None, *, max_rows: int = 8) -> None:  # noqa: A003
            from rich.console import Console
            from rich.markup import escape

            con = console or Console()
            super().print(con, max_rows=max_rows)
            b = self.budget
            con.print(f"edit budget of arm {b.get('arm')}: at most {100 * b['max_changed_word_share']:g}% of words "
                      f"changed, {b['sentences_added']} sentence(s) added, {b['sentences_removed']} removed; "
                      f"outside: {b['on_violation']}")
            for e in self.edits:
                m = EditMeasure.model_validate(e["measure"])
                con.print(f"  {escape(e['id'])} (draft {escape(e['draft_id'])}): {m.summary()} -> {e['outcome']}",
                          soft_wrap=True)
                for v in e["violations"]:
                    con.print(f"      outside the budget: {escape(v)}", soft_wrap=True)

    return EditImportReport


def import_edited(ws: Any, path: str | Path, *, protocol: Any = None,
                  arm: str = "C2", corpus: str | None = None) -> Any:
    """Import human-edited versions of drafts already in ``ws`` as arm ``arm`` (default C2).

    Each record (JSONL or CSV; :class:`EditedRecord`) names its draft by ``draft_id``.
    Every record is validated first (any bad record: ``InputError`` naming file, record
    and field, nothing stored). Each edit is measured (:func:`measure_edit`) and checked
    against the arm's budget (:func:`edit_budget` of the protocol, given as a path or a
    parsed :class:`~veribench.protocol.model.Protocol`; defaults without one): inside, it is stored in ``arm``; outside, it is refused or moved to the arm
    the protocol names. The derived document keeps the draft's label, kind, subgroup,
    group_key and tags, adds ``tags.derivation = "edit"``, and records
    ``provenance.source_id``, ``provenance.edits`` (spans over the draft) and
    ``provenance.derivation`` (measure, budget, outcome, editor).

    Returns:
        the stored :class:`ImportReport` (kind ``edited``) with ``edits``: one entry per
        record ``{id, draft_id, outcome, measure, violations}`` (outcome ``imported``,
        ``refused`` or ``moved:ARM``).
    """
    from ..hashing import text_sha256
    from .document import Document
    from .importers._io import iter_csv, iter_jsonl
    from .importers._store import validation_error

    p = Path(path)
    if not p.is_file():
        raise InputError("file not found", file=str(p))
    if isinstance(protocol, (str, Path)):
        from ..protocol.model import load_protocol

        protocol = load_protocol(protocol)
    budget = edit_budget(protocol, arm)
    suf = p.suffix.lower()
    if suf in (".jsonl", ".ndjson", ".json"):
        rows = iter_jsonl(p)
    elif suf == ".csv":
        rows = iter_csv(p)
    else:
        raise InputError(f"unknown file type {suf!r}; use .jsonl or .csv", file=str(p))
    records: list[tuple[str, EditedRecord]] = []
    seen: dict[str, str] = {}
    for rec, row in rows:
        try:
            r = EditedRecord.model_validate(row)
        except ValidationError as e:
            raise validation_error(e, file=str(p), record=rec) from None
        rid = r.id or f"{r.draft_id}~edit"
        if rid in seen:
            raise InputError(f"duplicate id {rid!r} (first at {seen[rid]})", file=str(p), record=rec, field="id")
        seen[rid] = rec
        records.append((rec, r))
    if not records:
        raise InputError("no records found", file=str(p))
    drafts = load_documents(ws, [r.draft_id for _, r in records])
    Report = _edited_report_cls()
    per_corpus: dict[str | None, list[Any]] = {}
    entries = []
    for rec, r in records:
        d = drafts.get(r.draft_id)
        if d is None:
            raise InputError(f"draft {r.draft_id!r} is not in the workspace (import the drafts first)",
                             file=str(p), record=rec, field="draft_id")
        if d["text"] is None:
            raise InputError(f"draft {r.draft_id!r} is stored without its text; an edit cannot be measured",
                             file=str(p), record=rec, field="draft_id")
        if r.draft_sha256 and r.draft_sha256.lower() != d["text_sha256"]:
            raise InputError(f"draft_sha256 does not match the stored draft {r.draft_id!r} "
                             f"(sha256 {d['text_sha256']})", file=str(p), record=rec, field="draft_sha256")
        m = measure_edit(d["text"], r.text)
        why = budget.violations(m)
        target = arm
        outcome = "imported"
        if why:
            if budget.move_to is None:
                outcome = "refused"
            else:
                target, outcome = budget.move_to, f"moved:{budget.move_to}"
        rid = r.id or f"{r.draft_id}~edit"
        entries.append({"id": rid, "draft_id": r.draft_id, "record": rec, "outcome": outcome,
                        "measure": m.model_dump(), "violations": why})
        if outcome == "refused":
            continue
        tags = {**d["tags"], **r.tags, "derivation": "edit"}
        if why:
            tags["edit_budget"] = "over"
        gen = dict(d["generation"]) if d["generation"] else None
        if gen is not None:
            gen["post_editing"] = f"human edit ({arm}): {m.summary()}"
        prov = {"source_id": r.draft_id, "edits": [list(e) for e in diff_edits(d["text"], r.text)],
                "method": r.method or "human edit", "attestation": r.attestation,
                "derivation": {"kind": "edit", "editor": r.editor, "edited_at": r.edited_at,
                               "measure": m.model_dump(), "budget": budget.model_dump(), "outcome": outcome,
                               "violations": why, "draft_sha256": d["text_sha256"]}}
        for k in ("licence", "citation"):
            if d["provenance"].get(k) is not None:
                prov.setdefault(k, d["provenance"][k])
        try:
            doc = Document.model_validate({
                "id": rid, "text": r.text, "label": d["label"], "arm": target, "kind": d["kind"],
                "subgroup": d["subgroup"], "tags": tags, "group_key": d["group_key"],
                "provenance": {k: v for k, v in prov.items() if v is not None}, "generation": gen})
        except ValidationError as e:
            raise validation_error(e, file=str(p), record=rec) from None
        if apply_edits(d["text"], prov["edits"]) != r.text or doc.text_sha256 != text_sha256(r.text):
            raise RuntimeError(f"edit spans of {rid} do not reproduce its text (a veribench bug; nothing stored)")
        per_corpus.setdefault(corpus or d["corpus"], []).append(doc)
    report = Report(kind="edited", source=str(p), corpus=corpus, edits=entries,
                    budget={"arm": arm, **budget.model_dump()})
    entry = report.set_entry(p.name)
    entry["records"] = len(records)
    entry["documents"] = sum(len(v) for v in per_corpus.values())
    for docs in per_corpus.values():
        for doc in docs:
            entry["labels"][doc.label] = entry["labels"].get(doc.label, 0) + 1
    refused = [e["id"] for e in entries if e["outcome"] == "refused"]
    moved = [e["id"] for e in entries if e["outcome"].startswith("moved:")]
    if refused:
        report.notes.append(f"{len(refused)} edited draft(s) outside the {arm} budget refused: {', '.join(refused)}")
    if moved:
        report.notes.append(f"{len(moved)} edited draft(s) outside the {arm} budget moved to arm {budget.move_to}")
    return store_derived(ws, report, [(doc, corp) for corp, docs in per_corpus.items() for doc in docs])


def store_derived(ws: Any, report: Any, items: Sequence[tuple[Any, str | None]]) -> Any:
    """Store derived documents, each in its own corpus, and the report, in one transaction.

    Args:
        items: ``(Document, corpus)`` pairs; a derived document keeps its source's corpus.

    Returns:
        ``report`` as stored by :func:`veribench.corpus.importers._store.store_import`
        (``documents`` newly stored, ``already_present`` skipped as identical).
    """
    from .importers._store import store_import

    # each row is written with its corpus, so the import's logged fingerprints cover exactly
    # the stored rows (an UPDATE after the log would break `veribench log verify`)
    return store_import(ws, report, [d for d, _ in items], corpora={d.id: c for d, c in items})


def load_documents(ws: Any, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Stored documents by id: ``{doc_id: {text, text_sha256, label, arm, ..., tags, provenance, generation}}``."""
    rows = ws.query(
        "SELECT doc_id, corpus, text, text_sha256, label, arm, kind, subgroup, tags, group_key, provenance, "
        "generation FROM documents WHERE doc_id IN (SELECT unnest(?::VARCHAR[]))", [list(dict.fromkeys(ids))])
    out = {}
    for did, corp, text, sha, label, arm, kind, sub, tags, gk, prov, gen in rows:
        out[did] = {"doc_id": did, "corpus": corp, "text": text, "text_sha256": sha, "label": label, "arm": arm,
                    "kind": kind, "subgroup": sub, "tags": json.loads(tags) if tags else {}, "group_key": gk,
                    "provenance": json.loads(prov) if prov else {}, "generation": json.loads(gen) if gen else None}
    return out


# --------------------------------------------------------------------------- export
def document_records(ws: Any, *, corpus: str | None = None) -> Iterable[dict[str, Any]]:
    """Every stored document (ordered by id) as an import-schema object plus
    ``source_id``, ``attack`` (``{name, version, params, seed}``) and ``edits``
    (``[[start, end, replacement], ...]``), ``None`` for documents that are not derived.

    The three are taken out of ``provenance`` (where they are stored), so re-importing
    the file (``veribench import jsonl``) gives the same documents. A fingerprint-only
    document (:meth:`Workspace.fingerprint_only_ids`) is written with ``text`` and
    ``edits`` null: its SHA-256 and metadata only.
    """
    where, params = "", []
    if corpus is not None:
        where, params = "WHERE corpus = ?", [corpus]
    ids = [r[0] for r in ws.query(f"SELECT doc_id FROM documents {where} ORDER BY doc_id", params)]
    hidden = ws.fingerprint_only_ids()  # the one publication rule (CONTRACTS.md, fingerprint-only)
    for b in range(0, len(ids), 500):
        chunk = ids[b:b + 500]
        docs = load_documents(ws, chunk)
        for i in chunk:
            d = docs[i]
            prov = dict(d["provenance"])
            derived = {k: prov.pop(k, None) for k in ("source_id", "attack", "edits")}
            if i in hidden:  # neither the text nor edit spans that could carry its words
                derived["edits"] = None
            yield {"id": i, "text": None if i in hidden else d["text"], "text_sha256": d["text_sha256"], "label": d["label"], "arm": d["arm"],
                   "kind": d["kind"], "subgroup": d["subgroup"], "tags": d["tags"], "group_key": d["group_key"],
                   "provenance": prov, "generation": d["generation"], **derived}


def export_documents(ws: Any, out: str | Path, *, corpus: str | None = None) -> int:
    """Write :func:`document_records` to ``out`` as JSONL (UTF-8); returns the count.

    Raises:
        InputError: ``out`` does not end in ``.jsonl``.
    """
    p = Path(out)
    if p.suffix.lower() not in (".jsonl", ".ndjson"):
        raise InputError("export documents writes JSONL: use a .jsonl file", file=str(p))
    p.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    tmp = p.with_name(p.name + ".part")
    with tmp.open("w", encoding="utf-8") as f:
        for rec in document_records(ws, corpus=corpus):
            f.write(json.dumps(rec, ensure_ascii=False, allow_nan=False) + "\n")
            n += 1
    tmp.replace(p)
    return n
