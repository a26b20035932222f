"""CLI group: rate (placeholder until its module lands)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this group's commands to the root app."""
