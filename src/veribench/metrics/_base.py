"""Shared pieces of the metrics layer: the warning class, label encoding, input checks.

Conventions (one place for all metric functions):

* ``y_true``: 1 = AI text (the positive class), 0 = human text. Booleans, 0/1 integers or
  floats, and the corpus label strings are accepted; see :func:`as_binary`.
* ``y_score``: a real number per text, oriented so that **higher means more likely AI**
  (an AI probability in [0, 1], a logit, a raw statistic ...). Only the ranking matters for
  AUROC and TPR at fixed FPR; thresholds are expressed on the scale given.
* Non-finite scores (NaN, +-inf) are never coerced: callers drop them (and report which
  ids they dropped) with :func:`drop_nonfinite`; the metric functions raise ``ValueError``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from veribench.labels import NEGATIVE_LABELS, POSITIVE_LABELS, SIDE_LABELS


class UndefinedMetricWarning(UserWarning):
    """A metric is undefined for this input (one class missing, n = 0, a target FPR that
    cannot be reached ...). The function returns NaN or ``None`` with a reason instead of
    raising."""


def warn_undefined(message: str, stacklevel: int = 3) -> None:
    warnings.warn(message, UndefinedMetricWarning, stacklevel=stacklevel)


def as_binary(y: Any, pos_label: Any = None, *, name: str = "y_true") -> np.ndarray:
    """Encode labels as an ``int8`` array of 0 (human) / 1 (AI).

    Args:
        y: 1-D array-like. Accepted encodings:
           booleans (True = AI); numbers that are all 0 or 1 (1 = AI); corpus label strings,
           read through the label-role table :data:`veribench.labels.LABEL_ROLES`
           (``ai`` -> 1, ``human`` -> 0; the side labels ``ai-edited-human`` and ``mixed``
           are refused: they are reported on their own rows, never as a class);
           or anything at all when ``pos_label`` is given (``y == pos_label`` -> 1).
        pos_label: the value that means AI, overriding the rules above.
        name: argument name used in error messages.

    Returns:
        ``np.ndarray`` of dtype int8, same length as ``y``.

    Raises:
        ValueError: not 1-D, or values outside the accepted encoding (the message lists them).
    """
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if pos_label is not None:
        hit: np.ndarray = arr == pos_label  # elementwise on a 1-D array
        return hit.astype(np.int8)
    if arr.dtype == bool:
        return arr.astype(np.int8)
    if arr.dtype.kind in "iuf":
        if arr.size and not np.all((arr == 0) | (arr == 1)):
            bad = np.unique(arr[(arr != 0) & (arr != 1)])[:5]
            raise ValueError(f"{name} must hold 0 (human) or 1 (AI); found {bad.tolist()}")
        return arr.astype(np.int8)
    if arr.dtype.kind in "USO":
        s = arr.astype(str)
        pos = np.isin(s, POSITIVE_LABELS)
        neg = np.isin(s, NEGATIVE_LABELS)
        if not np.all(pos | neg):
            bad = np.unique(s[~(pos | neg)])[:5]
            side = [b for b in bad.tolist() if b in SIDE_LABELS]
            why = (f"side labels {side} are reported on their own rows, never as a class; "
                   if side else "")
            raise ValueError(
                f"{name}: labels {bad.tolist()} are neither AI {list(POSITIVE_LABELS)} nor human "
                f"{list(NEGATIVE_LABELS)}; {why}pass pos_label=, or select the headline labels first"
            )
        return pos.astype(np.int8)
    raise ValueError(f"{name}: cannot read labels of dtype {arr.dtype}")


def as_scores(y_score: Any, *, name: str = "y_score") -> np.ndarray:
    """Scores as a finite 1-D float64 array (higher = more likely AI).

    Raises:
        ValueError: not 1-D, not numeric, or any NaN / +-inf (the message gives how many and
            the first positions; drop them first with :func:`drop_nonfinite`).
    """
    try:
        arr = np.asarray(y_score, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric: {exc}") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    finite = np.isfinite(arr)
    if not finite.all():
        where = np.flatnonzero(~finite)
        raise ValueError(
            f"{name} holds {where.size} non-finite value(s) (NaN or infinity) at positions "
            f"{where[:10].tolist()}{' ...' if where.size > 10 else ''}; drop those rows first "
            "(veribench.metrics.drop_nonfinite) and report them - they are never coerced to a number"
        )
    return arr


def check_pair(y_true: Any, y_score: Any, pos_label: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Validate and encode a (labels, scores) pair of equal length."""
    y = as_binary(y_true, pos_label)
    s = as_scores(y_score)
    if y.shape[0] != s.shape[0]:
        raise ValueError(f"y_true has {y.shape[0]} rows but y_score has {s.shape[0]}")
    return y, s


def drop_nonfinite(*arrays: Any, scores: Any) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Remove the rows whose score is NaN or infinite.

    Args:
        *arrays: other per-row arrays (labels, ids, group codes) to filter alike.
        scores: the per-row scores.

    Returns:
        ``(filtered_arrays, filtered_scores, dropped_positions)``; ``dropped_positions`` are
        0-based row positions in the input, for the caller's report.
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"scores must be 1-D, got shape {s.shape}")
    for a in arrays:
        if len(a) != s.shape[0]:
            raise ValueError(f"array of length {len(a)} does not match {s.shape[0]} scores")
    keep = np.isfinite(s)
    out = [np.asarray(a)[keep] for a in arrays]
    return out, s[keep], np.flatnonzero(~keep)
