"""Throughput of the API adapter path (issue 5): score_texts over the fake vendor server.

Measures, on 127.0.0.1 with the test fake (no network):
- calls/s through score_texts + workspace storage (one transaction per call), at
  max_concurrency 1 and 4, with the fake answering instantly or after 50 ms;
- the cost of a fully cached resume (no call sent).

Run: .venv/bin/python benchmarks/bench_api.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "api"))

from vendor_fakes import VENDOR_KEYS, FakeVendors  # noqa: E402

from veribench import registry  # noqa: E402
from veribench.detectors.pipeline import score_texts  # noqa: E402
from veribench.store import Workspace  # noqa: E402


def main(n: int = 200) -> None:
    for v, k in VENDOR_KEYS.items():
        os.environ[f"VERIBENCH_{v.upper()}_API_KEY"] = k
    samples = json.loads((ROOT.parent / "shared/data/humanizerbench/July 2026/samples.json").read_text())
    base = [s["input_text"] for s in samples]
    texts = [f"{i}: {base[i % len(base)]}" for i in range(n)]
    rows = []
    for delay in (0.0, 0.05):
        srv = FakeVendors(delay=delay)
        for conc in (1, 4):
            with tempfile.TemporaryDirectory() as d:
                ws = Workspace(Path(d) / "ws")
                det = registry.create("detector", "winston", {"base_url": srv.url, "rate_per_minute": 0,
                                                              "max_concurrency": conc})
                k = n if delay == 0 else 40
                t0 = time.perf_counter()
                res = score_texts(ws, det, texts[:k])
                dt = time.perf_counter() - t0
                assert len(res) == k
                t1 = time.perf_counter()
                score_texts(ws, det, texts[:k])
                dt_cached = time.perf_counter() - t1
                ws.close()
            rows.append({"server_delay_s": delay, "concurrency": conc, "texts": k,
                         "calls_per_s": round(k / dt, 1), "cached_resume_s": round(dt_cached, 3)})
        srv.close()
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
