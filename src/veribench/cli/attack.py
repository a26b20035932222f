"""CLI: ``veribench attack NAME`` and ``veribench derive-arm``.

- ``attack NAME``: derive one attacked document per selected source document (RAID's
  eleven attacks; ``--set k=v`` overrides RAID's defaults; ``--seed`` fixes every draw).
  Prints how many documents it derived. ``veribench list attacks`` shows the attacks
  with their defaults (``attack --list``, the old spelling, works for one release).
- ``derive-arm``: run a humanizer (any registered one) or the LLM paraphraser
  (``llm-paraphraser``) over a corpus slice; every output becomes a document of a new
  arm linked to its source, through the cached, budgeted, resumable humanizing layer.

See ``docs/robustness.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from veribench import attacks
from veribench.attacks.paraphrase import build_humanizer
from veribench.cli.common import (
    ProgressOpt,
    WorkspaceOpt,
    check_filters,
    check_workspace,
    max_spend_opt,
    open_workspace,
    progress,
    setting_errors,
    settings,
)
from veribench.cli.grammar import warn_deprecated
from veribench.cli.list import show_attacks

MaxSpendOpt = max_spend_opt("Stop before the cost (words) of the calls would exceed this (paraphrase, "
                            "llm-paraphraser, paid humanizers).")
DryRunOpt = typer.Option(False, "--dry-run", help="Store nothing and send nothing; print the plan.")


def _print_plan(rep: Any) -> None:
    for p in rep.planned:
        typer.echo(json.dumps(p, default=str))


def attack_cmd(
    ctx: typer.Context,
    name: str | None = typer.Argument(None, help="Attack (veribench list attacks): homoglyph, number, "
                                      "article_deletion, insert_paragraphs, perplexity_misspelling, upper_lower, "
                                      "whitespace, zero_width_space, synonym, paraphrase, alternative_spelling."),
    workspace: Path = WorkspaceOpt,
    corpus: str | None = typer.Option(None, "--corpus", help="Only sources of this corpus."),
    arm: str | None = typer.Option(None, "--arm", help="Only sources of this arm."),
    label: str | None = typer.Option(None, "--label", help="Only sources with this label (human texts too)."),
    seed: int = typer.Option(0, "--seed", help="Run seed; each document's draws derive from it and its id."),
    set_: list[str] | None = typer.Option(None, "--set", help="Attack parameter key=value (repeatable), e.g. N=0.3."),
    max_spend: float | None = MaxSpendOpt,
    dry_run: bool = DryRunOpt,
    list_: bool = typer.Option(False, "--list", hidden=True, help="Deprecated: use `veribench list attacks`."),
    show_progress: bool = ProgressOpt,
) -> None:
    """Derive one attacked document per selected source document; prints how many."""
    if list_:
        warn_deprecated(ctx, "veribench attack --list", "veribench list attacks")
        show_attacks("text")
        return
    if not name:
        raise typer.BadParameter("name an attack (veribench list attacks shows them)", param_hint="NAME")
    check_workspace(workspace)
    conf = settings(set_)
    with setting_errors(conf, f"attack {name!r}"):
        atk = attacks.create(name, conf)
    with progress("attack", show_progress), open_workspace(workspace) as ws:
        check_filters(ws, corpus=corpus, arm=arm, label=label)
        rep = attacks.attack_documents(ws, atk, seed=seed, corpus=corpus, arm=arm, label=label,
                                       max_spend=max_spend, dry_run=dry_run, progress=show_progress)
    if dry_run:
        _print_plan(rep)
    typer.echo(rep.line())


def derive_arm_cmd(
    humanizer: str = typer.Option(..., "--humanizer", "-H", help="llm-paraphraser or any humanizer "
                                  "(undetectable, stealthgpt, writehuman, hix, humbot, llm-humanizer, manual)."),
    name: str = typer.Option(..., "--name", help="Name of the new arm."),
    workspace: Path = WorkspaceOpt,
    corpus: str | None = typer.Option(None, "--corpus", help="Only sources of this corpus."),
    arm: str | None = typer.Option(None, "--arm", help="Only sources of this arm."),
    label: str | None = typer.Option(None, "--label", help="Only sources with this label."),
    seed: int | None = typer.Option(None, "--seed", help="llm-paraphraser: the chat request seed."),
    set_: list[str] | None = typer.Option(None, "--set", help="Humanizer setting key=value (repeatable)."),
    max_spend: float | None = MaxSpendOpt,
    dry_run: bool = DryRunOpt,
    show_progress: bool = ProgressOpt,
) -> None:
    """Humanize or paraphrase a corpus slice into a new arm linked to its sources."""
    check_workspace(workspace)
    conf = settings(set_)
    if humanizer == "llm-paraphraser" and seed is not None:
        conf.setdefault("seed", int(seed))
    with setting_errors(conf, f"humanizer {humanizer!r}"):
        h = build_humanizer(humanizer, conf)
    with progress("derive-arm", show_progress), open_workspace(workspace) as ws:
        check_filters(ws, corpus=corpus, arm=arm, label=label)
        rep = attacks.humanize_arm(ws, h, new_arm=name, corpus=corpus, arm=arm,
                                   label=label, seed=seed, max_spend=max_spend, dry_run=dry_run,
                                   progress=show_progress)
    if dry_run:
        _print_plan(rep)
    typer.echo(rep.line() + f" (arm {name})")
