"""Content hashes used as keys everywhere in veribench.

All hashes are SHA-256 over exact bytes. Text is encoded as UTF-8 with no
normalisation, so the hash identifies the exact string a detector received.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of raw bytes (64 lowercase hex characters)."""
    return hashlib.sha256(data).hexdigest()


def text_sha256(text: str) -> str:
    """Hex SHA-256 of ``text`` encoded as UTF-8 (no normalisation)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys, no whitespace and no NaN: a stable byte form for hashing.

    Raises:
        ValueError: if ``obj`` holds NaN or infinity (not representable canonically).
    """
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` of :func:`loads_strict`: the object, or ValueError naming a key
    that occurs twice (``json.loads`` keeps the last, DuckDB's ``json_extract`` the first: two
    readers of one text would disagree)."""
    d: dict[str, Any] = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f"duplicate key {k!r}")
        d[k] = v
    return d


def no_constant(name: str) -> Any:
    """``parse_constant`` of :func:`loads_strict`: NaN, Infinity and -Infinity are not JSON."""
    raise ValueError(f"{name} is not valid JSON")


def loads_strict(text: str | bytes) -> Any:
    """The one strict JSON reader of every JSON the store or a bundle reads (provenance, tags,
    leaves' texts, manifest, results, events): ``json.loads`` refusing duplicate object keys and
    NaN/Infinity (RFC 8259 says names SHOULD be unique; readers that disagree on which copy wins
    are a tampering channel).

    Raises:
        ValueError: a syntax error (``json.JSONDecodeError``), a duplicate key or a constant.
    """
    return json.loads(text, object_pairs_hook=no_duplicate_keys, parse_constant=no_constant)
