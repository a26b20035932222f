"""Where input/output pairs come from: a HumanizerBench-style cycle bundle, or the workspace.

Cycle bundle: a folder holding ``tests.json`` (a list of humanizer runs, each with ``id``,
``sample_id``, ``humanizer_slug``, ``input_text``, ``output_text``, ``status``) and
``samples.json`` (the inputs: ``id``, ``input_text``). A test's input is its own
``input_text`` when present, else its sample's. Runs whose status is not ``complete`` or
whose output is empty are skipped and counted (they have nothing to read).

Workspace: humanized outputs stored as derived documents (``tags.derivation`` =
``humanize``, ``tags.attack`` = the tool, ``provenance.source_id`` = the document the tool
was given), or tagged ``humanizer`` + ``input_doc_id``; the pair is (that document's text,
this one's text).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from veribench.corpus.importers._io import load_json
from veribench.errors import InputError
from veribench.rubric.store import Pair
from veribench.store.workspace import Workspace


def _read_json_list(path: Path) -> list[Any]:
    if not path.is_file():
        raise InputError("file not found (a cycle bundle needs samples.json and tests.json)", file=str(path))

    data = load_json(path)
    if not isinstance(data, list):
        raise InputError("expected a JSON list of records", file=str(path))
    return data


def _key(s: str) -> str:
    return hashlib.sha256(s.encode()).hexdigest()


def _limit(pairs: list[Pair], limit: int | None) -> list[Pair]:
    """All pairs in a fixed pseudo-random order (sha256 of the key); with ``limit``, the
    first ``limit`` of a round-robin over the tools (tools in sha256 order of their name,
    each tool's pairs in sha256 order of the key), so a limited load takes
    ``ceil(limit / tools)`` or ``floor(...)`` pairs of every tool that has them, and the
    same pairs on every rerun. A tool is left out only when ``limit`` is below the number
    of tools (:func:`tool_counts` tells which)."""
    pairs = sorted(pairs, key=lambda p: _key(p.pair_key))
    if limit is None:
        return pairs
    by_tool: dict[str, list[Pair]] = defaultdict(list)
    for p in pairs:
        by_tool[p.tool].append(p)
    queues = [by_tool[t] for t in sorted(by_tool, key=_key)]
    out = [q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)]
    return out[: max(0, limit)]


def tool_counts(found: list[Pair], selected: list[Pair]) -> dict[str, dict[str, int]]:
    """Per tool (sorted by name): ``{"found": pairs in the source, "selected": pairs loaded}``."""
    out = {t: {"found": 0, "selected": 0} for t in sorted({p.tool for p in found})}
    for p in found:
        out[p.tool]["found"] += 1
    for p in selected:
        out[p.tool]["selected"] += 1
    return out


def pairs_from_cycle(cycle_dir: str | Path, limit: int | None = None) -> tuple[list[Pair], dict[str, Any]]:
    """Read input/output pairs from a cycle bundle folder.

    Returns (pairs, report) where report counts ``tests``, ``pairs`` and ``skipped`` (with reasons).

    Raises:
        InputError: missing file, bad JSON, or a record without a needed field (names file,
            record and field).
    """
    d = Path(cycle_dir)
    if not d.is_dir():
        raise InputError("cycle bundle folder not found", file=str(d))
    samples = _read_json_list(d / "samples.json")
    tests = _read_json_list(d / "tests.json")
    sample_text: dict[str, str] = {}
    for i, s in enumerate(samples):
        if not isinstance(s, dict) or "id" not in s:
            raise InputError("sample has no id", file=str(d / "samples.json"), record=i, field="id")
        if isinstance(s.get("input_text"), str):
            sample_text[str(s["id"])] = s["input_text"]
    cycle_name = d.name
    try:
        meta = json.loads((d / "cycle.json").read_text(encoding="utf-8"))
        cycle_name = str(meta.get("cycle") or cycle_name)
    except (OSError, json.JSONDecodeError, AttributeError):
        pass
    pairs: list[Pair] = []
    skipped: dict[str, int] = {}
    f = str(d / "tests.json")
    for i, t in enumerate(tests):
        if not isinstance(t, dict):
            raise InputError("test record is not an object", file=f, record=i)
        rid = t.get("id", i)
        for field in ("id", "humanizer_slug"):
            if not t.get(field):
                raise InputError("missing", file=f, record=rid, field=field)
        if t.get("status", "complete") != "complete":
            skipped[f"status {t.get('status')}"] = skipped.get(f"status {t.get('status')}", 0) + 1
            continue
        out = t.get("output_text")
        if not isinstance(out, str) or not out.strip():
            skipped["empty output"] = skipped.get("empty output", 0) + 1
            continue
        inp = t.get("input_text") if isinstance(t.get("input_text"), str) and t["input_text"].strip() else None
        if inp is None:
            inp = sample_text.get(str(t.get("sample_id")))
        if not inp or not inp.strip():
            raise InputError("no input text (neither in the test nor in its sample)", file=f, record=rid,
                             field="input_text")
        pairs.append(Pair(pair_key=f"cycle:{cycle_name}:{t['id']}", tool=str(t["humanizer_slug"]),
                          input_text=inp, output_text=out, source=f"cycle:{cycle_name}", pair_id=str(t["id"]),
                          sample_id=str(t.get("sample_id")) if t.get("sample_id") is not None else None))
    found, pairs = pairs, _limit(pairs, limit)
    return pairs, {"tests": len(tests), "pairs": len(found), "selected": len(pairs), "skipped": skipped,
                   "tools": tool_counts(found, pairs)}


def pairs_from_workspace(ws: Workspace, limit: int | None = None) -> tuple[list[Pair], dict[str, Any]]:
    """Pairs from workspace documents that are humanized outputs (see module doc).

    Two markings are read: derived documents (CONTRACTS.md: ``tags.derivation`` =
    ``humanize``, ``tags.attack`` = the humanizer, ``provenance.source_id`` = the input
    document; what ``veribench import humanized`` and ``import cycle`` write), and the older
    ``tags.humanizer`` + ``tags.input_doc_id``.

    Raises:
        InputError: a tagged document whose input document is missing or has no text.
    """
    rows = ws.query(
        "WITH o AS (SELECT doc_id, text, "
        "  CASE WHEN json_extract_string(tags, '$.derivation') = 'humanize' THEN json_extract_string(tags, '$.attack') "
        "       ELSE json_extract_string(tags, '$.humanizer') END AS tool, "
        "  CASE WHEN json_extract_string(tags, '$.derivation') = 'humanize' "
        "       THEN json_extract_string(provenance, '$.source_id') "
        "       ELSE json_extract_string(tags, '$.input_doc_id') END AS input_id, "
        "  json_extract_string(tags, '$.derivation') = 'humanize' AS derived "
        "  FROM documents WHERE json_extract_string(tags, '$.derivation') = 'humanize' "
        "     OR json_extract_string(tags, '$.humanizer') IS NOT NULL) "
        "SELECT o.doc_id, o.text, o.tool, o.input_id, s.text, o.derived FROM o "
        "LEFT JOIN documents s ON s.doc_id = o.input_id ORDER BY o.doc_id")
    pairs = []
    for doc_id, text, tool, input_id, input_text, derived in rows:
        if not input_id:
            raise InputError("a humanized output without its input document", file="workspace documents",
                             record=doc_id, field="provenance.source_id" if derived else "tags.input_doc_id")
        if not tool:
            raise InputError("a humanized output without its humanizer", file="workspace documents", record=doc_id,
                             field="tags.attack")
        if not input_text or not text:
            raise InputError(f"input document {input_id!r} or this output has no stored text",
                             file="workspace documents", record=doc_id, field="text")
        pairs.append(Pair(pair_key=f"workspace:{doc_id}", tool=tool, input_text=input_text, output_text=text,
                          source="workspace", pair_id=doc_id, sample_id=input_id))
    found, pairs = pairs, _limit(pairs, limit)
    return pairs, {"documents": len(found), "pairs": len(found), "selected": len(pairs), "skipped": {},
                   "tools": tool_counts(found, pairs)}
