"""CLI: ``veribench evaluate``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from .common import WorkspaceOpt, friendly_errors


@friendly_errors
def evaluate_cmd(
    workspace: Path = WorkspaceOpt,
    protocol: Optional[Path] = typer.Option(None, "--protocol", "-p", help="Committed protocol file (TOML/YAML)."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the results JSON here."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write Markdown, CSV, JSON, HTML and raw scores here."),
    no_score: bool = typer.Option(False, "--no-score", help="Never run a detector; use stored scores only."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not print the tables."),
    grid: Optional[str] = typer.Option(None, "--grid", help="RAID's grid over these comma-separated tags (e.g. "
                                       "domain,model,decoding,repetition_penalty,attack): every cell and 'all' roll-up, "
                                       "TPR at 5%/1% FPR and AUROC with intervals, as 'grid' in the results JSON."),
    grid_threshold_by: Optional[str] = typer.Option(None, "--grid-threshold-by", help="Tag whose values get their own "
                                                    "thresholds (default: domain when it is a grid tag; 'none': one)."),
    raid_json: Optional[Path] = typer.Option(None, "--raid-json", help="With --grid: also write each detector's grid "
                                             "in RAID's leaderboard results.json shape into this folder."),
):
    """Evaluate stored scores under a protocol; print Table 1 and Table 2.

    Without --protocol every stored detector is evaluated with AI probability > 0.5
    (its own verdict when it has no probability), on all documents (no split).
    """
    from ..evaluate import evaluate_workspace
    from ..evaluate.tables import print_tables, wide_console, write_outputs
    from ..protocol.model import load_protocol
    from ..store import Workspace

    con = wide_console()
    proto = load_protocol(protocol) if protocol else None
    with Workspace(workspace) as ws:
        if ws.document_count() == 0:
            raise typer.BadParameter(f"workspace {workspace} has no documents; run `veribench import` first")
        res = evaluate_workspace(ws, proto, allow_scoring=not no_score, progress=not quiet, log=con.print)
        if grid:
            g = _grid(ws, proto, [t.strip() for t in grid.split(",") if t.strip()], grid_threshold_by)
            res["grid"], res["grid_info"] = g["rows"], g["info"]
            if raid_json:
                _write_raid_json(g, raid_json)
            if not quiet:
                con.print(f"grid: {len(g['rows'])} rows (cells and roll-ups) over {g['info']['tags']}, in the results "
                          "JSON under 'grid'")
        if out:
            write_outputs(res, out, ws)
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(res, indent=1, allow_nan=False), encoding="utf-8")
    if not quiet:
        print_tables(res, con)
        for w in res["warnings"][:20]:
            con.print(f"[yellow]warning:[/] {w}")
        if len(res["warnings"]) > 20:
            con.print(f"[yellow]… {len(res['warnings']) - 20} more warnings in the results JSON[/]")


def _grid(ws, proto, tags: list[str], threshold_by: Optional[str]) -> dict:
    """RAID's grid (``veribench.evaluate.grid``) over the run's documents and stored scores."""
    import numpy as np

    from ..errors import ProtocolError
    from ..evaluate.grid import GridDetector, compute_grid, unattacked_mask
    from ..evaluate.run import load_detector, load_documents, resolve_detectors
    from ..protocol.model import Protocol
    from ..protocol.split import calibration_mask

    proto = proto or Protocol.default()
    tb = threshold_by if threshold_by is not None else ("domain" if "domain" in tags else None)
    tb = None if tb in ("none", "") else tb
    pairs = resolve_detectors(ws, proto, allow_scoring=False, progress=False, log=lambda m: None)
    docs = load_documents(ws, proto)
    dets = [load_detector(ws, spec, e.display, e.rule, len(docs), e.corpora) for spec, e in pairs]

    def col(name: str):
        return docs.column(name if name in ("subgroup", "arm", "kind", "corpus") or name.startswith("tag:")
                           else f"tag:{name}")

    values = {t: col(t) for t in tags + ([tb] if tb and tb not in tags else [])}
    label = np.where(docs.label == "ai", 1, np.where(docs.label == "human", 0, -1))
    if proto.split_rule == "hash":  # the grid, like the tables, counts the test split only
        elig = np.isin(docs.corpus, list(proto.split_corpora)) if proto.split_corpora else None
        label[calibration_mask(list(docs.doc_id), docs.label == "human", list(docs.group_key),
                               every=proto.split_every, salt=proto.split_salt, eligible=elig)] = -1
    try:
        g = compute_grid(values, label, [GridDetector(d.label, np.where(d.ok, d.oriented, np.nan)) for d in dets],
                         tags=tags, threshold_by=tb, unattacked=unattacked_mask(col("attack"), col("derivation")))
    except ValueError as e:
        raise ProtocolError(f"--grid {','.join(tags)}: {e}") from None
    g["info"]["split"] = "test split only" if proto.split_rule == "hash" else "all selected documents"
    return g


def _write_raid_json(g: dict, folder: Path) -> None:
    from ..errors import ProtocolError
    from ..evaluate.grid import raid_leaderboard

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
