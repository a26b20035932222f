"""A real RFC 3161 timestamp authority on 127.0.0.1, for the tests only.

It answers ``application/timestamp-query`` POSTs with ``TimeStampResp`` tokens signed
by an ECDSA P-256 key whose certificate (critical EKU ``id-kp-timeStamping``) is issued
by a throw-away root CA, exactly as a public TSA does (RFC 3161, with the RFC 5816
``signingCertificateV2`` attribute). ASN.1 is built with ``asn1crypto`` (its ``tsp`` and
``cms`` modules), keys and signatures come from ``cryptography``. Nothing here is used
by veribench itself: veribench reads tokens with ``rfc3161-client``.

``mode`` makes the authority misbehave on purpose: ``"wrong_imprint"`` stamps other
bytes than it was asked to, ``"rejection"`` refuses every request. A forger's authority is
made the same way: any names (``cn``, those of a root someone trusts included), a chain
through an intermediate (``intermediate``), the intermediate embedded in its tokens or not
(``embed_chain``), and any clock (``clock``: a backdated date is one argument away).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from asn1crypto import algos, cms, core, tsp
from asn1crypto import x509 as ax509
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

POLICY = "1.3.6.1.4.1.57264.2"


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn), x509.NameAttribute(NameOID.ORGANIZATION_NAME,
                                                                                        "veribench tests")])


def make_authority(cn: str = "veribench test TSA", valid_from: dt.datetime | None = None):
    """(root CA cert, TSA cert, TSA private key), valid for ten years from the day before
    ``valid_from`` (default now)."""
    now = valid_from or dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name(cn + " root")).issuer_name(_name(cn + " root"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=3650))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return ca, cert, key


def make_chain(cn: str = "veribench test TSA", valid_from: dt.datetime | None = None):
    """(root CA cert, intermediate CA cert, TSA cert, TSA private key): a three-level authority,
    valid like :func:`make_authority`'s."""
    now = valid_from or dt.datetime.now(dt.UTC)
    root_key = ec.generate_private_key(ec.SECP256R1())

    def ca_cert(subject, key, issuer, issuer_key, path_length):
        return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
                .not_valid_after(now + dt.timedelta(days=3650))
                .add_extension(x509.BasicConstraints(ca=True, path_length=path_length), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                             key_encipherment=False, data_encipherment=False, key_agreement=False,
                                             key_cert_sign=True, crl_sign=True, encipher_only=False,
                                             decipher_only=False), critical=True)
                .sign(issuer_key, hashes.SHA256()))

    root = ca_cert(_name(cn + " root"), root_key, _name(cn + " root"), root_key, 1)
    inter_key = ec.generate_private_key(ec.SECP256R1())
    inter = ca_cert(_name(cn + " intermediate"), inter_key, root.subject, root_key, 0)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(inter.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True)
            .sign(inter_key, hashes.SHA256()))
    return root, inter, cert, key


class Authority:
    """The signing half: request bytes in, response bytes out.

    ``cn``: the names of the authority and its root (``cn + " root"``); ``intermediate``: sign
    through an intermediate CA (``self.intermediate``); ``embed_chain``: put the intermediate
    in each token beside the signing certificate; ``clock``: the authority's time (default
    now, UTC) - a backdating forger's authority says whatever date it likes, with
    certificates valid from then (``valid_from``).
    """

    def __init__(self, mode: str = "ok", *, cn: str = "veribench test TSA", intermediate: bool = False,
                 embed_chain: bool = False, clock=None, valid_from: dt.datetime | None = None):
        self.intermediate = None
        if intermediate:
            self.ca, self.intermediate, self.cert, self.key = make_chain(cn, valid_from)
        else:
            self.ca, self.cert, self.key = make_authority(cn, valid_from)
        self.embed_chain = embed_chain
        self.clock = clock or (lambda: dt.datetime.now(dt.UTC))
        self.mode = mode
        self.serial = 0
        self.requests = 0
        self._lock = threading.Lock()

    @property
    def ca_pem(self) -> bytes:
        return self.ca.public_bytes(serialization.Encoding.PEM)

    @property
    def chain_pem(self) -> bytes:
        """The root and, when there is one, the intermediate (PEM): what a bundle might carry."""
        extra = [self.intermediate] if self.intermediate is not None else []
        return self.ca_pem + b"".join(c.public_bytes(serialization.Encoding.PEM) for c in extra)

    def stamp(self, message: bytes) -> bytes:
        """A token over ``sha256(message)`` (a request with a nonce and ``cert_req``, answered here)."""
        from rfc3161_client import HashAlgorithm, TimestampRequestBuilder

        req = TimestampRequestBuilder().data(message).hash_algorithm(HashAlgorithm.SHA256).build()
        return self.respond(req.as_bytes())

    def respond(self, body: bytes) -> bytes:
        with self._lock:
            self.requests += 1
            self.serial += 1
            serial = self.serial
        if self.mode == "rejection":  # TimeStampResp with its status only (the token is OPTIONAL, RFC 3161 2.4.2)
            status = tsp.PKIStatusInfo({"status": "rejection", "status_string": ["refused by the test authority"]})
            body = status.dump()
            return bytes([0x30, len(body)]) + body
        req = tsp.TimeStampReq.load(body)
        imprint = req["message_imprint"]
        if self.mode == "wrong_imprint":
            imprint = tsp.MessageImprint({"hash_algorithm": {"algorithm": "sha256"},
                                          "hashed_message": hashlib.sha256(b"some other bytes").digest()})
        now = self.clock().astimezone(dt.UTC).replace(microsecond=0)
        info = {"version": "v1", "policy": POLICY, "message_imprint": imprint, "serial_number": serial,
                "gen_time": now, "accuracy": {"seconds": 1}}
        if req["nonce"].native is not None:
            info["nonce"] = req["nonce"].native
        tst = tsp.TSTInfo(info)
        tst_der = tst.dump()
        cert_der = self.cert.public_bytes(serialization.Encoding.DER)
        acert = ax509.Certificate.load(cert_der)
        ess = tsp.SigningCertificateV2({"certs": [{"hash_algorithm": {"algorithm": "sha256"},
                                                   "cert_hash": hashlib.sha256(cert_der).digest()}]})
        attrs = cms.CMSAttributes([
            cms.CMSAttribute({"type": "content_type", "values": ["tst_info"]}),
            cms.CMSAttribute({"type": "signing_time", "values": [cms.Time({"utc_time": core.UTCTime(now)})]}),
            cms.CMSAttribute({"type": "message_digest", "values": [hashlib.sha256(tst_der).digest()]}),
            cms.CMSAttribute({"type": "signing_certificate_v2", "values": [ess]}),
        ])
        signature = self.key.sign(attrs.dump(), ec.ECDSA(hashes.SHA256()))
        signer = cms.SignerInfo({
            "version": "v1",
            "sid": cms.SignerIdentifier({"issuer_and_serial_number": cms.IssuerAndSerialNumber(
                {"issuer": acert.issuer, "serial_number": acert.serial_number})}),
            "digest_algorithm": algos.DigestAlgorithm({"algorithm": "sha256"}),
            "signed_attrs": attrs,
            "signature_algorithm": algos.SignedDigestAlgorithm({"algorithm": "sha256_ecdsa"}),
            "signature": signature,
        })
        sd = cms.SignedData({
            "version": "v3",
            "digest_algorithms": [algos.DigestAlgorithm({"algorithm": "sha256"})],
            "encap_content_info": {"content_type": "tst_info", "content": core.ParsableOctetString(tst_der)},
            "certificates": ([acert] + ([ax509.Certificate.load(self.intermediate.public_bytes(
                serialization.Encoding.DER))] if self.embed_chain and self.intermediate is not None else []))
            if req["cert_req"].native else [],
            "signer_infos": [signer],
        })
        token = cms.ContentInfo({"content_type": "signed_data", "content": sd})
        return tsp.TimeStampResp({"status": {"status": "granted"}, "time_stamp_token": token}).dump()


class TSAServer:
    """``with TSAServer() as tsa: tsa.url`` - the authority served over HTTP on 127.0.0.1."""

    def __init__(self, mode: str = "ok", basic_auth: str | None = None, authority: Authority | None = None):
        """``basic_auth``: the ``Authorization`` header value the authority requires (401 otherwise);
        ``authority``: the signing half to serve (default a fresh :class:`Authority` in ``mode``)."""
        self.authority = authority or Authority(mode)
        self.seen_auth: list[str | None] = []
        self.seen_paths: list[str] = []
        auth = self.authority
        seen = self.seen_auth
        paths = self.seen_paths

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                seen.append(self.headers.get("Authorization"))
                paths.append(self.path)
                if basic_auth is not None and self.headers.get("Authorization") != basic_auth:
                    self.send_response(401)
                    self.end_headers()
                    return
                if self.headers.get("Content-Type") != "application/timestamp-query":
                    self.send_response(415)
                    self.end_headers()
                    return
                out = auth.respond(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/timestamp-reply")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *a):  # quiet
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/tsr"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> TSAServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
