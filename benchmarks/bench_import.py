"""Benchmark (not a test): importing the bundled corpora, and ZipPy throughput.

Usage: python benchmarks/bench_import.py [--liang DIR] [--fdg DIR]
Prints wall time and peak RSS for: liang2023 import (490 essays, 3,430 scores),
fast-detect-gpt example slice import, and ZipPy (lzma/zlib/brotli) over the slice.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--liang", default=str(REPO / "src/veribench/data/demo/liang2023"))
    ap.add_argument("--fdg", default=str(REPO / "src/veribench/data/demo/fastdetectgpt"))
    a = ap.parse_args()
    t0 = time.perf_counter()
    from veribench.corpus.importers import import_fastdetectgpt, import_liang2023
    from veribench.detectors.local.zippy import ZippyDetector
    from veribench.store import Workspace

    print(f"imports: {time.perf_counter() - t0:.2f} s")
    with tempfile.TemporaryDirectory() as d:
        ws = Workspace(Path(d) / "ws")
        t = time.perf_counter()
        r = import_liang2023(ws, a.liang)
        print(f"liang2023: {r.documents} documents, {sum(r.scores.values())} scores in {time.perf_counter() - t:.2f} s")
        t = time.perf_counter()
        r = import_liang2023(ws, a.liang)
        print(f"liang2023 re-import (all already present): {time.perf_counter() - t:.2f} s")
        t = time.perf_counter()
        r = import_fastdetectgpt(ws, a.fdg)
        print(f"fastdetectgpt slice: {r.documents} documents in {time.perf_counter() - t:.2f} s")
        texts = [x for (x,) in ws.query("SELECT text FROM documents WHERE corpus = 'fastdetectgpt'")]
        words = sum(len(x.split()) for x in texts)
        for engine in ("lzma", "zlib", "brotli"):
            det = ZippyDetector(engine=engine)
            det.score_text("warm up the prelude ratio")
            t = time.perf_counter()
            det.score_batch(texts)
            dt = time.perf_counter() - t
            print(f"zippy {engine}: {len(texts)} texts ({words / len(texts):.0f} words avg) in {dt:.2f} s "
                  f"= {1000 * dt / len(texts):.1f} ms/text")
        ws.close()
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
