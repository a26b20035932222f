"""CLI: ``veribench evaluate``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from veribench.cli.common import (
    WorkspaceOpt,
    check_value,
    input_path,
    json_opt,
    max_spend_opt,
    open_workspace,
    out_opt,
    progress,
)
from veribench.cli.grammar import CliError, CliUsageError
from veribench.console import wide_console
from veribench.errors import ProtocolError
from veribench.evaluate import evaluate_workspace
from veribench.evaluate.grid import COLUMNS as GRID_COLUMNS
from veribench.evaluate.grid import raid_leaderboard
from veribench.evaluate.tables import print_tables, print_warnings, write_outputs
from veribench.protocol.model import load_protocol


def evaluate_cmd(
    workspace: Path = WorkspaceOpt,
    protocol: Path | None = typer.Option(None, "--protocol", "-p", help="Committed protocol file (TOML/YAML).",
                                         callback=input_path("file")),
    json_out: Path | None = json_opt("Also write the results JSON to this file."),
    out: Path | None = out_opt("Report folder: Markdown, CSV, JSON, HTML and raw scores.", None, kind="folder"),
    no_score: bool = typer.Option(False, "--no-score", help="Never run a detector; use stored scores only."),
    allow_paid: bool = typer.Option(False, "--allow-paid", help="Let evaluate call paid (vendor) detectors for "
                                    "selected documents without a stored score; needs --max-spend."),
    max_spend: float | None = max_spend_opt("With --allow-paid: stop before the paid calls of this evaluation "
                                            "would cost more (words)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="One summary line instead of the tables and the "
                               "scoring log (and no progress unless --progress is given)."),
    grid: str | None = typer.Option(None, "--grid", help="RAID's grid over these comma-separated tags (e.g. "
                                    "domain,model,decoding,repetition_penalty,attack): every cell and 'all' roll-up, "
                                    "TPR at 5%/1% FPR and AUROC with intervals, as 'grid' in the results JSON."),
    grid_threshold_by: str | None = typer.Option(None, "--grid-threshold-by", help="Tag whose values get their own "
                                                 "thresholds (default: domain when it is a grid tag; 'none': one)."),
    raid_json: Path | None = typer.Option(None, "--raid-json", help="With --grid: also write each detector's grid "
                                          "in RAID's leaderboard results.json shape into this folder."),
    show_progress: bool | None = typer.Option(None, "--progress/--no-progress", show_default=False,
                                              help="Show progress on standard error: a bar on a terminal, else a "
                                                   "line every few seconds (default: on, off with --quiet)."),
) -> None:
    """Evaluate stored scores under a protocol; print Table 1, Table 2 and the side rows.

    Without --protocol every stored detector is evaluated with AI probability > 0.5
    (its own verdict when it has no probability; no decision rule when it has neither),
    on all documents (no split). `evaluate` never calls a paid API unless given
    --allow-paid --max-spend N; score vendor detectors with `veribench score`. The
    workspace must exist (evaluate never creates one).
    """
    if allow_paid and max_spend is None:
        raise CliUsageError("--allow-paid", "needs --max-spend N", "the most the paid calls may cost, in words")
    if max_spend is not None and not allow_paid:
        raise CliUsageError("--max-spend", "applies to paid calls, which need --allow-paid", "add --allow-paid")
    if not grid:
        for name, given in (("--grid-threshold-by", grid_threshold_by), ("--raid-json", raid_json)):
            if given is not None:
                raise CliUsageError(name, "applies to a grid", "add --grid TAGS")
    tags = [t.strip() for t in grid.split(",") if t.strip()] if grid is not None else None
    if grid is not None and not tags:
        raise CliUsageError("--grid", "names no tag", "give comma-separated tags, e.g. --grid domain,model")
    if tags and len(set(tags)) < len(tags):
        raise CliUsageError("--grid", f"a tag repeats: {grid}", "name each tag once")
    shown = not quiet if show_progress is None else show_progress
    con = wide_console()
    proto = load_protocol(protocol) if protocol else None
    with progress("evaluate", shown), open_workspace(workspace) as ws:
        if ws.document_count() == 0:
            raise CliError(f"--workspace {workspace}", "the workspace has no documents",
                           f"import a corpus first: veribench import ... -w {workspace}")
        if tags:
            _check_grid(ws, tags, grid_threshold_by)
        res = evaluate_workspace(ws, proto, allow_scoring=not no_score, progress=shown,
                                 log=(lambda m: None) if quiet else con.print,
                                 allow_paid=allow_paid, max_spend=max_spend, grid=tags,
                                 grid_threshold_by=grid_threshold_by)
        if grid:
            if raid_json:
                _write_raid_json(res, raid_json)
            if not quiet:
                con.print(f"grid: {len(res['grid'])} rows (cells and roll-ups) over {res['grid_info']['tags']}, in "
                          "the results JSON under 'grid'")
        if out:
            write_outputs(res, out, ws)
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(res, indent=1, allow_nan=False), encoding="utf-8")
    if quiet:
        typer.echo(_summary(res, json_out, out))
    else:
        print_tables(res, con)
        print_warnings(res, con)


def _summary(res: dict[str, Any], json_out: Path | None, out: Path | None) -> str:
    """``evaluate -q``: the one summary line (run id, documents, detectors, warnings, outputs)."""
    run = res.get("run") or {}
    parts = [f"run {run.get('run_id', '?')}", f"{run.get('n_documents', '?')} documents",
             f"{len(res.get('detectors') or [])} detectors", f"{len(res.get('warnings') or [])} warnings"]
    where = [str(p) for p in (json_out, out) if p is not None]
    return "evaluate: " + ", ".join(parts) + (f" -> {', '.join(where)}" if where else "")


def _check_grid(ws: Any, tags: list[str], threshold_by: str | None) -> None:
    """Refuse a ``--grid`` or ``--grid-threshold-by`` tag that no document of the workspace
    carries (exit 2, "did you mean", the tags present): a misspelled tag would otherwise
    give a grid of "(missing)" cells. The tags present are the keys of the documents'
    ``tags`` and the document columns a grid may name
    (:data:`veribench.evaluate.grid.COLUMNS`); the grid itself checks the selected documents
    again (:func:`veribench.evaluate.grid.grid_results`)."""
    present = {k for (k,) in ws.query("SELECT DISTINCT unnest(json_keys(tags)) FROM documents "
                                      "WHERE json_type(tags) = 'OBJECT'")}
    filled = ws.query(f"SELECT {', '.join(f'count({c})' for c in GRID_COLUMNS)} FROM documents")[0]
    present |= {c for c, n in zip(GRID_COLUMNS, filled) if n}
    for t in tags:
        check_value("--grid", t.removeprefix("tag:"), present, "tag")
    if threshold_by not in (None, "", "none"):
        check_value("--grid-threshold-by", threshold_by.removeprefix("tag:"), present | {"none"}, "tag")


def _write_raid_json(g: dict[str, Any], folder: Path) -> None:
    """Each detector's grid (``g["grid"]``, ``g["grid_info"]``) in RAID's leaderboard shape."""
    g = {"rows": g["grid"], "info": g["grid_info"]}
    folder.mkdir(parents=True, exist_ok=True)
    for det in g["info"]["thresholds"]:
        try:
            out = raid_leaderboard(g, det)
        except ValueError as e:
            raise ProtocolError(f"--raid-json: {e}") from None
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in det)
        (folder / f"{safe}.json").write_text(json.dumps(out, indent=1, allow_nan=False), encoding="utf-8")
