"""How numbers are written on report pages: one place for every display format.

Every number on a page is rendered by :func:`cell`, which wraps it in an element
carrying ``data-v`` (a JSON pointer, RFC 6901, into the page's ``data/<page>.json``)
and ``data-fmt`` (one of :data:`FORMATS`). A test parses each page and checks every
such element against the JSON it names, and that no digit appears outside one.

Formats (``value`` is the JSON value the pointer names):

========  ====================================  ====================
fmt       value                                 shown as
========  ====================================  ====================
pct       proportion in [0, 1]                  ``49.5%``
pctci     [lo, hi], proportions in [0, 1]       ``[39.0, 59.9]``  (percent)
pp        difference of proportions, [-1, 1]    ``+12.3 pp``      (percentage points)
num2      any number                            ``84.47``
num3      any number                            ``0.712``
num3ci    [lo, hi]                              ``[0.661, 0.749]``
signed    any number                            ``−8``, ``+1``
sig4      a threshold or score                  ``0.9103``, ``−12.35``, ``0.5`` (4 significant digits)
exact     a threshold or score                  ``0.9103422246601374`` (shortest exact decimal)
p         a p-value in [0, 1]                   ``0.0123``, ``< 0.0001``
int       integer count                         ``91``
text      string (may contain digits)           as is
========  ====================================  ====================

``null`` is shown as an em dash (``—``) in every format.
"""

from __future__ import annotations

import math
from typing import Any

from markupsafe import Markup, escape

MINUS = "\u2212"
NULL = "\u2014"

FORMATS = ("pct", "pctci", "pp", "num2", "num3", "num3ci", "signed", "sig4", "exact", "p", "int", "text")

#: p-values below this are shown as ``< 0.0001``.
P_FLOOR = 1e-4


def _num(x: float, digits: int) -> str:
    s = f"{x:.{digits}f}"
    if s.startswith("-"):
        # -0.0 after rounding is shown as 0
        s = s[1:] if float(s) == 0 else MINUS + s[1:]
    return s


def _num_text(s: str) -> str:
    """A plain decimal string with the typographic minus sign."""
    return MINUS + s[1:] if s.startswith("-") else s


def significant(x: float, digits: int = 4) -> str:
    """``x`` with ``digits`` significant digits, as a plain decimal (never an exponent),
    trailing zeros dropped: ``0.9103422 -> "0.9103"``, ``0.5 -> "0.5"``, ``-1234.5 -> "−1235"``."""
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    dec = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    s = f"{x:.{dec}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    if s in ("-0", "0") and x != 0:  # cannot happen with dec chosen from log10, kept for safety
        s = f"{x:.{dec + 1}f}"
    return _num_text(s)


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def format_value(value: Any, fmt: str) -> str:
    """Text for ``value`` in display format ``fmt`` (see the module table).

    Raises:
        ValueError: unknown ``fmt``.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown display format {fmt!r}; expected one of {FORMATS}")
    if value is None:
        return NULL
    if fmt == "text":
        return str(value)
    if fmt in ("pctci", "num3ci"):
        if not isinstance(value, (list, tuple)) or len(value) != 2 or not all(_finite(v) for v in value):
            return NULL
        scale, digits = (100.0, 1) if fmt == "pctci" else (1.0, 3)
        return f"[{_num(value[0] * scale, digits)}, {_num(value[1] * scale, digits)}]"
    if not _finite(value):
        return NULL
    if fmt == "pct":
        return _num(value * 100.0, 1) + "%"
    if fmt == "pp":
        s = _num(value * 100.0, 1)
        return ("+" + s if value > 0 and float(s) != 0 else s) + " pp"
    if fmt == "num2":
        return _num(value, 2)
    if fmt == "num3":
        return _num(value, 3)
    if fmt == "sig4":
        return significant(value, 4)
    if fmt == "exact":
        import numpy as np

        return _num_text(np.format_float_positional(float(value), unique=True, trim="-"))
    if fmt == "p":
        return f"< {P_FLOOR:.4f}" if value < P_FLOOR else _num(value, 4)
    if fmt == "signed":
        s = _num(value, 0) if float(value).is_integer() else _num(value, 2)
        return "+" + s if value > 0 else s
    if fmt == "int":
        return str(int(value))
    raise AssertionError(fmt)  # pragma: no cover


def cell(ptr: str, value: Any, fmt: str, tag: str = "span", attrs: str = "") -> Markup:
    """``<tag data-v=ptr data-fmt=fmt>formatted value</tag>`` as safe HTML."""
    extra = f" {attrs}" if attrs else ""
    num_cls = "" if fmt == "text" else ' class="n"'
    return Markup(
        f'<{tag}{num_cls} data-v="{escape(ptr)}" data-fmt="{fmt}"{extra}>{escape(format_value(value, fmt))}</{tag}>'
    )


def pointer(*parts: Any, base: str = "") -> str:
    """JSON pointer (RFC 6901): ``pointer("table1", 0, "fpr") == "/table1/0/fpr"``.

    Each part is one key (escaped as RFC 6901 says); ``base`` is an existing pointer to extend.
    """
    return base.rstrip("/") + "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def resolve(doc: Any, ptr: str) -> Any:
    """Value at JSON pointer ``ptr`` in ``doc``.

    Raises:
        KeyError: the pointer names nothing.
    """
    cur = doc
    if ptr in ("", "/"):
        return cur
    for raw in ptr.lstrip("/").split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(cur, list):
            cur = cur[int(key)]
        elif isinstance(cur, dict):
            if key not in cur:
                raise KeyError(f"{ptr}: no key {key!r}")
            cur = cur[key]
        else:
            raise KeyError(f"{ptr}: cannot index {type(cur).__name__}")
    return cur


def get_path(row: Any, key: str | tuple[str, ...]) -> Any:
    """``row[k1][k2]...`` for ``key=(k1, k2, ...)`` (or one key); None when any step is missing."""
    cur = row
    for k in (key,) if isinstance(key, str) else key:
        if isinstance(cur, dict):
            cur = cur.get(k)
        else:
            return None
    return cur
