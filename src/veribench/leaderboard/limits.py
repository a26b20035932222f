"""Bounded work for the leaderboard's web app: upload caps read while streaming, and rate limits.

Upload cap
----------
:func:`read_body` reads a request body chunk by chunk and stops at ``cap`` bytes: a
``Content-Length`` over the cap is refused before a byte of the body is read, and a body
without one (``Transfer-Encoding: chunked``) is refused as soon as the bytes received pass
the cap (:class:`TooLarge`, answered ``413``). At most ``cap`` bytes are ever held. The
cap of a submission is :data:`MAX_UPLOAD_BYTES` (64 MiB: RAID's test set, 672,000 rows of
``{"id": <36-character UUID>, "score": <float>}``, is about 45 MB written by ``json.dump``;
its metadata.json is a few KiB); every other request body is capped at
:data:`MAX_FORM_BYTES`.

Rate limits
-----------
:class:`RateLimiter` is a token bucket per key (Turner 1986, "New directions in
communications"; the form used by most HTTP rate limiters): a bucket holds at most
``burst`` tokens, refills at ``per_minute / 60`` tokens a second, and each request takes
one; an empty bucket answers :class:`RateLimited` (``429`` with ``Retry-After``, whole
seconds until one token is back). The app keeps three (:class:`Limits`):

- every request, per client address (:data:`REQUESTS_PER_MINUTE`);
- failed sign-ins (a wrong token, Bearer or the sign-in form), per client address
  (:data:`FAILED_SIGNINS_PER_MINUTE`): past it, a sign-in is refused without checking the
  token, so a guess in a blocked window can neither succeed nor tell anything;
- submissions, per team (:data:`SUBMISSIONS_PER_MINUTE`); the board's own per-team limit
  on the number of scored entries (board.toml) is separate and counted by the board.

The client address is the socket's peer (``request.client.host``) unless
``veribench leaderboard serve --forwarded-allow-ips`` names a proxy whose
``X-Forwarded-For`` is read. Counts live in memory per process: a restart clears them.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field

#: Largest submission body, bytes (see the module docstring).
MAX_UPLOAD_BYTES = 64 * 1024 * 1024
#: Largest body of any other request (the sign-in form), bytes.
MAX_FORM_BYTES = 16 * 1024
#: Requests per minute per client address (any route).
REQUESTS_PER_MINUTE = 600
#: Failed sign-ins per minute per client address.
FAILED_SIGNINS_PER_MINUTE = 20
#: Submissions per minute per team.
SUBMISSIONS_PER_MINUTE = 6
#: Keys a limiter tracks at once; past it the least recently used is forgotten (its bucket refills).
MAX_KEYS = 10_000


class TooLarge(Exception):
    """A request body over its cap (answered 413)."""

    def __init__(self, cap: int):
        super().__init__(f"the request body is larger than {cap} bytes; nothing was stored")
        self.cap = cap


class RateLimited(Exception):
    """Refused for now: ``retry_after`` whole seconds (>= 1) until the next request counts."""

    def __init__(self, what: str, retry_after: int):
        super().__init__(f"too many {what}; try again in {retry_after} s")
        self.retry_after = retry_after


async def read_body(headers: dict[str, str] | object, chunks: AsyncIterator[bytes], cap: int) -> bytes:
    """The whole body, read chunk by chunk, refusing it at ``cap`` bytes.

    Args:
        headers: the request's headers (a mapping with ``get``), for ``Content-Length``.
        chunks: the body as it arrives (``request.stream()``).
        cap: the most bytes accepted (>= 0).

    Returns:
        The body (at most ``cap`` bytes).

    Raises:
        TooLarge: ``Content-Length`` over the cap (nothing read), or more than ``cap`` bytes
            received (reading stops there).
        ValueError: a ``Content-Length`` that is not a whole number.
    """
    declared = headers.get("content-length") if isinstance(headers, Mapping) else None
    if declared is not None:
        if not declared.strip().isdigit():
            raise ValueError("the Content-Length header is not a whole number")
        if int(declared) > cap:
            raise TooLarge(cap)
    parts: list[bytes] = []
    total = 0
    async for chunk in chunks:
        total += len(chunk)
        if total > cap:
            parts.clear()
            raise TooLarge(cap)
        parts.append(chunk)
    return b"".join(parts)


@dataclass
class RateLimiter:
    """Token buckets per key (thread-safe).

    Args:
        per_minute: refill rate, tokens a minute (> 0).
        burst: bucket size, the most requests in a row (>= 1; default ``per_minute``).
        what: what is counted, for the 429 message ("submissions").
        clock: monotonic seconds (tests pass a fake clock).
    """

    per_minute: float
    burst: int | None = None
    what: str = "requests"
    clock: Callable[[], float] = time.monotonic
    _buckets: OrderedDict[str, tuple[float, float]] = field(default_factory=OrderedDict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if not self.per_minute > 0:
            raise ValueError(f"per_minute must be > 0, not {self.per_minute!r}")
        self.size = float(self.burst if self.burst is not None else max(1, math.ceil(self.per_minute)))
        if self.size < 1:
            raise ValueError(f"burst must be >= 1, not {self.burst!r}")
        self.rate = self.per_minute / 60.0

    def _level(self, key: str, now: float) -> float:
        tokens, at = self._buckets.get(key, (self.size, now))
        return min(self.size, tokens + (now - at) * self.rate)

    def check(self, key: str) -> None:
        """Raise :class:`RateLimited` when ``key``'s bucket is empty; takes nothing."""
        now = self.clock()
        with self._lock:
            level = self._level(key, now)
        if level < 1:
            raise RateLimited(self.what, max(1, math.ceil((1 - level) / self.rate)))

    def take(self, key: str) -> None:
        """Take one token from ``key``'s bucket, or raise :class:`RateLimited` (taking nothing)."""
        now = self.clock()
        with self._lock:
            level = self._level(key, now)
            if level < 1:
                wait = max(1, math.ceil((1 - level) / self.rate))
            else:
                self._buckets[key] = (level - 1, now)
                self._buckets.move_to_end(key)
                while len(self._buckets) > MAX_KEYS:
                    self._buckets.popitem(last=False)
                return
        raise RateLimited(self.what, wait)


@dataclass
class Limits:
    """The app's caps and rate limiters (defaults: the module's constants)."""

    max_upload: int = MAX_UPLOAD_BYTES
    max_form: int = MAX_FORM_BYTES
    requests: RateLimiter = field(default_factory=lambda: RateLimiter(REQUESTS_PER_MINUTE))
    signins: RateLimiter = field(default_factory=lambda: RateLimiter(FAILED_SIGNINS_PER_MINUTE,
                                                                     what="failed sign-ins"))
    submissions: RateLimiter = field(default_factory=lambda: RateLimiter(SUBMISSIONS_PER_MINUTE,
                                                                         what="submissions"))
