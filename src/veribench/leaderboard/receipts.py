"""Signed submission receipts: Ed25519 (RFC 8032) through ``cryptography``.

A receipt tells a team what the board received and when, and that the board says so: the
board signs the canonical JSON (:func:`veribench.hashing.canonical_json`) of the receipt's
fields with its Ed25519 key. Anyone holding the board's public key checks a receipt offline
(:func:`check_receipt`); no field can be changed, added or dropped without the check failing.

The receipt, a flat JSON object:

========================  ==============================================================
``board``                 the board's name
``commitment_sha256``     SHA-256 (hex) of the board's launch commitment record
``team``                  the submitting team's name
``predictions_sha256``    SHA-256 (hex) of the prediction file's exact bytes
``received_at``           when the board stored the file (ISO 8601 UTC)
``submission_id``         the board's id of the submission
``format``                how the board read the file (``raid``: predictions.json;
                          ``veribench``: a run export)
``submission_n``          its number among the team's submissions (1, 2, ...; a failed one
                          keeps its number)
``released``              the headline the board published for the team after scoring it
                          (the Ladder's released value, null before any), as the board showed
                          it: the reveal's ``ladder.json`` must say the same
``tsa_token_b64``         an RFC 3161 time-stamp token the board obtained for this
                          submission (base64 of its DER), or null
``key_id``                SHA-256 (hex) of the board's raw 32-byte public key
``signature``             Ed25519 signature (base64, 64 bytes) over the canonical JSON of
                          every other field
========================  ==============================================================
"""

from __future__ import annotations

import base64
import binascii
import math
import os
import re
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from veribench.errors import InputError
from veribench.hashing import canonical_json, sha256_bytes

#: The signed fields of a receipt, in the order the table above gives them (besides
#: ``key_id``, which is signed too, and ``signature``, which is not).
RECEIPT_FIELDS: tuple[str, ...] = ("board", "commitment_sha256", "team", "predictions_sha256", "received_at",
                                   "submission_id", "format", "submission_n", "released", "tsa_token_b64")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def generate_signing_key(path: Path) -> None:
    """Write a new Ed25519 private key to ``path`` (PKCS#8 PEM, unencrypted, mode 0600).

    Raises:
        InputError: ``path`` exists (a signing key is never overwritten: receipts signed with it
            could no longer be checked) or cannot be created.
    """
    pem = Ed25519PrivateKey.generate().private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                     serialization.NoEncryption())
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise InputError("a signing key is already there; it is never overwritten (move it away to rotate the "
                         "key, and keep it to check old receipts)", file=str(path)) from None
    except OSError as e:
        raise InputError(f"cannot create the signing key: {e.strerror}", file=str(path)) from None
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
        f.flush()
        os.fsync(f.fileno())


def load_signing_key(path: Path) -> Ed25519PrivateKey:
    """The Ed25519 private key in ``path`` (PKCS#8 PEM, as :func:`generate_signing_key` writes).

    Raises:
        InputError: the file is missing, unreadable, not PEM, encrypted or not an Ed25519 key.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise InputError(f"cannot read the signing key: {e.strerror}", file=str(path)) from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise InputError("not an unencrypted PEM private key", file=str(path)) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise InputError(f"the signing key must be Ed25519, not {type(key).__name__}", file=str(path))
    return key


def _public(key: Ed25519PrivateKey | Ed25519PublicKey) -> Ed25519PublicKey:
    return key.public_key() if isinstance(key, Ed25519PrivateKey) else key


def public_key_pem(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """The public half of ``key`` as SubjectPublicKeyInfo PEM text (what the board publishes)."""
    return _public(key).public_bytes(serialization.Encoding.PEM,
                                     serialization.PublicFormat.SubjectPublicKeyInfo).decode("ascii")


def key_id(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """SHA-256 (hex) of the raw 32-byte Ed25519 public key (RFC 8032 §5.1.5 encoding)."""
    return sha256_bytes(_public(key).public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))


def _signed_bytes(receipt: dict[str, Any]) -> bytes:
    return canonical_json({k: v for k, v in receipt.items() if k != "signature"}).encode("utf-8")


def sign_receipt(key: Ed25519PrivateKey, *, board: str, commitment_sha256: str, team: str, predictions_sha256: str,
                 received_at: str, submission_id: str, submission_n: int, released: float | None,
                 fmt: str = "raid", tsa_token_b64: str | None = None) -> dict[str, Any]:
    """A signed receipt (the fields above, ``key_id`` and ``signature``).

    Raises:
        InputError: a SHA-256 field is not 64 lowercase hex characters, a text field is empty,
            ``submission_n`` not an integer >= 1, or ``released`` not null or a finite number.
    """
    fields: dict[str, Any] = {"board": board, "commitment_sha256": commitment_sha256, "team": team,
                              "predictions_sha256": predictions_sha256, "received_at": received_at,
                              "submission_id": submission_id, "format": fmt, "submission_n": submission_n,
                              "released": released,
                              "tsa_token_b64": tsa_token_b64}
    if isinstance(submission_n, bool) or not isinstance(submission_n, int) or submission_n < 1:
        raise InputError("must be an integer >= 1", record="receipt", field="submission_n")
    if released is not None and (isinstance(released, bool) or not isinstance(released, int | float)
                                 or not math.isfinite(released)):
        raise InputError("must be null or a finite number", record="receipt", field="released")
    for name in ("commitment_sha256", "predictions_sha256"):
        if not isinstance(fields[name], str) or not _HEX64.fullmatch(fields[name]):
            raise InputError("must be a SHA-256: 64 lowercase hex characters", record="receipt", field=name)
    for name in ("board", "team", "received_at", "submission_id", "format"):
        if not isinstance(fields[name], str) or not fields[name]:
            raise InputError("must be a non-empty string", record="receipt", field=name)
    fields["key_id"] = key_id(key)
    fields["signature"] = base64.b64encode(key.sign(_signed_bytes(fields))).decode("ascii")
    return fields


def check_receipt(receipt: dict[str, Any], public_key_pem: str, *, source: str = "receipt") -> None:
    """Check a receipt against the board's public key; return nothing when it holds.

    Args:
        receipt: the receipt as parsed JSON.
        public_key_pem: the board's public key (:func:`public_key_pem`).
        source: what the receipt came from, named in the error (a file name).

    Raises:
        InputError: one line naming the field: not an object, a missing or extra field, a
            ``key_id`` of another key, a signature that is not canonical base64 of 64 bytes, or
            a signature that does not verify (a field was altered, or another key signed it).
    """
    try:
        pub = serialization.load_pem_public_key(public_key_pem.encode("ascii"))
    except (ValueError, TypeError, UnicodeEncodeError, AttributeError):
        raise InputError("the board's public key is not PEM", file=source, field="public key") from None
    if not isinstance(pub, Ed25519PublicKey):
        raise InputError(f"the board's public key must be Ed25519, not {type(pub).__name__}", file=source,
                         field="public key")
    if not isinstance(receipt, dict):
        raise InputError(f"a receipt is a JSON object, not {type(receipt).__name__}", file=source)
    want = {*RECEIPT_FIELDS, "key_id", "signature"}
    missing = sorted(want - receipt.keys())
    extra = sorted(set(receipt) - want)
    if missing:
        raise InputError("missing from the receipt", file=source, field=missing[0])
    if extra:
        raise InputError("not a receipt field (a receipt has exactly: " + ", ".join(sorted(want)) + ")",
                         file=source, field=extra[0])
    if receipt["key_id"] != key_id(pub):
        raise InputError(f"signed by another key ({str(receipt['key_id'])[:16]}...) than the one given "
                         f"({key_id(pub)[:16]}...)", file=source, field="key_id")
    sig_text = receipt["signature"]
    try:
        sig = base64.b64decode(sig_text, validate=True) if isinstance(sig_text, str) else b""
    except (binascii.Error, ValueError):
        sig = b""
    if len(sig) != 64 or base64.b64encode(sig).decode("ascii") != sig_text:
        raise InputError("not the canonical base64 of a 64-byte Ed25519 signature", file=source, field="signature")
    try:
        pub.verify(sig, _signed_bytes(receipt))
    except InvalidSignature:
        raise InputError("does not verify: a field was altered after signing, or another key signed it",
                         file=source, field="signature") from None
    except ValueError:  # canonical_json refuses NaN/Infinity in an altered field
        raise InputError("a field holds a value JSON cannot carry", file=source, field="signature") from None


def launch_record_parts(launch: Any) -> tuple[dict[str, Any], bytes | None]:
    """A saved launch record as ``(commitment record, RFC 3161 token or None)``: either the
    record itself (``GET /commitment``) or ``{"commitment": record, "tsa_token_b64": ...}``
    (the record with its token, base64).

    Raises:
        InputError: neither shape, or a token that is not base64.
    """
    if isinstance(launch, dict) and isinstance(launch.get("commitment"), dict):
        tok = launch.get("tsa_token_b64")
        try:
            token = base64.b64decode(tok, validate=True) if tok is not None else None
        except (ValueError, TypeError):
            raise InputError("not base64", field="tsa_token_b64") from None
        return dict(launch["commitment"]), token
    if isinstance(launch, dict) and "root" in launch:
        return dict(launch), None
    raise InputError("not a launch record: the JSON of GET /commitment, or {\"commitment\": ..., "
                     "\"tsa_token_b64\": ...}", field="commitment")



def commitment_sha256(record: dict[str, Any]) -> str:
    """The SHA-256 (hex) of a commitment record's canonical JSON
    (:func:`veribench.hashing.canonical_json`): what a receipt's ``commitment_sha256`` signs."""
    return sha256_bytes(canonical_json(record).encode("utf-8"))
