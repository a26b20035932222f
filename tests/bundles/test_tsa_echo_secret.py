"""An authority that echoes the TSA credentials (issue 24, hostile tester's third round):
its Content-Type, its status string or its parser-facing bytes carry the ``Authorization``
header (base64 of ``user:password``), the user or the password, and no error message repeats
them. A server-supplied value is shown only when it is a short safe token holding no
credential; else ``(withheld: unexpected value)``."""

from __future__ import annotations

import base64

import httpx
import pytest
from asn1crypto import tsp

from veribench.commit.tsa import TimestampError, check_token, credentials, request_token

USER, PW = "alice", "S3cretPW"
PAIR_B64 = base64.b64encode(f"{USER}:{PW}".encode()).decode()


@pytest.fixture(autouse=True)
def _creds(monkeypatch):
    monkeypatch.setenv("VERIBENCH_TSA_USER", USER)
    monkeypatch.setenv("VERIBENCH_TSA_PASSWORD", PW)


def _no_credential(msg: str) -> None:
    for x in (USER, PW, f"{USER}:{PW}", PAIR_B64, PW.upper(), PW[::-1]):
        assert x.casefold() not in msg.casefold(), msg


def test_credentials_in_every_form():
    assert set(credentials()) == {USER, PW, f"{USER}:{PW}", PAIR_B64}


@pytest.mark.parametrize("echo", [
    lambda a: "text/" + a.replace(" ", "-"),            # the tester's authority: 'text/Basic-YWxp...'
    lambda a: "application/" + PW.lower(),              # a plain token holding the password, lower-cased
    lambda a: "x/" + "".join(f"&#{ord(c)};" for c in PW),  # not a MIME token at all
    lambda a: "text/html; " + a,                        # the parameter part (never shown) plus a long value
])
def test_a_content_type_echoing_the_credentials_is_withheld(echo):
    def answer(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == "Basic " + PAIR_B64  # the credentials were sent
        return httpx.Response(200, headers={"Content-Type": echo(request.headers["authorization"])}, content=b"x")

    with httpx.Client(transport=httpx.MockTransport(answer)) as c, pytest.raises(TimestampError) as e:
        request_token("http://127.0.0.1:9/tsr", b"message", client=c)
    _no_credential(str(e.value))
    assert "not application/timestamp-reply" in str(e.value)


def test_an_honest_content_type_is_still_named():
    with httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(
            200, headers={"Content-Type": "text/html"}, content=b"x"))) as c, pytest.raises(TimestampError) as e:
        request_token("http://127.0.0.1:9/tsr", b"message", client=c)
    assert "'text/html'" in str(e.value)


def _rejection(text: str) -> bytes:
    body = tsp.PKIStatusInfo({"status": "rejection", "status_string": [text]}).dump()
    n = len(body)  # DER length: short form, or 0x81/0x82 long form
    return bytes([0x30]) + (bytes([n]) if n < 128 else bytes([0x81, n]) if n < 256 else bytes([0x82, n >> 8, n & 255])) + body


@pytest.mark.parametrize("text", [f"bad credentials Basic {PAIR_B64}", f"user {USER} password {PW}",
                                  "bad password " + " ".join(PW), "x" * 300])
def test_a_status_string_echoing_the_credentials_is_withheld(text):
    with pytest.raises(TimestampError) as e:
        check_token(_rejection(text), b"message")
    _no_credential(str(e.value))
    assert "did not grant a token" in str(e.value) and "withheld" in str(e.value)


def test_an_honest_status_string_is_still_shown():
    with pytest.raises(TimestampError) as e:
        check_token(_rejection("refused by the test authority"), b"message")
    assert "refused by the test authority" in str(e.value)
