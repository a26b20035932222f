"""The Detector protocol, the canonicalising wrapper, and the helpers that tie a score to
the exact text submitted. :class:`veribench.records.ScoreResult` is the record every
detector returns (its label convention is stated there)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol, runtime_checkable

from veribench.hashing import text_sha256
from veribench.records import ScoreResult
from veribench.spec import Spec
from veribench.text.hazards import SETTING, canonicalize, canonicalize_setting, text_hazards


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
    return canonicalize_setting(spec.settings.get(SETTING))


class Canonicalized:
    """A detector that scores the canonical form of each text (setting ``canonicalize``).

    Built by the registry for any detector created with ``canonicalize="skeleton"``; see
    :func:`veribench.text.hazards.canonicalize` for the exact transformation. The spec is
    the wrapped detector's with ``settings["canonicalize"]`` added, so the setting changes
    the spec hash, the cache key and every table label. ``score_batch``, ``preflight``,
    ``cost`` and ``describe_request`` see the canonical text; every other attribute
    (``batch_size``, ``max_concurrency``, ``cost_unit`` ...) is the wrapped detector's.
    The scoring path (:func:`veribench.detectors.pipeline.score_texts`) also submits the
    canonical text, so the submitted text's SHA-256 is the canonical text's.

    Args:
        inner: the detector to wrap (anything meeting :class:`Detector`).
        mode: a mode of :data:`veribench.text.hazards.CANONICALIZE_MODES` other than ``none``.

    Raises:
        ValueError: unknown mode, or ``inner`` already has a ``canonicalize`` setting.
    """

    def __init__(self, inner: Any, mode: str):

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

        s = self.inner.spec
        return Spec(kind=s.kind, name=s.name, version=s.version, settings={**s.settings, SETTING: self.mode})

    def canonical(self, text: str) -> str:
        """The text this detector submits for ``text``."""

        return canonicalize(text, self.mode)

    def score_batch(self, texts: Sequence[str]) -> list[ScoreResult]:
        return self.inner.score_batch([self.canonical(t) for t in texts])

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (e.g. during unpickling)
            raise AttributeError(name)
        return getattr(self.inner, name)


def submitted_text(spec: Any, text: str) -> str:
    """The exact text a detector with ``spec`` is sent for ``text``: the canonical form
    when the spec sets ``canonicalize`` (:mod:`veribench.text.hazards`), else ``text``."""
    mode = canonicalize_mode(spec)
    return text if mode == "none" else canonicalize(text, mode)


def with_hazards(spec: Any, r: ScoreResult, text: str, submitted_sha: str) -> ScoreResult:
    """``r`` with the hazards of ``text`` (the text before canonicalisation) in its detail."""
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
    if canonicalize_mode(spec) == "none":
        return {s: r if "hazards" in (r.detail or {}) else with_hazards(spec, r, first[s], s) for s, r in res.items()}
    out: dict[str, ScoreResult] = {}
    for t, sub in zip(texts, subs):
        r = res.get(text_sha256(sub))
        if r is not None:
            out[text_sha256(t)] = with_hazards(spec, replace(r, detail=dict(r.detail or {})), t, text_sha256(sub))
    return out


def canonicalizing(name: str, factory: Callable[..., Any]) -> Callable[..., Any]:
    """``factory`` plus the shared detector setting ``canonicalize`` (``none`` | ``skeleton``);
    the registry applies it to every detector factory (:data:`veribench.registry.WRAPPERS`).

    ``none`` (or absent) builds the detector as it is, with its spec unchanged; ``skeleton``
    wraps it in :class:`Canonicalized`, whose spec carries the setting (docs/hazards.md).

    Raises (from the returned factory):
        ValueError: an unknown mode, or ``skeleton`` asked of imported scores.
    """

    @functools.wraps(factory)
    def build(*args: Any, **settings: Any) -> Any:
        mode = canonicalize_setting(settings.pop(SETTING, None))
        det = factory(*args, **settings)
        if mode == "none":
            return det
        if name == "imported":
            raise ValueError(f"{SETTING} does not apply to imported scores: they were computed elsewhere, on the "
                             "text the tool saw")
        return Canonicalized(det, mode)

    build.shared_settings = (SETTING,)  # type: ignore[attr-defined]  # named by registry.create's "did you mean"
    return build
