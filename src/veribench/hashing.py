"""Content hashes used as keys everywhere in veribench.

All hashes are SHA-256 over exact bytes. Text is encoded as UTF-8 with no
normalisation, so the hash identifies the exact string a detector received.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
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


def _leaf_bytes(leaf: str) -> bytes:
    try:
        return bytes.fromhex(leaf)
    except (TypeError, ValueError):
        raise ValueError(f"Merkle leaf {str(leaf)[:80]!r} is not a hex string") from None


def _mth(hashes: list[bytes]) -> bytes:
    """RFC 6962 §2.1 MTH over leaf hashes (``len(hashes) >= 1``): split at the largest power of
    two below n, hash ``0x01 || left || right``."""
    if len(hashes) == 1:
        return hashes[0]
    k = 1 << ((len(hashes) - 1).bit_length() - 1)
    return hashlib.sha256(b"\x01" + _mth(hashes[:k]) + _mth(hashes[k:])).digest()


def merkle_leaf_hash(leaf: str) -> str:
    """RFC 6962 §2.1 leaf hash ``SHA-256(0x00 || leaf bytes)`` of one hex leaf (hex out).

    Raises:
        ValueError: ``leaf`` is not a hex string.
    """
    return hashlib.sha256(b"\x00" + _leaf_bytes(leaf)).hexdigest()


def merkle_root(leaves: Sequence[str]) -> str:
    """Merkle Tree Hash of RFC 6962 §2.1 (Certificate Transparency), hex.

    Args:
        leaves: the leaves in order, each a hex string decoded to its bytes (in veribench each
            is the 64-character SHA-256 of a canonical record, :func:`canonical_json`).

    Returns:
        64 lowercase hex characters: ``SHA-256()`` for no leaf; ``SHA-256(0x00 || d)`` for one;
        otherwise ``SHA-256(0x01 || MTH(D[0:k]) || MTH(D[k:n]))`` with k the largest power of two
        smaller than n. Changing, adding, removing or reordering a leaf changes the root.

    Raises:
        ValueError: a leaf is not a hex string.
    """
    if not leaves:
        return hashlib.sha256(b"").hexdigest()
    return _mth([bytes.fromhex(merkle_leaf_hash(x)) for x in leaves]).hex()


def _path(hashes: list[bytes], m: int) -> list[bytes]:
    """RFC 6962 §2.1.1 PATH(m, D[n]) over leaf hashes."""
    if len(hashes) == 1:
        return []
    k = 1 << ((len(hashes) - 1).bit_length() - 1)
    if m < k:
        return [*_path(hashes[:k], m), _mth(hashes[k:])]
    return [*_path(hashes[k:], m - k), _mth(hashes[:k])]


def merkle_proof(leaves: Sequence[str], index: int) -> list[str]:
    """RFC 6962 §2.1.1 audit path of leaf ``index`` (0-based) in the tree over ``leaves``:
    the sibling hashes from the leaf up, hex.

    Raises:
        ValueError: ``index`` outside ``0..len(leaves)-1`` or a leaf not hex.
    """
    if not 0 <= index < len(leaves):
        raise ValueError(f"leaf index {index} outside a tree of {len(leaves)} leaves")
    return [h.hex() for h in _path([bytes.fromhex(merkle_leaf_hash(x)) for x in leaves], index)]


def merkle_verify(leaf: str, index: int, size: int, proof: Sequence[str], root: str) -> bool:
    """Whether ``proof`` (from :func:`merkle_proof`) shows ``leaf`` at ``index`` of a tree of
    ``size`` leaves with ``root`` (RFC 9162 §2.1.3.2, the verification of an RFC 6962 audit path).
    False, never an exception, for any mismatch or malformed input."""
    if not 0 <= index < size:
        return False
    try:
        r = bytes.fromhex(merkle_leaf_hash(leaf))
        path = [bytes.fromhex(p) for p in proof]
    except ValueError:
        return False
    fn, sn = index, size - 1
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = hashlib.sha256(b"\x01" + p + r).digest()
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = hashlib.sha256(b"\x01" + r + p).digest()
        fn >>= 1
        sn >>= 1
    return sn == 0 and r.hex() == str(root).lower()
