"""Synthetic workspace content for report tests (imported by the tests, not a fixture file)."""

from __future__ import annotations

import json

import numpy as np

from veribench.store import writes


def fill_synthetic(ws, n: int = 240, seed: int = 7) -> dict:
    """Documents with writer tags and every label, scored by two detectors (through the store API)."""
    from veribench.hashing import text_sha256
    from veribench.records import ScoreResult
    from veribench.spec import Spec

    rng = np.random.default_rng(seed)
    labels = rng.choice(["human", "ai", "ai-edited-human", "mixed"], size=n, p=[0.5, 0.3, 0.12, 0.08])
    writer = rng.choice(["native", "non-native"], size=n)
    rows = []
    for i in range(n):
        text = f"synthetic text {i} " + "y" * int(rng.integers(1, 40))
        rows.append([f"s{i:04d}", "synth", text, text_sha256(text), labels[i], "B" if labels[i] == "human" else "C",
                     "essay", f"g{i % 3}", json.dumps({"writer": writer[i]}), f"pair{i // 2}",
                     # arm B texts are attested (rule B.attestation, veribench.protocol.arm_rules)
                     json.dumps({"attestation": f"att-{i}"}) if labels[i] == "human" else None, None, None])
    ws.con.executemany("INSERT INTO documents VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    y = np.array([0 if lab == "human" else 1 for lab in labels])
    nn = np.array([1 if w == "non-native" else 0 for w in writer])
    specs = [Spec("detector", "DetA", "v1", {}), Spec("detector", "DetB", "2.0", {"mode": "strict"})]
    for k, s in enumerate(specs):
        p = np.clip(rng.normal(0.3 + 0.35 * y + 0.15 * nn * (1 - y) + 0.05 * k, 0.18), 0, 1)
        writes.put_scores(ws, s, [(r[3], ScoreResult(raw=float(p[i]), ai_probability=float(p[i]))) for i, r in enumerate(rows)],
                      links=[(r[0], r[3]) for r in rows])
    return {"n": n, "labels": labels, "writer": writer, "detectors": [s.name for s in specs]}
