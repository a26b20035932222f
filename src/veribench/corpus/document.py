"""The Document model: one text of known origin.

Schema (also the JSONL / CSV / Parquet import schema; see ``docs/corpus-schema.md``):

==============  =========================================================================
field           meaning
==============  =========================================================================
id              unique document id (string)
text            the text; may be omitted when only ``text_sha256`` can be published
text_sha256     SHA-256 of the UTF-8 text; computed from ``text`` when given, and must match
label           ``human`` | ``ai`` | ``ai-edited-human`` | ``mixed``
arm             protocol arm (``A``, ``B``, ``C``, ``C2``) or the user's own
kind            kind of writing or domain (``essay``, ``news`` ...)
subgroup        the primary slice name (e.g. a source set ``TOEFL_real_91``)
tags            other slice tags, e.g. ``{"writer": "non-native"}``
group_key       calibration-split group (the prompt or topic an AI text was written from)
provenance      ``{source_url, published, licence, method, attestation}``
generation      AI text only: ``{provider, model, version, date, prompt, temperature,
                top_p, max_tokens, seed, settings, post_editing}``
segments        mixed text only: ``[{start, end, label}]``, character offsets (Python
                ``str`` indices, end exclusive) tiling the text in order, each ``human``
                or ``ai`` (SemEval-2024 Task 8 subtask C: one human segment, then one AI)
==============  =========================================================================
"""

from __future__ import annotations

import math
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..hashing import text_sha256

#: The label convention, in one place. ``ai`` and ``ai-edited-human`` are positives
#: for catch rate; ``human`` is the negative class; ``mixed`` is reported on its own rows.
LABELS = ("human", "ai", "ai-edited-human", "mixed")
Label = Literal["human", "ai", "ai-edited-human", "mixed"]
POSITIVE_LABELS = ("ai", "ai-edited-human")
NEGATIVE_LABELS = ("human",)


class Provenance(BaseModel):
    """Where a text came from. Dates are ISO 8601 strings (``YYYY`` or ``YYYY-MM-DD``)."""

    model_config = ConfigDict(extra="allow")
    source_url: Optional[str] = None
    published: Optional[str] = None
    licence: Optional[str] = None
    method: Optional[str] = None
    attestation: Optional[str] = None
    citation: Optional[str] = None


class Generation(BaseModel):
    """How an AI text was produced: enough for anyone to regenerate it."""

    model_config = ConfigDict(extra="allow")
    provider: Optional[str] = None
    model: Optional[str] = None
    version: Optional[str] = None
    date: Optional[str] = None
    prompt: Optional[str] = None
    temperature: Optional[float] = None
    top_p: Optional[float] = None
    max_tokens: Optional[int] = None
    seed: Optional[int] = None
    settings: dict[str, Any] = Field(default_factory=dict)
    post_editing: Optional[str] = None


#: Labels a segment of a mixed text can carry.
SEGMENT_LABELS = ("human", "ai")


class Segment(BaseModel):
    """One labelled span of a mixed text: characters ``text[start:end]``."""

    model_config = ConfigDict(extra="allow")
    start: int = Field(ge=0)
    end: int = Field(gt=0)
    label: Literal["human", "ai"]

    @model_validator(mode="after")
    def _order(self) -> "Segment":
        if self.end <= self.start:
            raise ValueError(f"segment end {self.end} must be after its start {self.start}")
        return self


def boundaries(segments: list[Segment]) -> list[int]:
    """Character offsets where the label changes (the starts of segments after the first
    whose label differs from the previous one)."""
    return [b.start for a, b in zip(segments, segments[1:]) if a.label != b.label]


class Document(BaseModel):
    """One text of known origin. See the module docstring for the field table.

    Raises:
        pydantic.ValidationError: on a bad label, empty text, a text/hash mismatch,
            or neither text nor hash given.
    """

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    text: Optional[str] = None
    text_sha256: Optional[str] = None
    label: Label
    arm: Optional[str] = None
    kind: Optional[str] = None
    subgroup: Optional[str] = None
    tags: dict[str, str] = Field(default_factory=dict)
    group_key: Optional[str] = None
    provenance: Provenance = Field(default_factory=Provenance)
    generation: Optional[Generation] = None
    segments: Optional[list[Segment]] = None

    @field_validator("id", mode="before")
    @classmethod
    def _id_str(cls, v: Any) -> Any:
        if isinstance(v, bool) or v is None:
            return v
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError("id must be a finite value")
        return str(v) if isinstance(v, (int, float)) else v

    @field_validator("text")
    @classmethod
    def _text_not_empty(cls, v: Optional[str]) -> Optional[str]:
        if v is not None and not v.strip():
            raise ValueError("text is empty or whitespace only")
        return v

    @field_validator("tags", mode="before")
    @classmethod
    def _tags_str(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return {str(k): str(x) for k, x in v.items() if x is not None}
        return v

    @model_validator(mode="after")
    def _hash(self) -> "Document":
        if self.text is None and not self.text_sha256:
            raise ValueError("either text or text_sha256 is required")
        if self.text is not None:
            h = text_sha256(self.text)
            if self.text_sha256 and self.text_sha256.lower() != h:
                raise ValueError(f"text_sha256 {self.text_sha256} does not match the text (sha256 {h})")
            self.text_sha256 = h
        else:
            t = self.text_sha256.lower()
            if len(t) != 64 or any(c not in "0123456789abcdef" for c in t):
                raise ValueError("text_sha256 must be 64 hex characters")
            self.text_sha256 = t
        if self.segments is not None:
            self._check_segments()
        return self

    def _check_segments(self) -> None:
        seg = self.segments or []
        if not seg:
            raise ValueError("segments is empty; omit it for a text with one label")
        if seg[0].start != 0:
            raise ValueError(f"segments must start at character 0, the first starts at {seg[0].start}")
        for a, b in zip(seg, seg[1:]):
            if b.start != a.end:
                raise ValueError(f"segments must tile the text: one ends at {a.end}, the next starts at {b.start}")
        if self.text is not None and seg[-1].end != len(self.text):
            raise ValueError(f"segments end at character {seg[-1].end} but the text has {len(self.text)} characters")
        if len({x.label for x in seg}) > 1 and self.label != "mixed":
            raise ValueError(f"a text whose segments carry both labels must have label 'mixed', not {self.label!r}")
