"""A cycle bundle on disk: its file names, the manifest, and strict loading of raw bytes.

The file set is HumanizerBench's (``shared/reference/datasets.md``): ``commit.json``
and ``cycle.json`` (the manifest) plus ten manifest-covered files. veribench's own
bundles may add the names in :data:`VERIBENCH_FILES`. Hashes are always taken over
the raw bytes on disk, never over decoded or re-serialised text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..hashing import sha256_bytes

#: Files outside the manifest: the commitment (published at cycle start) and the manifest itself.
META_FILES = ("commit.json", "cycle.json")
#: Files every bundle's manifest must cover, in HumanizerBench's manifest order.
MANIFEST_FILES = ("leaderboard.json", "nonce.txt", "prompts.json", "templates.json", "banks.json",
                  "select-placeholders.js", "samples.json", "tests.json", "detector-scores.json", "scoring.js")
#: Optional files of veribench bundles: the scoring rules as data, the record of the
#: models and detectors used, and the test rows of humanizers listed as unavailable.
VERIBENCH_FILES = ("scoring-spec.json", "provenance.json", "unavailable-tests.json")
ALLOWED_MANIFEST_NAMES = frozenset(MANIFEST_FILES + VERIBENCH_FILES)
REQUIRED_FILES = META_FILES + MANIFEST_FILES
ALL_KNOWN = frozenset(REQUIRED_FILES + VERIBENCH_FILES)
#: ``cycle.json`` ``format`` of bundles veribench publishes.
VERIBENCH_FORMAT = "veribench-cycle/1"


class BundleFileError(Exception):
    """A bundle file that is missing, not UTF-8, or not valid JSON (strict)."""

    def __init__(self, file: str, message: str):
        super().__init__(f"{file}: {message}")
        self.file, self.message = file, message


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f"duplicate key {k!r}")
        d[k] = v
    return d


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json_bytes(data: bytes, file: str) -> Any:
    """Parse raw bytes as strict JSON (UTF-8, no BOM, no NaN/Infinity, no duplicate keys).

    Raises:
        BundleFileError: naming the file, and the line and column of a syntax error
            (a truncated file fails here).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BundleFileError(file, f"not UTF-8 at byte {e.start}") from None
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise BundleFileError(file, f"unparsable JSON: {e.msg} at line {e.lineno} column {e.colno}"
                              f" ({len(data)} bytes; truncated?)") from None
    except ValueError as e:
        raise BundleFileError(file, f"invalid JSON: {e}") from None


def is_cycle_dir(path: Path) -> bool:
    """A folder holding at least one known bundle file."""
    return path.is_dir() and any((path / n).is_file() for n in ALL_KNOWN)


def discover(path: Path) -> list[Path]:
    """Cycle folders at ``path``: the folder itself, or its sub-folders that are cycles (sorted)."""
    if is_cycle_dir(path):
        return [path]
    if path.is_dir():
        return sorted(p for p in path.iterdir() if is_cycle_dir(p))
    return []


@dataclass
class Bundle:
    """The raw bytes of a cycle folder's known files (read once), parsed on demand."""

    path: Path
    raw: dict[str, bytes] = field(default_factory=dict)
    extra: list[str] = field(default_factory=list)
    _parsed: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> "Bundle":
        b = cls(Path(path))
        for p in sorted(b.path.iterdir()):
            if p.is_file() and p.name in ALL_KNOWN:
                b.raw[p.name] = p.read_bytes()
            else:
                b.extra.append(p.name)
        return b

    def sha256(self, name: str) -> str:
        return sha256_bytes(self.raw[name])

    def has(self, name: str) -> bool:
        return name in self.raw

    def json(self, name: str) -> Any:
        """Parsed JSON of ``name``.

        Raises:
            BundleFileError: missing or unparsable.
        """
        if name not in self._parsed:
            if name not in self.raw:
                raise BundleFileError(name, "required file missing")
            self._parsed[name] = parse_json_bytes(self.raw[name], name)
        return self._parsed[name]

    @property
    def is_veribench(self) -> bool:
        """Published by veribench (its methodology requires completeness)."""
        try:
            c = self.json("cycle.json")
        except BundleFileError:
            return False
        return isinstance(c, dict) and c.get("format") == VERIBENCH_FORMAT
