"""CLI: ``veribench plan`` - how many texts a benchmark needs (sample-size planning).

``plan fpr``: human texts for a Wilson interval of a given half-width (or the interval n
texts give); ``plan gap``: texts per subgroup to detect an FPR gap; ``plan paired``: texts
to detect a difference between two detectors on the same texts. Formulas and sources:
:mod:`veribench.metrics.planning` and ``docs/statistics.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from veribench.cli.common import FormatOpt, OutputFormat, json_opt, print_json, write_json
from veribench.metrics import planning

plan_app = typer.Typer(help="Sample-size planning: texts needed for an interval width, a subgroup gap or a paired "
                            "difference between detectors.", no_args_is_help=True)

PowerOpt = typer.Option(0.8, "--power", min=0.0, max=1.0, help="Power (1 - beta), e.g. 0.8.")
AlphaOpt = typer.Option(0.05, "--alpha", min=0.0, max=1.0, help="Two-sided significance level of the test.")
TestsOpt = typer.Option(1, "--tests", min=1,
                        help="Number of tests in the family: plan at alpha / tests (the level Holm's correction "
                             "requires of the smallest p-value).")
JsonOpt = json_opt("Also write the plan as JSON to this file.")


def _run(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None


def _write(json_out: Path | None, payload: dict[str, Any], fmt: str) -> None:
    if json_out is not None:
        write_json(json_out, payload, allow_nan=False)
    if fmt == "json":
        print_json(payload, allow_nan=False)


def _say(fmt: str, line: str) -> None:
    """A line of the plan for people (``--format text``)."""
    if fmt == "text":
        typer.echo(line)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


@plan_app.command("fpr")
def plan_fpr(
    rate: float = typer.Option(0.05, "--rate", min=0.0, max=1.0, help="Expected false-positive rate (or any rate), e.g. 0.05."),
    half_width: float | None = typer.Option(None, "--half-width", min=0.0,
                                               help="Target half-width of the interval, e.g. 0.02 for +-2 points."),
    n: int | None = typer.Option(None, "--n", min=1, help="Show the interval this many texts give."),
    confidence: float = typer.Option(0.95, "--confidence", min=0.0, max=1.0, help="Interval confidence, e.g. 0.95."),
    json_out: Path | None = JsonOpt,
    fmt: OutputFormat = FormatOpt,
) -> None:
    """Human texts needed for a Wilson interval of a given half-width at an expected FPR.

    Example: `veribench plan fpr --rate 0.05 --n 100` shows 2.2%-11.2% (the protocol's
    "roughly 2-11%"); `--half-width 0.02` gives the texts needed for +-2 points.
    """
    if half_width is None and n is None:
        raise typer.BadParameter("give --half-width (texts needed) or --n (interval at n texts), or both",
                                 param_hint="--half-width")
    alpha = 1.0 - confidence
    out: dict[str, Any] = {"question": "fpr", "rate": rate, "confidence": confidence}
    if n is not None:
        lo, hi = _run(lambda: planning.wilson_interval_at(rate, n, alpha))
        out["at_n"] = {"n": n, "lo": lo, "hi": hi, "half_width": (hi - lo) / 2}
        _say(fmt, f"{n} texts, observed rate {_pct(rate)}: {confidence:.0%} Wilson interval {_pct(lo)}-{_pct(hi)} "
                   f"(half-width {100 * (hi - lo) / 2:.1f} points)")
    if half_width is not None:
        plan = _run(lambda: planning.n_for_wilson_half_width(rate, half_width, alpha))
        out["plan"] = plan.to_dict()
        _say(fmt, f"texts needed for a half-width of {100 * half_width:g} points at {_pct(rate)}: {plan.n} "
                   f"(interval {_pct(plan.lo)}-{_pct(plan.hi)}, half-width {100 * plan.achieved_half_width:.2f} points; "
                   f"{plan.method})")
    _write(json_out, out, fmt)


@plan_app.command("gap")
def plan_gap(
    rate_a: float = typer.Option(..., "--rate-a", min=0.0, max=1.0, help="Expected rate in group a (e.g. FPR on non-native writers)."),
    rate_b: float = typer.Option(..., "--rate-b", min=0.0, max=1.0, help="Expected rate in group b (e.g. FPR on native writers)."),
    power: float = PowerOpt,
    alpha: float = AlphaOpt,
    tests: int = TestsOpt,
    ratio: float = typer.Option(1.0, "--ratio", min=0.0, help="Texts in group b per text in group a."),
    json_out: Path | None = JsonOpt,
    fmt: OutputFormat = FormatOpt,
) -> None:
    """Texts per subgroup to detect a gap between two independent rates (Fisher's exact test)."""
    level = alpha / tests
    plan = _run(lambda: planning.n_for_two_proportions(rate_a, rate_b, power, level, ratio))
    _say(fmt, f"gap {_pct(rate_a)} vs {_pct(rate_b)} (difference {100 * plan.difference:+.1f} points), "
               f"power {power:.0%}, two-sided alpha {level:g}" + (f" (= {alpha:g} / {tests} tests)" if tests > 1 else ""))
    if plan.n_a_exact is not None:
        _say(fmt, f"  Fisher's exact test (used for gaps): {plan.n_a_exact} texts in group a, {plan.n_b_exact} in group b "
                   f"(exact power {plan.exact_power:.3f})")
    _say(fmt, f"  normal approximation: {plan.n_a} + {plan.n_b}; with continuity correction: {plan.n_a_cc} + {plan.n_b_cc}")
    _write(json_out, {"question": "gap", "tests": tests, "plan": plan.to_dict()}, fmt)


@plan_app.command("paired")
def plan_paired(
    rate_a: float = typer.Option(..., "--rate-a", min=0.0, max=1.0, help="Expected rate of detector a (FPR on human or catch rate on AI texts)."),
    rate_b: float = typer.Option(..., "--rate-b", min=0.0, max=1.0, help="Expected rate of detector b on the same texts."),
    discordant: float | None = typer.Option(
        None, "--discordant", min=0.0, max=1.0, help="Expected share of texts where exactly one detector flags (default: independence)."),
    power: float = PowerOpt,
    alpha: float = AlphaOpt,
    tests: int = TestsOpt,
    json_out: Path | None = JsonOpt,
    fmt: OutputFormat = FormatOpt,
) -> None:
    """Texts (scored by both detectors) to detect a paired difference of rates (McNemar's exact test)."""
    level = alpha / tests
    plan = _run(lambda: planning.n_for_paired(rate_a, rate_b, power, level, discordant))
    src = "assumed from independent flags" if plan.discordant_assumed else "given"
    _say(fmt, f"paired {_pct(rate_a)} vs {_pct(rate_b)} (difference {100 * plan.difference:+.1f} points), discordant share "
               f"{_pct(plan.discordant)} ({src}), power {power:.0%}, two-sided alpha {level:g}"
               + (f" (= {alpha:g} / {tests} tests)" if tests > 1 else ""))
    if plan.n_exact is not None:
        _say(fmt, f"  McNemar's exact test (used for comparisons): {plan.n_exact} texts (exact power {plan.exact_power:.3f})")
    _say(fmt, f"  normal approximation (Connor 1987): {plan.n} texts")
    _write(json_out, {"question": "paired", "tests": tests, "plan": plan.to_dict()}, fmt)
