"""CLI: ``veribench publish`` - freeze a detector run into a bundle anyone can verify."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from veribench.bundles.publish import publish
from veribench.cli.common import ProgressOpt, WorkspaceOpt, open_workspace, out_opt, progress
from veribench.evaluate import honesty


def publish_cmd(
    workspace: Path = WorkspaceOpt,
    run: str = typer.Option(..., "--run", help="Run id, or a tag (its newest run)."),
    out: Path = out_opt("New (or empty) folder for the bundle.", kind="folder"),
    show_progress: bool = ProgressOpt,
) -> None:
    """Write a frozen, hashed bundle of one run: protocol as committed, commitment, amendments,
    timestamp tokens, corpus manifest, per-document scores, the event log and the tables.

    The workspace's log is verified and the run re-derived from the rows first; then
    `veribench verify OUT` re-checks everything from the bundle alone.
    """
    with progress("publish", show_progress), open_workspace(workspace) as ws:
        res = publish(ws, run, out)
    for note in res.notes:
        typer.echo(f"note: {note}")
    results = json.loads((res.out / "results.json").read_text(encoding="utf-8"))
    for line in honesty.lines(results):
        typer.secho(line, fg="red" if honesty.is_alert(line) else None, bold=honesty.is_alert(line))
    typer.echo(f"published run {res.run_id}: {res.documents:,} documents, {res.score_rows:,} score rows, "
               f"{res.files} files in {res.out}; root sha256 {res.root_sha256}")
    typer.echo(f"check it with: veribench verify {res.out}")
