"""CLI group: humanizer cycles (``veribench verify`` and ``veribench cycle ...``)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from veribench.cli.common import WorkspaceOpt, friendly_errors

cycle_app = typer.Typer(help="Create, publish, score and re-score humanizer benchmark cycles (commit-reveal).",
                        no_args_is_help=True)


@cycle_app.command("new")
@friendly_errors
def cycle_new(
    name: str = typer.Argument(..., help="Cycle name, e.g. \"January 2027\" (quote names with spaces)."),
    directory: Path = typer.Argument(..., help="Folder to create for the cycle (must not exist or be empty)."),
    templates: Path = typer.Option(..., "--templates", help="templates.json: [{slug, category, prompt_text}]."),
    banks: Path = typer.Option(..., "--banks", help="banks.json: {TOKEN: [value, ...]}."),
    prompt_set_version: str = typer.Option("1.0.0", "--prompt-set-version"),
    secrets_dir: Path | None = typer.Option(None, "--secrets-dir", envvar="VERIBENCH_SECRETS_DIR",
                                               help="Private folder for the nonce (mode 0700; file 0600)."),
) -> None:
    """Start a cycle: draw a secret 32-byte nonce and write commit.json with its SHA-256."""
    from veribench.cycles.create import new_cycle

    commit = new_cycle(name, directory, templates, banks, prompt_set_version=prompt_set_version,
                       secrets_dir=secrets_dir)
    typer.echo(f"cycle {name!r} started in {directory}; committed hash {commit['committed_hash']}")
    typer.echo("publish commit.json now; the nonce stays private until `veribench cycle publish`.")


@cycle_app.command("prompts")
@friendly_errors
def cycle_prompts(
    directory: Path = typer.Argument(..., help="The cycle folder."),
    out: Path | None = typer.Option(None, "--out", help="Write the prompts (JSON) here instead of stdout."),
    secrets_dir: Path | None = typer.Option(None, "--secrets-dir", envvar="VERIBENCH_SECRETS_DIR"),
) -> None:
    """Derive this cycle's prompts for the operator (private until publish)."""
    from veribench.bundles.jscompat import dumps_js
    from veribench.cycles.create import derive_prompts

    prompts = derive_prompts(directory, secrets_dir=secrets_dir)
    text = dumps_js(prompts)
    if out is None:
        typer.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")
        typer.echo(f"{len(prompts)} prompts written to {out}")


@cycle_app.command("import")
@friendly_errors
def cycle_import(
    directory: Path = typer.Argument(..., help="The cycle folder."),
    samples: Path | None = typer.Option(None, "--samples", help="Source texts: JSON or CSV "
                                           "(id, prompt_slug, input_text[, source_model_slug])."),
    outputs: Path | None = typer.Option(None, "--outputs", help="Humanizer outputs: JSON or CSV "
                                           "(sample_id, humanizer_slug, output_text[, status, failure_reason_code])."),
) -> None:
    """Import source texts and hand-run humanizer outputs into a cycle (flags computed)."""
    from veribench.cycles.create import import_outputs, import_samples

    if samples:
        n = import_samples(directory, samples)
        typer.echo(f"{n} samples imported")
    if outputs:
        n = import_outputs(directory, outputs)
        typer.echo(f"{n} tests imported")


def _measure_opts(detector: list[str], set_: list[str], embedder: str, readability: str):
    from veribench.registry import parse_settings

    settings = parse_settings(set_)
    return [(d, settings) for d in detector], embedder, readability


MappingOpt = typer.Option("auto", "--mapping", help="Human likelihood of detectors without a P(AI): auto "
                          "(probability, else verdict), verdict, or sigmoid:T[:C] on the signed score.")
JudgeOpt = typer.Option([], "--judge-set", help="Readability judge setting key=value (base_url, model, provider).")


@cycle_app.command("measure")
@friendly_errors
def cycle_measure(
    directory: Path = typer.Argument(..., help="The cycle folder (tests imported)."),
    detector: list[str] = typer.Option(["zippy"], "--detector", help="Registry detector name (repeatable)."),
    set_: list[str] = typer.Option([], "--set", help="Detector setting key=value (applies to every --detector)."),
    embedder: str = typer.Option("minilm", "--embedder", help="Embedder for meaning preservation."),
    readability: str = typer.Option("none", "--readability", help="none | judge | published"),
    mapping: str = MappingOpt,
    judge_set: list[str] = JudgeOpt,
    workspace: Path = WorkspaceOpt,
) -> None:
    """Score the cycle's humanizer outputs with veribench's detectors, embedder and readability."""
    from veribench.cycles.rescore import measure_cycle
    from veribench.registry import parse_settings
    from veribench.store import Workspace

    dets, emb, read = _measure_opts(detector, set_, embedder, readability)
    with Workspace(workspace) as ws:
        summary = measure_cycle(directory, ws, detectors=dets, embedder=emb, readability=read, mapping=mapping,
                                judge_settings=parse_settings(judge_set))
    typer.echo(json.dumps(summary, indent=2))


@cycle_app.command("publish")
@friendly_errors
def cycle_publish(
    directory: Path = typer.Argument(..., help="The cycle folder."),
    secrets_dir: Path | None = typer.Option(None, "--secrets-dir", envvar="VERIBENCH_SECRETS_DIR"),
) -> None:
    """Close the cycle: reveal the nonce, freeze the files, write the manifest and leaderboard."""
    from veribench.cycles.create import publish_cycle

    lb = publish_cycle(directory, secrets_dir=secrets_dir)
    typer.echo(f"published {lb['cycle']!r}: {len(lb['humanizers'])} humanizers ranked, "
               f"{len(lb['unavailable_humanizers'])} unavailable; run `veribench verify {directory}`")


@cycle_app.command("score")
@friendly_errors
def cycle_score(
    directory: Path = typer.Argument(..., help="A cycle folder with samples, tests and detector scores."),
    out: Path | None = typer.Option(None, "--out", help="Write the leaderboard JSON here (default stdout)."),
    seed: int = typer.Option(20260701, "--seed", help="Bootstrap seed (recorded)."),
    resamples: int = typer.Option(2000, "--resamples", help="Bootstrap resamples (recorded)."),
) -> None:
    """Leaderboard in the published shape, with seeded bootstrap 95% intervals."""
    from veribench.bundles.jscompat import dumps_js
    from veribench.cycles.create import score_directory

    lb = score_directory(directory, seed=seed, n_resamples=resamples)
    text = dumps_js(lb)
    if out is None:
        typer.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")
        typer.echo(f"leaderboard with {len(lb['humanizers'])} humanizers written to {out}")


@cycle_app.command("rescore")
@friendly_errors
def cycle_rescore(
    bundle: Path = typer.Argument(..., help="A published cycle bundle (e.g. HumanizerBench July 2026)."),
    out: Path = typer.Option(..., "--out", help="New folder for the re-scored veribench bundle."),
    detector: list[str] = typer.Option(["zippy"], "--detector", help="Registry detector name (repeatable)."),
    set_: list[str] = typer.Option([], "--set", help="Detector setting key=value (applies to every --detector)."),
    embedder: str = typer.Option("minilm", "--embedder", help="minilm (offline) or openai-3-large."),
    readability: str = typer.Option("published", "--readability", help="published | judge | none"),
    limit: int | None = typer.Option(None, "--limit", help="Only the first N samples (quick looks)."),
    mapping: str = MappingOpt,
    judge_set: list[str] = JudgeOpt,
    workspace: Path = WorkspaceOpt,
) -> None:
    """Re-score a bundle's humanizer outputs with veribench's own parts; publish and compare rankings."""
    from veribench.cycles.rescore import rescore_bundle
    from veribench.registry import parse_settings
    from veribench.store import Workspace

    dets, emb, read = _measure_opts(detector, set_, embedder, readability)
    with Workspace(workspace) as ws:
        res = rescore_bundle(bundle, out, ws, detectors=dets, embedder=emb, readability=read, limit=limit,
                             mapping=mapping, judge_settings=parse_settings(judge_set))
    typer.echo(res["table"])
    typer.echo(f"Kendall's tau (published vs veribench ranking): {res['kendall_tau']:.4f} "
               f"(p = {res['kendall_p']:.4g}, n = {res['n_common']})")
    typer.echo(f"bundle written to {out}; run `veribench verify \"{out}\"`")


def register(app: typer.Typer) -> None:
    """Add the ``cycle`` sub-app to the root app (``veribench verify`` lives in :mod:`veribench.cli.verify`)."""
    app.add_typer(cycle_app, name="cycle")
