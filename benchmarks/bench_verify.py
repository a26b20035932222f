"""Benchmark: `veribench verify` on both shared HumanizerBench cycles (goal: under 1 s).

Measures the in-process verification (read every file, hash raw bytes, recognise the
frozen algorithms, re-derive the prompts, replay both leaderboards, provenance and
completeness), not the interpreter's start-up. Prints the first (cold) run and the
median of the following runs.

    .venv/bin/python benchmarks/bench_verify.py [PATH] [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

GOAL_S = 1.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("path", nargs="?", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "humanizerbench"))
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()

    t0 = time.perf_counter()
    from veribench.cycles.verify import verify_paths
    t_import = time.perf_counter() - t0

    times, cpu = [], []
    for _ in range(a.runs):
        t, c = time.perf_counter(), time.process_time()
        reports = verify_paths([a.path])
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        assert all(r.ok for r in reports), [r.lines() for r in reports]
    med = statistics.median(times[1:]) if len(times) > 1 else times[0]
    print(f"cycles verified: {', '.join(r.cycle for r in reports)}")
    print(f"import veribench.cycles.verify: {t_import:.3f} s")
    print(f"first run (cold caches): {times[0]:.3f} s")
    print(f"median of next {len(times) - 1} runs: {med:.3f} s (min {min(times[1:] or times):.3f} s)")
    print(f"CPU time of this process per run: median {statistics.median(cpu):.3f} s")
    import os

    print(f"load average while measuring: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"goal < {GOAL_S:.1f} s: {'met' if times[0] < GOAL_S and med < GOAL_S else 'NOT met'}")


if __name__ == "__main__":
    main()
