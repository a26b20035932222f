"""Secrets are redacted before any text is cut, in every encoding a server is likely to echo.

The old fault: an error body cut at 500 characters, then redacted, kept every character of a
key that straddled the cut but one. Property tests (hypothesis) place a key, plain or
encoded, anywhere in a text and cut it anywhere: no piece of the encoded key survives.
"""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veribench.detectors.api.http import REDACTED, VendorError, classify_response, clip, redact

KEY_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/=_-:."
FILLER = st.text(alphabet=" !*#()éß~\n", max_size=700)  # shares no character with any encoding of a key
KEYS = st.text(alphabet=KEY_CHARS, min_size=12, max_size=48)
USERS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz@.", min_size=0, max_size=20)
PIECE = 6  # no run of this many characters of the encoded key may survive


def _encodings(key: str, user: str) -> dict[str, str]:
    q = quote(key, safe="")
    return {
        "plain": key,
        "percent": q,
        "percent-lower-hex": "".join(c.lower() if i > 0 and q[i - 1] == "%" or (i > 1 and q[i - 2] == "%") else c
                                     for i, c in enumerate(q)),
        "percent-keep-slash": quote(key),
        "form": quote_plus(key),
        "json": json.dumps(key)[1:-1],
        "basic-auth": "Basic " + base64.b64encode(f"{user}:{key}".encode()).decode(),
        "base64url": base64.urlsafe_b64encode(f"{user}:{key}".encode()).decode(),
        "base64-of-key": base64.b64encode(key.encode()).decode(),
        # issue 24: a key echoed in another case, as hex, or as JSON \u escapes
        "upper": key.upper(),
        "lower": key.lower(),
        "hex": key.encode().hex(),
        "HEX": key.encode().hex().upper(),
        "json-u-escapes": "".join(f"\\u{ord(c):04x}" for c in key),
        "json-U-escapes": "".join(f"\\u{ord(c):04X}" for c in key),
        "basic-auth-upper": "Basic " + base64.b64encode(f"{user}:{key.upper()}".encode()).decode(),
    }


def _pieces(enc: str) -> set[str]:
    core = enc[len("Basic "):] if enc.startswith("Basic ") else enc
    return {core[i:i + PIECE] for i in range(len(core) - PIECE + 1)} - {REDACTED[i:i + PIECE] for i in range(5)}


@settings(max_examples=400, deadline=None)
@given(KEYS, USERS, st.sampled_from(sorted(_encodings("k" * 12, "u"))), FILLER, FILLER, st.integers(0, 1600))
def test_no_piece_of_a_key_survives_any_cut(key, user, how, before, after, cut):
    enc = _encodings(key, user)[how]
    text = before + enc + after
    out = clip(text, cut, [key])
    assert len(out) <= cut
    for piece in _pieces(enc):
        assert piece not in out, (how, piece)
    # redacting without a cut keeps everything else as it was
    full = redact(text, [key])
    assert full.startswith(before) and full.endswith(after) and REDACTED in full


@settings(max_examples=200, deadline=None)
@given(KEYS, FILLER, st.integers(0, 1200), st.sampled_from([401, 402, 429, 500, 503]))
def test_error_bodies_are_redacted_before_the_excerpt_is_cut(key, filler, at, code):
    """A non-JSON error body longer than the 500-character excerpt, with the key anywhere in it."""
    at = min(at, len(filler))
    body = "<html>" + (filler[:at] + key + filler[at:]) * 2  # not JSON: the excerpt path
    err = classify_response(httpx.Response(code, text=body), [key])
    assert isinstance(err, VendorError) and isinstance(err.body, str) and len(err.body) <= 500
    # veribench's own wording (e.g. "wrong base_url") is not a leak when a random key happens
    # to contain a piece of it: only pieces absent from the key-free error count
    plain = classify_response(httpx.Response(code, text=body.replace(key, "")), [key])
    for piece in _pieces(key) - {p for p in _pieces(key) if p in plain.reason or p in plain.body}:
        assert piece not in err.body and piece not in err.reason


def test_key_straddling_the_500th_character():
    """The case of the issue: the key begins at character 495 of a 1,000-character body."""
    key = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
    body = "e" * 495 + key + "e" * 500
    err = classify_response(httpx.Response(500, text=body), [key])
    assert key[:5] not in err.body and err.body.startswith("e" * 495 + "[RED")
    json_err = classify_response(httpx.Response(401, json={"detail": "e" * 495 + key}), [key])
    assert key not in json.dumps(json_err.body) and REDACTED in json_err.body["detail"]


def test_echoed_key_stored_nowhere_end_to_end(tmp_path, fake, keys, real_texts, workspace, monkeypatch):
    """Through an adapter and the workspace: the fake server answers 401 with a long plain-text body
    echoing the key at the excerpt boundary, URL-encoded and in a Basic header; nothing of it is stored."""
    from vendor_fakes import FAST

    from veribench import registry
    from veribench.detectors.pipeline import score_texts

    key = "wk_Q7v+Zp2/Lm9=Xr4sT8yN1cD"
    monkeypatch.setenv("VERIBENCH_WINSTON_API_KEY", key)
    fake.keys["winston"] = key  # the call passes the key check and gets the scripted body
    t = real_texts[0]
    basic = base64.b64encode(f"me@example.org:{key}".encode()).decode()
    fake.script[t] = [{"http": 401, "raw": "x" * 497 + key + f" q={quote_plus(key)} auth=Basic {basic}"}]
    det = registry.create("detector", "winston", {"base_url": fake.url, **FAST})
    r = score_texts(workspace, det, [t])
    (res,) = r.values()
    assert res.status == "auth" and fake.count("winston", t) == 1
    assert res.detail["response"] == "x" * 497 + "[RE"  # redacted, then cut to the 500-character excerpt
    blob = "\n".join(repr(row) for (tbl,) in workspace.query("SELECT table_name FROM information_schema.tables")
                     for row in workspace.query(f'SELECT * FROM "{tbl}"'))
    assert "[REDACTED]" in blob or "x" * 497 in blob
    for enc in (key, quote_plus(key), basic):
        for piece in _pieces(enc):
            assert piece not in blob, piece


def test_key_echoed_upper_cased_hex_or_escaped_stored_nowhere_end_to_end(fake, real_texts, workspace, monkeypatch):
    """Issue 24: a server that echoes the key in upper case (or as hex, or as \\u escapes)
    in a 200 answer: nothing of it reaches the stored score."""
    from vendor_fakes import FAST

    from veribench import registry
    from veribench.detectors.pipeline import score_texts

    key = "wk_Q7vZp2Lm9Xr4sT8yN1cD"
    monkeypatch.setenv("VERIBENCH_WINSTON_API_KEY", key)
    fake.keys["winston"] = key
    forms = {"upper": key.upper(), "hex": key.encode().hex(), "u": "".join(f"\\u{ord(c):04X}" for c in key)}
    texts = real_texts[1:4]
    for t, form in zip(texts, forms.values()):
        fake.script[t] = [{"http": 401, "raw": f"invalid key {form} for this account"}]
    det = registry.create("detector", "winston", {"base_url": fake.url, **FAST})
    score_texts(workspace, det, texts)
    blob = "\n".join(repr(row) for (tbl,) in workspace.query("SELECT table_name FROM information_schema.tables")
                     for row in workspace.query(f'SELECT * FROM "{tbl}"'))
    assert "[REDACTED]" in blob
    for form in forms.values():
        assert form not in blob and form.lower() not in blob.lower()


@pytest.mark.parametrize("secret", ["", "abc"])
def test_short_secrets_are_not_redacted(secret):
    assert redact("abc def", [secret]) == "abc def"


@settings(max_examples=300, deadline=None)
@given(KEYS, st.lists(st.booleans(), min_size=48, max_size=48), st.sampled_from(["json", "percent", "mixed"]),
       FILLER, FILLER)
def test_a_key_with_some_characters_escaped_is_redacted(key, which, how, before, after):
    """A mix no single pattern names (some characters \\u-escaped or percent-encoded, in any
    case): the decoded reading still holds the key, so the text is redacted whole."""
    def enc(i, c):
        if not which[i]:
            return c
        if how == "json" or (how == "mixed" and i % 2):
            return f"\\u{ord(c):04x}"
        return f"%{ord(c):02X}"

    text = before + "".join(enc(i, c) for i, c in enumerate(key)) + after
    out = redact(text, [key])
    assert key not in out and key.casefold() not in out.casefold()
    assert REDACTED in out


def test_redaction_of_case_hex_and_escapes_examples():
    k = "sk-Test-1234567890abcdef"
    for echoed in (k.upper(), k.lower(), k.encode().hex(), k.encode().hex().upper(),
                   "".join(f"\\u{ord(c):04x}" for c in k), "%73k-Test-1234567890abcdef",
                   base64.b64encode(("u:" + k.upper()).encode()).decode()):
        assert redact(f"key: {echoed} end", [k]) in ("key: [REDACTED] end", "[REDACTED]"), echoed
    assert redact("nothing to hide here", [k]) == "nothing to hide here"
