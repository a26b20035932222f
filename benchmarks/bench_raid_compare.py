"""Benchmark: RAID's evaluation code vs veribench's metric layer on the same synthetic data
(not a test).

RAID: ``raid.evaluate.run_evaluation`` from the PyPI package ``raid-bench`` 0.2.0
(liamdugan/raid, raid/evaluate.py), with its defaults: per-domain threshold tuned on human
texts for a target FPR of 5%, TPR at that threshold, and AUROC (scikit-learn), for every
domain plus "all". Install it beside veribench **without its pins** (it pins numpy 1.26,
pandas 2.2 and scikit-learn 1.3, which would downgrade the environment):

    .venv/bin/pip install --no-deps raid-bench==0.2.0

veribench computes the same table: per-domain threshold at FPR 5% at the exact quantile of
the domain's human scores, TPR per domain and over all domains (each domain's texts judged
by its own threshold, as RAID does), AUROC per domain and overall; and in addition a
Wilson 95% interval on every TPR and a DeLong 95% interval on every AUROC.

Synthetic data (benchmarks/synthetic.py): domains = subgroups; RAID's ``model`` column is
``human`` for human texts and one generator name for AI texts; one attack (``none``), one
decoding strategy and one repetition-penalty value.

    .venv/bin/python benchmarks/bench_raid_compare.py [--docs 1000000] [--detectors 10]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import make_synthetic  # noqa: E402

from veribench.metrics import GroupedScores, UndefinedMetricWarning, argsort_scores, wilson_arrays  # noqa: E402


def veribench_eval(group: np.ndarray, label: np.ndarray, score: np.ndarray, n_groups: int, target: float = 0.05) -> dict:
    """RAID's table for one detector, the veribench way."""
    order = argsort_scores(score)
    dom = GroupedScores(group, label, score, n_groups=n_groups, score_order=order)
    r = dom.tpr_at_fpr(target)
    a = dom.auroc()
    pooled = GroupedScores(np.zeros(score.shape[0], dtype=np.int64), label, score, n_groups=1, score_order=order).auroc()
    k_all, n_all = int(r.k.sum()), int(r.n.sum())
    rate, lo, hi = wilson_arrays(np.append(r.k, k_all), np.append(r.n, n_all))
    return {
        "threshold": r.threshold,
        "achieved_fpr": r.achieved_fpr,
        "tpr": rate,
        "tpr_ci": (lo, hi),
        "auroc": np.append(a.auc, pooled.auc),
        "auroc_ci": (np.append(a.lo, pooled.lo), np.append(a.hi, pooled.hi)),
    }


def raid_frame(data):
    import pandas as pd

    return pd.DataFrame(
        {
            "id": np.arange(data.n_docs),
            "model": np.where(data.label == 1, "synthetic-generator", "human"),
            "domain": np.char.add("d", data.group.astype(str)),
            "attack": "none",
            "decoding": "greedy",
            "repetition_penalty": "no",
        }
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--detectors", type=int, default=10)
    ap.add_argument("--groups", type=int, default=10)
    ap.add_argument("--raid-detectors", type=int, default=None, help="run RAID on only the first N detectors")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from raid.evaluate import run_evaluation

    data = make_synthetic(args.docs, args.detectors, args.groups, seed=0)
    G = args.groups
    ids = np.arange(data.n_docs)

    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        ours = [veribench_eval(data.group, data.label, data.scores[d], G) for d in range(data.n_detectors)]
    t_ours = time.perf_counter() - t
    print(f"veribench: {data.n_detectors} detectors x {args.docs:,} docs in {t_ours:.2f} s")

    df = raid_frame(data)
    n_raid = args.raid_detectors or data.n_detectors
    t_raid = 0.0
    diffs = {"auroc": 0.0, "tpr": 0.0, "raid_null": 0, "raid_fpr_max": 0.0, "ours_fpr_max": 0.0}
    for d in range(n_raid):
        results = [{"id": int(i), "score": float(s)} for i, s in zip(ids, data.scores[d])]  # RAID's input format
        t = time.perf_counter()
        res = run_evaluation(results, df, target_fpr=0.05)
        dt = time.perf_counter() - t
        t_raid += dt
        # compare the "all attacks / all models / all decodings" rows per domain
        rows = {
            r["domain"]: r for r in res["scores"]
            if r["attack"] == "all" and r["model"] == "all" and r["decoding"] == "all" and r["repetition_penalty"] == "all"
        }
        for g in range(G + 1):
            key = "all" if g == G else f"d{g}"
            rr = rows[key]
            diffs["auroc"] = max(diffs["auroc"], abs(rr["auroc"] - ours[d]["auroc"][g]))
            acc = rr["accuracy"]["0.05"]
            if acc is None:
                diffs["raid_null"] += 1
            else:
                tpr_raid = acc["tp"] / (acc["tp"] + acc["fn"])
                diffs["tpr"] = max(diffs["tpr"], abs(tpr_raid - ours[d]["tpr"][g]))
        diffs["raid_fpr_max"] = max(diffs["raid_fpr_max"], max(res["fpr"]["0.05"].values()))
        diffs["ours_fpr_max"] = max(diffs["ours_fpr_max"], float(np.nanmax(ours[d]["achieved_fpr"])))
        print(f"  RAID run_evaluation, detector {d} ({data.scale[d]}): {dt:.1f} s", flush=True)
    per_det_raid = t_raid / n_raid
    per_det_ours = t_ours / data.n_detectors
    ratio = per_det_raid / per_det_ours
    print(f"RAID: {n_raid} detector(s) in {t_raid:.1f} s ({per_det_raid:.1f} s per detector)")
    print(f"veribench: {per_det_ours:.2f} s per detector (with Wilson and DeLong intervals RAID does not compute)")
    print(f"time ratio RAID / veribench: {ratio:.0f}x")
    print(f"max |AUROC RAID - veribench| = {diffs['auroc']:.2e}; max |TPR RAID - veribench| = {diffs['tpr']:.4f}; "
          f"RAID null TPR cells = {diffs['raid_null']}; max achieved FPR: RAID {diffs['raid_fpr_max']:.4f}, "
          f"veribench {diffs['ours_fpr_max']:.4f} (target 0.05)")
    if args.json:
        args.json.write_text(json.dumps({
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "docs": args.docs,
            "detectors": data.n_detectors, "raid_detectors": n_raid, "veribench_s": round(t_ours, 3),
            "raid_s": round(t_raid, 3), "ratio_per_detector": round(ratio, 1), "diffs": diffs,
        }, indent=2, default=float))


if __name__ == "__main__":
    main()
