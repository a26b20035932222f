"""CLI: ``veribench evaluate``."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from veribench.cli.common import WorkspaceOpt, friendly_errors


@friendly_errors
def evaluate_cmd(
    workspace: Path = WorkspaceOpt,
    protocol: Path | None = typer.Option(None, "--protocol", "-p", help="Committed protocol file (TOML/YAML)."),
    json_out: Path | None = typer.Option(None, "--json", help="Write the results JSON here."),
    out: Path | None = typer.Option(None, "--out", help="Write Markdown, CSV, JSON, HTML and raw scores here."),
    no_score: bool = typer.Option(False, "--no-score", help="Never run a detector; use stored scores only."),
    allow_paid: bool = typer.Option(False, "--allow-paid", help="Let evaluate call paid (vendor) detectors for "
                                    "selected documents without a stored score; needs --max-spend."),
    max_spend: float | None = typer.Option(None, "--max-spend", min=0.0, help="With --allow-paid: stop before "
                                              "the paid calls of this evaluation would cost more (words)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not print the tables."),
    grid: str | None = typer.Option(None, "--grid", help="RAID's grid over these comma-separated tags (e.g. "
                                       "domain,model,decoding,repetition_penalty,attack): every cell and 'all' roll-up, "
                                       "TPR at 5%/1% FPR and AUROC with intervals, as 'grid' in the results JSON."),
    grid_threshold_by: str | None = typer.Option(None, "--grid-threshold-by", help="Tag whose values get their own "
                                                    "thresholds (default: domain when it is a grid tag; 'none': one)."),
    raid_json: Path | None = typer.Option(None, "--raid-json", help="With --grid: also write each detector's grid "
                                             "in RAID's leaderboard results.json shape into this folder."),
):
    """Evaluate stored scores under a protocol; print Table 1, Table 2 and the side rows.

    Without --protocol every stored detector is evaluated with AI probability > 0.5
    (its own verdict when it has no probability; no decision rule when it has neither),
    on all documents (no split). `evaluate` never calls a paid API unless given
    --allow-paid --max-spend N; score vendor detectors with `veribench score`.
    """
    from veribench.errors import InputError
    from veribench.evaluate import evaluate_workspace
    from veribench.evaluate.tables import print_tables, print_warnings, wide_console, write_outputs
    from veribench.protocol.model import load_protocol
    from veribench.store import Workspace

    if allow_paid and max_spend is None:
        raise InputError("--allow-paid needs --max-spend N (the most the paid calls may cost, in words)",
                         field="--max-spend")
    if max_spend is not None and not allow_paid:
        raise InputError("--max-spend applies to paid calls, which need --allow-paid", field="--allow-paid")
    con = wide_console()
    proto = load_protocol(protocol) if protocol else None
    with Workspace(workspace) as ws:
        if ws.document_count() == 0:
            raise typer.BadParameter(f"workspace {workspace} has no documents; run `veribench import` first")
        tags = [t.strip() for t in grid.split(",") if t.strip()] if grid else None
        res = evaluate_workspace(ws, proto, allow_scoring=not no_score, progress=not quiet, log=con.print,
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
    if not quiet:
        print_tables(res, con)
        print_warnings(res, con)


def _write_raid_json(g: dict, folder: Path) -> None:
    """Each detector's grid (``g["grid"]``, ``g["grid_info"]``) in RAID's leaderboard shape."""
    from veribench.errors import ProtocolError
    from veribench.evaluate.grid import raid_leaderboard

    g = {"rows": g["grid"], "info": g["grid_info"]}
    folder.mkdir(parents=True, exist_ok=True)
    for det in g["info"]["thresholds"]:
        try:
            out = raid_leaderboard(g, det)
        except ValueError as e:
            raise ProtocolError(f"--raid-json: {e}") from None
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in det)
        (folder / f"{safe}.json").write_text(json.dumps(out, indent=1, allow_nan=False), encoding="utf-8")


def register(app: typer.Typer) -> None:
    app.command("evaluate")(evaluate_cmd)
