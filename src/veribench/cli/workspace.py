"""CLI group ``veribench workspace``: the workspace itself (``migrate``).

``workspace migrate -w WS`` is the command the schema check names when it refuses an
older workspace or app store (:data:`veribench.store.migrations.MIGRATE_COMMAND`): it brings
the workspace to this veribench's schema version in one transaction
(:func:`veribench.store.migrations.migrate`, run by a read-write open), then each app store
kept in the folder (the rating app's ``rubric.sqlite``, the writing app's ``write.sqlite``;
:func:`veribench.rubric.stores.migrate_stores`), and prints the versions and the notes.
"""

from __future__ import annotations

from pathlib import Path

import typer

from veribench.cli.common import WorkspaceOpt, check_workspace
from veribench.rubric.stores import migrate_stores
from veribench.store import schema
from veribench.store.workspace import DB_NAME, Workspace, connect

workspace_app = typer.Typer(help="The workspace itself: bring an older one to this veribench's schema.",
                            no_args_is_help=True)


@workspace_app.command("migrate")
def migrate_cmd(workspace: Path = WorkspaceOpt) -> None:
    """Migrate a workspace made by an older veribench to this one's schema version (one transaction: all steps or
    none); print the versions and what changed.

    Keep a copy first if an older veribench must still read the workspace. A workspace at
    the current version is left as it is; a newer one is refused (upgrade veribench).
    """
    check_workspace(workspace)
    con = connect(workspace / DB_NAME, read_only=True)
    try:
        before = schema.stored_version(con)
    finally:
        con.close()
    with Workspace(workspace, create=False) as ws:  # a read-write open migrates
        notes = [n for n in ws.migration_notes if not n.startswith("migrated workspace")]
    if before == schema.VERSION:
        typer.echo(f"workspace {workspace}: schema version {before}, the current one; nothing to migrate")
    else:
        typer.echo(f"workspace {workspace}: migrated from schema version {before} to {schema.VERSION}")
    for n in notes:
        typer.echo(f"  {n}")
    for n in migrate_stores(workspace):  # the app stores beside the database, if any
        typer.echo(f"  {n}")
