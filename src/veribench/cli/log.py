"""CLI group: ``veribench log verify|show`` - the workspace's hash-chained event log."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from veribench.cli.common import WorkspaceOpt, friendly_errors

log_app = typer.Typer(help="Check and read the workspace's tamper-evident event log.", no_args_is_help=True)


@log_app.command("verify")
@friendly_errors
def verify_cmd(workspace: Path = WorkspaceOpt,
               json_out: Path | None = typer.Option(None, "--json", help="Write a machine-readable report to FILE "
                                                                            "('-' for standard output).")) -> None:
    """Check the chain and every table against it (protocols, documents, scores, links, runs, imports).

    Exit 0 when everything matches the log, 1 when anything does not.
    """
    from veribench.store import Workspace
    from veribench.store.logcheck import verify_workspace

    if not (workspace / "veribench.duckdb").is_file():
        typer.secho(f"error: {workspace}: not a workspace (no veribench.duckdb)", fg="red", err=True)
        raise typer.Exit(2)
    with Workspace(workspace, read_only=True) as ws:
        rep = verify_workspace(ws)
    text = json.dumps(rep.to_dict(), indent=2, ensure_ascii=False) + "\n"
    if json_out is not None and str(json_out) == "-":
        typer.echo(text, nl=False)
    else:
        for i, line in enumerate(rep.lines()):
            typer.secho(line, fg=None if i else ("green" if rep.ok else "red"))
        if json_out is not None:
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(text, encoding="utf-8")
    raise typer.Exit(0 if rep.ok else 1)


@log_app.command("show")
@friendly_errors
def show_cmd(workspace: Path = WorkspaceOpt,
             type_: str | None = typer.Option(None, "--type", help="Only events of this type."),
             last: int = typer.Option(50, "--last", help="Show the last N events (0 = all).")) -> None:
    """Print the events, oldest first: sequence number, time, type, hash and payload."""
    from veribench.store import Workspace
    from veribench.store.events import read_events

    with Workspace(workspace, read_only=True) as ws:
        evs = read_events(ws.con, types=[type_] if type_ else None)
    for e in evs[-last:] if last else evs:
        p = {k: v for k, v in e["payload"].items() if not k.endswith("_sha256") or k == "protocol_sha256"}
        typer.echo(f"{e['seq']:>6}  {e['at']}  {e['type']:<16} {e['hash'][:16]}…  "
                   f"{json.dumps(p, ensure_ascii=False, sort_keys=True)}")


def register(app: typer.Typer) -> None:
    app.add_typer(log_app, name="log")
