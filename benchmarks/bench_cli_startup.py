"""Wall time of ``veribench --help``, ``veribench score --help`` and ``veribench demo
--no-models`` (an empty folder each run, so a fresh workspace), N runs each, median.

    python benchmarks/bench_cli_startup.py [--runs 5] [--before OLD_SRC] [--with-models] [SRC]

``SRC`` is the ``src/`` folder to time (default: this checkout's); ``--before`` times a
second one in the same minutes, alternating run by run (the machine's load moves both
alike), e.g. ``git archive <commit> src | tar -x -C /tmp/old`` then ``--before
/tmp/old/src``. ``--with-models`` adds the full ``veribench demo`` (SmolLM2; its converted
checkpoint cached beforehand, ``VERIBENCH_CACHE_DIR``). Each run is a new process of the ``veribench`` entry point of the Python
running this script, with ``PYTHONPATH`` set to the source folder.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = (("--help",), ("score", "--help"), ("demo", "--no-models"))


def run_once(src: str, args: tuple[str, ...]) -> float:
    env = {**os.environ, "PYTHONPATH": src, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    code = "import sys\nfrom veribench.cli.main import main\nsys.argv = ['veribench', *sys.argv[1:]]\nmain()\n"
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-c", code, *args], cwd=d, env=env, capture_output=True)
        wall = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({r.returncode}): {r.stderr.decode()[-2000:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", nargs="?", default=str(Path(__file__).resolve().parents[1] / "src"))
    ap.add_argument("--before", help="a second src/ folder, timed alternately")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--with-models", action="store_true", help="also time the full demo (SmolLM2)")
    ap.add_argument("--only-models", action="store_true", help="time the full demo only")
    a = ap.parse_args()
    cases = (("demo",),) if a.only_models else CASES + ((("demo",),) if a.with_models else ())
    trees = {"before": a.before, "after": a.src} if a.before else {"this": a.src}
    for args in cases:
        times: dict[str, list[float]] = {k: [] for k in trees}
        for _ in range(a.runs):
            for k, src in trees.items():
                times[k].append(run_once(src, args))
        for k, ts in times.items():
            print(f"{' '.join(args):<18} {k:<7} median {statistics.median(ts):6.2f} s   runs "
                  + " ".join(f"{x:.2f}" for x in ts) + f"   load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
