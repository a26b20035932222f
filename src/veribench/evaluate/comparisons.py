"""Is detector A really better than B? Paired comparisons, subgroup gaps, the significance
matrix and tiers of detectors the tests cannot separate. Pure: arrays in, rows out.

Inputs (all aligned to the same n documents, in the same order):

* ``y``: int array, 1 = AI (positive), 0 = human (negative), as the protocol's label roles
  define for the headline; any other value (e.g. -1 for side rows: ``ai-edited-human``,
  ``mixed``, derived documents, side arms) keeps the document out of every comparison.
* per detector a :class:`DetectorInput`: oriented scores (higher = more AI) with their
  validity mask, and flags under the detector's decision rule with theirs;
* ``slices``: slice label -> boolean mask (:func:`slice_masks` builds ``all`` and
  ``kind=value`` masks from columns);
* the protocol's ``[comparisons]`` table (:class:`ComparisonConfig`) and ``[[gaps]]``
  entries (:class:`GapConfig`), as dicts or objects.

Outputs (:func:`compute_comparisons`), JSON-ready (``None`` for undefined values, never NaN):

* ``comparisons``: one row per slice x metric x pair of detectors (a before b in input
  order) with ``{slice, metric, a, b, estimate (a - b), ci95, p_value, p_adjusted, test}``
  plus ``interval, n, value_a, value_b, reason, detail``. Each pair uses only the
  documents **both** detectors scored validly. AUROC: paired DeLong
  (:func:`veribench.metrics.paired.delong_paired`); ``fpr`` (human texts) and
  ``catch_rate`` (AI texts): McNemar exact + Newcombe paired interval
  (:func:`veribench.metrics.paired.paired_rate_difference`).
* ``gaps``: one row per declared gap x detector with ``{detector, metric, group_a,
  group_b, estimate, ci95, p_value, test}`` plus ``slice, label_a, label_b, p_adjusted,
  interval, k_a, n_a, rate_a, k_b, n_b, rate_b, reason``
  (:func:`veribench.metrics.proportions.proportion_difference`).
* ``significance``: per slice x metric, the matrix of which differences survive the
  correction (:func:`significance_matrices`).
* ``tiers``: per slice x metric, detectors grouped into tiers the tests cannot separate
  (:func:`tiers_for`; the rule is :data:`TIER_RULE`).
* ``corrections``: the families and their sizes.

Multiple comparisons (``correction = "holm"``, ``family = "run"``): Holm's step-down
correction over every comparison row of the run whose p-value is defined (all slices,
metrics and pairs: one family), and separately over every gap row of the run (the declared
gaps x detectors: a second family). A difference *survives* when its adjusted p-value is
<= alpha (statsmodels' ``multipletests`` reject rule).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from veribench.errors import ProtocolError
from veribench.metrics import paired as mpaired
from veribench.metrics import proportions as mprop
from veribench.metrics.roc import auroc

METRICS = ("auroc", "fpr", "catch_rate")
#: Which direction is better, per metric.
BETTER = {"auroc": "higher", "catch_rate": "higher", "fpr": "lower"}
#: The label value (in ``y``) a rate metric is computed on.
RATE_LABEL = {"fpr": 0, "catch_rate": 1}

TIER_RULE = (
    "Tiers are the finest ordered partition of the detectors such that every detector in a tier "
    "is significantly better (adjusted p <= alpha, in the better direction of the metric) than "
    "every detector in every later tier. Construction: count for each detector the detectors it "
    "is significantly better than; sort by that count; cut between positions k and k+1 exactly "
    "when each of the first k is significantly better than each of the rest. Detectors within a "
    "tier are listed alphabetically: the tests do not order them. A pair whose test is undefined "
    "counts as not separated. Detectors whose metric is undefined in the slice are not ranked."
)

NO_COMMON = "no texts scored validly by both detectors in this slice"
#: Reasons when the slice itself lacks the texts a metric needs (before any detector).
NO_TEXTS = {"catch_rate": "no AI texts in this slice", "fpr": "no human texts in this slice",
            "auroc": "no human or AI texts in this slice",
            "auroc_class": "AUROC needs human and AI texts: this slice holds only one of them"}


class ComparisonConfig(BaseModel):
    """The protocol's ``[comparisons]`` table.

    Attributes:
        enabled: compute comparisons at all.
        metrics: subset of ``auroc``, ``fpr``, ``catch_rate``.
        correction: ``holm`` (Holm 1979) or ``none``.
        family: ``run``: one family of all comparison rows of a run (every slice, metric and
            pair), and one family of all its gap rows.
        alpha: level at which a difference "survives" (adjusted p <= alpha).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, from_attributes=True)

    enabled: bool = True
    metrics: tuple[Literal["auroc", "fpr", "catch_rate"], ...] = METRICS
    correction: Literal["holm", "none"] = "holm"
    family: Literal["run"] = "run"
    alpha: float = Field(0.05, gt=0.0, lt=1.0)


class GapConfig(BaseModel):
    """One ``[[gaps]]`` entry: compare a rate between two groups of one slice kind.

    Attributes:
        slice: slice kind holding the groups (``subgroup``, ``arm``, ``tag:writer`` ...).
        group_a, group_b: the two values of that column; estimate = rate(a) - rate(b).
        label_a, label_b: display labels (default: the values).
        metric: ``fpr`` (human texts) or ``catch_rate`` (AI texts).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, from_attributes=True)

    slice: str = "subgroup"
    group_a: str
    group_b: str
    label_a: str | None = None
    label_b: str | None = None
    metric: Literal["fpr", "catch_rate"] = "fpr"


def _pydantic_error(e: ValidationError, path: str, where: str) -> ProtocolError:
    first = e.errors()[0] if e.errors() else {}
    loc = ".".join(str(x) for x in first.get("loc", ()))
    msg = first.get("msg", str(e))
    if first.get("type") == "extra_forbidden":
        msg = "unknown key"
    return ProtocolError(f"protocol {path}, field {where + ('.' + loc if loc else '')!r}: {msg}")


def parse_comparisons(data: Any, path: str = "<protocol>") -> ComparisonConfig:
    """``[comparisons]`` as a :class:`ComparisonConfig` (``None`` gives the defaults).

    Raises:
        ProtocolError: naming the file and field of the first problem.
    """
    if data is None:
        return ComparisonConfig()
    if isinstance(data, ComparisonConfig):
        return data
    try:
        return ComparisonConfig.model_validate(data)
    except ValidationError as e:
        raise _pydantic_error(e, path, "comparisons") from None


def parse_gaps(data: Any, path: str = "<protocol>") -> list[GapConfig]:
    """``[[gaps]]`` as :class:`GapConfig` entries (``None`` gives none).

    Raises:
        ProtocolError: naming the file and the entry (``gaps[i].field``).
    """
    if data is None:
        return []
    if not isinstance(data, (list, tuple)):
        raise ProtocolError(f"protocol {path}, field 'gaps': must be an array of tables ([[gaps]])")
    out = []
    for i, g in enumerate(data):
        if isinstance(g, GapConfig):
            out.append(g)
            continue
        try:
            out.append(GapConfig.model_validate(g))
        except ValidationError as e:
            raise _pydantic_error(e, path, f"gaps[{i}]") from None
    return out


@dataclass
class DetectorInput:
    """One detector's arrays, aligned to the documents.

    Attributes:
        name: the detector's display label (used in rows).
        score: oriented scores, float (higher = more AI); NaN where there is none.
        flag: bool, flagged as AI under the detector's decision rule.
        score_valid: bool, the score counts (status ok and finite); default
            ``isfinite(score)``.
        flag_valid: bool, the rule gives a flag for this document (a verdict rule may flag
            without a score); default ``score_valid``.
        rule_reason: why the detector has no decision rule (e.g. a threshold that could not
            be fitted), or ``None``; rate rows of such a detector give this reason.
    """

    name: str
    score: np.ndarray
    flag: np.ndarray
    score_valid: np.ndarray | None = None
    flag_valid: np.ndarray | None = None
    rule_reason: str | None = None

    def __post_init__(self) -> None:
        self.score = np.asarray(self.score, dtype=np.float64)
        self.flag = np.asarray(self.flag, dtype=bool)
        sv = np.isfinite(self.score) if self.score_valid is None else np.asarray(self.score_valid, dtype=bool)
        self.score_valid = sv & np.isfinite(self.score)
        self.flag_valid = self.score_valid.copy() if self.flag_valid is None else np.asarray(self.flag_valid, dtype=bool)
        n = self.score.shape[0]
        for what, arr in (("flag", self.flag), ("flag_valid", self.flag_valid)):
            if arr.shape != (n,):
                raise ValueError(f"detector {self.name!r}: {what} has shape {arr.shape}, expected ({n},)")


def _f(x: Any) -> Any:
    """JSON-safe number: NaN / inf -> None, numpy scalars -> Python."""
    if x is None:
        return None
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        v = float(x)
        return v if math.isfinite(v) else None
    return x


def _ci(lo: Any, hi: Any) -> list[float] | None:
    lo, hi = _f(lo), _f(hi)
    return None if lo is None or hi is None else [lo, hi]


def slice_masks(columns: Mapping[str, Sequence[Any]], kinds: Iterable[str] | None = None,
                n: int | None = None) -> dict[str, np.ndarray]:
    """Boolean masks per slice: ``all`` plus ``kind=value`` for each distinct non-null value.

    Args:
        columns: slice kind -> per-document values (str or ``None``), e.g. ``{"subgroup":
            docs.subgroup, "tag:writer": ...}``.
        kinds: which kinds, in order (default: all keys of ``columns``).
        n: document count (default: length of the first column).

    Returns:
        Ordered dict: ``"all"`` first, then each kind's values sorted.
    """
    keys = list(columns) if kinds is None else list(kinds)
    if n is None:
        n = len(next(iter(columns.values()))) if columns else 0
    out: dict[str, np.ndarray] = {"all": np.ones(n, dtype=bool)}
    for kind in keys:
        col = np.asarray(columns[kind], dtype=object)
        if col.shape != (n,):
            raise ValueError(f"column {kind!r} has {col.shape[0]} values, expected {n}")
        present = np.array([v is not None for v in col], dtype=bool)
        vals = np.array([str(v) for v in col[present]], dtype=object)
        for v in sorted(set(vals.tolist())):
            m = np.zeros(n, dtype=bool)
            m[present] = vals == v
            out[f"{kind}={v}"] = m
    return out


def _check_inputs(y: Any, detectors: Sequence[DetectorInput], slices: Mapping[str, Any]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    yy = np.asarray(y)
    if yy.ndim != 1 or yy.dtype.kind not in "iub":
        raise ValueError(f"y must be a 1-D integer array (1 = AI, 0 = human, other = excluded), got {yy.dtype} {yy.shape}")
    yy = yy.astype(np.int64)
    n = yy.shape[0]
    names = [d.name for d in detectors]
    if len(set(names)) != len(names):
        raise ValueError(f"detector names must be unique, got {names}")
    for d in detectors:
        if d.score.shape != (n,):
            raise ValueError(f"detector {d.name!r}: {d.score.shape[0]} scores for {n} documents")
    masks = {}
    for k, m in slices.items():
        mm = np.asarray(m, dtype=bool)
        if mm.shape != (n,):
            raise ValueError(f"slice {k!r}: mask of shape {mm.shape}, expected ({n},)")
        masks[str(k)] = mm
    return yy, masks


def _comparison_row(slice_name: str, metric: str, a: DetectorInput, b: DetectorInput, y: np.ndarray,
                    mask: np.ndarray, alpha: float) -> dict[str, Any]:
    if metric == "auroc":
        both = mask & a.score_valid & b.score_valid & ((y == 0) | (y == 1))
        test, interval = mpaired.DELONG_TEST, mpaired.DELONG_INTERVAL
        res = mpaired.delong_paired(y[both], a.score[both], b.score[both], alpha) if both.any() else None
    else:
        both = mask & a.flag_valid & b.flag_valid & (y == RATE_LABEL[metric])
        test, interval = mpaired.MCNEMAR_TEST, mpaired.NEWCOMBE_PAIRED_INTERVAL
        res = mpaired.paired_rate_difference(a.flag[both], b.flag[both], alpha) if both.any() else None
    row: dict[str, Any] = {"slice": slice_name, "metric": metric, "a": a.name, "b": b.name}
    if res is None:
        need = (y == 0) | (y == 1) if metric == "auroc" else y == RATE_LABEL[metric]
        no_rule = [d for d in (a, b) if metric != "auroc" and d.rule_reason]
        n_pairs = 0
        if no_rule:
            why = "; ".join(f"{d.name}: {d.rule_reason}" for d in no_rule)
            # the texts both scored validly: the pairs a rule would have compared
            n_pairs = int((mask & a.score_valid & b.score_valid & need).sum())
        elif not (mask & need).any():
            why = NO_TEXTS[metric]
        elif metric == "auroc" and not ((mask & (y == 0)).any() and (mask & (y == 1)).any()):
            why = NO_TEXTS["auroc_class"]
        else:
            why = NO_COMMON
        row.update(estimate=None, ci95=None, p_value=None, p_adjusted=None, test=test, interval=interval, n=n_pairs,
                   value_a=None, value_b=None, reason=why, detail={})
        return row
    row.update(estimate=_f(res.estimate), ci95=_ci(res.lo, res.hi), p_value=_f(res.p_value), p_adjusted=None,
               test=res.test, interval=res.interval, n=int(res.n), value_a=_f(res.value_a), value_b=_f(res.value_b),
               reason=res.reason, detail={k: _f(v) for k, v in res.detail.items()})
    return row


def pairwise_comparisons(y: Any, detectors: Sequence[DetectorInput], slices: Mapping[str, Any],
                         config: ComparisonConfig | Mapping[str, Any] | None = None,
                         confidence: float = 0.95,
                         slice_detectors: Mapping[str, Sequence[str]] | None = None) -> list[dict[str, Any]]:
    """Comparison rows for every slice x metric x pair, with ``p_adjusted`` over the run family.

    Args:
        y, detectors, slices: see the module docstring.
        config: ``[comparisons]`` (dict or :class:`ComparisonConfig`); ``enabled = false``
            gives no rows.
        confidence: level of the ``ci95`` intervals (the protocol's ``confidence``).
        slice_detectors: optional slice -> the names of the detectors compared in that slice
            (e.g. the detectors of one Table 1 group); a slice not listed compares all.

    Returns:
        Rows in the order slice, metric (config order), pair (i < j in input order).
    """
    cfg = parse_comparisons(config)
    if not cfg.enabled:
        return []
    yy, masks = _check_inputs(y, detectors, slices)
    alpha_ci = 1.0 - float(confidence)
    rows = []
    for sname, mask in masks.items():
        dets = _in_slice(detectors, sname, slice_detectors)
        for metric in cfg.metrics:
            for i in range(len(dets)):
                for j in range(i + 1, len(dets)):
                    rows.append(_comparison_row(sname, metric, dets[i], dets[j], yy, mask, alpha_ci))
    adj = mpaired.adjust_pvalues([r["p_value"] for r in rows], cfg.correction)
    for r, p in zip(rows, adj):
        r["p_adjusted"] = _f(p)
    return rows


def _in_slice(detectors: Sequence[Any], sname: str, slice_detectors: Mapping[str, Sequence[str]] | None) -> list[Any]:
    """The detectors (objects or names, input order) compared in slice ``sname``."""
    if slice_detectors is None or sname not in slice_detectors:
        return list(detectors)
    keep = set(slice_detectors[sname])
    return [d for d in detectors if (d if isinstance(d, str) else d.name) in keep]


def subgroup_gaps(y: Any, detectors: Sequence[DetectorInput], columns: Mapping[str, Sequence[Any]],
                  gaps: Sequence[GapConfig | Mapping[str, Any]],
                  config: ComparisonConfig | Mapping[str, Any] | None = None,
                  confidence: float = 0.95) -> list[dict[str, Any]]:
    """Gap rows: rate(group_a) - rate(group_b) per declared gap and detector.

    Args:
        y, detectors: see the module docstring.
        columns: slice kind -> per-document values (as for :func:`slice_masks`).
        gaps: ``[[gaps]]`` entries.
        config: ``[comparisons]``; its correction applies to the gap family (all gap rows).
        confidence: level of the ``ci95`` intervals.

    Returns:
        Rows in the order gap, detector. A gap whose slice kind is not among ``columns`` gets
        rows with ``None`` values and the reason. A detector that scored no text of either
        group (another corpus's detector) gets no row for that gap; one without a decision
        rule (``rule_reason``), or that judged texts of only one group, gets its row with
        ``None`` and the reason.
    """
    cfg = parse_comparisons(config)
    specs = parse_gaps(list(gaps))
    yy, _ = _check_inputs(y, detectors, {})
    alpha_ci = 1.0 - float(confidence)
    rows = []
    for g in specs:
        col = columns.get(g.slice)
        if col is not None:
            vals = np.array([None if v is None else str(v) for v in col], dtype=object)
            if vals.shape != yy.shape:
                raise ValueError(f"column {g.slice!r} has {vals.shape[0]} values, expected {yy.shape[0]}")
            in_a, in_b = vals == g.group_a, vals == g.group_b
        for d in detectors:
            row: dict[str, Any] = {"detector": d.name, "metric": g.metric, "slice": g.slice, "group_a": g.group_a,
                                   "group_b": g.group_b, "label_a": g.label_a or g.group_a,
                                   "label_b": g.label_b or g.group_b}
            if col is None:
                row.update(estimate=None, ci95=None, p_value=None, p_adjusted=None, test=mprop.GAP_TEST,
                           interval=mprop.GAP_INTERVAL, k_a=0, n_a=0, rate_a=None, k_b=0, n_b=0, rate_b=None,
                           reason=f"slice kind {g.slice!r} is not among the run's columns")
                rows.append(row)
                continue
            base = d.flag_valid & (yy == RATE_LABEL[g.metric])
            ma, mb = base & in_a, base & in_b
            if not ((d.score_valid | d.flag_valid) & (in_a | in_b)).any():
                continue  # the detector scored no text of either group: outside this gap's scope, no row
            if d.rule_reason:  # n: the texts of each group it scored validly; no flag, so no k or rate
                sv = d.score_valid & (yy == RATE_LABEL[g.metric])
                row.update(estimate=None, ci95=None, p_value=None, p_adjusted=None, test=mprop.GAP_TEST,
                           interval=mprop.GAP_INTERVAL, k_a=None, n_a=int((sv & in_a).sum()), rate_a=None, k_b=None,
                           n_b=int((sv & in_b).sum()), rate_b=None, reason=f"no decision rule: {d.rule_reason}")
                rows.append(row)
                continue
            res = mprop.proportion_difference(int(d.flag[ma].sum()), int(ma.sum()), int(d.flag[mb].sum()), int(mb.sum()),
                                              alpha_ci)
            row.update(estimate=_f(res.estimate), ci95=_ci(res.lo, res.hi), p_value=_f(res.p_value), p_adjusted=None,
                       test=res.test, interval=res.interval, k_a=res.k_a, n_a=res.n_a, rate_a=_f(res.rate_a),
                       k_b=res.k_b, n_b=res.n_b, rate_b=_f(res.rate_b), reason=res.reason)
            rows.append(row)
    adj = mpaired.adjust_pvalues([r["p_value"] for r in rows], cfg.correction)
    for r, p in zip(rows, adj):
        r["p_adjusted"] = _f(p)
    return rows


def detector_values(y: Any, detectors: Sequence[DetectorInput], slices: Mapping[str, Any],
                    metrics: Sequence[str] = METRICS) -> dict[tuple[str, str, str], tuple[float | None, str | None]]:
    """Each detector's own value per (slice, metric, detector) on the texts it scored
    validly: ``(value, reason)`` with ``value`` ``None`` when undefined (one class missing,
    no texts). Used to decide who is ranked; not a comparison."""
    yy, masks = _check_inputs(y, detectors, slices)
    out: dict[tuple[str, str, str], tuple[float | None, str | None]] = {}
    for sname, mask in masks.items():
        for d in detectors:
            for metric in metrics:
                if metric == "auroc":
                    m = mask & d.score_valid & ((yy == 0) | (yy == 1))
                    n_ai, n_h = int((yy[m] == 1).sum()), int((yy[m] == 0).sum())
                    if n_ai == 0 or n_h == 0:
                        out[(sname, metric, d.name)] = (None, f"AUROC undefined (AI n={n_ai}, human n={n_h})")
                    else:
                        out[(sname, metric, d.name)] = (float(auroc(yy[m], d.score[m])), None)
                else:
                    m = mask & d.flag_valid & (yy == RATE_LABEL[metric])
                    k = int(m.sum())
                    out[(sname, metric, d.name)] = ((float(d.flag[m].sum()) / k, None) if k
                                                    else (None, d.rule_reason) if d.rule_reason
                                                    else (None, "no human texts" if metric == "fpr" else "no AI texts"))
    return out


def _better(row: dict[str, Any], metric: str, alpha: float) -> int:
    """+1 when a is significantly better than b, -1 when worse, 0 when not separated."""
    p, est = row.get("p_adjusted"), row.get("estimate")
    if p is None or est is None or p > alpha or est == 0:
        return 0
    sign = 1 if est > 0 else -1
    return sign if BETTER[metric] == "higher" else -sign


def significance_matrices(rows: Sequence[dict[str, Any]], detectors: Sequence[str], alpha: float = 0.05,
                          values: Mapping[tuple[str, str, str], tuple[float | None, str | None]] | None = None,
                          slice_detectors: Mapping[str, Sequence[str]] | None = None) -> list[dict[str, Any]]:
    """Per slice x metric: which pairwise differences survive the correction.

    Args:
        rows: comparison rows (with ``p_adjusted``).
        detectors: detector names in display order.
        alpha: the survival level.
        values: :func:`detector_values`, to list undefined detectors as such.
        slice_detectors: as in :func:`pairwise_comparisons` (each matrix lists its slice's).

    Returns:
        ``{slice, metric, better ("higher"|"lower"), alpha, detectors, cells}`` where
        ``cells[i][j]`` is ``">"`` when detector i is significantly better than detector j,
        ``"<"`` when significantly worse, ``"="`` when the test does not separate them, and
        ``None`` on the diagonal and where the comparison is undefined (no p-value).
    """
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["slice"], r["metric"]), []).append(r)
    out = []
    for (sname, metric), rs in groups.items():
        names = _in_slice(detectors, sname, slice_detectors)
        idx = {d: i for i, d in enumerate(names)}
        k = len(names)
        cells: list[list[str | None]] = [[None] * k for _ in range(k)]
        for r in rs:
            if r["a"] not in idx or r["b"] not in idx or r.get("p_adjusted") is None:
                continue
            i, j = idx[r["a"]], idx[r["b"]]
            s = _better(r, metric, alpha)
            cells[i][j] = {1: ">", -1: "<", 0: "="}[s]
            cells[j][i] = {1: "<", -1: ">", 0: "="}[s]
        entry: dict[str, Any] = {"slice": sname, "metric": metric, "better": BETTER[metric], "alpha": alpha,
                                 "detectors": list(names), "cells": cells}
        if values is not None:
            entry["undefined"] = {d: values[(sname, metric, d)][1] for d in names
                                  if (sname, metric, d) in values and values[(sname, metric, d)][0] is None}
        out.append(entry)
    return out


def tiers_for(names: Sequence[str], better_than: Mapping[tuple[str, str], bool]) -> list[list[str]]:
    """Tiers from a "significantly better" relation (the algorithm of :data:`TIER_RULE`).

    Args:
        names: the ranked detectors.
        better_than: ``(x, y) -> True`` when x is significantly better than y (missing = False).

    Returns:
        Tiers, best first, each sorted alphabetically.
    """
    names = list(names)
    wins = {x: sum(bool(better_than.get((x, z), False)) for z in names if z != x) for x in names}
    order = sorted(names, key=lambda x: (-wins[x], x))
    tiers, start = [], 0
    for k in range(1, len(order)):
        upper, lower = order[:k], order[k:]
        if all(better_than.get((u, w), False) for u in upper for w in lower):
            tiers.append(sorted(order[start:k]))
            start = k
    if order:
        tiers.append(sorted(order[start:]))
    return tiers


def tiers(rows: Sequence[dict[str, Any]], detectors: Sequence[str], alpha: float = 0.05,
          values: Mapping[tuple[str, str, str], tuple[float | None, str | None]] | None = None,
          slice_detectors: Mapping[str, Sequence[str]] | None = None) -> list[dict[str, Any]]:
    """Per slice x metric: detectors grouped into tiers the tests cannot separate.

    Args:
        rows: comparison rows with ``p_adjusted``.
        detectors: all detector names.
        alpha: survival level.
        values: :func:`detector_values`; detectors whose own metric is undefined in the slice
            are listed in ``not_ranked`` with the reason instead of being tiered.
        slice_detectors: as in :func:`pairwise_comparisons` (each slice tiers its own).

    Returns:
        ``{slice, metric, better, alpha, tiers: [{"tier": 1, "detectors": [...]}, ...],
        not_ranked: [{"detector", "reason"}], rule}``.
    """
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["slice"], r["metric"]), []).append(r)
    out = []
    for (sname, metric), rs in groups.items():
        not_ranked = []
        ranked = []
        for d in _in_slice(detectors, sname, slice_detectors):
            v = values.get((sname, metric, d)) if values is not None else (0.0, None)
            if v is None or v[0] is None:
                not_ranked.append({"detector": d, "reason": (v[1] if v else "not compared")})
            else:
                ranked.append(d)
        rel: dict[tuple[str, str], bool] = {}
        for r in rs:
            s = _better(r, metric, alpha)
            if s == 1:
                rel[(r["a"], r["b"])] = True
            elif s == -1:
                rel[(r["b"], r["a"])] = True
        ts = tiers_for(ranked, rel)
        out.append({"slice": sname, "metric": metric, "better": BETTER[metric], "alpha": alpha,
                    "tiers": [{"tier": i + 1, "detectors": t} for i, t in enumerate(ts)],
                    "not_ranked": not_ranked, "rule": TIER_RULE})
    return out


def compute_comparisons(y: Any, detectors: Sequence[DetectorInput], slices: Mapping[str, Any],
                        config: ComparisonConfig | Mapping[str, Any] | None = None,
                        gaps: Sequence[GapConfig | Mapping[str, Any]] = (),
                        columns: Mapping[str, Sequence[Any]] | None = None,
                        confidence: float = 0.95,
                        slice_detectors: Mapping[str, Sequence[str]] | None = None) -> dict[str, Any]:
    """Everything issue 14 adds to a run's results, in one call.

    Args:
        y: labels (1 = AI, 0 = human, other = excluded), one per document.
        detectors: :class:`DetectorInput` per detector (display order).
        slices: slice label -> boolean mask (``all`` included by the caller;
            :func:`slice_masks`).
        config: the protocol's ``[comparisons]`` (dict, :class:`ComparisonConfig`, ``None``
            for the defaults).
        gaps: the protocol's ``[[gaps]]`` entries.
        columns: slice kind -> per-document values, for the gaps.
        confidence: level of the intervals (``ci95``).
        slice_detectors: optional slice -> the detectors compared there (default: all);
            matrices and tiers of a slice list only its detectors.

    Returns:
        ``{"comparisons": [...], "gaps": [...], "significance": [...], "tiers": [...],
        "corrections": {...}}``; with ``enabled = false`` the lists are empty and
        ``corrections.enabled`` is false.
    """
    cfg = parse_comparisons(config)
    names = [d.name for d in detectors]
    if not cfg.enabled:
        return {"comparisons": [], "gaps": [], "significance": [], "tiers": [],
                "corrections": {"enabled": False}}
    rows = pairwise_comparisons(y, detectors, slices, cfg, confidence, slice_detectors)
    gap_rows = subgroup_gaps(y, detectors, columns or {}, gaps, cfg, confidence) if gaps else []
    values = detector_values(y, detectors, slices, cfg.metrics)
    m_cmp = sum(r["p_value"] is not None for r in rows)
    m_gap = sum(r["p_value"] is not None for r in gap_rows)
    return {
        "comparisons": rows,
        "gaps": gap_rows,
        "significance": significance_matrices(rows, names, cfg.alpha, values, slice_detectors),
        "tiers": tiers(rows, names, cfg.alpha, values, slice_detectors),
        "corrections": {
            "enabled": True, "correction": cfg.correction, "family": cfg.family, "alpha": cfg.alpha,
            "confidence": confidence,
            "families": [
                {"name": "comparisons", "size": m_cmp, "rows": len(rows),
                 "description": "every pairwise comparison of this run (all slices, metrics and pairs of detectors) "
                                "whose p-value is defined"},
                {"name": "gaps", "size": m_gap, "rows": len(gap_rows),
                 "description": "every declared subgroup gap x detector of this run whose p-value is defined"},
            ],
        },
    }


def format_significance(matrix: Mapping[str, Any]) -> str:
    """A significance matrix (one entry of :func:`significance_matrices`) as a Markdown table:
    ``>`` row significantly better than column, ``<`` worse, ``=`` not separated, ``·`` undefined."""
    names = matrix["detectors"]
    head = f"| {matrix['slice']} · {matrix['metric']} ({matrix['better']} is better) | " + " | ".join(names) + " |"
    lines = [head, "|" + "---|" * (len(names) + 1)]
    for i, n in enumerate(names):
        cells = ["" if i == j else (c if c is not None else "·") for j, c in enumerate(matrix["cells"][i])]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_tiers(entry: Mapping[str, Any]) -> str:
    """A tiers entry (one of :func:`tiers`) as one line: ``tier 1: A, B; tier 2: C``."""
    parts = [f"tier {t['tier']}: {', '.join(t['detectors'])}" for t in entry["tiers"]]
    if entry.get("not_ranked"):
        parts.append("not ranked: " + ", ".join(x["detector"] for x in entry["not_ranked"]))
    return f"{entry['slice']} · {entry['metric']}: " + ("; ".join(parts) if parts else "no detectors")
