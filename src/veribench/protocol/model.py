"""The protocol file (TOML or YAML): scoring rules fixed before any scan.

A protocol names the corpus selection, each detector with its decision rule, the
metrics, the subgroup tables, the calibration split rule, the interval method and
a run tag. Its identity is the SHA-256 of the file's raw bytes. See
``docs/protocol.md`` for the full format and ``examples/protocols/`` for examples.

Example (TOML)::

    [protocol]
    name = "liang2023-replication"
    tag = "BENCH-2026-Q4"

    [selection]
    corpora = ["liang2023"]          # optional; also labels, arms, subgroups

    [split]
    rule = "none"                    # or "hash": 1 in `every` human texts by hash of id,
    every = 5                        #   plus every AI text sharing its group_key
    salt = "veribench-split-v1"

    [metrics]
    interval = "wilson"              # the only interval method for rates
    confidence = 0.95
    auroc_ci = "delong"              # or "bootstrap"
    bootstrap_n = 2000
    seed = 0
    tpr_at_fpr = [0.01, 0.05]

    [tables]
    slices = ["subgroup", "arm", "tag:writer"]

    [[detectors]]
    name = "GPTZero"                 # stored detector name, or a registry plug-in
    rule = { field = "ai_probability", op = ">", threshold = 0.5, source = "Liang et al. 2023" }

    [[detectors]]
    name = "zippy"
    settings = { engine = "lzma" }
    rule = { fit = "best_balanced_accuracy" }   # fitted on the calibration split only

    [[amendments]]                   # required to change a committed protocol
    date = "2026-11-30"
    supersedes = "<sha256 of the previous committed file>"
    summary = "why the rule changed"
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ProtocolError
from ..hashing import sha256_bytes

FIELDS = ("ai_probability", "raw", "oriented", "verdict")
OPS = (">", ">=", "<", "<=")
FIT_RULES = ("best_balanced_accuracy", "target_fpr")
SLICE_KINDS = ("subgroup", "arm", "kind", "corpus", "label")

#: Default decision rule when no protocol is given (issue #2; Liang et al. 2023 use
#: ``score > 0.5`` for all seven detectors).
DEFAULT_THRESHOLD = 0.5

#: Verdict strings that mean "AI" when a detector has no probability (vendor or
#: tool's own verdict field). Source: each tool's documented verdict values.
AI_VERDICTS = frozenset({"ai", "ai_only", "ai-generated", "ai_generated", "fake", "chatgpt", "machine", "mixed_ai"})


@dataclass(frozen=True)
class DecisionRule:
    """How a detector's score becomes a flag (AI) or a pass (human).

    Either a fixed comparison ``field op threshold`` (e.g. ``ai_probability > 0.5``;
    ``raw < 0.9015`` for Binoculars), a verdict rule (``field = "verdict"``: flagged
    when the verdict is in ``ai_values``), or ``fit`` = ``best_balanced_accuracy`` /
    ``target_fpr`` (with ``target_fpr``), fitted on the calibration split over the
    oriented score (higher = more AI), flag when ``score > threshold``.
    """

    field: str = "ai_probability"
    op: str = ">"
    threshold: float | None = DEFAULT_THRESHOLD
    ai_values: tuple[str, ...] = ()
    fit: str | None = None
    target_fpr: float | None = None
    source: str = "default"

    def describe(self) -> str:
        if self.fit:
            return f"fitted: {self.fit}" + (f" (FPR {self.target_fpr})" if self.target_fpr else "")
        if self.field == "verdict":
            return f"verdict in {list(self.ai_values) or sorted(AI_VERDICTS)}"
        return f"{self.field} {self.op} {self.threshold:g}"

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "op": self.op, "threshold": self.threshold, "ai_values": list(self.ai_values),
                "fit": self.fit, "target_fpr": self.target_fpr, "source": self.source}


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
    """A parsed protocol file; ``hash`` is the SHA-256 of its raw bytes."""

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

    @classmethod
    def default(cls) -> "Protocol":
        """The rules used when ``evaluate`` runs without a protocol file: every stored
        detector, ``ai_probability > 0.5`` (verdict when no probability), no split."""
        return cls(name="default", tag="adhoc", hash=None, path=None, raw={}, detectors=[])


def _err(path: str, msg: str, fld: str | None = None) -> ProtocolError:
    return ProtocolError(f"protocol {path}" + (f", field {fld!r}" if fld else "") + f": {msg}")


def _parse_rule(path: str, i: int, d: Any) -> DecisionRule:
    where = f"detectors[{i}].rule"
    if d is None:
        return DecisionRule()
    if not isinstance(d, dict):
        raise _err(path, "must be a table", where)
    unknown = set(d) - {"field", "op", "threshold", "ai_values", "fit", "target_fpr", "source"}
    if unknown:
        raise _err(path, f"unknown keys {sorted(unknown)}", where)
    if "fit" in d:
        if d["fit"] not in FIT_RULES:
            raise _err(path, f"fit must be one of {FIT_RULES}", where + ".fit")
        if d["fit"] == "target_fpr" and not isinstance(d.get("target_fpr"), (int, float)):
            raise _err(path, "fit = target_fpr needs a numeric target_fpr", where + ".target_fpr")
        return DecisionRule(field="oriented", op=">", threshold=None, fit=d["fit"], target_fpr=d.get("target_fpr"),
                            source=str(d.get("source", "fitted on the calibration split")))
    fld = d.get("field", "ai_probability")
    if fld not in FIELDS:
        raise _err(path, f"must be one of {FIELDS}", where + ".field")
    if fld == "verdict":
        vals = d.get("ai_values") or []
        return DecisionRule(field="verdict", op="in", threshold=None, ai_values=tuple(str(v).lower() for v in vals),
                            source=str(d.get("source", "vendor verdict")))
    op = d.get("op", ">")
    if op not in OPS:
        raise _err(path, f"must be one of {OPS}", where + ".op")
    thr = d.get("threshold")
    if not isinstance(thr, (int, float)) or isinstance(thr, bool):
        raise _err(path, "a numeric threshold is required", where + ".threshold")
    return DecisionRule(field=fld, op=op, threshold=float(thr), source=str(d.get("source", "protocol")))


def parse_protocol(data: dict[str, Any], *, path: str = "<protocol>", digest: str | None = None) -> Protocol:
    """Validate a protocol mapping (already parsed from TOML/YAML).

    Raises:
        ProtocolError: naming the file and field of the first problem found.
    """
    if not isinstance(data, dict):
        raise _err(path, "top level must be a table")
    head = data.get("protocol") or {}
    name = head.get("name")
    if not name:
        raise _err(path, "a name is required", "protocol.name")
    tag = str(head.get("tag") or "adhoc")
    dets = []
    for i, d in enumerate(data.get("detectors") or []):
        if not isinstance(d, dict) or not d.get("name"):
            raise _err(path, "each detector needs a name", f"detectors[{i}].name")
        settings = d.get("settings") or {}
        if not isinstance(settings, dict):
            raise _err(path, "must be a table", f"detectors[{i}].settings")
        dets.append(DetectorEntry(name=str(d["name"]), settings=dict(settings), label=d.get("label"),
                                  rule=_parse_rule(path, i, d.get("rule")), corpora=tuple(d.get("corpora") or ())))
    labels = [e.display for e in dets]
    dup = {x for x in labels if labels.count(x) > 1}
    if dup:
        raise _err(path, f"duplicate detector labels {sorted(dup)}; give each a distinct label", "detectors")
    split = data.get("split") or {}
    rule = split.get("rule", "none")
    if rule not in ("none", "hash"):
        raise _err(path, "must be 'none' or 'hash'", "split.rule")
    every = int(split.get("every", 5))
    if every < 2:
        raise _err(path, "must be at least 2", "split.every")
    metrics = data.get("metrics") or {}
    interval = metrics.get("interval", "wilson")
    if interval != "wilson":
        raise _err(path, "only 'wilson' intervals are supported for rates", "metrics.interval")
    auroc_ci = metrics.get("auroc_ci", "delong")
    if auroc_ci not in ("delong", "bootstrap"):
        raise _err(path, "must be 'delong' or 'bootstrap'", "metrics.auroc_ci")
    slices = tuple((data.get("tables") or {}).get("slices", ("subgroup", "arm")))
    for s in slices:
        if s not in SLICE_KINDS and not s.startswith("tag:"):
            raise _err(path, f"unknown slice {s!r}; use {SLICE_KINDS} or tag:<name>", "tables.slices")
    amendments = data.get("amendments") or []
    for j, a in enumerate(amendments):
        if not isinstance(a, dict) or not a.get("summary") or not a.get("date"):
            raise _err(path, "each amendment needs a date and a summary", f"amendments[{j}]")
    return Protocol(
        name=str(name), tag=tag, hash=digest, path=path, raw=data, detectors=dets,
        selection=dict(data.get("selection") or {}), split_rule=rule, split_every=every,
        split_salt=str(split.get("salt", "veribench-split-v1")), split_corpora=tuple(split.get("corpora") or ()),
        confidence=float(metrics.get("confidence", 0.95)), auroc_ci=auroc_ci,
        bootstrap_n=int(metrics.get("bootstrap_n", 2000)), seed=int(metrics.get("seed", 0)),
        tpr_at_fpr=tuple(float(x) for x in metrics.get("tpr_at_fpr", (0.01, 0.05))), slices=slices,
        amendments=[dict(a) for a in amendments],
    )


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
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _err(str(p), f"not UTF-8 (byte {e.start})") from e
    try:
        if p.suffix.lower() in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            data = tomllib.loads(text)
    except Exception as e:  # tomllib.TOMLDecodeError / yaml.YAMLError
        raise _err(str(p), f"syntax error: {e}") from e
    return parse_protocol(data, path=str(p), digest=sha256_bytes(raw))
