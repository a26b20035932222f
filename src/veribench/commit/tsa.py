"""RFC 3161 timestamps: ask an authority to stamp bytes, and check a token offline.

The client is ``rfc3161-client`` (Trail of Bits): it builds the request, parses the
``TimeStampResp`` and verifies the CMS signature, the certificate chain up to a root
the caller trusts, the signer's critical ``id-kp-timeStamping`` key usage, the nonce
and the message imprint. veribench adds only the HTTP POST (RFC 3161 section 3.4,
``application/timestamp-query``) and the rule that a token for other bytes is refused.

A token stamps the SHA-256 of a commitment record's bytes (see
:mod:`veribench.commit.service`). It proves the record existed at the authority's
``gen_time`` only to someone who trusts the authority: :func:`anchor_token` counts a
token as an anchor only when its certificate chain ends at a root the verifying user
trusts (:class:`TrustedRoots`: roots the user supplied, or the pinned public list,
:func:`public_roots`). A certificate carried beside the token (a bundle's
``commitments/vK.roots.pem``) is information, never trust: anyone can make an authority
and put its root there. Checking needs no network.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
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
            raise TimestampError(f"token signature does not verify against the authority's certificate "
                                 f"({_openssl_reason(str(e))})") from None
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


def _openssl_reason(message: str) -> str:
    """OpenSSL's own words (``data: "Verify error: ..."``) out of an error stack, else the message cut short."""
    m = re.search(r'data: "([^"]+)"', message)
    if m:
        return m.group(1)
    return message if len(message) <= 200 else message[:197] + "..."


def gen_time(info: TokenInfo) -> datetime:
    """The token's time as an aware datetime."""
    return datetime.fromisoformat(info.gen_time.replace("Z", "+00:00"))


# -- trust: which roots make a token's date proven ---------------------------------------------

#: The pinned public list's name when ``certifi`` cannot be read (no public root is trusted then).
NO_PUBLIC_LIST = "no public list (certifi is not installed)"


@dataclass(frozen=True)
class TrustedRoots:
    """Root certificates the verifying user trusts, and where that trust comes from.

    Attributes:
        name: what the verdict names, e.g. ``"--tsa-root tsa-root.pem"`` or
            ``"certifi 2026.10.19 (Mozilla CA bundle)"``.
        certificates: ``cryptography`` certificates; each may end a token's chain.
    """

    name: str
    certificates: tuple[Any, ...]


@functools.lru_cache(maxsize=1)
def public_roots() -> TrustedRoots:
    """The pinned public list: the roots of ``certifi``'s copy of Mozilla's CA bundle, named
    with certifi's version (``certifi 2026.10.19 (Mozilla CA bundle)``).

    A certificate of the bundle that ``cryptography`` cannot parse is left out (never
    trusted). With no ``certifi``,
    the list is empty and named :data:`NO_PUBLIC_LIST`. Read once per process.
    """
    try:
        import certifi

        pem = Path(certifi.where()).read_bytes()
        version = str(getattr(certifi, "__version__", "unknown"))
    except (ImportError, OSError):
        return TrustedRoots(NO_PUBLIC_LIST, ())
    from cryptography import x509

    certs = []
    for block in re.findall(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", pem, flags=re.S):
        with warnings.catch_warnings():  # a few Mozilla roots carry a non-positive serial: deprecated, still valid
            warnings.simplefilter("ignore")
            try:
                certs.append(x509.load_pem_x509_certificate(block))
            except ValueError:
                continue
    return TrustedRoots(f"certifi {version} (Mozilla CA bundle)", tuple(certs))


@dataclass
class Anchor:
    """The verdict on one token's date (:func:`anchor_token`).

    Attributes:
        info: what the token says (its imprint already checked against the stamped bytes).
        trusted_by: the :class:`TrustedRoots` name whose root ends the token's chain, or
            None: no trusted root does, so the date is NOT proven.
        root: that root's subject (RFC 4514), when found.
        root_sha256: SHA-256 of that root (DER), when found.
        carried_signature: the token's signature verifies against the certificates carried
            with it (True), or none were carried (None). Information only: a carried
            certificate never makes a date proven.
        consulted: the names of the trusted sets tried, in order.
    """

    info: TokenInfo
    trusted_by: str | None = None
    root: str | None = None
    root_sha256: str | None = None
    carried_signature: bool | None = None
    consulted: list[str] = field(default_factory=list)

    @property
    def proven(self) -> bool:
        """The date is proven: the chain ends at a root the verifying user trusts."""
        return self.trusted_by is not None

    def to_dict(self) -> dict[str, Any]:
        return {"gen_time": self.info.gen_time, "signer": self.info.signer, "proven": self.proven,
                "trusted_by": self.trusted_by, "root": self.root, "root_sha256": self.root_sha256,
                "carried_signature": self.carried_signature, "consulted": self.consulted}


def _self_issued(cert: Any) -> bool:
    return bool(cert.subject == cert.issuer)


def _is_ca(cert: Any) -> bool:
    from cryptography import x509

    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


def path_hints(carried: Sequence[Any]) -> list[Any]:
    """The carried certificates that may only help build a path, never end one: CA
    certificates that are not self-issued (subject differs from issuer).

    ``rfc3161-client`` hands its roots and intermediates to OpenSSL as one trusted set, and
    OpenSSL ends a chain at a trusted self-issued certificate without checking that
    certificate's own signature; a certificate that is not self-issued cannot end a chain
    (no partial chains), so it is safe to pass: the chain through it still has to reach a
    trusted root, each link signed.
    """
    return [c for c in carried if not _self_issued(c) and _is_ca(c)]


def _embedded(token: bytes) -> list[Any]:
    from cryptography import x509
    from rfc3161_client import decode_timestamp_response

    return [x509.load_der_x509_certificate(c) for c in decode_timestamp_response(token).signed_data.certificates]


def _verifies(token: bytes, message: bytes, roots: Sequence[Any], hints: Sequence[Any]) -> bool:
    try:
        check_token(token, message, roots=roots, intermediates=hints)
    except TimestampError:
        return False
    return True


def anchor_token(token: bytes, message: bytes, trusted: Sequence[TrustedRoots],
                 carried: Sequence[Any] = ()) -> Anchor:
    """Check that ``token`` stamps exactly ``message`` and say whether its date is proven.

    Steps: (1) :func:`check_token` without roots: the token parses, is granted, and its
    SHA-256 imprint equals ``sha256(message)`` (a token over other bytes is refused
    whoever signed it); (2) for each set of ``trusted`` in order, the CMS signature and the
    chain up to one of its roots, with the signer's critical ``id-kp-timeStamping`` usage
    (``rfc3161-client``); the carried certificates take part only as path hints
    (:func:`path_hints`), never as roots; the first set that verifies anchors the date;
    (3) otherwise, with ``carried`` certificates, the signature must verify against them
    (a token that does not is damaged or forged), and the date is NOT proven.

    Args:
        token: DER ``TimeStampResp``.
        message: the stamped bytes (a commitment record).
        trusted: the roots the verifying user trusts, most specific first.
        carried: certificates that came with the token (a bundle's ``vK.roots.pem``).

    Returns:
        The :class:`Anchor` (``proven`` only with a trusted root at the chain's end).

    Raises:
        TimestampError: the token does not parse, was not granted, stamps other bytes; its
            chain names a trusted root by subject but does not verify against it (a forged
            token or an authority impersonating that root); or it does not verify against
            the certificates carried with it.
    """
    info = check_token(token, message)
    hints = path_hints(carried)
    try:
        issuers = {c.issuer for c in [*_embedded(token), *carried]}
    except ValueError:
        issuers = set()
    a = Anchor(info=info, consulted=[t.name for t in trusted])
    for t in trusted:
        if not t.certificates:
            continue
        named = [r for r in t.certificates if r.subject in issuers]
        if _verifies(token, message, t.certificates, hints):
            root = next((r for r in named if _verifies(token, message, [r], hints)), None)
            a.trusted_by = t.name
            if root is not None:
                a.root, a.root_sha256 = root.subject.rfc4514_string(), _der_sha256(root)
            return a
        if named:
            raise TimestampError(
                f"the token's certificate chain names {named[0].subject.rfc4514_string()!r}, a root you trust "
                f"({t.name}), but its signature does not verify against that root (a forged token, an authority "
                "impersonating that root, or a missing intermediate certificate)")
    if carried:
        try:
            check_token(token, message, roots=carried)
        except TimestampError as e:
            raise TimestampError(f"{e} (the certificate carried with the token)") from None
        a.carried_signature = True
    return a
