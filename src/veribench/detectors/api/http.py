"""The HTTP layer shared by every commercial adapter (detectors, humanizers, LLM endpoints).

One place decides, for every vendor:

- where the key comes from: only the environment variable ``VERIBENCH_<VENDOR>_API_KEY``
  (:func:`env_key`); never a setting, never a file, never a spec;
- which failures are retried (tenacity, exponential backoff with jitter, ``Retry-After``
  honoured): HTTP 429, 5xx, 408, timeouts, connection errors and resets. Validation
  (400/422), credit (402, or a 400/429 whose body speaks of credits/quota) and key
  (401/403/404) errors are never retried;
- which reason code a failure gets (:data:`veribench.records.STATUS_CODES`):
  ``auth``, ``no_credits``, ``rate_limited``, ``site_down``, ``refused``, ``timeout``,
  ``bad_response``;
- rate limiting (a minimum interval between requests, shared by the adapter's threads)
  and a concurrency cap (a semaphore);
- redaction: every string that leaves this layer (error texts, stored raw responses)
  has the adapter's secrets replaced by ``[REDACTED]`` (:class:`Redactor`: the key, its
  percent-encoded and JSON-escaped forms and base64 values holding it, as in Basic auth),
  and a text that still holds a key in any other encoding (HTML entities, escapes, fullwidth,
  base32, wrapped base64, UTF-16, spaced, reversed: :func:`leaks`) is withheld whole
  (:data:`WITHHELD`), always before any text is cut to length; log lines carry only the vendor, the HTTP
  status and the attempt number.

Retrying a POST after a connection reset can, in the worst case, make the vendor process
the same text twice (the response was lost, not the request); that is the only repeat the
layer can cause, and it is logged.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import random
import re
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import tenacity

from veribench.errors import VeribenchError

log = logging.getLogger("veribench.api")

REDACTED = "[REDACTED]"

#: Words in an error body that mean "out of credits / quota" rather than a plain
#: validation error or a transient rate limit (GPTZero's 429 also means the monthly word
#: limit; Undetectable documents "400 Payment Required"; see vendor-apis.md).
CREDIT_WORDS = re.compile(
    r"credit|quota|payment required|insufficient (?:balance|funds)|word limit|monthly limit|exceed(?:ed)? your (?:plan|limit)|plan limit|subscription",
    re.I,
)
#: Words in a 400 body that mean "the text is too short" (vendor-side check).
SHORT_WORDS = re.compile(r"too short|minimum (?:length|of|number)|at least \d+", re.I)


class ConfigError(VeribenchError):
    """A bad adapter setting (never contains a key)."""


class VendorError(Exception):
    """A failed vendor call, already classified.

    Attributes:
        status: a reason code from ``STATUS_CODES`` (``auth``, ``no_credits``, ...).
        reason: short human text, secrets redacted.
        http_status: the HTTP status code, when there was a response.
        retryable: whether the retry policy may try again.
        retry_after: seconds the server asked us to wait (``Retry-After``), if any.
        body: the (redacted) response body, parsed JSON when possible, else a text excerpt.
    """

    def __init__(self, status: str, reason: str, *, http_status: int | None = None, retryable: bool = False,
                 retry_after: float | None = None, body: Any = None):
        super().__init__(f"{status}: {reason}")
        self.status, self.reason, self.http_status = status, reason, http_status
        self.retryable, self.retry_after, self.body = retryable, retry_after, body

    def detail(self) -> dict[str, Any]:
        """Extras for a failed result's ``detail`` (the reason text goes separately)."""
        d: dict[str, Any] = {}
        if self.http_status is not None:
            d["http_status"] = self.http_status
        if self.body is not None:
            d["response"] = self.body
        return d


def env_var(vendor: str) -> str:
    """The environment variable that holds ``vendor``'s key: ``VERIBENCH_<VENDOR>_API_KEY``."""
    return "VERIBENCH_" + re.sub(r"[^A-Z0-9]+", "_", vendor.upper()).strip("_") + "_API_KEY"


def env_key(vendor: str, required: bool = True) -> str | None:
    """The key for ``vendor`` from its environment variable.

    Raises:
        VendorError: status ``auth`` when ``required`` and the variable is unset or empty
            (the message names the variable, never a value).
    """
    var = env_var(vendor)
    val = os.environ.get(var, "").strip()
    if not val:
        if required:
            raise VendorError("auth", f"no API key: set the environment variable {var}")
        return None
    return val


def check_base_url(url: str, setting: str = "base_url") -> str:
    """Validate and normalise a base URL (scheme http/https, no user:password part, no trailing slash).

    Raises:
        ConfigError: a URL that is not http(s) or that carries credentials.
    """
    if not isinstance(url, str) or not url:
        raise ConfigError(f"setting {setting!r} must be a URL string")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"setting {setting!r} must be an http(s) URL, got {url!r}")
    if "@" in parts.netloc or parts.query:
        raise ConfigError(f"setting {setting!r} must not carry credentials or a query string; keys come only from "
                          f"the environment")
    return url.rstrip("/")


def refuse_key_settings(settings: dict[str, Any], vendor: str) -> None:
    """Reject any setting that looks like a secret (keys come only from the environment)."""
    for k in settings:
        if re.search(r"key|token|secret|password|email", k, re.I):
            raise ConfigError(f"setting {k!r} is not accepted: secrets come only from the environment variable "
                              f"{env_var(vendor)}")


#: Secrets shorter than this are not redacted (they would match ordinary text).
MIN_SECRET_CHARS = 4
_B64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")


_HEX_RUN = re.compile(r"(?:[0-9A-Fa-f]{2}){4,}")
_U_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})")


def _readings(s: str) -> list[str]:
    """``s`` read through each encoding a secret could hide in, case-folded: percent-decoded
    (twice, for a doubly encoded value), JSON ``\\uXXXX`` escapes decoded, both (in either
    order), and each run of hex digits decoded as UTF-8 (undecodable bytes dropped)."""
    from urllib.parse import unquote, unquote_plus

    def unescape(x: str) -> str:
        return _U_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), x)

    out = [unescape(s)]
    for dec in (unquote, unquote_plus):  # '+' is a space in a form, itself elsewhere
        once = dec(s)
        out += [once, dec(once), unescape(once), dec(unescape(s))]
    out += [bytes.fromhex(m.group()).decode("utf-8", "ignore") for m in _HEX_RUN.finditer(s)]
    return [x.casefold() for x in out]


def _b64_cores(secret: str) -> list[str]:
    """Base64 (standard and URL-safe) text that every encoding of ``secret`` contains, at each of
    the three byte alignments it can have inside a longer value (``user:key`` in HTTP Basic
    auth): the part of the encoding that depends on the secret's bytes alone."""
    import base64

    raw = secret.encode("utf-8")
    out = []
    for pad in range(3):
        enc = base64.b64encode(b"\0" * pad + raw).decode("ascii")
        start = (pad * 8 + 5) // 6  # first character whose bits come only from the secret
        end = ((pad + len(raw)) * 8) // 6  # last character whose bits come only from the secret
        core = enc[start:end]
        if len(core) >= 8:
            out += [core, core.replace("+", "-").replace("/", "_")]
    return out


class Redactor:
    """Replaces every copy of a set of secrets in text by ``[REDACTED]``.

    Copies looked for, per secret, in any letter case (a server that echoes a key upper-cased
    still echoes it): the secret itself; its percent-encoded forms (``quote``, ``quote_plus``);
    its JSON-escaped form, and its form with every character a ``\\uXXXX`` escape; its
    UTF-8 bytes in hex; and base64 (standard and URL-safe) of any value that contains it or
    its upper- or lower-cased form, such as ``base64("user:" + key)`` in an
    ``Authorization: Basic`` header: a base64 run that holds the secret's bytes at any
    alignment is redacted whole. Last, a text whose percent-decoded, JSON-unescaped or
    hex-decoded reading still holds a secret (a mix of encodings no pattern above names) is
    redacted whole. Redaction runs on the whole text, before any truncation (:meth:`clip`), so
    a cut can never keep part of a key.
    """

    def __init__(self, secrets: Iterable[str]):
        from urllib.parse import quote, quote_plus

        self.secrets = sorted({x for x in secrets if isinstance(x, str) and len(x) >= MIN_SECRET_CHARS},
                              key=len, reverse=True)
        self._folded = [s.casefold() for s in self.secrets]
        plain: set[str] = set()
        cores: set[str] = set()
        for sec in self.secrets:
            plain.add(sec)
            for enc in (quote(sec, safe=""), quote(sec), quote_plus(sec), json.dumps(sec)[1:-1],
                        "".join(f"\\u{ord(c):04x}" for c in sec), sec.encode("utf-8").hex()):
                plain.add(enc)
            for variant in {sec, sec.upper(), sec.lower()}:
                cores.update(_b64_cores(variant))
        pats = [re.escape(p) for p in sorted(plain, key=len, reverse=True)]
        # any letter case: the key itself, hex digits of percent and \\u escapes, hex bytes
        self._plain = re.compile("|".join(pats), re.IGNORECASE) if pats else None
        self._cores = sorted(cores, key=len, reverse=True)

    def text(self, s: str) -> str:
        if self._plain is not None:
            s = self._plain.sub(REDACTED, s)
        if self._cores and any(c in s for c in self._cores):
            s = _B64.sub(lambda m: REDACTED if any(c in m.group() for c in self._cores) else m.group(), s)
        if self._folded and any(f in v for v in _readings(s) for f in self._folded):
            return REDACTED
        return s

    def __call__(self, obj: Any) -> Any:
        """``obj`` (str, or JSON-like structure: dict keys and values, lists) redacted."""
        if not self.secrets:
            return obj
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {self(k): self(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self(v) for v in obj]
        if isinstance(obj, (int, float)) and not isinstance(obj, bool):
            s = repr(obj)
            return REDACTED if self.text(s) != s else obj  # a key of digits echoed as a JSON number
        return obj

    def clip(self, s: str, limit: int) -> str:
        """``s`` redacted, then cut to ``limit`` characters (never the other way round)."""
        s = self.text(s) if self.secrets else s
        return s if len(s) <= limit else s[:limit]


#: Shortest part of a key that, found in a server's text in any encoding, withholds that text:
#: any run of this many consecutive characters of the key's canonical form (:func:`canonical`).
#: 16 letters and digits of a random key are ~80 bits: they do not occur by chance, and a key
#: cut into halves of 16 or more characters is still caught.
KEY_WINDOW = 16

#: What a server-supplied text that holds a secret in some encoding is replaced by (whole).
WITHHELD = "[response withheld: it contained the API key in some encoding]"

_JS_X = re.compile(r"\\x([0-9A-Fa-f]{2})")
_RUN = re.compile(r"[A-Za-z0-9+/_\-=:\s]{8,}")  # base64/base32/hex text, spaces, CRLF and colons inside


def canonical(s: str) -> str:
    """``s`` as a key is compared in :func:`leaks`: HTML entities (named, decimal, hex),
    JSON ``\\uXXXX`` and JS ``\\xNN`` escapes and percent-escapes (twice) decoded, NFKC-normalised
    (fullwidth and other compatibility forms become ASCII), every character that is not a
    letter or digit dropped (spaces, dashes, zero-width characters, colons), case-folded."""
    import html
    import unicodedata
    from urllib.parse import unquote

    t = html.unescape(s)
    for _ in range(2):
        t = _U_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), t)
        t = _JS_X.sub(lambda m: chr(int(m.group(1), 16)), t)
        t = unquote(t)
    t = unicodedata.normalize("NFKC", html.unescape(t))
    return "".join(c for c in t if c.isalnum()).casefold()


def _bytes_readings(raw: bytes) -> list[str]:
    """``raw`` read as UTF-8, as UTF-16 (both byte orders, both alignments) and with NUL bytes
    dropped (ASCII in UTF-16), undecodable bytes skipped."""
    return [raw.decode("utf-8", "ignore"), raw.replace(b"\0", b"").decode("utf-8", "ignore"),
            raw.decode("utf-16-le", "ignore"), raw[1:].decode("utf-16-le", "ignore"),
            raw.decode("utf-16-be", "ignore"), raw[1:].decode("utf-16-be", "ignore")]


def _decoded(s: str) -> list[str]:
    """Each run of base64 (standard or URL-safe), base32 or hex text in ``s`` (whitespace, CRLF
    line breaks of MIME and colons removed first) decoded at every alignment, as text."""
    import base64
    import binascii

    out: list[str] = []
    for m in _RUN.finditer(html_unescaped(s)):
        run = re.sub(r"[\s:]", "", m.group())
        for part in run.split("="):
            tries = [(part.replace("-", "+").replace("_", "/"), 4, base64.b64decode)]
            if re.fullmatch(r"[A-Za-z2-7]*", part):
                tries.append((part.upper(), 8, base64.b32decode))
            for enc, width, decode in tries:
                for k in range(width):  # every alignment: the run may start inside a longer value
                    try:
                        out += _bytes_readings(decode(enc[k:][: (len(enc) - k) // width * width]))
                    except (binascii.Error, ValueError):
                        pass
    alnum = "".join(c for c in html_unescaped(s) if c.isalnum())
    for m in re.finditer(r"[0-9A-Fa-f]{8,}", alnum):
        for k in range(2):
            h = m.group()[k:]
            out += _bytes_readings(bytes.fromhex(h[: len(h) // 2 * 2]))
    return out


def html_unescaped(s: str) -> str:
    """``s`` with HTML character references decoded (``html.unescape``)."""
    import html

    return html.unescape(s)


def _needles(secrets: Iterable[str]) -> list[str]:
    """The canonical forms looked for: each secret's whole canonical form when shorter than
    :data:`KEY_WINDOW`, else each of its windows of :data:`KEY_WINDOW` characters."""
    out: set[str] = set()
    for sec in secrets:
        c = canonical(sec) if isinstance(sec, str) else ""
        if len(c) < MIN_SECRET_CHARS:
            continue
        out.update([c] if len(c) <= KEY_WINDOW else [c[i:i + KEY_WINDOW] for i in range(len(c) - KEY_WINDOW + 1)])
    return sorted(out)


def leaks(obj: Any, secrets: Iterable[str]) -> bool:
    """True when ``obj`` (a string, or a JSON-like structure, read as its JSON text) holds any
    secret in any encoding: :func:`canonical` of the text, forwards and reversed, or of any
    base64/base32/hex run decoded (:func:`_decoded`, UTF-8 or UTF-16), contains a secret's
    canonical form or any :data:`KEY_WINDOW`-character part of it. The one test every
    server-supplied text passes before it is stored, logged or shown (:func:`redact`,
    :func:`safe_token`)."""
    needles = _needles(secrets)
    if not needles:
        return False
    text = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False, default=str)
    hays = [canonical(text)]
    hays.append(hays[0][::-1])
    hays += [canonical(x) for x in _decoded(text)]
    return any(n in h for h in hays for n in needles)


def withhold(obj: Any, secrets: Iterable[str]) -> Any:
    """``obj`` with every part that :func:`leaks` a secret replaced by :data:`WITHHELD`, whole:
    a string becomes the marker; a dict or list keeps the parts that hold no secret (a dict's
    shape survives, so ``**withhold(detail)`` still works); a secret spread over several parts
    withholds every value."""
    secrets = list(secrets)
    if not leaks(obj, secrets):
        return obj
    if isinstance(obj, dict):
        out = {(WITHHELD + f" {i}" if leaks(k, secrets) else k): withhold(v, secrets)
               for i, (k, v) in enumerate(obj.items())}
        return out if not leaks(out, secrets) else {k: WITHHELD for k in out if not leaks(k, secrets)}
    if isinstance(obj, (list, tuple)):
        items = [withhold(v, secrets) for v in obj]
        return items if not leaks(items, secrets) else [WITHHELD]
    return WITHHELD


def safe_token(value: Any, secrets: Iterable[str], pattern: str = r"[\w.+-]+/[\w.+-]+", limit: int = 64) -> str:
    """A short server-supplied value (a media type, a status word) fit for an error message:
    ``repr(value)`` when it is a string of at most ``limit`` characters matching ``pattern`` whole
    and :func:`leaks` no secret, else ``"(withheld: unexpected value)"``."""
    if (isinstance(value, str) and len(value) <= limit and re.fullmatch(pattern, value)
            and not leaks(value, secrets)):
        return repr(value)
    return "(withheld: unexpected value)"


@functools.lru_cache(maxsize=64)
def _redactor(secrets: tuple[str, ...]) -> Redactor:
    return Redactor(secrets)


def redact(obj: Any, secrets: Iterable[str]) -> Any:
    """``obj`` (str, or JSON-like structure) with every copy of every secret replaced by
    ``[REDACTED]`` (:class:`Redactor`: plain, percent-encoded, JSON-escaped, base64), then any
    part that still holds a secret in some other encoding withheld whole (:func:`withhold`)."""
    key = tuple(sorted({x for x in secrets if isinstance(x, str)}))
    return withhold(_redactor(key)(obj), key)


def clip(text: str, limit: int, secrets: Iterable[str]) -> str:
    """``text`` redacted (and withheld when it holds a secret in some encoding) first, then cut
    to ``limit`` characters."""
    key = tuple(sorted({x for x in secrets if isinstance(x, str)}))
    out = _redactor(key).text(text) if key else text
    if leaks(out, key):  # judged on the whole text, before the cut
        return WITHHELD
    return out if len(out) <= limit else out[:limit]


class RateLimiter:
    """Minimum interval between request starts (``per_minute`` requests per minute), thread-safe."""

    def __init__(self, per_minute: float | None):
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def acquire(self) -> None:
        if self.interval <= 0:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            time.sleep(start - now)


def _retry_after(resp: httpx.Response) -> float | None:
    v = resp.headers.get("retry-after")
    if not v:
        return None
    try:
        return max(0.0, float(v))
    except ValueError:
        return None


#: Longest excerpt of a non-JSON body kept with a failure (after redaction).
BODY_EXCERPT = 500


def _body(resp: httpx.Response, secrets: Iterable[str]) -> Any:
    """The response body, redacted (:func:`redact`, :func:`clip`): parsed JSON, else a text
    excerpt cut after redaction."""
    try:
        return redact(resp.json(), secrets)
    except ValueError:
        return clip(resp.text, BODY_EXCERPT, secrets)


def classify_response(resp: httpx.Response, secrets: Iterable[str] = ()) -> VendorError:
    """Classify a non-2xx response into a :class:`VendorError` (see the module docstring)."""
    code = resp.status_code
    body = _body(resp, list(secrets))
    text = body if isinstance(body, str) else json.dumps(body, default=str)
    ra = _retry_after(resp)
    if code in (401, 403, 404):
        return VendorError("auth", f"HTTP {code}: key rejected (or wrong base_url)", http_status=code, body=body)
    if code == 402 or (code in (400, 429) and CREDIT_WORDS.search(text)):
        return VendorError("no_credits", f"HTTP {code}: out of credits or quota", http_status=code, body=body)
    if code == 429:
        return VendorError("rate_limited", "HTTP 429: rate limited", http_status=code, retryable=True,
                           retry_after=ra, body=body)
    if code in (408, 504):
        return VendorError("timeout", f"HTTP {code}: gateway or request timeout", http_status=code, retryable=True,
                           retry_after=ra, body=body)
    if code >= 500:
        return VendorError("site_down", f"HTTP {code}: server error", http_status=code, retryable=True,
                           retry_after=ra, body=body)
    if code in (400, 413, 422) and SHORT_WORDS.search(text):
        return VendorError("refused", f"HTTP {code}: vendor says the text is too short", http_status=code, body=body)
    return VendorError("refused", f"HTTP {code}: request refused (validation or policy)", http_status=code, body=body)


_SSL: ssl.SSLContext | None = None
_SSL_LOCK = threading.Lock()


def _ssl_context() -> ssl.SSLContext:
    """One default-verifying SSL context per process (building one costs ~0.2 s)."""
    global _SSL
    with _SSL_LOCK:
        if _SSL is None:
            _SSL = ssl.create_default_context()
            try:
                import certifi

                _SSL.load_verify_locations(certifi.where())
            except ImportError:  # pragma: no cover - certifi comes with httpx
                pass
        return _SSL


@dataclass
class CallInfo:
    """Facts about one logical call (after retries): attempts made, HTTP status, seconds."""

    attempts: int = 0
    http_status: int | None = None
    elapsed_s: float = 0.0
    retried_for: list[str] = field(default_factory=list)


class VendorHTTP:
    """A retrying, rate-limited, concurrency-capped JSON-over-HTTP client for one vendor.

    Args:
        vendor: vendor name (used in logs and for the key's environment variable).
        base_url: root URL, e.g. ``https://api.gptzero.me`` or ``http://127.0.0.1:PORT``.
        timeout: seconds per HTTP request (connect and read).
        max_attempts: tries per call, including the first (>= 1).
        backoff: first backoff in seconds; doubles each retry, with jitter, up to ``backoff_max``.
        backoff_max: cap on one backoff wait (also caps ``Retry-After``).
        rate_per_minute: at most this many request starts per minute (``None``: no limit).
        max_concurrency: at most this many requests in flight at once.
        secrets: a callable returning the secrets to redact (keys, tokens) at the moment.
    """

    def __init__(self, vendor: str, base_url: str, *, timeout: float = 60.0, max_attempts: int = 5,
                 backoff: float = 1.0, backoff_max: float = 60.0, rate_per_minute: float | None = None,
                 max_concurrency: int = 4, secrets: Callable[[], Iterable[str]] = lambda: ()):
        self.vendor = vendor
        self.base_url = base_url
        self.timeout = float(timeout)
        self.max_attempts = max(1, int(max_attempts))
        self.backoff, self.backoff_max = float(backoff), float(backoff_max)
        self.limiter = RateLimiter(rate_per_minute)
        self.sem = threading.BoundedSemaphore(max(1, int(max_concurrency)))
        self.secrets = secrets
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()

    @property
    def client(self) -> httpx.Client:
        with self._client_lock:
            if self._client is None:
                self._client = httpx.Client(base_url=self.base_url, timeout=self.timeout, verify=_ssl_context(),
                                            headers={"User-Agent": "veribench"}, follow_redirects=False)
            return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _wait(self, rs: tenacity.RetryCallState) -> float:
        n = max(1, rs.attempt_number)
        base = min(self.backoff_max, self.backoff * 2 ** (n - 1) + random.uniform(0, self.backoff))
        exc = rs.outcome.exception() if rs.outcome else None
        ra = getattr(exc, "retry_after", None)
        return min(self.backoff_max, max(base, ra)) if ra else base

    def request(self, method: str, path: str, *, json_body: Any = None, headers: dict[str, str] | None = None,
                params: dict[str, Any] | None = None, info: CallInfo | None = None,
                check: Callable[[Any], None] | None = None) -> Any:
        """Send one request (with retries) and return the parsed JSON body of a 2xx response.

        Args:
            check: optional vendor hook called with the parsed body of a 2xx response; it
                raises :class:`VendorError` for errors carried inside an HTTP 200 body.

        Raises:
            VendorError: classified failure after the retry policy gave up (or at once, for
                a non-retryable failure). Its texts never contain a secret.
        """
        info = info if info is not None else CallInfo()
        t0 = time.monotonic()

        def once() -> Any:
            info.attempts += 1
            self.limiter.acquire()
            with self.sem:
                try:
                    resp = self.client.request(method, path, json=json_body, headers=headers, params=params)
                except httpx.TimeoutException as e:
                    raise VendorError("timeout", f"{type(e).__name__}: no response within {self.timeout:g} s",
                                      retryable=True) from None
                except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError,
                        httpx.NetworkError) as e:
                    raise VendorError("site_down", f"{type(e).__name__}: connection failed or reset",
                                      retryable=True) from None
            info.http_status = resp.status_code
            log.info("%s %s %s -> HTTP %s (attempt %d)", self.vendor, method, path.split("?")[0], resp.status_code,
                     info.attempts)
            if not 200 <= resp.status_code < 300:
                raise classify_response(resp, list(self.secrets()))
            try:
                body = resp.json()
            except ValueError:
                raise VendorError("bad_response", "HTTP 2xx but the body is not JSON", http_status=resp.status_code,
                                  body=clip(resp.text, BODY_EXCERPT, list(self.secrets()))) from None
            if check is not None:
                check(redact(body, list(self.secrets())))  # vendor hooks cut texts: they see them redacted
            return body

        def before_sleep(rs: tenacity.RetryCallState) -> None:
            exc = rs.outcome.exception() if rs.outcome else None
            st = getattr(exc, "status", "error")
            info.retried_for.append(st)
            log.warning("%s: %s on attempt %d; retrying", self.vendor, st, rs.attempt_number)

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.max_attempts),
            wait=self._wait,
            retry=tenacity.retry_if_exception(lambda e: isinstance(e, VendorError) and e.retryable),
            before_sleep=before_sleep,
            reraise=True,
        )
        try:
            return retrying(once)
        finally:
            info.elapsed_s = round(time.monotonic() - t0, 3)
