"""Benchmark: RAID's evaluation code vs veribench's grid on the same synthetic frame in RAID's
format (not a test).

RAID: ``raid.evaluate.run_evaluation`` from the PyPI package ``raid-bench`` 0.2.0
(liamdugan/raid, raid/evaluate.py) with the leaderboard's targets (5% and 1% FPR): per-domain
thresholds on unattacked human texts (stepped search, ``score >= t``), TPR and AUROC
(scikit-learn) for every cell of domain x attack x model x decoding x repetition penalty and
every "all" roll-up. Install it beside veribench **without its pins** (it pins numpy 1.26,
pandas 2.2 and scikit-learn 1.3, which would downgrade the environment):

    .venv/bin/pip install --no-deps raid-bench==0.2.0

veribench: :func:`veribench.evaluate.grid.compute_grid` over the same tags (exact-quantile
thresholds, ``score > t``), plus a Wilson interval on every TPR and a DeLong interval on every
AUROC, which RAID does not compute.

The frame has RAID's test-set layout and size: 8 domains x 200 sources; per source one human
text and 34 generations (5 API models with greedy/sampling and no repetition penalty, 6 open
models with greedy/sampling x penalty yes/no), each in 12 attack variants (none + 11) =
672,000 rows. Ten detectors: continuous probabilities, logits, probabilities rounded to 2 and
to 1 decimal (RAID's stepped search can only land on the exact quantile when scores tie),
with effects of domain, model, decoding and attack.

Each side runs in its own process, so each peak RSS is its own:

    .venv/bin/python benchmarks/bench_raid_compare.py [--sources 200] [--detectors 10] [--json OUT]
    .venv/bin/python benchmarks/bench_raid_compare.py --sources 20 --detectors 2   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DOMAINS = ["abstracts", "books", "news", "poetry", "recipes", "reddit", "reviews", "wiki"]
API_MODELS = ["chatgpt", "gpt4", "gpt3", "cohere", "cohere-chat"]
OPEN_MODELS = ["gpt2", "llama-chat", "mistral", "mistral-chat", "mpt", "mpt-chat"]
ATTACKS = ["none", "alternative_spelling", "article_deletion", "homoglyph", "insert_paragraphs", "number",
           "paraphrase", "perplexity_misspelling", "synonym", "upper_lower", "whitespace", "zero_width_space"]
TAGS = ["domain", "model", "decoding", "repetition_penalty", "attack"]


def make_frame(sources_per_domain: int = 200, n_detectors: int = 10, seed: int = 0, n_domains: int = len(DOMAINS),
               n_attacks: int = len(ATTACKS)) -> dict:
    """RAID-layout columns (numpy object arrays; None for a human text's empty cells) and scores
    (``n_domains`` / ``n_attacks``: the first of :data:`DOMAINS` / :data:`ATTACKS`, for small frames)."""
    domains, attacks = DOMAINS[:n_domains], ATTACKS[:n_attacks]
    combos = [("human", None, None)]
    combos += [(m, d, "no") for m in API_MODELS for d in ("greedy", "sampling")]
    combos += [(m, d, r) for m in OPEN_MODELS for d in ("greedy", "sampling") for r in ("yes", "no")]
    per_src = len(combos) * len(attacks)
    n = len(domains) * sources_per_domain * per_src
    dom = np.repeat(np.arange(len(domains)), sources_per_domain * per_src)
    k = np.tile(np.arange(per_src), len(domains) * sources_per_domain)
    combo, att = k // len(attacks), k % len(attacks)
    model = np.array([c[0] for c in combos], dtype=object)[combo]
    dec = np.array([c[1] for c in combos], dtype=object)[combo]
    rep = np.array([c[2] for c in combos], dtype=object)[combo]
    label = (combo > 0).astype(np.int8)
    rng = np.random.default_rng(seed)
    dshift = rng.normal(0, 0.3, len(domains))[dom]
    mshift = rng.normal(0, 0.5, len(combos))[combo]
    ashift = rng.normal(-0.3, 0.4, len(attacks))[att]
    ashift[att == 0] = 0.0
    scores = np.empty((n_detectors, n))
    kinds = []
    for d in range(n_detectors):
        z = rng.standard_normal(n) + label * (0.6 + 0.3 * d) * (1 + mshift + ashift) + dshift
        kind = ("probability", "logit", "rounded 2 decimals", "rounded 1 decimal")[d % 4]
        p = 1.0 / (1.0 + np.exp(-z))
        scores[d] = {"probability": p, "logit": z, "rounded 2 decimals": np.round(p, 2),
                     "rounded 1 decimal": np.round(p, 1)}[kind]
        kinds.append(kind)
    return {"id": np.arange(n), "domain": np.array(domains, dtype=object)[dom], "model": model, "decoding": dec,
            "repetition_penalty": rep, "attack": np.array(attacks, dtype=object)[att], "label": label,
            "scores": scores, "kinds": kinds}


def run_veribench(frame: dict) -> dict:
    from veribench.evaluate.grid import GridDetector, compute_grid, unattacked_mask

    t, c = time.perf_counter(), time.process_time()
    dets = [GridDetector(f"det{d}", frame["scores"][d]) for d in range(frame["scores"].shape[0])]
    g = compute_grid({k: frame[k] for k in TAGS}, frame["label"], dets, tags=TAGS, threshold_by="domain",
                     unattacked=unattacked_mask(frame["attack"]), targets=(0.05, 0.01))
    return {"seconds": time.perf_counter() - t, "cpu_seconds": time.process_time() - c, "grid": g}


def run_raid(frame: dict, detectors: list[int]) -> dict:
    import pandas as pd
    from raid.evaluate import run_evaluation

    df = pd.DataFrame({k: frame[k] for k in ["id"] + TAGS})
    df.loc[df["model"] == "human", ["decoding", "repetition_penalty"]] = np.nan
    out, secs, cpu = {}, [], []
    for d in detectors:
        results = [{"id": int(i), "score": float(s)} for i, s in zip(frame["id"], frame["scores"][d])]
        t, c = time.perf_counter(), time.process_time()
        out[f"det{d}"] = run_evaluation(results, df, target_fpr=[0.05, 0.01])
        secs.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        print(f"  RAID det{d} ({frame['kinds'][d]}): {secs[-1]:.1f} s", flush=True)
    return {"seconds": secs, "cpu_seconds": cpu, "results": out}


def compare(frame: dict, ours: dict, raid: dict) -> dict:
    """AUROC in every cell; TPR in the cells whose domains' RAID thresholds split every score
    of the domain exactly as the exact quantile does (``s >= t_raid`` == ``s > t``)."""
    rows = {}
    for r in ours["grid"]["rows"]:
        rows[(r["detector"],) + tuple(r[t] for t in TAGS)] = r
    dom = frame["domain"]
    out = {"cells_raid": 0, "cells_missing_in_veribench": 0, "auroc_max_abs_diff": 0.0, "tpr": {}}
    for tk in ("0.05", "0.01"):
        out["tpr"][tk] = {"domains_reached": 0, "domains": 0, "cells_compared": 0, "cells_unequal": 0,
                          "raid_null_cells": 0, "veribench_null_cells": 0, "max_abs_diff_elsewhere": 0.0}
    for name, res in raid["results"].items():
        d = int(name[3:])
        s = frame["scores"][d]
        th = ours["grid"]["info"]["thresholds"][name]
        agree = {tk: {} for tk in ("0.05", "0.01")}
        for tk in agree:
            for g in DOMAINS:
                m = dom == g
                ot, rt = th[tk][g]["threshold"], res["thresholds"][tk][g]
                agree[tk][g] = ot is not None and th[tk][g]["reason"] is None and bool(np.all((s[m] >= rt) == (s[m] > ot)))
                out["tpr"][tk]["domains"] += 1
                out["tpr"][tk]["domains_reached"] += agree[tk][g]
        for rr in res["scores"]:
            out["cells_raid"] += 1
            key = (name,) + tuple(rr[t] for t in TAGS)
            o = rows.get(key)
            if o is None:
                out["cells_missing_in_veribench"] += 1
                continue
            out["auroc_max_abs_diff"] = max(out["auroc_max_abs_diff"], abs(rr["auroc"] - o["auroc"]))
            for tk, rk in (("0.05", "tpr_at_fpr_5"), ("0.01", "tpr_at_fpr_1")):
                st = out["tpr"][tk]
                acc = rr["accuracy"][tk]
                st["veribench_null_cells"] += o[rk]["tpr"] is None
                if acc is None:
                    st["raid_null_cells"] += 1
                    continue
                tpr = acc["tp"] / (acc["tp"] + acc["fn"])
                doms = DOMAINS if rr["domain"] == "all" else [rr["domain"]]
                if all(agree[tk][g] for g in doms):
                    st["cells_compared"] += 1
                    st["cells_unequal"] += o[rk]["tpr"] is None or tpr != o[rk]["tpr"]
                elif o[rk]["tpr"] is not None:
                    st["max_abs_diff_elsewhere"] = max(st["max_abs_diff_elsewhere"], abs(tpr - o[rk]["tpr"]))
    return out


def _child(args) -> None:
    with open(args.frame, "rb") as f:
        frame = pickle.load(f)
    res = run_veribench(frame) if args.child == "veribench" else run_raid(frame, list(range(args.raid_detectors)))
    res["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with open(args.out, "wb") as f:
        pickle.dump(res, f)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sources", type=int, default=200, help="sources per domain (200: 672,000 rows)")
    ap.add_argument("--detectors", type=int, default=10)
    ap.add_argument("--raid-detectors", type=int, default=None, help="run RAID on the first N detectors only")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--raid-cache", type=Path, help="reuse RAID's results from this file (written when absent)")
    ap.add_argument("--child", choices=["veribench", "raid"], help=argparse.SUPPRESS)
    ap.add_argument("--frame", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return _child(args)
    frame = make_frame(args.sources, args.detectors)
    n = frame["label"].size
    n_raid = args.raid_detectors or args.detectors
    print(f"frame: {n:,} rows x {args.detectors} detectors ({', '.join(sorted(set(frame['kinds'])))})", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        fp = Path(tmp) / "frame.pkl"
        with open(fp, "wb") as f:
            pickle.dump(frame, f)
        res = {}
        for side in ("veribench", "raid"):
            out = Path(tmp) / f"{side}.pkl"
            if side == "raid" and args.raid_cache and args.raid_cache.exists():
                out = args.raid_cache
                with open(out, "rb") as f:
                    res[side] = pickle.load(f)
                print(f"RAID results from {out}")
                continue
            subprocess.run([sys.executable, __file__, "--child", side, "--frame", str(fp), "--out", str(out),
                            "--raid-detectors", str(n_raid)], check=True)
            with open(out, "rb") as f:
                res[side] = pickle.load(f)
            if side == "raid" and args.raid_cache:
                args.raid_cache.write_bytes(out.read_bytes())
    ours, raid = res["veribench"], res["raid"]
    per_ours = ours["seconds"] / args.detectors
    per_raid = sum(raid["seconds"]) / n_raid
    cmp = compare(frame, ours, raid)
    print(f"veribench: {args.detectors} detectors in {ours['seconds']:.2f} s wall, {ours['cpu_seconds']:.2f} s CPU "
          f"({per_ours:.3f} s per detector, {len(ours['grid']['rows']):,} rows with Wilson and DeLong intervals); "
          f"peak RSS {ours['peak_rss_mib']:.0f} MiB; load average {os.getloadavg()[0]:.1f}")
    if raid.get("cpu_seconds"):
        print(f"RAID CPU: {sum(raid['cpu_seconds']):.1f} s ({sum(raid['cpu_seconds']) / n_raid:.1f} s per detector)")
    print(f"RAID: {n_raid} detectors in {sum(raid['seconds']):.1f} s ({per_raid:.1f} s per detector); "
          f"peak RSS {raid['peak_rss_mib']:.0f} MiB")
    print(f"time ratio per detector RAID / veribench: {per_raid / per_ours:.0f}x")
    print(json.dumps(cmp, indent=1))
    if args.json:
        args.json.write_text(json.dumps({
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": n, "detectors": args.detectors,
            "raid_detectors": n_raid, "veribench_s": round(ours["seconds"], 3),
            "veribench_cpu_s": round(ours["cpu_seconds"], 3), "raid_s": [round(x, 2) for x in raid["seconds"]],
            "veribench_peak_rss_mib": round(ours["peak_rss_mib"]), "raid_peak_rss_mib": round(raid["peak_rss_mib"]),
            "ratio_per_detector": round(per_raid / per_ours, 1), "compare": cmp}, indent=1))


if __name__ == "__main__":
    main()
