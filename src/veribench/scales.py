"""Imported detectors: scores recorded elsewhere (by hand from a commercial tool, or in a
published dataset) that enter the workspace like any other detector's.

An :class:`ImportedDetector` cannot compute anything: it carries the spec (the
detector's own name and version, plus settings such as the source) under which the
imported scores are stored, so tables and exports treat them like computed ones.

The scale table :data:`SCALES` is the one place where a declared native scale is
turned into P(AI) (in [0, 1], higher = more likely AI). Its rows are data:

=====================  ===========  ============  ==========================================
scale                  range        direction     P(AI)
=====================  ===========  ============  ==========================================
``p_ai``               [0, 1]       higher_ai     the value
``percent_ai``         [0, 100]     higher_ai     value / 100
``p_human``            [0, 1]       higher_human  1 - value (HumanizerBench ``raw_score``)
``human_0_100``        [0, 100]     higher_human  1 - value / 100 (e.g. Winston's human score)
``zippy_signed_delta`` unbounded    higher_ai     none (ZipPy: + when its verdict is AI)
``zippy_confidence``   [0, inf)     by verdict    none; stored as ``zippy_signed_delta``:
                                                  +value when the verdict is AI, -value else
``score_higher_ai``    unbounded    higher_ai     none (any statistic; used for ranking only)
``score_higher_human`` unbounded    higher_human  none
=====================  ===========  ============  ==========================================

Aliases: ``percent_human`` = ``human_0_100``, ``human_0_1`` = ``p_human``, ``prob_ai`` = ``p_ai``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from veribench.errors import InputError, VeribenchError
from veribench.records import ScoreResult
from veribench.spec import Spec


@dataclass(frozen=True)
class Scale:
    """A native score scale.

    Attributes:
        name: scale name stored with each score.
        lo, hi: closed range of valid raw values (``None`` = unbounded on that side).
        direction: ``higher_ai`` or ``higher_human`` (``"verdict"``: the sign comes from
            the verdict, see ``signed_as``).
        probability: True when the range maps linearly onto P(AI).
        signed_as: for verdict-signed scales, the scale the signed value is stored as.
        note: where the convention comes from.
    """

    name: str
    lo: float | None
    hi: float | None
    direction: str
    probability: bool
    signed_as: str | None = None
    note: str = ""

    def check(self, value: float) -> str | None:
        """A reason text if ``value`` is outside the range, else ``None``."""
        if self.lo is not None and value < self.lo:
            return f"{value!r} is below the {self.name} scale's minimum {self.lo:g}"
        if self.hi is not None and value > self.hi:
            return f"{value!r} is above the {self.name} scale's maximum {self.hi:g}"
        return None

    def to_probability(self, value: float) -> float | None:
        """P(AI) in [0, 1] for ``value``; ``None`` when the scale has no calibrated mapping."""
        if not self.probability or self.lo is None or self.hi is None:
            return None
        frac = (float(value) - self.lo) / (self.hi - self.lo)
        p = frac if self.direction == "higher_ai" else 1.0 - frac
        return min(1.0, max(0.0, p))


#: The scale conventions, in one place (see the module docstring).
SCALES: dict[str, Scale] = {
    s.name: s
    for s in (
        Scale("p_ai", 0.0, 1.0, "higher_ai", True, note="probability the text is AI-written"),
        Scale("percent_ai", 0.0, 100.0, "higher_ai", True, note="percent AI, e.g. GPTZero/Originality dashboards"),
        Scale("p_human", 0.0, 1.0, "higher_human", True,
              note="human-likelihood; HumanizerBench detector-scores.json raw_score (1 = human)"),
        Scale("human_0_100", 0.0, 100.0, "higher_human", True, note="percent human, e.g. Winston AI's score"),
        Scale("zippy_signed_delta", None, None, "higher_ai", False,
              note="thinkst-zippy: ratio(prelude) - ratio(prelude+text), x100; + = AI verdict"),
        Scale("zippy_confidence", 0.0, None, "verdict", False, signed_as="zippy_signed_delta",
              note="thinkst-zippy's (verdict, abs(delta)*100) output; signed by the verdict"),
        Scale("score_higher_ai", None, None, "higher_ai", False, note="uncalibrated statistic, higher = AI"),
        Scale("score_higher_human", None, None, "higher_human", False, note="uncalibrated statistic, higher = human"),
    )
}
SCALE_ALIASES = {"percent_human": "human_0_100", "human_0_1": "p_human", "prob_ai": "p_ai"}

#: Verdict texts that mean "AI" for verdict-signed scales (compared case-insensitively).
AI_VERDICTS = frozenset({"ai", "ai-generated", "ai_generated", "fake", "machine", "generated"})
HUMAN_VERDICTS = frozenset({"human", "human-written", "human_written", "real", "original"})


def get_scale(name: str) -> Scale:
    """The :class:`Scale` called ``name`` (aliases accepted).

    Raises:
        InputError: unknown scale; the message lists the known ones.
    """
    key = SCALE_ALIASES.get(name.strip().lower(), name.strip().lower())
    if key not in SCALES:
        raise InputError(f"unknown scale {name!r}; known scales: {', '.join(sorted(SCALES))}", field="scale")
    return SCALES[key]


def normalise(value: float, scale: str | Scale, verdict: str | None = None) -> ScoreResult:
    """A :class:`ScoreResult` for a raw ``value`` on a declared ``scale``.

    ``raw`` keeps the value as given (signed for verdict-signed scales), ``scale`` and
    ``direction`` describe it, and ``ai_probability`` is filled when the scale maps to
    P(AI).

    Raises:
        ValueError: ``value`` is not finite, is outside the scale's range, or a
            verdict-signed scale gets no (or an unknown) verdict. Callers turn this into
            an ``InputError`` naming file, record and field.
    """
    sc = scale if isinstance(scale, Scale) else get_scale(scale)
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"score is not finite ({value!r})")
    bad = sc.check(v)
    if bad:
        raise ValueError(bad)
    if sc.signed_as:
        if verdict is None or not str(verdict).strip():
            raise ValueError(f"scale {sc.name} needs a verdict (AI or Human) to sign the confidence")
        vk = str(verdict).strip().lower()
        if vk in AI_VERDICTS:
            sign = 1.0
        elif vk in HUMAN_VERDICTS:
            sign = -1.0
        else:
            raise ValueError(f"verdict {verdict!r} is neither AI ({sorted(AI_VERDICTS)}) nor human "
                             f"({sorted(HUMAN_VERDICTS)})")
        target = SCALES[sc.signed_as]
        return ScoreResult(status="ok", raw=sign * v, scale=target.name, direction=target.direction,
                           ai_probability=target.to_probability(sign * v), verdict=str(verdict),
                           detail={"confidence": v})
    return ScoreResult(status="ok", raw=v, scale=sc.name, direction=sc.direction,
                       ai_probability=sc.to_probability(v), verdict=None if verdict is None else str(verdict))


class ImportedDetector:
    """A detector whose scores were recorded elsewhere and imported.

    Args:
        name: the detector's own name (``"GPTZero"``, ``"Originality.ai"`` ...), used as
            the spec name so tables show it.
        version: the detector's version string as recorded (may be empty).
        **settings: anything that identifies the recording, e.g. ``source="liang2023"``
            or ``source="manual"``; stored in the spec settings.

    ``score_batch`` cannot compute scores and raises :class:`VeribenchError` (it never
    returns placeholder results, which the scoring path would cache).
    """

    batch_size = 1_000_000

    def __init__(self, name: str, version: str = "", **settings: Any):
        if not str(name).strip():
            raise InputError("an imported detector needs a name", field="detector")
        settings.setdefault("source", "imported")
        self.spec = Spec(kind="detector", name=str(name).strip(), version=str(version or ""), settings=settings)

    def score_batch(self, texts: Sequence[str]) -> list[ScoreResult]:
        raise VeribenchError(
            f"detector {self.spec.name!r} is imported: its scores come from `veribench import scores`, "
            "it cannot score new texts"
        )
