"""The sample-size check of a protocol against the corpus it selects (run at ``protocol commit``).

A protocol that declares ``[comparisons]`` or ``[[gaps]]`` is checked with
:func:`veribench.metrics.planning.design_warnings` on the texts its evaluation would use:
the headline human texts of the test split (after the protocol's calibration split), per
corpus when the selection spans several (each corpus gets its own Table 1 and its own
comparisons), and the human texts of both groups of each declared FPR gap. A catch-rate gap
is not checked (the planner's rule is stated for false-positive rates).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from veribench.evaluate.groups import corpus_labels
from veribench.evaluate.run import load_documents
from veribench.evaluate.split import split_documents
from veribench.metrics.planning import design_warnings
from veribench.protocol import roles
from veribench.protocol.model import Protocol


def design_check(ws: Any, proto: Protocol) -> list[str]:
    """Warnings (one line each) when the selected corpus is too small for the declared comparisons.

    Returns ``[]`` when the protocol declares neither ``[comparisons]`` nor ``[[gaps]]``, or
    when the corpus is large enough. With no selected document yet, one line says the check
    could not run.
    """
    if proto.comparisons is None and not proto.gaps:
        return []

    docs = load_documents(ws, proto)
    if len(docs) == 0:
        return ["sample-size check: the selection holds no documents yet; import them and run `protocol commit` "
                "again (or `veribench plan`) to check the declared comparisons"]
    rl, calib, _ = split_documents(docs, proto)
    human = ~calib & rl.headline & (rl.code == roles.NEGATIVE_CODE)
    alpha = proto.comparisons.alpha if proto.comparisons is not None else 0.05
    corpus = corpus_labels(docs.corpus)
    names = sorted(set(corpus.tolist()))
    gaps = []
    for g in proto.gaps:
        if g.metric != "fpr":
            continue
        col = np.array([None if v is None else str(v) for v in docs.column(g.slice)], dtype=object)
        gaps.append((f"{g.slice} {g.label_a or g.group_a} vs {g.label_b or g.group_b}",
                     int((human & (col == g.group_a)).sum()), int((human & (col == g.group_b)).sum())))
    if len(names) == 1:
        return design_warnings(int(human.sum()), gaps, alpha=alpha)
    out = [f"corpus {c}: {w}" for c in names for w in design_warnings(int((human & (corpus == c)).sum()), alpha=alpha)]
    return out + [w for w in design_warnings(int(human.sum()), gaps, alpha=alpha) if w.startswith("gap ")]
