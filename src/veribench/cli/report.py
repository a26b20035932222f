"""CLI: ``veribench report`` writes a static, offline HTML report site."""

from __future__ import annotations

from pathlib import Path

import typer

from veribench.cli.common import ProgressOpt, check_workspace, input_path, out_opt, progress
from veribench.cli.grammar import warn_deprecated
from veribench.report import build_report
from veribench.store.workspace import DB_NAME, DEFAULT_WORKSPACE


def report_cmd(
    ctx: typer.Context,
    inputs: list[Path] | None = typer.Argument(None, help="HumanizerBench cycle bundles, folders of bundles, "
                                               "detector-run bundles (`veribench publish`), or `veribench evaluate "
                                               "--json` files.", show_default=False, callback=input_path("path")),
    workspace: list[Path] | None = typer.Option(None, "--workspace", "-w", show_default=False,
                                                help="Workspace folder (repeatable): its newest run and its rubric "
                                                     "ratings (default: ./veribench-workspace when nothing else is "
                                                     "given)."),
    out: Path = out_opt("Site folder to write (created, or rebuilt if an earlier report lives there).",
                        Path("veribench-report"), kind="folder"),
    no_verify: bool = typer.Option(False, "--no-verify", help="Do not re-verify cycle bundles (shown as 'not verified')."),
    pdf: bool = typer.Option(False, "--pdf", help="Also write OUT/report.pdf: the same pages as one printable PDF "
                                                  "(WeasyPrint; charts stay vectors)."),
    show_progress: bool = ProgressOpt,
) -> None:
    """Write a self-contained static HTML report: open OUT/index.html from disk, or host the folder anywhere.

    Detector runs (newest run of each workspace), HumanizerBench cycles, trends and rubric ratings.

    Every page's numbers sit beside it in OUT/data/*.json.
    """
    workspaces = list(workspace or [])
    inputs = list(inputs or [])
    for w in workspaces:
        check_workspace(w)
    for p in inputs:
        if p.is_dir() and (p / DB_NAME).is_file():  # the old spelling: a workspace as an argument
            warn_deprecated(ctx, "veribench report WS", "veribench report -w WS")
    if not workspaces and not inputs:
        if not (Path(DEFAULT_WORKSPACE) / DB_NAME).is_file():
            raise typer.BadParameter("give a workspace (-w WS), a bundle or a results file", param_hint="INPUTS")
        workspaces = [Path(DEFAULT_WORKSPACE)]
    say = (lambda m: typer.echo(m, err=True)) if show_progress else None
    with progress("report", show_progress):
        res = build_report([*workspaces, *inputs], out, verify=not no_verify, progress=say, pdf=pdf)
    for n in res.notes:
        typer.secho(f"note: {n}", fg="yellow", err=True)
    typer.echo(f"wrote {len(res.pages)} pages and {res.figures} charts to {res.out} in {res.seconds:.1f} s; "
               f"open {res.out / 'index.html'}" + (f"; PDF {res.pdf}" if res.pdf else ""))
