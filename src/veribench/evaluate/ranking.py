"""The score the ranking metrics see: the detector's native score, oriented once.

AUROC, TPR at a fixed FPR, ROC curves and fitted thresholds rank texts by one score per
detector. That score is the detector's **native** output (``raw`` on its ``scale``),
multiplied by -1 when its ``direction`` is ``higher_human``, so that higher always means
more likely AI. A derived "AI probability" is never used for ranking unless it *is* the
native output re-expressed: P(AI) can be a non-monotone mapping of the native criterion
(Fast-DetectGPT's two-Gaussian mapping gives 0.9997 to a criterion of -6, case c10), and
ranking on it would change AUROC.

Within one detector every row must be on one scale with one direction; otherwise the
rows are not comparable and the run is refused. The one exception is a detector whose
rows are all on **probability scales** (:data:`PROBABILITY_SCALES`: the vendor's own
output is a probability or percentage of AI or of human, an affine re-expression of
P(AI); e.g. ZeroGPT reports ``fakePercentage`` or, when it is absent, ``isHuman``):
its rows are ranked on that common P(AI).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from veribench.errors import InputError
from veribench.scales import SCALES

#: Scales on which P(AI) is an affine function of the native value, so ranking on P(AI)
#: equals ranking on the native value. Sources: ``veribench.scales.SCALES``
#: (``probability=True``) and the vendor adapters' scales (``veribench.detectors.api.vendors``:
#: ZeroGPT ``ai_percent_0_100`` / ``human_percent_0_100``, Pangram ``fraction_ai``).
PROBABILITY_SCALES: frozenset[str] = frozenset(
    {name for name, s in SCALES.items() if s.probability} | {"ai_percent_0_100", "human_percent_0_100", "fraction_ai"}
)


def ranking_scores(label: str, raw: np.ndarray, p: np.ndarray, scale: np.ndarray, direction: np.ndarray,
                   ok: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
    """The oriented native score of one detector's rows (NaN where not ok or absent).

    Args:
        label: the detector's display name (for the error message).
        raw, p: float arrays (NaN = absent): native value and P(AI).
        scale, direction: object arrays per row (``None`` where no score).
        ok: bool array, the rows with status ``ok``.

    Returns:
        ``(oriented, basis)``: oriented float array (higher = more likely AI) and a
        JSON-ready description ``{"field", "scales", "direction", "note"}`` of the score used.

    Raises:
        InputError: the detector's ok rows are on several scales or directions that are
            not all probability scales (field ``scale``).
    """
    n = len(raw)
    out = np.full(n, np.nan)
    m = np.asarray(ok, dtype=bool)
    scales = sorted({str(s) for s in scale[m] if s is not None})
    dirs = sorted({str(d) for d in direction[m] if d is not None})
    if not m.any():
        return out, {"field": None, "scales": [], "direction": None, "note": "no ok score"}
    if len(scales) <= 1 and len(dirs) <= 1:
        d = dirs[0] if dirs else "higher_ai"
        sign = -1.0 if d == "higher_human" else 1.0
        out[m] = raw[m] * sign
        note = "native value" + (" negated (higher_human)" if sign < 0 else "")
        return out, {"field": "raw", "scales": scales, "direction": d, "note": note}
    if set(scales) <= PROBABILITY_SCALES:
        out[m] = p[m]
        return out, {"field": "ai_probability", "scales": scales, "direction": "higher_ai",
                     "note": "rows on several probability scales: ranked on their common P(AI), an affine "
                             "re-expression of each native value"}
    raise InputError(f"detector {label!r} has scores on {len(scales)} scales ({', '.join(scales)}) or "
                     f"directions ({', '.join(dirs)}); ranking metrics need one native scale per detector: "
                     "store the other rows under another detector name or version", field="scale")
