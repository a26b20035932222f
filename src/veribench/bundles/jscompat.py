"""JavaScript semantics needed to re-implement HumanizerBench's frozen files in Python.

Nothing here executes JavaScript. Each helper reproduces one ECMAScript rule
exactly (ECMA-262, 2024 edition; section numbers below), so a Python replay gives
the numbers Node would:

- :func:`utf16_units` - ``String.prototype.charCodeAt`` iterates UTF-16 code units
  (6.1.4), so a character outside the Basic Multilingual Plane (an emoji) counts
  as two units (a surrogate pair).
- :func:`js_trim` / :func:`js_word_count` - ``String.prototype.trim`` and the
  ``\\s`` class (22.2.2.9: WhiteSpace and LineTerminator), which differ from Python's
  ``str.split()`` (Python also splits on U+001C..U+001F and U+0085, and not on U+FEFF).
- :func:`js_math_round` / :func:`js_to_fixed` - the two rounding rules a publisher
  may use (``Math.round(x * 10**d) / 10**d``, HumanizerBench's and veribench's, and
  ``Number(x.toFixed(d))``).
- :func:`js_number_to_string` / :func:`dumps_js` - ``Number::toString`` (6.1.6.1.20)
  and ``JSON.stringify(value, null, 2)``, so the files veribench publishes print
  floats as JavaScript prints them (``1`` not ``1.0``, ``0.00001`` not ``1e-05``).
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

#: ECMAScript WhiteSpace + LineTerminator code points (the ``\s`` class and ``trim``).
JS_WHITESPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_WS_RUN = re.compile("[" + re.escape(JS_WHITESPACE) + "]+")


def utf16_units(s: str) -> list[int]:
    """The UTF-16 code units of ``s`` (what JavaScript's ``charCodeAt`` walks).

    Lone surrogates (possible in JSON ``"\\ud83d"``) pass through as one unit each.
    """
    b = s.encode("utf-16-le", "surrogatepass")
    return [b[i] | (b[i + 1] << 8) for i in range(0, len(b), 2)]


def js_trim(s: str) -> str:
    """``String.prototype.trim``: strip ECMAScript whitespace and line terminators."""
    return s.strip(JS_WHITESPACE)


#: Characters where Python's ``str.split()`` and JavaScript's ``\\s`` disagree.
_SPLIT_DIFFERS = re.compile("[\x1c\x1d\x1e\x1f\x85\ufeff]")


def js_word_count(text: str) -> int:
    """``text.trim().split(/\\s+/).filter(Boolean).length`` (HumanizerBench ``wordCount``)."""
    if not _SPLIT_DIFFERS.search(text):
        return len(text.split())  # identical here, and C-fast
    return sum(1 for w in _JS_WS_RUN.split(js_trim(text)) if w)


def js_math_round(x: float, digits: int) -> float:
    """``Math.round(x * 10**digits) / 10**digits`` with IEEE double arithmetic.

    ``Math.round`` rounds half toward +infinity (21.3.2.28).
    """
    p = 10.0 ** digits
    y = x * p
    r = math.floor(y)
    if y - r >= 0.5:
        r += 1
    return r / p


def js_to_fixed(x: float, digits: int) -> float:
    """``Number(x.toFixed(digits))``: exact decimal value of the double, ties away from zero."""
    if not math.isfinite(x):
        return x
    q = Decimal(1).scaleb(-digits)
    return float(Decimal(x).quantize(q, rounding=ROUND_HALF_UP))


def js_number_to_string(x: float | int) -> str:
    """``Number::toString(x)`` for a finite number (ECMA-262 6.1.6.1.20).

    Raises:
        ValueError: NaN or infinity (``JSON.stringify`` would write ``null``; veribench refuses).
    """
    if isinstance(x, bool):
        raise TypeError("booleans are not numbers here")
    if isinstance(x, int):
        x = float(x) if abs(x) >= 2**53 else x
        if isinstance(x, int):
            return str(x)
    if not math.isfinite(x):
        raise ValueError(f"non-finite number {x!r} cannot be written as JSON")
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    _, digits_t, exp = Decimal(repr(abs(x))).as_tuple()
    digits = "".join(map(str, digits_t)).rstrip("0") or "0"
    # repr() may keep trailing zeros in the coefficient ("100.0"): fold them into the exponent.
    exp += len("".join(map(str, digits_t))) - len(digits)
    k = len(digits)
    n = exp + k  # position of the decimal point relative to the digits
    if k <= n <= 21:
        s = digits + "0" * (n - k)
    elif 0 < n <= 21:
        s = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        s = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        es = ("+" if e >= 0 else "-") + str(abs(e))
        s = digits + "e" + es if k == 1 else digits[0] + "." + digits[1:] + "e" + es
    return sign + s


def _enc_str(s: str) -> str:
    # JSON.stringify escapes ", \\, control characters < 0x20 and lone surrogates.
    import json

    return json.dumps(s, ensure_ascii=False)


def _dump(obj: Any, indent: str, level: int, out: list[str]) -> None:
    if obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, (int, float)):
        out.append(js_number_to_string(obj))
    elif isinstance(obj, str):
        out.append(_enc_str(obj))
    elif isinstance(obj, dict):
        if not obj:
            out.append("{}")
            return
        pad, inner = "\n" + indent * level, "\n" + indent * (level + 1)
        out.append("{")
        for i, (k, v) in enumerate(obj.items()):
            out.append(("," if i else "") + inner + _enc_str(str(k)) + ": ")
            _dump(v, indent, level + 1, out)
        out.append(pad + "}")
    elif isinstance(obj, (list, tuple)):
        if not obj:
            out.append("[]")
            return
        pad, inner = "\n" + indent * level, "\n" + indent * (level + 1)
        out.append("[")
        for i, v in enumerate(obj):
            out.append(("," if i else "") + inner)
            _dump(v, indent, level + 1, out)
        out.append(pad + "]")
    else:
        raise TypeError(f"cannot write {type(obj).__name__} as JSON")


def dumps_js(obj: Any) -> str:
    """``JSON.stringify(obj, null, 2) + "\\n"``: the byte form of every file veribench publishes."""
    out: list[str] = []
    _dump(obj, "  ", 0, out)
    return "".join(out) + "\n"
