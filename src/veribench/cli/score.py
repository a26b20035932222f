"""CLI group: ``veribench score`` — score a JSONL file of texts with one detector.

Input rows are ``{"id": ..., "text": ...}``; output rows are ``{"id", "detector",
"statistic", "ai_probability", "status", "scale", "direction", "verdict", "detail"}``,
where ``statistic`` is the raw value on the detector's own scale (for zero-shot detectors
the criterion as its paper defines it) and ``ai_probability`` is null where no published
mapping exists. Scoring goes through :func:`veribench.detectors.pipeline.score_texts`,
so the workspace cache, budgets and dry runs behave the same for local and API detectors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import typer

from veribench.cli.common import (
    ProgressOpt,
    RetryFailedOpt,
    WorkspaceOpt,
    build,
    input_path,
    max_spend_opt,
    open_workspace,
    out_opt,
    progress,
    refuse_failures,
    settings,
)
from veribench.cli.grammar import CliError
from veribench.corpus.importers._io import iter_jsonl
from veribench.detectors.local.ray_engine import RayDetector
from veribench.detectors.pipeline import RunStats, budget_note, score_texts
from veribench.errors import InputError
from veribench.hashing import text_sha256
from veribench.store.events import chain_head, now_utc

#: ``--set``, ``--max-spend``, ``--input``: declared once, shared by score and humanize.
InputOpt = typer.Option(..., "--input", "-i", help="JSONL file of {id, text} rows.", callback=input_path("file"))


def read_rows(path: Path) -> list[tuple[str, str]]:
    """``[(id, text)]`` from a JSONL file, through the shared hardened reader.

    Raises:
        InputError: naming the file, record (``line N``) and field of a bad row.
    """
    if not path.is_file():
        raise CliError(str(path), "no such file or folder", "check the path given to --input")
    rows: list[tuple[str, str]] = []
    seen: set[str] = set()
    for rec, obj in iter_jsonl(path):
        if "id" not in obj or obj["id"] is None or isinstance(obj["id"], (bool, dict, list, float)):
            raise InputError("missing, or not a string or integer", file=str(path), record=rec, field="id")
        if not isinstance(obj.get("text"), str):
            raise InputError("missing or not a string", file=str(path), record=rec, field="text")
        rid = str(obj["id"])
        if rid in seen:
            raise InputError(f"duplicate id {rid!r}", file=str(path), record=rec, field="id")
        seen.add(rid)
        rows.append((rid, obj["text"]))
    return rows


def output_row(rid: str, detector: Any, r: Any) -> dict[str, Any]:
    """One output row for a ScoreResult (``None`` → status ``not_scored``, e.g. out of budget)."""
    if r is None:
        return {"id": rid, "detector": detector.spec.name, "statistic": None, "ai_probability": None,
                "status": "not_scored", "detail": {"reason": "stopped by --max-spend before this text"}}
    return {"id": rid, "detector": detector.spec.name, "statistic": r.raw, "ai_probability": r.ai_probability,
            "status": r.status, "scale": r.scale, "direction": r.direction, "verdict": r.verdict,
            "detail": r.detail}


def score_cmd(
    detector: str = typer.Option(..., "--detector", "-d", help="Detector name (veribench list detectors), e.g. "
                                 "loglik, fast-detectgpt, binoculars, hf-classifier, zippy."),
    set_: list[str] | None = typer.Option(None, "--set", help="Detector setting key=value (repeatable): model, "
                                          "scoring_model, sampling_model, observer, performer, max_tokens, "
                                          "batch_size, device, dtype."),
    input: Path = InputOpt,
    out: Path = out_opt("JSONL file to write {id, detector, statistic, ai_probability, status, ...} rows."),
    workspace: Path = WorkspaceOpt,
    engine: Literal["local", "ray"] = typer.Option("local", "--engine", help="local (this process) or ray (Ray Data "
                                                   "actors on a Ray cluster)."),
    ray_address: str | None = typer.Option(None, "--ray-address", help="Ray cluster address for --engine ray "
                                           "(default: $RAY_ADDRESS or a local instance)."),
    max_spend: float | None = max_spend_opt("Budget for this run, across resumes (words or credits; finite, "
                                            ">= 0): stored in the workspace under the run's key, so rerunning a "
                                            "killed command never sends more than this in total."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Score nothing; print what would be sent and its cost."),
    retry_failed: bool = RetryFailedOpt,
    rescan: bool = typer.Option(False, "--rescan", help="Scan every text again, whatever is stored (a rerun "
                                "that re-measures, e.g. under a protocol committed after the earlier scan); the "
                                "earlier scores stay stored beside the new ones."),
    show_progress: bool = ProgressOpt,
) -> None:
    """Score every text of a JSONL file with one detector, through the workspace cache.

    Stored call failures (a missing key, a site down) are sent again by every run; stored
    failures that describe the text (too short) only with --retry-failed; with --rescan,
    every text is sent again and its new score becomes the one `evaluate` uses (the earlier
    one is kept). Exits with status 1 when any text has no score (the output file still
    lists every row with its status).
    """
    rows = read_rows(input)
    conf = settings(set_)
    det = build("detector", detector, conf)
    if engine == "ray":
        det = RayDetector(detector, conf, address=ray_address, spec=det.spec)
    stats = RunStats()
    with progress("score", show_progress), open_workspace(workspace, create=True) as ws:
        with ws.lock:
            after = (int(chain_head(ws.con)["seq"]), now_utc()) if rescan else None  # nothing stored is served
        res = score_texts(ws, det, [t for _, t in rows], progress=show_progress, max_spend=max_spend,
                          dry_run=dry_run, stats=stats, retry_failed=retry_failed, rescan_after=after)
    if dry_run:
        typer.echo(json.dumps({"detector": det.spec.label, "planned": stats.planned,
                               "total_cost": sum(p["cost"] for p in stats.planned)}, indent=2))
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    statuses = []
    with tmp.open("w", encoding="utf-8") as f:
        for rid, text in rows:
            row = output_row(rid, det, res.get(text_sha256(text)))
            statuses.append(row["status"])
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    tmp.replace(out)
    typer.echo(f"{det.spec.label}: {stats.unique} unique texts, {stats.cached} from cache, "
               + (f"{stats.retried} stored failures sent again, " if stats.retried else "")
               + f"{stats.computed} scored, {stats.failed} not ok"
               + (", stopped by --max-spend" if stats.stopped_for_budget else "") + f" → {out}")
    note = budget_note(stats, getattr(det, "cost_unit", None))
    if note:
        typer.echo(note, err=True)
    refuse_failures(str(out), statuses)
