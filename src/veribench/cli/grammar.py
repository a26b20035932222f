"""The machinery of the command grammar (``docs/cli.md``): the one error style, plain
types in the help, and the deprecated spellings that still work for one release.

- **Errors.** Every failure ends with one line on standard error,
  ``error: <file, record or option>: <what is wrong> (<how to fix it>)``, and no
  traceback: exit 1 for refused input or a failed check (:class:`CliError`, any
  :class:`veribench.errors.VeribenchError`), exit 2 for usage (an unknown option, a bad
  option value, a missing argument: :func:`usage_line`), 130 for Ctrl-C.
- **Help.** Options show plain value types (``PATH``, ``TEXT``, ``INTEGER``, ``NUMBER``,
  the choices of a choice), never Python's (``<list[Path]>``), and flags show none
  (:class:`Option`, :class:`Argument`).
- **Deprecated spellings.** :data:`RENAMED_OPTIONS`, :data:`RENAMED_VALUES` and
  :data:`RENAMED_COMMANDS` are the old spellings, each with its new form; an old one still
  works for one release and prints one warning line on standard error naming the new form
  (:meth:`Command.parse_args`, :meth:`Group.parse_args`).

:func:`finish` gives a command tree built by typer these behaviours; ``cli/main.py``
applies it to every command group it loads.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, get_args, get_origin

import typer
from typer._click import Context
from typer._click.exceptions import (
    BadOptionUsage,
    BadParameter,
    ClickException,
    MissingParameter,
    NoArgsIsHelpError,
    NoSuchOption,
    UsageError,
)
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from veribench.errors import InputError, VeribenchError, close_matches, did_you_mean

#: Environment variable: when set to 1, an unexpected error (a bug) shows its traceback.
DEBUG_ENV = "VERIBENCH_DEBUG"


# ------------------------------------------------------------------------------ errors
class CliError(VeribenchError):
    """Refused input, in the one error style: ``<where>: <what> (<fix>)`` (exit 1).

    Args:
        where: the file, record or option at fault (``--workspace ws``, ``data.jsonl``).
        what: what is wrong.
        fix: how to fix it (optional).
    """

    #: the exit code of a command that ends with this error
    exit_code = 1

    def __init__(self, where: str, what: str, fix: str | None = None):
        self.where, self.what, self.fix = where, what, fix
        super().__init__(f"{where}: {what}" + (f" ({fix})" if fix else ""))


class CliUsageError(CliError):
    """A bad option value found once the command runs (it needs the workspace or the
    files to tell, e.g. an unknown ``--grid`` tag): the one error style, exit 2 (usage)."""

    exit_code = 2


def echo_error(message: str) -> None:
    """``error: <message>`` on standard error, red on a terminal."""
    typer.secho(f"error: {message}", fg="red", err=True)


def warn(message: str) -> None:
    """``warning: <message>`` on standard error, yellow on a terminal."""
    typer.secho(f"warning: {message}", fg="yellow", err=True)


# ------------------------------------------------------------------------------ Ctrl-C
def is_interrupt(e: BaseException | None) -> bool:
    """Whether ``e`` is Ctrl-C, however it surfaced.

    SIGINT raises ``KeyboardInterrupt`` in Python code, but one that lands while DuckDB
    runs a query makes DuckDB stop the query and raise ``RuntimeError("Query
    interrupted")`` instead (``duckdb.InterruptException`` after ``con.interrupt()``), and
    the clean-up that follows (a ``finally`` that unregisters a view, a rollback) may raise
    again, e.g. ``TransactionException: Current transaction is aborted``, with the
    interrupt as its context. So: ``e`` or any exception in its ``__cause__`` /
    ``__context__`` chain is a ``KeyboardInterrupt``, a DuckDB ``InterruptException``, or
    a ``RuntimeError`` whose message is DuckDB's "Query interrupted"."""
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, KeyboardInterrupt):
            return True
        if type(e).__name__ == "InterruptException" and type(e).__module__.lstrip("_").startswith("duckdb"):
            return True
        if isinstance(e, RuntimeError) and str(e).strip() == "Query interrupted":
            return True
        e = e.__cause__ or e.__context__
    return False


_KEPT = "what was stored before stays stored"
_AGAIN = "run the same command again to go on"


def _batches(what: str) -> str:
    return f"{_KEPT}, and so does each {what} committed before the interrupt (each is committed as it arrives); {_AGAIN}"


#: What Ctrl-C leaves behind, by command (the first key the command path equals or starts
#: with; ``""``: every other command). Each line is true of every command it covers.
INTERRUPT_NOTES: dict[str, str] = {
    "import": f"this import stored nothing (an import is all or nothing); {_KEPT}; run the same command again",
    "score": _batches("batch of scores"),
    "evaluate": _batches("batch of scores"),
    "cycle measure": _batches("batch of scores"),
    "cycle rescore": _batches("batch of scores"),
    "humanize": _batches("batch of outputs"),
    "generate": _batches("answered call"),
    "readability": _batches("answered call"),
    "attack": _batches("chunk of derived documents"),
    "derive-arm": _batches("chunk of derived documents"),
    "demo": _batches("import and batch of scores"),
    "": f"{_KEPT} (a change under way is undone); run the same command again",
}


def interrupt_note(command: str) -> str:
    """The line Ctrl-C prints for ``command`` (``"import raid"``): :data:`INTERRUPT_NOTES`."""
    for key, note in INTERRUPT_NOTES.items():
        if key and (command == key or command.startswith(key + " ")):
            return note
    return INTERRUPT_NOTES[""]


# ------------------------------------------------------------------------------ undo on failure
#: Clean-ups registered by the command that runs now (:func:`on_failure`).
_ON_FAILURE: list[Callable[[], None]] = []


def on_failure(fn: Callable[[], None]) -> None:
    """Run ``fn`` if the command that runs now ends in an error or an interrupt (not on
    success, nor on ``typer.Exit(0)``); the clean-ups run last registered first, each after
    the command's own ``with`` blocks closed, and one that fails is skipped. Used to remove
    a workspace this command created and left empty (:func:`veribench.cli.common.open_workspace`)."""
    _ON_FAILURE.append(fn)


def _run_failure_hooks(mark: int) -> None:
    for fn in reversed(_ON_FAILURE[mark:]):
        try:
            fn()
        except Exception:  # a clean-up never hides the command's own error
            pass


def friendly_errors(fn: Callable[..., Any] | None = None, *, command: str = "") -> Any:
    """Run ``fn``; a veribench error becomes one ``error:`` line and exit code 1 (2 for a
    :class:`CliUsageError`), a missing file the same, and Ctrl-C (:func:`is_interrupt`,
    also inside a DuckDB query) one line that says what is kept (:func:`interrupt_note`
    for ``command``) and exit code 130 (no traceback). Whenever ``fn`` does not end well,
    the clean-ups it registered run (:func:`on_failure`). Every command runs through it
    (:meth:`Command.invoke`). Use as ``@friendly_errors`` or ``friendly_errors(fn, command=...)``."""
    if fn is None:
        return functools.partial(friendly_errors, command=command)
    target = fn

    @functools.wraps(target)
    def wrapper(*a: Any, **kw: Any) -> Any:
        mark = len(_ON_FAILURE)
        ok = False
        try:
            rv = target(*a, **kw)
            ok = True
            return rv
        except typer.Exit as e:
            ok = not e.exit_code
            raise
        except VeribenchError as e:
            if is_interrupt(e):
                _interrupted(command)
            echo_error(_where_first(e))
            raise typer.Exit(getattr(e, "exit_code", 1)) from None
        except FileNotFoundError as e:
            echo_error(str(CliError(str(e.filename or "?"), "no such file or folder", "check the path")))
            raise typer.Exit(1) from None
        except (KeyboardInterrupt, Exception) as e:
            if not is_interrupt(e):
                raise
            _interrupted(command)
        finally:
            if not ok:
                _run_failure_hooks(mark)
            del _ON_FAILURE[mark:]

    return wrapper


def _where_first(e: VeribenchError) -> str:
    """The error's line; an ``InputError`` about an option (``field='--run'``, no file or
    record) leads with the option, as every option error does: ``--run: no run ...``."""
    field = getattr(e, "field", None)
    if isinstance(e, InputError) and isinstance(field, str) and field.startswith("-") and e.file is None \
            and e.record is None:
        what, sep, fix = e.reason.partition("; ")
        return f"{field}: {what}" + (f" ({fix})" if sep else "")
    return str(e)


def _interrupted(command: str) -> None:
    typer.secho(f"interrupted: {interrupt_note(command)}", fg="yellow", err=True)
    raise typer.Exit(130) from None


def _param_name(e: BadParameter) -> str:
    if e.param_hint is not None:
        hint = e.param_hint
        return " / ".join(hint) if isinstance(hint, (list, tuple)) else str(hint)
    p = e.param
    if isinstance(p, TyperOption) and p.opts:
        return max(p.opts, key=len)
    if p is not None:
        return str(getattr(p, "metavar", None) or str(p.name).upper())
    return ""


def usage_line(e: ClickException) -> str:
    """A usage error as one line in the error style (without the ``error: `` prefix)."""
    ctx: Context | None = getattr(e, "ctx", None)
    cmd = ctx.command_path if ctx is not None else "veribench"
    see = f"see `{cmd} --help`"
    msg = " ".join(e.message.split())
    if isinstance(e, NoSuchOption):
        known = {o.lstrip("-"): o for p in (ctx.command.params if ctx is not None else [])
                 for o in [*getattr(p, "opts", []), *getattr(p, "secondary_opts", [])] if o.startswith("--")}
        close = close_matches(e.option_name.lstrip("-"), known, n=1)
        hint = f"did you mean {known[close[0]]}? " if close else ""
        return f"{e.option_name}: no such option ({hint}{see})"
    if isinstance(e, MissingParameter):
        name = _param_name(e)
        kind = e.param_type or (e.param.param_type_name if e.param is not None else "value")
        return f"{name}: missing (this {kind} is required; {see})"
    if isinstance(e, BadParameter):
        name = _param_name(e)
        msg = msg.removeprefix("Value error, ").removeprefix("value error, ").rstrip(".")
        what = msg[:1].lower() + msg[1:] if msg else "bad value"
        return f"{name}: {what} ({see})" if name else f"{cmd}: {what} ({see})"
    if isinstance(e, BadOptionUsage):
        what = msg.replace(f"Option {e.option_name!r} requires", "requires")
        return f"{e.option_name}: {what[:1].lower() + what[1:]} ({see})"
    if isinstance(e, UsageError):
        if msg.startswith("No such command"):
            name = msg.split("'")[1] if "'" in msg else ""
            group = ctx.command if ctx is not None else None
            known = group.list_commands(ctx) if isinstance(group, TyperGroup) and ctx is not None else []
            hint = did_you_mean(name, known)
            return f"{cmd} {name}: no such command ({hint + ' ' if hint else ''}{see})"
        return f"{cmd}: {msg[:1].lower() + msg[1:]} ({see})"
    return f"{cmd}: {e.format_message()}"


def run_main(main: Callable[..., Any], args: Any, standalone_mode: bool, kwargs: dict[str, Any]) -> Any:
    """Run a click ``main`` with the one error style (see the module docstring); exit with
    the command's code (or return it when ``standalone_mode`` is false)."""
    code: int = 0
    try:
        rv = main(args, standalone_mode=False, **kwargs)
        code = rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
    except NoArgsIsHelpError as e:  # a group without its command: the help was printed
        if e.message.strip():
            typer.echo(e.message)
        code = 2
    except ClickException as e:
        echo_error(usage_line(e))
        code = e.exit_code
    except typer.Abort:
        echo_error("aborted: nothing was changed")
        code = 1
    except VeribenchError as e:  # raised while the options were read (a path check)
        echo_error(str(e))
        code = getattr(e, "exit_code", 1)
    except KeyboardInterrupt:
        typer.secho("interrupted: nothing was changed", fg="yellow", err=True)
        code = 130
    except Exception as e:
        code = _internal_error(e)
    if not standalone_mode:
        return code
    raise SystemExit(code)


def _internal_error(e: Exception) -> int:
    """The exit code of an exception no command expects: 130 for Ctrl-C inside DuckDB
    (:func:`is_interrupt`), else one ``internal error`` line and 1 (``VERIBENCH_DEBUG=1``:
    re-raised, with its traceback)."""
    if is_interrupt(e):
        typer.secho("interrupted: nothing was changed", fg="yellow", err=True)
        return 130
    if os.environ.get(DEBUG_ENV) == "1":
        raise e
    first = (str(e).strip().splitlines() or [""])[0][:300]
    echo_error(f"internal error: {type(e).__name__}: {first} (a bug in veribench: please report it with the "
               f"command line; {DEBUG_ENV}=1 shows the traceback)")
    return 1


# ------------------------------------------------------------------------------ deprecated spellings
#: Options renamed by the grammar: command path -> {old spelling: new tokens}. The old
#: spelling works for one release and prints one warning naming the new form.
RENAMED_OPTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "score": {"--output": ("--out",)},
    "humanize": {"--output": ("--out",), "--retry-transient": ("--retry-failed",)},
    "generate": {"--output": ("--out",), "-p": ("--prompts",)},
    "readability": {"--output": ("--out",)},
    "list detectors": {"--json": ("--format", "json")},
    "list humanizers": {"--json": ("--format", "json")},
    "list corpora": {"--json": ("--format", "json")},
    "list attacks": {"--json": ("--format", "json")},
    "rate results": {"--json": ("--format", "json")},
    "write status": {"--json": ("--format", "json")},
    "rate export": {"--results-json": ("--json",)},
}
#: Old spellings that are an option with one value: command path -> {(option, value): new tokens}.
RENAMED_VALUES: dict[str, dict[tuple[str, str], tuple[str, ...]]] = {
    "verify": {("--json", "-"): ("--format", "json")},
    "log verify": {("--json", "-"): ("--format", "json")},
}
#: Commands renamed by the grammar (one verb per source of imports): old path -> new path.
RENAMED_COMMANDS: dict[str, str] = {
    "cycle import": "cycle add",
    "write import": "import arm-b",
}


def command_key(ctx: Context) -> str:
    """``"rate results"``: the command path without the program name."""
    names = []
    c: Context | None = ctx
    while c is not None and c.parent is not None:
        names.append(c.info_name or "")
        c = c.parent
    return " ".join(reversed(names))


def warn_deprecated(ctx: Context, old: str, new: str) -> None:
    """One warning per old spelling and invocation: ``old`` is deprecated, use ``new``."""
    seen = ctx.find_root().meta.setdefault("veribench.deprecated", set())
    if old in seen:
        return
    seen.add(old)
    warn(f"`{old}` is deprecated and will be removed in the next release: use `{new}`")


def rewrite_args(ctx: Context, args: Sequence[str]) -> list[str]:
    """``args`` with the deprecated spellings of this command replaced by the new ones
    (:data:`RENAMED_OPTIONS`, :data:`RENAMED_VALUES`), warning once for each.

    Everything after ``--`` is left as it is."""
    key = command_key(ctx)
    opts = RENAMED_OPTIONS.get(key, {})
    vals = RENAMED_VALUES.get(key, {})
    if not opts and not vals:
        return list(args)
    out: list[str] = []
    i, args = 0, list(args)
    while i < len(args):
        a = args[i]
        if a == "--":
            out += args[i:]
            break
        name, eq, value = a.partition("=") if a.startswith("--") else (a, "", "")
        nxt = value if eq else (args[i + 1] if i + 1 < len(args) else None)
        if nxt is not None and (name, nxt) in vals:
            new = vals[(name, nxt)]
            warn_deprecated(ctx, f"veribench {key} {name} {nxt}", f"veribench {key} {' '.join(new)}")
            out += new
            i += 1 if eq else 2
            continue
        if name in opts:
            new = opts[name]
            warn_deprecated(ctx, f"veribench {key} {name}", f"veribench {key} {' '.join(new)}")
            out += list(new) + ([value] if eq else [])
            i += 1
            continue
        out.append(a)
        i += 1
    return out


# ------------------------------------------------------------------------------ plain types in the help
_NAMES = {int: "INTEGER", float: "NUMBER", str: "TEXT", bool: "BOOLEAN", Path: "PATH"}


def type_label(p: TyperOption | TyperArgument) -> str | None:
    """The value type of a parameter as the help shows it: ``PATH``, ``TEXT``,
    ``INTEGER``, ``NUMBER``, ``a|b|c`` for a choice, ``...`` after a repeatable
    argument; ``None`` for a flag."""
    if isinstance(p, TyperOption) and (p.is_flag or p.count):
        return None
    desc = p.type_descriptor
    if desc.is_choice:
        label = "|".join(str(getattr(c, "value", c)) for c in desc.choices or ())
    elif desc.is_path:
        label = "PATH"
    else:
        ann: Any = desc.annotation
        if get_origin(ann) is list:
            ann = get_args(ann)[0]
        label = _NAMES.get(ann, "VALUE")
    many = isinstance(p, TyperArgument) and p.nargs != 1
    return label + ("..." if many else "")


class Option(TyperOption):
    """A typer option whose help shows a plain type (:func:`type_label`)."""

    def display_type_rich(self, ctx: Context) -> str | None:
        return type_label(self)

    def display_type(self, ctx: Context) -> str:
        return type_label(self) or ""


class Argument(TyperArgument):
    """A typer argument named in capitals (``INPUTS``) whose help shows a plain type."""

    def display_type_rich(self, ctx: Context) -> str | None:
        return type_label(self)

    def display_type(self, ctx: Context) -> str:
        return type_label(self) or ""


def _plain_help_option(opt: Any) -> Any:
    if type(opt) is TyperOption:
        opt.__class__ = Option
    return opt


@contextmanager
def plain_brackets(cmds: Sequence[Any]) -> Iterator[None]:
    """While the help of ``cmds`` is drawn, their help texts (and their parameters')
    print as written: typer draws help with rich, whose markup would read ``[arms]`` or
    ``[id, text]`` as a style tag and drop it, so each ``[`` that could open a tag is
    escaped (``rich.markup.escape``) for the drawing and the texts are put back after."""
    from rich.markup import escape

    saved: list[tuple[Any, str, Any]] = []
    try:
        for c in cmds:
            for obj in [c, *getattr(c, "params", [])]:
                for attr in ("help", "short_help", "epilog"):
                    v = getattr(obj, attr, None)
                    if isinstance(v, str) and "[" in v:
                        saved.append((obj, attr, v))
                        setattr(obj, attr, escape(v))
        yield
    finally:
        for obj, attr, v in reversed(saved):
            setattr(obj, attr, v)


class Command(TyperCommand):
    """A leaf command: deprecated spellings rewritten, errors in the one style, help
    printed as written (:func:`plain_brackets`)."""

    def get_help_option(self, ctx: Context) -> Any:
        return _plain_help_option(super().get_help_option(ctx))

    def format_help(self, ctx: Context, formatter: Any) -> None:
        with plain_brackets([self]):
            super().format_help(ctx, formatter)

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, rewrite_args(ctx, args))

    def invoke(self, ctx: Context) -> Any:
        return friendly_errors(super().invoke, command=command_key(ctx))(ctx)


class Group(TyperGroup):
    """A command group: commands loaded on demand (:attr:`lazy`); at the root, a renamed
    command (:data:`RENAMED_COMMANDS`) is spelled anew, with one warning, before it resolves.

    ``lazy`` maps a command name to ``"module:attribute"`` (a typer app or a command
    function, see :func:`load_target`); the module is imported only when the command runs
    or shows its help. The group's own help lists such a command from its source
    (:func:`source_help`) without importing it.
    """

    #: command name -> "module:attribute" of a command loaded on demand (set per group)
    lazy: dict[str, str] = {}
    #: the lazy entries of this group's sub-groups: "sub command" -> "module:attribute"
    lazy_nested: dict[str, str] = {}
    _listing = False

    def get_help_option(self, ctx: Context) -> Any:
        return _plain_help_option(super().get_help_option(ctx))

    def list_commands(self, ctx: Context) -> list[str]:
        return [*self.commands, *(n for n in self.lazy if n not in self.commands)]

    def get_command(self, ctx: Context, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            if self._listing:  # the command list of this group's help: no module is imported
                from rich.markup import escape

                return TyperCommand(cmd_name, help=escape(source_help(self.lazy[cmd_name])))
            nested = {k.split(" ", 1)[1]: v for k, v in self.lazy_nested.items() if k.startswith(cmd_name + " ")}
            self.commands[cmd_name] = load_target(self.lazy[cmd_name], cmd_name, nested)
        return finish(super().get_command(ctx, cmd_name))

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        if ctx.parent is None:  # the root: a renamed command is spelled anew before anything resolves
            for old, new in RENAMED_COMMANDS.items():
                if args[:len(old.split())] == old.split():
                    warn_deprecated(ctx, f"veribench {old}", f"veribench {new}")
                    args = [*new.split(), *args[len(old.split()):]]
                    break
        return super().parse_args(ctx, args)

    def format_help(self, ctx: Context, formatter: Any) -> None:
        self._listing = True
        try:
            with plain_brackets([self, *self.commands.values()]):
                super().format_help(ctx, formatter)
        finally:
            self._listing = False


def load_target(target: str, name: str, nested: dict[str, str] | None = None) -> Any:
    """The finished click command of ``target`` (``"module:attribute"``): a typer app
    becomes a :class:`Group` (``nested``: its commands loaded on demand), a function a
    :class:`Command` named ``name``."""
    module, _, attr = target.partition(":")
    obj = getattr(importlib.import_module(module), attr)
    if isinstance(obj, typer.Typer):
        group = finish(typer.main.get_group(obj))  # a group even with one command, no completion options
        if nested:
            group.lazy = dict(nested)
        return group
    return leaf(obj, name)


@functools.cache
def source_help(target: str) -> str:
    """The one-line help of ``target`` (``"module:attribute"``) for a group's command
    list, read from the module's source (the function's docstring, or the typer app's
    ``help=``), so listing a command never imports it; the module is imported only when
    its source does not say."""
    module, _, attr = target.partition(":")
    try:
        spec = importlib.util.find_spec(module)
        if spec is None or spec.origin is None:
            raise OSError(module)
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == attr:
                return short_help(ast.get_docstring(node))
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attr for t in node.targets) \
                    and isinstance(node.value, ast.Call):
                for kw in node.value.keywords:
                    if kw.arg == "help" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                        return short_help(kw.value.value)
    except (OSError, SyntaxError, ImportError):
        pass
    return short_help(load_target(target, attr).help)


def find_command(root: Context, path: Sequence[str]) -> Any:
    """The command at ``path`` (``["import", "arm-b"]``) under the root context's group."""
    cmd: Any = root.command
    ctx = root
    for name in path:
        if not isinstance(cmd, TyperGroup):
            return None
        cmd = cmd.get_command(ctx, name)
        if cmd is None:
            return None
        ctx = Context(cmd, info_name=name, parent=ctx)
    return cmd


def finish(cmd: Any) -> Any:
    """Give a command tree built by typer the grammar's behaviours (module docstring):
    its groups become :class:`Group`, its commands :class:`Command`, its options
    :class:`Option` and its arguments :class:`Argument` (named in capitals). Returns
    ``cmd``; finishing twice changes nothing."""
    if cmd is None:
        return None
    if isinstance(cmd, TyperGroup):
        if type(cmd) is TyperGroup:
            cmd.__class__ = Group
        for sub in list(cmd.commands.values()):
            finish(sub)
    elif type(cmd) is TyperCommand:
        cmd.__class__ = Command
    for p in cmd.params:
        if type(p) is TyperOption:
            p.__class__ = Option
        elif type(p) is TyperArgument:
            p.__class__ = Argument
            if p.metavar is None:
                p.metavar = p.name.upper()
    return cmd


def leaf(fn: Callable[..., Any], name: str) -> Any:
    """A click command (finished) for one typer command function."""
    app = typer.Typer(add_completion=False)
    app.command(name)(fn)
    return finish(typer.main.get_command(app))


def short_help(doc: str | None) -> str:
    """The first paragraph of a docstring on one line (what a group's command list shows)."""
    return " ".join(inspect.cleandoc(doc or "").split("\n\n")[0].split())
