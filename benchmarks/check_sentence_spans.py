"""Check: ``sentence_spans`` against pysbd on the whole text, for every real text of the
repository (every distinct string of 20+ characters with a space in the JSON, JSON Lines,
CSV, text and Markdown files of ``tests/data`` and the package's demo data).

Not a test (pysbd on the whole of a long text is what is slow: ~5 minutes for the 13,551
strings, 18.6 MB, on the project's machine). Prints the number of texts, how many differ,
and each differing text's kind (``html`` single-line detector reports, ``md`` tables,
``prose``) with the first differing span. Result at 43ff9d9: 13,551 texts; every text of
at most 3,000 characters and every prose text equal; 234 differ (233 single-line HTML
detector reports, 1 Markdown table): the rule in ``veribench.corpus.edits.sentence_spans``.

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/check_sentence_spans.py``
"""

from __future__ import annotations

import collections
import csv
import gzip
import json
import sys
from pathlib import Path

from veribench.corpus import edits

ROOT = Path(__file__).resolve().parents[1]
ROOTS = [ROOT / "tests" / "data", ROOT / "src" / "veribench" / "data" / "demo"]


def _walk(v: object, out: set[str]) -> None:
    if isinstance(v, str):
        if len(v) >= 20 and " " in v:
            out.add(v)
    elif isinstance(v, dict):
        for x in v.values():
            _walk(x, out)
    elif isinstance(v, list):
        for x in v:
            _walk(x, out)


def real_texts() -> list[str]:
    csv.field_size_limit(10**9)
    out: set[str] = set()
    for root in ROOTS:
        for p in sorted(root.rglob("*")):
            if not p.is_file():
                continue
            n = p.name
            op = gzip.open if n.endswith(".gz") else open
            try:
                if ".jsonl" in n:
                    with op(p, "rt", encoding="utf-8") as f:
                        for line in f:
                            try:
                                _walk(json.loads(line), out)
                            except ValueError:
                                pass
                elif ".json" in n:
                    with op(p, "rt", encoding="utf-8") as f:
                        _walk(json.load(f), out)
                elif ".csv" in n:
                    with op(p, "rt", encoding="utf-8", newline="") as f:
                        for row in csv.reader(f):
                            _walk(row, out)
                elif n.endswith((".txt", ".md")):
                    _walk(p.read_text(encoding="utf-8"), out)
            except (OSError, ValueError, csv.Error) as e:
                print(f"skipped {p}: {e}", file=sys.stderr)
    return sorted(out)


def pysbd_whole(text: str) -> tuple[tuple[int, int], ...]:
    """pysbd on the whole text, spans as ``sentence_spans`` gave them before windowing."""
    import pysbd

    out, pos = [], 0
    for sp in pysbd.Segmenter(language="en", clean=False, char_span=True).segment(text):
        s, e = int(sp.start), int(sp.end)
        if not (0 <= s <= e <= len(text)) or text[s:e] != sp.sent or s < pos:
            piece = sp.sent.strip()
            s = text.find(piece, pos) if piece else -1
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


def main() -> None:
    texts = real_texts()
    kinds: collections.Counter[tuple[str, bool]] = collections.Counter()
    for t in texts:
        got, want = edits._sentence_spans.__wrapped__(t), pysbd_whole(t)
        kind = "html" if ("<span" in t or "<br" in t) else "md" if ("|" in t or "`" in t) else "prose"
        kinds[kind, got == want] += 1
        if got != want:
            k = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            print(json.dumps({"kind": kind, "chars": len(t), "lines": t.count("\n") + 1,
                              "ours": got[k:k + 1], "pysbd": want[k:k + 1]}), flush=True)
    print(json.dumps({"texts": len(texts), "chars": sum(map(len, texts)),
                      "equal": {k: n for (k, ok), n in kinds.items() if ok},
                      "differ": {k: n for (k, ok), n in kinds.items() if not ok}}))


if __name__ == "__main__":
    main()
