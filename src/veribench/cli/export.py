"""CLI group ``veribench export scores|documents``: raw per-document data of a workspace
(read only; a missing workspace is refused, never created)."""

from __future__ import annotations

from pathlib import Path

import typer

from veribench.cli.common import WorkspaceOpt, check_filters, open_workspace, out_opt
from veribench.cli.grammar import CliUsageError
from veribench.corpus.stored import export_documents
from veribench.evaluate.run import export_run

export_app = typer.Typer(help="Export raw per-document data from a workspace.", no_args_is_help=True)


@export_app.command("documents")
def export_documents_cmd(
    out: Path = out_opt("Output JSONL file."),
    corpus: str | None = typer.Option(None, "--corpus", help="Only this corpus."),
    workspace: Path = WorkspaceOpt,
) -> None:
    """Write one JSON object per document (import schema plus source_id, attack, edits)."""
    with open_workspace(workspace, read_only=True) as ws:
        check_filters(ws, corpus=corpus)
        n = export_documents(ws, out, corpus=corpus)
    typer.echo(f"wrote {n} documents to {out}")


@export_app.command("scores")
def export_scores(
    out: Path = out_opt("Output file: .csv or .parquet."),
    run: str | None = typer.Option(None, "--run", help="Export one evaluation run (its tag or id; the newest "
                                   "run of a tag): each document x detector it evaluated, with the split side, "
                                   "the rule, the threshold, counted/flagged and the exclusion reason."),
    workspace: Path = WorkspaceOpt,
) -> None:
    """Write raw per-document scores (one row per document x detector, with text_differs), or one run's rows."""
    if out.suffix.lower() not in (".csv", ".parquet"):
        raise CliUsageError(f"--out {out}", "the export format must be .csv or .parquet",
                            "name the file *.csv or *.parquet")
    with open_workspace(workspace, read_only=True) as ws:
        if run is not None:
            p, n, run_id = export_run(ws, run, out)
            typer.echo(f"wrote {n} rows of run {run_id} to {p}")
            return
        p = ws.export_scores(out)
        n = ws.query(f"SELECT count(*) FROM ({ws.RAW_SCORES_SQL})")[0][0]
    typer.echo(f"wrote {n} rows to {p}")
