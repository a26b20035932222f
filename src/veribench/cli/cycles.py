"""CLI group ``veribench cycle ...``: humanizer benchmark cycles (commit-reveal).

``cycle add`` puts source texts and humanizer outputs into a cycle *folder*; ``veribench
import cycle`` is the import of a cycle bundle into a *workspace* (one verb per source of
imports, docs/cli.md). ``veribench verify`` checks published cycles.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import typer

from veribench import registry
from veribench.bundles.jscompat import dumps_js
from veribench.cli.common import (
    ProgressOpt,
    WorkspaceOpt,
    build,
    input_path,
    open_workspace,
    out_opt,
    output_path,
    progress,
    settings,
    validated,
)
from veribench.cli.humanize import chat_client
from veribench.cycles.create import (
    derive_prompts,
    import_outputs,
    import_samples,
    new_cycle,
    publish_cycle,
    score_directory,
)
from veribench.cycles.rescore import check_mapping, measure_cycle, rescore_bundle
from veribench.cycles.uncertainty import MIN_RESAMPLES, summary_lines

cycle_app = typer.Typer(help="Create, publish, score and re-score humanizer benchmark cycles (commit-reveal).",
                        no_args_is_help=True)

CycleArg = typer.Argument(..., help="The cycle folder.", callback=input_path("folder"))
SecretsOpt = typer.Option(None, "--secrets-dir", envvar="VERIBENCH_SECRETS_DIR", callback=output_path("folder"),
                          help="Private folder holding the cycle's nonce (default: the user's veribench secrets "
                               "folder).")
DetectorsOpt = typer.Option(["zippy"], "--detector", "-d", help="Registry detector name (repeatable).")
SetOpt = typer.Option([], "--set", help="Detector setting key=value (repeatable; applies to every --detector).")
MappingOpt = typer.Option("auto", "--mapping", help="Human likelihood of detectors without a P(AI): auto "
                          "(probability, else verdict), verdict, or sigmoid:T[:C] on the signed score.",
                          callback=validated(check_mapping))
EmbedderCheck = validated(lambda name: registry.get("embedder", name))
JudgeOpt = typer.Option([], "--judge-set", help="Readability judge setting key=value (base_url, model, provider).")
Readability = Literal["published", "judge", "none"]


@cycle_app.command("new")
def cycle_new(
    name: str = typer.Argument(..., help="Cycle name, e.g. \"January 2027\" (quote names with spaces)."),
    directory: Path = typer.Argument(..., help="Folder to create for the cycle (must not exist or be empty).",
                                     callback=output_path("folder")),
    templates: Path = typer.Option(..., "--templates", help="templates.json: [{slug, category, prompt_text}].",
                                   callback=input_path("file")),
    banks: Path = typer.Option(..., "--banks", help="banks.json: {TOKEN: [value, ...]}.", callback=input_path("file")),
    prompt_set_version: str = typer.Option("1.0.0", "--prompt-set-version",
                                           help="Version of the prompt set, recorded in commit.json."),
    secrets_dir: Path | None = typer.Option(None, "--secrets-dir", envvar="VERIBENCH_SECRETS_DIR",
                                            help="Private folder for the nonce (mode 0700; file 0600).",
                                            callback=output_path("folder")),
) -> None:
    """Start a cycle: draw a secret 32-byte nonce and write commit.json with its SHA-256."""
    commit = new_cycle(name, directory, templates, banks, prompt_set_version=prompt_set_version,
                       secrets_dir=secrets_dir)
    typer.echo(f"cycle {name!r} started in {directory}; committed hash {commit['committed_hash']}")
    typer.echo("publish commit.json now; the nonce stays private until `veribench cycle publish`.")


@cycle_app.command("prompts")
def cycle_prompts(
    directory: Path = CycleArg,
    out: Path | None = out_opt("Write the prompts (JSON) to this file instead of standard output.", None),
    secrets_dir: Path | None = SecretsOpt,
) -> None:
    """Derive this cycle's prompts for the operator (private until publish)."""
    prompts = derive_prompts(directory, secrets_dir=secrets_dir)
    text = dumps_js(prompts)
    if out is None:
        typer.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")
        typer.echo(f"{len(prompts)} prompts written to {out}")


@cycle_app.command("add")
def cycle_add(
    directory: Path = CycleArg,
    samples: Path | None = typer.Option(None, "--samples", help="Source texts: JSON or CSV "
                                        "(id, prompt_slug, input_text[, source_model_slug]).",
                                        callback=input_path("file")),
    outputs: Path | None = typer.Option(None, "--outputs", help="Humanizer outputs: JSON or CSV "
                                        "(sample_id, humanizer_slug, output_text[, status, failure_reason_code]).",
                                        callback=input_path("file")),
) -> None:
    """Add source texts and hand-run humanizer outputs to a cycle folder (flags computed).

    (Was `cycle import`; `veribench import cycle` imports a cycle bundle into a workspace.)
    """
    if samples is None and outputs is None:
        raise typer.BadParameter("give --samples, --outputs or both", param_hint="--samples")
    if samples:
        n = import_samples(directory, samples)
        typer.echo(f"{n} samples imported")
    if outputs:
        n = import_outputs(directory, outputs)
        typer.echo(f"{n} tests imported")


def _detectors(detector: list[str], set_: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """``(name, settings)`` of each ``--detector``, each built once here so that an unknown
    name or a bad ``--set`` is refused before any workspace is opened."""
    conf = settings(set_)
    for d in detector:
        build("detector", d, conf)
    return [(d, conf) for d in detector]


def _judge(judge_set: list[str], readability: str) -> dict[str, Any]:
    """The ``--judge-set`` settings, checked by building the judge's chat client when it is used."""
    if readability == "judge":
        chat_client(judge_set, "--judge-set")
    return settings(judge_set, "--judge-set")


@cycle_app.command("measure")
def cycle_measure(
    directory: Path = typer.Argument(..., help="The cycle folder (tests imported).", callback=input_path("folder")),
    detector: list[str] = DetectorsOpt,
    set_: list[str] = SetOpt,
    embedder: str = typer.Option("minilm", "--embedder", help="Embedder for meaning preservation: minilm (offline) "
                                 "or openai-3-large.", callback=EmbedderCheck),
    readability: Readability = typer.Option("none", "--readability", help="Readability: none, judge (the LLM "
                                            "judge) or published (the cycle's own scores)."),
    mapping: str = MappingOpt,
    judge_set: list[str] = JudgeOpt,
    seed: int = typer.Option(20260701, "--seed", min=0, help="Bootstrap seed of the ranking's intervals (recorded)."),
    resamples: int = typer.Option(2000, "--resamples", min=MIN_RESAMPLES, help=f"Bootstrap resamples (recorded; at least {MIN_RESAMPLES})."),
    workspace: Path = WorkspaceOpt,
    show_progress: bool = ProgressOpt,
) -> None:
    """Score the cycle's humanizer outputs with veribench's detectors, embedder and readability; print the
    summary with the resulting ranking and its uncertainty (composite and rank intervals, tiers)."""
    dets = _detectors(detector, set_)
    judge = _judge(judge_set, readability)
    with progress("cycle measure", show_progress), open_workspace(workspace, create=True) as ws:
        summary = measure_cycle(directory, ws, detectors=dets, embedder=embedder, readability=readability,
                                mapping=mapping, judge_settings=judge, seed=seed, n_resamples=resamples)
    typer.echo(json.dumps(summary, indent=2))
    if summary.get("ranking"):
        typer.echo("\n".join(summary_lines(summary["ranking"])))


@cycle_app.command("publish")
def cycle_publish(
    directory: Path = CycleArg,
    secrets_dir: Path | None = SecretsOpt,
) -> None:
    """Close the cycle: reveal the nonce, freeze the files, write the manifest and leaderboard."""
    lb = publish_cycle(directory, secrets_dir=secrets_dir)
    typer.echo(f"published {lb['cycle']!r}: {len(lb['humanizers'])} humanizers ranked, "
               f"{len(lb['unavailable_humanizers'])} unavailable; run `veribench verify {directory}`")


@cycle_app.command("score")
def cycle_score(
    directory: Path = typer.Argument(..., help="A cycle folder with samples, tests and detector scores.",
                                     callback=input_path("folder")),
    out: Path | None = out_opt("Write the leaderboard JSON to this file (default: standard output).", None),
    seed: int = typer.Option(20260701, "--seed", min=0, help="Bootstrap seed (recorded), >= 0."),
    resamples: int = typer.Option(2000, "--resamples", min=MIN_RESAMPLES, help=f"Bootstrap resamples (recorded; at least {MIN_RESAMPLES})."),
) -> None:
    """Leaderboard in the published shape, with seeded bootstrap 95% intervals, composite and rank
    intervals, paired differences and tiers (the table goes to standard error without --out)."""
    lb = score_directory(directory, seed=seed, n_resamples=resamples)
    text = dumps_js(lb)
    table = "\n".join(summary_lines(lb["uncertainty"]))
    if out is None:
        typer.echo(text, nl=False)
        typer.echo(table, err=True)
    else:
        out.write_text(text, encoding="utf-8")
        typer.echo(f"leaderboard with {len(lb['humanizers'])} humanizers written to {out}")
        typer.echo(table)


@cycle_app.command("rescore")
def cycle_rescore(
    bundle: Path = typer.Argument(..., help="A published cycle bundle (e.g. HumanizerBench July 2026).",
                                  callback=input_path("folder")),
    out: Path = out_opt("New folder for the re-scored veribench bundle.", kind="folder"),
    detector: list[str] = DetectorsOpt,
    set_: list[str] = SetOpt,
    embedder: str = typer.Option("minilm", "--embedder", help="minilm (offline) or openai-3-large.",
                                 callback=EmbedderCheck),
    readability: Readability = typer.Option("published", "--readability", help="Readability: published (the "
                                            "bundle's own scores), judge (the LLM judge) or none."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N samples (quick looks)."),
    mapping: str = MappingOpt,
    judge_set: list[str] = JudgeOpt,
    workspace: Path = WorkspaceOpt,
    show_progress: bool = ProgressOpt,
) -> None:
    """Re-score a bundle's humanizer outputs with veribench's own parts; publish and compare rankings."""
    dets = _detectors(detector, set_)
    judge = _judge(judge_set, readability)
    with progress("cycle rescore", show_progress), open_workspace(workspace, create=True) as ws:
        res = rescore_bundle(bundle, out, ws, detectors=dets, embedder=embedder, readability=readability,
                             limit=limit, mapping=mapping, judge_settings=judge)
    typer.echo(res["table"])
    typer.echo(f"Kendall's tau (published vs veribench ranking): {res['kendall_tau']:.4f} "
               f"(p = {res['kendall_p']:.4g}, n = {res['n_common']})")
    typer.echo(f"bundle written to {out}; run `veribench verify \"{out}\"`")
