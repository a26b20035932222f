"""RFC 3161 timestamps: ask an authority to stamp bytes, and check a token offline.

The client is ``rfc3161-client`` (Trail of Bits): it builds the request, parses the
``TimeStampResp`` and verifies the CMS signature, the certificate chain up to a root
the caller trusts, the signer's critical ``id-kp-timeStamping`` key usage, the nonce
and the message imprint. veribench adds only the HTTP POST (RFC 3161 section 3.4,
``application/timestamp-query``) and the rule that a token for other bytes is refused.

A token stamps the SHA-256 of a commitment record's bytes (see
:mod:`veribench.commit.service`). It proves the record existed at the authority's
``gen_time``; checking it needs no network, only the authority's root certificate.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from veribench.errors import VeribenchError

#: Media types of RFC 3161 over HTTP (section 3.4).
QUERY_TYPE = "application/timestamp-query"
REPLY_TYPE = "application/timestamp-reply"
#: The largest response veribench reads from an authority (tokens are a few kB).
MAX_RESPONSE_BYTES = 1 << 20


#: Environment variables holding an authority's HTTP Basic credentials (never a URL's
#: ``user:password@``, which would reach the workspace, the log and every bundle).
USER_ENV = "VERIBENCH_TSA_USER"
PASSWORD_ENV = "VERIBENCH_TSA_PASSWORD"


class TimestampError(VeribenchError):
    """An authority that cannot be reached, refuses, or returns a token that does not verify."""


def check_url(url: str) -> str:
    """``url`` if it is an http(s) URL without credentials.

    Raises:
        TimestampError: another scheme, no host, or user information (``user:password@``)
            in the URL; the message never repeats the credentials.
    """
    try:
        u = urlsplit(url)
        host = u.hostname
    except ValueError:
        raise TimestampError("--tsa: not a valid URL (give https://host/path)") from None
    if u.scheme not in ("http", "https") or not host:
        raise TimestampError(f"--tsa: {u.scheme or 'no'} scheme or no host: give an http(s) URL such as "
                             "https://freetsa.org/tsr")
    if u.username is not None or u.password is not None or "@" in u.netloc:
        raise TimestampError(f"--tsa: the URL of {host} holds credentials (user information before '@'); "
                             f"they would be written into the workspace and its log: remove them from the URL and "
                             f"set {USER_ENV} and {PASSWORD_ENV} instead")
    return url


def authority_name(url: str) -> str:
    """The authority as the log names it: host and port only (no user information, path or query)."""
    u = urlsplit(check_url(url))
    return f"{u.hostname}:{u.port}" if u.port else str(u.hostname)


def _auth() -> Any:
    """HTTP Basic credentials from :data:`USER_ENV` / :data:`PASSWORD_ENV`, or None."""
    user, pw = os.environ.get(USER_ENV), os.environ.get(PASSWORD_ENV)
    if not user and not pw:
        return None
    import httpx

    return httpx.BasicAuth(user or "", pw or "")


@dataclass
class TokenInfo:
    """What a checked token says.

    Attributes:
        gen_time: the authority's time (UTC, ISO 8601).
        serial: the token's serial number (decimal text).
        policy: the authority's policy OID.
        imprint_sha256: hex SHA-256 the token stamps (equals the stamped bytes' hash).
        signer: the signing certificate's subject (RFC 4514).
        signer_sha256: SHA-256 of the signing certificate (DER), or None when not embedded.
        signature_checked: True when the signature and chain were verified against ``roots``.
        anchor_sha256: SHA-256 (DER) of the trusted roots used, in order.
    """

    gen_time: str
    serial: str
    policy: str
    imprint_sha256: str
    signer: str | None
    signer_sha256: str | None
    signature_checked: bool
    anchor_sha256: list[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_certificates(pem_or_der: bytes, source: str = "certificate file") -> list[Any]:
    """Certificates from PEM (one or more) or DER bytes.

    Raises:
        TimestampError: the bytes hold no certificate.
    """
    from cryptography import x509

    try:
        if b"-----BEGIN" in pem_or_der:
            certs = x509.load_pem_x509_certificates(pem_or_der)
        else:
            certs = [x509.load_der_x509_certificate(pem_or_der)]
    except ValueError as e:
        raise TimestampError(f"{source}: not a PEM or DER certificate ({e})") from None
    if not certs:
        raise TimestampError(f"{source}: holds no certificate")
    return certs


def _der_sha256(cert: Any) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding

    return hashlib.sha256(cert.public_bytes(Encoding.DER)).hexdigest()


def request_token(url: str, message: bytes, *, timeout: float = 30.0, client: Any = None) -> tuple[bytes, int]:
    """POST a timestamp request for ``sha256(message)`` to ``url``.

    Returns:
        (the response's DER bytes, the request nonce).

    Raises:
        TimestampError: a URL with credentials, no answer, an HTTP error, a wrong media type
            or an oversized reply (messages name the authority by host only).
    """
    import httpx
    from rfc3161_client import HashAlgorithm, TimestampRequestBuilder

    check_url(url)
    name = authority_name(url)
    req = TimestampRequestBuilder().data(message).hash_algorithm(HashAlgorithm.SHA256).build()
    own = client is None
    c = client or httpx.Client(timeout=timeout)
    try:
        r = c.post(url, content=req.as_bytes(), headers={"Content-Type": QUERY_TYPE, "Accept": REPLY_TYPE},
                   auth=_auth())
    except httpx.HTTPError as e:
        raise TimestampError(f"timestamp authority {name}: no answer ({type(e).__name__})") from None
    finally:
        if own:
            c.close()
    if r.status_code != 200:
        raise TimestampError(f"timestamp authority {name}: HTTP {r.status_code}")
    if len(r.content) > MAX_RESPONSE_BYTES:
        raise TimestampError(f"timestamp authority {name}: response of {len(r.content)} bytes is too large")
    ctype = (r.headers.get("content-type") or "").split(";")[0].strip()
    if ctype and ctype != REPLY_TYPE:
        raise TimestampError(f"timestamp authority {name}: answered {ctype!r}, not {REPLY_TYPE}")
    return r.content, int(req.nonce)


def check_token(token: bytes, message: bytes, *, roots: Sequence[Any] = (), intermediates: Sequence[Any] = (),
                nonce: int | None = None, require_signature: bool = False) -> TokenInfo:
    """Check that ``token`` (a DER ``TimeStampResp``) stamps exactly ``message``.

    Always: the token parses, its status is granted, its imprint is SHA-256 and equals
    ``sha256(message)`` (a token for other bytes is refused), and the nonce matches
    when given. With ``roots``: the CMS signature, the chain to a root, the signer's
    critical time-stamping key usage (``rfc3161-client``'s verifier).

    Raises:
        TimestampError: any of the above fails, or ``require_signature`` without roots.
    """
    from rfc3161_client import PKIStatus, VerificationError, VerifierBuilder, decode_timestamp_response

    try:
        resp = decode_timestamp_response(token)
    except Exception as e:  # the Rust parser raises ValueError subclasses
        raise TimestampError(f"not an RFC 3161 timestamp response ({e})") from None
    if PKIStatus(resp.status) not in (PKIStatus.GRANTED, PKIStatus.GRANTED_WITH_MODS):
        why = "; ".join(resp.status_string) if resp.status_string else ""
        raise TimestampError(f"the authority did not grant a token (status {resp.status}{': ' + why if why else ''})")
    info = resp.tst_info
    imprint = info.message_imprint
    if imprint.hash_algorithm.dotted_string != "2.16.840.1.101.3.4.2.1":
        raise TimestampError(f"token stamps a {imprint.hash_algorithm.dotted_string} digest, not SHA-256")
    want = hashlib.sha256(message).digest()
    if imprint.message != want:
        raise TimestampError(f"token stamps other bytes (imprint {imprint.message.hex()[:16]}…, the record's "
                             f"SHA-256 is {want.hex()[:16]}…)")
    if nonce is not None and info.nonce != nonce:
        raise TimestampError("token nonce differs from the request's (a replayed or foreign token)")
    from cryptography import x509

    embedded = [x509.load_der_x509_certificate(c) for c in resp.signed_data.certificates]
    signer = None
    if embedded:
        si = next(iter(resp.signed_data.signer_infos), None)
        signer = next((c for c in embedded if si is not None and c.issuer == si.issuer
                       and c.serial_number == si.serial_number), None)
    checked = False
    if roots:
        b = VerifierBuilder(roots=list(roots), intermediates=list(intermediates))
        if nonce is not None:
            b = b.nonce(nonce)
        try:
            b.build().verify_message(resp, message)
        except (VerificationError, ValueError) as e:
            raise TimestampError(f"token signature does not verify against the authority's certificate ({e})") from None
        checked = True
    elif require_signature:
        raise TimestampError("cannot check the token's signature: no authority certificate to trust (pass the "
                             "authority's root certificate)")
    gen = info.gen_time
    if gen.tzinfo is None:
        gen = gen.replace(tzinfo=UTC)
    return TokenInfo(
        gen_time=gen.astimezone(UTC).isoformat().replace("+00:00", "Z"), serial=str(info.serial_number),
        policy=info.policy.dotted_string, imprint_sha256=imprint.message.hex(),
        signer=signer.subject.rfc4514_string() if signer is not None else None,
        signer_sha256=_der_sha256(signer) if signer is not None else None, signature_checked=checked,
        anchor_sha256=[_der_sha256(r) for r in roots])


def gen_time(info: TokenInfo) -> datetime:
    """The token's time as an aware datetime."""
    return datetime.fromisoformat(info.gen_time.replace("Z", "+00:00"))
