"""A vendor key echoed in an encoding no redaction pattern names is withheld, never stored
(issue 24, hostile tester's third round): HTML entities, JS escapes, fullwidth, base32,
MIME-wrapped base64, base64 of UTF-16, hex with colons, spaced, zero-width split, reversed.
The whole server text is replaced by :data:`WITHHELD`; a text without the key is kept."""

from __future__ import annotations

import base64
import http.server
import json
import threading

import pytest
from typer.testing import CliRunner

from veribench.cli.main import app
from veribench.detectors.api.http import WITHHELD, canonical, classify_response, clip, leaks, redact

KEY = "sk-live-9f8e7d6c5b4a3210ZZ"
_B64 = base64.b64encode(b"Bearer " + KEY.encode()).decode()
ENCODINGS = {
    "html-entities": "".join(f"&#{ord(c)};" for c in KEY),
    "html-hex-entities": "".join(f"&#x{ord(c):x};" for c in KEY),
    "js-x-escapes": "".join(f"\\x{ord(c):02x}" for c in KEY),
    "fullwidth": "".join(chr(ord(c) + 0xFEE0) if 0x21 <= ord(c) <= 0x7E else c for c in KEY),
    "base32": base64.b32encode(KEY.encode()).decode(),
    "base64-mime-wrapped": _B64[:12] + "\r\n" + _B64[12:],
    "base64-of-utf16": base64.b64encode(KEY.encode("utf-16-le")).decode(),
    "hex-with-colons": ":".join(f"{b:02x}" for b in KEY.encode()),
    "spaced": " ".join(KEY),
    "zero-width-split": "\u200b".join(KEY),
    "reversed": KEY[::-1],
    "half-of-the-key": KEY[:18] + " (truncated)",
}


def _holds_key(obj) -> bool:
    """Independent check: any reading of the output that shows 16+ key characters."""
    k = "".join(c for c in KEY if c.isalnum()).lower()
    return leaks(obj, [KEY]) or any(k[i:i + 16] in canonical(json.dumps(obj)) for i in range(len(k) - 15))


@pytest.mark.parametrize("how", sorted(ENCODINGS))
def test_a_key_in_any_encoding_is_withheld(how):
    enc = ENCODINGS[how]
    out = redact({"error": f"bad key {enc}", "code": 401}, [KEY])
    assert out["error"] == WITHHELD and out["code"] == 401
    assert enc not in json.dumps(out, ensure_ascii=False) and not _holds_key(out)
    assert clip(f"<p>bad key {enc}</p>" + "x" * 900, 500, [KEY]) == WITHHELD  # judged before the cut
    assert redact(f"bad key {enc}", [KEY]) == WITHHELD


@pytest.mark.parametrize("text", ["Invalid API key", "rate limited, retry in 3s", "sk-live is our prefix",
                                  base64.b64encode(b"some other token value").decode()])
def test_a_text_without_the_key_is_kept(text):
    assert redact({"error": text}, [KEY]) == {"error": text}
    assert clip(text, 500, [KEY]) == text


def test_a_json_error_body_with_an_encoded_key_is_withheld():
    import httpx

    body = {"error": {"message": "bad key " + ENCODINGS["html-entities"], "type": "auth"}}
    e = classify_response(httpx.Response(401, json=body), [KEY])
    assert e.status == "auth" and not _holds_key(e.detail())


TEXT = ("This is a sample essay text that is long enough to pass the two hundred and fifty character minimum "
        "of the gptzero detector, so we write a few more words here and there, and still more words to be sure "
        "it is over the limit of two hundred fifty characters total.")


class _EchoVendor(http.server.BaseHTTPRequestHandler):
    """The tester's fake vendor: 401 with an HTML page echoing x-api-key as HTML entities."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        k = self.headers.get("x-api-key", "")
        body = ("<html><body>Invalid API key " + "".join(f"&#{ord(c)};" for c in k) + "</body></html>").encode()
        self.send_response(401)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def test_end_to_end_an_echoing_vendor_leaves_no_key_in_output_or_workspace(tmp_path, monkeypatch):
    srv = http.server.HTTPServer(("127.0.0.1", 0), _EchoVendor)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    monkeypatch.setenv("VERIBENCH_GPTZERO_API_KEY", KEY)
    inp, out, ws = tmp_path / "in.jsonl", tmp_path / "out.jsonl", tmp_path / "ws"
    inp.write_text(json.dumps({"id": "d0", "text": TEXT}) + "\n")
    try:
        r = CliRunner().invoke(app, ["score", "--detector", "gptzero", "--set",
                                     f"base_url=http://127.0.0.1:{srv.server_port}", "--set", "rate_per_minute=0",
                                     "--set", "backoff=0.01", "--set", "max_attempts=1", "-i", str(inp), "-o",
                                     str(out), "-w", str(ws), "--no-progress"])
    finally:
        srv.shutdown()
    assert r.exit_code == 1 and "auth" in out.read_text(), r.output
    assert not _holds_key(r.output)
    row = json.loads(out.read_text())
    assert WITHHELD in json.dumps(row) and not _holds_key(row)
    from veribench.store import Workspace

    w = Workspace(ws, read_only=True)
    try:
        dump = [repr(x) for (t,) in w.query("SELECT table_name FROM information_schema.tables")
                for x in w.query(f'SELECT * FROM "{t}"')]
    finally:
        w.close()
    assert WITHHELD in "\n".join(dump) and not _holds_key("\n".join(dump))
