"""The calibration split: whole groups, by a hash of the group key.

Rule (after the Tool Benchmarks methodology, ``docs/spec/004``: "one in five human texts,
chosen by a hash of its id, goes into the calibration split together with every AI text
written from its prompt"): every document belongs to a **group**, its ``group_key`` (the
prompt or topic it was written from), or, when it has none, its own id. A group goes to
the calibration split when ``int(sha256(salt NUL group)[:16], 16) % every == 0``;
every member of the group goes with it, so no group has members on both sides (a
prompt's human texts and its AI texts are never split apart). Documents outside the
split's corpora are all test.

Because whole groups move, the share of human texts that lands in calibration is close
to, but not exactly, 1 in ``every``: :func:`split_summary` records the achieved share.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np


def hash_bucket(ids: Sequence[str], every: int, salt: str) -> np.ndarray:
    """Boolean array: True where ``sha256(salt NUL id)`` falls in bucket 0 of ``every``."""
    pre = salt.encode("utf-8") + b"\x00"
    return np.fromiter(
        (int(hashlib.sha256(pre + str(i).encode("utf-8")).hexdigest()[:16], 16) % every == 0 for i in ids),
        dtype=bool, count=len(ids),
    )


def group_of(ids: Sequence[str], group_keys: Sequence[str | None]) -> list[str]:
    """Each document's split group: its group key, or its own id when it has none."""
    return [str(g) if g is not None and str(g) != "" else str(i) for i, g in zip(ids, group_keys)]


def calibration_mask(
    ids: Sequence[str],
    is_human: np.ndarray | None,
    group_keys: Sequence[str | None],
    *,
    every: int = 5,
    salt: str = "veribench-split-v1",
    eligible: np.ndarray | None = None,
) -> np.ndarray:
    """Which documents go to the calibration split (True) rather than the test split.

    Args:
        ids: document ids, length n.
        is_human: unused by the rule (kept for callers; the share is reported by
            :func:`split_summary`).
        group_keys: prompt/topic group per document (``None``: the document is its own group).
        every: 1 in ``every`` groups is drawn (``every >= 2``).
        salt: hash salt recorded in the protocol.
        eligible: optional bool mask of documents the split applies to (others are test).

    Returns:
        bool array of length n; members of one group (among eligible documents) always
        share a value.

    Raises:
        ValueError: ``every < 2`` or lengths differ.
    """
    n = len(ids)
    if every < 2:
        raise ValueError(f"every must be at least 2, got {every}")
    if len(group_keys) != n:
        raise ValueError(f"{len(group_keys)} group keys for {n} documents")
    elig = np.ones(n, dtype=bool) if eligible is None else np.asarray(eligible, dtype=bool)
    groups = group_of(ids, group_keys)
    uniq, inv = np.unique(np.array(groups, dtype=object).astype(str), return_inverse=True)
    drawn = hash_bucket(list(uniq), every, salt)
    calib: np.ndarray = drawn[inv] & elig
    return calib


def split_summary(calib: np.ndarray, is_human: np.ndarray, ids: Sequence[str], group_keys: Sequence[str | None],
                  eligible: np.ndarray | None = None) -> dict[str, Any]:
    """Achieved shares of a split: counts, and the shares of human texts and groups in calibration.

    Returns ``{"calibration_n", "test_n", "calibration_human_n", "eligible_human_n",
    "achieved_human_share", "calibration_groups", "eligible_groups", "achieved_group_share",
    "groups_on_both_sides"}``; shares are ``None`` when nothing is eligible.
    """
    calib = np.asarray(calib, dtype=bool)
    is_human = np.asarray(is_human, dtype=bool)
    n = len(ids)
    elig = np.ones(n, dtype=bool) if eligible is None else np.asarray(eligible, dtype=bool)
    groups = np.array(group_of(ids, group_keys), dtype=object)
    eh = int((elig & is_human).sum())
    ch = int((calib & is_human).sum())
    eg = set(groups[elig].tolist())
    cg = set(groups[calib].tolist())
    tg = set(groups[elig & ~calib].tolist())
    return {
        "calibration_n": int(calib.sum()), "test_n": int(n - calib.sum()),
        "calibration_human_n": ch, "eligible_human_n": eh,
        "achieved_human_share": (ch / eh) if eh else None,
        "calibration_groups": len(cg), "eligible_groups": len(eg),
        "achieved_group_share": (len(cg) / len(eg)) if eg else None,
        "groups_on_both_sides": len(cg & tg),
    }
