"""Synthetic detector-benchmark data for the metrics benchmarks (no I/O, seeded).

Rows are documents, each with a subgroup code, a label (1 = AI, 0 = human) and one score
per detector. Detectors differ in strength and in score scale, like real ones:
``d % 3 == 0``: an AI probability in [0, 1]; ``1``: an unbounded statistic (a logit);
``2``: a probability quantised to 2 decimals (many ties, RAID's known failure case).
Subgroups shift the scores a little, so per-subgroup results differ.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SCALES = ("probability", "logit", "quantised probability")


@dataclass
class Synthetic:
    group: np.ndarray  # int32 (n_docs,), 0 .. n_groups-1
    label: np.ndarray  # int8 (n_docs,), 1 = AI
    scores: np.ndarray  # float64 (n_detectors, n_docs), higher = more likely AI
    scale: list[str]  # per detector
    n_groups: int

    @property
    def n_docs(self) -> int:
        return self.label.shape[0]

    @property
    def n_detectors(self) -> int:
        return self.scores.shape[0]


def make_synthetic(n_docs: int = 1_000_000, n_detectors: int = 10, n_groups: int = 10, seed: int = 0) -> Synthetic:
    rng = np.random.default_rng(seed)
    group = rng.integers(0, n_groups, n_docs).astype(np.int32)
    label = (rng.random(n_docs) < 0.5).astype(np.int8)
    scores = np.empty((n_detectors, n_docs))
    scale = []
    for d in range(n_detectors):
        strength = 0.4 + 0.25 * d
        z = rng.standard_normal(n_docs) + label * strength + 0.08 * (group - n_groups / 2)
        kind = d % 3
        if kind == 0:
            scores[d] = 1.0 / (1.0 + np.exp(-z))
        elif kind == 1:
            scores[d] = z * 3.0 - 1.0
        else:
            scores[d] = np.round(1.0 / (1.0 + np.exp(-z)), 2)
        scale.append(SCALES[kind])
    return Synthetic(group, label, scores, scale, n_groups)
