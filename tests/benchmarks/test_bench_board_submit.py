"""``benchmarks/bench_board_submit.py`` (issue 26): the board's submission path timed end to end
on a tiny board (seconds); its checks against scikit-learn and the receipts hold, and it
refuses to print a figure when a headline disagrees."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    with pytest.MonkeyPatch.context() as mp:  # benchmarks/ on sys.path only while this module runs
        mp.syspath_prepend(str(BENCH))
        yield importlib.import_module("bench_board_submit")


def test_layout_is_raids_by_position(bench):
    """One source = the human text and 34 generations, each in 12 attack variants (420 rows);
    1/35 of the texts human; sources cycle through the 8 domains."""
    rows = [bench.layout(i) for i in range(420 * 8)]
    assert sum(r[0] == "human" for r in rows) == 8 * 12
    assert {r[1] for r in rows} == set(bench.DOMAINS) and {r[3] for r in rows} == set(bench.ATTACKS)
    assert all((r[0] == "human") == (r[2] == "human") for r in rows)
    assert [r[1] for r in rows[:420]] == ["abstracts"] * 420 and rows[420][1] == "books"


def test_bench_runs_checks_and_reports(tmp_path):
    """A run at 1,200 texts (36 human) with 2 canaries: launch, three submissions, reveal and the profile;
    every receipt verifies and each headline equals scikit-learn's AUROC recomputed here from
    the kept board's files (its own loop over texts.jsonl, not the bench's)."""
    out = tmp_path / "b.json"
    keep = tmp_path / "boards"
    r = subprocess.run([sys.executable, str(BENCH / "bench_board_submit.py"), "--sizes", "1200", "--canaries", "2",
                        "--profile", "5", "--profile-size", "1200", "--json", str(out), "--keep", str(keep)],
                       capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(BENCH.parent / "src")})
    assert r.returncode == 0, r.stderr
    (run,) = json.loads(out.read_text())["runs"]
    assert run["receipts_verified"] == 3 and run["revealed_labels_match_layout"] is True
    for k in ("launch", "open", "submit_1", "submit_2", "submit_3", "reveal", "profile"):
        assert run[k]["cpu_s"] > 0 and run[k]["wall_s"] > 0 and run[k]["peak_rss_mib"] > 0, k
    assert "cumulative" in run["profile_text"] and "submit" in run["profile_text"]
    assert "submission 3 (warm)" in r.stdout and "ladder.json and labels agree" in r.stdout
    # the reference: the revealed labels (hidden_set.jsonl, canaries left out) and each file's scores
    folder = keep / "n1200"
    hidden = [json.loads(x) for x in (folder / "reveal" / "hidden_set.jsonl").read_text().splitlines()]
    assert len(hidden) == 1202 and sum(h["canary_of"] is not None for h in hidden) == 2
    plain = [h for h in hidden if h["canary_of"] is None]
    assert len(run["headlines"]) == 3 and len(run["ladder_headlines"]) == 4  # the 4th: the profiled submission
    for seed, lad in zip((1, 2, 3, 4), run["ladder_headlines"], strict=True):
        sc = {x["id"]: x["score"] for x in json.loads((folder / f"predictions-{seed}.json").read_text())}
        want = roc_auc_score(np.array([h["label"] == "ai" for h in plain]), [sc[h["doc_id"]] for h in plain])
        assert abs(lad - want) <= 1e-12 and 0.5 < want < 1.0
        if seed <= 3:
            assert abs(run["headlines"][seed - 1] - want) <= 1e-12


def test_bench_refuses_a_headline_that_disagrees(bench, tmp_path, monkeypatch):
    """When the board's headline and scikit-learn's AUROC differ beyond 1e-12 the run exits
    with the difference named, before any figure is printed."""
    monkeypatch.setattr(bench, "sklearn_auroc", lambda folder, seed: 0.25)
    monkeypatch.setenv("PYTHONPATH", str(BENCH.parent / "src"))
    args = bench.argparse.Namespace(canaries=0, keep=None)
    with pytest.raises(SystemExit, match="headline differs from scikit-learn's AUROC beyond 1e-12"):
        bench.bench_size(1200, args, tmp_path, reveal=False, profile=0)
