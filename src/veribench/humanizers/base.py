"""The Humanizer protocol, the HumanizeResult record, and the base of HTTP humanizer adapters.

A humanizer rewrites AI text so that detectors take it for human writing. Every
humanizer has a ``spec`` (:class:`veribench.spec.Spec`, kind ``"humanizer"``) and
``humanize_batch(texts) -> list[HumanizeResult]`` (one per input, in order; never
raises for one bad text). Status and reason codes are the detectors' codes
(:data:`veribench.records.STATUS_CODES`), so the humanizer benchmark's
flagged/unavailable rules read one vocabulary: ``auth``, ``no_credits``, ``site_down``
and ``timeout`` mean the tool could not be exercised; ``refused`` and ``bad_response``
(an empty or unparseable output) mean it ran and failed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from veribench.detectors.api.base import spec_settings, word_count
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
from veribench.records import STATUS_CODES
from veribench.spec import OPERATIONAL, Spec

log = logging.getLogger("veribench.api")


@dataclass
class HumanizeResult:
    """One humanizer's result for one input text.

    Attributes:
        status: ``"ok"`` or a reason code from ``STATUS_CODES``.
        output: the rewritten text (``None`` unless ok).
        vendor_version: model/mode/version string the vendor or model reported, if any.
        detail: JSON-serialisable extras: raw response (redacted), attempts, reason text,
            settings sent, date.
    """

    status: str = "ok"
    output: str | None = None
    vendor_version: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUS_CODES:
            raise ValueError(f"unknown status {self.status!r}; known: {sorted(STATUS_CODES)}")
        if self.status == "ok" and not isinstance(self.output, str):
            raise ValueError("an ok HumanizeResult needs an output string")

    @classmethod
    def failed(cls, status: str, reason: str = "", **detail: Any) -> HumanizeResult:
        return cls(status=status, output=None, detail={"reason": reason, **detail})


@runtime_checkable
class Humanizer(Protocol):
    """What every humanizer provides (optional attributes as for detectors: ``batch_size``,
    ``max_concurrency``, ``cost(text)``, ``cost_unit``, ``preflight(text)``, ``describe_request(text)``)."""

    spec: Spec

    def humanize_batch(self, texts: Sequence[str]) -> list[HumanizeResult]: ...


class ApiHumanizer:
    """Base of vendor humanizer adapters: one call per text, key from ``VERIBENCH_<VENDOR>_API_KEY``.

    Subclasses set ``name``, ``default_base_url``, ``vendor_settings`` (result-changing,
    enter the spec), ``min_chars``/``max_chars`` and implement :meth:`call` (returning
    ``(output, vendor_version, raw_body)``) and :meth:`request_for` (for dry runs).
    """

    name = ""
    default_base_url = ""
    ADAPTER_VERSION = "1"
    vendor_settings: dict[str, Any] = {}
    min_chars: int | None = None
    max_chars: int | None = None
    rate_per_minute: float | None = 30.0
    default_concurrency = 2
    cost_unit = "words"
    batch_size = 1
    source = ""
    unconfirmed: tuple[str, ...] = ()

    def __init__(self, base_url: str | None = None, min_chars: int | None = None, max_chars: int | None = None,
                 **settings: Any):
        refuse_key_settings(settings, self.name)
        op = {k: settings.pop(k) for k in list(settings) if k in OPERATIONAL}
        unknown = set(settings) - set(self.vendor_settings)
        if unknown:
            known = set(self.vendor_settings) | set(OPERATIONAL) | {"base_url", "min_chars", "max_chars"}
            raise ConfigError("; ".join(unknown_key("setting", k, known, f"humanizer {self.name!r}")
                                        for k in sorted(unknown)))
        self.options = {**self.vendor_settings, **settings}
        self.base_url = check_base_url(base_url or self.default_base_url)
        if min_chars is not None:
            self.min_chars = int(min_chars)
        if max_chars is not None:
            self.max_chars = int(max_chars)
        self.ops = {k: op.get(k, v) for k, v in OPERATIONAL.items()}
        self.max_concurrency = int(self.ops["max_concurrency"] or self.default_concurrency)
        self._secrets: list[str] = []
        self.http = VendorHTTP(self.name, self.base_url, timeout=self.ops["timeout"],
                               max_attempts=self.ops["max_attempts"], backoff=self.ops["backoff"],
                               backoff_max=self.ops["backoff_max"],
                               rate_per_minute=op.get("rate_per_minute", self.rate_per_minute),
                               max_concurrency=self.max_concurrency, secrets=lambda: self._secrets)
        cls = type(self)
        self.spec = Spec("humanizer", self.name, f"veribench-api-{self.ADAPTER_VERSION}", spec_settings(
            {"base_url": self.base_url, "min_chars": self.min_chars, "max_chars": self.max_chars, **self.options},
            {"base_url": check_base_url(self.default_base_url), "min_chars": cls.min_chars,
             "max_chars": cls.max_chars, **self.vendor_settings}))
        self.validate_options()

    def validate_options(self) -> None:
        """Check ``self.options``; raise :class:`ConfigError` on a bad value."""

    def key(self) -> str:
        k = env_key(self.name)
        if k not in self._secrets:
            self._secrets.append(k)
        return k

    def cost(self, text: str) -> float:
        """Words submitted (vendors bill humanizer credits by input words)."""
        return float(word_count(text))

    def preflight(self, text: str) -> HumanizeResult | None:
        n = len(text)
        if not text.strip():
            return HumanizeResult.failed("too_short", "empty or whitespace-only text; no request sent", chars=n, sent=False)
        if self.min_chars and n < self.min_chars:
            return HumanizeResult.failed("too_short", f"{n} characters < {self.name} minimum {self.min_chars}; "
                                         "no request sent", chars=n, sent=False)
        if self.max_chars and n > self.max_chars:
            return HumanizeResult.failed("too_long", f"{n} characters > {self.name} maximum {self.max_chars}; "
                                         "no request sent", chars=n, sent=False)
        return None

    def request_for(self, text: str) -> tuple[str, str, dict[str, Any]]:
        raise NotImplementedError

    def describe_request(self, text: str) -> dict[str, Any]:
        method, path, body = self.request_for(text)
        shown = {k: (f"<text: {len(v)} chars>" if v == text else v) for k, v in body.items()}
        return {"vendor": self.name, "method": method, "url": self.base_url + path, "json": shown,
                "key_from_env": env_var(self.name), "cost": self.cost(text), "cost_unit": self.cost_unit}

    def call(self, text: str, info: CallInfo) -> tuple[Any, str | None, Any]:
        raise NotImplementedError

    def humanize_one(self, text: str) -> HumanizeResult:
        pre = self.preflight(text)
        if pre is not None:
            return pre
        info = CallInfo()
        try:
            output, version, body = self.call(text, info)
            detail = {"response": redact(body, self._secrets), "attempts": info.attempts,
                      "retried_for": info.retried_for, "input_words": word_count(text)}
            if not isinstance(output, str) or not output.strip():
                return HumanizeResult.failed("bad_response", "vendor returned no output text", **detail)
            return HumanizeResult(status="ok", output=output, vendor_version=version, detail=detail)
        except VendorError as e:
            return HumanizeResult.failed(e.status, redact(e.reason, self._secrets),
                                         **redact({**e.detail(), "attempts": info.attempts,
                                                   "retried_for": info.retried_for}, self._secrets))
        except Exception as e:
            log.exception("%s: unexpected error", self.name)
            return HumanizeResult.failed("bad_response", f"unexpected {type(e).__name__} reading the response",
                                         attempts=info.attempts)

    def humanize_batch(self, texts: Sequence[str]) -> list[HumanizeResult]:
        """One :class:`HumanizeResult` per text, in order; never raises for one text."""
        return [self.humanize_one(t) for t in texts]

    def close(self) -> None:
        self.http.close()
