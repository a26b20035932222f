"""Exceptions with locations: every bad-input error names the file, record and field."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class VeribenchError(Exception):
    """Base class of veribench errors shown to users without a traceback."""


class InputError(VeribenchError):
    """Bad input data.

    Args:
        message: what is wrong.
        file: the file the record came from.
        record: record index (0-based) or id.
        field: the offending field name.
    """

    def __init__(self, message: str, *, file: str | None = None, record: object | None = None, field: str | None = None):
        self.file, self.record, self.field, self.reason = file, record, field, message
        where = []
        if file is not None:
            where.append(f"file {file}")
        if record is not None:
            where.append(f"record {record}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class RegistryError(VeribenchError, KeyError):
    """Unknown plug-in name; the message suggests close matches."""

    def __str__(self) -> str:  # KeyError quotes its message otherwise
        return str(self.args[0]) if self.args else ""


class ProtocolError(VeribenchError):
    """Protocol file invalid, or changed after commit without an amendment."""


class SettingError(InputError):
    """A setting (``--set key=value``) or a record field that the receiver does not know;
    the message suggests close matches (:func:`unknown_key`)."""


def close_matches(word: str, known: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` names of ``known`` closest to ``word`` (case-insensitive; difflib's
    ratio >= 0.5, best first), in their own spelling. The one matcher behind every
    "did you mean" (plug-in names, settings, record fields, protocol keys)."""
    low: dict[str, str] = {}
    for k in known:
        low.setdefault(str(k).lower(), str(k))
    return [low[c] for c in difflib.get_close_matches(str(word).lower(), list(low), n=n, cutoff=0.5)]


def did_you_mean(word: str, known: Iterable[str], n: int = 1) -> str:
    """``"did you mean 'model'?"`` for the closest names of ``known`` (:func:`close_matches`),
    or ``""`` when none is close."""
    close = close_matches(word, known, n=n)
    return f"did you mean {', '.join(repr(c) for c in close)}?" if close else ""


def unknown_key(kind: str, key: str, known: Iterable[str], owner: str = "") -> str:
    """One wording for an unknown setting or field:
    ``unknown setting 'modle' of detector 'loglik' (did you mean 'model'? known: a, b)``.

    Args:
        kind: ``"setting"`` or ``"field"``.
        key: the unknown name.
        known: the names accepted (listed sorted; empty: not listed).
        owner: what the key was given to, e.g. ``"detector 'loglik'"`` (optional).
    """
    names = sorted({str(k) for k in known})
    hint = " ".join(x for x in (did_you_mean(key, names), f"known: {', '.join(names)}" if names else "") if x)
    return f"unknown {kind} {key!r}" + (f" of {owner}" if owner else "") + (f" ({hint})" if hint else "")


#: The most characters of a value an error message echoes (:func:`echo`).
ECHO_MAX = 64


def echo(value: object, n: int = ECHO_MAX) -> str:
    """``repr(value)`` for an error message, cut to ``n`` characters followed by "…" when
    longer, so that a hostile id or status cannot blow up a response or a log line."""
    s = repr(value)
    return s if len(s) <= n else s[:n] + "…"
