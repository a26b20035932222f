"""``benchmarks/bench_leaderboard.py`` (issue 26): on a few thousand rows in RAID's layout,
veribench's per-cell AUROC and TPR at 5% FPR against RAID's own ``run_evaluation`` (PyPI
``raid-bench``, installed with ``--no-deps``; skipped only when it is absent), with a plain
per-cell loop here as the independent reference for the TPR counts, and the benchmark's
agreement check shown to fail on a difference the threshold rules do not explain."""

from __future__ import annotations

import copy
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("bench_leaderboard")
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def case(bench):
    raid_eval = pytest.importorskip("raid.evaluate", reason="raid-bench not installed (pip install --no-deps raid-bench)")
    frame = bench.raid_frame(40, n_entries=3, n_domains=2, n_attacks=2)
    out = {}
    for entry in (0, 2):  # a continuous probability; one rounded to 2 decimals (ties)
        preds = bench.predictions(frame, entry)
        out[entry] = (bench.veribench_grid(frame, preds), raid_eval.run_evaluation(preds, bench.raid_df(frame)))
    return frame, out


def test_frame_has_raids_layout(bench):
    f = bench.raid_frame(3, n_entries=1, n_domains=2, n_attacks=2)
    assert f["label"].size == 2 * 3 * 35 * 2
    assert len(set(f["id"].tolist())) == f["label"].size
    unatt = f["attack"] == "none"
    human = (f["model"] == "human") & unatt
    assert (f["source_id"][human] == f["id"][human]).all()  # an unattacked human text is its own source
    gen = f["model"] != "human"
    assert set(f["source_id"][gen].tolist()) <= set(f["id"][human].tolist())
    assert (f["adv_source_id"][unatt] == f["id"][unatt]).all()
    att = ~unatt
    by_id = {i: k for k, i in enumerate(f["id"].tolist())}
    src = np.array([by_id[i] for i in f["adv_source_id"][att]])
    for t in ("model", "decoding", "repetition_penalty", "domain"):  # the attacked text's unattacked original
        assert (f[t][src] == f[t][att]).all()
    assert (f["attack"][src] == "none").all()
    assert list(bench.raid_df(f).columns) == ["id", "adv_source_id", "source_id", "model", "decoding",
                                              "repetition_penalty", "attack", "domain"]


def test_grid_equals_raids_run_evaluation_per_cell(bench, case):
    frame, out = case
    ai = frame["label"] == 1
    total_equal = 0
    for entry, (grid, raid) in out.items():
        s = frame["scores"][entry]
        cmp = bench.agreement(frame, grid, raid, entry)
        assert cmp["ok"], cmp
        assert cmp["same_cells"] and cmp["cells_raid"] > 500
        assert cmp["auroc_max_abs_diff"] <= 1e-12
        assert cmp["tpr_equal"] + cmp["tpr_differs_by_threshold_rule"] + cmp["raid_null_failed_domain"] == cmp["cells_raid"]
        total_equal += cmp["tpr_equal"]
        # independent reference: every cell's counts by a plain loop over its rows
        th = grid["info"]["thresholds"]["submission"]["0.05"]
        ours = {tuple(r[t] for t in bench.TAGS): r for r in grid["rows"]}
        for rr in raid["scores"]:
            cell = tuple(rr[t] for t in bench.TAGS)
            sel = ai.copy()
            for t, v in zip(bench.TAGS, cell):
                if v != "all":
                    sel &= frame[t] == v
            rows = np.flatnonzero(sel)
            o = ours[cell]
            assert o["n_ai"] == rows.size
            k_ours = sum(int(s[i] > th[frame["domain"][i]]["threshold"]) for i in rows)
            assert o["tpr_at_fpr_5"]["tpr"] == k_ours / rows.size
            acc = rr["accuracy"]["0.05"]
            if acc is not None:
                k_raid = sum(int(s[i] >= raid["thresholds"]["0.05"][frame["domain"][i]]) for i in rows)
                assert acc["tp"] == k_raid
                same_split = all(
                    (s[i] >= raid["thresholds"]["0.05"][frame["domain"][i]]) == (s[i] > th[frame["domain"][i]]["threshold"])
                    for i in rows)
                if same_split:
                    assert acc["tp"] / (acc["tp"] + acc["fn"]) == o["tpr_at_fpr_5"]["tpr"], cell
    assert total_equal > 100


def test_agreement_check_fails_on_an_unexplained_difference(bench, case):
    frame, out = case
    grid, raid = out[2]
    assert bench.agreement(frame, grid, raid, 2)["ok"]
    bad = copy.deepcopy(grid)
    row = next(r for r in bad["rows"] if r["tpr_at_fpr_5"]["tpr"] is not None and r["n_ai"] > 1)
    cell = tuple(row[t] for t in bench.TAGS)
    row["tpr_at_fpr_5"]["tpr"] += 1 / row["n_ai"]
    cmp = bench.agreement(frame, bad, raid, 2)
    assert not cmp["ok"] and str(cell) in cmp["unexplained"][0] and "tp " in cmp["unexplained"][0]
    bad = copy.deepcopy(grid)
    bad["rows"][0]["auroc"] += 1e-9
    cmp = bench.agreement(frame, bad, raid, 2)
    assert not cmp["ok"] and "AUROC" in cmp["unexplained"][0]
    bad_raid = copy.deepcopy(raid)
    rec = next(r for r in bad_raid["scores"] if r["domain"] != "all" and r["accuracy"]["0.05"] is not None)
    if rec["domain"] not in bench.agreement(frame, grid, raid, 2)["raid_failed_domains"]:
        rec["accuracy"]["0.05"] = None
        cmp = bench.agreement(frame, grid, bad_raid, 2)
        assert not cmp["ok"] and "RAID null, no failed domain" in cmp["unexplained"][0]


def test_bench_runs_without_raid_and_says_so(tmp_path):
    """``make bench`` must run where raid-bench is absent: veribench's side runs, RAID's is
    skipped with the reason, and the JSON has veribench's timings and no ratio."""
    out = tmp_path / "b.json"
    r = subprocess.run([sys.executable, str(BENCH / "bench_leaderboard.py"), "--sources", "2", "--without-raid",
                        "--json", str(out)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(BENCH.parent / "src")})
    assert r.returncode == 0, r.stderr
    assert "RAID's side and the agreement check skipped: --without-raid" in r.stdout
    data = json.loads(out.read_text())
    assert data["rows"] == 8 * 2 * 35 * 12 and data["cpu_seconds"] > 0 and data["paired_rows"] == 9 * 3 * 45
    assert data["board_cpu_seconds"] > 0  # the tags coded once per board, timed apart
    assert "ratio_cpu" not in data and "agreement" not in data


def test_board_coded_once_and_records_in_any_order_give_the_same_grid(bench):
    """The board's tags coded once (``board_codes``, what a board computes when it loads its
    hidden set) give the rows of the grid coded per call; records in the board's order (the
    list comparison) and shuffled (the hash index) align to the same scores; an unknown or a
    repeated id is refused with the record named."""
    frame = bench.raid_frame(3, n_entries=1, n_domains=2, n_attacks=2)
    preds = bench.predictions(frame)
    order = np.random.default_rng(0).permutation(len(preds))
    shuffled = [preds[i] for i in order]
    assert bench.align(frame["id"], shuffled).tolist() == bench.align(frame["id"], preds).tolist() \
        == frame["scores"][0].tolist()
    board = bench.board_codes(frame)
    assert bench.veribench_grid(frame, shuffled, board=board)["rows"] == bench.veribench_grid(frame, preds)["rows"]
    with pytest.raises(SystemExit, match="predictions record 4: unknown id 'nope'"):
        bench.align(frame["id"], preds[:4] + [{"id": "nope", "score": 0.5}] + preds[5:])
    with pytest.raises(SystemExit, match="repeated id"):
        bench.align(frame["id"], preds[:-1] + [preds[0]])
