"""CLI group: ``veribench log verify|show`` - the workspace's hash-chained event log."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from veribench.cli.common import FormatOpt, OutputFormat, WorkspaceOpt, choice, json_opt, open_workspace, write_json
from veribench.store.events import EVENT_TYPES, read_events
from veribench.store.logcheck import verify_workspace

log_app = typer.Typer(help="Check and read the workspace's tamper-evident event log.", no_args_is_help=True)


@log_app.command("verify")
def verify_cmd(workspace: Path = WorkspaceOpt,
               json_out: Path | None = json_opt("Also write the machine-readable report to this file."),
               fmt: OutputFormat = FormatOpt) -> None:
    """Check the chain and every table against it (protocols, documents, scores, links, runs, imports).

    Exit 0 when everything matches the log, 1 when anything does not (or there is no workspace).
    """
    with open_workspace(workspace, read_only=True) as ws:
        rep = verify_workspace(ws)
    doc = rep.to_dict()
    if fmt == "json":
        typer.echo(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        for i, line in enumerate(rep.lines()):
            typer.secho(line, fg=None if i else ("green" if rep.ok else "red"))
    if json_out is not None:
        write_json(json_out, doc)
    raise typer.Exit(0 if rep.ok else 1)


@log_app.command("show")
def show_cmd(workspace: Path = WorkspaceOpt,
             type_: str | None = typer.Option(None, "--type", help=f"Only events of this type: {', '.join(EVENT_TYPES)}.",
                                              callback=choice(EVENT_TYPES, "event type")),
             last: int = typer.Option(50, "--last", min=0, help="Show the last N events (0 = all).")) -> None:
    """Print the events, oldest first: sequence number, time, type, hash and payload."""
    with open_workspace(workspace, read_only=True) as ws:
        evs = read_events(ws.con, types=[type_] if type_ else None)
    for e in evs[-last:] if last else evs:
        p = {k: v for k, v in e["payload"].items() if not k.endswith("_sha256") or k == "protocol_sha256"}
        typer.echo(f"{e['seq']:>6}  {e['at']}  {e['type']:<16} {e['hash'][:16]}…  "
                   f"{json.dumps(p, ensure_ascii=False, sort_keys=True)}")
