"""Benchmark: ``veribench import raid`` on a synthetic file the size of RAID's training set
(not a test).

RAID's ``train.csv`` is 11.8 GB (README "Download RAID"). This writes a file in RAID's exact
column layout with that many rows (default 5,600,000) and texts of realistic length (mean
~2,100 characters, quoted, multi-line), then runs the real CLI in a child process and
reports its wall time, its peak RSS (``ru_maxrss`` of the child) and the database size.
The import holds one batch in memory and one transaction in DuckDB (which spills to disk),
so peak memory should not grow with the number of rows.

    .venv/bin/python benchmarks/bench_raid_import.py [--rows 5600000] [--dir /tmp/raid-bench] [--keep]
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np

COLS = ["id", "adv_source_id", "source_id", "model", "decoding", "repetition_penalty", "attack", "domain", "title",
        "prompt", "generation"]
DOMAINS = ["abstracts", "books", "news", "poetry", "recipes", "reddit", "reviews", "wiki"]
MODELS = ["chatgpt", "gpt4", "gpt3", "cohere", "cohere-chat", "gpt2", "llama-chat", "mistral", "mistral-chat", "mpt",
          "mpt-chat"]
ATTACKS = ["none", "alternative_spelling", "article_deletion", "homoglyph", "insert_paragraphs", "number", "paraphrase",
           "perplexity_misspelling", "synonym", "upper_lower", "whitespace", "zero_width_space"]


def write_file(path: Path, rows: int, mean_chars: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    words = np.array("the of and a to in is was for on that with as by at from his her it an were are which this be "
                     "river harbour lantern ledger marble orchard signal copper meadow thunder velvet archive compass "
                     "glacier cinder ribbon pepper willow saddle beacon canyon ember falcon garnet hollow island "
                     "juniper kettle lagoon said would could their there been more when will".split())
    blob = " ".join(words[rng.integers(0, words.size, 12_000_000)]).replace(" the river", ".\n\nThe river")
    lengths = np.clip(rng.lognormal(np.log(mean_chars) - 0.18, 0.6, rows), 40, 20_000).astype(np.int64)
    starts = rng.integers(0, len(blob) - 20_001, rows)
    per_src = 45
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(COLS)
        src = None
        for i in range(rows):
            if i % per_src == 0:
                src = str(uuid.UUID(int=int(rng.integers(0, 2**63)) << 64 | i, version=4))
            k = i % per_src
            rid = str(uuid.UUID(int=(int(rng.integers(0, 2**63)) << 64) | i, version=4))
            human = k == 0
            attack = ATTACKS[(i // per_src) % len(ATTACKS)]
            text = blob[starts[i]: starts[i] + lengths[i]]
            if human:
                w.writerow([rid, rid, src, "human", "", "", attack, DOMAINS[(i // per_src) % 8], f"Title {i // per_src}",
                            "", text])
            else:
                w.writerow([rid, rid, src, MODELS[k % 11], ("greedy", "sampling")[k % 2], ("no", "yes")[(k // 22) % 2],
                            attack, DOMAINS[(i // per_src) % 8], f"Title {i // per_src}",
                            f"Write a story titled \"Title {i // per_src}\":", text])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=5_600_000)
    ap.add_argument("--chars", type=int, default=2_100, help="mean text length in characters")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/raid-bench"))
    ap.add_argument("--keep", action="store_true", help="keep the CSV and the workspace")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    csv_path, ws = args.dir / "train.csv", args.dir / "ws"
    shutil.rmtree(ws, ignore_errors=True)
    if not csv_path.exists():
        t = time.perf_counter()
        write_file(csv_path, args.rows, args.chars)
        print(f"wrote {csv_path} ({csv_path.stat().st_size / 2**30:.2f} GiB) in {time.perf_counter() - t:.0f} s",
              flush=True)
    size = csv_path.stat().st_size
    t, c = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [sys.executable, "-m", "veribench.cli.main", "import", "raid", str(csv_path), "-w", str(ws), "-q",
           "--no-progress"]
    subprocess.run(cmd, check=True, env={**os.environ})
    wall = time.perf_counter() - t
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    db = sum(p.stat().st_size for p in ws.rglob("*") if p.is_file())
    print(f"rows {args.rows:,}; CSV {size / 2**30:.2f} GiB; import {wall:.0f} s wall, "
          f"{r.ru_utime - c.ru_utime + r.ru_stime - c.ru_stime:.0f} s CPU ({args.rows / wall:,.0f} rows/s); "
          f"peak RSS {r.ru_maxrss / 2**20:.2f} GiB; workspace {db / 2**30:.2f} GiB; load average {os.getloadavg()[0]:.1f}")
    if not args.keep:
        shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
