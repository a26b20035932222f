"""Placeholder selection: a Python re-implementation of HumanizerBench's ``select-placeholders.js``.

Source: the frozen ``select-placeholders.js`` shipped in every HumanizerBench cycle
bundle (sha256 ``f8bae546...d80f`` for June and July 2026; see
:data:`veribench.cycles.frozen.SELECT_PLACEHOLDERS_JS`). The algorithm:

- ``djb2(s)``: ``h = 5381; for each UTF-16 code unit c: h = (h * 33) ^ c`` where ``^``
  truncates to a 32-bit signed integer (ToInt32); the result is ``h >>> 0``
  (unsigned 32-bit).
- tokens of a template: the distinct matches of ``/\\[([A-Z][A-Z_]*)\\]/g`` in order of
  first appearance;
- for each token with a non-empty bank: ``bank[djb2(nonce + "|" + slug + "|" + token) % bank.length]``;
- substitution replaces every ``[TOKEN]`` that has a non-empty value and leaves the
  others (recorded as missing).

A bundle's selection file is data: :func:`recognise_selection` identifies it only when
it equals the known frozen text byte for byte; anything else is "cannot verify:
unknown selection algorithm" and is never executed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from veribench.bundles.jscompat import utf16_units
from veribench.cycles.frozen import KNOWN_SELECTION_FILES, KNOWN_SELECTION_TEXTS
from veribench.hashing import sha256_bytes

PLACEHOLDER_RE = re.compile(r"\[([A-Z][A-Z_]*)\]")


class UnknownAlgorithm(Exception):
    """A frozen algorithm file veribench does not recognise (it is never executed)."""


def djb2(s: str) -> int:
    """HumanizerBench's djb2 variant over UTF-16 code units; unsigned 32-bit result."""
    h = 5381
    for c in utf16_units(s):
        # (h * 33) ^ c under ToInt32 == the same bits modulo 2**32.
        h = ((h * 33) ^ c) & 0xFFFFFFFF
    return h


def extract_placeholders(text: str) -> list[str]:
    """Distinct ``[TOKEN]`` names in ``text``, in order of first appearance."""
    return list(dict.fromkeys(m.group(1) for m in PLACEHOLDER_RE.finditer(text)))


def select_placeholders_for_cycle(nonce: str, templates: Sequence[Mapping[str, Any]],
                                  banks: Mapping[str, Sequence[str]]) -> dict[str, dict[str, str]]:
    """``selectPlaceholdersForCycle(nonce, prompts, banks)``: ``{slug: {TOKEN: value}}``.

    Args:
        nonce: the revealed nonce as text (``nonce.txt`` trimmed).
        templates: records with ``slug`` and ``prompt_text``.
        banks: ``{TOKEN: [value, ...]}``.
    """
    result: dict[str, dict[str, str]] = {}
    for p in templates:
        tokens = extract_placeholders(p["prompt_text"])
        if not tokens:
            continue
        per: dict[str, str] = {}
        for token in tokens:
            bank = banks.get(token)
            if not bank:
                continue
            per[token] = bank[djb2(f"{nonce}|{p['slug']}|{token}") % len(bank)]
        if per:
            result[p["slug"]] = per
    return result


def substitute_placeholders(text: str, values: Mapping[str, Any]) -> tuple[str, list[str]]:
    """``substitutePlaceholders(text, values)``: (resolved text, sorted missing tokens)."""
    missing: set[str] = set()

    def rep(m: re.Match[str]) -> str:
        key = m.group(1)
        v = values.get(key)
        if v is None or v == "":
            missing.add(key)
            return f"[{key}]"
        return str(v)

    out = PLACEHOLDER_RE.sub(rep, text)
    # JS sorts by UTF-16 code units; tokens are ASCII so Python's order agrees.
    return out, sorted(missing)


def resolve_prompts(nonce: str, templates: Sequence[Mapping[str, Any]],
                    banks: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    """The records of ``prompts.json``: one per template, in template order.

    Each is ``{slug, category, template, resolved, placeholders}`` (the shape of the
    published HumanizerBench ``prompts.json``).
    """
    sel = select_placeholders_for_cycle(nonce, templates, banks)
    out = []
    for t in templates:
        values = sel.get(t["slug"], {})
        resolved, _ = substitute_placeholders(t["prompt_text"], values)
        out.append({"slug": t["slug"], "category": t["category"], "template": t["prompt_text"],
                    "resolved": resolved, "placeholders": dict(values)})
    return out


# -- recognising a bundle's frozen selection file -----------------------------------


@dataclass(frozen=True)
class SelectionAlgorithm:
    """An identified selection algorithm: its family name and how it was recognised."""

    family: str
    recognised_by: str  # "exact text"
    file_sha256: str


def recognise_selection(data: bytes) -> SelectionAlgorithm:
    """Identify a bundle's ``select-placeholders.js`` (raw bytes).

    Only a file equal, byte for byte, to a known frozen text is recognised: a changed
    comment, whitespace or line ending is a different file, because any byte may be code
    to the JavaScript engine (``/**/ import("node:fs")`` on a comment line runs).

    Raises:
        UnknownAlgorithm: not a known text ("cannot verify: unknown selection algorithm").
    """

    h = sha256_bytes(data)
    for family, text in KNOWN_SELECTION_TEXTS.items():
        if data == text.encode("utf-8"):
            return SelectionAlgorithm(family, "exact text", h)
    known = KNOWN_SELECTION_FILES.get(h)
    if known:  # pragma: no cover - every known hash has its text above
        return SelectionAlgorithm(known, "exact text", h)
    raise UnknownAlgorithm(f"cannot verify: unknown selection algorithm (select-placeholders.js sha256 {h}; "
                           "only a known frozen text, byte for byte, is accepted, and it is never executed)")
