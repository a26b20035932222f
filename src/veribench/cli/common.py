"""Options and checks shared by the commands (the grammar: ``docs/cli.md``).

One declaration per shared option (``-w``, ``-o``, ``--json``, ``--format``,
``--progress``, ``-q``), and the checks every command runs before it touches anything:
a path it reads must exist (one wording for a missing file), a workspace it only reads
must exist and is never created, a workspace path that is a file is refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import typer

from veribench.cli.grammar import CliError, friendly_errors, warn
from veribench.detectors.pipeline import check_budget
from veribench.errors import InputError, SettingError
from veribench.progress import Progress
from veribench.registry import create, parse_settings
from veribench.store.workspace import DB_NAME, DEFAULT_WORKSPACE, Workspace

__all__ = ["CliError", "FormatOpt", "OutputFormat", "ProgressOpt", "QuietOpt", "WorkspaceOpt", "build", "check_workspace",
           "friendly_errors", "input_path", "json_opt", "max_spend_opt", "open_workspace", "out_opt", "print_json",
           "progress", "settings", "warn", "write_json"]

#: ``--format``: what a command prints on standard output.
OutputFormat = Literal["text", "json"]

WorkspaceOpt = typer.Option(Path(DEFAULT_WORKSPACE), "--workspace", "-w",
                            help="Workspace folder (holds veribench.duckdb).")
FormatOpt = typer.Option("text", "--format", help="What to print: text (for people) or json (for programs).")
ProgressOpt = typer.Option(True, "--progress/--no-progress",
                           help="Show progress on standard error: a bar on a terminal, else a line every few seconds.")
QuietOpt = typer.Option(False, "--quiet", "-q", help="One summary line instead of the full report.")


def out_opt(help: str, default: Any = ..., **kw: Any) -> Any:
    """``--out/-o PATH``: where the command writes its output."""
    return typer.Option(default, "--out", "-o", help=help, **kw)


def _budget(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> float | None:
    try:
        return check_budget(value, max(param.opts, key=len))
    except InputError as e:
        raise typer.BadParameter(e.reason, ctx=ctx, param=param) from None


def max_spend_opt(help: str) -> Any:
    """``--max-spend N``: a budget, finite and >= 0 (:func:`veribench.detectors.pipeline.check_budget`,
    the one rule for budgets), checked when the command line is read (a bad one: exit 2)."""
    return typer.Option(None, "--max-spend", help=help, callback=_budget)


def json_opt(help: str = "Also write the result as JSON to this file.") -> Any:
    """``--json FILE``: a file to write the machine-readable result to (never a switch)."""
    return typer.Option(None, "--json", help=help)


# ------------------------------------------------------------------------------ paths
def _exists(kind: str, p: Path) -> str | None:
    """What is wrong with ``p`` as a ``kind`` (file, folder, path) to read, or None."""
    if not p.exists():
        return "no such file or folder"
    if kind == "file" and p.is_dir():
        return "is a folder, not a file"
    if kind == "folder" and not p.is_dir():
        return "is a file, not a folder"
    return None


def input_path(kind: Literal["file", "folder", "path"] = "file") -> Callable[..., Any]:
    """A typer callback that refuses a path to read that is missing or of the wrong kind,
    before the command starts (so nothing is created): ``error: PATH: no such file or
    folder (check the path given to --input)``. ``hf://`` sources are left to the
    command. Use as ``typer.Option(..., callback=input_path("file"))``."""

    def check(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
        if ctx.resilient_parsing:
            return value
        name = max(param.opts, key=len) if param.param_type_name == "option" else \
            (getattr(param, "metavar", None) or str(param.name).upper())
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if v is None or str(v).startswith("hf://"):
                continue
            wrong = _exists(kind, Path(v))
            if wrong:
                raise CliError(str(v), wrong, f"check the path given to {name}")
        return value

    return check


# ------------------------------------------------------------------------------ workspaces
def check_workspace(path: Path, *, exists: bool = True, store: str = DB_NAME, fix: str | None = None) -> None:
    """Refuse a workspace path that is a file, and (``exists``) one without ``store``
    (the workspace database, or a store kept beside it), naming the option and what to do.

    Raises:
        CliError: in the one error style, before anything is created.
    """
    where = f"--workspace {path}"
    if path.exists() and not path.is_dir():
        raise CliError(where, "is a file, not a workspace folder", f"pass the folder that holds {DB_NAME}")
    if exists and not (path / store).is_file():
        what = "no workspace here" if store == DB_NAME else f"no {store} here"
        raise CliError(where, what, fix or f"{DB_NAME} is missing; an import creates it: veribench import ... -w {path}")


def open_workspace(path: Path, *, create: bool = False, read_only: bool = False) -> Workspace:
    """The workspace at ``path``, after :func:`check_workspace`.

    Args:
        create: make a new workspace when there is none (the commands that import or
            score); otherwise a missing workspace is refused and nothing is created.
        read_only: open without write access (several readers may share it).

    An older workspace opened read-write is migrated; each migration note is printed.
    """
    check_workspace(path, exists=not create)
    ws = Workspace(path, read_only=read_only, create=create)
    for note in ws.migration_notes:
        typer.secho(f"note: {note}", fg="yellow", err=True)
    return ws


# ------------------------------------------------------------------------------ settings, output, progress
def settings(pairs: list[str] | None, option: str = "--set") -> dict[str, Any]:
    """``--set key=value`` pairs as a settings dict (values read as JSON when they parse).

    Raises:
        CliError: an item without ``=``.
    """
    try:
        return parse_settings(pairs)
    except ValueError as e:
        raise CliError(option, str(e).removeprefix("--set "), "write key=value") from None


def build(kind: str, name: str, conf: dict[str, Any], option: str = "--set") -> Any:
    """Plug-in ``name`` of ``kind`` built with ``conf`` (:func:`veribench.registry.create`);
    a setting it does not take is named with "did you mean", against ``option``.

    Raises:
        CliError: an unknown or bad setting; RegistryError: an unknown name.
    """
    try:
        return create(kind, name, conf)
    except SettingError as e:
        raise CliError(option, str(e)) from None
    except (TypeError, ValueError) as e:
        raise CliError(option, f"{kind} {name!r}: {' '.join(str(e).split())}",
                       f"veribench list {kind}s shows the settings") from None


def write_json(path: Path, payload: Any, *, indent: int = 2, **kw: Any) -> None:
    """Write ``payload`` as JSON to ``path`` (folders created), ending with a newline."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=indent, ensure_ascii=False, **kw) + "\n", encoding="utf-8")


def print_json(payload: Any, **kw: Any) -> None:
    """Print ``payload`` as JSON on standard output (``--format json``)."""
    typer.echo(json.dumps(payload, indent=2, ensure_ascii=False, **kw))


@contextmanager
def progress(description: str, enabled: bool) -> Iterator[Progress]:
    """The command's progress reporter for its whole run (:class:`veribench.progress.Progress`):
    with ``--progress`` and output that is not a terminal, a line every few seconds names
    the step that runs, also while no count moves; on a terminal the steps show their own
    bars."""
    with Progress(description, enabled=enabled, bar=False) as p:
        yield p
