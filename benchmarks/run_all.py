"""Run the quick benchmarks one after another (``make bench``); ``--all`` adds the slow ones.

QUICK = ["bench_tables.py", "bench_metrics.py", "bench_verify.py", "bench_import.py", "bench_zeroshot_cpu.py",
         "bench_watermark.py"]  # the watermark round trip is in `make bench` (issue 27): ~30 min wall on 2 busy cores
SLOW = ["bench_raid_compare.py", "bench_leaderboard.py", "bench_report.py", "bench_api.py", "bench_rubric.py",
        "bench_verify_detector.py",
detector-bundle verification on 1M documents (~20 min to build the bundle).
Each script prints its own numbers; record them in ``benchmarks/README.md``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUICK = ["bench_tables.py", "bench_metrics.py", "bench_verify.py", "bench_import.py", "bench_zeroshot_cpu.py",
         "bench_watermark.py"]  # the watermark round trip is in `make bench` (issue 27): ~30 min wall on 2 busy cores
SLOW = ["bench_raid_compare.py", "bench_leaderboard.py", "bench_report.py", "bench_api.py", "bench_rubric.py",
        "bench_verify_detector.py",
        "bench_attacks.py"]


def main() -> int:
    scripts = QUICK + (SLOW if "--all" in sys.argv else [])
    failed = 0
    for s in scripts:
        print(f"== {s}", flush=True)
        failed += subprocess.call([sys.executable, str(HERE / s)]) != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
