"""Plain records shared by every layer: the :class:`ScoreResult` every detector returns, its
status codes and score directions.

Label convention (one place): ``ai_probability`` is P(AI) in [0, 1]; higher
means more likely AI. ``human_likelihood`` is ``1 - ai_probability`` (the scale
HumanizerBench publishes as ``raw_score``). ``raw`` is the value exactly as the
detector returned it, on its native ``scale`` and ``direction``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

#: Status codes a score can carry. ``ok`` is a usable score; every other code is a
#: recorded failure (nothing is silently dropped). Vendor codes feed the humanizer
#: benchmark's flagged/unavailable rules.
STATUS_CODES = {
    "ok": "scored",
    "unscorable": "nothing left after the detector's normalisation (empty, whitespace or unsupported script)",
    "unsupported": "the text's language or script is outside what the detector handles",
    "too_short": "below the vendor's minimum length; no request was sent",
    "too_long": "above the vendor's maximum length; no request was sent",
    "no_credits": "vendor reports insufficient credits or quota",
    "rate_limited": "vendor rate limit persisted after retries",
    "auth": "vendor rejected the API key",
    "site_down": "vendor server error or connection failure after retries",
    "refused": "vendor refused the request (validation or policy)",
    "timeout": "request or polling timed out after retries",
    "bad_response": "vendor response could not be parsed",
}

#: Failures that describe the text (its length, script, content): final, kept as the text's
#: result and served from the cache, until a run asks ``--retry-failed``.
TEXT_FAILURES = ("unscorable", "unsupported", "too_short", "too_long", "refused")
#: Failures of the call, the key, the account or the vendor (configuration or transient):
#: never final. Every later run sends the text again (a missing key set afterwards, a
#: site back up); the stored failure is then replaced.
CALL_FAILURES = ("auth", "no_credits", "rate_limited", "site_down", "timeout", "bad_response")


def is_final(status: str, *, retry_failed: bool = False) -> bool:
    """Whether a stored result with ``status`` stands (served from the cache) or is sent again.

    ``ok`` always stands; :data:`CALL_FAILURES` never do; :data:`TEXT_FAILURES` stand unless
    ``retry_failed``. Every code of :data:`STATUS_CODES` is in exactly one of these groups
    (a test checks).

    Raises:
        ValueError: ``status`` is not a known code.
    """
    if status == "ok":
        return True
    if status in CALL_FAILURES:
        return False
    if status in TEXT_FAILURES:
        return not retry_failed
    raise ValueError(f"unknown status {status!r}; known: {sorted(STATUS_CODES)}")


DIRECTIONS = ("higher_ai", "higher_human")


@dataclass
class ScoreResult:
    """One detector's result for one submitted text.

    Attributes:
        status: ``"ok"`` or a reason code from :data:`STATUS_CODES`.
        raw: the value as returned, on ``scale``; ``None`` when the status is not ok.
        scale: name of the native scale, e.g. ``"p_ai"`` (0-1), ``"human_0_100"``,
            ``"zippy_signed_delta"`` (points of compression ratio) or a statistic name.
        direction: ``"higher_ai"`` or ``"higher_human"`` for ``raw``.
        ai_probability: P(AI) in [0, 1], higher = more likely AI; ``None`` when the
            detector has no calibrated mapping (then ``score`` orients ``raw`` for ROC).
        verdict: the detector's own verdict text (e.g. ``"AI"``, ``"HUMAN_ONLY"``), if any.
        vendor_version: model/version string the vendor or model reported.
        detail: JSON-serialisable extras: raw response, token counts, ``truncated``, reason text,
            and ``hazards`` (:func:`veribench.text.hazards.text_hazards` of the text before
            canonicalisation; set by the scoring path and by every importer).
    """

    status: str = "ok"
    raw: float | None = None
    scale: str = "p_ai"
    direction: str = "higher_ai"
    ai_probability: float | None = None
    verdict: str | None = None
    vendor_version: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUS_CODES:
            raise ValueError(f"unknown status {self.status!r}; known: {sorted(STATUS_CODES)}")
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, got {self.direction!r}")
        p = self.ai_probability
        if p is not None and (not math.isfinite(p) or p < 0.0 or p > 1.0):
            raise ValueError(f"ai_probability must be in [0, 1], got {p!r}")

    @property
    def human_likelihood(self) -> float | None:
        """1 - P(AI), in [0, 1]; higher = more likely human. ``None`` without a probability."""
        return None if self.ai_probability is None else 1.0 - self.ai_probability

    @property
    def oriented(self) -> float | None:
        """A score where higher means more likely AI, for ROC analysis.

        P(AI) when present, else ``raw`` (negated when ``direction`` is ``higher_human``).
        """
        if self.status != "ok":
            return None
        if self.ai_probability is not None:
            return self.ai_probability
        if self.raw is None:
            return None
        return self.raw if self.direction == "higher_ai" else -self.raw

    @property
    def hazards(self) -> dict[str, Any] | None:
        """``detail["hazards"]``: the input hazards recorded with this score (see
        :mod:`veribench.text.hazards`), or ``None`` for a score stored without them."""
        return self.detail.get("hazards")

    @classmethod
    def failed(cls, status: str, reason: str = "", **detail: Any) -> ScoreResult:
        """A non-ok result with a reason text in ``detail['reason']``."""
        return cls(status=status, raw=None, ai_probability=None, detail={"reason": reason, **detail})


#: Strings that mark a text fingerprint-only (compared after ``strip().lower()``): the strings
#: pydantic's lax ``bool`` reads as true, so a provenance the Document model would coerce at
#: import and one stored as written get the same verdict.
FINGERPRINT_ONLY_TRUE_STRINGS = frozenset({"true", "t", "yes", "y", "on", "1"})


def fingerprint_only_marked(value: Any) -> bool:
    """Whether the value of ``provenance.fingerprint_only`` (parsed JSON: bool, number, string,
    ``None``, list or object) marks a text fingerprint-only (CONTRACTS.md).

    True for JSON ``true``, a non-zero number (NaN included) and a string in
    :data:`FINGERPRINT_ONLY_TRUE_STRINGS` (``"true"``, ``"Yes"``, ``" 1 "``); false for
    everything else (``false``, ``0``, ``None``, ``"no"``, ``"2"``, lists, objects). When in
    doubt a text is withheld, never published. The one rule: the workspace
    (:meth:`veribench.store.Workspace.fingerprint_only_ids`) and the bundle verifier
    (:func:`veribench.bundles.docstatus.marked`) both call it.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    if isinstance(value, str):
        return value.strip().lower() in FINGERPRINT_ONLY_TRUE_STRINGS
    return False
