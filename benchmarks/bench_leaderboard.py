"""Benchmark: scoring one leaderboard submission at RAID's test-set size (issue 26), veribench's
grid against RAID's own ``run_evaluation``, with CPU time and peak RSS (not a test).

The frame is **synthetic** (seeded, no text): RAID's column layout (``id`` as a UUID string,
``adv_source_id``, ``source_id``, ``model``, ``decoding``, ``repetition_penalty``, ``attack``,
``domain``; the text columns are left out, no scorer reads them) at RAID's test-set size: 8
domains x 200 sources, per source one human text and 34 generations (5 API models x
greedy/sampling, no repetition penalty; 6 open models x greedy/sampling x penalty yes/no), each
in 12 attack variants (none + 11) = 672,000 rows (``bench_raid_compare.make_frame``). Ten
entries' scores with effects of domain, model, decoding and attack; the submission scored is
entry 0 (a continuous probability), given as RAID's ``predictions.json`` records
``[{"id", "score"}]``.

Work timed, each side in its own process (so each peak RSS is its own; ``ru_maxrss`` of the
process, which includes the frame it loads):

1. **the submission's grid** (timed on both sides in one run; veribench's first call in a
   fresh process is the compared figure, its median over 3 further calls is printed beside it): AUROC and TPR at 5% FPR in
   every cell of domain x model x decoding x repetition penalty x attack and every "all"
   roll-up, from the prediction records. RAID: ``raid.evaluate.run_evaluation(predictions,
   df)`` exactly as its README calls it (default ``target_fpr=0.05``; its DataFrame is built
   untimed). veribench: the records aligned to the frame by id, then
   :func:`veribench.evaluate.grid.compute_grid` with ``tpr_intervals=False`` (AUROC with its
   DeLong interval, TPR at 5% FPR; RAID computes no interval) over the board's tags coded
   once when it loads its hidden set (:func:`board_codes`: timed apart and printed, not per
   submission).
2. **the agreement check**, before any ratio is reported: the cells are the same; AUROC
   within 1e-12 in every cell; TPR at 5% FPR equal in every cell where RAID's threshold splits
   the cell's AI texts as the exact quantile does, and elsewhere the true-positive counts
   differ by exactly the AI texts of the cell that the two documented threshold rules judge
   differently (RAID: per domain a stepped search from the mean to within 0.0005 of the
   target, ``score >= t``; veribench: the exact quantile, ``score > t``, achieved FPR never
   above the target); a cell RAID nulls must lie in a domain whose RAID threshold missed the
   target by more than 0.0005 (RAID's PR #50; a failed domain nulls every ``domain = all``
   cell too). Any other difference fails the run (exit 1).
3. **intervals** (veribench only; RAID has none), timed separately: a Wilson interval on every
   cell's TPR (:func:`veribench.metrics.rates.wilson_arrays`), and the grid with its
   threshold-refitting bootstrap of every TPR (``compute_grid``, B = 2000, the default).
4. **paired tests against 10 entries**, timed separately:
   :func:`veribench.evaluate.comparisons.compute_comparisons` over the 10 entries (45 pairs),
   slices all + each domain, metrics AUROC (paired DeLong), FPR and catch rate (McNemar exact,
   Newcombe) at each entry's 5% FPR threshold, Holm over the family, and tiers.

Goal (issue 26): the grid at least 100x faster than RAID's, under 2 GiB peak RSS.

    .venv/bin/python benchmarks/bench_leaderboard.py [--sources 200] [--json OUT]
    .venv/bin/python benchmarks/bench_leaderboard.py --sources 20      # a quick look (67,200 rows)

Without ``raid-bench`` (``pip install --no-deps raid-bench==0.2.0``) RAID's side and the
agreement check are skipped with a message (also with ``--without-raid``); veribench's side still runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import pickle
import platform
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from bench_raid_compare import TAGS, make_frame
from bench_tables import yardstick

from veribench.evaluate.comparisons import DetectorInput, compute_comparisons
from veribench.evaluate.grid import CodedTag, GridDetector, compute_grid, unattacked_mask
from veribench.metrics.rates import wilson_arrays
from veribench.metrics.thresholds import flag, threshold_at_fpr_sorted

TARGET = 0.05
#: RAID's ``epsilon`` (``run_evaluation``'s default): the threshold search stops within it.
RAID_EPS = 0.0005
AUROC_BOUND = 1e-12
N_ENTRIES = 10


def raid_frame(sources: int, n_entries: int = N_ENTRIES, seed: int = 0, **kw: Any) -> dict:
    """``make_frame`` plus RAID's id columns: ``id`` a seeded UUID string per row,
    ``source_id`` the human text's id of the row's source, ``adv_source_id`` the id of the
    unattacked row the attacked one derives from (its own id when unattacked)."""
    f = make_frame(sources, n_entries, seed, **kw)
    n = f["label"].size
    rng = np.random.default_rng(seed + 1)
    hi, lo = rng.integers(0, 2**63, n, dtype=np.uint64), rng.integers(0, 2**63, n, dtype=np.uint64)
    ids = np.array([str(uuid.UUID(int=(int(a) << 64) | int(b))) for a, b in zip(hi.tolist(), lo.tolist())],
                   dtype=object)
    n_att = len(set(f["attack"].tolist()))
    per_src = n // (len(set(f["domain"].tolist())) * sources)  # rows per source: (human + 34) x attacks
    row = np.arange(n)
    att = row % n_att
    f["id"] = ids
    f["source_id"] = ids[(row // per_src) * per_src]
    f["adv_source_id"] = ids[row - att]
    return f


def raid_df(frame: dict):
    """The frame as RAID's DataFrame (RAID's column order; NaN in a human text's empty cells)."""
    cols = ["id", "adv_source_id", "source_id", "model", "decoding", "repetition_penalty", "attack", "domain"]
    df = pd.DataFrame({k: frame[k] for k in cols})
    df.loc[df["model"] == "human", ["decoding", "repetition_penalty"]] = np.nan
    return df


def predictions(frame: dict, entry: int = 0) -> list[dict[str, Any]]:
    """RAID's ``predictions.json`` records for one entry, in the board's row order (as RAID's
    ``run_detection`` writes them), passed through JSON so that every id and score is a fresh
    object, as read from a submitted file."""
    return json.loads(json.dumps([{"id": i, "score": s} for i, s in zip(frame["id"].tolist(),
                                                                         frame["scores"][entry].tolist())]))


def align(board_ids: np.ndarray, preds: list[dict[str, Any]]) -> np.ndarray:
    """Scores of the records in the board's row order, by id: one elementwise comparison when
    the records come in the board's order, else a hash index of the board's ids
    (``pandas.Index.get_indexer``, which refuses a board whose ids repeat).

    Raises:
        SystemExit: an unknown, repeated or missing id (named), or a non-finite score.
    """
    n = board_ids.shape[0]
    rec_list = list(map(itemgetter("id"), preds))
    if rec_list == board_ids.tolist():
        pos = np.arange(n)
    else:
        rec_ids = np.array(rec_list, dtype=object)
        pos = pd.Index(board_ids).get_indexer(rec_ids)
        for what, where in (("unknown id", pos < 0), ("repeated id", np.bincount(pos[pos >= 0], minlength=n)[pos] > 1)):
            if where.any():
                raise SystemExit(f"predictions record {int(np.argmax(where))}: {what} {rec_ids[int(np.argmax(where))]!r}")
    score = np.full(n, np.nan)
    score[pos] = np.fromiter(map(itemgetter("score"), preds), dtype=np.float64, count=len(preds))
    if not np.isfinite(score).all():
        raise SystemExit(f"row {int(np.argmin(np.isfinite(score)))}: missing id or non-finite score")
    return score


def board_codes(frame: dict) -> dict[str, Any]:
    """What a board computes once, when it loads its hidden set, for every later submission:
    each grid tag coded (:class:`veribench.evaluate.grid.CodedTag`) and the unattacked mask."""
    return {"tags": {k: CodedTag(frame[k]) for k in TAGS}, "unattacked": unattacked_mask(frame["attack"])}


def veribench_grid(frame: dict, preds: list[dict[str, Any]], tpr_intervals: bool = False,
                   board: dict[str, Any] | None = None) -> dict:
    """veribench's side of the timed work: align the records to the frame by id, then the grid
    (over the board's coded tags, :func:`board_codes`; coded here when not given)."""
    board = board if board is not None else board_codes(frame)
    return compute_grid(board["tags"], frame["label"], [GridDetector("submission", align(frame["id"], preds))],
                        tags=TAGS, threshold_by="domain", unattacked=board["unattacked"],
                        targets=(TARGET,), tpr_intervals=tpr_intervals)


def agreement(frame: dict, grid: dict, raid: dict, entry: int = 0) -> dict[str, Any]:
    """Per cell, veribench's grid against RAID's ``run_evaluation`` result (see the module
    docstring, step 2). Returns counts; ``ok`` is False on any unexplained difference, and
    ``unexplained`` lists up to 10 of them."""
    s = frame["scores"][entry]
    tk = f"{TARGET:g}"
    th = grid["info"]["thresholds"]["submission"][tk]
    t_raid, f_raid = raid["thresholds"][tk], raid["fpr"][tk]
    failed = {g for g, v in f_raid.items() if v - TARGET > RAID_EPS}
    ai = frame["label"] == 1
    dom = frame["domain"][ai]
    sa = s[ai]
    ours_thr = np.array([th[g]["threshold"] if th[g]["reason"] is None else np.nan for g in dom], dtype=np.float64)
    theirs_thr = np.array([t_raid[g] for g in dom], dtype=np.float64)
    # per AI text: +1 flagged by RAID's rule only, -1 by veribench's only
    delta = (sa >= theirs_thr).astype(np.int64) - (sa > ours_thr).astype(np.int64)
    ai_df = pd.DataFrame({t: frame[t][ai] for t in TAGS})
    ai_df["delta"] = delta
    cell_delta: dict[tuple, int] = {}
    for r in range(len(TAGS) + 1):
        for keep in itertools.combinations(TAGS, r):
            if keep:
                sums = ai_df.groupby(list(keep), sort=False)["delta"].sum()
                items = zip(sums.index.tolist(), sums.tolist())
            else:
                items = [((), int(delta.sum()))]
            for key, v in items:
                key = key if isinstance(key, tuple) else (key,)
                kv = dict(zip(keep, key))
                cell_delta[tuple(kv.get(t, "all") for t in TAGS)] = int(v)
    ours = {tuple(r[t] for t in TAGS): r for r in grid["rows"]}
    theirs = {tuple(r[t] for t in TAGS): r for r in raid["scores"]}
    out: dict[str, Any] = {
        "cells_raid": len(theirs), "cells_veribench": len(ours), "same_cells": set(ours) == set(theirs),
        "auroc_bound": AUROC_BOUND, "auroc_max_abs_diff": 0.0, "tpr_equal": 0, "tpr_differs_by_threshold_rule": 0,
        "tpr_max_abs_diff": 0.0, "raid_null_failed_domain": 0, "raid_domain_fpr": f_raid,
        "raid_failed_domains": sorted(failed), "unexplained": []}
    for cell, rr in theirs.items():
        o = ours.get(cell)
        if o is None:
            out["unexplained"].append(f"{cell}: not in veribench's grid")
            continue
        d_auc = abs(rr["auroc"] - o["auroc"])
        out["auroc_max_abs_diff"] = max(out["auroc_max_abs_diff"], d_auc)
        if d_auc > AUROC_BOUND:
            out["unexplained"].append(f"{cell}: AUROC {rr['auroc']!r} vs {o['auroc']!r}")
        acc, e = rr["accuracy"][tk], o["tpr_at_fpr_5"]
        if acc is None:
            doms = set(f_raid) if cell[0] == "all" else {cell[0]}
            if doms & failed:
                out["raid_null_failed_domain"] += 1
            else:
                out["unexplained"].append(f"{cell}: RAID null, no failed domain")
            continue
        if acc["tp"] + acc["fn"] != o["n_ai"] or e["tpr"] is None:
            out["unexplained"].append(f"{cell}: n_ai {acc['tp'] + acc['fn']} vs {o['n_ai']}, veribench TPR {e['tpr']}")
            continue
        tp_ours = round(e["tpr"] * o["n_ai"])
        if acc["tp"] - tp_ours != cell_delta[cell]:
            out["unexplained"].append(f"{cell}: tp {acc['tp']} vs {tp_ours}, rule difference {cell_delta[cell]}")
        elif acc["tp"] == tp_ours:
            out["tpr_equal"] += 1
        else:
            out["tpr_differs_by_threshold_rule"] += 1
            out["tpr_max_abs_diff"] = max(out["tpr_max_abs_diff"], abs(acc["tp"] - tp_ours) / o["n_ai"])
    out["ok"] = out["same_cells"] and not out["unexplained"]
    out["unexplained"] = out["unexplained"][:10]
    return out


def _timed(fn, *args, **kw) -> tuple[Any, float, float]:
    t, c = time.perf_counter(), time.process_time()
    res = fn(*args, **kw)
    return res, time.perf_counter() - t, time.process_time() - c


def paired_tests(frame: dict) -> dict:
    """The paired tests of :data:`N_ENTRIES` entries (module docstring, step 4)."""
    y = frame["label"].astype(np.int64)
    hu = (y == 0) & unattacked_mask(frame["attack"])
    dets = []
    for e in range(frame["scores"].shape[0]):
        s = frame["scores"][e]
        t, _ = threshold_at_fpr_sorted(np.sort(s[hu]), TARGET)
        dets.append(DetectorInput(f"entry{e}", s, flag(s, t)))
    slices = {"all": np.ones(y.size, bool)} | {f"domain={d}": frame["domain"] == d
                                               for d in sorted(set(frame["domain"].tolist()))}
    return compute_comparisons(y, dets, slices)


def _child(side: str, frame_path: str, out_path: str) -> None:
    with open(frame_path, "rb") as f:
        frame = pickle.load(f)
    preds = predictions(frame)
    res: dict[str, Any] = {}
    if side == "raid":
        from raid.evaluate import run_evaluation

        df = raid_df(frame)
        res["result"], res["seconds"], res["cpu_seconds"] = _timed(run_evaluation, preds, df)
    else:
        # once per board, when it loads its hidden set (as RAID's DataFrame is built above, untimed):
        # timed and reported apart
        board, res["board_seconds"], res["board_cpu_seconds"] = _timed(board_codes, frame)
        res["grid"], res["seconds"], res["cpu_seconds"] = _timed(veribench_grid, frame, preds, board=board)
        # the same call again, as a long-running board scores each further submission (the
        # first call above, in a fresh process, is the figure compared with RAID's)
        warm = [_timed(veribench_grid, frame, preds, board=board)[1:] for _ in range(3)]
        res["warm_seconds_median"] = float(np.median([w[0] for w in warm]))
        res["warm_cpu_seconds_median"] = float(np.median([w[1] for w in warm]))
        rows = res["grid"]["rows"]
        k = np.array([0 if r["tpr_at_fpr_5"]["tpr"] is None else round(r["tpr_at_fpr_5"]["tpr"] * r["n_ai"])
                      for r in rows])
        n = np.array([r["n_ai"] for r in rows])
        _, res["wilson_seconds"], res["wilson_cpu_seconds"] = _timed(wilson_arrays, k, n)
        full, res["bootstrap_seconds"], res["bootstrap_cpu_seconds"] = _timed(veribench_grid, frame, preds, True, board)
        res["bootstrap_points_equal"] = all(
            (a["auroc"], a["auroc_ci95"], a["tpr_at_fpr_5"]["tpr"]) == (b["auroc"], b["auroc_ci95"], b["tpr_at_fpr_5"]["tpr"])
            for a, b in zip(rows, full["rows"], strict=True))
        cmp, res["paired_seconds"], res["paired_cpu_seconds"] = _timed(paired_tests, frame)
        res["paired_rows"] = len(cmp["comparisons"])
    res["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with open(out_path, "wb") as f:
        pickle.dump(res, f)


def cpu_model() -> str:
    """lscpu's model name and the highest x86-64 level its flags reach (v2/v3/v4)."""
    try:
        info = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or "unknown"
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    flags = set(fields.get("Flags", "").split())
    level = ("x86-64-v4" if {"avx512f", "avx512bw", "avx512vl"} <= flags else "x86-64-v3" if {"avx2", "fma", "bmi2"}
             <= flags else "x86-64-v2" if "sse4_2" in flags else "x86-64")
    return f"{fields.get('Model name', '?').strip()}, {os.cpu_count()} CPUs, {level}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sources", type=int, default=200, help="sources per domain (200: 672,000 rows)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--without-raid", action="store_true", help="skip RAID's side, as when raid-bench is absent")
    ap.add_argument("--child", choices=["veribench", "raid"], help=argparse.SUPPRESS)
    ap.add_argument("--frame", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child, args.frame, args.out)
        return 0
    have_raid = not args.without_raid and importlib.util.find_spec("raid") is not None
    yard = yardstick()
    frame = raid_frame(args.sources)
    n = frame["label"].size
    print(f"frame: {n:,} rows in RAID's layout (synthetic, seeded), {N_ENTRIES} entries; CPU {cpu_model()}; "
          f"yardstick (sort 2**23 doubles) {yard:.3f} s CPU", flush=True)
    res: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        fp = Path(tmp) / "frame.pkl"
        with open(fp, "wb") as f:
            pickle.dump(frame, f)
        for side in ("veribench", "raid") if have_raid else ("veribench",):
            out = Path(tmp) / f"{side}.pkl"
            subprocess.run([sys.executable, __file__, "--child", side, "--frame", str(fp), "--out", str(out)],
                           check=True)
            with open(out, "rb") as f:
                res[side] = pickle.load(f)
    v = res["veribench"]
    print(f"veribench grid (AUROC + DeLong interval, TPR at 5% FPR; {len(v['grid']['rows']):,} cells): "
          f"{v['cpu_seconds']:.2f} s CPU, {v['seconds']:.2f} s wall (first call in a fresh process); "
          f"peak RSS {v['peak_rss_mib']:.0f} MiB")
    print(f"  the board's tags coded once (at load, not per submission; untimed above): "
          f"{v['board_cpu_seconds']:.2f} s CPU")
    print(f"  again in the same process (median of 3): {v['warm_cpu_seconds_median']:.2f} s CPU, "
          f"{v['warm_seconds_median']:.2f} s wall")
    print(f"  Wilson intervals on every TPR: {v['wilson_cpu_seconds'] * 1000:.1f} ms CPU")
    print(f"  grid with the bootstrap TPR intervals (B = 2000): {v['bootstrap_cpu_seconds']:.2f} s CPU "
          f"({v['bootstrap_seconds']:.2f} s wall); same points: {v['bootstrap_points_equal']}")
    print(f"  paired tests, {N_ENTRIES} entries ({v['paired_rows']:,} comparison rows, Holm, tiers): "
          f"{v['paired_cpu_seconds']:.2f} s CPU ({v['paired_seconds']:.2f} s wall)")
    summary: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": n, "cpu": cpu_model(),
        "yardstick_sort_cpu_s": yard, "load_average": os.getloadavg()[0],
        **{k: round(x, 4) if isinstance(x, float) else x for k, x in v.items() if k != "grid"}}
    rc = 0
    if "raid" in res:
        r = res["raid"]
        cmp = agreement(frame, v["grid"], r["result"])
        print(f"RAID run_evaluation: {r['cpu_seconds']:.1f} s CPU, {r['seconds']:.1f} s wall; "
              f"peak RSS {r['peak_rss_mib']:.0f} MiB")
        print("agreement: " + json.dumps(cmp))
        summary |= {"raid_cpu_s": round(r["cpu_seconds"], 2), "raid_s": round(r["seconds"], 2),
                    "raid_peak_rss_mib": round(r["peak_rss_mib"]), "agreement": cmp}
        if cmp["ok"]:
            ratio = r["cpu_seconds"] / v["cpu_seconds"]
            summary["ratio_cpu"] = round(ratio, 1)
            goal = ratio >= 100 and v["peak_rss_mib"] < 2048
            summary["ratio_cpu_warm"] = round(r["cpu_seconds"] / v["warm_cpu_seconds_median"], 1)
            print(f"RAID / veribench CPU time: {ratio:.0f}x, first call (goal >= 100x, < 2 GiB: "
                  f"{'met' if goal else 'NOT met'}); {summary['ratio_cpu_warm']:.0f}x against the warm median")
        else:
            print("the two sides disagree beyond the stated rules: no ratio reported")
            rc = 1
    else:
        print("RAID's side and the agreement check skipped: " + ("--without-raid" if args.without_raid else
              "raid-bench is not installed (pip install --no-deps raid-bench==0.2.0)"))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
