"""Options and checks shared by the commands (the grammar: ``docs/cli.md``).

One declaration per shared option (``-w``, ``-o``, ``--json``, ``--format``,
``--progress``, ``-q``), and the checks every command runs before it touches anything:
a path it reads must exist (one wording for a missing file), a workspace it only reads
must exist and is never created, a workspace path that is a file is refused.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import duckdb
import typer

from veribench.cli.grammar import CliError, CliUsageError, friendly_errors, on_failure, warn
from veribench.detectors.pipeline import check_budget
from veribench.errors import InputError, RegistryError, VeribenchError, did_you_mean
from veribench.progress import Progress
from veribench.records import CALL_FAILURES, STATUS_CODES, TEXT_FAILURES
from veribench.registry import create, get, parse_settings, settings_of
from veribench.store.workspace import DB_NAME, DEFAULT_WORKSPACE, Workspace

__all__ = ["CliError", "CliUsageError", "FormatOpt", "OutputFormat", "ProgressOpt", "QuietOpt", "WorkspaceOpt", "build",
           "check_value", "check_workspace", "choice", "friendly_errors", "input_path", "json_opt", "max_spend_opt",
           "open_workspace", "out_opt", "output_path", "WRITE_OPTIONS", "print_json", "progress", "remove_if_new", "setting_errors", "settings",
           "warn", "write_json"]

#: ``--format``: what a command prints on standard output.
OutputFormat = Literal["text", "json"]

WorkspaceOpt = typer.Option(Path(DEFAULT_WORKSPACE), "--workspace", "-w",
                            help="Workspace folder (holds veribench.duckdb).")
#: The port ``write serve`` listens on by default, and so the port of the links ``write
#: invite`` and ``write reissue`` print when given neither ``--base-url`` nor ``--port``.
WRITE_PORT = 8100
FormatOpt = typer.Option("text", "--format", help="What to print: text (for people) or json (for programs).")
ProgressOpt = typer.Option(True, "--progress/--no-progress",
                           help="Show progress on standard error: a bar on a terminal, else a line every few seconds.")
QuietOpt = typer.Option(False, "--quiet", "-q", help="One summary line instead of the full report.")
RetryFailedOpt = typer.Option(False, "--retry-failed", help="Also send again the stored failures that describe "
                               "the text (too_short, unscorable, ...). Stored call failures (auth, site_down, ...) "
                               "are sent again by every run.")


#: Every option that names a place veribench writes (a file or a folder), each checked by
#: :func:`output_path` when the command line is read; the one list, which
#: tests/cli/test_output_paths.py sweeps over every command. ``cycle new``'s DIRECTORY
#: argument is checked the same way.
WRITE_OPTIONS = ("--out", "-o", "--json", "--output", "--record-dir", "--secrets-dir")


def _output_problem(kind: str, p: Path) -> str | None:
    """What stops writing a ``kind`` (file, folder) at ``p``, or None: ``p`` is of the other
    kind, a folder above it is a file, or the nearest existing folder above it is not writable."""
    if kind == "folder" and p.exists() and not p.is_dir():
        return "is a file, not a folder"
    if kind == "file" and p.is_dir():
        return "is a folder, not a file"
    above = next((a for a in p.absolute().parents if a.exists()), None)
    if above is not None and not above.is_dir():
        return f"{above} is a file, not a folder"
    if above is not None and not os.access(above, os.W_OK | os.X_OK):
        return f"{above} is not writable"
    return None


def output_path(kind: Literal["file", "folder"] = "file") -> Callable[..., Any]:
    """A typer callback that refuses a path to write that cannot be written, when the command
    line is read, so before any work and before anything is logged (exit 1, refused input, like
    a workspace path under a file):
    ``error: --out afile/x.csv: afile is a file, not a folder (pass a path ... to --out)``.
    ``-`` (standard output) and an unset option pass. Used by every output option
    (:data:`WRITE_OPTIONS`: :func:`out_opt`, :func:`json_opt`, ``--record-dir``,
    ``--secrets-dir``) and written-to argument (``cycle new DIRECTORY``, named as its metavar)."""

    def check(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
        if ctx.resilient_parsing or value is None or str(value) == "-":
            return value
        name = max(param.opts, key=len) if param.param_type_name == "option" else str(param.name).upper()
        wrong = _output_problem(kind, Path(value))
        if wrong:
            raise CliError(f"{name} {value}", wrong, f"pass a {kind} path that can be written to {name}")
        return value

    return check


def out_opt(help: str, default: Any = ..., kind: Literal["file", "folder"] = "file", **kw: Any) -> Any:
    """``--out/-o PATH``: where the command writes its output, a ``kind`` (file or folder),
    checked by :func:`output_path` when the command line is read."""
    return typer.Option(default, "--out", "-o", help=help, callback=output_path(kind), **kw)


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
    return typer.Option(None, "--json", help=help, callback=output_path("file"))


# ------------------------------------------------------------------------------ choices
def check_value(option: str, value: str, known: Iterable[str], what: str = "value", among: str = "known") -> str:
    """``value`` when it is one of ``known``; else a usage error (exit 2) naming the option,
    the closest value ("did you mean") and every known one:
    ``error: --split: unknown value 'bogus' (did you mean 'train'? known: extra, train)``.

    Args:
        among: how the list of known values is introduced (``"known for en"``).

    Raises:
        CliUsageError: ``value`` is not known.
    """
    names = sorted({str(k) for k in known})
    if value in names:
        return value
    hint = did_you_mean(value, names)
    raise CliUsageError(option, f"unknown {what} {value!r}",
                        (f"{hint} " if hint else "") + f"{among}: {', '.join(names) or '(none)'}")


def refuse_failures(where: str, statuses: Sequence[str], what: str = "texts") -> None:
    """End a command that finished with failed texts with exit 1 and one line that counts
    them by status and says what the next run does (the output still lists every row):
    ``error: out.jsonl: 3 of 5 texts failed (auth: 3); ... (call failures are sent again
    by the next run; failures that describe the text with --retry-failed)``. Nothing
    happens when every status is ``ok`` (or a text was left unsent by ``--max-spend``: its
    row says so, and the budget line says the run stopped).

    Raises:
        CliError: any status other than ``ok``.
    """
    bad = Counter(s for s in statuses if s != "ok" and s in STATUS_CODES)  # a text left by --max-spend did not fail
    if not bad:
        return
    why = ", ".join(f"{k}: {v}" for k, v in sorted(bad.items()))
    raise CliError(where, f"{sum(bad.values())} of {len(statuses)} {what} failed ({why}); the output lists each with "
                   "its status", f"call failures ({', '.join(CALL_FAILURES)}) are sent again by the next run; failures "
                   f"that describe the text ({', '.join(TEXT_FAILURES)}) with --retry-failed")


#: The document columns a command-line filter may name (``--corpus``, ``--arm``, ``--label``).
FILTER_COLUMNS = {"--corpus": ("corpus", "corpus"), "--arm": ("arm", "arm"), "--label": ("label", "label")}


def check_filters(ws: Any, **given: str | None) -> None:
    """Refuse a document filter that selects nothing: each of ``corpus``, ``arm``, ``label``
    that is given must be a value some stored document carries, else a usage error (exit 2)
    naming the option, the closest stored value and every stored one
    (``error: --label: unknown label 'robot' (did you mean ...? stored: ai, human)``).
    A filter that matched no document used to give "0 derived" or an empty file with exit 0.

    Args:
        ws: an open workspace. given: ``corpus=``, ``arm=``, ``label=`` (``None``: not given).

    Raises:
        CliUsageError: a given value no stored document carries.
    """
    for key, value in given.items():
        if value is None:
            continue
        option = f"--{key}"
        column, what = FILTER_COLUMNS[option]
        stored = [str(v) for (v,) in ws.query(f"SELECT DISTINCT {column} FROM documents WHERE {column} IS NOT NULL")]
        check_value(option, value, stored, what, among="stored")


def choice(known: Iterable[str], what: str = "value", *, upper: bool = False) -> Callable[..., Any]:
    """A typer callback that refuses an option value outside ``known`` when the command
    line is read, before anything runs (:func:`check_value`; ``None`` passes). ``upper``:
    the value is read in capitals (``--subtask a`` is ``A``). Use as
    ``typer.Option(None, "--split", callback=choice(FILES))``."""
    names = list(known)

    def check(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
        if ctx.resilient_parsing or value is None:
            return value
        v = str(value).upper() if upper else str(value)
        return check_value(max(param.opts, key=len), v, names, what)

    return check


def validated(check: Callable[[Any], Any]) -> Callable[..., Any]:
    """A typer callback that runs ``check(value)`` (the rule's one home, e.g.
    :func:`veribench.scales.get_scale`) when the command line is read and turns its
    refusal into a usage error naming the option (exit 2): ``error: --scale: unknown scale
    'foo' (known scales: ...)``. ``None`` passes; the value itself is kept."""

    def callback(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
        if ctx.resilient_parsing or value is None:
            return value
        try:
            check(value)
        except (InputError, RegistryError) as e:
            msg = " ".join(str(getattr(e, "reason", None) or e).split())
            what, sep, fix = msg.partition("; ") if "; " in msg else msg.partition(". ")
            raise CliUsageError(max(param.opts, key=len), what.rstrip("."),
                                (fix[:1].lower() + fix[1:]).rstrip(".") if sep else None) from None
        return value

    return callback


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
    """Refuse a workspace path that is a file or lies under one, and (``exists``) one without ``store``
    (the workspace database, or a store kept beside it), naming the option and what to do.

    Raises:
        CliError: in the one error style, before anything is created.
    """
    where = f"--workspace {path}"
    if path.exists() and not path.is_dir():
        raise CliError(where, "is a file, not a workspace folder", f"pass the folder that holds {DB_NAME}")
    blocked = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocked is not None:  # creating the folder would fail with NotADirectoryError
        raise CliError(where, f"{blocked} is a file, not a folder", f"pass the folder that holds {DB_NAME}")
    if exists and not (path / store).is_file():
        what = "no workspace here" if store == DB_NAME else f"no {store} here"
        raise CliError(where, what, fix or f"{DB_NAME} is missing; an import creates it: veribench import ... -w {path}")


#: Tables that hold no data of their own in a new store: the schema version, the session secret.
_META_TABLES = re.compile(r"(^|_)meta$")


def _duckdb_empty(db: Path) -> bool:
    """Whether the workspace database ``db`` holds no row outside ``schema_meta`` (unsure: False)."""
    try:
        con = duckdb.connect(str(db), read_only=True)
    except Exception:
        return False
    try:
        tables = [t for (t,) in con.execute("SELECT table_name FROM information_schema.tables "
                                            "WHERE table_schema = 'main' AND table_type = 'BASE TABLE'").fetchall()]
        return not any(con.execute(f'SELECT 1 FROM "{t}" LIMIT 1').fetchone()
                       for t in tables if not _META_TABLES.search(t))
    except Exception:
        return False
    finally:
        con.close()


def _sqlite_empty(db: Path) -> bool:
    """Whether the SQLite store ``db`` (an app's store) holds no row outside its ``*_meta``
    table (unsure: False)."""
    try:
        con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    except Exception:
        return False
    try:
        tables = [t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                            "AND name NOT LIKE 'sqlite_%'").fetchall()]
        return not any(con.execute(f'SELECT 1 FROM "{t}" LIMIT 1').fetchone()
                       for t in tables if not _META_TABLES.search(t))
    except Exception:
        return False
    finally:
        con.close()


def remove_if_new(store: Path, close: Callable[[], None] | None = None) -> None:
    """Call before a command creates the store file ``store`` (the workspace database, or an
    app's SQLite store beside it): if the command then ends in an error or an interrupt
    (:func:`veribench.cli.grammar.on_failure`), the store it created is removed when it holds
    no data (only its schema version or session secret), with its journal files, and so is
    its folder when this command created that too and nothing else is left in it. A store
    or folder that existed before the command is never removed, nor one that holds data
    (a scoring run's committed batches stay).

    Args:
        store: the file about to be created (nothing is registered when it exists).
        close: closes the command's connection to it first (it may still be open).
    """
    if store.exists():
        return
    folder = store.parent
    new_folders = [f for f in [folder, *folder.parents] if not f.exists()]
    empty = _duckdb_empty if store.suffix == ".duckdb" else _sqlite_empty

    def undo() -> None:
        if close is not None:
            close()
        if not store.is_file() or not empty(store):
            return
        for f in (store, *(store.with_name(store.name + x) for x in (".wal", "-wal", "-shm", "-journal"))):
            f.unlink(missing_ok=True)
        for f in new_folders:  # innermost first; only while nothing but empty folders is left
            if f.is_dir() and not any(p.is_file() or p.is_symlink() for p in f.rglob("*")):
                shutil.rmtree(f)

    on_failure(undo)


def open_workspace(path: Path, *, create: bool = False, read_only: bool = False) -> Workspace:
    """The workspace at ``path``, after :func:`check_workspace`.

    Args:
        create: make a new workspace when there is none (the commands that import or
            score); otherwise a missing workspace is refused and nothing is created. A
            workspace this command creates is removed again when the command ends in an
            error while it holds nothing (:func:`remove_if_new`).
        read_only: open without write access (several readers may share it).

    An older workspace opened read-write is migrated; each migration note is printed.
    """
    check_workspace(path, exists=not create)
    holder: list[Workspace] = []
    if create and not read_only:
        remove_if_new(path / DB_NAME, close=lambda: [w.close() for w in holder])
    ws = Workspace(path, read_only=read_only, create=create)
    holder.append(ws)
    for note in ws.migration_notes:
        typer.secho(f"note: {note}", fg="yellow", err=True)
    return ws


# ------------------------------------------------------------------------------ settings, output, progress
def settings(pairs: list[str] | None, option: str = "--set") -> dict[str, Any]:
    """``--set key=value`` pairs as a settings dict (values read as JSON when they parse).

    Raises:
        CliError: an item without ``=`` (``--set: 'novalue': expects key=value (...)``).
    """
    for item in pairs or []:
        if "=" not in item:
            raise CliError(option, f"{item!r}: expects key=value", f"write {option} KEY=VALUE")
    return parse_settings(pairs)


#: Python's wordings for a value of the wrong kind, and ours.
_PY_VALUE_ERRORS = ((re.compile(r"invalid literal for int\(\) with base 10: (.+)"), r"not an integer: \1"),
                    (re.compile(r"could not convert string to float: (.+)"), r"not a number: \1"))
_UNKNOWN = re.compile(r"unknown (?P<kind>setting|parameter) '(?P<key>[^']+)'(?: of (?P<owner>.+?))?"
                      r"(?: \((?P<hint>[^()]*)\))?(?=;|$)")
_MISSING = re.compile(r"missing \d+ required (?:positional|keyword-only) arguments?: (?P<keys>.+)$")


def _expected_type(p: inspect.Parameter) -> type | None:
    """``int`` or ``float`` when setting ``p`` takes a number: read from its default
    (``chunk_size=1024``) or, without one, its annotation (``max_tokens: int | None``)."""
    d = p.default
    if isinstance(d, bool):
        return None
    if isinstance(d, (int, float)):
        return type(d)
    ann = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", "")
    parts = {x.strip() for x in str(ann).replace("Optional[", "").rstrip("]").split("|")} - {"None"}
    return {"int": int, "float": float}.get(parts.pop()) if len(parts) == 1 else None


def check_setting_types(params: Sequence[inspect.Parameter], conf: dict[str, Any], option: str = "--set") -> None:
    """Refuse a ``--set`` value that is text where the setting takes a number (known from
    its default or annotation, :func:`_expected_type`), before the plug-in is built.

    Raises:
        CliError: ``--set: chunk_size: not an integer: 'abc' (write chunk_size=N, e.g. the default 1024)``.
    """
    by_name = {p.name: p for p in params}
    for key, value in conf.items():
        p = by_name.get(key)
        want = _expected_type(p) if p is not None else None
        if want is None or not isinstance(value, str):
            continue
        example = f", e.g. the default {p.default!r}" if isinstance(p.default, (int, float)) else ""  # type: ignore[union-attr]
        noun = "an integer" if want is int else "a number"
        raise CliError(option, f"{key}: not {noun}: {value!r}", f"write {option} {key}=N{example}")


def _setting_error(e: BaseException, conf: dict[str, Any], option: str, owner: str) -> CliError | None:
    """``e`` (raised while plug-in ``owner`` was built from ``conf``) as ``--set: <key>:
    <what> (<fix>)`` when it can be pinned on one setting: an unknown key (the message
    of :func:`veribench.errors.unknown_key`), a missing required one, an error naming the
    key (``InputError.field``, or the key quoted), or one quoting a value given; else None."""
    msg = " ".join(str(e).split())
    m = _UNKNOWN.search(msg)
    if m:
        others = [x.group("key") for x in _UNKNOWN.finditer(msg)][1:]
        what = f"unknown {m.group('kind')} of {m.group('owner') or owner}"
        if others:
            what += f" (and {', '.join(repr(k) for k in others)})"
        return CliError(option, f"{m.group('key')}: {what}", m.group("hint") or "veribench list shows the settings")
    m = _MISSING.search(msg)
    if m:
        keys = re.findall(r"'([^']+)'", m.group("keys"))
        if keys:
            return CliError(option, f"{keys[0]}: required by {owner}, not given",
                            f"add {' '.join(f'{option} {k}=VALUE' for k in keys)}")
    key = getattr(e, "field", None) if isinstance(e, InputError) else None
    reason = getattr(e, "reason", None) if isinstance(e, InputError) else None
    if key not in conf:
        key, reason = None, None
        named = [k for k in conf if f"'{k}'" in msg]
        valued = [k for k, v in conf.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)
                  and (repr(v) in msg or f"'{v}'" in msg)]
        if len(named) == 1:
            key = named[0]
        elif len(valued) == 1:
            key = valued[0]
    if key is None:
        return None
    what = reason or msg
    for rx, repl in _PY_VALUE_ERRORS:
        what = rx.sub(repl, what)
    what, _, fix = what.partition("; ")
    return CliError(option, f"{key}: {what.rstrip('.')}", fix or f"check {option} {key}=...")


@contextmanager
def setting_errors(conf: dict[str, Any], owner: str, option: str = "--set") -> Iterator[None]:
    """Build a plug-in inside this block: an error it raises about one of ``conf``'s settings
    becomes ``error: --set: <key>: <what> (<fix>)`` (:func:`_setting_error`); a plug-in name
    not known passes through (its own "did you mean"), and so does any other veribench error.

    Raises:
        CliError: a bad setting, or a ``TypeError`` / ``ValueError`` of the plug-in's own
            (named with the plug-in).
    """
    try:
        yield
    except (RegistryError, CliError):
        raise
    except (VeribenchError, TypeError, ValueError) as e:
        err = _setting_error(e, conf, option, owner)
        if err is not None:
            raise err from None
        if isinstance(e, VeribenchError):
            raise
        raise CliError(option, f"{owner}: {' '.join(str(e).split())}", "veribench list shows the settings") from None


def build(kind: str, name: str, conf: dict[str, Any], option: str = "--set") -> Any:
    """Plug-in ``name`` of ``kind`` built with ``conf`` (:func:`veribench.registry.create`);
    a value of the wrong kind is refused first (:func:`check_setting_types`), and a bad
    setting is named as ``--set: <key>: <what> (<fix>)`` (:func:`setting_errors`).

    Raises:
        CliError: an unknown or bad setting; RegistryError: an unknown name.
    """
    factory = get(kind, name)
    check_setting_types(settings_of(getattr(factory, "__wrapped__", factory))[0], conf, option)
    with setting_errors(conf, f"{kind} {name!r}", option):
        return create(kind, name, conf)


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
