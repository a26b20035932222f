"""Entry point of the ``veribench`` command.

Each command group lives in its own module under :mod:`veribench.cli`; :data:`COMMANDS`
names, for each command, the typer app or function that implements it. A module is
imported only when one of its commands runs or shows its help (click's lazy-group
pattern, :class:`veribench.cli.grammar.Group`), so ``veribench score --help`` does not
import the report or the web apps, and ``veribench --help`` lists every command from the
first paragraph of its docstring (or its ``help=``), read from the module's source
without importing it.

The grammar every command follows is ``docs/cli.md``; its machinery (the one error style,
plain help types, deprecated spellings) is :mod:`veribench.cli.grammar`.
"""

from __future__ import annotations

import gc
from typing import Any

import typer

from veribench import __version__
from veribench.cli.grammar import Group, finish, run_main

#: Every command of ``veribench``, in help order: name -> ``"module:attribute"`` of a typer
#: app (a command group) or of a command function. ``"group command"`` entries add a
#: command to a group, loaded on its own (the web apps' servers, so that the other
#: commands of ``rate`` and ``write`` never import the web stack).
COMMANDS: dict[str, str] = {
    "import": "veribench.cli.corpus:import_app",
    "export": "veribench.cli.export:export_app",
    "protocol": "veribench.cli.protocol:protocol_app",
    "score": "veribench.cli.score:score_cmd",
    "evaluate": "veribench.cli.evaluate:evaluate_cmd",
    "publish": "veribench.cli.publish:publish_cmd",
    "verify": "veribench.cli.verify:verify_cmd",
    "report": "veribench.cli.report:report_cmd",
    "demo": "veribench.cli.demo:demo_cmd",
    "attack": "veribench.cli.attack:attack_cmd",
    "derive-arm": "veribench.cli.attack:derive_arm_cmd",
    "humanize": "veribench.cli.humanize:humanize_cmd",
    "generate": "veribench.cli.humanize:generate_cmd",
    "watermark": "veribench.cli.watermark:watermark_app",
    "readability": "veribench.cli.humanize:readability_cmd",
    "cycle": "veribench.cli.cycles:cycle_app",
    "rate": "veribench.cli.rate:rate_app",
    "rate serve": "veribench.cli.serve:rate_serve_cmd",
    "write": "veribench.cli.write:write_app",
    "write serve": "veribench.cli.serve:write_serve_cmd",
    "leaderboard": "veribench.cli.leaderboard:leaderboard_app",
    "leaderboard launch": "veribench.cli.board:launch_cmd",
    "leaderboard add-team": "veribench.cli.board:add_team_cmd",
    "leaderboard serve": "veribench.cli.board:serve_cmd",
    "leaderboard reveal": "veribench.cli.board:reveal_cmd",
    "leaderboard check-reveal": "veribench.cli.board:check_reveal_cmd",
    "plan": "veribench.cli.plan:plan_app",
    "list": "veribench.cli.list:list_app",
    "log": "veribench.cli.log:log_app",
    "workspace": "veribench.cli.workspace:workspace_app",
    "version": "veribench.cli.main:version_cmd",
}


def version_cmd() -> None:
    """Print veribench's version."""
    typer.echo(__version__)


class Veribench(Group):
    """The root group: every command loaded on demand from :data:`COMMANDS`; every
    invocation ends in the grammar's one error style (:func:`veribench.cli.grammar.run_main`)."""

    lazy = {k: v for k, v in COMMANDS.items() if " " not in k}
    lazy_nested = {k: v for k, v in COMMANDS.items() if " " in k}

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        finish(self)  # the root's own options (--version) show plain types too

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        def run(a: Any, standalone_mode: bool, **kw: Any) -> Any:
            return super(Veribench, self).main(a, prog_name, complete_var, standalone_mode=standalone_mode, **kw)

        return run_main(run, args, standalone_mode, extra)


app = typer.Typer(
    name="veribench",
    cls=Veribench,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit()


@app.callback()
def root(version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                      help="Print veribench's version and exit (as `veribench version`).")) -> None:
    """Benchmark AI-text detectors and humanizers so that anyone can re-run and verify every number.

    Every command follows one grammar (docs/cli.md): -w WORKSPACE, -o OUT, --json FILE, --format json, --progress.
    """


def main() -> None:  # pragma: no cover - thin wrapper
    try:
        app()
    finally:
        # the command is done (files written and closed): the interpreter's last garbage
        # collection over every object torch and transformers left would take ~0.8 s at
        # exit; frozen objects are skipped by it (the OS reclaims the memory either way)
        gc.freeze()


if __name__ == "__main__":  # pragma: no cover
    main()
