"""The hidden-set commitment: a salted Merkle root over the board's test set, published at launch
and checked against the set revealed at the end.

Each row of the hidden set becomes one leaf, the SHA-256 (hex) of the canonical JSON
(:func:`veribench.hashing.canonical_json`) of ``{"salt_hex", "doc_id", "text_sha256", "label",
"arm", "tags", "canary_of", "record"}`` (``canary_of``: the doc_id a canary copies, null for a real text,
so that which texts are canaries, kept out of every headline, is fixed at launch; records of
the format :data:`COMMITMENT_FORMAT_V1` have no ``canary_of`` in their leaves and are still
checked, without that guarantee); the leaves, in ``doc_id`` order, are hashed into an RFC 6962 Merkle root
(:func:`veribench.hashing.merkle_root`). The secret salt (at least 16 random bytes) stops anyone
from testing a guessed label against the published root before the reveal; revealing the
labels and the salt lets anyone recompute the root (:func:`check_reveal`).

The record also carries ``salt_sha256`` (SHA-256 of the salt, which tells nothing of it) and
``texts_root`` (an unsalted Merkle root over ``{"doc_id", "text_sha256"}``, the public part:
submitters receive the texts), so that a failed reveal says whether the salt, the set of texts or
a label/arm/tag differs.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from veribench.errors import InputError
from veribench.hashing import canonical_json, merkle_root, sha256_bytes, text_sha256

#: The ``format`` of a commitment record: leaves carry ``canary_of``, and the record carries the
#: board's scoring rules (``rules``: headline metric, Ladder eta, minimum cell size, grid tags,
#: threshold rule; written by the board at launch), so none of them can change after the launch.
COMMITMENT_FORMAT = "veribench-board-commitment/3"
#: The second format: the same leaves, no ``rules`` (a reveal of it is checked, and says the rules were not committed).
COMMITMENT_FORMAT_V2 = "veribench-board-commitment/2"
#: The first format (leaves without ``canary_of``): still checked by :func:`check_reveal`.
COMMITMENT_FORMAT_V1 = "veribench-board-commitment/1"
#: The leaf fields of each format, in addition to ``salt_hex`` and ``text_sha256`` (one source of truth).
LEAF_FIELDS: dict[str, tuple[str, ...]] = {
    COMMITMENT_FORMAT_V1: ("doc_id", "label", "arm", "tags"),
    COMMITMENT_FORMAT_V2: ("doc_id", "label", "arm", "tags", "canary_of"),
    COMMITMENT_FORMAT: ("doc_id", "label", "arm", "tags", "canary_of", "record"),
}
#: The stored document fields a row's ``record`` carries (format /3): all the evaluation reads
#: beyond the text, label, arm and tags (``group_key`` decides the calibration split,
#: ``subgroup`` a slice, ``provenance`` a derived text's source, ``kind`` and ``generation``
#: what the bundle publishes), as :func:`veribench.corpus.stored.load_documents` gives them.
RECORD_FIELDS: tuple[str, ...] = ("kind", "subgroup", "group_key", "provenance", "generation")
#: The shortest salt accepted, in bytes (:func:`new_salt` makes 32).
MIN_SALT_BYTES = 16
_RECORD_FIELDS = ("format", "root", "n", "salt_sha256", "texts_root", "protocol_sha256", "board", "created_at")


@dataclass(frozen=True)
class HiddenRow:
    """One row of the hidden set: the board's document id, the exact text, its label (a label
    name of the board's protocol, e.g. ``human`` / ``ai``), its arm, its tags (JSON object),
    for a canary the doc_id of the text it copies, and its other stored fields (``record``:
    a JSON object of :data:`RECORD_FIELDS`; committed from format /3)."""

    doc_id: str
    text: str
    label: str
    arm: str | None = None
    tags: Mapping[str, Any] = field(default_factory=dict)
    canary_of: str | None = None
    record: Mapping[str, Any] = field(default_factory=dict)


def new_salt() -> bytes:
    """32 bytes from the operating system's CSPRNG (:func:`secrets.token_bytes`)."""
    return secrets.token_bytes(32)


def _check_salt(salt: bytes) -> None:
    if not isinstance(salt, bytes | bytearray) or len(salt) < MIN_SALT_BYTES:
        raise InputError(f"the salt must be at least {MIN_SALT_BYTES} random bytes", field="salt")


def _ordered(rows: Sequence[HiddenRow]) -> list[HiddenRow]:
    """Rows sorted by doc_id; InputError naming the record and field for a duplicate id or a
    field of the wrong type."""
    seen: set[str] = set()
    for i, r in enumerate(rows):
        for name in ("doc_id", "text", "label"):
            if not isinstance(getattr(r, name), str) or (name != "text" and not getattr(r, name)):
                raise InputError("must be a non-empty string" if name != "text" else "must be a string",
                                 record=f"{i} ({getattr(r, 'doc_id', None)!r})", field=name)
        if r.arm is not None and not isinstance(r.arm, str):
            raise InputError("must be a string or null", record=f"{i} ({r.doc_id!r})", field="arm")
        if r.canary_of is not None and not isinstance(r.canary_of, str):
            raise InputError("must be a string or null", record=f"{i} ({r.doc_id!r})", field="canary_of")
        if not isinstance(r.tags, Mapping):
            raise InputError("must be a JSON object", record=f"{i} ({r.doc_id!r})", field="tags")
        if not isinstance(r.record, Mapping) or set(r.record) - set(RECORD_FIELDS):
            raise InputError(f"must be a JSON object of {', '.join(RECORD_FIELDS)}", record=f"{i} ({r.doc_id!r})",
                             field="record")
        if r.doc_id in seen:
            raise InputError("duplicate doc_id", record=f"{i} ({r.doc_id!r})", field="doc_id")
        seen.add(r.doc_id)
    return sorted(rows, key=lambda r: r.doc_id)


def _leaf(salt_hex: str, r: HiddenRow, fmt: str) -> str:
    fields = {k: dict(getattr(r, k)) if k in ("tags", "record") else getattr(r, k) for k in LEAF_FIELDS[fmt]}
    try:
        body = canonical_json({"salt_hex": salt_hex, "text_sha256": text_sha256(r.text), **fields})
    except (TypeError, ValueError) as e:
        raise InputError(f"not canonical JSON ({e})", record=repr(r.doc_id), field="tags") from None
    return sha256_bytes(body.encode("utf-8"))


def set_leaves(rows: Sequence[HiddenRow], salt: bytes, *, fmt: str = COMMITMENT_FORMAT) -> list[str]:
    """The leaves (hex SHA-256, one per row, in ``doc_id`` order) of the salted set commitment
    of format ``fmt`` (a key of :data:`LEAF_FIELDS`).

    Raises:
        InputError: a duplicate doc_id, a field of the wrong type, tags JSON cannot carry
            (NaN, a non-string key...), or a salt shorter than :data:`MIN_SALT_BYTES`.
    """
    _check_salt(salt)
    salt_hex = bytes(salt).hex()
    return [_leaf(salt_hex, r, fmt) for r in _ordered(rows)]


def texts_leaves(rows: Sequence[HiddenRow]) -> list[str]:
    """The unsalted leaves over ``{"doc_id", "text_sha256"}`` (doc_id order): the texts' part."""
    return [sha256_bytes(canonical_json({"doc_id": r.doc_id, "text_sha256": text_sha256(r.text)}).encode("utf-8"))
            for r in _ordered(rows)]


def commitment_record(rows: Sequence[HiddenRow], salt: bytes, *, protocol_sha256: str, board: str,
                      created_at: str, rules: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The launch commitment record (a JSON object, published and time-stamped by the board).

    Returns:
        ``{"format": COMMITMENT_FORMAT, "root", "n", "salt_sha256", "texts_root",
        "protocol_sha256", "board", "created_at", "rules"}``: ``root`` the salted Merkle root of
        :func:`set_leaves`, ``n`` the number of rows, ``rules`` the board's scoring rules as
        given (``veribench.leaderboard.service.board_rules``; null: none committed).

    Raises:
        InputError: as :func:`set_leaves`; an empty set.
    """
    if not rows:
        raise InputError("the hidden set is empty", field="rows")
    return {"format": COMMITMENT_FORMAT, "root": merkle_root(set_leaves(rows, salt)), "n": len(rows),
            "salt_sha256": sha256_bytes(bytes(salt)), "texts_root": merkle_root(texts_leaves(rows)),
            "protocol_sha256": protocol_sha256, "board": board, "created_at": created_at,
            "rules": dict(rules) if rules is not None else None}


def check_reveal(record: object, rows: Sequence[HiddenRow], salt: bytes) -> list[str]:
    """The problems of a revealed set against the launch record (empty: the revealed rows and
    salt are exactly those committed).

    Each problem is one line: a record that is not a commitment (format, missing field), a
    salt other than the committed one, a revealed set of another size, other doc ids or texts,
    or (salt and texts agreeing) a label, arm or tag that differs from the committed one.
    """
    if not isinstance(record, Mapping):
        return [f"the commitment record is not a JSON object but {type(record).__name__}"]
    problems: list[str] = []
    fmt = record.get("format")
    if fmt not in LEAF_FIELDS:
        problems.append(f"the commitment record's format is {str(fmt)[:64]!r}, not {COMMITMENT_FORMAT!r}")
        fmt = COMMITMENT_FORMAT
    missing = [k for k in _RECORD_FIELDS if k not in record]
    if missing:
        problems.append(f"the commitment record lacks {', '.join(missing)}")
    try:
        _check_salt(salt)
        leaves = set_leaves(rows, salt, fmt=str(fmt))
        texts = texts_leaves(rows)
    except InputError as e:
        return [*problems, f"the revealed set cannot be hashed: {e}"]
    salt_ok = sha256_bytes(bytes(salt)) == record.get("salt_sha256")
    if "salt_sha256" in record and not salt_ok:
        problems.append("the revealed salt is not the committed one (its SHA-256 differs from salt_sha256)")
    if "n" in record and record["n"] != len(rows):
        problems.append(f"the revealed set has {len(rows)} rows, the commitment {record['n']}")
    texts_ok = merkle_root(texts) == record.get("texts_root")
    if "texts_root" in record and not texts_ok:
        problems.append("the revealed doc ids or texts differ from those committed (texts_root differs)")
    root = merkle_root(leaves)
    if "root" in record and root != record["root"]:
        what = ("a label, arm, tag, canary marking or stored field (record) differs from the committed one"
                if salt_ok and texts_ok
                else "the salted root differs")
        problems.append(f"{what} (root of the revealed set {root[:16]}..., committed {str(record['root'])[:16]}...)")
    return problems
