"""DetectGPT's cost model, measured: per-text seconds of the mask fill and of the scoring passes.

Per text, DetectGPT (``veribench.detectors.local.detectgpt``) runs one mask-model
``generate`` of ``n_perturbations`` sequences (more on a retry round) and 1 +
``n_perturbations`` scoring passes (the base pass shared with ``loglik`` through the
engine memo). This script measures both parts separately on this machine:

- mask fill: a tiny random T5 (1 layer, 16 dims, word-level vocabulary; the tests'
  ``build_tiny_t5``), ``mask_max_length`` 150 as upstream: the time is generate's
  per-step overhead, not T5-large's arithmetic, and says nothing of T5-large;
- scoring: the real SmolLM2-135M (``--model smollm2``, offline) or a random GPT-2
  (``--model random``), through the engine, on the perturbed texts.

It prints one JSON object: texts, words per text, perturbations, seconds (wall and CPU)
of each part per text, the scoring model's forwarded texts (engine counters), and the
load average before and after (a shared machine: read CPU seconds).

Usage: python benchmarks/bench_detectgpt.py [--model smollm2|random] [--texts 4] [--perturbations 10]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

TEXT = ("the night baker counted forty jars of plum jam because the mayor was visiting the town on a cold "
        "morning and every shop on the square had to look its best before noon while two cousins from the "
        "valley repainted the old bell above the chapel door and their uncle told stories about the river")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2", help="scoring model: smollm2 (real, offline) or random")
    ap.add_argument("--texts", type=int, default=4)
    ap.add_argument("--perturbations", type=int, default=10)
    a = ap.parse_args()

    from bench_zeroshot_cpu import build_random

    from tests.detectors_local.conftest import build_tiny_t5
    from veribench.detectors.local.detectgpt import DetectGPT
    from veribench.detectors.local.engine.memo import STATS

    words = TEXT.split(" ")
    texts = [" ".join(words[i:] + words[:i]) for i in range(a.texts)]  # same length, different texts
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        t5 = build_tiny_t5(Path(tmp) / "t5", texts)
        model = a.model if a.model != "random" else build_random(Path(tmp) / "gpt2", texts)
        det = DetectGPT(model=model, mask_model=t5, n_perturbations=a.perturbations, device="cpu")
        det.perturb(texts[0])  # load the mask model (not timed)
        det._lm(det.model)  # load the scoring model (not timed)
        w0, c0 = time.perf_counter(), time.process_time()
        rounds = [det.perturb(t)[1] for t in texts]
        w1, c1 = time.perf_counter(), time.process_time()
        res = det.score_batch(texts)  # perturbations again (seeded: the same) + scoring
        w2, c2 = time.perf_counter(), time.process_time()
    fill_w, fill_c = (w1 - w0) / len(texts), (c1 - c0) / len(texts)
    score_w, score_c = (w2 - w1) / len(texts) - fill_w, (c2 - c1) / len(texts) - fill_c
    print(json.dumps({
        "texts": len(texts), "words_per_text": len(words), "n_perturbations": a.perturbations,
        "mask_model": "tiny random T5 (1 layer, 16 dims), mask_max_length 150", "scoring_model": a.model,
        "mask_rounds": rounds, "ok": sum(r.status == "ok" for r in res),
        "per_text_s": {"mask_fill_wall": round(fill_w, 3), "mask_fill_cpu": round(fill_c, 3),
                       "scoring_wall": round(score_w, 3), "scoring_cpu": round(score_c, 3)},
        "scoring_texts_forwarded": sum(STATS.texts_forwarded.values()),
        "loadavg_before": load0, "loadavg_after": os.getloadavg(), "cpus": os.cpu_count(),
    }, indent=2))


if __name__ == "__main__":
    main()
