"""Benchmark: every table and interval of a run for 1,000,000 documents x 10 detectors.

Synthetic data (seeded): 10 subgroups, 3 arms, writer tag, labels human/ai/ai-edited-human/
mixed; per detector a P(AI) or a raw statistic, 1% failed scores. Times
``veribench.evaluate.compute_results`` (Table 1, Table 2 per subgroup/arm/tag, rates with
Wilson intervals, agreement, AUROC with DeLong intervals, TPR at 1% and 5% FPR, ROC points
and histograms) and reports wall and CPU time and peak memory. Goal (issue 25): 1M x 10
in under 60 s of CPU and 10M x 10 in under 10 minutes on the 2-core machine of
``benchmarks/README.md``.

Run: ``.venv/bin/python benchmarks/bench_tables.py [--docs 1000000] [--detectors 10] [--profile 25]``
(``--profile N``: the N functions with the most own time, by cProfile, on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time

import numpy as np

from veribench.evaluate.arrays import DetArrays, DocArrays
from veribench.evaluate.results import compute_results
from veribench.protocol.model import DecisionRule, Protocol


def synth(n_docs: int, n_dets: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = rng.choice(np.array(["human", "ai", "ai-edited-human", "mixed"], dtype=object), n_docs,
                        p=[0.45, 0.45, 0.05, 0.05])
    subgroup = rng.choice(np.array([f"set{i}" for i in range(10)], dtype=object), n_docs)
    arm = np.where(labels == "human", rng.choice(np.array(["A", "B"], dtype=object), n_docs), "C").astype(object)
    writer = rng.choice(np.array(["native", "non-native"], dtype=object), n_docs)
    docs = DocArrays(doc_id=np.array([f"d{i:07d}" for i in range(n_docs)], dtype=object), label=labels,
                     subgroup=subgroup, arm=arm, kind=np.full(n_docs, "essay", dtype=object),
                     corpus=np.full(n_docs, "synthetic", dtype=object),
                     group_key=np.array([f"g{i // 2}" for i in range(n_docs)], dtype=object),
                     tags=[{"writer": w} for w in writer])
    y = (labels != "human").astype(float)
    dets = []
    for j in range(n_dets):
        ok = rng.random(n_docs) > 0.01
        z = rng.normal(y * (0.5 + 0.1 * j), 1.0)
        p = 1 / (1 + np.exp(-z)) if j % 2 == 0 else np.full(n_docs, np.nan)
        raw = p if j % 2 == 0 else z
        rule = DecisionRule() if j % 2 == 0 else DecisionRule(field="raw", op=">", threshold=0.8)
        dets.append(DetArrays(label=f"det{j}", spec={"name": f"det{j}", "version": "1"}, spec_hash=f"h{j}", rule=rule,
                              present=np.ones(n_docs, bool), ok=ok, p=np.where(ok, p, np.nan),
                              raw=np.where(ok, raw, np.nan), oriented=np.where(ok, raw, np.nan),
                              verdict=np.full(n_docs, None, dtype=object), text_differs=np.zeros(n_docs, bool)))
    return docs, dets


def yardstick() -> float:
    """CPU seconds of a fixed workload (sorting 2**23 seeded normal doubles, best of 3): the
    same-machine yardstick printed beside each figure, to compare runs under other load."""
    x = np.random.default_rng(0).standard_normal(1 << 23)
    best = float("inf")
    for _ in range(3):
        c = time.process_time()
        np.sort(x)
        best = min(best, time.process_time() - c)
    return round(best, 3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--detectors", type=int, default=10)
    ap.add_argument("--profile", type=int, default=0, help="print the N functions with the most own time")
    args = ap.parse_args()
    yard = yardstick()
    t0 = time.perf_counter()
    docs, dets = synth(args.docs, args.detectors)
    t1 = time.perf_counter()
    c1 = time.process_time()
    proto = Protocol(name="bench", tag="BENCH", hash=None, path=None, raw={}, detectors=[],
                     slices=("subgroup", "arm", "tag:writer"))
    if args.profile:
        import cProfile
        import pstats
        import sys

        prof = cProfile.Profile()
        res = prof.runcall(compute_results, docs, dets, proto)
        pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(args.profile)
    else:
        res = compute_results(docs, dets, proto)
    t2 = time.perf_counter()
    c2 = time.process_time()
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = {"docs": args.docs, "detectors": args.detectors, "synth_s": round(t1 - t0, 2),
           "tables_s": round(t2 - t1, 2), "tables_cpu_s": round(c2 - c1, 2), "peak_rss_mib": round(peak_mib), "table1_rows": len(res["table1"]),
           "table2_rows": len(res["table2"]), "rates_rows": len(res["rates"]),
           "machine": f"{platform.machine()}, {platform.python_version()}", "loadavg_after": os.getloadavg()[0],
           "yardstick_sort_cpu_s": yard}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
