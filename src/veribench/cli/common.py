"""Shared CLI options and error reporting."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from veribench.store.workspace import DEFAULT_WORKSPACE

WorkspaceOpt = typer.Option(Path(DEFAULT_WORKSPACE), "--workspace", "-w", help="Workspace folder (DuckDB inside).")


def friendly_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn veribench errors into a one-line message and exit code 1, and Ctrl-C into a
    one-line message and exit code 130 (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*a: Any, **kw: Any) -> Any:
        from veribench.errors import VeribenchError

        try:
            return fn(*a, **kw)
        except VeribenchError as e:
            typer.secho(f"error: {e}", fg="red", err=True)
            raise typer.Exit(1) from None
        except FileNotFoundError as e:
            typer.secho(f"error: {e}", fg="red", err=True)
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            typer.secho("interrupted: what was stored before stays stored (each batch of scores is committed "
                        "as it arrives); run the same command again to go on", fg="yellow", err=True)
            raise typer.Exit(130) from None

    return wrapper
