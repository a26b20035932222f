"""The arm rules: which documents each protocol arm may hold (spec 002, "Corpus construction").

One table, as data (:data:`ARM_RULES`), read by the one import write path
(:mod:`veribench.corpus.importers._store`: ``store_import`` and ``StreamWriter``), by
``protocol commit`` and by ``evaluate`` (which re-checks every selected document under the
protocol's rules). ``docs/protocol.md`` ("Arm rules") states the same rules in words.

=====  ==================================  =====================================================
arm    label roles allowed                 other rules
=====  ==================================  =====================================================
A      negative (``human``)                written on or before 2021-12-31 (``A.max_date``)
B      negative (``human``)                carries ``provenance.attestation`` (``B.attestation``)
C      positive, side (``ai``,
       ``ai-edited-human``, ``mixed``)
C2     positive, side (as C)               (its edit budget is the protocol's ``[arms]`` table)
=====  ==================================  =====================================================

Label roles come from :data:`veribench.labels.LABEL_ROLES`. Arms not in the table (a
user's own, Liang's ``AI-edited``) have no rule.

Each rule has an id (:data:`RULE_IDS`: ``A.labels``, ``A.max_date``, ``B.labels``,
``B.attestation``, ``C.labels``, ``C2.labels``). A protocol may relax a rule explicitly
(``[arm_rules] relax = ["A.labels"]``) or move arm A's date bound
(``[arm_rules] A.max_date = "2022-06-30"``); :class:`ArmRules` is the rules in force.

A text's date (arm A) is, in order: ``provenance.published`` (the text's own date); else
``provenance.date_bound``, the "written on or before" date its importer declares for the
corpus or set (``provenance.date_bound_source`` says where it is documented); else it is
**undated** (stored with ``provenance.date_status = "unknown"``): allowed into arm A only
as such, and every run counts its undated arm-A texts. A partial date (``2021``,
``2021-12``) is compared by the last day it can denote, so a text is never taken as older
than its date shows. Derived documents (attacks, paraphrases, humanized outputs, edits)
are checked for their label only: their date and attestation are their source's.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from veribench.errors import close_matches
from veribench.labels import LABEL_ROLES, NEGATIVE, POSITIVE, SIDE

#: Spec 002: arm A is "human writing whose provenance predates ChatGPT's November 2022
#: release ... with archive.org captures from 2021 or earlier".
ARM_A_MAX_DATE = "2021-12-31"
#: ``provenance.date_status`` of an arm-A text with neither a date nor a declared bound.
DATE_UNKNOWN = "unknown"


@dataclass(frozen=True)
class ArmRule:
    """The built-in rule of one arm.

    Attributes:
        roles: label roles (:data:`veribench.labels.LABEL_ROLES`) the arm may hold.
        max_date: ISO date (inclusive) no text of the arm may be written after, or ``None``.
        attestation: every text needs ``provenance.attestation``.
        source: where the rule comes from.
    """

    roles: tuple[str, ...]
    max_date: str | None = None
    attestation: bool = False
    source: str = "docs/spec/002, Corpus construction"

    def labels(self) -> tuple[str, ...]:
        """The labels whose role the arm allows, in table order."""
        return tuple(k for k, v in LABEL_ROLES.items() if v in self.roles)


#: The arm rules (spec 002): arm -> :class:`ArmRule`.
ARM_RULES: Mapping[str, ArmRule] = MappingProxyType({
    "A": ArmRule(roles=(NEGATIVE,), max_date=ARM_A_MAX_DATE,
                 source="docs/spec/002, Arm A: verified pre-2022 human text"),
    "B": ArmRule(roles=(NEGATIVE,), attestation=True,
                 source="docs/spec/002, Arm B: volunteers who attest, in writing, that no AI touched the draft"),
    # AI-touched texts of a side label (edited, mixed) may sit in C: they are never headline
    # (veribench.protocol.roles); a human text may not.
    "C": ArmRule(roles=(POSITIVE, SIDE), source="docs/spec/002, Arm C: multi-model AI text"),
    "C2": ArmRule(roles=(POSITIVE, SIDE), source="docs/spec/002, Sub-arm C2: AI drafts lightly human-edited"),
})


def _rule_ids() -> tuple[str, ...]:
    out: list[str] = []
    for arm, r in ARM_RULES.items():
        out.append(f"{arm}.labels")
        if r.max_date:
            out.append(f"{arm}.max_date")
        if r.attestation:
            out.append(f"{arm}.attestation")
    return tuple(out)


#: Every rule id, in table order.
RULE_IDS: tuple[str, ...] = _rule_ids()


class _ArmA(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    max_date: str = Field(description="ISO date YYYY-MM-DD: arm A's texts are written on or before it")

    @field_validator("max_date")
    @classmethod
    def _iso(cls, v: str) -> str:
        try:
            _dt.date.fromisoformat(v)
        except ValueError:
            raise ValueError(f"not an ISO date YYYY-MM-DD: {v!r}") from None
        if len(v) != 10:
            raise ValueError(f"write the date as YYYY-MM-DD, got {v!r}")
        return v


class ArmRulesModel(BaseModel):
    """``[arm_rules]`` of a protocol file: the explicit relaxations of :data:`ARM_RULES`.

    ``relax``: rule ids switched off (``["A.labels"]``); ``A.max_date``: another date bound
    for arm A (TOML ``A.max_date = "2022-06-30"`` or ``[arm_rules.A] max_date = ...``).
    """

    model_config = ConfigDict(extra="forbid", strict=True)
    relax: list[str] = Field(default_factory=list, description=f"rule ids to relax: {', '.join(RULE_IDS)}")
    A: _ArmA | None = Field(None, description="arm A's date bound, moved explicitly")

    @field_validator("relax")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        for x in v:
            if x not in RULE_IDS:
                close = close_matches(x, RULE_IDS, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ValueError(f"unknown arm rule {x!r}{hint} (known: {', '.join(RULE_IDS)})")
        if len(set(v)) != len(v):
            raise ValueError(f"a rule is named twice in {v}")
        return v


@dataclass(frozen=True)
class ArmRules:
    """The arm rules in force: :data:`ARM_RULES` less the protocol's relaxations.

    Attributes:
        relaxed: rule ids switched off.
        max_date: arm -> date bound where the protocol moved it.
    """

    relaxed: frozenset[str] = frozenset()
    max_date: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_model(cls, m: ArmRulesModel | None) -> ArmRules:
        if m is None:
            return cls()
        return cls(relaxed=frozenset(m.relax), max_date={"A": m.A.max_date} if m.A else {})

    def merged(self, other: ArmRules) -> ArmRules:
        """Rules that accept what either accepts (the union of relaxations, the later bound):
        what an import accepts while several committed protocols exist; each run re-checks
        its own protocol's rules."""
        dates = dict(self.max_date)
        for a, d in other.max_date.items():
            dates[a] = max(dates.get(a, d), d)
        return ArmRules(relaxed=self.relaxed | other.relaxed, max_date=dates)

    def bound(self, arm: str) -> str | None:
        """The date bound of ``arm`` in force (``None``: none, or relaxed)."""
        r = ARM_RULES.get(arm)
        if r is None or r.max_date is None or f"{arm}.max_date" in self.relaxed:
            return None
        return self.max_date.get(arm, r.max_date)

    def describe(self) -> dict[str, Any]:
        """The rules in force as JSON: ``{rules: {id: text}, relaxed: [...], changed: {...}}``."""
        rules: dict[str, str] = {}
        for arm, r in ARM_RULES.items():
            rules[f"{arm}.labels"] = f"arm {arm} holds only {', '.join(r.labels())} texts"
            if r.max_date:
                rules[f"{arm}.max_date"] = f"arm {arm} texts are written on or before {self.bound(arm) or r.max_date}"
            if r.attestation:
                rules[f"{arm}.attestation"] = f"arm {arm} texts carry an attestation (provenance.attestation)"
        return {"rules": {k: v for k, v in rules.items() if k not in self.relaxed}, "relaxed": sorted(self.relaxed),
                "changed": {f"{a}.max_date": d for a, d in sorted(self.max_date.items())
                            if d != (ARM_RULES[a].max_date if a in ARM_RULES else None)}}

    def statement(self) -> str | None:
        """One line naming every relaxation, or ``None`` when the built-in rules hold."""
        d = self.describe()
        parts = [f"{x} relaxed" for x in d["relaxed"]]
        parts += [f"{k} moved from {ARM_RULES[k.split('.')[0]].max_date} to {v}" for k, v in d["changed"].items()]
        return "; ".join(parts) or None


_PARTIAL = re.compile(r"(\d{4})(?:-(\d{2}))?")


def latest_day(value: str) -> _dt.date:
    """The last day an ISO 8601 date or date-time can denote (``2021`` -> 2021-12-31,
    ``2021-02`` -> 2021-02-28, ``2021-03-01T10:00Z`` -> 2021-03-01).

    Raises:
        ValueError: not an ISO 8601 date (the document model checks it first).
    """
    s = value.strip()
    m = _PARTIAL.fullmatch(s)
    if m:
        y = int(m.group(1))
        if m.group(2) is None:
            return _dt.date(y, 12, 31)
        mo = int(m.group(2))
        nxt = _dt.date(y + (mo == 12), mo % 12 + 1, 1)
        return nxt - _dt.timedelta(days=1)
    return _dt.date.fromisoformat(s[:10])


@dataclass(frozen=True)
class Breach:
    """A document that breaks a rule: the rule id, the document field and the message."""

    rule: str
    field: str
    message: str


def _relax_hint(rule: str) -> str:
    if rule.endswith(".max_date"):
        arm = rule.split(".")[0]
        return (f"relax it in the protocol with [arm_rules] {arm}.max_date = \"YYYY-MM-DD\" or "
                f"relax = [\"{rule}\"], committed before the import")
    return f"relax it in the protocol with [arm_rules] relax = [\"{rule}\"], committed before the import"


def check(doc: Mapping[str, Any], rules: ArmRules | None = None) -> Breach | None:
    """The first rule ``doc`` breaks, or ``None``.

    Args:
        doc: ``{label, arm, provenance: {published, date_bound, attestation, ...}, derived}``
            (``derived``: a derived document, checked for its label only).
        rules: the rules in force (default: :data:`ARM_RULES` unrelaxed).
    """
    rules = rules or ArmRules()
    arm = doc.get("arm")
    r = ARM_RULES.get(str(arm)) if arm is not None else None
    if r is None:
        return None
    label = doc.get("label")
    rid = f"{arm}.labels"
    if rid not in rules.relaxed and LABEL_ROLES.get(str(label)) not in r.roles:
        return Breach(rid, "label", f"{label!r} is not allowed in arm {arm} (it holds only "
                      f"{', '.join(r.labels())} texts; rule {rid}; {_relax_hint(rid)})")
    if doc.get("derived"):
        return None
    prov = doc.get("provenance") or {}
    bound = rules.bound(str(arm))
    if bound is not None:
        rid = f"{arm}.max_date"
        for fld, what in (("published", "written"), ("date_bound", "declared written on or before")):
            v = prov.get(fld)
            if v is None:
                continue
            try:
                day = latest_day(str(v))
            except ValueError:
                return Breach(rid, f"provenance.{fld}", f"{v!r} is not an ISO 8601 date (rule {rid})")
            if day > _dt.date.fromisoformat(bound):
                return Breach(rid, f"provenance.{fld}", f"{v} ({what}) is after arm {arm}'s date bound {bound} "
                              f"(rule {rid}; {_relax_hint(rid)})")
            break
    rid = f"{arm}.attestation"
    if r.attestation and rid not in rules.relaxed and not prov.get("attestation"):
        return Breach(rid, "provenance.attestation", f"missing: arm {arm} holds only attested texts (rule {rid}; "
                      f"{_relax_hint(rid)})")
    return None


def undated(doc: Mapping[str, Any]) -> bool:
    """True for a non-derived arm-A text with neither ``provenance.published`` nor a
    declared ``provenance.date_bound``."""
    prov = doc.get("provenance") or {}
    return (str(doc.get("arm")) == "A" and not doc.get("derived") and prov.get("published") is None
            and prov.get("date_bound") is None)
