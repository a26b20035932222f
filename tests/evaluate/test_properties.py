"""Property-based suite (hypothesis) over random corpora, detectors and protocols.

Every table of ``compute_results`` is checked against an independent computation written
here in plain Python, one document at a time (with scikit-learn only for AUROC):

- Table 1, Table 2, the side rows and the agreement table equal the plain computation;
- no calibration group has members on both sides;
- no undefined rate is printed as a number (terminal, Markdown, CSV, JSON);
- relabelling ``ai-edited-human`` texts (or the labels of side-arm and derived texts)
  never changes a headline rate.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score
from statsmodels.stats.proportion import proportion_confint

from veribench.evaluate.arrays import DetArrays, DocArrays
from veribench.evaluate.results import compute_results
from veribench.evaluate.tables import cell, markdown, print_tables, write_csv
from veribench.protocol.model import DecisionRule, Protocol
from veribench.protocol.split import calibration_mask

LABELS = ["human", "ai", "ai-edited-human", "mixed"]
ARMS = ["A", "B", "C", "C2", "X", None]
RULES = ["p>0.5", "raw>=0.3", "fit_bba", "fit_fpr", "verdict", None]
TARGETS = (0.05, 0.2)
SLICES = ("subgroup", "arm", "tag:writer")
CORPORA = ("c1", "c2")
N_BOOT = 100


# --------------------------------------------------------------------------- strategies
@st.composite
def scenario(draw):
    n = draw(st.integers(min_value=4, max_value=40))
    docs = []
    for i in range(n):
        label = draw(st.sampled_from(LABELS))
        tags = {}
        if draw(st.booleans()):
            tags["writer"] = draw(st.sampled_from(["native", "non-native"]))
        doc = {"doc_id": f"d{i:03d}", "label": label, "arm": draw(st.sampled_from(ARMS)),
               "subgroup": draw(st.sampled_from(["s1", "s2", "s3", None])),
               "group_key": draw(st.sampled_from(["g1", "g2", "g3", "g4", "g5", None])), "tags": tags,
               "corpus": draw(st.sampled_from(CORPORA)), "source_id": None, "variant": None}
        sources = [x for x in docs if not x["tags"].get("derivation")]
        if sources and draw(st.integers(0, 3)) == 0:
            # a derived text: an attack of an earlier document (its label, arm, corpus and
            # usually its group key), or of a source outside the selection
            src = draw(st.sampled_from(sources))
            attack = draw(st.sampled_from(["homoglyph", "paraphrase"]))
            tags["derivation"] = "attack"
            tags["attack"] = attack
            doc.update(label=src["label"], arm=src["arm"], corpus=src["corpus"],
                       group_key=src["group_key"] if draw(st.booleans()) else None,
                       source_id=src["doc_id"] if draw(st.integers(0, 5)) else "not-selected",
                       variant=json.dumps({"name": attack, "seed": draw(st.integers(0, 1))}, sort_keys=True))
        docs.append(doc)
    split = draw(st.sampled_from(["none", "hash"]))
    every = draw(st.integers(2, 3))
    declared = draw(st.sampled_from([{}, {"C2": "side"}, {"X": "headline"}, {"A": "side"}]))
    n_det = draw(st.integers(1, 3))
    dets = []
    for j in range(n_det):
        kind = draw(st.sampled_from(["p", "raw"]))
        rule = draw(st.sampled_from(RULES))
        if split == "none" and rule in ("fit_bba", "fit_fpr"):
            rule = None
        rows = []
        for _ in range(n):
            present = draw(st.integers(0, 9)) > 0
            ok = present and draw(st.integers(0, 9)) > 0
            v = draw(st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.6, 0.9, 1.0]))  # ties on purpose
            verdict = draw(st.sampled_from(["AI", "Human", None]))
            rows.append({"present": present, "ok": ok, "v": v, "verdict": verdict})
        named = draw(st.sampled_from([(), (), ("c1",), ("c2",), ("c1", "c2")]))
        if named:  # the protocol's `corpora`: the scope is those corpora
            scope = [x["corpus"] in named for x in docs]
        else:
            scope_all = draw(st.booleans())
            scope = [True] * n if scope_all else [draw(st.booleans()) for _ in range(n)]
        dets.append({"label": f"det{j}", "kind": kind, "rule": rule, "rows": rows, "scope": scope, "named": named})
    return {"docs": docs, "split": split, "every": every, "declared": declared, "dets": dets}


# --------------------------------------------------------------------------- building inputs
def build(sc):
    d = sc["docs"]
    n = len(d)
    docs = DocArrays(
        doc_id=np.array([x["doc_id"] for x in d], dtype=object), label=np.array([x["label"] for x in d], dtype=object),
        subgroup=np.array([x["subgroup"] for x in d], dtype=object), arm=np.array([x["arm"] for x in d], dtype=object),
        kind=np.full(n, "essay", dtype=object), corpus=np.array([x["corpus"] for x in d], dtype=object),
        group_key=np.array([x["group_key"] for x in d], dtype=object), tags=[dict(x["tags"]) for x in d],
        source_id=np.array([x["source_id"] for x in d], dtype=object),
        variant=np.array([x["variant"] for x in d], dtype=object))
    dets = []
    for s in sc["dets"]:
        rows = s["rows"]
        present = np.array([r["present"] for r in rows])
        ok = np.array([r["ok"] for r in rows])
        v = np.array([r["v"] for r in rows], dtype=float)
        if s["kind"] == "p":
            p = np.where(ok, v, np.nan)
            raw = p.copy()
        else:
            p = np.full(n, np.nan)
            raw = np.where(ok, v * 10 - 4, np.nan)  # a statistic on its own scale
        verdict = np.array([r["verdict"].lower() if r["verdict"] and r["ok"] else None for r in rows], dtype=object)
        rule = {"p>0.5": DecisionRule(), "raw>=0.3": DecisionRule(field="raw", op=">=", threshold=0.3),
                "fit_bba": DecisionRule(field="oriented", threshold=None, fit="best_balanced_accuracy"),
                "fit_fpr": DecisionRule(field="oriented", threshold=None, fit="target_fpr", target_fpr=0.2),
                "verdict": DecisionRule(field="verdict", op="in", threshold=None, ai_values=("ai",)),
                None: None}[s["rule"]]
        scope = np.array(s["scope"])
        status = np.array(["ok" if r["ok"] else ("too_short" if r["present"] else None) for r in rows], dtype=object)
        dets.append(DetArrays(label=s["label"], spec={"name": s["label"], "version": "1"}, spec_hash=s["label"],
                              rule=rule, present=present & scope, ok=ok & scope, p=p, raw=raw,
                              oriented=raw.copy(), verdict=verdict, text_differs=np.zeros(n, bool),
                              status=status, in_scope=scope, corpora=tuple(s["named"])))
    proto = Protocol(name="prop", tag="P", hash=None, path=None, raw={}, detectors=[], split_rule=sc["split"],
                     split_every=sc["every"], split_salt="s", tpr_at_fpr=TARGETS, slices=SLICES,
                     arms=dict(sc["declared"]), bootstrap_n=N_BOOT, seed=3)
    return docs, dets, proto


# --------------------------------------------------------------------------- the plain reference
def ref_calibration(sc):
    out = []
    for x in sc["docs"]:
        if sc["split"] != "hash":
            out.append(False)
            continue
        src = next((y for y in sc["docs"] if y["doc_id"] == x["source_id"]), None)
        g = x["group_key"] if x["group_key"] is not None else (
            (src["group_key"] or src["doc_id"]) if src else (x["source_id"] or x["doc_id"]))
        h = int(hashlib.sha256(b"s\x00" + g.encode()).hexdigest()[:16], 16)
        out.append(h % sc["every"] == 0)
    return out


def ref_place(x, declared):
    """'headline', 'side-label' (main tables, side columns) or the side-row group name."""
    if x["tags"].get("derivation"):
        return f"derivation=attack:{x['tags']['attack']}"
    if x["label"] in ("ai-edited-human", "mixed"):
        return "side-label"
    arm = x["arm"]
    role = "headline" if arm is None else declared.get(arm, "headline" if arm in ("A", "B", "C") else "side")
    return "headline" if role == "headline" else f"arm={arm}"


def ref_quantile(human_scores, t):
    h = sorted(human_scores)
    n = len(h)
    f = max(0, min(int(math.floor(t * n + 1e-9)), n - 1))
    return h[n - 1 - f]


def ref_reachable(human_scores, t):
    """The exact-quantile threshold, or None when it flags no human text (the target is
    unreachable: no threshold gives an FPR in (0, t]; issue 25's one rule with the grid)."""
    thr = ref_quantile(human_scores, t)
    return thr if any(v > thr for v in human_scores) else None


def ref_bba(pairs):
    """Best balanced accuracy threshold, the largest among ties, by brute force over data scores."""
    pos = [s for s, y in pairs if y == 1]
    neg = [s for s, y in pairs if y == 0]
    best, best_t = -1.0, None
    for t in sorted({s for s, _ in pairs}):
        ba = (sum(s > t for s in pos) / len(pos) + 1 - sum(s > t for s in neg) / len(neg)) / 2
        if ba >= best - 1e-12:
            best, best_t = max(ba, best), t
    return best_t


def ref_detector(sc, j, calib):
    """Per document: (counted, flagged, score or None); and the rule's (defined, threshold)."""
    s = sc["dets"][j]
    n = len(sc["docs"])
    score, counted, flagged = [], [], []
    for i in range(n):
        r = s["rows"][i]
        ok = r["ok"] and s["scope"][i]
        val = None
        if ok:
            val = r["v"] if s["kind"] == "p" else r["v"] * 10 - 4
        score.append(val)
    rule = s["rule"]
    defined, thr = True, None
    if rule is None:
        defined = False
    elif rule == "p>0.5" and s["kind"] != "p" and any(v is not None for v in score):
        defined = False
    elif rule == "verdict" and not any(score[i] is not None and s["rows"][i]["verdict"] for i in range(n)) \
            and any(v is not None for v in score):
        defined = False
    elif rule in ("fit_bba", "fit_fpr"):
        pairs = [(score[i], 1 if sc["docs"][i]["label"] == "ai" else 0) for i in range(n)
                 if calib[i] and score[i] is not None and ref_place(sc["docs"][i], sc["declared"]) == "headline"]
        nh = sum(1 for _, y in pairs if y == 0)
        na = sum(1 for _, y in pairs if y == 1)
        if nh == 0 or (rule == "fit_bba" and na == 0):
            defined = False
        else:
            thr = ref_bba(pairs) if rule == "fit_bba" else ref_quantile([v for v, y in pairs if y == 0], 0.2)
    for i in range(n):
        v = score[i]
        r = s["rows"][i]
        if not defined or v is None:
            c = False
        elif rule == "verdict":
            c = r["verdict"] is not None
        else:
            c = True
        counted.append(c)
        if not c:
            flagged.append(False)
        elif rule == "p>0.5":
            flagged.append(v > 0.5)
        elif rule == "raw>=0.3":
            flagged.append(v >= 0.3)
        elif rule == "verdict":
            flagged.append(r["verdict"] == "AI")
        else:
            flagged.append(v > thr)
    return counted, flagged, score, defined


def ref_block(sc, j, members, calib, ref, op_thresholds, negatives=None):
    """Rates and ranking metrics of detector j over the documents ``members``."""
    counted, flagged, score, defined = ref
    docs = sc["docs"]
    out = {}
    for lab, nk, kk in (("human", "human_n", "false_positives"), ("ai", "ai_n", "detections"),
                        ("ai-edited-human", "edited_n", "edited_flagged"), ("mixed", "mixed_n", "mixed_flagged")):
        if defined:
            m = [i for i in members if docs[i]["label"] == lab and counted[i]]
            out[nk], out[kk] = len(m), sum(flagged[i] for i in m)
        else:
            out[nk] = len([i for i in members if docs[i]["label"] == lab and score[i] is not None])
            out[kk] = None
    out["fpr"] = out["false_positives"] / out["human_n"] if defined and out["human_n"] else None
    out["catch_rate"] = out["detections"] / out["ai_n"] if defined and out["ai_n"] else None
    pos = [score[i] for i in members if docs[i]["label"] == "ai" and score[i] is not None]
    neg = [score[i] for i in members if docs[i]["label"] == "human" and score[i] is not None]
    if negatives is not None and not neg:
        neg = negatives
    out["auroc"] = roc_auc_score([1] * len(pos) + [0] * len(neg), pos + neg) if pos and neg else None
    for t in TARGETS:
        if op_thresholds is not None:
            thr = op_thresholds.get(t)
            out[f"tpr{t}"] = (sum(v > thr for v in pos) / len(pos)) if pos and thr is not None else None
        elif pos and neg:
            thr = ref_reachable(neg, t)
            out[f"tpr{t}"] = sum(v > thr for v in pos) / len(pos) if thr is not None else None
        else:
            out[f"tpr{t}"] = None
    return out


def ref_groups(sc, main, refs):
    """Table 1 groups by the rule of docs/labels.md §7, one corpus at a time: decided on the
    corpus's headline texts (on its main-table texts when it has none)."""
    docs, dets = sc["docs"], sc["dets"]
    corpora = sorted({docs[i]["corpus"] for i in main})
    if not corpora:
        return [{"id": "all", "corpora": [], "dets": list(range(len(dets)))}]
    head = [i for i in main if docs[i]["label"] in ("human", "ai")]
    head_c = {docs[i]["corpus"] for i in head}
    in_c = {c: [i for i in (head if c in head_c else main) if docs[i]["corpus"] == c] for c in corpora}
    present = [[dets[j]["rows"][i]["present"] and dets[j]["scope"][i] for i in range(len(docs))]
               for j in range(len(dets))]
    ok = [[refs[j][2][i] is not None for i in range(len(docs))] for j in range(len(dets))]
    members = {c: [j for j in range(len(dets)) if any(present[j][i] for i in in_c[c])] for c in corpora}
    heads = [c for c in corpora if c in head_c]
    for j in range(len(dets)):
        if heads and not any(j in members[c] for c in heads):
            home = [c for c in heads if any(dets[j]["scope"][i] for i in in_c[c])] or heads
            for c in home:
                members[c] = sorted(members[c] + [j])
    for c in corpora:
        if c not in head_c and not members[c]:
            members[c] = [j for j in range(len(dets)) if any(dets[j]["scope"][i] for i in in_c[c])] \
                or list(range(len(dets)))
    classes = {}
    for c in corpora:
        classes.setdefault((c in head_c, tuple(members[c])), []).append(c)
    parts = []
    for (has_head, js), cs in classes.items():
        union = [i for c in cs for i in in_c[c]]
        if has_head and len(cs) > 1 and len({tuple(sorted(i for i in union if ok[j][i])) for j in js}) == 1:
            parts.append(cs)
        else:
            parts += [[c] for c in cs]
    return [{"id": "corpus:" + "+".join(cs), "corpora": cs, "dets": members[cs[0]]} for cs in sorted(parts)]


def ref_newcombe_paired(a, b, c, d):
    """Newcombe (1998) method 10 from its formulas, with statsmodels' Wilson limits."""
    n = a + b + c + d
    pa, pb = (a + b) / n, (a + c) / n
    la, ua = proportion_confint(a + b, n, method="wilson")
    lb, ub = proportion_confint(a + c, n, method="wilson")
    la, ua = (0.0 if a + b == 0 else la), (1.0 if a + b == n else ua)
    lb, ub = (0.0 if a + c == 0 else lb), (1.0 if a + c == n else ub)
    m = (a + b) * (c + d) * (a + c) * (b + d)
    big = a * d - b * c
    corr = big - n / 2 if big > n / 2 else (0.0 if big >= 0 else big)
    phi = 0.0 if m == 0 else corr / math.sqrt(m)
    theta = (b - c) / n
    lo = theta - math.sqrt(max((pa - la) ** 2 - 2 * phi * (pa - la) * (ub - pb) + (ub - pb) ** 2, 0))
    hi = theta + math.sqrt(max((pb - lb) ** 2 - 2 * phi * (pb - lb) * (ua - pa) + (ua - pa) ** 2, 0))
    return theta, max(-1.0, lo), min(1.0, hi)


def ref_robustness(sc, refs, test):
    """Per detector, attack variant and label: the (attacked, source) pairs both judged."""
    from statsmodels.stats.contingency_tables import mcnemar

    docs = sc["docs"]
    index = {x["doc_id"]: i for i, x in enumerate(docs)}
    variants = sorted({("attack", x["tags"]["attack"], x["variant"]) for x in docs if x["tags"].get("derivation")
                       and x["label"] in ("human", "ai")})
    out = {}
    for j, s in enumerate(sc["dets"]):
        counted, flagged, score, defined = refs[j]
        judged = counted if defined else [v is not None for v in score]
        for how, name, var in variants:
            for lab, metric in (("ai", "catch_rate"), ("human", "fpr")):
                der = [i for i, x in enumerate(docs) if x["tags"].get("derivation") == how
                       and x["tags"].get("attack") == name and x["variant"] == var and x["label"] == lab
                       and s["scope"][i]]
                if not der:
                    continue
                pairs = [(i, index[docs[i]["source_id"]]) for i in der if docs[i]["source_id"] in index]
                pairs = [(i, k) for i, k in pairs if test[i] and test[k] and s["scope"][k] and judged[i] and judged[k]]
                fa = [flagged[i] for i, _ in pairs]
                fs = [flagged[k] for _, k in pairs]
                row = {"n_derived": len(der), "n_pairs": len(pairs)}
                if not defined or not pairs:
                    row.update(ka=None, ks=None, estimate=None, ci=None, p=None)
                else:
                    both = sum(x and y for x, y in zip(fa, fs))
                    a_only = sum(x and not y for x, y in zip(fa, fs))
                    b_only = sum(y and not x for x, y in zip(fa, fs))
                    theta, lo, hi = ref_newcombe_paired(both, a_only, b_only, len(pairs) - both - a_only - b_only)
                    p = None if a_only + b_only == 0 else mcnemar([[0, a_only], [b_only, 0]], exact=True).pvalue
                    row.update(ka=sum(fa), ks=sum(fs), estimate=theta, ci=[lo, hi], p=p)
                out[(s["label"], name, json.loads(var)["seed"], metric)] = row
    return out


def reference(sc):
    docs = sc["docs"]
    n = len(docs)
    calib = ref_calibration(sc)
    place = [ref_place(x, sc["declared"]) for x in docs]
    test = [not c for c in calib]
    t1, t2, side, refs, ops, t1_sets = {}, {}, {}, [], [], {}
    for j in range(len(sc["dets"])):
        refs.append(ref_detector(sc, j, calib))
    main = [i for i in range(n) if test[i] and place[i] in ("headline", "side-label")]
    groups = ref_groups(sc, main, refs)
    for j, s in enumerate(sc["dets"]):
        ref = refs[j]
        score = ref[2]
        cal_h = [score[i] for i in range(n) if calib[i] and place[i] == "headline" and docs[i]["label"] == "human"
                 and score[i] is not None]
        op = {t: ref_reachable(cal_h, t) for t in TARGETS} if cal_h else None
        table = [i for i in range(n) if test[i] and s["scope"][i] and place[i] in ("headline", "side-label")]
        for g in groups:
            if j not in g["dets"]:
                continue
            mem = [i for i in table if not g["corpora"] or docs[i]["corpus"] in g["corpora"]]
            b = ref_block(sc, j, mem, calib, ref, op)
            b["source"] = "calibration split" if op else "in-sample oracle operating point"
            t1[(s["label"], g["id"])] = b
            hum = [score[i] for i in mem if docs[i]["label"] == "human" and score[i] is not None]
            t1_sets[(s["label"], g["id"])] = (cal_h if op else hum,
                                              [score[i] for i in mem if docs[i]["label"] == "ai" and score[i] is not None])
        head_op = op
        if head_op is None:
            hh = [score[i] for i in table if docs[i]["label"] == "human" and score[i] is not None]
            aa = [score[i] for i in table if docs[i]["label"] == "ai" and score[i] is not None]
            head_op = {t: ref_reachable(hh, t) for t in TARGETS} if hh and aa else {}
        ops.append(head_op)
        for kind in SLICES:
            vals = set()
            for i in table:
                v = docs[i]["tags"].get("writer") if kind == "tag:writer" else docs[i][kind]
                if v is not None:
                    vals.add(v)
            for v in vals:
                mem = [i for i in table
                       if (docs[i]["tags"].get("writer") if kind == "tag:writer" else docs[i][kind]) == v]
                rb = ref_block(sc, j, mem, calib, ref, op)
                ranked = sum(1 for i in mem if docs[i]["label"] in ("human", "ai") and score[i] is not None)
                if rb["human_n"] or rb["ai_n"] or rb["edited_n"] or rb["mixed_n"] or ranked:
                    t2[(s["label"], kind, str(v))] = rb
        head_neg = [score[i] for i in range(n) if test[i] and s["scope"][i] and place[i] == "headline"
                    and docs[i]["label"] == "human" and score[i] is not None]
        derived = [i for i in range(n) if test[i] and s["scope"][i] and place[i].startswith("derivation=")]
        for v in sorted({docs[i]["tags"]["attack"] for i in derived}):
            # the attack as a Table 2 slice: derived texts only, as their side rows are
            mem = [i for i in derived if docs[i]["tags"]["attack"] == v]
            rb = ref_block(sc, j, mem, calib, ref, head_op, negatives=head_neg)
            ranked = sum(1 for i in mem if docs[i]["label"] in ("human", "ai") and score[i] is not None)
            if rb["human_n"] or rb["ai_n"] or rb["edited_n"] or rb["mixed_n"] or ranked:
                t2[(s["label"], "tag:attack", v)] = rb
        for g in sorted({p for p in place if p not in ("headline", "side-label")}):
            mem = [i for i in range(n) if test[i] and s["scope"][i] and place[i] == g]
            rb = ref_block(sc, j, mem, calib, ref, head_op, negatives=head_neg)
            ranked = sum(1 for i in mem if docs[i]["label"] in ("human", "ai") and score[i] is not None)
            if rb["human_n"] or rb["ai_n"] or rb["edited_n"] or rb["mixed_n"] or ranked:
                side[(s["label"], g)] = rb
    # Agreement: per group, slice and label, over texts every participating detector of the
    # group's panel counted (the detectors named for its corpora, else all of the group's).
    agree = {}
    with_rule = [j for j in range(len(sc["dets"])) if refs[j][3]]
    for g in groups:
        named = [j for j in g["dets"] if set(sc["dets"][j]["named"]) & set(g["corpora"])]
        panel = [j for j in (named or g["dets"]) if j in with_rule]
        table_g = [i for i in main if not g["corpora"] or docs[i]["corpus"] in g["corpora"]]
        for kind in ("all",) + SLICES:
            rows = {}
            for i in table_g:
                v = "all" if kind == "all" else (docs[i]["tags"].get("writer") if kind == "tag:writer" else docs[i][kind])
                if v is not None:
                    rows.setdefault((str(v), docs[i]["label"]), []).append(i)
            for (v, lab), mem in rows.items():
                part = [j for j in panel if any(refs[j][0][i] for i in mem)]
                if not part:
                    continue
                both = [i for i in mem if all(refs[j][0][i] for j in part)]
                agree[(g["id"], kind, v, lab)] = {
                    "n": len(both), "n_detectors": len(part),
                    "flagged_by_any": sum(any(refs[j][1][i] for j in part) for i in both),
                    "flagged_by_all": sum(all(refs[j][1][i] for j in part) for i in both)}
    robust = ref_robustness(sc, refs, test)
    return {"t1": t1, "t2": t2, "side": side, "agree": agree, "calib": calib, "groups": groups, "robust": robust,
            "t1_sets": t1_sets}


# --------------------------------------------------------------------------- the properties
def _close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) < 1e-9


FIELDS = ("human_n", "false_positives", "ai_n", "detections", "edited_n", "edited_flagged", "mixed_n",
          "mixed_flagged")


def _check_block(got, want, where):
    for k in FIELDS:
        assert got[k] == want[k], (where, k, got[k], want[k])
    for k in ("fpr", "catch_rate", "auroc"):
        assert _close(got[k], want[k]), (where, k, got[k], want[k])
    for t in TARGETS:
        key = f"tpr_at_fpr_{int(t * 100)}"
        assert _close(got[key]["tpr"], want[f"tpr{t}"]), (where, key, got[key], want[f"tpr{t}"])
    if got["fpr"] is not None:
        lo, hi = proportion_confint(got["false_positives"], got["human_n"], method="wilson")
        assert got["fpr_ci95"][0] == pytest.approx(0.0 if got["false_positives"] == 0 else lo, abs=1e-12)
        assert got["fpr_ci95"][1] == pytest.approx(1.0 if got["false_positives"] == got["human_n"] else hi, abs=1e-12)
    else:
        assert got["fpr_reason"], where
    if got["catch_rate"] is None:
        assert got["catch_rate_reason"], where
    if got["auroc"] is None:
        assert got["auroc_reason"], where


SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(scenario())
def test_tables_equal_a_plain_computation(sc):
    from veribench.metrics.threshold_bootstrap import tpr_at_fpr_interval_scores

    docs, dets, proto = build(sc)
    res = compute_results(docs, dets, proto)
    ref = reference(sc)
    t1, t2, side, agree, calib = ref["t1"], ref["t2"], ref["side"], ref["agree"], ref["calib"]
    assert [g["id"] for g in res["table1_groups"]] == [g["id"] for g in ref["groups"]]
    for g, rg in zip(res["table1_groups"], ref["groups"]):
        assert g["detectors"] == [sc["dets"][j]["label"] for j in rg["dets"]] and g["corpora"] == rg["corpora"]
    got1 = {(r["detector"], r["group"]): r for r in res["table1"]}
    assert len(got1) == len(res["table1"]) and set(got1) == set(t1)
    for k, r in got1.items():
        _check_block(r, t1[k], ("table1", k))
        for t in TARGETS:
            blk = r[f"tpr_at_fpr_{int(t * 100)}"]
            if blk["tpr"] is not None:
                assert blk["threshold_source"].startswith(t1[k]["source"])
                hum, ai = ref["t1_sets"][k]
                want = tpr_at_fpr_interval_scores(hum, ai, t, n_boot=N_BOOT, seed=3)
                assert want.tpr == pytest.approx(blk["tpr"]), k
                if want.lo is None:  # a collapsed bootstrap: null with its reason, never a point as an interval
                    assert blk["ci95"] is None and blk["ci95_reason"] == want.interval_reason, k
                else:
                    assert blk["ci95"] == pytest.approx([want.lo, want.hi]), k
                    assert blk["ci95"][0] <= blk["tpr"] <= blk["ci95"][1] and blk["ci95"][0] < blk["ci95"][1]
            else:
                assert blk["ci95"] is None and blk["ci95_reason"]
    got2 = {(r["detector"], r["slice_type"], r["slice"]): r for r in res["table2"]}
    assert set(got2) == set(t2)
    for k, r in got2.items():
        _check_block(r, t2[k], ("table2", k))
    got_side = {(r["detector"], r["group"]): r for r in res["side_rows"]}
    assert set(got_side) == set(side)
    for k, r in got_side.items():
        _check_block(r, side[k], ("side", k))
    got_a = {(a["group"], a["slice_type"], a["subgroup"], a["label"]): a for a in res["agreement"]}
    assert set(got_a) == set(agree)
    for k, a in got_a.items():
        for f in ("n", "n_detectors", "flagged_by_any", "flagged_by_all"):
            assert a[f] == agree[k][f], (k, f, a, agree[k])
    got_r = {(r["detector"], r["attack"], r["variant"]["seed"], r["metric"]): r for r in res["robustness"]}
    assert set(got_r) == set(ref["robust"])
    for k, r in got_r.items():
        w = ref["robust"][k]
        assert (r["n_derived"], r["n_pairs"], r["attacked"]["k"], r["source"]["k"]) == \
            (w["n_derived"], w["n_pairs"], w["ka"], w["ks"]), (k, r, w)
        d = r["difference"]
        if w["estimate"] is None:
            assert d["estimate"] is None and d["ci95"] is None and d["reason"]
            assert r["attacked"]["rate"] is None and r["attacked"]["reason"]
        else:
            assert d["estimate"] == pytest.approx(w["estimate"], abs=1e-12)
            assert d["ci95"] == pytest.approx(w["ci"], abs=1e-9)
            assert _close(d["p_value"], w["p"]) and (d["p_value"] is not None or d["reason"])
            for side_, kk in (("attacked", "ka"), ("source", "ks")):
                lo, hi = proportion_confint(w[kk], w["n_pairs"], method="wilson")
                assert r[side_]["rate"] == pytest.approx(w[kk] / w["n_pairs"])
                assert r[side_]["ci95"][0] == pytest.approx(0.0 if w[kk] == 0 else lo, abs=1e-12)
                assert r[side_]["ci95"][1] == pytest.approx(1.0 if w[kk] == w["n_pairs"] else hi, abs=1e-12)
            assert d["estimate"] == pytest.approx(r["attacked"]["rate"] - r["source"]["rate"], abs=1e-12)
    assert res["run"]["split"]["calibration_n"] == sum(calib)
    json.dumps(res, allow_nan=False)


@SETTINGS
@given(scenario())
def test_no_undefined_rate_is_printed_as_a_number(tmp_path_factory, sc):
    from rich.console import Console

    docs, dets, proto = build(sc)
    res = compute_results(docs, dets, proto)
    md = markdown(res)
    con = Console(record=True, width=2000)
    print_tables(res, con)
    term = con.export_text()
    out = tmp_path_factory.mktemp("csv")
    for name in ("table1", "table2", "side_rows"):
        rows = res[name]
        write_csv(rows, out / f"{name}.csv")
        back = list(csv.DictReader(io.StringIO((out / f"{name}.csv").read_text())))
        assert len(back) == len(rows)
        for r, b in zip(rows, back):
            for key in ("fpr", "catch_rate", "balanced_accuracy", "auroc", "edited_rate", "mixed_rate"):
                if r[key] is None:
                    assert r[f"{key}_reason"], (name, key)
                    assert b[key] == "" and b[f"{key}_reason"] == r[f"{key}_reason"]  # CSV: empty + reason
                    text = cell(r, key)
                    assert text.startswith("—"), text  # never a number
                    if key in ("fpr", "catch_rate", "auroc") and name == "table1":
                        assert text.replace("|", "\\|") in md and text in term
                else:
                    assert b[key] != ""
            for t in TARGETS:
                blk = r[f"tpr_at_fpr_{int(t * 100)}"]
                if blk["tpr"] is None:
                    assert blk["reason"] and cell(r, f"tpr_at_fpr_{int(t * 100)}").startswith("—")
            if r["false_positives"] is None:
                assert b["false_positives"] == "" and cell(r, "false_positives").startswith("—")
    # robustness rows: an undefined rate or difference is a dash with its reason, an empty CSV cell
    write_csv(res["robustness"], out / "robustness.csv")
    back = list(csv.DictReader(io.StringIO((out / "robustness.csv").read_text()))) if res["robustness"] else []
    for r, b in zip(res["robustness"], back):
        for side, key in (("attacked", "rb_attacked"), ("source", "rb_source")):
            if r[side]["rate"] is None:
                assert r[side]["reason"] and cell(r, key) == f"— ({r[side]['reason']})"
                assert b[f"{side}_rate"] == "" and b[f"{side}_reason"] == r[side]["reason"]
            else:
                assert cell(r, key).startswith(f"{r[side]['k']}/{r[side]['n']} ")
        d = r["difference"]
        if d["estimate"] is None:
            assert d["reason"] and cell(r, "rb_difference").startswith("—") and b["difference_estimate"] == ""
        if res["robustness"]:
            assert cell(r, "rb_difference").replace("|", "\\|") in md and "Robustness" in term
    for g in res["table1_groups"]:
        assert g["title"] in md and g["note"] in md


def ref_headline_corpora(sc):
    """The corpora holding a headline text of the test split: their Table 1s are decided on
    headline texts only (docs/labels.md §7), so relabelling side texts must leave them whole."""
    calib = ref_calibration(sc)
    return {x["corpus"] for x, c in zip(sc["docs"], calib) if not c and ref_place(x, sc["declared"]) == "headline"}


def found_side_only_corpus():
    """The example hypothesis found on CI (a rare draw). Arm A is declared side, so no text is
    headline: corpus c2's main tables hold one ai-edited-human text that no detector covers
    (its table: every detector), beside five attacked human texts (side rows); c1's
    human texts are side-arm rows. Relabelling the side texts ``mixed`` brings c1's texts and
    c2's d000 into the main tables' Mixed columns: c1 gets a table (det0, whose scope is c1)
    and c2's table is decided on d000 too (det1 only). det0's row of c2's table vanishes; it
    never held a headline text."""
    n = 19
    derived, c2 = {1, 2, 7, 10, 15}, {0, 1, 2, 7, 10, 14, 15}
    docs = []
    for i in range(n):
        doc = {"doc_id": f"d{i:03d}", "label": "ai-edited-human" if i == 14 else "human", "arm": "A",
               "subgroup": "s1", "group_key": "g1", "tags": {}, "corpus": "c2" if i in c2 else "c1",
               "source_id": None, "variant": None}
        if i in derived:
            doc.update(group_key=None, tags={"derivation": "attack", "attack": "homoglyph"}, source_id="not-selected",
                       variant=json.dumps({"name": "homoglyph", "seed": 0}, sort_keys=True))
        docs.append(doc)
    dets = [{"label": f"det{j}", "kind": "p", "rule": "p>0.5",
             "rows": [{"present": False, "ok": False, "v": 0.0, "verdict": "AI"} for _ in range(n)],
             "scope": scope, "named": named}
            for j, (scope, named) in enumerate([([x["corpus"] == "c1" for x in docs], ("c1",)),
                                                ([i == 0 for i in range(n)], ())])]
    return {"docs": docs, "split": "none", "every": 2, "declared": {"A": "side"}, "dets": dets}


@SETTINGS
@given(scenario(), st.sampled_from(["human", "ai", "mixed", "ai-edited-human"]))
@example(found_side_only_corpus(), "mixed")
def test_relabelling_side_texts_never_changes_a_headline_rate(sc, side_as):
    docs, dets, proto = build(sc)
    res = compute_results(docs, dets, proto)
    # Relabel every ai-edited-human text to another side label; and every text of a
    # side arm or derived (not headline) to any label: headline rates stay the same.
    sc2 = json.loads(json.dumps(sc))
    for x in sc2["docs"]:
        place = ref_place(x, sc["declared"])
        if x["label"] == "ai-edited-human":
            x["label"] = "mixed"
        elif place not in ("headline", "side-label"):
            x["label"] = side_as
    docs2, dets2, proto2 = build(sc2)
    res2 = compute_results(docs2, dets2, proto2)
    keys = ("human_n", "false_positives", "fpr", "fpr_ci95", "ai_n", "detections", "catch_rate", "catch_rate_ci95",
            "balanced_accuracy", "auroc", "auroc_ci95", "tpr_at_fpr_5", "tpr_at_fpr_20")
    heads = ref_headline_corpora(sc)
    assert ref_headline_corpora(sc2) == heads  # no side text becomes headline
    # A table holding headline texts is decided on them alone (docs/labels.md §7): it keeps its
    # corpora, detectors and agreement panel, and every row its headline numbers. A table with
    # no headline text (the "all" table of a run without main-table texts, or a corpus whose
    # main-table texts are all side labels) is decided on side texts: a side-arm text
    # relabelled to a side label joins the main tables' side columns, so it may add such a table
    # (the "all" table giving way to its corpus's), or change its detectors (a detector's row
    # there may appear or vanish); its headline rates are null before and after.
    facts = ("id", "corpora", "detectors", "same_texts", "agreement_detectors")

    def split(r):
        held = {g["id"] for g in r["table1_groups"] if set(g["corpora"]) & heads}
        tables = [{k: g[k] for k in facts} for g in r["table1_groups"] if g["id"] in held]
        rows = {(x["detector"], x["group"]): x for x in r["table1"] if x["group"] in held}
        for x in r["table1"]:
            if x["group"] not in held:
                assert (x["human_n"], x["ai_n"], x["fpr"], x["catch_rate"]) == (0, 0, None, None), x["group"]
                assert x["fpr_reason"] and x["catch_rate_reason"]
        return tables, rows

    tables, rows = split(res)
    tables2, rows2 = split(res2)
    assert tables == tables2
    assert set(rows) == set(rows2)
    for k, a in rows.items():
        assert {f: a[f] for f in keys} == {f: rows2[k][f] for f in keys}, k


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["g1", "g2", "g3", "g4", "g5", "g6", None]), st.booleans()),
                min_size=1, max_size=60),
       st.integers(2, 6), st.text(min_size=1, max_size=8))
def test_no_calibration_group_has_members_on_both_sides(items, every, salt):
    ids = [f"d{i}" for i in range(len(items))]
    groups = [g for g, _ in items]
    is_human = np.array([h for _, h in items])
    m = calibration_mask(ids, is_human, groups, every=every, salt=salt)
    sides: dict[str, set[bool]] = {}
    for g, c in zip(groups, m):
        if g is not None:
            sides.setdefault(g, set()).add(bool(c))
    assert all(len(v) == 1 for v in sides.values())
    # a document without a group key is its own group: its id decides
    solo = [i for i, g in enumerate(groups) if g is None]
    m_solo = calibration_mask([ids[i] for i in solo], is_human[solo], [None] * len(solo), every=every, salt=salt)
    assert np.array_equal(m[solo], m_solo)


EXTREMES = [0.0, -0.0, 5e-324, -5e-324, 1e-300, 1e308, -1e308, 1.7976931348623157e308, -1.7976931348623157e308, 0.5]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario(), st.lists(st.sampled_from(EXTREMES), min_size=40, max_size=40))
def test_any_finite_scores_give_tables_never_an_error(sc, extreme):
    """Class of the leaderboard's crash (a submitted file with scores 0 and 5e-324, or -1e308
    and 1e308, stopped evaluation in the histogram: "Too many bins for data range", an
    infinite bin width): any finite native scores give every table, and the JSON is finite."""
    docs, dets, proto = build(sc)
    for d in dets:
        if d.p is not None and np.isfinite(d.p).any():  # probabilities stay in [0, 1]
            v = np.array([min(abs(x), 1.0) for x in extreme[: len(d.p)]])
            d.p[:] = np.where(np.isfinite(d.p), v, np.nan)
            d.raw[:] = d.p
        else:
            v = np.array(extreme[: len(d.raw)])
            d.raw[:] = np.where(np.isfinite(d.raw), v, np.nan)
        d.oriented[:] = d.raw
    res = compute_results(docs, dets, proto)
    json.dumps(res, allow_nan=False)
    for c in res.get("curves", {}).values():
        h = (c or {}).get("hist")
        if h:
            assert all(math.isfinite(x) for x in h["edges"]) and h["edges"] == sorted(set(h["edges"]))
