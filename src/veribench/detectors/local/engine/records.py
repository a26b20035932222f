"""What one forward pass yields per text: :class:`SinglePass` (one model), :class:`PairPass`
(a sampling/observer and a scoring/performer model on the same tokens), and the two
texts no pass can score, :class:`TooShort` and :class:`Mismatch`.

The formulas of every array are in the package docstring (:mod:`veribench.detectors.local.engine`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class SinglePass:
    """Per-position outputs of one model on one text (arrays of length tokens_used - 1)."""

    n_total: int  # tokens in the whole text (special tokens included)
    ids: np.ndarray  # token ids used (int64, length tokens_used)
    ll: np.ndarray
    rank: np.ndarray
    ent: np.ndarray
    m2: np.ndarray

    @property
    def tokens_used(self) -> int:
        return int(self.ids.shape[0])

    def prefix(self, n: int) -> SinglePass:
        """The outputs for the first ``n`` tokens (valid by causality)."""
        if n >= self.tokens_used:
            return self
        return SinglePass(self.n_total, self.ids[:n], self.ll[: n - 1], self.rank[: n - 1],
                          self.ent[: n - 1], self.m2[: n - 1])

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.ids, self.ll, self.rank, self.ent, self.m2))


@dataclass
class PairPass:
    """Cross outputs of a (p, q) model pair on one text.

    ``ll`` has length tokens_used - 1 (labels exist); ``mu`` and ``m2`` have length
    tokens_used (every position, as Binoculars' cross-perplexity uses them).
    """

    n_total: int
    ids: np.ndarray
    ll: np.ndarray
    mu: np.ndarray
    m2: np.ndarray
    vocab_cut: int

    @property
    def tokens_used(self) -> int:
        return int(self.ids.shape[0])

    def prefix(self, n: int) -> PairPass:
        if n >= self.tokens_used:
            return self
        return PairPass(self.n_total, self.ids[:n], self.ll[: n - 1], self.mu[:n], self.m2[:n], self.vocab_cut)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.ids, self.ll, self.mu, self.m2))


@dataclass
class TooShort:
    """A text with fewer than 2 tokens after tokenisation: no position can be scored."""

    n_total: int


@dataclass
class Mismatch:
    """The two models of a pair tokenise this text differently (upstream asserts equality)."""

    n_total: int
