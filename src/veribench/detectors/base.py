"""The Detector protocol and the ScoreResult record every detector returns.

Label convention (one place): ``ai_probability`` is P(AI) in [0, 1]; higher
means more likely AI. ``human_likelihood`` is ``1 - ai_probability`` (the scale
HumanizerBench publishes as ``raw_score``). ``raw`` is the value exactly as the
detector returned it, on its native ``scale`` and ``direction``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

from ..spec import Spec

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
            and ``hazards`` (:func:`veribench.corpus.hazards.text_hazards` of the text before
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
        :mod:`veribench.corpus.hazards`), or ``None`` for a score stored without them."""
        return self.detail.get("hazards")

    @classmethod
    def failed(cls, status: str, reason: str = "", **detail: Any) -> "ScoreResult":
        """A non-ok result with a reason text in ``detail['reason']``."""
        return cls(status=status, raw=None, ai_probability=None, detail={"reason": reason, **detail})


@runtime_checkable
class Detector(Protocol):
    """What every detector provides.

    ``spec`` identifies it (name, version, settings). ``score_batch`` scores a batch
    of texts and returns one :class:`ScoreResult` per text, in order; it must not
    raise for a single bad text (return a failed result with a reason code instead).
    Optional attributes the scoring path honours:

    - ``batch_size`` (int): texts per call (default 32).
    - ``max_concurrency`` (int): concurrent calls for I/O-bound detectors (default 1).
    - ``cost(text) -> float`` and ``cost_unit`` (``"words"`` or ``"credits"``) for ``--max-spend``.
    - ``preflight(text) -> ScoreResult | None``: a failure known before any call (e.g. too_short).
    - ``describe_request(text) -> dict``: what would be sent, for ``--dry-run`` (no secrets).
    """

    spec: Spec

    def score_batch(self, texts: Sequence[str]) -> list[ScoreResult]: ...


def canonicalize_mode(spec: Spec) -> str:
    """The ``canonicalize`` mode a detector spec declares (``"none"`` when absent)."""
    from ..corpus.hazards import SETTING, canonicalize_setting

    return canonicalize_setting(spec.settings.get(SETTING))


class Canonicalized:
    """A detector that scores the canonical form of each text (setting ``canonicalize``).

    Built by the registry for any detector created with ``canonicalize="skeleton"``; see
    :func:`veribench.corpus.hazards.canonicalize` for the exact transformation. The spec is
    the wrapped detector's with ``settings["canonicalize"]`` added, so the setting changes
    the spec hash, the cache key and every table label. ``score_batch``, ``preflight``,
    ``cost`` and ``describe_request`` see the canonical text; every other attribute
    (``batch_size``, ``max_concurrency``, ``cost_unit`` ...) is the wrapped detector's.
    The scoring path (:func:`veribench.detectors.pipeline.score_texts`) also submits the
    canonical text, so the submitted text's SHA-256 is the canonical text's.

    Args:
        inner: the detector to wrap (anything meeting :class:`Detector`).
        mode: a mode of :data:`veribench.corpus.hazards.CANONICALIZE_MODES` other than ``none``.

    Raises:
        ValueError: unknown mode, or ``inner`` already has a ``canonicalize`` setting.
    """

    def __init__(self, inner: Any, mode: str):
        from ..corpus.hazards import SETTING, canonicalize_setting

        self.mode = canonicalize_setting(mode)
        if self.mode == "none":
            raise ValueError("Canonicalized needs a mode other than 'none'")
        if SETTING in inner.spec.settings:
            raise ValueError(f"detector {inner.spec.name!r} already has a {SETTING!r} setting")
        self.inner = inner
        for name in ("preflight", "cost", "describe_request"):
            fn = getattr(inner, name, None)
            if callable(fn):
                setattr(self, name, (lambda f: lambda text: f(self.canonical(text)))(fn))

    @property
    def spec(self) -> Spec:  # type: ignore[override]
        """The wrapped detector's spec with ``settings["canonicalize"]`` added."""
        from ..corpus.hazards import SETTING

        s = self.inner.spec
        return Spec(kind=s.kind, name=s.name, version=s.version, settings={**s.settings, SETTING: self.mode})

    def canonical(self, text: str) -> str:
        """The text this detector submits for ``text``."""
        from ..corpus.hazards import canonicalize

        return canonicalize(text, self.mode)

    def score_batch(self, texts: Sequence[str]) -> list[ScoreResult]:
        return self.inner.score_batch([self.canonical(t) for t in texts])

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (e.g. during unpickling)
            raise AttributeError(name)
        return getattr(self.inner, name)


def submitted_text(spec: Any, text: str) -> str:
    """The exact text a detector with ``spec`` is sent for ``text``: the canonical form
    when the spec sets ``canonicalize`` (:mod:`veribench.corpus.hazards`), else ``text``."""
    from ..corpus.hazards import canonicalize

    mode = canonicalize_mode(spec)
    return text if mode == "none" else canonicalize(text, mode)


def with_hazards(spec: Any, r: ScoreResult, text: str, submitted_sha: str) -> ScoreResult:
    """``r`` with the hazards of ``text`` (the text before canonicalisation) in its detail."""
    from ..corpus.hazards import text_hazards
    from ..hashing import text_sha256

    extra: dict[str, Any] = {"hazards": text_hazards(text)}
    mode = canonicalize_mode(spec)
    if mode != "none":
        extra["canonicalization"] = {"setting": mode, "input_sha256": text_sha256(text),
                                     "submitted_sha256": submitted_sha}
    r.detail = {**(r.detail or {}), **extra}
    return r


def results_per_input(spec: Any, texts: list[str], subs: list[str], first: dict[str, str],
                      res: dict[str, ScoreResult]) -> dict[str, ScoreResult]:
    """Results keyed by input text, each with that input's hazards (a score stored before
    hazards were recorded gets them here); inputs sharing a canonical text share its score."""
    from dataclasses import replace

    from ..hashing import text_sha256

    if canonicalize_mode(spec) == "none":
        return {s: r if "hazards" in (r.detail or {}) else with_hazards(spec, r, first[s], s) for s, r in res.items()}
    out: dict[str, ScoreResult] = {}
    for t, sub in zip(texts, subs):
        r = res.get(text_sha256(sub))
        if r is not None:
            out[text_sha256(t)] = with_hazards(spec, replace(r, detail=dict(r.detail or {})), t, text_sha256(sub))
    return out
