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
