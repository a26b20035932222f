"""Ed25519 receipts (veribench.leaderboard.receipts): a receipt checks with the board's key, and
a forged signature, an altered / extra / missing field, another key or bad base64 is refused with
one line naming the field."""

from __future__ import annotations

import base64
import copy
import stat

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from veribench.errors import InputError
from veribench.hashing import canonical_json, sha256_bytes
from veribench.leaderboard.receipts import (
    RECEIPT_FIELDS,
    check_receipt,
    generate_signing_key,
    load_signing_key,
    public_key_pem,
    sign_receipt,
)

FIELDS = {"board": "demo-board", "commitment_sha256": "a" * 64, "team": "team-1",
          "predictions_sha256": sha256_bytes(b'[{"id": "x", "score": 0.5}]'),
          "received_at": "2026-12-05T14:00:00Z", "submission_id": "s-0001", "submission_n": 1, "released": 0.82}


@pytest.fixture(scope="module")
def key(tmp_path_factory):
    p = tmp_path_factory.mktemp("k") / "board.key"
    generate_signing_key(p)
    return load_signing_key(p)


def one_line(e: pytest.ExceptionInfo) -> str:
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_key_file_0600_and_never_overwritten(tmp_path):
    p = tmp_path / "board.key"
    generate_signing_key(p)
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    before = p.read_bytes()
    with pytest.raises(InputError, match="never overwritten") as e:
        generate_signing_key(p)
    assert str(p) in one_line(e)
    assert p.read_bytes() == before


def test_load_refuses_missing_and_non_key(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        load_signing_key(tmp_path / "nope.key")
    (tmp_path / "junk.key").write_text("hello")
    with pytest.raises(InputError, match="not an unencrypted PEM private key"):
        load_signing_key(tmp_path / "junk.key")


def test_signed_receipt_checks_and_signature_is_independent_ed25519(key):
    r = sign_receipt(key, **FIELDS)
    assert set(r) == {*RECEIPT_FIELDS, "key_id", "signature"} and r["tsa_token_b64"] is None
    pem = public_key_pem(key)
    check_receipt(r, pem)  # no exception
    # independent check: cryptography's own verify over the canonical JSON of the other fields
    pub = load_pem_public_key(pem.encode())
    assert isinstance(pub, Ed25519PublicKey)
    body = canonical_json({k: v for k, v in r.items() if k != "signature"}).encode()
    pub.verify(base64.b64decode(r["signature"]), body)
    assert r["key_id"] == sha256_bytes(pub.public_bytes_raw())


@pytest.mark.parametrize("field", [*RECEIPT_FIELDS])
def test_altered_field_refused(key, field):
    r = sign_receipt(key, **FIELDS, tsa_token_b64=base64.b64encode(b"token").decode())
    r[field] = (("b" * 64) if field.endswith("sha256") else None if field == "tsa_token_b64"
                else r[field] + 1 if field in ("submission_n", "released") else r[field] + "x")
    with pytest.raises(InputError, match="does not verify") as e:
        check_receipt(r, public_key_pem(key), source="receipt.json")
    assert "file receipt.json" in one_line(e) and "'signature'" in str(e.value)


def test_forged_signature_refused(key):
    r = sign_receipt(key, **FIELDS)
    forged = copy.deepcopy(r)
    forged["signature"] = base64.b64encode(Ed25519PrivateKey.generate().sign(b"anything")).decode()
    with pytest.raises(InputError, match="does not verify") as e:
        check_receipt(forged, public_key_pem(key))
    one_line(e)
    flipped = copy.deepcopy(r)
    raw = bytearray(base64.b64decode(r["signature"]))
    raw[0] ^= 1
    flipped["signature"] = base64.b64encode(bytes(raw)).decode()
    with pytest.raises(InputError, match="does not verify"):
        check_receipt(flipped, public_key_pem(key))


def test_other_key_refused(key):
    other = Ed25519PrivateKey.generate()
    r = sign_receipt(other, **FIELDS)
    with pytest.raises(InputError, match="another key") as e:
        check_receipt(r, public_key_pem(key))
    assert "'key_id'" in one_line(e)
    # a receipt signed by another key but claiming the board's key_id
    r["key_id"] = sign_receipt(key, **FIELDS)["key_id"]
    with pytest.raises(InputError, match="does not verify"):
        check_receipt(r, public_key_pem(key))


def test_extra_and_missing_field_refused(key):
    r = sign_receipt(key, **FIELDS)
    with pytest.raises(InputError, match="not a receipt field") as e:
        check_receipt({**r, "score": 0.99}, public_key_pem(key))
    assert "'score'" in one_line(e)
    r2 = dict(r)
    del r2["team"]
    with pytest.raises(InputError, match="missing") as e:
        check_receipt(r2, public_key_pem(key))
    assert "'team'" in one_line(e)
    with pytest.raises(InputError, match="JSON object"):
        check_receipt([r], public_key_pem(key))  # type: ignore[arg-type]


@pytest.mark.parametrize("sig", ["not base64!", "", "QUJD", 12])
def test_bad_base64_refused(key, sig):
    r = {**sign_receipt(key, **FIELDS), "signature": sig}
    with pytest.raises(InputError, match="canonical base64") as e:
        check_receipt(r, public_key_pem(key))
    one_line(e)


def test_non_canonical_base64_refused(key):
    r = sign_receipt(key, **FIELDS)
    s = r["signature"]  # 64 bytes -> 88 chars ending "=="; the last data char carries 4 unused bits
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    last = alphabet[alphabet.index(s[-3]) ^ 1]
    r["signature"] = s[:-3] + last + "=="
    assert base64.b64decode(r["signature"]) == base64.b64decode(s)
    with pytest.raises(InputError, match="canonical base64"):
        check_receipt(r, public_key_pem(key))


def test_bad_public_key_and_bad_sign_input(key):
    r = sign_receipt(key, **FIELDS)
    with pytest.raises(InputError, match="not PEM"):
        check_receipt(r, "-----BEGIN PUBLIC KEY-----\nxx\n-----END PUBLIC KEY-----\n")
    with pytest.raises(InputError, match="64 lowercase hex") as e:
        sign_receipt(key, **{**FIELDS, "predictions_sha256": "ABC"})
    assert "'predictions_sha256'" in one_line(e)
    with pytest.raises(InputError, match="non-empty"):
        sign_receipt(key, **{**FIELDS, "team": ""})
    for field, bad, words in (("submission_n", 0, "integer >= 1"), ("submission_n", True, "integer >= 1"),
                              ("released", float("nan"), "finite"), ("released", "0.9", "finite")):
        with pytest.raises(InputError, match=words) as e:
            sign_receipt(key, **{**FIELDS, field: bad})
        assert f"'{field}'" in one_line(e)
