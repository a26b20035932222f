"""The one shape of a verifier's finding, shared by the detector-bundle verifier
(:mod:`veribench.bundles.verify` and the modules it runs) and the cycle verifier (:mod:`veribench.cycles.verify`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Finding:
    """One failed check (or a warning): where, what was expected, what was found."""

    check: str
    message: str
    file: str | None = None
    field: str | None = None
    expected: Any = None
    got: Any = None
    severity: str = "error"

    def line(self) -> str:
        parts = [p for p in (self.file, self.field) if p]
        loc = ", ".join(parts)
        s = f"{self.check}: " + (f"{loc}: " if loc else "") + self.message
        if self.expected is not None or self.got is not None:
            s += f" (expected {_short(self.expected)}, got {_short(self.got)})"
        return s


def _short(v: Any, n: int = 120) -> str:
    s = repr(v)
    return s if len(s) <= n else s[: n - 3] + "..."
