"""Seeded bootstrap 95% intervals for a humanizer's bypass rate and meaning preservation.

Method (documented here and recorded in every leaderboard veribench writes, under
``score_intervals_method``): the percentile bootstrap of the mean over the
humanizer's complete tests (``scipy.stats.bootstrap``, ``method="percentile"``),
resampling tests with replacement, ``n_resamples`` resamples (default 2000), with a
generator seeded by ``(seed, first 4 bytes of sha256(slug))`` so each humanizer's
interval is reproducible and independent of the others. A degenerate interval follows the
one rule of :mod:`veribench.metrics.intervals`: null with its reason, never ``[v, v]``.
The per-test values are the
ones the point estimate averages: the median detector ``raw_score`` for bypass, the
rescaled cosine for meaning. HumanizerBench's published ``score_intervals`` come from
an undocumented method and are not reproduced.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.stats import bootstrap

from veribench.metrics.intervals import BOOTSTRAP_ONE_VALUE, BOOTSTRAP_PERCENTILES_EQUAL, checked

METHOD = "percentile bootstrap of the mean over complete tests (scipy.stats.bootstrap)"


def method_record(seed: int, n_resamples: int) -> dict[str, Any]:
    return {"method": METHOD, "confidence_level": 0.95, "n_resamples": n_resamples, "seed": seed,
            "rng": "numpy.random.default_rng([seed, int.from_bytes(sha256(slug)[:4], 'big')])"}


#: No complete test: nothing to resample.
NO_VALUES = "no complete test: no interval"


def bootstrap_ci(values: Sequence[float], seed: int, slug: str,
                 n_resamples: int = 2000) -> tuple[list[float] | None, str | None]:
    """95% percentile-bootstrap interval of ``mean(values)`` as ``(interval, reason)``.

    ``(None, NO_VALUES)`` for no values; a single value, or identical values, give every
    replicate the same mean: ``(None, BOOTSTRAP_ONE_VALUE)``
    (:func:`veribench.metrics.intervals.checked`), never ``[v, v]``.
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return None, NO_VALUES
    if x.size == 1 or np.all(x == x[0]):
        return None, BOOTSTRAP_ONE_VALUE
    rng = np.random.default_rng([seed, int.from_bytes(hashlib.sha256(slug.encode()).digest()[:4], "big")])
    res = bootstrap((x,), np.mean, n_resamples=n_resamples, confidence_level=0.95, method="percentile",
                    random_state=rng, vectorized=True)
    return checked(res.confidence_interval.low, res.confidence_interval.high, None,
                   BOOTSTRAP_PERCENTILES_EQUAL)
