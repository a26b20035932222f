"""Benchmark: every rule-based attack, and the paraphrase attack's dry run, on 1 MB of text.

Texts (built from the real human texts bundled with the package: the Liang et al. 2023
essays and the Fast-DetectGPT pairs, repeated until the size is reached):

- ``prose``: the texts as they are, joined by blank lines;
- ``one line``: the same words with every punctuation mark removed and all whitespace
  collapsed into single spaces (one line without a sentence end: the case of issue 24,
  where ``insert_paragraphs`` took 19 s at 92 KB and more than 300 s at 1.15 MB);
- ``flat``: the prose with whitespace collapsed (one line with punctuation, which is what
  the paraphraser splits into windows).

Times are CPU seconds of the calling process (``time.process_time``), the median of
``--repeat`` runs, each with the memo of sentence splits emptied first. The yardstick is a fixed, same-machine workload: pysbd on one real 20 KB text
(its own quadratic cost on 20 KB is small) and a pure-Python loop, so numbers taken on a
loaded or different machine can be compared. Goal (issue 24): every rule-based attack and
the paraphrase dry run under 5 s on 1 MB.

``--diff`` adds the edits of a real paraphrase (``veribench.corpus.edits.diff_edits``): each
text against a seeded synthetic rewrite of it (30% of its words replaced by other words of
the text, ``synthetic_paraphrase``), CPU seconds and the characters the edits change.

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/bench_attacks.py [--mb 1.0] [--repeat 3] [--only NAME]``
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import re
import statistics
import time
from pathlib import Path

from veribench.attacks import base
from veribench.attacks.paraphrase import Paraphrase
from veribench.corpus import edits
from veribench.corpus.edits import apply_edits, diff_edits
from veribench.detectors.pipeline import RunStats

DEMO = Path(__file__).resolve().parents[1] / "src" / "veribench" / "data" / "demo"
RULES = ("homoglyph", "number", "article_deletion", "insert_paragraphs", "upper_lower", "whitespace",
         "zero_width_space", "alternative_spelling")


def real_texts() -> list[str]:
    out: list[str] = []
    for p in sorted((DEMO / "fastdetectgpt").glob("*.raw_data.json")):
        out += json.loads(p.read_text(encoding="utf-8"))["original"]
    for p in sorted((DEMO / "liang2023" / "Human_Data").glob("*/data.json")):
        out += [x["document"] for x in json.loads(p.read_text(encoding="utf-8"))]
    return [t for t in out if t.strip()]


def build(size: int) -> dict[str, str]:
    texts = real_texts()
    parts, n, i = [], 0, 0
    while n < size:
        t = texts[i % len(texts)]
        parts.append(t)
        n += len(t) + 2
        i += 1
    prose = "\n\n".join(parts)[:size]
    one_line = " ".join(re.sub(r"[^\w\s]", "", prose).split())[:size]
    flat = " ".join(prose.split())[:size]
    return {"prose": prose, "one line": one_line, "flat": flat}


def synthetic_paraphrase(text: str, seed: int = 0) -> str:
    """``text`` with 30% of its space-separated words replaced by random words of it (seeded)."""
    words = text.split(" ")
    rng = random.Random(seed)
    return " ".join(w if rng.random() > 0.3 else rng.choice(words) for w in words)


def cpu(fn) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def yardstick() -> dict[str, float]:
    import pysbd

    text = " ".join(real_texts())[:20_000]
    seg = pysbd.Segmenter(language="en", clean=False)
    out = {"pysbd_20kb_s": cpu(lambda: seg.segment(text))}
    out["python_loop_10M_s"] = cpu(lambda: sum(i * i for i in range(10_000_000)))
    return {k: round(v, 3) for k, v in out.items()}


def fresh(text: str) -> str:
    """The text, with the memo of sentence splits emptied (it keys on equal strings)."""
    edits._sentence_spans.cache_clear()
    return text


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default=None)
    ap.add_argument("--diff", action="store_true", help="also time diff_edits against a synthetic paraphrase")
    a = ap.parse_args()
    size = int(a.mb * 1_000_000)
    texts = build(size)
    print(json.dumps({"python": platform.python_version(), "machine": platform.machine(), "chars": size,
                      "yardstick": yardstick()}))
    names = [n for n in (*RULES, "paraphrase --dry-run") if a.only in (None, n)]
    for name in names:
        row: dict[str, object] = {"attack": name}
        for kind, text in texts.items():
            runs = []
            for r in range(a.repeat):
                t = fresh(text)
                if name.startswith("paraphrase"):
                    atk = Paraphrase(base_url="http://127.0.0.1:9/v1", model="bench")
                    # as `veribench attack paraphrase --dry-run`: the plan (windows, cost) is built
                    st = RunStats()
                    runs.append(cpu(lambda t=t, atk=atk, st=st: atk.run([t], [0], dry_run=True, stats=st)))
                    assert st.planned and st.planned[0]["request"]["calls"] >= 1
                else:
                    atk = base.create(name)
                    runs.append(cpu(lambda t=t, atk=atk, r=r: atk.apply(t, seed=r)))
            row[kind] = round(statistics.median(runs), 2)
        print(json.dumps(row), flush=True)
    if a.diff:
        row = {"attack": "paraphrase diff_edits"}
        for kind, text in texts.items():
            out = synthetic_paraphrase(text)
            got: list = []
            row[kind] = round(cpu(lambda text=text, out=out, got=got: got.append(diff_edits(text, out))), 2)
            assert apply_edits(text, got[0]) == out
            row[f"{kind} changed chars"] = sum(t - s for s, t, _ in got[0])
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
