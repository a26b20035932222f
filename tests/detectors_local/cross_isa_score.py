"""Scores a few real texts with SmolLM2-135M in this process and prints them as JSON:
run by ``test_tolerance.py`` once per ATen CPU kernel level (``ATEN_CPU_CAPABILITY``, read
by PyTorch at import, hence a process each), once per thread count in argv[1] ("1,2").

Prints ``{threads: {"scores": {statistic: [raw, ...]}, "tokens": [...], "vocab": int,
"engine": detail["engine"] of the first result}}``.
"""

from __future__ import annotations

import json
import sys

import torch

from veribench.detectors.local import zeroshot as zs
from veribench.detectors.local.engine.memo import MEMO
from veribench.detectors.local.models import load_causal_lm

TEXTS = ["Short.", "The court heard the case on Monday.", sys.argv[2], sys.argv[3]]


def main() -> None:
    out = {}
    for n in sys.argv[1].split(","):
        torch.set_num_threads(int(n))
        MEMO.clear()  # every thread count runs its own passes
        dets = [zs.ZeroShotDetector(s, model="smollm2", max_tokens=200, device="cpu", dtype="float32")
                for s in ("loglik", "entropy")]
        dets.append(zs.FastDetectGPT(model="smollm2", max_tokens=200, device="cpu", dtype="float32"))
        res = {d.spec.name: d.score_batch(TEXTS) for d in dets}
        first = res["loglik"]
        vocab = load_causal_lm("smollm2", device="cpu", dtype="float32").model.config.vocab_size
        out[n] = {"scores": {k: [r.raw for r in v] for k, v in res.items()},
                  "tokens": [r.detail["tokens_used"] for r in first], "vocab": vocab,
                  "engine": first[0].detail["engine"]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
