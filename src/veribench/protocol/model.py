"""The protocol file (TOML or YAML): scoring rules fixed before any scan.

A protocol names the corpus selection, each detector with its decision rule, the
metrics, the subgroup tables, the calibration split rule, the interval method, the arm
roles, the planned comparisons and gaps, and a run tag. Its identity is the SHA-256 of
the file's raw bytes. See ``docs/protocol.md`` for the format, ``docs/protocol.schema.json``
for its JSON Schema (exported from :class:`ProtocolFile`) and ``examples/protocols/``.

The file is validated by the pydantic model :class:`ProtocolFile`: unknown keys are
refused with a "did you mean", and every value is range-checked (``confidence = 95`` and
``tpr_at_fpr = [5]`` are refused with the proportion they probably meant). The validated
file becomes a :class:`Protocol`, the runtime view the evaluation reads.

Example (TOML)::

    [protocol]
    name = "liang2023-replication"
    tag = "BENCH-2026-Q4"
    rescan = false                   # true: a rerun scans every text again after this commitment

    [selection]
    corpora = ["liang2023"]          # optional; also labels, arms, subgroups, kinds

    [split]
    rule = "hash"                    # or "none": whole groups (group_key, else the id)
    every = 5                        #   go to calibration when sha256(salt NUL group) % every == 0
    salt = "veribench-split-v1"

    [metrics]
    confidence = 0.95
    auroc_ci = "delong"              # or "bootstrap"
    tpr_at_fpr = [0.01, 0.05]

    [tables]
    slices = ["subgroup", "arm", "tag:writer"]

    [evaluation]
    out_of_scope = "exclude"         # or "slice": texts outside a detector's languages get their own slice

    [thresholds]
    per_length = false               # true: fitted rules get a threshold per length bin (calibration split)

    [arms]
    C2 = { role = "side", edit_budget = { max_changed_word_share = 0.10, sentences_added = 0, sentences_removed = 0 }, on_violation = "refuse" }

    [[detectors]]
    name = "GPTZero"                 # stored detector name, or a registry plug-in
    rule = { field = "ai_probability", op = ">", threshold = 0.5, source = "Liang et al. 2023" }

    [[detectors]]
    name = "zippy"
    settings = { engine = "lzma" }
    rule = { fit = "best_balanced_accuracy" }   # fitted on the calibration split only

    [comparisons]
    enabled = true
    metrics = ["auroc", "fpr", "catch_rate"]

    [[gaps]]
    slice = "tag:writer"
    group_a = "non-native"
    group_b = "native"

    [[amendments]]                   # required to change a committed protocol
    date = "2026-11-30"
    supersedes = "<sha256 of the previous committed file>"
    summary = "why the rule changed"
"""

from __future__ import annotations

import datetime as _dt
import difflib
import json
import re
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from veribench.errors import ProtocolError, close_matches
from veribench.hashing import sha256_bytes
from veribench.protocol import roles
from veribench.protocol.arm_rules import ArmRules, ArmRulesModel

FIELDS = ("ai_probability", "raw", "oriented", "verdict")
OPS = (">", ">=", "<", "<=")
FIT_RULES = ("best_balanced_accuracy", "target_fpr")
SLICE_KINDS = ("subgroup", "arm", "kind", "corpus", "label", "language", "length")
#: Metrics the statistics layer (``veribench.evaluate.comparisons``) compares.
GAP_METRICS = ("fpr", "catch_rate")
#: A metric that pairwise comparisons can test.
ComparisonMetric = Literal["auroc", "fpr", "catch_rate"]
COMPARISON_METRICS: tuple[ComparisonMetric, ...] = typing.get_args(ComparisonMetric)

#: Default decision rule when no protocol is given (issue #2; Liang et al. 2023 use
#: ``score > 0.5`` for all seven detectors).
DEFAULT_THRESHOLD = 0.5
#: The ``source`` of the placeholder rule of a ``[[detectors]]`` entry that states no rule
#: (:attr:`DecisionRule.given` is then ``False``).
NO_RULE = "default"

#: Verdict strings that mean "AI" when a detector has no probability (vendor or
#: tool's own verdict field). Source: each tool's documented verdict values.
AI_VERDICTS = frozenset({"ai", "ai_only", "ai-generated", "ai_generated", "fake", "chatgpt", "machine", "mixed_ai"})


# --------------------------------------------------------------------------- the file schema
def _listify(v: Any) -> Any:
    """A single string where a list is expected becomes a one-item list."""
    return [v] if isinstance(v, str) else v


def _slice_kind(v: Any) -> Any:
    if isinstance(v, str) and v not in SLICE_KINDS and not (v.startswith("tag:") and len(v) > 4):
        close = difflib.get_close_matches(v, list(SLICE_KINDS), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown slice {v!r}: use one of {list(SLICE_KINDS)} or tag:<name>{hint}")
    return v


def _proportion_hint(v: float) -> str:
    return f"; {v:g} looks like a percentage: did you mean {v / 100:g}?" if 1 < v <= 100 else ""


StrList = Annotated[list[str], BeforeValidator(_listify)]
SliceKind = Annotated[str, BeforeValidator(_slice_kind)]
Finite = Annotated[float, Field(allow_inf_nan=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Head(_Strict):
    """``[protocol]``: the protocol's name (versions of one name form an amendment chain) and run tag."""

    name: str = Field(min_length=1, description="the protocol's name")
    tag: str = Field("adhoc", min_length=1, description="run tag, e.g. BENCH-2026-Q4")
    description: str | None = Field(None, description="free text")
    rescan: bool = Field(False, description="a rerun that re-measures: scores taken before this version's "
                         "commitment are not used; each text is scanned again and the earlier score stays stored")


class Selection(_Strict):
    """``[selection]``: documents must match every key given (a string or a list of strings)."""

    corpora: StrList | None = None
    labels: list[Literal["human", "ai", "ai-edited-human", "mixed"]] | None = None
    arms: StrList | None = None
    subgroups: StrList | None = None
    kinds: StrList | None = None

    @field_validator("labels", mode="before")
    @classmethod
    def _labels(cls, v: Any) -> Any:
        return _listify(v)


class Split(_Strict):
    """``[split]``: the calibration split (whole groups by a hash of the group key)."""

    rule: Literal["none", "hash"] = Field("none", description="'hash': groups by sha256(salt NUL group key); "
                                                              "'none': every document is evaluated")
    every: int = Field(5, ge=2, le=1000, description="1 in `every` groups goes to calibration")
    salt: str = Field("veribench-split-v1", min_length=1)
    corpora: StrList = Field(default_factory=list, description="corpora the split applies to (others: all test)")


class Metrics(_Strict):
    """``[metrics]``: interval method and level, AUROC interval, TPR-at-FPR targets."""

    interval: Literal["wilson"] = "wilson"
    confidence: Finite = Field(0.95, description="interval level, a proportion in [0.5, 1)")
    auroc_ci: Literal["delong", "bootstrap"] = "delong"
    bootstrap_n: int = Field(2000, ge=100, le=1_000_000)
    seed: int = Field(0, ge=0)
    tpr_at_fpr: list[Finite] = Field(default_factory=lambda: [0.01, 0.05],
                                     description="target false-positive rates, proportions in (0, 1)")

    @field_validator("confidence")
    @classmethod
    def _confidence(cls, v: float) -> float:
        if not 0.5 <= v < 1.0:
            raise ValueError(f"must be a proportion in [0.5, 1), e.g. 0.95 for 95%{_proportion_hint(v)}")
        return v

    @field_validator("tpr_at_fpr")
    @classmethod
    def _targets(cls, v: list[float]) -> list[float]:
        for x in v:
            if not 0.0 < x < 1.0:
                raise ValueError(f"each target FPR must be a proportion in (0, 1), got {x:g}{_proportion_hint(x)}")
        if len(set(v)) != len(v):
            raise ValueError(f"repeated target FPR in {v}")
        return v


class Tables(_Strict):
    """``[tables]``: the slices of Table 2."""

    slices: list[SliceKind] = Field(default_factory=lambda: ["subgroup", "arm"])

    @field_validator("slices")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError(f"repeated slice in {v}")
        return v


class Evaluation(_Strict):
    """``[evaluation]``: what happens to texts outside a detector's declared languages."""

    out_of_scope: Literal["exclude", "slice"] = Field(
        "exclude", description="'exclude': a text whose language is outside a detector's declared languages is "
        "excluded from its rates with the reason, and counted; 'slice': excluded and counted as well, and "
        "evaluated in a separate Table 2 slice (language_scope = 'outside the declared languages')")


class Thresholds(_Strict):
    """``[thresholds]``: how fitted thresholds are fitted."""

    per_length: bool = Field(False, description="fit each fitted rule's threshold per length bin (under 100, "
                             "100 to 300, over 300 words) on the calibration split, after FairOPT (arXiv "
                             "2502.04528); every table then names the bins and each fitted threshold")


class RuleModel(_Strict):
    """A detector's decision rule: a fixed comparison, a verdict rule, or a fitted threshold."""

    field: Literal["ai_probability", "raw", "oriented", "verdict"] | None = None
    op: Literal[">", ">=", "<", "<="] | None = None
    threshold: Finite | None = None
    ai_values: StrList | None = None
    fit: Literal["best_balanced_accuracy", "target_fpr"] | None = None
    target_fpr: Finite | None = None
    source: str | None = Field(None, description="where the threshold comes from (paper, model card, vendor)")

    @model_validator(mode="after")
    def _combination(self) -> RuleModel:
        if self.fit is not None:
            extra = [k for k in ("field", "op", "threshold", "ai_values") if getattr(self, k) is not None]
            if extra:
                raise ValueError(f"@{extra[0]}: a fitted rule (fit = {self.fit!r}) takes no {', '.join(extra)}: its threshold "
                                 "is fitted on the calibration split")
            if self.fit == "target_fpr":
                if self.target_fpr is None:
                    raise ValueError("@target_fpr: fit = 'target_fpr' needs target_fpr, a proportion in (0, 1)")
                if not 0.0 < self.target_fpr < 1.0:
                    raise ValueError(f"@target_fpr: must be a proportion in (0, 1){_proportion_hint(self.target_fpr)}")
            elif self.target_fpr is not None:
                raise ValueError("@target_fpr: belongs to fit = 'target_fpr' only")
            return self
        if self.target_fpr is not None:
            raise ValueError("@target_fpr: needs fit = 'target_fpr'")
        fld = self.field or "ai_probability"
        if fld == "verdict":
            if self.op is not None or self.threshold is not None:
                raise ValueError("@field: a verdict rule (field = 'verdict') takes ai_values, not op or threshold")
            return self
        if self.ai_values is not None:
            raise ValueError("@ai_values: belongs to field = 'verdict' only")
        if self.threshold is None:
            raise ValueError(f"@threshold: a numeric threshold is required for field {fld!r} (or use fit = ...)")
        if fld == "ai_probability" and not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"@threshold: an ai_probability threshold must be in [0, 1]{_proportion_hint(self.threshold)}")
        return self


class DetectorModel(_Strict):
    """One ``[[detectors]]`` entry."""

    name: str = Field(min_length=1, description="stored detector name or registry plug-in")
    settings: dict[str, Any] = Field(default_factory=dict, description="plug-in settings (part of the spec)")
    label: str | None = Field(None, min_length=1, description="display name in the tables")
    rule: RuleModel | None = Field(None, description="default: the detector's default rule (veribench list detectors): "
                                   "ai_probability > 0.5, or its own verdict when it reports no probability")
    corpora: StrList = Field(default_factory=list, description="restrict this detector to these corpora")


def _date_str(v: Any) -> Any:
    if isinstance(v, (_dt.date, _dt.datetime)):
        return v.isoformat()
    return v


class Amendment(_Strict):
    """One ``[[amendments]]`` entry: required to commit a changed protocol of the same name."""

    date: Annotated[str, BeforeValidator(_date_str)] = Field(min_length=4)
    summary: str = Field(min_length=1)
    supersedes: str | None = Field(None, pattern=r"^[0-9a-fA-F]{64}$",
                                      description="sha256 of the committed version this one replaces")

    @field_validator("date")
    @classmethod
    def _iso(cls, v: str) -> str:
        try:
            _dt.date.fromisoformat(v[:10])
        except ValueError:
            raise ValueError(f"not an ISO date (YYYY-MM-DD): {v!r}") from None
        return v


class EditBudget(_Strict):
    """Edit budget of a lightly edited arm (spec 002 arm C2: up to 10% of words, no sentence added or deleted)."""

    max_changed_word_share: Finite = Field(ge=0.0, le=1.0)
    sentences_added: int = Field(0, ge=0)
    sentences_removed: int = Field(0, ge=0)


def _arm_shorthand(v: Any) -> Any:
    return {"role": v} if isinstance(v, str) else v


class ArmModel(_Strict):
    """One ``[arms]`` entry: the arm's role and, for edited arms, its edit budget."""

    role: Literal["headline", "side"]
    edit_budget: EditBudget | None = None
    on_violation: str = Field("refuse", pattern=r"^(refuse|move:\S+)$",
                              description="'refuse', or 'move:<arm>' to move over-budget texts to that arm")


def _all_comparison_metrics() -> list[ComparisonMetric]:
    return list(COMPARISON_METRICS)


class Comparisons(_Strict):
    """``[comparisons]``: planned pairwise comparisons (consumed by the statistics layer)."""

    enabled: bool = True
    metrics: list[ComparisonMetric] = Field(default_factory=_all_comparison_metrics)
    correction: Literal["holm", "none"] = "holm"
    family: Literal["run"] = Field("run", description="the family of the multiple-comparison correction")
    alpha: Finite = Field(0.05, gt=0.0, le=0.5)


class Gap(_Strict):
    """One ``[[gaps]]`` entry: a pair of groups of one slice kind to compare on one metric."""

    slice: SliceKind
    group_a: str = Field(min_length=1)
    group_b: str = Field(min_length=1)
    label_a: str | None = None
    label_b: str | None = None
    metric: Literal["fpr", "catch_rate"] = "fpr"

    @model_validator(mode="after")
    def _distinct(self) -> Gap:
        if self.group_a == self.group_b:
            raise ValueError(f"@group_b: group_a and group_b are both {self.group_a!r}")
        return self


class ProtocolFile(_Strict):
    """The whole protocol file. Unknown keys are refused; every value is range-checked."""

    model_config = ConfigDict(extra="forbid", strict=True, title="veribench protocol",
                              json_schema_extra={"$comment": "exported by veribench.protocol.model.json_schema()"})
    protocol: Head
    selection: Selection = Field(default_factory=Selection)
    split: Split = Field(default_factory=Split)
    metrics: Metrics = Field(default_factory=Metrics)
    tables: Tables = Field(default_factory=Tables)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    evaluation: Evaluation = Field(default_factory=Evaluation)
    detectors: list[DetectorModel] = Field(default_factory=list)
    arms: dict[str, Annotated[ArmModel, BeforeValidator(_arm_shorthand)]] = Field(
        default_factory=dict, description="arm -> role; default A/B/C headline, anything else side")
    comparisons: Comparisons | None = Field(None, description="absent: no comparisons are planned")
    gaps: list[Gap] = Field(default_factory=list)
    amendments: list[Amendment] = Field(default_factory=list)
    # -- arm rules (veribench.protocol.arm_rules): explicit relaxations, shown in every output
    arm_rules: ArmRulesModel | None = Field(None, description="relaxations of the built-in arm rules "
                                            "(veribench.protocol.arm_rules); absent: the built-in rules")

    @model_validator(mode="after")
    def _cross(self) -> ProtocolFile:
        labels = [d.label or d.name for d in self.detectors]
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise ValueError(f"@detectors: duplicate detector labels {dup}; give each a distinct label")
        if self.thresholds.per_length:
            if self.split.rule != "hash":
                raise ValueError("@thresholds.per_length: per-length thresholds are fitted on the calibration "
                                 "split: set [split] rule = \"hash\"")
            if not any(d.rule is not None and d.rule.fit is not None for d in self.detectors):
                raise ValueError("@thresholds.per_length: no detector has a fitted rule (rule = {fit = ...}): "
                                 "per-length thresholds refit a fitted rule per length bin")
        for i, d in enumerate(self.detectors):
            if d.rule is not None and d.rule.fit is not None:
                if self.split.rule != "hash":
                    raise ValueError(f"@detectors[{i}].rule.fit: {d.label or d.name} asks for a fitted threshold "
                                     f"(fit = {d.rule.fit!r}) but [split] rule is 'none': a fitted rule needs a "
                                     "calibration split (set [split] rule = \"hash\") or a fixed threshold")
                if d.corpora and self.split.corpora and not set(d.corpora) & set(self.split.corpora):
                    raise ValueError(f"@detectors[{i}].corpora: {d.label or d.name} is fitted but its corpora "
                                     f"{d.corpora} are outside the split's corpora {self.split.corpora}: "
                                     "it has no calibration texts")
        for j, g in enumerate(self.gaps):
            if g.slice not in self.tables.slices:
                raise ValueError(f"@gaps[{j}].slice: {g.slice!r} is not in [tables] slices "
                                 f"{self.tables.slices}; add it there")
        for arm, spec in self.arms.items():
            if spec.on_violation.startswith("move:") and spec.edit_budget is None:
                raise ValueError(f"@arms.{arm}.on_violation: {spec.on_violation!r} needs an edit_budget")
        return self


def json_schema() -> dict[str, Any]:
    """The protocol file's JSON Schema (draft 2020-12), as written to ``docs/protocol.schema.json``
    (regenerate with ``python -m veribench.protocol.model > docs/protocol.schema.json``)."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **ProtocolFile.model_json_schema()}


# --------------------------------------------------------------------------- runtime view
@dataclass(frozen=True)
class DecisionRule:
    """How a detector's score becomes a flag (AI) or a pass (human).

    Either a fixed comparison ``field op threshold`` (e.g. ``ai_probability > 0.5``;
    ``raw < 0.9015`` for Binoculars), a verdict rule (``field = "verdict"``: flagged
    when the verdict is in ``ai_values``), or ``fit`` = ``best_balanced_accuracy`` /
    ``target_fpr`` (with ``target_fpr``), fitted on the calibration split over the
    oriented native score (higher = more AI), flag when ``score > threshold``.
    """

    field: str = "ai_probability"
    op: str = ">"
    threshold: float | None = DEFAULT_THRESHOLD
    ai_values: tuple[str, ...] = ()
    fit: str | None = None
    target_fpr: float | None = None
    source: str = "default"

    @property
    def given(self) -> bool:
        """Whether a protocol stated this rule. ``False`` for the placeholder a ``[[detectors]]``
        entry without ``rule`` gets: evaluation replaces it with the detector's default rule
        (:func:`veribench.evaluate.run.default_rule`, the one ``veribench list detectors`` shows)."""
        return self.source != NO_RULE

    def describe(self) -> str:
        if self.fit:
            return f"fitted: {self.fit}" + (f" (FPR {self.target_fpr})" if self.target_fpr else "")
        if self.field == "verdict":
            return f"verdict in {list(self.ai_values) or sorted(AI_VERDICTS)}"
        return f"{self.field} {self.op} {self.threshold:g}"

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "op": self.op, "threshold": self.threshold, "ai_values": list(self.ai_values),
                "fit": self.fit, "target_fpr": self.target_fpr, "source": self.source}

    @classmethod
    def from_model(cls, m: RuleModel | None) -> DecisionRule:
        if m is None:
            return cls(source=NO_RULE)
        if m.fit is not None:
            return cls(field="oriented", op=">", threshold=None, fit=m.fit, target_fpr=m.target_fpr,
                       source=m.source or "fitted on the calibration split")
        fld = m.field or "ai_probability"
        if fld == "verdict":
            return cls(field="verdict", op="in", threshold=None,
                       ai_values=tuple(str(v).lower() for v in (m.ai_values or [])), source=m.source or "vendor verdict")
        assert m.threshold is not None  # RuleModel requires a threshold for a comparison rule
        return cls(field=fld, op=m.op or ">", threshold=float(m.threshold), source=m.source or "protocol")


@dataclass(frozen=True)
class DetectorEntry:
    """One detector in a protocol: stored name or registry plug-in, settings, display label, rule."""

    name: str
    settings: dict[str, Any] = field(default_factory=dict)
    label: str | None = None
    rule: DecisionRule = field(default_factory=DecisionRule)
    corpora: tuple[str, ...] = ()

    @property
    def display(self) -> str:
        return self.label or self.name


@dataclass
class Protocol:
    """A parsed protocol: the runtime view of a validated :class:`ProtocolFile`.

    ``hash`` is the SHA-256 of the file's raw bytes (``None`` for the built-in default).
    ``arms`` maps each declared arm to its role (see :mod:`veribench.protocol.roles`);
    ``arm_specs`` (arm -> :class:`ArmModel`), ``comparisons`` (:class:`Comparisons`, ``None``
    when the file has no ``[comparisons]``) and ``gaps`` (list of :class:`Gap`) are the
    validated sections for the consumers that use them.
    """

    name: str
    tag: str
    hash: str | None
    path: str | None
    raw: dict[str, Any]
    detectors: list[DetectorEntry]
    selection: dict[str, Any] = field(default_factory=dict)
    split_rule: str = "none"
    split_every: int = 5
    split_salt: str = "veribench-split-v1"
    split_corpora: tuple[str, ...] = ()
    confidence: float = 0.95
    auroc_ci: str = "delong"
    bootstrap_n: int = 2000
    seed: int = 0
    tpr_at_fpr: tuple[float, ...] = (0.01, 0.05)
    slices: tuple[str, ...] = ("subgroup", "arm")
    amendments: list[dict[str, Any]] = field(default_factory=list)
    arms: dict[str, str] = field(default_factory=dict)
    arm_specs: dict[str, ArmModel] = field(default_factory=dict)
    comparisons: Comparisons | None = None
    gaps: list[Gap] = field(default_factory=list)
    rescan: bool = False
    #: ``[thresholds] per_length``: fitted rules get one threshold per length bin.
    per_length: bool = False
    #: ``[evaluation] out_of_scope``: ``"exclude"`` or ``"slice"`` (texts outside a detector's
    #: declared languages also get a Table 2 slice of their own).
    out_of_scope: str = "exclude"
    model: ProtocolFile | None = None
    #: The arm rules in force (:mod:`veribench.protocol.arm_rules`), with the file's relaxations.
    arm_rules: ArmRules = field(default_factory=ArmRules)

    @classmethod
    def default(cls) -> Protocol:
        """The rules used when ``evaluate`` runs without a protocol file: every stored
        detector, ``ai_probability > 0.5`` (verdict when no probability), no split."""
        return cls(name="default", tag="adhoc", hash=None, path=None, raw={}, detectors=[])

    @classmethod
    def from_model(cls, m: ProtocolFile, *, path: str | None = None, digest: str | None = None,
                   raw: dict[str, Any] | None = None) -> Protocol:
        dets = [DetectorEntry(name=d.name, settings=dict(d.settings), label=d.label,
                              rule=DecisionRule.from_model(d.rule), corpora=tuple(d.corpora)) for d in m.detectors]
        sel = {k: v for k, v in m.selection.model_dump().items() if v is not None}
        return cls(
            name=m.protocol.name, tag=m.protocol.tag, hash=digest, path=path, raw=raw or m.model_dump(mode="json"),
            detectors=dets, selection=sel, split_rule=m.split.rule, split_every=m.split.every,
            split_salt=m.split.salt, split_corpora=tuple(m.split.corpora), confidence=m.metrics.confidence,
            auroc_ci=m.metrics.auroc_ci, bootstrap_n=m.metrics.bootstrap_n, seed=m.metrics.seed,
            tpr_at_fpr=tuple(float(x) for x in m.metrics.tpr_at_fpr), slices=tuple(m.tables.slices),
            amendments=[a.model_dump(exclude_none=True) for a in m.amendments],
            arms={a: s.role for a, s in m.arms.items()}, arm_specs=dict(m.arms), comparisons=m.comparisons,
            gaps=list(m.gaps), rescan=m.protocol.rescan, per_length=m.thresholds.per_length,
            out_of_scope=m.evaluation.out_of_scope, model=m, arm_rules=ArmRules.from_model(m.arm_rules),
        )

    def arm_role(self, arm: Any) -> str:
        """The role of ``arm`` under this protocol (see :func:`veribench.protocol.roles.arm_role`)."""
        return roles.arm_role(arm, self.arms)


# --------------------------------------------------------------------------- errors
def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for p in loc:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out


def _unwrap(tp: Any) -> list[Any]:
    """The member types of an annotation (Optional/Union/Annotated peeled off)."""
    origin = typing.get_origin(tp)
    if origin is Annotated:
        return _unwrap(typing.get_args(tp)[0])
    if origin is Union or origin is types.UnionType:  # Optional[X] and X | None
        return [t for a in typing.get_args(tp) for t in _unwrap(a) if t is not type(None)]
    return [tp]


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class that holds the keys at ``loc`` (a path into the file), if any."""
    cur: list[Any] = [ProtocolFile]
    for part in loc:
        nxt: list[Any] = []
        for tp in cur:
            for t in _unwrap(tp):
                origin = typing.get_origin(t)
                if isinstance(t, type) and issubclass(t, BaseModel):
                    if isinstance(part, str) and part in t.model_fields:
                        nxt.append(t.model_fields[part].annotation)
                elif origin in (list, tuple) and isinstance(part, int):
                    nxt.append(typing.get_args(t)[0])
                elif origin is dict:
                    nxt.append(typing.get_args(t)[1])
        cur = nxt
    for tp in cur:
        for t in _unwrap(tp):
            if isinstance(t, type) and issubclass(t, BaseModel):
                return t
    return None


def _message(err: ErrorDetails) -> tuple[str, str]:
    """(field path, message) for one pydantic error, with a "did you mean" for unknown keys."""
    loc = tuple(err.get("loc") or ())
    typ = err.get("type", "")
    if typ == "extra_forbidden" and loc:
        key = str(loc[-1])
        model = _model_at(loc[:-1])
        known = sorted(model.model_fields) if model else []
        close = close_matches(key, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        where = f"[{_loc(loc[:-1])}]" if loc[:-1] else "the top level"
        return _loc(loc), f"unknown key {key!r} in {where}{hint} (known: {', '.join(known)})"
    msg = str(err.get("msg", "invalid"))
    msg = re.sub(r"^(Value error|Assertion failed), ", "", msg)
    at = re.match(r"^@([^:]+): ", msg)
    if at:  # a cross-field check names the field it is about
        sub = at.group(1)
        msg = msg[at.end():]
        path = _loc(loc)
        return (path + ("" if not path or sub.startswith("[") else ".") + sub), msg
    if typ == "missing":
        msg = "required"
    elif typ in ("literal_error", "enum"):
        inp = err.get("input")
        exp = re.findall(r"'([^']*)'", msg)
        close = close_matches(inp, exp, n=1) if isinstance(inp, str) else []
        msg = f"{inp!r} is not allowed; {msg[0].lower() + msg[1:]}" + (f"; did you mean {close[0]!r}?" if close else "")
    elif typ.endswith(("_type", "_parsing")):
        msg = f"{msg}, got {json.dumps(err.get('input'), default=str)}"
    return _loc(loc), msg


def _err(path: str, msg: str, fld: str | None = None) -> ProtocolError:
    return ProtocolError(f"protocol {path}" + (f", field {fld!r}" if fld else "") + f": {msg}")


def parse_protocol(data: dict[str, Any], *, path: str = "<protocol>", digest: str | None = None) -> Protocol:
    """Validate a protocol mapping (already parsed from TOML/YAML) into a :class:`Protocol`.

    Raises:
        ProtocolError: one line naming the file and the field(s) of the problems found
            (at most three), with a "did you mean" for unknown keys.
    """
    if not isinstance(data, dict):
        raise _err(path, "top level must be a table")
    try:
        m = ProtocolFile.model_validate(data)
    except ValidationError as e:
        raw_errs = sorted(e.errors(include_url=False), key=lambda x: x.get("type") != "extra_forbidden")
        errs = [_message(x) for x in raw_errs]
        first_loc, first_msg = errs[0]
        more = "; ".join(f"field {loc!r}: {msg}" for loc, msg in errs[1:3])
        extra = f" (also {more}" + (f"; and {len(errs) - 3} more" if len(errs) > 3 else "") + ")" if more else ""
        raise _err(path, first_msg + extra, first_loc or None) from None
    return Protocol.from_model(m, path=path, digest=digest, raw=data)


def load_protocol(path: str | Path) -> Protocol:
    """Read and validate a protocol file (``.toml``, ``.yaml`` or ``.yml``).

    Raises:
        ProtocolError: unreadable file, bad syntax or an invalid field (named).
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise ProtocolError(f"protocol {p}: cannot read ({e.strerror})") from e
    return loads_protocol(raw, str(p))


def loads_protocol(raw: bytes, path: str) -> Protocol:
    """Validate a protocol file's bytes (its format from ``path``'s suffix: ``.yaml``/``.yml``
    or TOML), as :func:`load_protocol` does; a committed protocol is re-read from its
    stored bytes this way.

    Raises:
        ProtocolError: bad encoding, bad syntax or an invalid field (named).
    """
    p = Path(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _err(str(p), f"not UTF-8 (byte {e.start})") from e
    try:
        if p.suffix.lower() in (".yaml", ".yml"):
            import yaml

            # events only: an alias is seen before anything is expanded ("billion laughs")
            if any(isinstance(e, yaml.AliasEvent) for e in yaml.parse(text)):
                raise _err(str(p), "YAML aliases (*name) are not accepted in a protocol: write each value out")
            data = yaml.safe_load(text)
        else:
            data = tomllib.loads(text)
    except ProtocolError:
        raise
    except RecursionError:
        raise _err(str(p), "syntax error: nested too deeply") from None
    except Exception as e:  # tomllib.TOMLDecodeError / yaml.YAMLError
        raise _err(str(p), f"syntax error: {e}") from e
    return parse_protocol(data, path=str(p), digest=sha256_bytes(raw))


if __name__ == "__main__":  # regenerate docs/protocol.schema.json
    print(json.dumps(json_schema(), indent=2, sort_keys=True))
