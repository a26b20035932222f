"""A certificate carried beside a token never ends its chain, whatever its names say (issue 24, H1).

OpenSSL compares names after case folding and space collapsing; ``cryptography`` compares
them exactly. A CA whose issuer differs from its subject only that way once passed as a
"path hint" (not self-issued for veribench), was put into OpenSSL's trusted set, ended the
chain there unchecked, and the forger's token was reported proven by the public list.
"""

from __future__ import annotations

import datetime as dt

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.bundles.tsa_server import Authority, make_authority
from veribench.commit import tsa

MESSAGE = b"a commitment record\n"


def _name(*attrs: tuple[x509.ObjectIdentifier, str, object]) -> x509.Name:
    return x509.Name([x509.NameAttribute(oid, value, *([tag] if tag is not None else [])) for oid, value, tag in attrs])


def _cn(value: str, tag: object = None) -> x509.Name:
    return _name((NameOID.COMMON_NAME, value, tag))


def _forger(subject: x509.Name, issuer: x509.Name) -> Authority:
    """An authority whose CA says ``subject`` / ``issuer`` (self-signed with its own key)."""
    now = dt.datetime.now(dt.UTC)
    ck = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(ck.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
          .not_valid_after(now + dt.timedelta(days=3000))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
          .sign(ck, hashes.SHA256()))
    k = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_cn("Evil TSA")).issuer_name(ca.subject).public_key(k.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=3000))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True)
            .sign(ck, hashes.SHA256()))
    a = Authority()
    a.ca, a.cert, a.key = ca, cert, k
    return a


_P = x509.name._ASN1Type.PrintableString
_U = x509.name._ASN1Type.UTF8String
CASES = {
    "as-reported": (_cn("Evil Root"), _cn("EVIL  root")),
    "case-only": (_cn("Evil Root"), _cn("EVIL ROOT")),
    "extra-spaces": (_cn("Evil Root"), _cn("  Evil   Root ")),
    "printable-vs-utf8": (_cn("Evil Root", _P), _cn("Evil Root", _U)),
    "attribute-order": (_name((NameOID.ORGANIZATION_NAME, "Evil", None), (NameOID.COMMON_NAME, "Evil Root", None)),
                        _name((NameOID.COMMON_NAME, "evil root", None), (NameOID.ORGANIZATION_NAME, "EVIL", None))),
    "truly-self-issued": (_cn("Evil Root"), _cn("Evil Root")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_carried_ca_never_anchors_a_token_whatever_its_names(case):
    forger = _forger(*CASES[case])
    token = forger.stamp(MESSAGE)
    other = tsa.TrustedRoots("--tsa-root other.pem", (make_authority("another authority")[0],))
    for trusted in ([tsa.public_roots()], [other], [other, tsa.public_roots()]):
        if case == "attribute-order":  # not self-issued for OpenSSL either: refused as a chain that does not verify
            with pytest.raises(tsa.TimestampError, match="carried with the token"):
                tsa.anchor_token(token, MESSAGE, trusted, carried=[forger.ca])
            continue
        a = tsa.anchor_token(token, MESSAGE, trusted, carried=[forger.ca])
        assert not a.proven and a.trusted_by is None and a.root is None, (case, a.to_dict())
        assert a.carried_signature is True  # information only: the carried CA does sign the token
    if case == "attribute-order":
        return
    # trusting the forger's CA yourself is the only way to anchor it
    own = tsa.TrustedRoots("--tsa-root forger.pem", (forger.ca,))
    a = tsa.anchor_token(token, MESSAGE, [own], carried=[forger.ca])
    assert a.proven and a.trusted_by == "--tsa-root forger.pem"


def test_a_carried_intermediate_still_links_the_signer_to_a_trusted_root():
    """The carried certificates stay usable as untrusted links (root -> intermediate -> signer)."""
    forger = Authority(cn="chain TSA", intermediate=True)
    token = forger.stamp(MESSAGE)
    own = tsa.TrustedRoots("--tsa-root root.pem", (forger.ca,))
    assert not tsa.anchor_token(token, MESSAGE, [tsa.public_roots()], carried=[forger.ca, forger.intermediate]).proven
    a = tsa.anchor_token(token, MESSAGE, [own], carried=[forger.intermediate])
    assert a.proven and a.root == forger.ca.subject.rfc4514_string()
    # the intermediate alone, trusted or not, is never a root for someone who trusts only the public list
    assert tsa.trusted_chain(forger.cert, [forger.intermediate], [forger.ca],
                             dt.datetime.now(dt.UTC))[-1] == forger.ca
    assert tsa.trusted_chain(forger.cert, [forger.intermediate, forger.ca], list(tsa.public_roots().certificates),
                             dt.datetime.now(dt.UTC)) is None
