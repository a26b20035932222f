"""CLI group: ``veribench protocol commit|show``."""

from __future__ import annotations

from pathlib import Path

import typer

from .common import WorkspaceOpt, friendly_errors

protocol_app = typer.Typer(help="Commit scoring rules before any scan; amend them in the open.", no_args_is_help=True)


@protocol_app.command("commit")
@friendly_errors
def commit_cmd(file: Path = typer.Argument(..., help="Protocol file (.toml or .yaml)."), workspace: Path = WorkspaceOpt):
    """Record the protocol's SHA-256 and today's date in the workspace, before any scan.

    Warns when the selected corpus is too small for the comparisons or gaps the protocol
    declares (a Wilson half-width above 5 points at a 5% FPR, or a gap that cannot detect
    10 points with 80% power; `veribench plan` gives the sizes)."""
    from ..protocol.commit import commit
    from ..store import Workspace

    with Workspace(workspace) as ws:
        rec = commit(ws, file)
    state = "committed" if rec.new else "already committed"
    typer.echo(f"{state}: {rec.name} sha256={rec.hash} at {rec.committed_at:%Y-%m-%dT%H:%M:%SZ}")
    for a in rec.amendments:
        typer.echo(f"  amendment {a.get('date')}: {a.get('summary')} (supersedes {a.get('supersedes')})")
    for w in rec.warnings:
        typer.echo(f"warning: {w}")


@protocol_app.command("show")
@friendly_errors
def show_cmd(workspace: Path = WorkspaceOpt):
    """List committed protocols with their hashes, dates and amendments."""
    from ..store import Workspace

    with Workspace(workspace) as ws:
        rows = ws.query("SELECT name, protocol_hash, committed_at, path, amendments FROM protocols ORDER BY committed_at")
    for name, h, at, path, am in rows:
        typer.echo(f"{at:%Y-%m-%dT%H:%M:%SZ}  {name}  {h}  {path}  amendments={am}")


def register(app: typer.Typer) -> None:
    app.add_typer(protocol_app, name="protocol")
