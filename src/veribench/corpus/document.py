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
provenance      ``{source_url, published, licence, method, attestation, fingerprint_only}``
generation      AI text only: ``{provider, model, version, date, prompt, temperature,
                top_p, max_tokens, seed, settings, post_editing}``
segments        mixed text only: ``[{start, end, label}]``, character offsets (Python
                ``str`` indices, end exclusive) tiling the text in order, each ``human``
                or ``ai`` (SemEval-2024 Task 8 subtask C: one human segment, then one AI)
==============  =========================================================================

Derived documents (attacks, paraphrases, humanized outputs, human edits; see
``docs/robustness.md``) carry in ``provenance``:

- ``source_id``: the source document's id;
- ``attack``: ``{name, version, params, seed}`` (attacks, paraphrases, humanizers);
- ``edits``: ``[[start, end, replacement], ...]`` over the source text (code-point
  offsets; :func:`veribench.corpus.edits.apply_edits` of the source gives the text);
- ``derivation``: everything else that rebuilds it (full spec and hash, model used,
  per-document seed, counts; for edits the measured edit and the budget);

and ``tags["derivation"]`` in :data:`DERIVATIONS` (``tags["attack"]`` = the attack or
humanizer name). The import schema also accepts ``source_id``, ``attack`` and ``edits``
as top-level fields (as ``veribench export documents`` writes them); they are moved into
``provenance`` and must agree with it.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from veribench.corpus.edits import check_edits
from veribench.hashing import text_sha256
from veribench.labels import NEGATIVE_LABELS, POSITIVE_LABELS  # noqa: F401 - re-exported
from veribench.protocol.roles import LABELS as ROLE_LABELS
from veribench.text.hazards import is_blank

#: The labels. Their roles (positive, negative, side) live in one table:
#: :data:`veribench.labels.LABEL_ROLES` (see ``docs/labels.md``).
LABELS = ROLE_LABELS
Label = Literal["human", "ai", "ai-edited-human", "mixed"]
#: Values of ``tags["derivation"]`` (CONTRACTS: derived documents).
DERIVATIONS = ("attack", "paraphrase", "humanize", "edit")
#: Top-level import fields of derived documents, kept in ``provenance``.
DERIVED_FIELDS = ("source_id", "attack", "edits")


_YEAR_MONTH = re.compile(r"(\d{4})(?:-(\d{2}))?")


def iso_date(v: Any) -> Any:
    """Check an ISO 8601 date field: ``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD`` or a date-time
    (``2026-11-02T10:00:00Z``); returned unchanged (``None`` passes).

    Raises:
        ValueError: anything else, or a date that does not exist (``2023-02-30``).
    """
    if v is None:
        return v
    if not isinstance(v, str):
        raise ValueError(f"a date must be ISO 8601 text (YYYY, YYYY-MM, YYYY-MM-DD or a date-time), got "
                         f"{type(v).__name__} {v!r}")
    s = v.strip()
    m = _YEAR_MONTH.fullmatch(s)
    try:
        if m:
            if m.group(2) is not None and not 1 <= int(m.group(2)) <= 12:
                raise ValueError
        elif len(s) == 10:
            date.fromisoformat(s)
        else:
            datetime.fromisoformat(s.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(f"not an ISO 8601 date or date-time: {v!r} (write YYYY, YYYY-MM, YYYY-MM-DD or "
                         "YYYY-MM-DDTHH:MM:SSZ)") from None
    return v


class Provenance(BaseModel):
    """Where a text came from. Dates are ISO 8601 strings (``YYYY`` or ``YYYY-MM-DD``).

    ``fingerprint_only``: the contributor declined publication of the text. The text stays
    in the workspace (detectors score it) and every export omits it, publishing its
    SHA-256, word count, register, tags and scores instead (CONTRACTS.md; a document
    stored without text is fingerprint-only too; see
    :meth:`veribench.store.Workspace.fingerprint_only_ids`). Arm-B documents written in
    ``veribench write`` also carry ``attestation`` (the attestation id), ``register``,
    ``self_report`` and ``process_evidence`` (``docs/arm-b.md``).
    """

    model_config = ConfigDict(extra="allow")
    source_url: str | None = None
    published: str | None = None
    licence: str | None = None
    method: str | None = None
    attestation: str | None = None
    citation: str | None = None
    fingerprint_only: bool | None = None

    @field_validator("published")
    @classmethod
    def _published_iso(cls, v: Any) -> Any:
        return iso_date(v)


class Generation(BaseModel):
    """How an AI text was produced: enough for anyone to regenerate it."""

    model_config = ConfigDict(extra="allow")
    provider: str | None = None
    model: str | None = None
    version: str | None = None
    date: str | None = None
    prompt: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    post_editing: str | None = None

    @field_validator("date")
    @classmethod
    def _date_iso(cls, v: Any) -> Any:
        return iso_date(v)


#: Labels a segment of a mixed text can carry.
SEGMENT_LABELS = ("human", "ai")


class Segment(BaseModel):
    """One labelled span of a mixed text: characters ``text[start:end]``."""

    model_config = ConfigDict(extra="allow")
    start: int = Field(ge=0)
    end: int = Field(gt=0)
    label: Literal["human", "ai"]

    @model_validator(mode="after")
    def _order(self) -> Segment:
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
    text: str | None = None
    text_sha256: str | None = None
    label: Label
    arm: str | None = None
    kind: str | None = None
    subgroup: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    group_key: str | None = None
    provenance: Provenance = Field(default_factory=Provenance)
    generation: Generation | None = None
    segments: list[Segment] | None = None

    @model_validator(mode="before")
    @classmethod
    def _derived_fields(cls, data: Any) -> Any:
        """Move top-level ``source_id``/``attack``/``edits`` into ``provenance`` (checked)."""
        if not isinstance(data, dict) or not any(k in data for k in DERIVED_FIELDS):
            return data
        data = dict(data)
        prov = data.get("provenance")
        prov = dict(prov) if isinstance(prov, dict) else ({} if prov is None else prov)
        if not isinstance(prov, dict):
            return data  # the provenance validator reports it
        import json as _json

        for k in DERIVED_FIELDS:
            if k not in data:
                continue
            v = data.pop(k)
            if isinstance(v, str) and k != "source_id":
                try:
                    v = _json.loads(v)
                except ValueError:
                    raise ValueError(f"{k} must be JSON") from None
            if v is None:
                continue
            if k in prov and prov[k] is not None and prov[k] != v:
                raise ValueError(f"{k} disagrees with provenance.{k}")
            prov[k] = v
        data["provenance"] = prov
        return data

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
    def _text_not_empty(cls, v: str | None) -> str | None:
        if v is not None and is_blank(v):
            raise ValueError("text is empty, or only white space and invisible characters")
        return v

    @field_validator("tags", mode="before")
    @classmethod
    def _tags_str(cls, v: Any) -> Any:
        """Tags are text labels (``docs/corpus-schema.md``): a number, list or object is refused,
        never turned into its Python spelling. A null tag is dropped."""
        if isinstance(v, dict):
            for k, x in v.items():
                if x is not None and not isinstance(x, str):
                    raise ValueError(f"tag {k!r} must be a string, got {type(x).__name__} {x!r} "
                                     f"(write it as text, e.g. \"{x}\")" if isinstance(x, (int, float))
                                     else f"tag {k!r} must be a string, got {type(x).__name__}")
            return {str(k): x for k, x in v.items() if x is not None}
        return v

    @model_validator(mode="after")
    def _derived(self) -> Document:
        der = self.tags.get("derivation")
        extra = self.provenance.model_extra or {}
        if der is not None and der not in DERIVATIONS:
            raise ValueError(f"tags.derivation must be one of {', '.join(DERIVATIONS)}, got {der!r}")
        if der is not None and not extra.get("source_id") and (extra.get("edits") is not None
                                                               or extra.get("attack") is not None):
            # A derivation veribench made (edits, attack spec) names its source. A published
            # corpus's derived text whose source the release does not name (MAGE's paraphrases,
            # DetectRL's perturbations) is still derived: on side rows, never paired.
            raise ValueError("a derived document with edits or an attack spec needs provenance.source_id")
        if extra.get("source_id") is not None and not isinstance(extra["source_id"], str):
            raise ValueError("provenance.source_id must be a string")
        if extra.get("edits") is not None:

            try:
                check_edits(extra["edits"])
            except ValueError as e:
                raise ValueError(f"provenance.edits: {e}") from None
        att = extra.get("attack")
        if att is not None and (not isinstance(att, dict) or not isinstance(att.get("name"), str)
                                or not isinstance(att.get("params", {}), dict)):
            raise ValueError("provenance.attack must be an object {name, version, params, seed}")
        return self

    @property
    def source_id(self) -> str | None:
        """The source document's id for a derived document, else ``None``."""
        return (self.provenance.model_extra or {}).get("source_id")

    @model_validator(mode="after")
    def _hash(self) -> Document:
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
