"""The Ladder (Blum & Hardt 2015, Algorithm 1; veribench.metrics.ladder): a hostile team that
submits files each flipping one text's score moves its released score only as the rule allows."""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veribench.metrics.ladder import LADDER_RULE, LadderStep, ladder_step


def is_multiple(x: float, eta: float) -> bool:
    return abs(x / eta - round(x / eta)) < 1e-9


def test_algorithm_1_by_hand():
    s = ladder_step(None, 0.613, eta=0.01)
    assert s == LadderStep(pytest.approx(0.61), pytest.approx(0.61), True, s.rule)
    assert LADDER_RULE in s.rule and "eta = 0.01" in s.rule
    assert ladder_step(0.61, 0.619, eta=0.01).released == 0.61  # beats by 0.009 <= eta: re-released
    assert not ladder_step(0.61, 0.62, eta=0.01 + 1e-12).improved  # exactly eta is not "more than eta"
    s = ladder_step(0.61, 0.6251, eta=0.01)
    assert s.improved and s.released == pytest.approx(0.63)
    assert ladder_step(0.61, 0.2, eta=0.01).released == 0.61  # worse: re-released
    # a loss: lower is better
    s = ladder_step(0.30, 0.25, eta=0.02, higher_is_better=False)
    assert s.improved and s.released == pytest.approx(0.26) and "lower is better" in s.rule
    assert not ladder_step(0.30, 0.29, eta=0.02, higher_is_better=False).improved


def test_undefined_and_bad_input():
    s = ladder_step(0.5, None, eta=0.01)
    assert s.released == 0.5 and not s.improved and "undefined" in (s.reason or "")
    s = ladder_step(None, float("nan"), eta=0.01)
    assert s.released is None and s.best is None and s.reason
    for eta in (0, -0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="eta"):
            ladder_step(None, 0.5, eta=eta)
    with pytest.raises(ValueError, match="finite"):
        ladder_step(0.5, float("inf"), eta=0.01)


def accuracy(labels: np.ndarray, scores: np.ndarray) -> float:
    """The headline in this test: share of texts on the right side of 0.5 (a plain loop)."""
    right = 0
    for y, s in zip(labels, scores):
        right += int((s > 0.5) == bool(y))
    return right / len(labels)


@settings(max_examples=80, deadline=None)
@given(n=st.integers(20, 120), eta=st.sampled_from([0.005, 0.01, 0.02, 0.05]), seed=st.integers(0, 2**31 - 1),
       flips=st.lists(st.integers(0, 10**6), min_size=1, max_size=60), higher=st.booleans())
def test_one_flip_attack_moves_score_only_as_the_rule_allows(n, eta, seed, flips, higher):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    scores = rng.random(n)
    best: float | None = None
    history = []
    for f in flips:
        scores = scores.copy()
        i = f % n
        scores[i] = 1.0 - scores[i]  # the attacker flips one text's score
        new = accuracy(labels, scores)
        if not higher:
            new = 1.0 - new  # the error rate, a loss
        step = ladder_step(best, new, eta=eta, higher_is_better=higher)
        allowed = best is None or (new > best + eta if higher else new < best - eta)
        assert step.improved == allowed
        assert (step.released != best) == allowed  # the response changes only when the rule allows
        assert step.released is not None and is_multiple(step.released, eta)
        if allowed:
            assert abs(step.released - new) <= eta / 2 + 1e-12
        if best is not None:  # monotone: never worse than before
            assert step.released >= best if higher else step.released <= best
        best = step.best
        history.append(step.released)
    # each release beats the one before by more than eta / 2 (rounding eats at most eta / 2)
    distinct = [h for k, h in enumerate(history) if k == 0 or h != history[k - 1]]
    gaps = np.diff(distinct) * (1 if higher else -1)
    assert np.all(gaps > eta / 2 - 1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=40), st.sampled_from([0.01, 0.1, 0.25]))
def test_released_scores_non_decreasing_multiples_of_eta(news, eta):
    best = None
    prev = -math.inf
    for new in news:
        s = ladder_step(best, new, eta=eta)
        assert s.released is not None and is_multiple(s.released, eta)
        assert s.released >= prev
        assert (s.released != prev) == (best is None or new > best + eta)
        prev, best = s.released, s.best


def test_released_values_are_the_decimal_multiples_of_eta():
    """k * eta in floating point is often off in the last digit (82 * 0.01 = 0.8200000000000001):
    the released value is the float nearest the decimal k * eta (a plain loop with Decimal)."""
    for eta in (0.01, 0.005, 0.02, 0.1, 0.25, 1.0):
        for k in range(201):
            want = float(Decimal(k) * Decimal(repr(eta)))
            new = want + eta / 10
            assert ladder_step(None, new, eta=eta).released == want, (eta, k)
    assert repr(ladder_step(None, 0.82, eta=0.01).released) == "0.82"
