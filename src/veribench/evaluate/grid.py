"""RAID's grid of cells: every combination of a list of tags, and every "all" roll-up, in
one pass per detector (pure: arrays in, rows out; no I/O).

What a cell is (RAID, Dugan et al. 2024, ``raid/evaluate.py`` ``compute_scores``)
--------------------------------------------------------------------------------
For grid tags t_1..t_T (RAID: domain, model, decoding, repetition_penalty, attack), a cell
fixes each tag to one value *or* to ``"all"``. Its **AI side** is the AI texts whose tag
values match; the values of each tag are those the AI texts carry (human texts have no
generator, decoding or repetition penalty). Its **human side** is every human text of the
cell's threshold group (``threshold_by``, RAID: the domain), of any attack, or every human
text when the cell rolls that tag up (or when ``threshold_by`` is not a grid tag). Only
cells with at least one AI text are reported; a combination that never occurs is absent.

Per cell and detector (scores oriented once, higher = more likely AI):

- ``auroc``: P(AI score > human score) + 1/2 P(tie), AI side vs human side (Mann-Whitney
  with midranks; equals scikit-learn's ``roc_auc_score``, which RAID calls), with
  ``auroc_ci95`` from DeLong's variance (DeLong, DeLong & Clarke-Pearson 1988,
  Biometrics 44(3); structural components V10 / V01 as in Sun & Xu 2014, IEEE SPL 21(11)),
  AUC +- z_{0.975} sqrt(S10/m + S01/n), clipped to [0, 1]. RAID computes no interval.
- ``tpr_at_fpr_5`` / ``tpr_at_fpr_1`` (one per target FPR): the threshold of each
  threshold group is set on that group's **unattacked** human texts (RAID: ``attack ==
  "none"``; veribench: no ``attack`` tag or ``"none"``, and no ``derivation`` tag) at the
  exact quantile (:func:`veribench.metrics.thresholds.threshold_at_fpr_sorted`: the
  smallest human score t with #{human > t}/n <= target), and every AI text of the cell is
  judged by its own group's threshold with the flag rule ``score > threshold``
  (:data:`veribench.metrics.thresholds.FLAG_RULE`). ``tpr`` = flagged / AI texts, with
  ``threshold_fit: "in-sample"``: the threshold was fitted on the human texts of this same
  evaluation (no held-out calibration split), so the TPR is an in-sample operating point.
  Its ``ci95`` is the tables' interval, which treats the threshold as an estimate (a Wilson
  interval on k/n treats it as known and is too narrow): the seeded stratified bootstrap of
  :func:`veribench.metrics.threshold_bootstrap.tpr_at_fpr_interval_groups`, refitting every
  threshold group's threshold on its resampled unattacked human texts in every replicate and
  resampling the cell's AI texts together (percentile interval, widened to include ``tpr``;
  ``n_boot`` and ``seed`` are the run's ``bootstrap_n`` and ``seed``, in ``info.tpr_ci``).
  A cell whose AI texts lie in one group gets exactly
  :func:`~veribench.metrics.threshold_bootstrap.tpr_at_fpr_interval_scores` (group's
  unattacked human scores, cell's AI scores). Cost per cell and target: O(B log n) after the
  cell's AI texts are gathered in score order (one stable sort per roll-up mask).
  ``threshold`` is the group's threshold (a float) when the cell's AI texts lie in one
  group, else an object ``{group: threshold}``; ``achieved_fpr`` is the false-positive
  rate those thresholds give on the groups' unattacked human texts (pooled over the
  groups the cell's AI texts lie in).

Null with a reason (never 0, never NaN)
---------------------------------------
- no human text on the cell's human side: ``auroc``, ``auroc_ci95`` and both TPRs are
  null (``n_human`` = 0; the TPR reason says so);
- fewer than 2 texts on a side: ``auroc_ci95`` is null (DeLong's variance needs 2);
- a DeLong variance of 0 (perfect separation, one distinct score) or a bootstrap whose
  replicates all agree: that interval is null, never a point shown as an interval
  (:mod:`veribench.metrics.intervals`); every null interval has its reason beside it
  (``auroc_ci95_reason``, ``ci95_reason``);
- a target FPR is **unreachable** in a threshold group when no threshold gives a
  false-positive rate in (0, target] on its unattacked human texts: fewer than 1/target of
  them (the smallest non-zero FPR, 1/n, exceeds the target) or ties at the top scores.
  RAID's PR #50 (liamdugan/raid, "Remove failed FPR scores") nulls such splits; so does
  the grid, for every cell whose AI texts include that group, with the reason;
- a group with no unattacked human text (RAID raises ``ValueError``), or AI texts with no
  value of ``threshold_by``: the TPRs of the cells holding them are null with the reason.

Differences from RAID's code, by design: the exact quantile and ``score > t`` (RAID steps a
threshold from the mean by halving steps and flags ``score >= t``, so its achieved FPR can
exceed the target and depends on the score's scale); a cell whose AI texts avoid a failed
group keeps its TPR (RAID nulls every ``domain = "all"`` row once any domain fails).
Texts whose score is missing or not finite are left out and counted in ``info``
(RAID's ``require_complete`` drops the whole split instead).

How it is fast: the tag columns are coded once (:class:`CodedTag`; a board passes them
coded, once for every submission); per detector, each AI text's midrank position among all
human scores is found once (``searchsorted``) and its position among its group's human
scores read from it through a table (a group's distinct scores are a subset of all); every
cell's AUROC, DeLong S10, TPR and counts are then weighted ``bincount`` s over dense cell
ids (each AI text falls in 2^T cells), each group's side a slice of the same arrays, and S01
comes from one histogram of those positions per human set (cells x distinct human scores,
in bounded chunks), turned into C_j = 2 #{AI > h_j} + #{AI = h_j} per finest cell before
the roll-ups (linear in the counts, integers below 2**53: exact in float64).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import norm

from veribench.errors import did_you_mean
from veribench.evaluate.split import split_documents
from veribench.metrics.intervals import BOOTSTRAP_ONE_VALUE, DELONG_ZERO, checked
from veribench.metrics.threshold_bootstrap import METHOD as TPR_CI_METHOD
from veribench.metrics.threshold_bootstrap import tpr_at_fpr_interval_groups
from veribench.metrics.thresholds import FLAG_RULE, threshold_at_fpr_sorted, unreachable_reason
from veribench.protocol import roles

#: The roll-up value of a tag in a cell (RAID's name).
ALL = "all"
#: RAID's default targets (``leaderboard/hydrate.py``: ``target_fpr=(0.05, 0.01)``).
RAID_TARGETS = (0.05, 0.01)
#: RAID's grid tags, in RAID's loop order.
RAID_TAGS = ("domain", "model", "decoding", "repetition_penalty", "attack")
#: Largest number of cells (product of (values + 1) over the tags) computed densely.
MAX_CELLS = 20_000_000
#: Entries of one chunk of the (cells x distinct human scores) histogram.
_CHUNK = 1 << 19
#: Every grid TPR's operating point: the threshold is fitted on the same evaluation's human texts.
THRESHOLD_FIT = "in-sample"
#: ``ci95_reason`` of every TPR when the grid is computed with ``tpr_intervals=False``.
NO_TPR_INTERVAL = "interval not computed: point estimates only (tpr_intervals=False)"
#: Shown for an AI text whose value of a grid tag is missing.
MISSING = "(missing)"


@dataclass(frozen=True)
class GridDetector:
    """One detector's scores over the grid's rows.

    Attributes:
        name: the detector's label in the rows.
        score: float array, one per row, oriented so that higher = more likely AI; NaN
            where the text has no usable score (failed, missing): left out and counted.
    """

    name: str
    score: np.ndarray


def target_key(t: float) -> str:
    """Row key of a target FPR: 0.05 -> ``tpr_at_fpr_5``, 0.001 -> ``tpr_at_fpr_0_1``."""
    v = t * 100
    return "tpr_at_fpr_" + (str(int(v)) if float(v).is_integer() else f"{v:g}".replace(".", "_"))


def unattacked_mask(attack: Sequence[Any], derivation: Sequence[Any] | None = None) -> np.ndarray:
    """True where a text is not attacked: ``attack`` is ``None`` or its ``str`` is ``"none"``
    (RAID's value), and ``derivation`` (veribench's derived-document tag) is ``None``.
    Shape (n,) bool. The rule is applied once per distinct value (a hash factorisation), not
    once per text; a missing value other than ``None`` (NaN) counts as attacked, as ``str``
    of it is not ``"none"``."""
    a = _per_value(attack, lambda x: x is None or str(x) == "none")
    if derivation is not None:
        a &= _per_value(derivation, lambda x: x is None)
    return a


def _per_value(values: Sequence[Any], rule: Any) -> np.ndarray:
    """``[rule(x) for x in values]`` as a bool array, evaluating ``rule`` once per distinct
    value (``pandas.factorize``) and once per missing entry (None, NaN: told apart by ``rule``)."""
    import pandas as pd  # statsmodels' dependency: a hash factorisation in C

    arr = np.asarray(values, dtype=object)
    codes, uniq = pd.factorize(arr, use_na_sentinel=True)
    out = np.array([bool(rule(u)) for u in uniq], dtype=bool)[np.maximum(codes, 0)] if len(uniq) else \
        np.zeros(arr.shape[0], dtype=bool)
    miss = np.flatnonzero(codes < 0)
    out[miss] = [bool(rule(x)) for x in arr[miss]]
    return out


def compute_grid(
    values: Mapping[str, Sequence[Any]],
    label: Sequence[int],
    detectors: Sequence[GridDetector],
    *,
    tags: Sequence[str],
    threshold_by: str | None = None,
    unattacked: Sequence[bool] | None = None,
    targets: Sequence[float] = RAID_TARGETS,
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
    tpr_intervals: bool = True,
) -> dict[str, Any]:
    """Every cell and roll-up of the grid over ``tags``, for every detector.

    Args:
        values: tag name -> value per row (str or None), or the column already coded
            (:class:`CodedTag`, e.g. once per board), for every tag in ``tags`` and for
            ``threshold_by``.
        label: per row 1 = AI (positive), 0 = human (negative), -1 = not in the grid
            (``ai-edited-human`` and ``mixed`` texts are reported on their own rows elsewhere).
        detectors: one :class:`GridDetector` per detector, scores aligned to the rows.
        tags: the grid tags, in row-key order (e.g. :data:`RAID_TAGS`).
        threshold_by: the tag whose groups get their own thresholds and human sides (RAID:
            ``"domain"``); ``None``: one threshold and one human side for all texts.
        unattacked: per row, True for human texts that may set thresholds (default all;
            see :func:`unattacked_mask`).
        targets: target false-positive rates in (0, 1) (default 5% and 1%).
        confidence: of every interval (0.95).
        n_boot, seed: resamples and ``numpy.random.default_rng`` seed of every TPR interval
            (the protocol's ``bootstrap_n`` and ``seed`` in a run).
        tpr_intervals: ``False`` skips the TPR bootstrap (most of the grid's cost): every
            TPR's ``ci95`` is then null with the reason :data:`NO_TPR_INTERVAL`, and
            ``info.tpr_ci.computed`` is false. AUROC, its DeLong interval and every point
            estimate are unchanged (a leaderboard's headline, or a benchmark of the points).

    Returns:
        ``{"rows": [...], "info": {...}}``: one row per (detector, cell with AI texts), keys
        exactly: each grid tag (its value or ``"all"``), ``detector``, ``n_human``, ``n_ai``,
        ``auroc``, ``auroc_ci95``, ``auroc_ci95_reason``, and per target ``tpr_at_fpr_<pct>`` =
        ``{tpr, threshold, achieved_fpr, ci95, ci95_reason, reason, threshold_fit}`` (see the module docstring);
        ``info`` holds the rules, every group's thresholds and the excluded counts.

    Raises:
        ValueError: unknown or repeated tags, a tag value equal to ``"all"``, a target
            outside (0, 1), arrays of different lengths, a ``threshold_by`` tag that no
            text carries, or more than :data:`MAX_CELLS` cells.
    """
    tags = list(tags)
    if not tags:
        raise ValueError("the grid needs at least one tag")
    if len(set(tags)) != len(tags):
        raise ValueError(f"grid tags repeat: {tags}")
    need = tags + ([threshold_by] if threshold_by and threshold_by not in tags else [])
    missing = [t for t in need if t not in values]
    if missing:
        raise ValueError(f"no values given for tag(s) {missing}")
    for t in targets:
        if not 0.0 < float(t) < 1.0:
            raise ValueError(f"target FPR must be in (0, 1), got {t!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if int(n_boot) < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot!r}")
    lab = np.asarray(label, dtype=np.int64)
    n = lab.shape[0]
    # Values coded once for every detector (or once per board, passed as CodedTag); threshold
    # groups over all rows (AI and human).
    enc = {t: values[t] if isinstance(values[t], CodedTag) else CodedTag(values[t]) for t in need}
    for t, c in enc.items():
        if c.codes.shape[0] != n:
            raise ValueError(f"tag {t!r} has {c.codes.shape[0]} values for {n} rows")
    unatt = np.ones(n, dtype=bool) if unattacked is None else np.asarray(unattacked, dtype=bool)
    if unatt.shape[0] != n:
        raise ValueError(f"unattacked has {unatt.shape[0]} values for {n} rows")
    alpha = 1.0 - confidence
    z = float(norm.isf(alpha / 2.0))
    if threshold_by:
        e = enc[threshold_by]
        keep = np.array([i != e.missing for i in range(len(e.names))], dtype=bool)
        g_names = [v for i, v in enumerate(e.names) if keep[i]]
        shift = np.cumsum(keep) - 1
        g_code = np.where(e.codes == e.missing, -1, shift[e.codes]) if len(e.names) else e.codes
    else:
        g_names, g_code = [ALL], np.zeros(n, dtype=np.int64)
    G = len(g_names)
    if threshold_by and G == 0:
        raise ValueError(f"no text has a value of the threshold tag {threshold_by!r}")
    rows: list[dict[str, Any]] = []
    info: dict[str, Any] = {
        "tags": tags, "threshold_by": threshold_by, "targets": [float(t) for t in targets],
        "confidence": confidence, "flag_rule": FLAG_RULE,
        "threshold_rule": "per threshold group, the exact quantile of its unattacked human scores "
                          "(smallest t with #{human > t}/n <= target)",
        "human_side": "human texts of the cell's threshold group, any attack (all human texts when the group "
                      "is rolled up)",
        "null_rules": "auroc and auroc_ci95 are null when n_human is 0; auroc_ci95 also when n_ai or n_human < 2 "
                      "or the DeLong variance is 0; a TPR's ci95 also when the bootstrap collapses; "
                      "each null says why (reason, auroc_ci95_reason, ci95_reason)",
        "threshold_fit": THRESHOLD_FIT,
        "threshold_fit_note": "each threshold is fitted on the unattacked human texts of this same evaluation "
                              "(no held-out calibration split): the TPR is an in-sample operating point",
        "tpr_ci": {"computed": bool(tpr_intervals), "method": TPR_CI_METHOD, "n_boot": int(n_boot), "seed": int(seed), "confidence": confidence,
                   "resampled": "the unattacked human texts of each threshold group in the cell (threshold refitted "
                                "per group in every resample) and the cell's AI texts"},
        "thresholds": {}, "excluded": {},
    }
    for det in detectors:
        s = np.asarray(det.score, dtype=np.float64)
        if s.shape[0] != n:
            raise ValueError(f"detector {det.name!r} has {s.shape[0]} scores for {n} rows")
        fin = np.isfinite(s)
        ai = fin & (lab == 1)
        hu = fin & (lab == 0)
        info["excluded"][det.name] = {"ai_without_score": int(((lab == 1) & ~fin).sum()),
                                      "human_without_score": int(((lab == 0) & ~fin).sum())}
        rows.extend(_detector_rows(det.name, s, ai, hu, enc, tags, threshold_by, g_code, g_names, G,
                                   unatt, targets, alpha, z, info, int(n_boot), int(seed), bool(tpr_intervals)))
    info["rows"] = len(rows)
    return {"rows": rows, "info": info}


class CodedTag:
    """One tag column coded once: ``names``, its distinct values as ``str`` (sorted; missing
    values, None or NaN, -> :data:`MISSING`), and ``codes``, an int64 array (n,) indexing
    ``names`` per row. Pass it to :func:`compute_grid` in place of the raw column to code a
    board's tags once for every submission (the rows are the same either way)."""

    def __init__(self, vals: Sequence[Any]):
        import pandas as pd  # statsmodels' dependency: a hash factorisation in C

        vals = np.asarray(vals, dtype=object)
        raw, uniq = pd.factorize(vals, use_na_sentinel=True)
        names = [str(u) for u in uniq]
        if len(set(names)) < len(names):  # e.g. 1 and "1": code the strings
            raw, uniq = pd.factorize(np.array([v if v is None else str(v) for v in vals], dtype=object),
                                     use_na_sentinel=True)
            names = [str(u) for u in uniq]
        has_missing = bool((raw < 0).any())
        if has_missing:
            names.append(MISSING)
            raw = np.where(raw < 0, len(names) - 1, raw)
        order = sorted(range(len(names)), key=lambda i: names[i])
        rank = np.empty(len(names), dtype=np.int64)
        rank[order] = np.arange(len(names))
        self.names = [names[i] for i in order]
        self.codes = rank[raw] if len(names) else np.asarray(raw, dtype=np.int64)
        self.missing = int(rank[len(names) - 1]) if has_missing else -1

    def subset(self, mask: np.ndarray) -> tuple[list[str], np.ndarray]:
        """(present values, compact codes) of the rows in ``mask``."""
        c = self.codes[mask]
        present = np.bincount(c, minlength=len(self.names)) > 0
        remap = np.cumsum(present) - 1
        return [self.names[i] for i in np.flatnonzero(present)], remap[c]


class _HumanSet:
    """Sorted distinct human scores of one human side: ``u`` (K,), counts ``w``, n."""

    def __init__(self, scores: np.ndarray):
        self.u, self.w = np.unique(scores, return_counts=True)
        self.n = int(scores.size)
        self.cw = np.concatenate([[0], np.cumsum(self.w)])

    def position(self, a: np.ndarray, parent: tuple[_HumanSet, np.ndarray] | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per AI score: (lo = number of distinct human values below it, tie with a human
        value, 2 n V10 = twice the number of human scores below it with ties counted half:
        an integer, so every sum over a cell is exact).

        ``parent``: (a human set whose distinct values include this one's, ``lo`` of the same
        AI scores in it): ``lo`` is then read from a table over the parent's values instead of
        searched (the same result: the values of this set below ``a`` are those below the
        parent's first value not below ``a``)."""
        K = self.u.size
        if parent is None:
            lo = np.searchsorted(self.u, a, side="left")
        else:
            pset, plo = parent
            lo = np.append(np.searchsorted(self.u, pset.u, side="left"), K)[plo]
        tie = np.zeros(a.shape, dtype=bool)
        inside = lo < K
        tie[inside] = self.u[lo[inside]] == a[inside]
        below2 = 2 * self.cw[lo] + (np.where(tie, self.w[np.minimum(lo, K - 1)], 0) if K else 0)
        return lo, tie, np.asarray(below2, dtype=np.float64)


def _rollups(t: np.ndarray, n_axes: int) -> list[np.ndarray]:
    """Sums of ``t`` over every subset of its first ``n_axes`` axes (kept as size-1 axes),
    indexed by the bit mask of the summed axes; each from a parent with one axis fewer."""
    out = [t]
    for mask in range(1, 1 << n_axes):
        i = mask.bit_length() - 1
        out.append(out[mask ^ (1 << i)].sum(axis=i, keepdims=True))
    return out


def _side(sa, fine, shape, hset, flagged, bad, gcol, G, parent=None):
    """Every cell of one human side, from its AI texts' scores ``sa`` and cells over the free
    tags ``fine`` (of ``shape``): per roll-up mask of the free tags, arrays over that mask's
    cells (shape: k_i, or 1 where rolled) of m, 2 n sum V10, 4 n^2 sum V10^2, 4 m^2 sum_j
    V01_j^2 (sv01), flagged and unjudgeable counts per target, and AI texts per group; and
    ``lo``, each AI text's position among the side's human scores (``parent``: see
    :meth:`_HumanSet.position`)."""
    F = len(shape)
    n_fine = int(np.prod(shape, dtype=np.int64)) if F else 1
    lo, tie, b2 = hset.position(sa, parent)
    add = {"m": np.bincount(fine, minlength=n_fine).astype(np.float64),
           "s1": np.bincount(fine, weights=b2, minlength=n_fine),
           "s2": np.bincount(fine, weights=b2 * b2, minlength=n_fine)}
    for ti in range(len(flagged)):
        add[f"tp{ti}"] = np.bincount(fine, weights=flagged[ti], minlength=n_fine)
        add[f"bad{ti}"] = np.bincount(fine, weights=bad[ti], minlength=n_fine)
    pres = np.bincount(fine * (G + 1) + gcol, minlength=n_fine * (G + 1)).reshape(shape + (G + 1,))
    out = {key: _rollups(v.reshape(shape), F) for key, v in add.items()}
    out["pres"] = _rollups(pres.astype(np.float64), F)
    # sv01: histogram of the AI positions among the human scores, in chunks of positions,
    # with the count below each chunk carried: C_j = 2 #{AI > h_j} + #{AI = h_j}.
    K = hset.u.size
    sv01 = [np.zeros(r.shape) for r in out["m"]]
    if K and sa.size:
        width = max(1, min(K, _CHUNK // max(n_fine, 1)))
        wf = hset.w.astype(np.float64)
        n_chunks = -(-K // width)
        # the AI texts grouped by chunk, so that each chunk is a slice (a radix sort of small
        # chunk numbers); an AI text above every human score (lo = K) is in no chunk
        if n_chunks == 1:
            inside = np.flatnonzero(lo < K)
            cuts = np.array([0, inside.size])
        else:
            chunk = np.where(lo < K, lo // width, n_chunks).astype(np.int16 if n_chunks < 1 << 15 else np.int64)
            inside = np.argsort(chunk, kind="stable")
            cuts = np.searchsorted(chunk[inside], np.arange(n_chunks + 1))
        lo_s, fine_s, tie_s = lo[inside], fine[inside], tie[inside]
        # per fine cell, 2 (m - AI texts below the chunk's first position)
        base = 2.0 * add["m"]
        for c, k0 in enumerate(range(0, K, width)):
            k1 = min(K, k0 + width)
            a, b = int(cuts[c]), int(cuts[c + 1])
            key = fine_s[a:b] * (k1 - k0) + (lo_s[a:b] - k0)
            # C_j = 2 #{AI > h_j} + #{AI = h_j} = 2 (m - below) - 2 #{AI at or below position j, from
            # k0} + #{AI tied with h_j}, per fine cell: integers below 2**53, so the cumulative sums
            # and the roll-ups are exact in float64, and C of a roll-up is the roll-up of C (linear)
            hist = np.bincount(key, minlength=n_fine * (k1 - k0)).astype(np.float64)
            cf = hist.reshape(n_fine, k1 - k0)
            np.cumsum(cf, axis=-1, out=cf)
            np.subtract(base[:, None], 2.0 * cf, out=cf)
            tk = key[tie_s[a:b]]
            if tk.size:
                hist += np.bincount(tk, minlength=n_fine * (k1 - k0))
            base -= 2.0 * np.bincount(fine_s[a:b], minlength=n_fine)
            for mask, cr in enumerate(_rollups(cf.reshape(shape + (k1 - k0,)), F)):
                np.square(cr, out=cr)
                sv01[mask] += cr @ wf[k0:k1]
    out["sv01"] = sv01
    out["lo"] = lo
    return out


def _cell_blocks(sa: np.ndarray, gcol: np.ndarray, codes: list[np.ndarray], k: list[int], strides: list[int],
                 wanted: np.ndarray):
    """Yield (cell id, AI row indices sorted by (group, score), their groups) for every cell
    id in ``wanted`` (sorted), one roll-up mask of the tags at a time (memory O(AI texts))."""
    order = np.lexsort((sa, gcol))
    T = len(codes)
    for mask in range(1 << T):
        cid = np.zeros(order.size, dtype=np.int64)
        for i in range(T):
            cid += (k[i] if mask >> i & 1 else codes[i][order]) * strides[i]
        o2 = np.argsort(cid, kind="stable")
        cs = cid[o2]
        bounds = np.flatnonzero(np.diff(cs)) + 1
        starts = np.r_[0, bounds] if cs.size else np.zeros(0, np.int64)
        ends = np.r_[bounds, cs.size] if cs.size else np.zeros(0, np.int64)
        ids = cs[starts]
        keep = np.isin(ids, wanted)
        for c, a, b in zip(ids[keep].tolist(), starts[keep].tolist(), ends[keep].tolist(), strict=True):
            rows = order[o2[a:b]]
            yield c, rows, gcol[rows]


def _grid_tpr_intervals(sa, gcol, codes, k, strides, want: list[np.ndarray], hs_g: list[np.ndarray], targets,
                        n_boot: int, seed: int, alpha: float) -> list[dict[int, tuple[Any, Any, str | None]]]:
    """Per target, {cell id: (lo, hi, reason)} (lo/hi ``None`` with the reason when the
    bootstrap collapsed) for the cells in ``want[ti]``: the tables' interval
    (:func:`veribench.metrics.threshold_bootstrap.tpr_at_fpr_interval_groups`: every group's
    threshold refitted on its unattacked human texts in every resample, the cell's AI texts
    resampled together)."""
    out: list[dict[int, tuple[Any, Any, str | None]]] = [{} for _ in targets]
    allw = np.unique(np.concatenate(want)) if want else np.zeros(0, np.int64)
    if not allw.size:
        return out
    wsets = [set(w.tolist()) for w in want]
    cache: dict[Any, Any] = {}  # replicate thresholds per (target, groups): drawn once, same result
    for c, rows, grp in _cell_blocks(sa, gcol, codes, k, strides, allw):
        cut = np.flatnonzero(np.diff(grp)) + 1
        parts = np.split(rows, cut)
        gs = grp[np.r_[0, cut]].tolist()
        ais = [sa[p] for p in parts]
        for ti, t in enumerate(targets):
            if c in wsets[ti]:
                r = tpr_at_fpr_interval_groups([hs_g[g] for g in gs], ais, t, n_boot=n_boot, seed=seed, alpha=alpha,
                                               presorted=True, cache=cache, cache_key=(ti, tuple(gs)))
                out[ti][c] = (r.lo, r.hi, r.interval_reason)
    return out


def _detector_rows(name, s, ai, hu, enc, tags, threshold_by, g_code, g_names, G, unatt, targets, alpha, z,
                   info, n_boot, seed, tpr_intervals=True) -> list[dict[str, Any]]:
    sa = s[ai]
    m_total = sa.size
    ga = g_code[ai]
    T = len(tags)
    vals: list[list[str]] = []
    codes: list[np.ndarray] = []
    for t in tags:
        v, c = enc[t].subset(ai)
        if ALL in v:
            raise ValueError(f"tag {t!r} has the value {ALL!r}, which is the roll-up name; rename it")
        vals.append(v)
        codes.append(c)
    k = [len(v) for v in vals]
    radix = [x + 1 for x in k]
    total = int(np.prod(radix, dtype=np.float64))
    if total > MAX_CELLS:
        raise ValueError(f"the grid over {tags} has {total} cells (more than {MAX_CELLS}); use fewer tags")
    strides = [int(np.prod(radix[i + 1:], dtype=np.int64)) for i in range(T)]
    tb_pos = tags.index(threshold_by) if threshold_by in tags else None

    # thresholds per group and target, on the group's unattacked human texts
    sh, gh = s[hu], g_code[hu]
    hu_u = unatt[hu]
    thr = np.full((len(targets), G), np.nan)
    fp = np.zeros((len(targets), G), dtype=np.int64)
    nh_u = np.zeros(G, dtype=np.int64)
    why: list[list[str | None]] = [[None] * G for _ in targets]
    hs_g: list[np.ndarray] = []
    for g in range(G):
        hs = np.sort(sh[(gh == g) & hu_u])
        hs_g.append(hs)
        nh_u[g] = hs.size
        where = f"{threshold_by}={g_names[g]}" if threshold_by else "all texts"
        for ti, t in enumerate(targets):
            if hs.size == 0:
                why[ti][g] = f"no unattacked human text with a score in {where}: no threshold"
                continue
            thr[ti, g], fp[ti, g] = threshold_at_fpr_sorted(hs, t)
            why[ti][g] = unreachable_reason(int(hs.size), int(fp[ti, g]), t, f"{where} (unattacked)")
    info["thresholds"][name] = {
        f"{t:g}": {g_names[g]: {"threshold": _fl(thr[ti, g]) if why[ti][g] is None else None,
                                "n_human_unattacked": int(nh_u[g]),
                                "false_positives": int(fp[ti, g]) if why[ti][g] is None else None,
                                "achieved_fpr": float(fp[ti, g] / nh_u[g]) if why[ti][g] is None else None,
                                "reason": why[ti][g]} for g in range(G)}
        for ti, t in enumerate(targets)}
    bad_g = np.array([[w is not None for w in why[ti]] for ti in range(len(targets))], dtype=bool).reshape(
        len(targets), G)
    ga_ok = ga >= 0
    gac = np.where(ga_ok, ga, 0)
    flagged, bad = [], []
    for ti in range(len(targets)):
        with np.errstate(invalid="ignore"):
            flagged.append((ga_ok & (sa > thr[ti, gac]) & ~bad_g[ti, gac]).astype(np.float64))
        bad.append((~ga_ok | bad_g[ti, gac]).astype(np.float64))
    gcol = np.where(ga_ok, ga, G)

    # the human sides: every human text; and, when the threshold tag is a grid tag, its groups.
    # The AI texts are taken once in the order of the threshold tag's values (a stable sort), so that
    # each group's side is a slice of the same arrays (every sum below is of integers: order-free)
    free = [i for i in range(T) if i != tb_pos]
    shape = tuple(k[i] for i in free)
    fine = np.zeros(m_total, dtype=np.int64)  # each AI text's cell over the free tags
    for i in free:
        fine *= k[i]
        fine += codes[i]
    per = [sa, fine, gcol, *flagged, *bad]
    h_all = _HumanSet(sh)
    sides = []  # (slice of the AI texts, human set, digit of the threshold tag or None)
    if tb_pos is None:
        sides.append((slice(0, m_total), h_all, None))
    else:
        tcode = codes[tb_pos]
        if not bool((tcode[1:] >= tcode[:-1]).all()):  # else already in that order (as a board by domain)
            by = np.argsort(tcode.astype(np.int16) if k[tb_pos] < 1 << 15 else tcode, kind="stable")
            per, tcode = [x[by] for x in per], tcode[by]
        cuts = np.searchsorted(tcode, np.arange(k[tb_pos] + 1)).tolist()
        sides.append((slice(0, m_total), h_all, k[tb_pos]))
        gi = {g: i for i, g in enumerate(g_names)}
        for d, v in enumerate(vals[tb_pos]):
            g = gi.get(v, -1)
            hset = _HumanSet(sh[gh == g]) if g >= 0 else _HumanSet(np.zeros(0))
            sides.append((slice(cuts[d], cuts[d + 1]), hset, d))
    nt = len(targets)
    cell_m = np.zeros(total)
    cell = {key: np.zeros(total) for key in ["s1", "s2", "sv01"] + [f"tp{i}" for i in range(nt)]
            + [f"bad{i}" for i in range(nt)]}
    cell_pres = np.zeros((total, G + 1))
    cell_nh = np.zeros(total, dtype=np.int64)
    lo_all = None  # each AI text's position among every human text: the groups' positions are read from it
    for sl, hset, tb_digit in sides:
        p_sa, p_fine, p_g, *p_rest = (x[sl] for x in per)
        st = _side(p_sa, p_fine, shape, hset, p_rest[:nt], p_rest[nt:], p_g, G,
                   None if lo_all is None else (h_all, lo_all[sl]))
        if lo_all is None:
            lo_all = st["lo"]
        for mask in range(1 << len(free)):
            gid = np.zeros([1] * len(free), dtype=np.int64) + (tb_digit * strides[tb_pos] if tb_pos is not None
                                                                else 0)
            for j, i in enumerate(free):
                digits = np.array([k[i]]) if mask >> j & 1 else np.arange(k[i])
                sh_ = [1] * len(free)
                sh_[j] = digits.size
                gid = gid + (digits * strides[i]).reshape(sh_)
            gid = gid.ravel()
            cell_m[gid] = st["m"][mask].ravel()
            for key in cell:
                cell[key][gid] = st[key][mask].ravel()
            cell_pres[gid] = st["pres"][mask].reshape(gid.size, G + 1)
            cell_nh[gid] = hset.n

    cells = np.flatnonzero(cell_m > 0)
    mm = cell_m[cells]
    nn = cell_nh[cells].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = cell["s1"][cells] / (2.0 * mm * nn)  # exact integer sum / (2 m n): correctly rounded
        s10 = (cell["s2"][cells] / (4.0 * nn * nn) - mm * auc * auc) / (mm - 1)
        s01 = (cell["sv01"][cells] / (4.0 * mm * mm) - nn * auc * auc) / (nn - 1)
        var = np.maximum(s10, 0.0) / mm + np.maximum(s01, 0.0) / nn
    half = z * np.sqrt(var)
    lo_ci = np.clip(auc - half, 0.0, 1.0).tolist()
    hi_ci = np.clip(auc + half, 0.0, 1.0).tolist()
    digits = (cells[:, None] // np.array(strides)[None, :]) % np.array(radix)[None, :]
    names = [np.array(v + [ALL], dtype=object)[digits[:, i]].tolist() for i, v in enumerate(vals)]
    pres = cell_pres[cells]
    in_group = pres[:, :G] > 0
    n_groups = in_group.sum(axis=1)
    tpr_parts = []
    defined = [cells[(nn > 0) & (cell[f"bad{ti}"][cells] == 0)] for ti in range(len(targets))]
    cis = (_grid_tpr_intervals(sa, gcol, codes, k, strides, defined, hs_g, targets, n_boot, seed, alpha)
           if tpr_intervals else [{} for _ in targets])
    for ti, _t in enumerate(targets):
        tp = cell[f"tp{ti}"][cells]
        rate = tp / mm
        den = in_group @ nh_u
        with np.errstate(divide="ignore", invalid="ignore"):
            ach = (in_group @ fp[ti]) / den
        tpr_parts.append((rate.tolist(), ach.tolist(), cell[f"bad{ti}"][cells]))
    aucl, mml, nnl = auc.tolist(), mm.astype(np.int64).tolist(), nn.astype(np.int64).tolist()
    # per-row values as Python lists, taken once (the loop below only reads them)
    g0l, ngl, no_g, cell_l = in_group.argmax(axis=1).tolist(), n_groups.tolist(), pres[:, G].tolist(), cells.tolist()
    keys = [target_key(t) for t in targets]
    thr_or_null = [[_fl(thr[ti, g]) if why[ti][g] is None else None for g in range(G)] for ti in range(len(targets))]
    badl = [(p[2] > 0).tolist() for p in tpr_parts]
    out = []
    for j in range(cells.size):
        row: dict[str, Any] = {t: names[i][j] for i, t in enumerate(tags)}
        n_ai, n_h = mml[j], nnl[j]
        row["detector"] = name
        row["n_human"] = n_h
        row["n_ai"] = n_ai
        a = _fl(aucl[j]) if n_h > 0 else None
        row["auroc"] = a
        if a is None:
            row["auroc_ci95"], row["auroc_ci95_reason"] = None, "no human texts on this cell's human side"
        elif n_ai < 2 or n_h < 2:
            row["auroc_ci95"], row["auroc_ci95_reason"] = None, "interval undefined: fewer than 2 texts on a side"
        else:
            row["auroc_ci95"], row["auroc_ci95_reason"] = checked(lo_ci[j], hi_ci[j], None, DELONG_ZERO)
        groups = np.flatnonzero(in_group[j]).tolist() if ngl[j] != 1 else None
        for ti in range(len(targets)):
            rate, ach, _ = tpr_parts[ti]
            if groups is None:  # a group whose target is unreachable has no threshold (null, its reason in `reason`)
                threshold: Any = thr_or_null[ti][g0l[j]]
            else:
                threshold = {g_names[g]: thr_or_null[ti][g] for g in groups}
            e = {"tpr": None, "threshold": threshold, "achieved_fpr": None, "ci95": None, "ci95_reason": None,
                 "reason": None, "threshold_fit": THRESHOLD_FIT}
            if n_h == 0:
                e["reason"] = "no human texts on this cell's human side"
            elif badl[ti][j]:
                gs = groups if groups is not None else [g0l[j]]
                reasons = [why[ti][g] for g in gs if why[ti][g]]
                if no_g[j] > 0:
                    reasons.append(f"{int(no_g[j])} AI texts have no {threshold_by} value: no threshold")
                e["reason"] = "; ".join(reasons)
            else:
                lo, hi, ci_why = cis[ti][cell_l[j]] if tpr_intervals else (None, None, NO_TPR_INTERVAL)
                e["tpr"], e["achieved_fpr"] = rate[j], _fl(ach[j])
                e["ci95"], e["ci95_reason"] = checked(lo, hi, ci_why, BOOTSTRAP_ONE_VALUE)
            if e["ci95"] is None and e["ci95_reason"] is None:
                e["ci95_reason"] = e["reason"]
            row[keys[ti]] = e
        out.append(row)
    return out


def _fl(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def raid_leaderboard(grid: dict[str, Any], detector: str, *, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """One detector's grid in the shape of RAID's leaderboard ``results.json``
    (``leaderboard/hydrate.py`` ``eval_submission``): ``scores`` records with ``domain``,
    ``model``, ``decoding``, ``repetition_penalty``, ``attack``, ``accuracy`` =
    ``{"0.05": {"tp", "fn", "accuracy"} | null, ...}`` and ``auroc``; ``thresholds`` and
    ``fpr`` per target and domain; ``score_agg`` (``all`` and ``no_adversarial``).

    RAID's hashes (``_submission_hash``, ``_results_hash``) need its private salt and are not
    written; ``_veribench`` holds what RAID's shape has no field for (intervals, reasons,
    the rules). Cells with no human texts are left out, as RAID skips them.

    Raises:
        ValueError: the grid's tags are not RAID's five, or the detector is not in it.
    """
    info = grid["info"]
    if sorted(info["tags"]) != sorted(RAID_TAGS):
        raise ValueError(f"RAID's leaderboard shape needs the grid over {list(RAID_TAGS)}, not {info['tags']}")
    if detector not in info["thresholds"]:
        raise ValueError(f"detector {detector!r} is not in the grid")
    keys = {f"{t:g}": target_key(t) for t in info["targets"]}
    scores, extra = [], []
    for r in grid["rows"]:
        if r["detector"] != detector or r["n_human"] == 0:
            continue
        acc: dict[str, Any] = {}
        for tk, rk in keys.items():
            e = r[rk]
            if e["tpr"] is None:
                acc[tk] = None
            else:
                tpc = int(round(e["tpr"] * r["n_ai"]))
                acc[tk] = {"tp": tpc, "fn": r["n_ai"] - tpc, "accuracy": e["tpr"]}
        scores.append({**{t: r[t] for t in RAID_TAGS}, "accuracy": acc, "auroc": r["auroc"]})
        extra.append({"auroc_ci95": r["auroc_ci95"], "auroc_ci95_reason": r["auroc_ci95_reason"],
                      **{tk: {k: r[rk][k] for k in ("ci95", "ci95_reason", "achieved_fpr", "reason")}
                                                         for tk, rk in keys.items()}})
    th = info["thresholds"][detector]

    def agg(pred) -> dict[str, Any]:
        hit = next((s for s in reversed(scores) if pred(s)), None)
        return hit if hit is not None else {"_note": "no such cell in the grid"}

    return {
        "_autogen_note": "Written by veribench (evaluate --grid), not by RAID's leaderboard script. Thresholds are the "
                         "exact quantile of each domain's unattacked human scores with the rule score > threshold "
                         "(RAID: stepped search, score >= threshold).",
        **(metadata or {"detector_name": detector}),
        "score_agg": {
            "all": agg(lambda s: all(s[t] == ALL for t in RAID_TAGS)),
            "no_adversarial": agg(lambda s: s["attack"] == "none" and all(s[t] == ALL for t in RAID_TAGS if t != "attack")),
        },
        "scores": scores,
        "thresholds": {tk: {g: v["threshold"] for g, v in th[tk].items()} for tk in keys},
        "fpr": {tk: {g: v["achieved_fpr"] for g, v in th[tk].items()} for tk in keys},
        "_veribench": {"rules": {k: info[k] for k in ("flag_rule", "threshold_rule", "human_side", "null_rules")},
                       "threshold_reasons": {tk: {g: v["reason"] for g, v in th[tk].items() if v["reason"]}
                                             for tk in keys},
                       "intervals": extra},
    }


#: Document columns a grid tag may name (any other name is read from ``tags``).
COLUMNS = ("subgroup", "arm", "kind", "corpus")


def tags_present(docs: Any) -> set[str]:
    """The grid tags ``docs`` (:class:`veribench.evaluate.arrays.DocArrays`) can offer: the
    keys of their ``tags`` with a value in some document, and the document columns of
    :data:`COLUMNS` that some document fills."""
    keys = {k for t in (docs.tags or []) if t for k, v in t.items() if v is not None}
    return keys | {c for c in COLUMNS if any(v is not None for v in docs.column(c))}


def grid_results(docs: Any, dets: Sequence[Any], proto: Any, tags: Sequence[str],
                 threshold_by: str | None = None) -> dict[str, Any]:
    """RAID's grid over a run's documents and detectors (``evaluate --grid``).

    Args:
        docs: the run's :class:`veribench.evaluate.arrays.DocArrays`.
        dets: its :class:`veribench.evaluate.arrays.DetArrays` (ranking score ``oriented``:
            the native score oriented once, higher = more AI).
        proto: the run's protocol: its calibration split is left out, like the tables.
        tags: grid tags; a name that is not a document column (``subgroup``, ``arm``,
            ``kind``, ``corpus``) is read as ``tag:<name>``.
        threshold_by: tag whose values get their own thresholds (default ``domain`` when it
            is a grid tag; ``"none"`` for one threshold).

    Unlike the headline tables, attacked texts are cells of the grid (``attack`` is one of
    RAID's axes); the label's role alone (human = 0, ai = 1, :mod:`veribench.protocol.roles`)
    decides the class, and thresholds come from unattacked human texts only.

    Returns:
        ``{"grid": rows, "grid_info": info}`` (see :func:`compute_grid`).

    Raises:
        ValueError: a tag (or ``threshold_by``) that no selected document carries, named
            with the closest one present (a misspelled tag would otherwise be a grid of
            "(missing)"); a bad tag list (from :func:`compute_grid`).
    """

    tb = threshold_by if threshold_by is not None else ("domain" if "domain" in tags else None)
    tb = None if tb in ("none", "") else tb
    present = tags_present(docs)
    for t in [*tags, *([tb] if tb and tb not in tags else [])]:
        if t.removeprefix("tag:") not in present:
            hint = did_you_mean(t, present)
            raise ValueError(f"no selected document carries the tag {t!r} (" + (f"{hint} " if hint else "")
                             + f"tags present: {', '.join(sorted(present)) or '(none)'})")

    def col(name: str) -> np.ndarray:
        return docs.column(name if name in COLUMNS or name.startswith("tag:") else f"tag:{name}")

    values = {t: col(t) for t in list(tags) + ([tb] if tb and tb not in tags else [])}
    code = roles.label_codes(docs.label)
    label = np.where(code == roles.POSITIVE_CODE, 1, np.where(code == roles.NEGATIVE_CODE, 0, -1))
    _, calib, _ = split_documents(docs, proto)
    label[calib] = -1
    g = compute_grid(values, label, [GridDetector(d.label, np.where(d.ok, d.oriented, np.nan)) for d in dets],
                     tags=list(tags), threshold_by=tb, unattacked=unattacked_mask(col("attack"), col("derivation")),
                     n_boot=proto.bootstrap_n, seed=proto.seed)
    g["info"]["split"] = "test split only" if proto.split_rule == "hash" else "all selected documents"
    return {"grid": g["rows"], "grid_info": g["info"]}
