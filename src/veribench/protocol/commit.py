"""Committing a protocol before any scan, and amending it afterwards.

``commit`` records the SHA-256 of the file's raw bytes and the date in the workspace
(``protocols`` table). A protocol with the same name but different bytes is an
amendment: it is accepted only if its ``[[amendments]]`` list has an entry whose
``supersedes`` equals the hash of the currently committed version. Runs record
the hash they ran under, and their results list the amendments.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import ProtocolError
from ..store.workspace import Workspace, now_utc
from .model import Protocol, load_protocol


@dataclass
class CommitRecord:
    """A committed protocol version: hash, name, date, and its amendment chain."""

    hash: str
    name: str
    committed_at: datetime
    amendments: list[dict[str, Any]]
    new: bool = False
    #: Sample-size warnings for the declared comparisons (``veribench.evaluate.design.design_check``).
    warnings: list[str] = field(default_factory=list)


def _latest(ws: Workspace, name: str) -> tuple[str, datetime] | None:
    rows = ws.query(
        "SELECT protocol_hash, committed_at FROM protocols WHERE name = ? ORDER BY committed_at DESC LIMIT 1", [name]
    )
    return (rows[0][0], rows[0][1]) if rows else None


def lookup(ws: Workspace, protocol_hash: str) -> CommitRecord | None:
    """The commit record of ``protocol_hash``, or None if it was never committed."""
    rows = ws.query("SELECT protocol_hash, name, committed_at, amendments FROM protocols WHERE protocol_hash = ?",
                    [protocol_hash])
    if not rows:
        return None
    h, name, at, am = rows[0]
    return CommitRecord(h, name, at, json.loads(am) if am else [])


def commit(ws: Workspace, path: str | Path) -> CommitRecord:
    """Record ``path``'s hash and the date. Idempotent for unchanged bytes.

    Raises:
        ProtocolError: invalid file, or a changed protocol without an amendment that
            supersedes the committed hash.
    """
    from ..evaluate.design import design_check

    proto = load_protocol(path)
    assert proto.hash is not None
    existing = lookup(ws, proto.hash)
    if existing:
        existing.warnings = design_check(ws, proto)
        return existing
    prev = _latest(ws, proto.name)
    if prev is not None:
        prev_hash, prev_at = prev
        if not any(a.get("supersedes") == prev_hash for a in proto.amendments):
            raise ProtocolError(
                f"protocol {path}: {proto.name!r} was committed as {prev_hash} on {prev_at:%Y-%m-%d %H:%M} UTC; "
                f"changing it needs an [[amendments]] entry with supersedes = \"{prev_hash}\", a date and a summary"
            )
    at = now_utc()
    content = Path(path).read_bytes().decode("utf-8")
    with ws.transaction() as c:
        c.execute("INSERT INTO protocols VALUES (?, ?, ?, ?, ?, ?)",
                  [proto.hash, proto.name, str(path), at, content, json.dumps(proto.amendments, default=str)])
    return CommitRecord(proto.hash, proto.name, at, proto.amendments, new=True, warnings=design_check(ws, proto))


def require_committed(ws: Workspace, proto: Protocol) -> CommitRecord:
    """The commit record of ``proto``.

    Raises:
        ProtocolError: the exact bytes were never committed to this workspace.
    """
    rec = lookup(ws, proto.hash or "")
    if rec is None:
        raise ProtocolError(
            f"protocol {proto.path} (sha256 {proto.hash}) is not committed in workspace {ws.path}; "
            f"run `veribench protocol commit {proto.path} --workspace {ws.path}` before any scan"
        )
    return rec
