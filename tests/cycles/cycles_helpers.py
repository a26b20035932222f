"""Helpers of the cycles tests."""

from __future__ import annotations

import json
from pathlib import Path


def rehash(cycle: Path, *names: str) -> None:
    """Update cycle.json's manifest entries for ``names`` (a tamper that also fixes the manifest)."""
    from veribench.bundles.jscompat import dumps_js
    from veribench.hashing import sha256_bytes

    cj = json.loads((cycle / "cycle.json").read_bytes())
    for n in names:
        cj["files"][n] = sha256_bytes((cycle / n).read_bytes())
    (cycle / "cycle.json").write_text(dumps_js(cj), encoding="utf-8")


def edit_json(cycle: Path, name: str, fn, update_manifest: bool = True) -> None:
    """Load ``name``, apply ``fn`` (in place), write it back in JavaScript's JSON form."""
    from veribench.bundles.jscompat import dumps_js

    obj = json.loads((cycle / name).read_bytes())
    fn(obj)  # edits in place; its return value is ignored
    (cycle / name).write_text(dumps_js(obj), encoding="utf-8")
    if update_manifest:
        rehash(cycle, name)
