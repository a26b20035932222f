"""The console every command prints its tables on (a module of its own, so that a
command can open it before importing the evaluation)."""

from __future__ import annotations

from typing import Any


def wide_console() -> Any:
    """A rich Console at least 160 columns wide, so the tables do not fold in pipes and CI logs."""
    import shutil

    from rich.console import Console

    return Console(width=max(shutil.get_terminal_size((200, 40)).columns, 160))
