"""Entry point of the ``veribench`` command.

Each command group lives in its own module under :mod:`veribench.cli` and exposes
``register(app)``, which adds its commands or sub-apps to the root Typer app.
"""

from __future__ import annotations

import importlib
import sys

import typer

app = typer.Typer(
    name="veribench",
    help="Benchmark AI-text detectors and humanizers so that anyone can re-run and verify every number.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

#: Command-group modules, in help order.
GROUPS = ["corpus", "protocol", "score", "evaluate", "demo", "cycles", "rate", "report", "humanize", "plan", "attack",
          "list", "write", "verify", "publish", "log"]



@app.command("version")
def version() -> None:
    """Print veribench's version."""
    from veribench import __version__

    typer.echo(__version__)


for _g in GROUPS:
    importlib.import_module(f"veribench.cli.{_g}").register(app)


def main() -> None:  # pragma: no cover - thin wrapper
    import gc

    from veribench.errors import VeribenchError

    try:
        app()
    except VeribenchError as e:
        typer.secho(f"error: {e}", fg="red", err=True)
        sys.exit(1)
    finally:
        # the command is done (files written and closed): the interpreter's last garbage
        # collection over every object torch and transformers left would take ~0.8 s at
        # exit; frozen objects are skipped by it (the OS reclaims the memory either way)
        gc.freeze()


if __name__ == "__main__":  # pragma: no cover
    main()
