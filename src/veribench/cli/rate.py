"""CLI group ``rate``: the editors' rubric (blind reading app, assignment, results, export).

    veribench rate assign --workspace WS --from-cycle CYCLE_DIR [--limit N]
    veribench rate editors add NAME --workspace WS      # the token is the last line printed
    veribench rate editors list --workspace WS
    veribench rate serve --workspace WS --host 127.0.0.1 --port 8000 [--secure-cookies] [--root-path /rubric]
    veribench rate results --workspace WS [--format json] [--out results.json]
    veribench rate export --workspace WS --out ratings.csv [--unblind] [--json results.json]

The rubric lives in its own SQLite store beside the workspace's DuckDB file
(``WS/rubric.sqlite``, WAL mode): ``rate serve`` never opens the DuckDB file, and every
``rate`` command, ``report`` and ``export`` works while it serves (docs/concurrency.md).
Only ``rate assign --from-workspace`` reads the DuckDB file (read-only, briefly).
``rate assign`` and ``rate editors add`` create the store; the other commands refuse a
workspace without one and create nothing. ``rate serve`` lives in :mod:`veribench.cli.serve`
(loaded on its own: the other commands never import the web stack).
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from veribench.cli.common import (
    FormatOpt,
    OutputFormat,
    WorkspaceOpt,
    check_workspace,
    input_path,
    json_opt,
    out_opt,
    print_json,
    remove_if_new,
    write_json,
)
from veribench.cli.grammar import CliError
from veribench.rubric import loaders, store
from veribench.rubric.db import FILE_NAME as RUBRIC_STORE
from veribench.rubric.db import RubricDB
from veribench.rubric.results import ratings_rows, results_document, write_ratings_csv
from veribench.rubric.store import open_rubric
from veribench.store.workspace import DB_NAME, Workspace

rate_app = typer.Typer(help="Editors' rubric: blind meaning/error readings of humanized text.",
                       no_args_is_help=True)
editors_app = typer.Typer(help="Manage editors (readers).", no_args_is_help=True)
rate_app.add_typer(editors_app, name="editors")


def _rubric(path: Path, *, create: bool = False) -> RubricDB:
    """The workspace's rubric store (SQLite); the DuckDB file is not opened. Without
    ``create`` (the reading commands), the store is opened read-only: nothing is created or
    changed, an older store is refused with the command that migrates it, and a workspace
    with neither store is refused."""
    check_workspace(path, exists=False)
    if create:
        holder: list[RubricDB] = []
        remove_if_new(path / RUBRIC_STORE, close=lambda: [d.close() for d in holder])
        db = open_rubric(path)
        holder.append(db)
        return db
    if not (path / RUBRIC_STORE).is_file() and not (path / DB_NAME).is_file():
        raise CliError(f"--workspace {path}", "no rubric store here",
                       f"{RUBRIC_STORE} is missing; load pairs first: veribench rate assign -w {path} --from-cycle DIR")
    return open_rubric(path, read_only=True)


@rate_app.command("assign")
def assign(
    workspace: Path = WorkspaceOpt,
    from_cycle: Path | None = typer.Option(None, "--from-cycle", help="Cycle bundle folder (samples.json + tests.json).",
                                           callback=input_path("folder")),
    from_workspace: bool = typer.Option(False, "--from-workspace",
                                        help="Load pairs from workspace documents tagged humanizer + input_doc_id."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Load at most N pairs, spread over the tools (round-robin, the same on every rerun)."),
    rebalance: bool = typer.Option(False, "--rebalance",
                                   help="Move not-yet-started readings to editors who joined later, to even loads."),
) -> None:
    """Load input/output pairs (each gets a random blind id) and give every output two editors."""
    if from_cycle is not None and from_workspace:
        raise typer.BadParameter("use --from-cycle or --from-workspace, not both", param_hint="--from-cycle")
    pairs, rep = [], None
    if from_cycle is not None:
        pairs, rep = loaders.pairs_from_cycle(from_cycle, limit)
    elif from_workspace:
        check_workspace(workspace)
        with Workspace(workspace, read_only=True) as docs:
            pairs, rep = loaders.pairs_from_workspace(docs, limit)
    with _rubric(workspace, create=True) as ws:
        if rep is not None:
            added = store.add_pairs(ws, pairs)
            skipped = ", ".join(f"{k}: {v}" for k, v in rep["skipped"].items()) or "none"
            typer.echo(f"pairs found: {rep['pairs']}; selected: {rep['selected']}; added: {added['added']}; "
                       f"already loaded: {added['already_loaded']}; skipped: {skipped}")
            tools = rep["tools"]
            typer.echo("per tool (selected/found): " + (", ".join(f"{t} {c['selected']}/{c['found']}"
                                                                   for t, c in tools.items()) or "none"))
            left = [t for t, c in tools.items() if c["found"] and not c["selected"]]
            if left:
                typer.secho(f"left out by --limit {limit}: {', '.join(left)} (no pair loaded; give --limit "
                            f"{len(tools)} or more to load every tool)", fg="yellow")
        made = store.ensure_assignments(ws)
        if rebalance:
            typer.echo(f"moved {store.rebalance(ws)} not-yet-started readings to even the loads")
        st = store.assignment_status(ws)
        typer.echo(f"new assignments: {made['assigned']} (third reads: {made['third_reads_assigned']}); "
                   f"outputs: {st['outputs']}; editors: {st['editors']}")
        if st["outputs_short_of_readers"]:
            typer.secho(f"{st['outputs_short_of_readers']} outputs still need readers: add editors "
                        f"(veribench rate editors add NAME) and run `veribench rate assign` again", fg="yellow")
        if st["load"]:
            typer.echo("load: " + ", ".join(f"{e} {n}" for e, n in st["load"].items()))


@editors_app.command("add")
def editors_add(name: str = typer.Argument(..., help="Editor name (letters, digits, . _ -)."),
                workspace: Path = WorkspaceOpt) -> None:
    """Register an editor; their personal token is printed once, on the last line."""
    with _rubric(workspace, create=True) as ws:
        token = store.add_editor(ws, name)
    typer.echo(f"editor {name} added. Sign in at /login or send 'Authorization: Bearer <token>'.")
    typer.echo("Run `veribench rate assign` (with --rebalance to share out waiting work) to give the new editor "
               "readings. The token is shown only now:")
    typer.echo(token)


@editors_app.command("list")
def editors_list(workspace: Path = WorkspaceOpt) -> None:
    """Editors with their assigned and submitted readings."""
    with _rubric(workspace) as ws:
        for e in store.list_editors(ws):
            typer.echo(f"{e['editor']}\tassigned {e['assigned']}\tsubmitted {e['submitted']}")


def _fmt(x, nd: int = 2) -> str:
    return "-" if x is None else (f"{x:.{nd}f}" if isinstance(x, float) else str(x))


@rate_app.command("results")
def results(workspace: Path = WorkspaceOpt,
            fmt: OutputFormat = FormatOpt,
            out: Path | None = out_opt("Also write the results JSON to this file.", None)) -> None:
    """Per tool: mean meaning score, dropped/invented counts, errors per 100 words, third reads, alpha."""
    with _rubric(workspace) as ws:
        doc = results_document(ws)
    if out is not None:
        write_json(out, doc, default=str)
    if fmt == "json":
        print_json(doc, default=str)
        return
    t = Table(title="Editors' rubric by tool")
    for col in ("tool", "complete", "meaning", "dropped", "invented", "changed", "err/100w", "third reads",
                "alpha (ord.)", "FK delta"):
        t.add_column(col)
    for r in doc["tools"]:
        t.add_row(r["tool"], f"{r['outputs_complete']}/{r['outputs']}", _fmt(r["meaning_score_mean"]),
                  _fmt(r["dropped_claims_total"], 0), _fmt(r["invented_facts_total"], 0),
                  _fmt(r["changed_facts_total"], 0), _fmt(r["errors_per_100_words_total"]),
                  str(r["third_reads"]), _fmt(r["krippendorff_alpha_ordinal"], 3),
                  _fmt(r["fk_grade_delta_mean"]))
    Console().print(t)
    unrated = [r["tool"] for r in doc["tools"] if not r["outputs_complete"]]
    if unrated:
        typer.echo(f"no rated pairs yet (0 outputs with all their reads; every value null): {', '.join(unrated)}")
    o = doc["overall"]
    typer.echo(f"overall Krippendorff alpha (ordinal, two first readers): {_fmt(o['krippendorff_alpha_ordinal'], 3)}"
               + (f" ({o['alpha_note']})" if o["alpha_note"] else ""))


@rate_app.command("export")
def export(workspace: Path = WorkspaceOpt,
           out: Path = out_opt("ratings.csv path.", Path("ratings.csv")),
           unblind: bool = typer.Option(False, "--unblind", help="Add a tool column (for publication only)."),
           json_out: Path | None = json_opt("Also write the results JSON to this file (was --results-json).")
           ) -> None:
    """Write ratings.csv (schema: docs/ratings-schema.md)."""
    with _rubric(workspace) as ws:
        write_ratings_csv(ws, out, unblind=unblind)
        n = len(ratings_rows(ws))
        if json_out is not None:
            write_json(json_out, results_document(ws), default=str)
    typer.echo(f"wrote {out} ({n} rows)")
