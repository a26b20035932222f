"""Pure computation of a run's results from arrays (no I/O).

Inputs are column arrays over the selected documents (:class:`DocArrays`) and, per
detector, score arrays aligned to them (:class:`DetArrays`). The output is the run
results dict documented in ``docs/results-schema.md`` (rates, agreement, table1,
table2, side_rows, curves), with ``None`` plus a reason for every undefined value,
never NaN and never 0 in place of "undefined".

Conventions (stated once in ``docs/labels.md``; the data live in
:mod:`veribench.protocol.roles` and :mod:`veribench.metrics.thresholds`):

- **Roles.** A document counts in the headline rates (Table 1) when its label's role is
  positive (``ai``) or negative (``human``), its arm's role is ``headline`` and it is not
  derived. Side labels (``ai-edited-human``, ``mixed``) have their own columns; human or
  AI texts of side arms (C2 ...) and derived texts (attacks ...) have their own side rows.
- **Flags.** A text is flagged by the detector's decision rule (protocol ``rule``); a
  fitted rule flags ``oriented score > threshold`` (:data:`veribench.metrics.FLAG_RULE`)
  with the threshold fitted on the calibration split's headline texts only. A rule that
  cannot be applied (no rule, no split, a calibration split without both classes, a field
  the detector does not report) gives null rates with that reason.
- **Rates.** Catch rate = flagged AI / AI counted; false-positive rate = flagged human /
  human counted; balanced accuracy = (catch rate + 1 - FPR) / 2 (Brodersen et al. 2010);
  each with a Wilson interval (Wilson 1927, via statsmodels). Denominators are the texts
  the detector actually scored; excluded texts are counted per reason.
- **Ranking metrics** (AUROC, TPR at FPR, ROC) use the oriented native score
  (:mod:`veribench.evaluate.ranking`), human vs ai, for every detector and every slice,
  whether or not it has a decision rule. AUROC intervals: DeLong (Sun & Xu 2014) or a
  seeded bootstrap. TPR at a fixed FPR takes its threshold from the calibration split's
  human texts when there are any (the achieved FPR on test is reported), else from the
  evaluated human texts themselves, labelled an in-sample oracle operating point.
- Only test-split documents are evaluated, unless the protocol declares no split.

Where each part is computed: :mod:`veribench.evaluate.split` (roles and the split),
:mod:`veribench.evaluate.decision` (rules and flags), :mod:`veribench.evaluate.slices`
(Table 2 slices), :mod:`veribench.evaluate.blocks` (the metric block of each row),
:mod:`veribench.evaluate.agreement`, :mod:`veribench.evaluate.rows` (per-document rows);
this module assembles the detector rows, Table 1 (per group), Table 2, the side rows,
the rates, curves, robustness rows and comparisons.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from veribench import labels, registry
from veribench.evaluate import groups as mgroups
from veribench.evaluate.agreement import _agreement
from veribench.evaluate.arrays import LABEL_ORDER, DetArrays, DocArrays
from veribench.evaluate.blocks import _blocks, _Ctx, tpr_key
from veribench.evaluate.comparisons import DetectorInput, compute_comparisons, parse_comparisons
from veribench.evaluate.decision import Decision, decide, per_length_line
from veribench.evaluate.reasons import FROM_CALIBRATION, IN_SAMPLE, NO_COMPARISONS, PER_LENGTH
from veribench.evaluate.robustness import adjust_robustness, robustness_rows
from veribench.evaluate.rows import exclusion_reasons
from veribench.evaluate.slices import DERIVED_MEMBERS, DERIVED_SLICES, LENGTH_BANDS, _slice_codes, slice_kinds
from veribench.evaluate.split import split_documents
from veribench.metrics import grouped as mgrouped
from veribench.metrics import roc as mroc
from veribench.metrics import thresholds as mthr
from veribench.metrics.threshold_bootstrap import METHOD as TPR_CI_METHOD
from veribench.protocol import roles
from veribench.protocol.model import Protocol

HAZARD_KEYS = ("confusables", "invisible", "degenerate_repetition")


def _excluded(det: DetArrays, dec: Decision, pool: np.ndarray, scope: np.ndarray) -> dict[str, int]:
    """Reason -> count of texts in ``pool`` (evaluated, in scope) that no rate counts: each
    text under exactly one reason (:func:`veribench.evaluate.rows.exclusion_reasons`)."""
    why = exclusion_reasons(det, dec)[pool]
    vals, cnt = np.unique(why[why != None].astype(str), return_counts=True)  # noqa: E711 - elementwise
    return {str(v): int(c) for v, c in zip(vals, cnt)}


def _languages_block(det: DetArrays) -> dict[str, Any]:
    """``languages``: the detector's declared languages (sorted ISO 639-1 codes), or null with
    ``languages_reason`` :data:`veribench.registry.NOT_DECLARED`."""
    if det.languages is None:
        return {"languages": None, "languages_reason": registry.NOT_DECLARED}
    return {"languages": list(det.languages)}


def _hazards(det: DetArrays, pool: np.ndarray) -> tuple[dict[str, int] | None, str | None]:
    """Texts with each input hazard among the scored texts of ``pool`` (from ``detail["hazards"]``)."""
    h = det.hazards
    m = pool & det.ok
    if not h or not m.any():
        return None, "no hazard record on these scores"
    rec = m & np.isfinite(h.get("confusables", np.full(len(m), np.nan)))
    if not rec.any():
        return None, "no hazard record on these scores"
    out = {"checked": int(rec.sum())}
    for k in HAZARD_KEYS:
        v = h.get(k)
        out[k] = int((rec & np.isfinite(v) & (np.nan_to_num(v) > 0)).sum()) if v is not None else 0
    return out, None


def _operating_thresholds(ctx: _Ctx, calib: np.ndarray, headline: np.ndarray,
                          corpus: np.ndarray) -> tuple[dict[float, dict[str, Any]], int]:
    """TPR-at-FPR thresholds from the calibration split's headline human texts ({} when none),
    each with the corpus (or corpora) those texts come from (``threshold_corpus``: a row of
    another corpus borrows this threshold, and says so) and, where the target is unreachable
    on them, ``unreachable`` (:func:`veribench.metrics.thresholds.unreachable_reason`)."""
    hm = calib & headline & ctx.rank & (ctx.lab == roles.NEGATIVE_CODE)
    nh = int(hm.sum())
    if nh == 0:
        return {}, 0
    h = np.sort(ctx.det.oriented[hm])
    corpora = sorted({str(c) for c in np.asarray(corpus, dtype=object)[hm]})
    src = f"{FROM_CALIBRATION}: {nh} human texts of corpus {', '.join(corpora)}"
    out = {}
    for t in ctx.proto.tpr_at_fpr:
        thr, fp = mthr.threshold_at_fpr_sorted(h, t)
        out[t] = {"threshold": float(thr), "source": src, "n_human": nh, "calibration_fp": int(fp),
                  "threshold_corpus": corpora, "human": h,
                  "unreachable": mthr.unreachable_reason(nh, int(fp), t, f"the calibration split of corpus "
                                                                         f"{', '.join(corpora)}")}
    return out, nh


def _operating_warnings(label: str, rows: list[dict[str, Any]], targets: Any) -> list[str]:
    """One warning per distinct unreachable-target reason or threshold note of a detector's
    Table 1 rows (``tpr_at_fpr_*.reason`` / ``threshold_note``), naming the rows' groups."""
    seen: dict[str, list[str]] = {}
    for r in rows:
        for t in targets:
            b = r.get(tpr_key(t)) or {}
            for msg in (b.get("reason") if b.get("tpr") is None and "unreachable" in str(b.get("reason")) else None,
                        b.get("threshold_note")):
                if msg:
                    seen.setdefault(msg, []).append(str(r.get("group")))
    return [f"{label} ({', '.join(dict.fromkeys(groups))}): {msg}" for msg, groups in seen.items()]


def arm_rules_block(docs: DocArrays, proto: Protocol) -> dict[str, Any]:
    """The run's ``arm_rules`` block: the rules in force (:mod:`veribench.protocol.arm_rules`),
    the protocol's relaxations (``relaxed``, ``changed``, one-line ``statement`` or ``None``),
    and ``arm_a_undated`` of ``arm_a_texts`` (non-derived arm-A texts; undated: no date and no
    declared bound). ``arm_a_undated`` is ``None``, with ``arm_a_undated_reason``, when the
    documents' dates were not loaded."""
    arm = np.asarray(docs.arm, dtype=object)
    derived = np.array([s is not None for s in docs.source_id], dtype=bool) if docs.source_id is not None \
        else np.zeros(len(docs), dtype=bool)
    if docs.tags:
        derived |= np.array([bool(t) and roles.DERIVATION_TAG in t for t in docs.tags], dtype=bool)
    in_a = (arm == "A") & ~derived
    out: dict[str, Any] = {**proto.arm_rules.describe(), "statement": proto.arm_rules.statement(),
                           "arm_a_texts": int(in_a.sum())}
    if docs.undated is None:
        out.update(arm_a_undated=None, arm_a_undated_reason="the documents' dates were not loaded")
    else:
        out["arm_a_undated"] = int((docs.undated & in_a).sum())
    return out


def compute_results(docs: DocArrays, dets: list[DetArrays], proto: Protocol, *, run_meta: dict[str, Any] | None = None,
                    curve_points: int = 200, hist_bins: int = 30) -> dict[str, Any]:
    """Compute every table of a run.

    Args:
        docs: selected documents.
        dets: detector score arrays aligned to ``docs``.
        proto: the protocol (rules, split, metrics, slices, arm roles, comparisons, gaps).
        run_meta: the ``run`` block to embed (id, tag, protocol hash, dates).

    Returns:
        The results dict (``run``, ``detectors``, ``rates``, ``agreement``, ``table1_groups``,
        ``table1``, ``table2``, ``side_rows``, ``robustness``, ``comparisons``, ``gaps``,
        ``significance``, ``tiers``, ``corrections``, ``curves``, ``warnings``); see
        ``docs/results-schema.md``.
    """
    alpha = 1.0 - proto.confidence
    n = len(docs)
    warn_list: list[str] = []
    rl, calib, split_info = split_documents(docs, proto)
    lab = rl.code
    split_declared = proto.split_rule == "hash"
    test = ~calib
    kind_names, added_kinds = slice_kinds(docs, proto)
    kinds = _slice_codes(docs, kind_names)
    derived = np.array([s_ is not None and s_.startswith("derivation=") for s_ in rl.side], dtype=bool)
    side_names = rl.side_groups
    side_codes = np.full(n, -1, dtype=np.int64)
    for gi, name in enumerate(side_names):
        side_codes[rl.side == name] = gi
    det_rows, rates, table1, table2, side_rows, curves = [], [], [], [], [], {}
    counted_mat = np.zeros((len(dets), n), dtype=bool)
    flag_mat = np.zeros((len(dets), n), dtype=bool)
    has_rule = np.zeros(len(dets), dtype=bool)
    split_name = "test" if split_declared else "all"
    scopes = [np.ones(n, bool) if d.in_scope is None else np.asarray(d.in_scope, dtype=bool) for d in dets]
    bands = docs.length if proto.per_length else None
    decisions = [decide(d, scopes[j] & d.ok, calib, rl.headline, lab, split_declared, bands)
                 for j, d in enumerate(dets)]
    # Table 1 groups: detectors scored on the same texts (docs/labels.md §7).
    corpus = mgroups.corpus_labels(docs.corpus)
    main = test & rl.table
    groups = mgroups.table1_groups(corpus, main, main & rl.headline, scopes, [scopes[j] & d.present for j, d in enumerate(dets)],
                                   [scopes[j] & d.ok for j, d in enumerate(dets)], [d.corpora for d in dets],
                                   [dec.defined for dec in decisions])
    group_codes = np.full(n, -1, dtype=np.int64)
    for gi, g in enumerate(groups):
        group_codes[g.mask] = gi
    ctxs = []
    extra_blocks = 0
    for j, d in enumerate(dets):
        scope = scopes[j]
        scored = scope & d.ok
        rank = scored & np.isfinite(d.oriented)
        dec = decisions[j]
        has_rule[j] = dec.defined
        counted_mat[j], flag_mat[j] = dec.counted, dec.flagged
        ctx = _Ctx(d, dec, lab, scored, rank, alpha, proto, {}, warn_list)
        ctxs.append(ctx)
        fixed, n_cal_h = _operating_thresholds(ctx, calib, rl.headline, docs.corpus)
        if dec.reason:
            warn_list.append(f"{d.label}: rates are null: {dec.reason}")
        if rank.any() and np.unique(d.oriented[rank]).size == 1:
            warn_list.append(f"{d.label}: a single distinct score ({d.oriented[rank][0]:g}) over {int(rank.sum())} "
                             "texts; it cannot rank texts (AUROC 0.5 where defined)")
        rule = d.rule.to_dict() if d.rule is not None else {"field": None, "op": None, "threshold": None,
                                                              "ai_values": [], "fit": None, "target_fpr": None,
                                                              "source": None}
        rule.update({"threshold": dec.threshold, "source": dec.source, "describe": dec.describe,
                     "defined": dec.defined, "reason": dec.reason})
        if dec.per_length is not None:
            rule.update(per_length=dec.per_length, threshold_reason=PER_LENGTH)
        pool = test & scope & (lab != roles.UNKNOWN_CODE)
        excluded_all = _excluded(d, dec, pool, scope)
        operating = (f"{next(iter(fixed.values()))['source']} (the threshold of every row; FPR achieved on test)"
                     if fixed else IN_SAMPLE + " (threshold set on the texts it reports)")
        det_rows.append({"detector": d.label, "spec_hash": d.spec_hash, "name": d.spec.get("name"),
                         "version": d.spec.get("version"), "settings": d.spec.get("settings", {}),
                         "scan_date": d.scan_date, "rule": rule, "n_scored": int(d.present.sum()),
                         "n_ok": int(d.ok.sum()), "n_failed": int((d.present & ~d.ok).sum()),
                         "status_counts": d.status_counts, "excluded": excluded_all,
                         "n_text_differs": int((d.present & d.text_differs).sum()),
                         "ranking_score": d.ranking or {"field": "oriented", "note": "given by the caller"},
                         "operating_point": operating, "corpora": list(d.corpora), **_languages_block(d),
                         "groups": [g.id for g in groups if j in g.detectors]})
        base = {"detector": d.label, "version": d.spec.get("version"), "scan_date": d.scan_date}
        t1_only = _languages_block(d)
        elig_rank = test & rank & rl.headline
        elig_order = mgrouped.argsort_scores(d.oriented[elig_rank]) if elig_rank.any() else None
        head_thresholds: dict[float, dict[str, Any]] = dict(fixed)
        head_neg = test & scope & rl.headline & (lab == roles.NEGATIVE_CODE)
        member = test & scope & rl.table
        # Table 1: one row per group the detector belongs to, over that group's texts.
        gblocks = _blocks(ctx, group_codes, len(groups), member, f"{d.label} / table 1", [g.id for g in groups],
                          fixed_thresholds=fixed or None, base=elig_rank, base_order=elig_order)
        for gi, g in enumerate(groups):
            if j not in g.detectors:
                continue
            in_g = group_codes == gi
            hz, hz_why = _hazards(d, pool & rl.headline & in_g)
            ex = _excluded(d, dec, pool & rl.headline & in_g, scope)
            table1.append({**base, **gblocks[gi], **t1_only, "rule_defined": dec.defined, "operating_point": operating,
                           "excluded_n": sum(ex.values()), "excluded": ex, "hazards": hz, "hazards_reason": hz_why,
                           "group": g.id})
        # Warnings on the operating points: the Table 1 rows' own reasons and notes (the same
        # computed values as the rows show, never a second computation that could contradict them).
        for w in _operating_warnings(d.label, [r for r in table1 if r["detector"] == d.label], proto.tpr_at_fpr):
            if w not in warn_list:
                warn_list.append(w)
        for kind, values, codes in kinds:
            if kind in DERIVED_SLICES:
                blocks = _blocks(ctx, codes, len(values), test & scope & derived, f"{d.label} / {kind}", values,
                                 negatives=head_neg, fixed_thresholds=head_thresholds)
            else:
                blocks = _blocks(ctx, codes, len(values), member, f"{d.label} / {kind}", values,
                                 fixed_thresholds=fixed or None, base=elig_rank, base_order=elig_order)
            for i, value in enumerate(values):
                b = blocks[i]
                if kind == "all":
                    if not fixed:
                        head_thresholds = {t: {"threshold": b[tpr_key(t)]["threshold"],
                                               "source": "headline " + IN_SAMPLE,
                                               "n_human": b[tpr_key(t)]["n_human"],
                                               "human": np.sort(d.oriented[elig_rank & (lab == roles.NEGATIVE_CODE)]),
                                               # one rule: a target unreachable on the headline
                                               # human texts is null in every row that applies it
                                               "unreachable": mthr.unreachable_reason(
                                                   int(b[tpr_key(t)]["n_human"] or 0), int(b[tpr_key(t)]["fp"] or 0),
                                                   t, "the headline human texts")}
                                           for t in proto.tpr_at_fpr}
                elif b["human_n"] or b["ai_n"] or b["edited_n"] or b["mixed_n"] or b["ranked_n"]:
                    # A slice the detector scored nothing in gets no row (e.g. a detector
                    # restricted to one corpus); its absence is the information.
                    row = {**base, "slice_type": kind, "slice": value, **b}
                    if kind in DERIVED_SLICES:
                        row["members"] = DERIVED_MEMBERS
                    table2.append(row)
                if kind in ("all", "subgroup"):
                    for li, labname in enumerate(LABEL_ORDER):
                        key = {roles.NEGATIVE_CODE: "fpr", roles.POSITIVE_CODE: "catch_rate"}.get(li)
                        side = roles.SIDE_COLUMN.get(labname)
                        nn = b["human_n"] if li == roles.NEGATIVE_CODE else b["ai_n"] if li == roles.POSITIVE_CODE \
                            else b[f"{side}_n"]
                        if not nn:
                            continue
                        rk = key or f"{side}_rate"
                        flagged = (b["false_positives"] if li == roles.NEGATIVE_CODE else b["detections"]
                                   if li == roles.POSITIVE_CODE else b[f"{side}_flagged"])
                        rates.append({"detector": d.label, "subgroup": value, "label": labname,
                                      "role": labels.LABEL_ROLES[labname], "n": nn, "flagged": flagged,
                                      "rate": b[rk], "ci95": b[f"{rk}_ci95"], "reason": b[f"{rk}_reason"],
                                      "split": split_name})
        if proto.out_of_scope == "slice" and d.out_of_scope is not None and (test & d.out_of_scope).any():
            row, nb = _out_of_scope_row(d, dec, scope, calib, rl.headline, lab, split_declared, bands, alpha, proto,
                                        warn_list, test & scope & rl.table, fixed)
            table2.append({**base, **row})
            extra_blocks += nb
        if proto.out_of_scope == "slice" and d.scope_reason is not None:
            _unscored_out_of_scope(d, dec, test & scope & rl.table, table2, warn_list)
        # Side rows: arms with the side role and derived texts, one row per group.
        if side_names:
            blocks = _blocks(ctx, side_codes, len(side_names), test & scope & (side_codes >= 0), f"{d.label} / side",
                             side_names, negatives=head_neg, fixed_thresholds=head_thresholds)
            for i, name in enumerate(side_names):
                b = blocks[i]
                if b["human_n"] or b["ai_n"] or b["edited_n"] or b["mixed_n"] or b["ranked_n"]:
                    gtype, _, gval = name.partition("=")
                    side_rows.append({**base, "group": name, "group_type": gtype, "group_value": gval, **b})
        curves[d.label] = _curves(d, elig_rank, test & rank & rl.table, lab, curve_points, hist_bins)

    names = [d.label for d in dets]
    agreement = []
    for g in groups:
        agreement += _agreement([k for k in kinds if k[0] not in DERIVED_SLICES], main & g.mask, lab, counted_mat,
                                flag_mat, np.array([j in g.panel for j in range(len(dets))], dtype=bool), names,
                                group=g.id)
    robustness = robustness_rows(
        docs.doc_id, lab, docs.tags, docs.source_id, docs.variant, docs.arm, test,
        [{"name": d.label, "scope": scopes[j], "scored": scopes[j] & d.ok, "counted": decisions[j].counted,
          "flagged": decisions[j].flagged, "defined": decisions[j].defined, "reason": decisions[j].reason}
         for j, d in enumerate(dets)], alpha)
    stats = _comparisons(docs, dets, decisions, ctxs, rl, test, groups, kinds, proto)
    # Robustness rows join the run's correction: one more stated family (issue 25).
    rb_cfg = parse_comparisons(proto.comparisons)
    stats["corrections"].setdefault("families", []).append(adjust_robustness(robustness, rb_cfg.correction))
    stats["corrections"].setdefault("alpha", rb_cfg.alpha)
    n_boot_blocks = sum(c.n_blocks for c in ctxs) + extra_blocks
    per_length = {"per_length_thresholds": per_length_block(dets, decisions)} if proto.per_length else {}
    return {
        "run": {**(run_meta or {}), **per_length, "split": split_info, "interval_method": "wilson", "confidence": proto.confidence,
                "auroc_ci_method": proto.auroc_ci, "n_documents": int(n), "roles": roles.describe(),
                "arms": dict(proto.arms), "arm_rules": arm_rules_block(docs, proto), "flag_rule": mthr.FLAG_RULE,
                "slices": {"kinds": kind_names, "added": added_kinds,
                           "note": (f"{', '.join(added_kinds)} added: the selection holds derived texts; their Table 2 "
                                    "rows count the derived texts only" if added_kinds else None)},
                "tpr_ci": {"method": TPR_CI_METHOD, "n_boot": proto.bootstrap_n, "seed": proto.seed,
                           "confidence": proto.confidence, "blocks": n_boot_blocks}},
        "detectors": det_rows,
        "rates": rates,
        "agreement": agreement,
        "table1_groups": [g.to_dict(names) for g in groups],
        "table1": table1,
        "table2": table2,
        "side_rows": side_rows,
        "robustness": robustness,
        **stats,
        "curves": curves,
        "warnings": warn_list,
    }


#: The Table 2 slice (``[evaluation] out_of_scope = "slice"``) of the texts outside a
#: detector's declared languages: ``slice_type`` and ``slice``.
OUT_OF_SCOPE_SLICE = ("language_scope", "outside the declared languages")


def _out_of_scope_row(d: DetArrays, dec: Decision, scope: np.ndarray, calib: np.ndarray, headline: np.ndarray,
                      lab: np.ndarray, split_declared: bool, bands: np.ndarray | None, alpha: float, proto: Protocol,
                      warn: list[str], member: np.ndarray,
                      fixed: dict[float, dict[str, Any]]) -> tuple[dict[str, Any], int]:
    """The Table 2 row of ``d``'s texts outside its declared languages (scored ok, excluded from
    every other row), judged by the same rule with the same thresholds: the rule is applied
    again with those texts counted and the calibration split without them, so a fitted
    threshold is fitted on exactly the texts of the headline decision ``dec``; TPR at FPR uses
    the headline's calibration thresholds when there are any. Returns (row, bootstrap blocks)."""
    outside = np.asarray(d.out_of_scope, dtype=bool) & scope
    dec2 = decide(d, (scope & d.ok) | outside, calib & ~outside, headline, lab, split_declared, bands)
    assert dec2.threshold == dec.threshold  # the same rule, fitted on the same calibration texts
    rank = outside & np.isfinite(d.oriented)
    ctx = _Ctx(d, dec2, lab, outside, rank, alpha, proto, {}, warn)
    codes = np.where(outside, 0, -1).astype(np.int64)
    b = _blocks(ctx, codes, 1, member & outside, f"{d.label} / {OUT_OF_SCOPE_SLICE[1]}", [OUT_OF_SCOPE_SLICE[1]],
                fixed_thresholds=fixed or None)[0]
    return {"slice_type": OUT_OF_SCOPE_SLICE[0], "slice": OUT_OF_SCOPE_SLICE[1], **b}, ctx.n_blocks


def _unscored_out_of_scope(d: DetArrays, dec: Decision, member: np.ndarray, table2: list[dict[str, Any]],
                           warn: list[str]) -> None:
    """Count, with their scoring status, ``d``'s texts outside its declared languages that have
    no valid score (``member``: the Table 2 texts): the out-of-scope slice holds only those
    scored ok, so the others are named in its row's ``excluded`` (reason -> count, as Table
    1's; ``{}`` when none) and in a warning every output prints, and the slice plus them add
    up to Table 1's out-of-scope exclusions. Without a slice row (no text scored ok) only the
    warning says it."""
    outside = member & (d.scope_reason != None)  # noqa: E711 - elementwise
    valid = outside & np.asarray(d.out_of_scope, dtype=bool)
    counts = _excluded(d, dec, outside & ~valid, member)
    row = next((r for r in table2 if r["detector"] == d.label and r["slice_type"] == OUT_OF_SCOPE_SLICE[0]), None)
    if row is not None:
        row["excluded"] = counts
    if counts:
        warn.append(f"{d.label}: the '{OUT_OF_SCOPE_SLICE[1]}' slice holds its {int(valid.sum())} out-of-scope "
                    f"texts with a valid score; {sum(counts.values())} more have none, counted with their scoring "
                    "status: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


def per_length_block(dets: list[DetArrays], decisions: list[Decision]) -> dict[str, Any]:
    """``run.per_length_thresholds`` when the protocol declares ``[thresholds] per_length``:
    ``bins`` (the :data:`veribench.evaluate.slices.LENGTH_BANDS` names, in order) and ``lines``,
    one per detector, that every output prints: the bins and each fitted threshold
    (:func:`veribench.evaluate.decision.per_length_line`), or why the detector has none."""
    lines = []
    for d, dec in zip(dets, decisions):
        line = per_length_line(d.label, dec)
        if line is None:
            line = (f"{d.label}: per-length thresholds not fitted: {dec.reason}" if not dec.defined and
                    d.rule is not None and d.rule.fit else f"{d.label}: one threshold for every length "
                    f"(its rule is not fitted): {dec.describe}")
        lines.append(line)
    return {"bins": [name for _, name in LENGTH_BANDS], "lines": lines}


def _curves(d: DetArrays, elig_rank: np.ndarray, sel: np.ndarray, lab: np.ndarray, curve_points: int,
            hist_bins: int) -> dict[str, Any]:
    """ROC (headline human vs ai) and score histograms per label, test split."""
    cur: dict[str, Any] = {}
    hm, am = elig_rank & (lab == roles.NEGATIVE_CODE), elig_rank & (lab == roles.POSITIVE_CODE)
    if hm.any() and am.any():
        ys = np.concatenate([np.zeros(hm.sum(), np.int8), np.ones(am.sum(), np.int8)])
        ss = np.concatenate([d.oriented[hm], d.oriented[am]])
        rc = mroc.roc_curve_points(ys, ss, max_points=curve_points)
        cur["roc"] = {"fpr": [float(x) for x in rc.fpr], "tpr": [float(x) for x in rc.tpr]}
    if sel.any():
        vals = d.oriented[sel]
        edges = mroc.histogram_edges(vals, hist_bins)  # any finite scale (a submitted file's 5e-324 or 1e308)
        rk = d.ranking or {}
        is_p = rk.get("field") == "ai_probability" or (rk.get("field") == "raw" and rk.get("scales") == ["p_ai"]) \
            or (not rk and np.isfinite(d.p[sel]).all() and np.array_equal(d.p[sel], vals))
        cur["hist"] = {"edges": [float(x) for x in edges], "score": "ai_probability" if is_p else
                       "oriented native score" + (f" ({', '.join(rk['scales'])})" if rk.get("scales") else "")}
        for li, labname in enumerate(LABEL_ORDER):
            lm = sel & (lab == li)
            if lm.any():
                cur["hist"][labname] = [int(x) for x in np.histogram(d.oriented[lm], bins=edges)[0]]
    return cur


def _comparisons(docs: DocArrays, dets: list[DetArrays], decisions: list[Decision], ctxs: list[_Ctx],
                 rl: roles.DocumentRoles, test: np.ndarray, groups: list[Any],
                 kinds: list[tuple[str, list[str], np.ndarray]], proto: Protocol) -> dict[str, Any]:
    """Issue 14's keys from the protocol's ``[comparisons]`` and ``[[gaps]]``
    (:func:`veribench.evaluate.comparisons.compute_comparisons`).

    Headline test texts only (y from the role table; -1 elsewhere). Scores: the ranking
    score of the texts each detector scored ok; flags: its decision rule's, on the texts
    the rule judged. Slices: ``all`` and each Table 2 slice value (not the derived slices),
    within each Table 1 group, comparing the group's detectors; with several groups each
    slice name starts with the group id (``corpus:liang2023 · subgroup=TOEFL_real_91``).
    """
    cfg, gaps = proto.comparisons, list(proto.gaps)
    if (cfg is None and not gaps) or (cfg is not None and not cfg.enabled):
        why = NO_COMPARISONS if cfg is None else "[comparisons] enabled = false"
        return {"comparisons": [], "gaps": [], "significance": [], "tiers": [],
                "corrections": {"enabled": False, "reason": why}}
    y = np.where(test, rl.y, -1).astype(np.int64)
    inputs = [DetectorInput(d.label, np.where(c.rank, d.oriented, np.nan), dec.flagged & dec.counted,
                            score_valid=c.rank, flag_valid=dec.counted if dec.defined else np.zeros(len(docs), bool),
                            rule_reason=None if dec.defined else dec.reason)
              for d, dec, c in zip(dets, decisions, ctxs)]
    names = [d.label for d in dets]
    slices: dict[str, np.ndarray] = {}
    members: dict[str, list[str]] = {}
    for g in groups:
        prefix = f"{g.id} · " if len(groups) > 1 else ""
        for kind, values, codes in kinds:
            if kind in DERIVED_SLICES:
                continue
            for i, value in enumerate(values):
                m = g.mask & (codes == i)
                if not (m & (y >= 0)).any():
                    continue
                key = prefix + ("all" if kind == "all" else f"{kind}={value}")
                slices[key] = m
                members[key] = [names[j] for j in g.detectors]
    columns = {kind: docs.column(kind) for kind, _, _ in kinds if kind != "all" and kind not in DERIVED_SLICES}
    conf = cfg if cfg is not None else {"enabled": True}
    if cfg is None:  # gaps declared, no pairwise comparisons planned
        out = compute_comparisons(y, inputs, {}, conf, gaps=gaps, columns=columns, confidence=proto.confidence)
        out["corrections"]["note"] = "no [comparisons] declared: gap rows only, Holm's correction over the gap family"
        return out
    return compute_comparisons(y, inputs, slices, conf, gaps=gaps, columns=columns, confidence=proto.confidence,
                               slice_detectors=members)
