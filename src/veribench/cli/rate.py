"""CLI group ``rate``: the editors' rubric (blind reading app, assignment, results, export).

    veribench rate assign --workspace WS --from-cycle CYCLE_DIR [--limit N]
    veribench rate editors add NAME --workspace WS      # the token is the last line printed
    veribench rate editors list --workspace WS
    veribench rate serve --workspace WS --host 127.0.0.1 --port 8000 [--secure-cookies] [--root-path /rubric]
    veribench rate results --workspace WS [--json] [--out results.json]
    veribench rate export --workspace WS --out ratings.csv [--unblind]

The rubric lives in its own SQLite store beside the workspace's DuckDB file
(``WS/rubric.sqlite``, WAL mode): ``rate serve`` never opens the DuckDB file, and every
``rate`` command, ``report`` and ``export`` works while it serves (docs/concurrency.md).
Only ``rate assign --from-workspace`` reads the DuckDB file (read-only, briefly).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from veribench.cli.common import WorkspaceOpt, friendly_errors

rate_app = typer.Typer(help="Editors' rubric: blind meaning/error readings of humanized text.",
                       no_args_is_help=True)
editors_app = typer.Typer(help="Manage editors (readers).", no_args_is_help=True)
rate_app.add_typer(editors_app, name="editors")


def _ws(path: Path):
    """The workspace's rubric store (SQLite); the DuckDB file is not opened."""
    from veribench.rubric.store import open_rubric

    return open_rubric(path)


@rate_app.command("assign")
@friendly_errors
def assign(
    workspace: Path = WorkspaceOpt,
    from_cycle: Path | None = typer.Option(None, "--from-cycle", help="Cycle bundle folder (samples.json + tests.json)."),
    from_workspace: bool = typer.Option(False, "--from-workspace",
                                        help="Load pairs from workspace documents tagged humanizer + input_doc_id."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Load at most N pairs (a fixed spread-out subset)."),
    rebalance: bool = typer.Option(False, "--rebalance",
                                   help="Move not-yet-started readings to editors who joined later, to even loads."),
) -> None:
    """Load input/output pairs (each gets a random blind id) and give every output two editors."""
    from veribench.rubric import loaders, store
    from veribench.store.workspace import Workspace

    if from_cycle is not None and from_workspace:
        raise typer.BadParameter("use --from-cycle or --from-workspace, not both")
    pairs, rep = [], None
    if from_cycle is not None:
        pairs, rep = loaders.pairs_from_cycle(from_cycle, limit)
    elif from_workspace:
        with Workspace(workspace, read_only=True) as docs:
            pairs, rep = loaders.pairs_from_workspace(docs, limit)
    with _ws(workspace) as ws:
        if rep is not None:
            added = store.add_pairs(ws, pairs)
            skipped = ", ".join(f"{k}: {v}" for k, v in rep["skipped"].items()) or "none"
            typer.echo(f"pairs found: {rep['pairs']}; selected: {rep['selected']}; added: {added['added']}; "
                       f"already loaded: {added['already_loaded']}; skipped: {skipped}")
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
@friendly_errors
def editors_add(name: str = typer.Argument(..., help="Editor name (letters, digits, . _ -)."),
                workspace: Path = WorkspaceOpt) -> None:
    """Register an editor; their personal token is printed once, on the last line."""
    from veribench.rubric import store

    with _ws(workspace) as ws:
        token = store.add_editor(ws, name)
    typer.echo(f"editor {name} added. Sign in at /login or send 'Authorization: Bearer <token>'.")
    typer.echo("Run `veribench rate assign` (with --rebalance to share out waiting work) to give the new editor "
               "readings. The token is shown only now:")
    typer.echo(token)


@editors_app.command("list")
@friendly_errors
def editors_list(workspace: Path = WorkspaceOpt) -> None:
    """Editors with their assigned and submitted readings."""
    from veribench.rubric import store

    with _ws(workspace) as ws:
        for e in store.list_editors(ws):
            typer.echo(f"{e['editor']}\tassigned {e['assigned']}\tsubmitted {e['submitted']}")


@rate_app.command("serve")
@friendly_errors
def serve(workspace: Path = WorkspaceOpt, host: str = typer.Option("127.0.0.1", "--host"),
          port: int = typer.Option(8000, "--port"),
          secure_cookies: bool = typer.Option(False, "--secure-cookies",
                                              help="Mark the session cookie Secure (HTTPS only): use behind a "
                                                   "TLS-terminating proxy."),
          root_path: str = typer.Option("", "--root-path",
                                        help="Path prefix the proxy serves the app under, e.g. /rubric (links, "
                                             "redirects and the cookie path carry it)."),
          forwarded_allow_ips: str | None = typer.Option(None, "--forwarded-allow-ips",
                                                            help="Proxy addresses whose X-Forwarded-* headers are "
                                                                 "trusted (uvicorn's option; default 127.0.0.1).")
          ) -> None:
    """Serve the blind reading app (FastAPI + uvicorn). It never locks the workspace's DuckDB file."""
    import uvicorn

    from veribench.errors import InputError
    from veribench.rubric.app import create_app

    if root_path and not root_path.startswith("/"):
        raise InputError("--root-path must start with '/', e.g. /rubric", field="--root-path")
    app = create_app(workspace, secure_cookies=secure_cookies, root_path=root_path)
    scheme = "https" if secure_cookies else "http"
    typer.echo(f"serving the editors' reading app on http://{host}:{port}{root_path.rstrip('/')}/login"
               + (f" (behind the proxy: {scheme}://<your host>{root_path.rstrip('/')}/login; Secure cookies)"
                  if secure_cookies else ""))
    uvicorn.run(app, host=host, port=port, log_level="warning", proxy_headers=True,
                forwarded_allow_ips=forwarded_allow_ips)


def _fmt(x, nd: int = 2) -> str:
    return "-" if x is None else (f"{x:.{nd}f}" if isinstance(x, float) else str(x))


@rate_app.command("results")
@friendly_errors
def results(workspace: Path = WorkspaceOpt,
            as_json: bool = typer.Option(False, "--json", help="Print the results JSON."),
            out: Path | None = typer.Option(None, "--out", help="Also write the results JSON here.")) -> None:
    """Per tool: mean meaning score, dropped/invented counts, errors per 100 words, third reads, alpha."""
    from rich.console import Console
    from rich.table import Table

    from veribench.rubric.results import results_document

    with _ws(workspace) as ws:
        doc = results_document(ws)
    text = json.dumps(doc, indent=2, ensure_ascii=False, default=str)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n", encoding="utf-8")
    if as_json:
        typer.echo(text)
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
    o = doc["overall"]
    typer.echo(f"overall Krippendorff alpha (ordinal, two first readers): {_fmt(o['krippendorff_alpha_ordinal'], 3)}"
               + (f" ({o['alpha_note']})" if o["alpha_note"] else ""))


@rate_app.command("export")
@friendly_errors
def export(workspace: Path = WorkspaceOpt,
           out: Path = typer.Option(Path("ratings.csv"), "--out", help="ratings.csv path."),
           unblind: bool = typer.Option(False, "--unblind", help="Add a tool column (for publication only)."),
           results_json: Path | None = typer.Option(None, "--results-json", help="Also write the results JSON.")
           ) -> None:
    """Write ratings.csv (schema: docs/ratings-schema.md)."""
    from veribench.rubric.results import ratings_rows, results_document, write_ratings_csv

    with _ws(workspace) as ws:
        write_ratings_csv(ws, out, unblind=unblind)
        n = len(ratings_rows(ws))
        if results_json is not None:
            results_json.parent.mkdir(parents=True, exist_ok=True)
            results_json.write_text(json.dumps(results_document(ws), indent=2, default=str) + "\n", encoding="utf-8")
    typer.echo(f"wrote {out} ({n} rows)")


def register(app: typer.Typer) -> None:
    """Add the ``rate`` sub-app to the root app."""
    app.add_typer(rate_app, name="rate")
