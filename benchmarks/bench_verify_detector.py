"""Benchmark: `veribench verify` on a 1,000,000-document detector-run bundle (goal: under 60 s).

Builds a real bundle the way a user would, through veribench's own APIs: a protocol is
committed first (hash split, one fixed and one fitted decision rule), then 1,000,000
documents (one in ten fingerprint-only) and two detectors' scores are imported, the run
is evaluated and `publish`ed. The verification is then timed in a fresh interpreter
(`veribench verify DIR`, the CLI a reader runs), with its peak RSS, so nothing built or
cached by the setup is reused.

    .venv/bin/python benchmarks/bench_verify_detector.py [--docs 1000000] [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_S = 60.0

PROTOCOL = """[protocol]
name = "bench-1m"
tag = "BENCH-1M"

[split]
rule = "hash"
every = 5
salt = "bench"

[tables]
slices = ["subgroup", "arm"]

[[detectors]]
name = "SynthProb"
rule = { field = "ai_probability", op = ">", threshold = 0.5, source = "benchmark" }

[[detectors]]
name = "SynthStat"
rule = { fit = "best_balanced_accuracy" }
"""


def build(work: Path, n: int) -> Path:
    import numpy as np

    from veribench.bundles.publish import publish
    from veribench.commit import commit
    from veribench.corpus.document import Document
    from veribench.corpus.importers._store import ScoreBatch, store_import
    from veribench.corpus.report import ImportReport
    from veribench.evaluate import evaluate_workspace
    from veribench.hashing import text_sha256
    from veribench.protocol.model import load_protocol
    from veribench.records import ScoreResult
    from veribench.spec import Spec
    from veribench.store import Workspace

    rng = np.random.default_rng(0)
    proto = work / "bench.toml"
    proto.write_text(PROTOCOL)
    t0 = time.perf_counter()
    ws = Workspace(work / "ws")
    commit(ws, proto)
    label = rng.random(n) < 0.5
    sub = rng.integers(0, 10, n)
    docs = []
    for i in range(n):
        text = f"Synthetic document {i} about topic {i % 997}: " + "lorem ipsum " * int(3 + i % 5)
        lab = "ai" if label[i] else "human"
        if i % 10 == 0:
            docs.append(Document(id=f"doc{i:07d}", text_sha256=text_sha256(text), label=lab, subgroup=f"g{sub[i]}",
                                 arm="C" if label[i] else "A", group_key=f"topic{i % 997}",
                                 provenance={"fingerprint_only": True}))
        else:
            docs.append(Document(id=f"doc{i:07d}", text=text, label=lab, subgroup=f"g{sub[i]}",
                                 arm="C" if label[i] else "A", group_key=f"topic{i % 997}"))
    t1 = time.perf_counter()
    z = rng.standard_normal(n) + label * 1.2
    p = 1 / (1 + np.exp(-z))
    b1, b2 = ScoreBatch(spec=Spec("detector", "SynthProb", "1")), ScoreBatch(spec=Spec("detector", "SynthStat", "1"))
    for i, d in enumerate(docs):
        b1.items.append((d.text_sha256, ScoreResult(raw=float(p[i]), ai_probability=float(p[i]))))
        b1.links.append((d.id, d.text_sha256))
        st = "ok" if i % 101 else "too_short"
        b2.items.append((d.text_sha256, ScoreResult(status=st, raw=float(z[i] * 3) if st == "ok" else None,
                                                    scale="stat", ai_probability=None)))
        b2.links.append((d.id, d.text_sha256))
    store_import(ws, ImportReport(kind="jsonl", source="bench.jsonl", corpus="bench"), docs, [b1, b2])
    del docs, b1, b2
    t2 = time.perf_counter()
    evaluate_workspace(ws, load_protocol(proto))
    t3 = time.perf_counter()
    out = work / "bundle"
    publish(ws, "BENCH-1M", out)
    t4 = time.perf_counter()
    ws.close()
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"setup: documents built {t1 - t0:.1f} s, import {t2 - t1:.1f} s, evaluate {t3 - t2:.1f} s, "
          f"publish {t4 - t3:.1f} s; bundle {size / 2**20:.0f} MiB")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the workspace and bundle")
    ap.add_argument("--bundle", type=Path, default=None, help="time an existing bundle instead of building one")
    a = ap.parse_args()
    work = a.workdir or Path(tempfile.mkdtemp(prefix="vb-bench-verify-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        bundle = a.bundle or build(work, a.docs)
        # the CLI in a fresh interpreter that reports its own peak RSS (a child forked from this
        # process would count the builder's pages too)
        wrapper = ("import resource, sys\nfrom veribench.cli.main import app\ntry:\n    app(['verify', sys.argv[1]])\n"
                   "except SystemExit as e:\n    code = e.code\nelse:\n    code = 0\n"
                   "print(f'PEAK_RSS_KB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}', file=sys.stderr)\n"
                   "sys.exit(code)\n")
        t = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = subprocess.run([sys.executable, "-c", wrapper, str(bundle)], capture_output=True, text=True, env=os.environ)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(r.stdout[-3000:])
        if r.returncode != 0:
            print(r.stderr[-3000:])
            raise SystemExit(f"verification failed (exit {r.returncode})")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        rss = next((int(x.split()[1]) for x in r.stderr.splitlines() if x.startswith("PEAK_RSS_KB")), 0)
        print(f"verify: wall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {rss / 2**20:.2f} GiB "
              f"(interpreter start included)")
        print(f"load average while measuring: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
        print(f"goal < {GOAL_S:.0f} s: {'met' if wall < GOAL_S else 'NOT met'}")
    finally:
        if not a.keep and a.workdir is None and a.bundle is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
