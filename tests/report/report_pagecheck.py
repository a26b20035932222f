"""Independent checker for report pages: every number on a page against the JSON it came from.

Parses a page with the standard library's ``html.parser`` (no veribench code): each
element carrying ``data-v`` (a JSON pointer into ``data/<page>.json``) and ``data-fmt``
must show the value found there, to the precision shown; and no digit may appear in
the page's text outside such an element, except in headings, table headers, captions,
navigation, the footer and template prose marked ``data-prose`` (static wording such as
"95% intervals").
"""

from __future__ import annotations

import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

NUM = re.compile(r"[+\u2212-]?\d+(?:\.\d+)?")
ALLOWED = {"th", "h1", "h2", "h3", "h4", "h5", "h6", "caption", "figcaption", "nav", "footer", "title", "style"}
VOID = {"meta", "link", "img", "br", "hr", "input", "source", "col", "wbr"}


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, dict[str, str | None]]] = []
        self.cells: list[dict[str, Any]] = []  # {ptr, fmt, text}
        self.open_cells: list[dict[str, Any]] = []
        self.stray: list[str] = []
        self.tags: dict[str, int] = {}
        self.imgs: list[dict[str, str | None]] = []
        self.links: list[str] = []
        self.tables: list[dict[str, Any]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag == "img":
            self.imgs.append(a)
        for k in ("href", "src"):
            if a.get(k):
                self.links.append(a[k])
        if tag == "table":
            self.tables.append({"caption": False, "th_col": 0, "caption_text": "", "row_headers": []})
        if tag == "caption" and self.tables:
            self.tables[-1]["caption"] = True
        if tag == "th" and a.get("scope") == "row" and self.tables:
            self.tables[-1]["row_headers"].append("")
        if tag == "th" and a.get("scope") in ("col", "colgroup") and self.tables:
            self.tables[-1]["th_col"] += 1
        if tag in VOID:
            return
        self.stack.append((tag, a))
        if "data-v" in a:
            c = {"ptr": a["data-v"], "fmt": a.get("data-fmt"), "text": "", "depth": len(self.stack)}
            self.cells.append(c)
            self.open_cells.append(c)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        while self.stack:
            t, _ = self.stack.pop()
            if self.open_cells and self.open_cells[-1]["depth"] == len(self.stack) + 1:
                self.open_cells.pop()
            if t == tag:
                break

    def handle_data(self, data):
        if self.tables and self.stack:
            if any(t == "caption" for t, _ in self.stack):
                self.tables[-1]["caption_text"] += data
            elif any(t == "th" and a.get("scope") == "row" for t, a in self.stack):
                self.tables[-1]["row_headers"][-1] += data
        if self.open_cells:
            for c in self.open_cells:
                c["text"] += data
            return
        if not any(ch.isdigit() for ch in data):
            return
        if any(t in ALLOWED or "data-prose" in a for t, a in self.stack):
            return
        self.stray.append(data.strip())


def parse(path: Path) -> _Page:
    p = _Page()
    p.feed(path.read_text(encoding="utf-8"))
    p.close()
    return p


def resolve(doc: Any, ptr: str) -> Any:
    cur = doc
    for raw in ptr.lstrip("/").split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        cur = cur[int(key)] if isinstance(cur, list) else cur[key]
    return cur


def _tol(token: str) -> float:
    dec = len(token.split(".")[1]) if "." in token else 0
    return 0.5 * 10 ** (-dec) + 1e-9


def _val(token: str) -> float:
    return float(token.replace("\u2212", "-").replace("+", ""))


def expected_numbers(value: Any, fmt: str) -> list[float] | None:
    """The numbers a cell must show for ``value`` in ``fmt`` (None: shown as a dash)."""
    if value is None:
        return None
    if fmt in ("pctci", "num3ci"):
        if not isinstance(value, list) or any(v is None for v in value):
            return None
        k = 100.0 if fmt == "pctci" else 1.0
        return [v * k for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    k = 100.0 if fmt in ("pct", "pp") else 1.0
    return [value * k]


def check_page(html_path: Path, json_path: Path) -> dict[str, int]:
    """Assert every number on ``html_path`` matches ``json_path``; returns counts for further checks."""
    page = parse(html_path)
    doc = json.loads(json_path.read_text(encoding="utf-8"))
    assert not page.stray, f"{html_path.name}: digits outside any data-v element: {page.stray[:5]}"
    n_num = 0
    for c in page.cells:
        where = f"{html_path.name} {c['ptr']} ({c['fmt']}): shown {c['text']!r}"
        value = resolve(doc, c["ptr"])  # KeyError: the page shows something its JSON does not hold
        text = c["text"].strip()
        if c["fmt"] == "text":
            assert text == ("\u2014" if value is None else str(value).strip()), where + f", JSON {value!r}"
            continue
        if c["fmt"] == "p" and text.startswith("<"):  # a p-value below the display floor: "< 0.0001"
            (tok,) = NUM.findall(text)
            assert value is not None and 0 <= value < _val(tok), where + f", JSON {value!r}"
            n_num += 1
            continue
        want = expected_numbers(value, c["fmt"])
        tokens = NUM.findall(text)
        if want is None:
            assert text == "\u2014" and not tokens, where + f", JSON {value!r}"
            continue
        assert len(tokens) == len(want), where + f", JSON {value!r}"
        for tok, w in zip(tokens, want):
            assert abs(_val(tok) - w) <= _tol(tok) * (1 + 1e-9), where + f", JSON {value!r}"
            if c["fmt"] == "int":
                assert "." not in tok and _val(tok) == w, where
            if c["fmt"] == "exact":  # the exact value: every digit, nothing rounded
                assert _val(tok) == w, where
            if c["fmt"] == "sig4":  # meaningful precision: at most 4 significant digits after the leading zeros
                assert len(tok.lstrip("+\u2212-").replace(".", "").lstrip("0")) <= max(4, len(tok.split(".")[0].lstrip("+\u2212-"))), where
        n_num += len(tokens)
    return {"cells": len(page.cells), "numbers": n_num, "tables": len(page.tables), "imgs": len(page.imgs)}
