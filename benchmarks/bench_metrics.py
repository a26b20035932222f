"""Benchmark of veribench's metric layer (not a test).

Synthetic data (benchmarks/synthetic.py): 1,000,000 documents x 10 detectors, 10 subgroups,
2 labels. Timed, after the data are made:

1. decision thresholds: best balanced accuracy fitted per detector on a 20% calibration split
   (exact candidates from the data);
2. every rate with its Wilson 95% interval: per detector x (all + each subgroup) x label,
   flagged counts on the test split, plus balanced accuracy;
3. agreement: texts flagged by at least one / by all detectors, per subgroup and overall;
4. AUROC with DeLong 95% interval per detector, overall and per subgroup;
5. TPR at FPR 1% and 5% per detector, overall and per subgroup (exact human-score quantile).

Reports wall time per step and in total, the Python-heap peak during the timed part
(tracemalloc; numpy buffers are traced) and the process peak RSS (getrusage).

    .venv/bin/python benchmarks/bench_metrics.py [--docs 1000000] [--detectors 10] [--groups 10] [--check]

``--check`` also verifies a sample of the numbers against scikit-learn/statsmodels.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import make_synthetic

from veribench.metrics import (
    GroupedScores,
    UndefinedMetricWarning,
    argsort_scores,
    balanced_accuracy_arrays,
    fit_threshold,
    group_agreement,
    group_counts,
    wilson_arrays,
)


def run(data, calib_share: float = 0.2, seed: int = 1) -> tuple[dict, dict]:
    times: dict[str, float] = {}
    cpu: dict[str, float] = {}
    out: dict = {}
    D, N, G = data.n_detectors, data.n_docs, data.n_groups
    t_all = time.perf_counter()

    t, c = time.perf_counter(), time.process_time()
    calib = np.random.default_rng(seed).random(N) < calib_share
    test = ~calib
    thresholds = np.array(
        [fit_threshold(data.label[calib], data.scores[d, calib], rule="best_balanced_accuracy") for d in range(D)]
    )
    grp, lab, sc = data.group[test], data.label[test], data.scores[:, test]
    times["1 thresholds (best balanced accuracy, calibration split)"] = time.perf_counter() - t
    cpu["1 thresholds (best balanced accuracy, calibration split)"] = time.process_time() - c

    t, c = time.perf_counter(), time.process_time()
    flags = sc > thresholds[:, None]  # (D, n) flag rule score > threshold
    # codes: slice x label; slice 0 = all, 1..G = subgroups
    code_sub = (grp.astype(np.int64) + 1) * 2 + lab
    code_all = lab.astype(np.int64)
    n_sub, k_sub = group_counts(code_sub, flags.T, n_groups=(G + 1) * 2)
    n_all, k_all = group_counts(code_all, flags.T, n_groups=2)
    n = np.broadcast_to(n_sub[:, None], k_sub.shape).copy()
    n[:2] = n_all[:, None]
    k = k_sub.copy()
    k[:2] = k_all
    rate, lo, hi = wilson_arrays(k, n)  # (slices*2, D)
    rate3 = rate.reshape(G + 1, 2, D)
    ba = balanced_accuracy_arrays(rate3[:, 1], rate3[:, 0])  # TPR = rate on AI, FPR = rate on humans
    out["rates"] = {"n_rates": int(rate.size), "fpr_all": rate3[0, 0].round(4).tolist(), "tpr_all": rate3[0, 1].round(4).tolist()}
    out["balanced_accuracy_all"] = ba[0].round(4).tolist()
    times["2 rates + Wilson 95% + balanced accuracy"] = time.perf_counter() - t
    cpu["2 rates + Wilson 95% + balanced accuracy"] = time.process_time() - c

    t, c = time.perf_counter(), time.process_time()
    n_g, any_g, all_g = group_agreement(grp, flags.T, n_groups=G)
    out["agreement_all"] = {"n": int(n_g.sum()), "any": int(any_g.sum()), "all": int(all_g.sum())}
    times["3 agreement (any / all detectors)"] = time.perf_counter() - t
    cpu["3 agreement (any / all detectors)"] = time.process_time() - c

    t_auc = t_tpr = c_auc = c_tpr = 0.0
    zeros = np.zeros(grp.shape[0], dtype=np.int64)
    auc_rows, tpr_rows = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for d in range(D):
            t, c = time.perf_counter(), time.process_time()
            order = argsort_scores(sc[d])  # one sort per detector, shared by both groupings
            t_auc += time.perf_counter() - t
            c_auc += time.process_time() - c
            for name, codes, ng in (("all", zeros, 1), ("subgroup", grp, G)):
                t, c = time.perf_counter(), time.process_time()
                gs = GroupedScores(codes, lab, sc[d], n_groups=ng, score_order=order)
                ga = gs.auroc(alpha=0.05)
                t_auc += time.perf_counter() - t
                c_auc += time.process_time() - c
                t, c = time.perf_counter(), time.process_time()
                r1, r5 = gs.tpr_at_fpr(0.01), gs.tpr_at_fpr(0.05)
                t_tpr += time.perf_counter() - t
                c_tpr += time.process_time() - c
                auc_rows.append((d, name, ga))
                tpr_rows.append((d, name, r1, r5))
    times["4 AUROC + DeLong 95% (overall + per subgroup; includes the sort)"] = t_auc
    cpu["4 AUROC + DeLong 95% (overall + per subgroup; includes the sort)"] = c_auc
    times["5 TPR at FPR 1% and 5% (overall + per subgroup)"] = t_tpr
    cpu["5 TPR at FPR 1% and 5% (overall + per subgroup)"] = c_tpr
    times["total"] = time.perf_counter() - t_all
    cpu["total"] = sum(cpu.values())
    out["_cpu"] = cpu
    out["auroc_all"] = [round(float(ga.auc[0]), 5) for d, name, ga in auc_rows if name == "all"]
    out["tpr_at_5pct_all"] = [round(float(r5.tpr[0]), 5) for d, name, r1, r5 in tpr_rows if name == "all"]
    out["_arrays"] = (thresholds, test, auc_rows, tpr_rows, k, n, lo, hi)
    return times, out


def check(data, out) -> str:
    """Spot-check against scikit-learn and statsmodels on the same arrays."""
    from sklearn.metrics import roc_auc_score
    from statsmodels.stats.proportion import proportion_confint

    from veribench.metrics import tpr_at_fpr

    thresholds, test, auc_rows, tpr_rows, k, n, lo, hi = out["_arrays"]
    lab, grp = data.label[test], data.group[test]
    worst = 0.0
    for d in (0, 4, 8):
        s = data.scores[d, test]
        ga = [ga for dd, name, ga in auc_rows if dd == d and name == "subgroup"][0]
        for g in (0, 5):
            m = grp == g
            worst = max(worst, abs(ga.auc[g] - roc_auc_score(lab[m], s[m])))
        r5 = [r5 for dd, name, r1, r5 in tpr_rows if dd == d and name == "all"][0]
        ref = tpr_at_fpr(lab, s, 0.05)
        assert (r5.k[0], r5.fp[0]) == (ref.k, ref.fp)
    l_sm, h_sm = proportion_confint(k, n, method="wilson")
    wil = float(np.nanmax(np.abs(np.stack([lo - l_sm, hi - h_sm]))))
    return f"max |AUROC - sklearn| = {worst:.2e}; max |Wilson - statsmodels| = {wil:.2e}; TPR@5% counts equal scalar"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--detectors", type=int, default=10)
    ap.add_argument("--groups", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--json", type=Path, help="write the measurements here")
    args = ap.parse_args()

    t, _c = time.perf_counter(), time.process_time()
    data = make_synthetic(args.docs, args.detectors, args.groups, args.seed)
    t_make = time.perf_counter() - t
    tracemalloc.start()
    times, out = run(data)
    cpu_steps = out.pop("_cpu")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"veribench metrics benchmark: {args.docs:,} documents x {args.detectors} detectors, "
          f"{args.groups} subgroups, 2 labels (data made in {t_make:.1f} s, not counted)")
    print(f"  {'step':<66s} {'wall':>9s} {'CPU':>9s}")
    for name, v in times.items():
        print(f"  {name:<66s} {v:7.2f} s {cpu_steps[name]:7.2f} s")
    print(f"  load average now {os.getloadavg()[0]:.1f} (CPU time ~ wall time on an idle machine: single-threaded)")
    print(f"  peak traced memory during the timed part: {peak / 2**20:.0f} MiB; process peak RSS: {rss_mib:.0f} MiB")
    print(f"  AUROC overall per detector: {out['auroc_all']}")
    print(f"  TPR at FPR 5% overall per detector: {out['tpr_at_5pct_all']}")
    print(f"  agreement overall: {out['agreement_all']}")
    if args.check:
        print("  check:", check(data, out))
    if args.json:
        rec = {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}",
            "docs": args.docs, "detectors": args.detectors, "groups": args.groups,
            "seconds": {k: round(v, 3) for k, v in times.items()},
            "cpu_seconds": {k: round(v, 3) for k, v in cpu_steps.items()}, "load_average": round(os.getloadavg()[0], 2),
            "peak_traced_mib": round(peak / 2**20, 1), "peak_rss_mib": round(rss_mib, 1),
        }
        args.json.write_text(json.dumps(rec, indent=2))


if __name__ == "__main__":
    main()
