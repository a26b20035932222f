"""Spec: a plug-in's name, version and settings, with a stable hash.

Every detector, humanizer, generator, embedder and judge has one. The spec hash
is the first half of every cache key (the second is the SHA-256 of the exact
text submitted), so a text is never scored or paid for twice with the same spec.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from veribench.hashing import canonical_json, sha256_bytes

#: Operational settings every HTTP plug-in (vendor adapter, chat client) accepts, with their
#: defaults (seconds, attempts, calls per minute); they change how a call is made, never its
#: result, so they never enter a spec (and a verifier comparing a protocol's settings with a
#: spec skips them).
OPERATIONAL = {"timeout": 60.0, "max_attempts": 5, "backoff": 1.0, "backoff_max": 60.0,
               "rate_per_minute": None, "max_concurrency": None, "poll_interval": 2.0, "poll_timeout": 600.0}

#: Settings that say where a secret is read from (a watermark's ``key_file``): like the
#: operational ones they never enter a spec, which carries the secret's SHA-256 fingerprint
#: instead (``key_sha256``), and a verifier comparing a protocol's settings with a spec skips them.
SECRET_SOURCES = frozenset({"key_file"})


@dataclass(frozen=True)
class Spec:
    """Identity of a configured plug-in.

    Attributes:
        kind: plug-in kind, e.g. ``"detector"``, ``"humanizer"``, ``"embedder"``, ``"judge"``.
        name: registry name, e.g. ``"zippy"`` or ``"gptzero"``.
        version: implementation or vendor model version string.
        settings: JSON-serialisable settings that change results. Secrets
            (API keys) must never be put here.
    """

    kind: str
    name: str
    version: str
    settings: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "version": self.version, "settings": dict(self.settings)}

    def canonical(self) -> str:
        """Canonical JSON of the spec (sorted keys, compact)."""
        return canonical_json(self.to_dict())

    @property
    def hash(self) -> str:
        """Hex SHA-256 of :meth:`canonical`; stable across runs and machines."""
        return sha256_bytes(self.canonical().encode("utf-8"))

    @property
    def label(self) -> str:
        """Short human-readable name: ``name`` plus settings that differ from empty."""
        if not self.settings:
            return self.name
        inner = ",".join(f"{k}={v}" for k, v in sorted(self.settings.items()))
        return f"{self.name}[{inner}]"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Spec:
        return cls(kind=d["kind"], name=d["name"], version=str(d.get("version", "")), settings=dict(d.get("settings") or {}))

    @classmethod
    def from_json(cls, s: str) -> Spec:
        return cls.from_dict(json.loads(s))
