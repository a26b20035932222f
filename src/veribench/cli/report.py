"""CLI group: ``veribench report`` writes a static, offline HTML report site."""

from __future__ import annotations

from pathlib import Path

import typer

from veribench.cli.common import friendly_errors


@friendly_errors
def report(
    inputs: list[Path] = typer.Argument(..., help="Workspace folders, HumanizerBench cycle bundles, folders of bundles, "
                                                   "or `veribench evaluate --json` files.", show_default=False),
    out: Path = typer.Option(Path("veribench-report"), "--out", "-o", help="Site folder to write (created, or rebuilt "
                                                                         "if an earlier report lives there)."),
    no_verify: bool = typer.Option(False, "--no-verify", help="Do not re-verify cycle bundles (shown as 'not verified')."),
    pdf: bool = typer.Option(False, "--pdf", help="Also write OUT/report.pdf: the same pages as one printable PDF "
                                                  "(WeasyPrint; charts stay vectors)."),
) -> None:
    """Write a self-contained static HTML report: open OUT/index.html from disk, or host the folder anywhere.

    Detector runs (newest run of each workspace), HumanizerBench cycles, trends and rubric ratings.

    Every page's numbers sit beside it in OUT/data/*.json.
    """
    from veribench.report import build_report

    res = build_report(inputs, out, verify=not no_verify, progress=lambda m: typer.echo(m, err=True), pdf=pdf)
    for n in res.notes:
        typer.secho(f"note: {n}", fg="yellow", err=True)
    typer.echo(f"wrote {len(res.pages)} pages and {res.figures} charts to {res.out} in {res.seconds:.1f} s; "
               f"open {res.out / 'index.html'}" + (f"; PDF {res.pdf}" if res.pdf else ""))


def register(app: typer.Typer) -> None:
    """Add ``report`` to the root app."""
    app.command("report")(report)
