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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score
from statsmodels.stats.proportion import proportion_confint

from veribench.evaluate.core import DetArrays, DocArrays, compute_results
from veribench.evaluate.tables import cell, markdown, print_tables, write_csv
from veribench.protocol.model import DecisionRule, Protocol
from veribench.protocol.split import calibration_mask

LABELS = ["human", "ai", "ai-edited-human", "mixed"]
ARMS = ["A", "B", "C", "C2", "X", None]
RULES = ["p>0.5", "raw>=0.3", "fit_bba", "fit_fpr", "verdict", None]
TARGETS = (0.05, 0.2)
SLICES = ("subgroup", "arm", "tag:writer")


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
        if draw(st.integers(0, 9)) == 0:
            tags["derivation"] = "attack"
            tags["attack"] = draw(st.sampled_from(["homoglyph", "paraphrase"]))
        docs.append({
            "doc_id": f"d{i:03d}", "label": label, "arm": draw(st.sampled_from(ARMS)),
            "subgroup": draw(st.sampled_from(["s1", "s2", "s3", None])),
            "group_key": draw(st.sampled_from(["g1", "g2", "g3", "g4", "g5", None])), "tags": tags,
        })
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
        scope_all = draw(st.booleans())
        scope = [True] * n if scope_all else [draw(st.booleans()) for _ in range(n)]
        dets.append({"label": f"det{j}", "kind": kind, "rule": rule, "rows": rows, "scope": scope})
    return {"docs": docs, "split": split, "every": every, "declared": declared, "dets": dets}


# --------------------------------------------------------------------------- building inputs
def build(sc):
    d = sc["docs"]
    n = len(d)
    docs = DocArrays(
        doc_id=np.array([x["doc_id"] for x in d], dtype=object), label=np.array([x["label"] for x in d], dtype=object),
        subgroup=np.array([x["subgroup"] for x in d], dtype=object), arm=np.array([x["arm"] for x in d], dtype=object),
        kind=np.full(n, "essay", dtype=object), corpus=np.full(n, "c", dtype=object),
        group_key=np.array([x["group_key"] for x in d], dtype=object), tags=[dict(x["tags"]) for x in d])
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
                              status=status, in_scope=scope))
    proto = Protocol(name="prop", tag="P", hash=None, path=None, raw={}, detectors=[], split_rule=sc["split"],
                     split_every=sc["every"], split_salt="s", tpr_at_fpr=TARGETS, slices=SLICES,
                     arms=dict(sc["declared"]))
    return docs, dets, proto


# --------------------------------------------------------------------------- the plain reference
def ref_calibration(sc):
    out = []
    for x in sc["docs"]:
        if sc["split"] != "hash":
            out.append(False)
            continue
        g = x["group_key"] if x["group_key"] is not None else x["doc_id"]
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
            thr = ref_quantile(neg, t)
            out[f"tpr{t}"] = sum(v > thr for v in pos) / len(pos)
        else:
            out[f"tpr{t}"] = None
    return out


def reference(sc):
    docs = sc["docs"]
    n = len(docs)
    calib = ref_calibration(sc)
    place = [ref_place(x, sc["declared"]) for x in docs]
    test = [not c for c in calib]
    t1, t2, side, refs, ops = {}, {}, {}, [], []
    for j, s in enumerate(sc["dets"]):
        ref = ref_detector(sc, j, calib)
        refs.append(ref)
        score = ref[2]
        cal_h = [score[i] for i in range(n) if calib[i] and place[i] == "headline" and docs[i]["label"] == "human"
                 and score[i] is not None]
        op = {t: ref_quantile(cal_h, t) for t in TARGETS} if cal_h else None
        table = [i for i in range(n) if test[i] and s["scope"][i] and place[i] in ("headline", "side-label")]
        b = ref_block(sc, j, table, calib, ref, op)
        b["source"] = "calibration split" if op else "in-sample oracle operating point"
        t1[s["label"]] = b
        head_op = op
        if head_op is None:
            hh = [score[i] for i in table if docs[i]["label"] == "human" and score[i] is not None]
            aa = [score[i] for i in table if docs[i]["label"] == "ai" and score[i] is not None]
            head_op = {t: ref_quantile(hh, t) for t in TARGETS} if hh and aa else {}
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
        for g in sorted({p for p in place if p not in ("headline", "side-label")}):
            mem = [i for i in range(n) if test[i] and s["scope"][i] and place[i] == g]
            rb = ref_block(sc, j, mem, calib, ref, head_op, negatives=head_neg)
            ranked = sum(1 for i in mem if docs[i]["label"] in ("human", "ai") and score[i] is not None)
            if rb["human_n"] or rb["ai_n"] or rb["edited_n"] or rb["mixed_n"] or ranked:
                side[(s["label"], g)] = rb
    # Agreement: per slice and label, over texts every participating detector counted.
    agree = {}
    with_rule = [j for j in range(len(sc["dets"])) if refs[j][3]]
    table_all = [i for i in range(n) if test[i] and place[i] in ("headline", "side-label")]
    for kind in ("all",) + SLICES:
        rows = {}
        for i in table_all:
            v = "all" if kind == "all" else (docs[i]["tags"].get("writer") if kind == "tag:writer" else docs[i][kind])
            if v is not None:
                rows.setdefault((str(v), docs[i]["label"]), []).append(i)
        for (v, lab), mem in rows.items():
            part = [j for j in with_rule if any(refs[j][0][i] for i in mem)]
            if not part:
                continue
            both = [i for i in mem if all(refs[j][0][i] for j in part)]
            agree[(kind, v, lab)] = {
                "n": len(both), "n_detectors": len(part),
                "flagged_by_any": sum(any(refs[j][1][i] for j in part) for i in both),
                "flagged_by_all": sum(all(refs[j][1][i] for j in part) for i in both)}
    return t1, t2, side, agree, calib


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
    docs, dets, proto = build(sc)
    res = compute_results(docs, dets, proto)
    t1, t2, side, agree, calib = reference(sc)
    assert {r["detector"] for r in res["table1"]} == set(t1)
    for r in res["table1"]:
        _check_block(r, t1[r["detector"]], ("table1", r["detector"]))
        for t in TARGETS:
            blk = r[f"tpr_at_fpr_{int(t * 100)}"]
            if blk["tpr"] is not None:
                assert blk["threshold_source"] == t1[r["detector"]]["source"]
    got2 = {(r["detector"], r["slice_type"], r["slice"]): r for r in res["table2"]}
    assert set(got2) == set(t2)
    for k, r in got2.items():
        _check_block(r, t2[k], ("table2", k))
    got_side = {(r["detector"], r["group"]): r for r in res["side_rows"]}
    assert set(got_side) == set(side)
    for k, r in got_side.items():
        _check_block(r, side[k], ("side", k))
    got_a = {(a["slice_type"], a["subgroup"], a["label"]): a for a in res["agreement"]}
    assert set(got_a) == set(agree)
    for k, a in got_a.items():
        for f in ("n", "n_detectors", "flagged_by_any", "flagged_by_all"):
            assert a[f] == agree[k][f], (k, f, a, agree[k])
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


@SETTINGS
@given(scenario(), st.sampled_from(["human", "ai", "mixed", "ai-edited-human"]))
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
    for a, b in zip(res["table1"], res2["table1"], strict=True):
        assert {k: a[k] for k in keys} == {k: b[k] for k in keys}


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
