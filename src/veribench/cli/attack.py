"""CLI: ``veribench attack NAME`` and ``veribench derive-arm``.

- ``attack NAME``: derive one attacked document per selected source document (RAID's
  eleven attacks; ``--set k=v`` overrides RAID's defaults; ``--seed`` fixes every draw).
  Prints how many documents it derived. ``veribench attack --list`` shows the attacks
  with their defaults.
- ``derive-arm``: run a humanizer (any registered one) or the LLM paraphraser
  (``llm-paraphraser``) over a corpus slice; every output becomes a document of a new
  arm linked to its source, through the cached, budgeted, resumable humanizing layer.

See ``docs/robustness.md``.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from veribench.cli.common import WorkspaceOpt, friendly_errors


def _settings(pairs: list[str] | None) -> dict:
    from veribench.errors import InputError
    from veribench.registry import parse_settings

    try:
        return parse_settings(pairs)
    except ValueError as e:
        raise InputError(str(e), field="--set") from None


def _open(workspace: Path):
    from veribench.errors import InputError
    from veribench.store import Workspace

    if not (workspace / "veribench.duckdb").is_file():
        raise InputError("no workspace here (import a corpus first)", file=str(workspace))
    return Workspace(workspace)


def _print_plan(rep) -> None:
    for p in rep.planned:
        typer.echo(json.dumps(p, default=str))


@friendly_errors
def attack_cmd(
    name: str | None = typer.Argument(None, help="Attack: homoglyph, number, article_deletion, insert_paragraphs, "
                                                    "perplexity_misspelling, upper_lower, whitespace, zero_width_space, "
                                                    "synonym, paraphrase, alternative_spelling."),
    workspace: Path = WorkspaceOpt,
    corpus: str | None = typer.Option(None, "--corpus", help="Only sources of this corpus."),
    arm: str | None = typer.Option(None, "--arm", help="Only sources of this arm."),
    label: str | None = typer.Option(None, "--label", help="Only sources with this label (human texts too)."),
    seed: int = typer.Option(0, "--seed", help="Run seed; each document's draws derive from it and its id."),
    set_: list[str] | None = typer.Option(None, "--set", help="Attack parameter key=value (repeatable), e.g. N=0.3."),
    max_spend: float | None = typer.Option(None, "--max-spend", help="paraphrase: stop before the cost (words) "
                                              "would exceed this."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Store nothing; paraphrase: send nothing, print the plan."),
    list_: bool = typer.Option(False, "--list", help="List the attacks with RAID's default parameters."),
    progress: bool = typer.Option(False, "--progress/--no-progress"),
) -> None:
    """Derive one attacked document per selected source document; prints how many."""
    from veribench import attacks, registry
    from veribench.errors import InputError

    if list_:
        for n in attacks.names():
            cls = registry.get("attack", n)
            defaults = {k: f.default for k, f in cls.Settings.model_fields.items()}
            typer.echo(f"{n}: {json.dumps(defaults, default=str)}")
        return
    if not name:
        raise InputError("name an attack (veribench attack --list shows them)")
    atk = attacks.create(name, _settings(set_))
    with _open(workspace) as ws:
        rep = attacks.attack_documents(ws, atk, seed=seed, corpus=corpus, arm=arm, label=label,
                                       max_spend=max_spend, dry_run=dry_run, progress=progress)
    if dry_run:
        _print_plan(rep)
    typer.echo(rep.line())


@friendly_errors
def derive_arm_cmd(
    humanizer: str = typer.Option(..., "--humanizer", "-H", help="llm-paraphraser or any humanizer "
                                  "(undetectable, stealthgpt, writehuman, hix, humbot, llm-humanizer, manual)."),
    name: str = typer.Option(..., "--name", help="Name of the new arm."),
    workspace: Path = WorkspaceOpt,
    corpus: str | None = typer.Option(None, "--corpus"),
    arm: str | None = typer.Option(None, "--arm", help="Only sources of this arm."),
    label: str | None = typer.Option(None, "--label"),
    seed: int | None = typer.Option(None, "--seed", help="llm-paraphraser: the chat request seed."),
    set_: list[str] | None = typer.Option(None, "--set", help="Humanizer setting key=value (repeatable)."),
    max_spend: float | None = typer.Option(None, "--max-spend"),
    dry_run: bool = typer.Option(False, "--dry-run"),
    progress: bool = typer.Option(False, "--progress/--no-progress"),
) -> None:
    """Humanize or paraphrase a corpus slice into a new arm linked to its sources."""
    from veribench import attacks

    with _open(workspace) as ws:
        rep = attacks.humanize_arm(ws, humanizer, _settings(set_), new_arm=name, corpus=corpus, arm=arm,
                                   label=label, seed=seed, max_spend=max_spend, dry_run=dry_run, progress=progress)
    if dry_run:
        _print_plan(rep)
    typer.echo(rep.line() + f" (arm {name})")


def register(app: typer.Typer) -> None:
    """Add ``attack`` and ``derive-arm`` to the root app."""
    app.command("attack")(attack_cmd)
    app.command("derive-arm")(derive_arm_cmd)
