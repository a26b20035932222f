"""The calibration split: deterministic, by a hash of the document id.

Rule (Tool Benchmarks methodology, ``shared/spec/004``): one in ``every`` (default 5)
human texts, chosen by a hash of its id, goes into the calibration split together
with every AI text written from the same prompt or topic (same ``group_key``). AI
texts with no group key shared with a human text are split by the hash of their own
id at the same rate. Everything else is the test split.

The hash is ``int(sha256(salt + "\\x00" + id)[:16], 16) % every == 0``.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np


def hash_bucket(ids: Sequence[str], every: int, salt: str) -> np.ndarray:
    """Boolean array: True where ``sha256(salt NUL id)`` falls in bucket 0 of ``every``."""
    pre = salt.encode("utf-8") + b"\x00"
    return np.fromiter(
        (int(hashlib.sha256(pre + str(i).encode("utf-8")).hexdigest()[:16], 16) % every == 0 for i in ids),
        dtype=bool, count=len(ids),
    )


def calibration_mask(
    ids: Sequence[str],
    is_human: np.ndarray,
    group_keys: Sequence[str | None],
    *,
    every: int = 5,
    salt: str = "veribench-split-v1",
    eligible: np.ndarray | None = None,
) -> np.ndarray:
    """Which documents go to the calibration split (True) rather than the test split.

    Args:
        ids: document ids, length n.
        is_human: bool array, length n (label == "human").
        group_keys: prompt/topic group per document (None when unknown).
        every: 1 in ``every`` human texts is drawn.
        salt: hash salt recorded in the protocol.
        eligible: optional bool mask of documents the split applies to (others are test).

    Returns:
        bool array of length n.
    """
    n = len(ids)
    is_human = np.asarray(is_human, dtype=bool)
    elig = np.ones(n, dtype=bool) if eligible is None else np.asarray(eligible, dtype=bool)
    drawn = hash_bucket(ids, every, salt) & elig
    calib = drawn & is_human
    calib_groups = {g for g, c in zip(group_keys, calib) if c and g is not None}
    human_groups = {g for g, h, e in zip(group_keys, is_human, elig) if h and e and g is not None}
    for i in range(n):
        if is_human[i] or not elig[i]:
            continue
        g = group_keys[i]
        if g is not None and g in human_groups:
            calib[i] = g in calib_groups
        else:
            calib[i] = drawn[i]
    return calib
