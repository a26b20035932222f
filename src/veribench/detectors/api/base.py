"""Shared base of the commercial detector adapters.

An adapter is a small subclass of :class:`ApiDetector` that says how to build the
vendor's request and how to read its response; the vendor's facts (endpoint, limits,
scale, direction, sources, what is unconfirmed) are data in :mod:`.vendors`.

Spec settings (the idempotency key is (adapter, settings, text hash)) hold only what can
change a result: ``base_url``, the length limits and vendor options such as a model
version. Operational settings (``timeout``, ``max_attempts``, ``backoff``,
``rate_per_minute``, ``max_concurrency``) are not part of the spec, and keys are never
settings at all: they come from ``VERIBENCH_<VENDOR>_API_KEY``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from veribench.detectors.api.http import (
    CallInfo,
    ConfigError,
    VendorError,
    VendorHTTP,
    check_base_url,
    env_key,
    env_var,
    redact,
    refuse_key_settings,
)
from veribench.errors import unknown_key
from veribench.records import ScoreResult
from veribench.spec import OPERATIONAL, Spec

log = logging.getLogger("veribench.api")



@dataclass(frozen=True)
class VendorInfo:
    """Facts about one vendor API, with their source.

    Attributes:
        name: registry name (``gptzero``); the key lives in ``VERIBENCH_<NAME>_API_KEY``.
        base_url: the vendor's documented root URL.
        endpoint: method and path of the scoring call.
        scale / direction: the native score's scale name and direction.
        rule: how the native score becomes P(AI), in words.
        min_chars / max_chars: length limits checked before any request (``None``: none known).
        cost_unit: ``"words"`` (the unit ``--max-spend`` counts).
        rate_per_minute / max_concurrency: default politeness limits.
        source: where the facts come from.
        unconfirmed: facts taken from client code or conflicting docs.
    """

    name: str
    base_url: str
    endpoint: str
    scale: str
    direction: str
    rule: str
    min_chars: int | None = None
    max_chars: int | None = None
    cost_unit: str = "words"
    rate_per_minute: float | None = 60.0
    max_concurrency: int = 2
    source: str = ""
    unconfirmed: tuple[str, ...] = field(default_factory=tuple)


def spec_settings(effective: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """The settings that enter a spec: those that differ from the adapter's defaults.

    The defaults belong to the adapter version (the spec's ``version``): whoever changes
    a default in code must bump ``ADAPTER_VERSION``, so a cached result is never reused
    under different effective settings. A plain ``gptzero`` run has the label ``gptzero``.
    """
    return {k: v for k, v in effective.items() if k not in defaults or defaults[k] != v
            or type(defaults[k]) is not type(v)}


def want_bool(name: str, value: Any) -> bool:
    """A JSON boolean setting, never coerced (the string "false" is truthy; case c15).

    Raises:
        ConfigError: ``value`` is not ``True`` or ``False``.
    """
    if not isinstance(value, bool):
        raise ConfigError(f"setting {name!r} must be true or false, got {value!r}")
    return value


def word_count(text: str) -> int:
    """Whitespace-separated words (the unit vendors bill and ``--max-spend`` counts)."""
    return len(text.split())


def as_float(v: Any, what: str) -> float:
    """A finite float from a JSON number or numeric string (ZeroGPT sends strings).

    Raises:
        VendorError: ``bad_response`` for booleans, missing, non-numeric or non-finite values.
    """
    if isinstance(v, bool) or v is None:
        raise VendorError("bad_response", f"{what} missing or not a number")
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise VendorError("bad_response", f"{what} is not a number") from None
    if not math.isfinite(f):
        raise VendorError("bad_response", f"{what} is not finite")
    return f


def in_range(f: float, lo: float, hi: float, what: str) -> float:
    if f < lo or f > hi:
        raise VendorError("bad_response", f"{what}={f} outside [{lo}, {hi}]")
    return f


def dig(body: Any, *path: Any) -> Any:
    """``body[path[0]][path[1]]...`` or ``None`` when any step is missing."""
    cur = body
    for p in path:
        if isinstance(p, int):
            if not isinstance(cur, list) or len(cur) <= p:
                return None
        elif not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    return cur


class ApiDetector:
    """Base class: one HTTP call per text (``batch_size = 1``), so every call is stored at once.

    Subclasses set ``info`` (:class:`VendorInfo`), ``vendor_settings`` (result-changing
    options and their defaults) and implement :meth:`request_for` and :meth:`parse`.
    """

    info: VendorInfo
    ADAPTER_VERSION = "1"
    #: result-changing vendor options and their defaults (they enter the spec).
    vendor_settings: dict[str, Any] = {}
    batch_size = 1

    def __init__(self, base_url: str | None = None, min_chars: int | None = None, max_chars: int | None = None,
                 **settings: Any):
        refuse_key_settings(settings, self.info.name)
        op = {k: settings.pop(k) for k in list(settings) if k in OPERATIONAL}
        unknown = set(settings) - set(self.vendor_settings)
        if unknown:
            known = set(self.vendor_settings) | set(OPERATIONAL) | {"base_url", "min_chars", "max_chars"}
            raise ConfigError("; ".join(unknown_key("setting", k, known, f"detector {self.info.name!r}")
                                        for k in sorted(unknown)))
        self.options = {**self.vendor_settings, **settings}
        self.validate_options()
        self.base_url = check_base_url(base_url or self.info.base_url)
        self.min_chars = self.info.min_chars if min_chars is None else int(min_chars)
        self.max_chars = self.info.max_chars if max_chars is None else int(max_chars)
        self.ops = {k: op.get(k, v) for k, v in OPERATIONAL.items()}
        self.max_concurrency = int(self.ops["max_concurrency"] or self.info.max_concurrency)
        self.cost_unit = self.info.cost_unit
        self._secrets: list[str] = []
        self.http = VendorHTTP(
            self.info.name, self.base_url, timeout=self.ops["timeout"], max_attempts=self.ops["max_attempts"],
            backoff=self.ops["backoff"], backoff_max=self.ops["backoff_max"],
            rate_per_minute=self.ops["rate_per_minute"] if "rate_per_minute" in op else self.info.rate_per_minute,
            max_concurrency=self.max_concurrency, secrets=lambda: self._secrets,
        )
        effective = {"base_url": self.base_url, "min_chars": self.min_chars, "max_chars": self.max_chars,
                     **self.options}
        defaults = {"base_url": check_base_url(self.info.base_url), "min_chars": self.info.min_chars,
                    "max_chars": self.info.max_chars, **self.vendor_settings}
        self.spec = Spec("detector", self.info.name, f"veribench-api-{self.ADAPTER_VERSION}",
                         spec_settings(effective, defaults))

    # -- hooks ----------------------------------------------------------------------
    def validate_options(self) -> None:
        """Check ``self.options``; raise :class:`ConfigError` on a bad value."""

    def request_for(self, text: str) -> tuple[str, str, dict[str, Any], dict[str, str]]:
        """(method, path, JSON body without the key, headers without the key) for ``text``."""
        raise NotImplementedError

    def auth(self, headers: dict[str, str], body: dict[str, Any]) -> None:
        """Put the key into the outgoing headers or body (in place). Default: none."""

    def check_body(self, body: Any) -> None:
        """Raise :class:`VendorError` for an error carried in an HTTP 2xx body."""

    def parse(self, body: Any) -> ScoreResult:
        """The :class:`ScoreResult` for a 2xx body (``detail`` is filled by the caller)."""
        raise NotImplementedError

    # -- the Detector protocol ------------------------------------------------------
    @property
    def key_var(self) -> str:
        return env_var(self.info.name)

    def key(self) -> str:
        k = env_key(self.info.name)
        if k not in self._secrets:
            self._secrets.append(k)
        return k

    def cost(self, text: str) -> float:
        """Words the vendor would bill for ``text`` (units: :attr:`cost_unit`)."""
        return float(word_count(self.submitted_text(text)))

    def submitted_text(self, text: str) -> str:
        """The exact text sent (adapters that truncate override this)."""
        return text

    def preflight(self, text: str) -> ScoreResult | None:
        """``too_short`` / ``too_long`` before any request is sent (limits in :class:`VendorInfo`)."""
        n = len(text)
        if not text.strip():
            return ScoreResult.failed("too_short", "empty or whitespace-only text; no request sent", chars=n, sent=False)
        if self.min_chars and n < self.min_chars:
            return ScoreResult.failed("too_short", f"{n} characters < {self.info.name} minimum {self.min_chars}; "
                                      "no request sent", chars=n, min_chars=self.min_chars, sent=False)
        if self.max_chars and n > self.max_chars:
            return ScoreResult.failed("too_long", f"{n} characters > {self.info.name} maximum {self.max_chars}; "
                                      "no request sent", chars=n, max_chars=self.max_chars, sent=False)
        return None

    def describe_request(self, text: str) -> dict[str, Any]:
        """What would be sent for ``text`` (no secrets; the text itself shown only by length)."""
        method, path, body, headers = self.request_for(text)
        shown = {k: (f"<text: {len(v)} chars>" if isinstance(v, str) and v == self.submitted_text(text) else v)
                 for k, v in body.items()}
        return {"vendor": self.info.name, "method": method, "url": self.base_url + path, "json": shown,
                "key_from_env": self.key_var, "cost": self.cost(text), "cost_unit": self.cost_unit}

    def call(self, text: str, info: CallInfo) -> Any:
        """Send the scoring request for ``text``; return the 2xx body. Async vendors override."""
        method, path, body, headers = self.request_for(text)
        headers, body = dict(headers), dict(body)
        self.auth(headers, body)
        return self.http.request(method, path, json_body=body, headers=headers, info=info, check=self.check_body)

    def score_one(self, text: str) -> ScoreResult:
        pre = self.preflight(text)
        if pre is not None:
            return pre
        info = CallInfo()
        extra = {"chars": len(text), "words": word_count(text)}
        if self.submitted_text(text) != text:
            extra.update(truncated=True, chars_submitted=len(self.submitted_text(text)))
        try:
            body = self.call(text, info)
            r = self.parse(body)
            r.detail = {**extra, **r.detail, "response": redact(body, self._secrets), "attempts": info.attempts,
                        "retried_for": info.retried_for, "http_status": info.http_status}
            return r
        except VendorError as e:
            return ScoreResult.failed(e.status, redact(e.reason, self._secrets),
                                      **redact({**extra, **e.detail(), "attempts": info.attempts,
                                                "retried_for": info.retried_for}, self._secrets))
        except Exception as e:  # a bug or an unforeseen body: recorded, never raised for one text
            log.exception("%s: unexpected error", self.info.name)
            return ScoreResult.failed("bad_response", f"unexpected {type(e).__name__} reading the response",
                                      **extra, attempts=info.attempts)

    def score_batch(self, texts: Sequence[str]) -> list[ScoreResult]:
        """One :class:`ScoreResult` per text, in order; never raises for one text."""
        return [self.score_one(t) for t in texts]

    def close(self) -> None:
        self.http.close()
