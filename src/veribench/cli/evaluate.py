"""CLI: ``veribench evaluate``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from .common import WorkspaceOpt, friendly_errors


@friendly_errors
def evaluate_cmd(
    workspace: Path = WorkspaceOpt,
    protocol: Optional[Path] = typer.Option(None, "--protocol", "-p", help="Committed protocol file (TOML/YAML)."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the results JSON here."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write Markdown, CSV, JSON, HTML and raw scores here."),
    no_score: bool = typer.Option(False, "--no-score", help="Never run a detector; use stored scores only."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not print the tables."),
):
    """Evaluate stored scores under a protocol; print Table 1 and Table 2.

    Without --protocol every stored detector is evaluated with AI probability > 0.5
    (its own verdict when it has no probability), on all documents (no split).
    """
    from ..evaluate import evaluate_workspace
    from ..evaluate.tables import print_tables, wide_console, write_outputs
    from ..protocol.model import load_protocol
    from ..store import Workspace

    con = wide_console()
    proto = load_protocol(protocol) if protocol else None
    with Workspace(workspace) as ws:
        if ws.document_count() == 0:
            raise typer.BadParameter(f"workspace {workspace} has no documents; run `veribench import` first")
        res = evaluate_workspace(ws, proto, allow_scoring=not no_score, progress=not quiet, log=con.print)
        if out:
            write_outputs(res, out, ws)
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(res, indent=1, allow_nan=False), encoding="utf-8")
    if not quiet:
        print_tables(res, con)
        for w in res["warnings"][:20]:
            con.print(f"[yellow]warning:[/] {w}")
        if len(res["warnings"]) > 20:
            con.print(f"[yellow]… {len(res['warnings']) - 20} more warnings in the results JSON[/]")


def register(app: typer.Typer) -> None:
    app.command("evaluate")(evaluate_cmd)
