"""The Ladder: a leaderboard's reusable-holdout rule against adaptive overfitting.

Source: Avrim Blum and Moritz Hardt, "The Ladder: A Reliable Leaderboard for Machine Learning
Competitions", ICML 2015 (PMLR 37:1006-1014; arXiv:1502.04585), Algorithm 1. Stated for a
loss: start from R_0 = infinity; for each submission f_t, if its holdout loss R(f_t) is below
R_{t-1} - eta, release R_t = R(f_t) rounded to the nearest integer multiple of eta, otherwise
release R_t = R_{t-1}. The state carried from one submission to the next is the released value
itself. For a score where higher is better (a catch rate, TPR at a fixed FPR, AUROC) the rule is
mirrored: start from minus infinity, release only a score above the best by more than eta.

A team that submits files each flipping one text's score moves its released score only when
the change beats the best by more than eta; the paper bounds the leaderboard's error under
adaptive submissions by O(log(k)^(1/3) / n^(1/3)) for k submissions on n holdout texts with
eta of that order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

#: The rule as the board states it (shown beside every released score).
LADDER_RULE = ("the Ladder (Blum & Hardt 2015, Algorithm 1): a team's score is released only when it beats the "
               "team's best released score by more than eta, rounded to the nearest multiple of eta; otherwise "
               "the previous best is shown again")


@dataclass(frozen=True)
class LadderStep:
    """One submission through the Ladder.

    Attributes:
        released: the score to show (a multiple of eta), or None before any defined score.
        best: the state to pass to the next step (equal to ``released``: Algorithm 1 compares
            each new score with the last released value).
        improved: whether this submission changed the released score.
        rule: :data:`LADDER_RULE`, with eta and the direction.
        reason: why the new score was not compared (undefined), else None.
    """

    released: float | None
    best: float | None
    improved: bool
    rule: str
    reason: str | None = None


def eta_decimals(eta: float) -> int:
    """The decimal places of ``eta`` as written (``repr``): 0.01 -> 2, 0.005 -> 3, 1.0 -> 0."""
    exp = Decimal(repr(float(eta))).normalize().as_tuple().exponent
    return max(0, -exp) if isinstance(exp, int) else 0


def round_to_eta(x: float, eta: float) -> float:
    """``x`` rounded to the nearest integer multiple of ``eta`` (halves upward), given as the
    float nearest that decimal multiple (``k * eta`` rounded to eta's decimal places, so
    0.82 and not 0.8200000000000001 for k = 82, eta = 0.01)."""
    return round(math.floor(x / eta + 0.5) * eta, eta_decimals(eta))


def ladder_step(best: float | None, new: float | None, *, eta: float, higher_is_better: bool = True) -> LadderStep:
    """One round of the Ladder (Blum & Hardt 2015, Algorithm 1).

    Args:
        best: the team's last released score (None: no score released yet, the algorithm's
            R_0 = -infinity for higher-is-better, +infinity for a loss).
        new: the new submission's score on the hidden set, same units as ``best``; None or NaN
            when undefined (then nothing changes and ``reason`` says so).
        eta: the step, > 0, in the score's units (e.g. 0.01 for a rate in [0, 1]).
        higher_is_better: the score's direction (False for a loss or an error rate).

    Returns:
        :class:`LadderStep`: ``released`` is ``new`` rounded to a multiple of eta when
        ``new > best + eta`` (``new < best - eta`` for a loss), else ``best`` again.

    Raises:
        ValueError: eta not a finite positive number, or an infinite ``new`` or ``best``.
    """
    if not (isinstance(eta, int | float) and math.isfinite(eta) and eta > 0):
        raise ValueError(f"eta must be a finite number > 0, not {eta!r}")
    if best is not None and not math.isfinite(best):
        raise ValueError(f"best must be finite or None, not {best!r}")
    rule = f"{LADDER_RULE} (eta = {eta:g}, {'higher' if higher_is_better else 'lower'} is better)"
    if new is None or math.isnan(new):
        return LadderStep(best, best, False, rule, "the new score is undefined; the previous best is shown again")
    if not math.isfinite(new):
        raise ValueError(f"the new score must be finite, not {new!r}")
    beats = best is None or (new > best + eta if higher_is_better else new < best - eta)
    if beats:
        r = round_to_eta(new, eta)
        return LadderStep(r, r, True, rule)
    return LadderStep(best, best, False, rule)
