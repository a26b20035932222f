"""CLI group ``veribench export scores|documents|raid-submission``: raw per-document data of a workspace
(read only; a missing workspace is refused, never created)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import typer

from veribench.cli.common import WorkspaceOpt, check_filters, open_workspace, out_opt
from veribench.cli.grammar import CliUsageError
from veribench.corpus.stored import export_documents
from veribench.evaluate.run import export_run
from veribench.leaderboard.raid_export import OUT_OF_SCOPE_INCLUDED_RULE, OUT_OF_SCOPE_RULE, export_raid_submission
from veribench.leaderboard.raid_format import read_metadata

export_app = typer.Typer(help="Export raw per-document data from a workspace.", no_args_is_help=True)


@export_app.command("documents")
def export_documents_cmd(
    out: Path = out_opt("Output JSONL file."),
    corpus: str | None = typer.Option(None, "--corpus", help="Only this corpus."),
    workspace: Path = WorkspaceOpt,
) -> None:
    """Write one JSON object per document (import schema plus source_id, attack, edits)."""
    with open_workspace(workspace, read_only=True) as ws:
        check_filters(ws, corpus=corpus)
        n = export_documents(ws, out, corpus=corpus)
    typer.echo(f"wrote {n} documents to {out}")


@export_app.command("scores")
def export_scores(
    out: Path = out_opt("Output file: .csv or .parquet."),
    run: str | None = typer.Option(None, "--run", help="Export one evaluation run (its tag or id; the newest "
                                   "run of a tag): each document x detector it evaluated, with the split side, "
                                   "the rule, the threshold, counted/flagged and the exclusion reason."),
    workspace: Path = WorkspaceOpt,
) -> None:
    """Write raw per-document scores (one row per document x detector, with text_differs), or one run's rows."""
    if out.suffix.lower() not in (".csv", ".parquet"):
        raise CliUsageError(f"--out {out}", "the export format must be .csv or .parquet",
                            "name the file *.csv or *.parquet")
    with open_workspace(workspace, read_only=True) as ws:
        if run is not None:
            p, n, run_id = export_run(ws, run, out)
            typer.echo(f"wrote {n} rows of run {run_id} to {p}")
            return
        p = ws.export_scores(out)
        n = ws.query(f"SELECT count(*) FROM ({ws.RAW_SCORES_SQL})")[0][0]
    typer.echo(f"wrote {n} rows to {p}")


@export_app.command("raid-submission")
def export_raid_submission_cmd(
    run: str = typer.Option(..., "--run", help="The evaluation run (its tag or id; the newest run of a tag)."),
    out: Path = out_opt("Output folder: predictions.json and metadata.json are written there (replaced).",
                        kind="folder"),
    detector: str | None = typer.Option(None, "--detector", "-d", help="The run's detector to export (needed when "
                                        "the run evaluated several)."),
    metadata: Path | None = typer.Option(None, "--metadata", help="A RAID metadata.json to write as it is "
                                         "(checked against RAID's template); else --contact builds one."),
    contact: str | None = typer.Option(None, "--contact", help="RAID's contact_info (an e-mail address) for the "
                                       "metadata veribench builds."),
    name: str | None = typer.Option(None, "--name", help="RAID's detector_name (default: the detector's name)."),
    date_released: str | None = typer.Option(None, "--date-released", help="RAID's date_released, YYYY-MM-DD "
                                             "(default: the run's date)."),
    include_out_of_scope: bool = typer.Option(False, "--include-out-of-scope", help="Also write the texts outside "
                                              "the detector's declared languages that have a score (counted in "
                                              "the output): a board needs a score for every text."),
    workspace: Path = WorkspaceOpt,
) -> None:
    """Write RAID's leaderboard files (predictions.json [{id, score}], metadata.json) from one detector of a run;
    the score is the run's ranking score (higher = more likely AI), texts without a score are left out and counted,
    and so are texts outside the detector's declared languages unless --include-out-of-scope."""
    meta = None
    if metadata is not None:
        try:
            data = metadata.read_bytes()
        except OSError as e:
            raise CliUsageError(f"--metadata {metadata}", f"cannot read it: {e.strerror}",
                                "pass a RAID metadata.json file") from None
        meta = read_metadata(data, source=str(metadata))
    elif not contact:
        raise CliUsageError("--contact", "RAID's metadata.json needs contact_info",
                            "pass --contact EMAIL, or --metadata FILE")
    with open_workspace(workspace, read_only=True) as ws:
        r = export_raid_submission(ws, run, out, detector=detector, metadata=meta, contact_info=contact,
                                   detector_name=name, date_released=date_released,
                                   include_out_of_scope=include_out_of_scope)
    typer.echo(f"wrote {r.n} predictions of detector {r.detector} (run {r.run_id}) to {r.predictions}, "
               f"metadata to {r.metadata}")
    if r.included_out_of_scope:
        typer.echo(f"wrote {len(r.included_out_of_scope)} texts outside the detector's declared languages: "
                   f"{OUT_OF_SCOPE_INCLUDED_RULE}{_counted(r.included_out_of_scope)}")
    if r.out_of_scope:
        typer.echo(f"left out {len(r.out_of_scope)} texts outside the detector's declared languages: "
                   f"{OUT_OF_SCOPE_INCLUDED_RULE if include_out_of_scope else OUT_OF_SCOPE_RULE}"
                   f"{_counted(r.out_of_scope)}"
                   + ("" if include_out_of_scope else "; a board needs a score for every text of its set: pass "
                      "--include-out-of-scope to write those with a score"))
    if r.unscored:
        typer.echo(f"left out {len(r.unscored)} texts without a score{_counted(r.unscored)}")


def _counted(part: dict[str, str]) -> str:
    """`` (reason: count, ...; first: doc_id)`` of texts written or left out (doc_id -> reason)."""
    return (" (" + ", ".join(f"{k}: {v}" for k, v in sorted(Counter(part.values()).items()))
            + f"; first: {min(part)})")
