"""Bounded work for the two web apps (the editors' rating app and the arm-B writing app).

One body-size limit
-------------------
:class:`BodyLimit` is an ASGI middleware placed outermost in both apps. It reads the request
body as it arrives, counting bytes, and stops at :data:`MAX_BODY_BYTES`: a request whose
``Content-Length`` is over the cap is refused before a byte of its body is read, and one
without a length (``Transfer-Encoding: chunked``) is refused as soon as the bytes received
pass the cap. The refusal is ``413`` with the apps' error shape
``{"error": "...", "field": null}``; the server then closes the connection without reading
the rest. A body within the cap is held (at most the cap, 720 KiB) and handed to the app
unchanged, so the memory a request can take is bounded whatever the client sends.

The cap is the largest body the writing app needs: a draft of
``rules.MAX_TEXT_CHARS`` characters of 4-byte UTF-8, each byte written ``%XX`` by a form
or ``\\uXXXX`` (a surrogate pair: 12 bytes a character) by JSON, plus 1,024 bytes for the
other fields. The rating app's readings are far smaller; it uses the same one limit.

Sign-in attempts
----------------
Both apps sign in with a bearer secret alone (an editor token, an invitation link's
token): a failed attempt names no account, so a per-account count cannot be kept without
telling a caller which accounts exist. A wrong secret is a guess against every account at
once; :class:`AttemptLimiter` therefore counts failures

- per client address: at most :data:`FAILURES_PER_ADDRESS` failures in
  :data:`WINDOW_SECONDS` (sliding window), and
- for the whole app (every account together): at most :data:`FAILURES_PER_APP` failures
  in the same window.

Past either limit every sign-in attempt that counts (the login form, a Bearer header, an
invitation link) is answered ``429`` with ``Retry-After`` (whole seconds until the oldest
counted failure leaves the window) without checking the secret, so a guess in a blocked
window can neither succeed nor tell anything. A session already signed in (its cookie)
is not a sign-in attempt and keeps working. The answers to a wrong secret and to a blocked
attempt are the same whichever account a caller may have aimed at (no enumeration). The
counts are kept in memory per app process: a restart clears them.

With 32-byte random tokens (``secrets.token_urlsafe(32)``) guessing is hopeless anyway; the
limit bounds the work and the log noise a guesser can cause.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from veribench.rubric.write.rules import MAX_TEXT_CHARS

#: The one body-size limit of both apps, in bytes (see the module docstring).
MAX_BODY_BYTES = MAX_TEXT_CHARS * 12 + 1024
#: Sign-in failures allowed per client address, and for the whole app, in :data:`WINDOW_SECONDS`.
FAILURES_PER_ADDRESS = 20
FAILURES_PER_APP = 100
WINDOW_SECONDS = 60.0
#: Client addresses tracked at once; past it the oldest are dropped (their counts restart).
MAX_TRACKED = 10_000


def _error_body(message: str) -> bytes:
    return json.dumps({"error": message, "field": None}).encode()


async def _send_json(send: Any, status: int, message: str, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    body = _error_body(message)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close"), (b"cache-control", b"no-store"), *headers]})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """ASGI middleware: refuse any request body over ``limit`` bytes while reading it (413).

    Args:
        app: the ASGI app to wrap.
        limit: the cap in bytes (default :data:`MAX_BODY_BYTES`).
    """

    def __init__(self, app: Any, limit: int = MAX_BODY_BYTES):
        self.app, self.limit = app, int(limit)

    def too_large(self) -> str:
        return f"the request body is larger than {self.limit} bytes"

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for k, v in scope.get("headers") or ():
            if k.lower() == b"content-length":
                if not v.strip().isdigit():
                    await _send_json(send, 400, "the Content-Length header is not a whole number")
                    return
                if int(v) > self.limit:
                    await _send_json(send, 413, self.too_large())
                    return
        chunks: list[bytes] = []
        total = 0
        while True:
            msg = await receive()
            if msg["type"] != "http.request":  # the client went away: nothing to answer
                return
            body = msg.get("body", b"")
            total += len(body)
            if total > self.limit:
                chunks.clear()
                await _send_json(send, 413, self.too_large())
                return
            if body:
                chunks.append(body)
            if not msg.get("more_body", False):
                break
        data = b"".join(chunks)
        chunks.clear()
        given = False

        async def replay() -> dict[str, Any]:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": data, "more_body": False}
            return await receive()  # type: ignore[no-any-return]

        await self.app(scope, replay, send)


class TooManyAttempts(Exception):
    """Sign-in refused for now: ``retry_after`` whole seconds (>= 1)."""

    def __init__(self, retry_after: int):
        super().__init__(f"too many failed sign-in attempts; try again in {retry_after} s")
        self.retry_after = retry_after


class AttemptLimiter:
    """Sliding-window counts of failed sign-in attempts, per client address and per app.

    Args:
        per_address: failures allowed per address in ``window`` seconds (>= 1).
        per_app: failures allowed for the whole app in ``window`` seconds (>= 1).
        window: window length in seconds (> 0).
        clock: monotonic seconds (tests pass a fake clock).

    Thread-safe (the apps' sync routes run in a thread pool).
    """

    def __init__(self, per_address: int = FAILURES_PER_ADDRESS, per_app: int = FAILURES_PER_APP,
                 window: float = WINDOW_SECONDS, clock: Callable[[], float] = time.monotonic):
        self.per_address, self.per_app, self.window, self.clock = per_address, per_app, window, clock
        self._by_address: dict[str, deque[float]] = {}
        self._app: deque[float] = deque()
        self._lock = threading.Lock()

    def _prune(self, q: deque[float], now: float) -> None:
        while q and q[0] <= now - self.window:
            q.popleft()

    def check(self, address: str | None) -> None:
        """Raise :class:`TooManyAttempts` when ``address`` or the app is over its limit."""
        now = self.clock()
        with self._lock:
            waits = []
            self._prune(self._app, now)
            if len(self._app) >= self.per_app:
                waits.append(self._app[len(self._app) - self.per_app] + self.window - now)
            q = self._by_address.get(address or "")
            if q is not None:
                self._prune(q, now)
                if len(q) >= self.per_address:
                    waits.append(q[len(q) - self.per_address] + self.window - now)
        if waits:
            raise TooManyAttempts(max(1, math.ceil(max(waits))))

    def fail(self, address: str | None) -> None:
        """Count one failed attempt from ``address``."""
        now = self.clock()
        key = address or ""
        with self._lock:
            self._app.append(now)
            q = self._by_address.get(key)
            if q is None:
                if len(self._by_address) >= MAX_TRACKED:
                    for k in [k for k, v in self._by_address.items() if not v or v[-1] <= now - self.window]:
                        del self._by_address[k]
                    while len(self._by_address) >= MAX_TRACKED:
                        del self._by_address[next(iter(self._by_address))]
                q = self._by_address[key] = deque()
            q.append(now)
            while len(q) > self.per_address:
                q.popleft()
            while len(self._app) > self.per_app:
                self._app.popleft()
