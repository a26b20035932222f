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
import ipaddress
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from veribench.detectors.api.http import leaks, safe_token
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


#: ``host[:port]`` as veribench accepts it in ``--tsa``: a DNS name, an IPv4 address or a
#: bracketed IPv6 address, and an optional decimal port; nothing else (no user information,
#: percent-encoding or backslash).
_NETLOC = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
#: A path as veribench keeps it: RFC 3986 path characters only.
_PATH = re.compile(r"(?:/[A-Za-z0-9._~!$&'()*+,;=:@%-]*)*")


def check_url(url: str) -> str:
    """The authority URL as veribench requests it: ``scheme://host[:port]/path`` (kept in
    memory; :func:`stored_url` is what is stored, :func:`authority_name` what is logged).

    ``url`` is parsed (``urllib.parse``) and refused unless it is exactly that: an http(s)
    scheme, a plain host (DNS name, IPv4 or bracketed IPv6: no user information, even
    percent-encoded, no backslash), a port from 1 to 65535, and no query or fragment (they
    often hold API keys and would reach the workspace, its log and every bundle). Refusals
    say what is wrong and never repeat any part of the URL.

    Raises:
        TimestampError: any of the above (one line naming ``--tsa``).
    """
    how = "give scheme://host[:port]/path, such as https://freetsa.org/tsr"
    if any(c.isspace() or not c.isprintable() or c == "\\" for c in url):
        raise TimestampError(f"--tsa: the URL holds a space, control character or backslash: {how}")
    try:
        u = urlsplit(url)
    except ValueError:
        raise TimestampError(f"--tsa: not a valid URL: {how}") from None
    scheme = u.scheme.lower()
    if scheme not in ("http", "https"):
        raise TimestampError(f"--tsa: the scheme is not http or https: {how}")
    if "@" in u.netloc or "%" in u.netloc:
        raise TimestampError(f"--tsa: the URL holds user information (credentials before '@', possibly "
                             f"percent-encoded); they would be written into the workspace and its log: remove them "
                             f"from the URL and set {USER_ENV} and {PASSWORD_ENV} instead")
    if not u.netloc or not _NETLOC.fullmatch(u.netloc):
        raise TimestampError(f"--tsa: the host is not a plain DNS name, IPv4 or [IPv6] address with an optional "
                             f"port: {how}")
    try:
        port = u.port
    except ValueError:
        port = 0
    if port == 0 or (":" in u.netloc.rsplit("]", 1)[-1] and port is None):
        raise TimestampError(f"--tsa: the port is not a number from 1 to 65535: {how}")
    if "?" in url or "#" in url:
        raise TimestampError(f"--tsa: the URL has a query ('?') or fragment ('#'), which may hold keys and would be "
                             f"written into the workspace and its log: {how} (credentials go in {USER_ENV} and "
                             f"{PASSWORD_ENV})")
    if not _PATH.fullmatch(u.path):
        raise TimestampError(f"--tsa: the path holds characters a URL path cannot: {how}")
    host = u.hostname or ""
    if u.netloc.startswith("["):
        try:
            host = f"[{ipaddress.IPv6Address(host)}]"
        except ValueError:
            raise TimestampError(f"--tsa: the host is not a valid IPv6 address: {how}") from None
    return f"{scheme}://{host}{f':{port}' if port is not None else ''}{u.path or '/'}"


def stored_url(url: str) -> str:
    """The authority URL as veribench stores and prints it: ``scheme://host[:port]`` (from
    :func:`check_url`; raises as it does). The path stays in memory, for the request only:
    some authorities take an account key in the path (``/tsr/KEY``), and what is stored in
    the workspace reaches its backups and copies. The authority is still named in full by
    host and port (:func:`authority_name`); credentials belong in :data:`USER_ENV` /
    :data:`PASSWORD_ENV`."""
    u = urlsplit(check_url(url))
    return f"{u.scheme}://{u.netloc}"


def authority_name(url: str) -> str:
    """The authority as the log names it: host and port only (no user information, path or query)."""
    u = urlsplit(check_url(url))
    return f"{u.hostname}:{u.port}" if u.port else str(u.hostname)


def credentials() -> list[str]:
    """The TSA credentials in every form they travel or could be echoed in: the user, the
    password, ``user:password`` and its base64 as sent in the ``Authorization: Basic`` header
    (the secret filter, :func:`veribench.detectors.api.http.leaks`, also finds each in other
    encodings). Empty when neither variable is set."""
    import base64

    user, pw = os.environ.get(USER_ENV) or "", os.environ.get(PASSWORD_ENV) or ""
    if not user and not pw:
        return []
    pair = f"{user}:{pw}"
    return [x for x in (user, pw, pair, base64.b64encode(pair.encode("utf-8")).decode("ascii")) if x]


def _shown(value: Any, pattern: str = r"[\w.+-]+/[\w.+-]+", limit: int = 64) -> str:
    """A value the authority supplied, fit for an error message: shown only when it matches the
    short safe ``pattern`` and holds no credential in any encoding, else ``(withheld: ...)``."""
    return safe_token(value, credentials(), pattern, limit)


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

    url = check_url(url)
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
        raise TimestampError(f"timestamp authority {name}: answered {_shown(ctype)}, not {REPLY_TYPE}")
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
        raise TimestampError(f"not an RFC 3161 timestamp response ({_openssl_reason(str(e))})") from None
    if PKIStatus(resp.status) not in (PKIStatus.GRANTED, PKIStatus.GRANTED_WITH_MODS):
        why = "; ".join(resp.status_string) if resp.status_string else ""
        why = _shown(why, r"[\w .,;:()'-]+", 120) if why else ""
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
        signer=_signer_name(signer),
        signer_sha256=_der_sha256(signer) if signer is not None else None, signature_checked=checked,
        anchor_sha256=[_der_sha256(r) for r in roots])


def _signer_name(signer: Any) -> str | None:
    """The signing certificate's subject (RFC 4514), or a withheld marker when the authority put
    a credential in it (the subject is stored with the commitment)."""
    if signer is None:
        return None
    name = signer.subject.rfc4514_string()
    return "(withheld: the subject held a credential)" if leaks(name, credentials()) else name


def _openssl_reason(message: str) -> str:
    """OpenSSL's own words (``data: "Verify error: ..."``) out of an error stack, else the message cut short;
    withheld when it holds a credential (the stack can quote the authority's certificate)."""
    m = re.search(r'data: "([^"]+)"', message)
    if m:
        message = m.group(1)
    if leaks(message, credentials()):
        return "(withheld: unexpected value)"
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


def _ca_constraints(policy: Any, cert: Any, bc: Any) -> None:
    """A certificate that issues others must say it is a CA (basic constraints, ``cA`` true)."""
    if not bc.ca:
        raise ValueError("not a CA certificate")


@functools.lru_cache(maxsize=8)
def _store(certificates: tuple[Any, ...]) -> Any:
    from cryptography.x509.verification import Store

    return Store(list(certificates))


def trusted_chain(signer: Any, untrusted: Sequence[Any], roots: Sequence[Any], at: datetime) -> list[Any] | None:
    """The path from ``signer`` to one of ``roots`` (signer first, root last), or None.

    Built and checked by ``cryptography.x509.verification``: only ``roots`` are in the
    trust store; ``untrusted`` (the token's own certificates and those carried with it)
    can only link the signer to a root, each link's signature checked, and can never end
    a path, whatever their names say (a carried certificate whose issuer differs from its
    subject only by case or spaces is still untrusted). Validity is judged at ``at``
    (the token's time); every issuing certificate must be a CA. The signer's
    time-stamping key usage is checked by :func:`check_token`.
    """
    from cryptography import x509
    from cryptography.x509.verification import Criticality, ExtensionPolicy, PolicyBuilder, VerificationError

    if not roots:
        return None
    ca_policy = ExtensionPolicy.permit_all().require_present(x509.BasicConstraints, Criticality.AGNOSTIC,
                                                             _ca_constraints)
    try:
        verifier = (PolicyBuilder().store(_store(tuple(roots))).time(at)
                    .extension_policies(ca_policy=ca_policy, ee_policy=ExtensionPolicy.permit_all())
                    .build_client_verifier())
        return list(verifier.verify(signer, list(untrusted)).chain)
    except (VerificationError, ValueError, TypeError):
        return None


def _embedded(token: bytes) -> tuple[Any, list[Any]]:
    """(the signer's certificate or None, the token's other certificates)."""
    from cryptography import x509
    from rfc3161_client import decode_timestamp_response

    sd = decode_timestamp_response(token).signed_data
    certs = [x509.load_der_x509_certificate(c) for c in sd.certificates]
    si = next(iter(sd.signer_infos), None)
    signer = next((c for c in certs if si is not None and c.issuer == si.issuer
                   and c.serial_number == si.serial_number), None)
    return signer, [c for c in certs if c is not signer]


def _anchored(token: bytes, message: bytes, at: datetime, signer: Any, untrusted: Sequence[Any],
              roots: Sequence[Any]) -> Any:
    """The root of ``roots`` that anchors ``token``, or None: a checked path from the signer to that
    root (:func:`trusted_chain`), then the CMS signature and time-stamping usage
    (:func:`check_token`) with only that root trusted and only that path's checked links
    as intermediates."""
    if signer is None:
        return None
    chain = trusted_chain(signer, untrusted, roots, at)
    if not chain:
        return None
    root = chain[-1]
    try:
        check_token(token, message, roots=[root], intermediates=chain[1:-1])
    except TimestampError:
        return None
    return root


def split_anchors(certificates: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """(trust anchors, links) of one set of certificates a user supplied (e.g. one
    ``--tsa-root`` file holding a root and its intermediate, in any order).

    A certificate directly issued by another certificate of the same set (its issuer name
    equals that one's subject and that one's key verifies its signature:
    ``Certificate.verify_directly_issued_by``) is a link: it may join the signer to an
    anchor, never end a path. The others are anchors. Without this, a root and its
    intermediate in one file ended the path at the intermediate, which the CMS check
    (``rfc3161-client``, OpenSSL) cannot use as a root, and a good token read as forged.
    An intermediate supplied alone stays an anchor for the path but cannot be checked
    that way: the date is then not proven (the CLI refuses such a file up front).
    """
    links = [c for c in certificates if any(o is not c and _issued_by(c, o) for o in certificates)]
    return [c for c in certificates if not any(c is x for x in links)], links


def _issued_by(cert: Any, issuer: Any) -> bool:
    from cryptography.exceptions import InvalidSignature

    if cert.issuer != issuer.subject or cert == issuer:
        return False
    try:
        cert.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def is_self_issued(cert: Any) -> bool:
    """Whether ``cert`` names itself as its issuer (a root; RFC 5280 section 3.2)."""
    return bool(cert.issuer == cert.subject)


def anchor_token(token: bytes, message: bytes, trusted: Sequence[TrustedRoots],
                 carried: Sequence[Any] = ()) -> Anchor:
    """Check that ``token`` stamps exactly ``message`` and say whether its date is proven.

    Steps: (1) :func:`check_token` without roots: the token parses, is granted, and its
    SHA-256 imprint equals ``sha256(message)`` (a token over other bytes is refused
    whoever signed it); (2) for each set of ``trusted`` in order, the CMS signature and the
    chain up to one of its roots, with the signer's critical ``id-kp-timeStamping`` usage
    (``rfc3161-client``), the path built by :func:`trusted_chain` with only that set's roots
    trusted: the token's and the carried certificates are untrusted links, never the end of a
    path; the first set that verifies anchors the date;
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
    try:
        signer, others = _embedded(token)
    except ValueError:
        signer, others = None, []
    issuers = {c.issuer for c in [*others, *carried]} | ({signer.issuer} if signer is not None else set())
    untrusted = [*others, *carried]
    a = Anchor(info=info, consulted=[t.name for t in trusted])
    for t in trusted:
        anchors, links = split_anchors(t.certificates)
        if not anchors:
            continue
        # only a root (self-issued) named by the chain makes a failed check a forgery: an
        # intermediate supplied alone cannot be checked as an anchor (split_anchors), not proven
        named = [r for r in anchors if r.subject in issuers and is_self_issued(r)]
        root = _anchored(token, message, gen_time(info), signer, [*untrusted, *links], anchors)
        if root is not None:
            a.trusted_by = t.name
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
