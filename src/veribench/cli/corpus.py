"""CLI group: ``veribench import ...`` (corpora, recorded scores, edited drafts) and
``veribench export scores|documents``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from veribench.cli.common import WorkspaceOpt, friendly_errors

import_app = typer.Typer(help="Import corpora and recorded detector scores into a workspace (all or nothing).",
                         no_args_is_help=True)
export_app = typer.Typer(help="Export raw per-document data from a workspace.", no_args_is_help=True)


def _show(report, quiet: bool) -> None:
    if quiet:
        extra = "".join(f", {len(getattr(report, k))} {what}" for k, what in (
            ("document_conflicts", "conflicts not applied (--update applies them)"),
            ("score_conflicts", "score conflicts (stored scores kept)"),
            ("document_updates", "fields updated"), ("unused_fields", "unused fields")) if getattr(report, k))
        typer.echo(f"{report.kind}: {report.documents} documents, {sum(report.scores.values())} scores{extra} "
                   f"(import {report.import_id})")
    else:
        report.print()
        typer.echo(f"import id: {report.import_id}")


def _ws(path: Path):
    from veribench.store import Workspace

    return Workspace(path)


@import_app.command("liang2023")
@friendly_errors
def import_liang(
    directory: Path = typer.Argument(..., help="Folder holding Human_Data/ and GPT_Data/ (Liang et al. 2023)."),
    workspace: Path = WorkspaceOpt,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="One summary line instead of the full report."),
) -> None:
    """Import the Liang et al. (2023) sets with the seven detectors' recorded scores."""
    from veribench.corpus.importers import import_liang2023

    with _ws(workspace) as ws:
        _show(import_liang2023(ws, directory), quiet)


@import_app.command("fastdetectgpt")
@friendly_errors
def import_fdg(
    directory: Path = typer.Argument(..., help="Folder with <set>.raw_data.json and <set>.args.json files."),
    sets: str | None = typer.Option(None, "--sets", help="Comma-separated set names (default: all)."),
    pairs: int | None = typer.Option(None, "--pairs", help="Only the first N pairs of each set."),
    workspace: Path = WorkspaceOpt,
    quiet: bool = typer.Option(False, "--quiet", "-q"),
) -> None:
    """Import fast-detect-gpt human/AI pairs (human = arm A, AI = arm C with its generation spec)."""
    from veribench.corpus.importers import import_fastdetectgpt

    chosen = [s.strip() for s in sets.split(",") if s.strip()] if sets else None
    with _ws(workspace) as ws:
        _show(import_fastdetectgpt(ws, directory, chosen, pairs), quiet)


def _documents_command(fmt: str):
    @friendly_errors
    def cmd(
        file: Path = typer.Argument(..., help=f"The {fmt.upper()} file (schema: docs/corpus-schema.md)."),
        corpus: str | None = typer.Option(None, "--corpus", help="Corpus name (default: the file name stem)."),
        workspace: Path = WorkspaceOpt,
        update: bool = typer.Option(False, "--update", help="Apply changed fields (label, arm, kind, subgroup, "
                                    "tags, group_key, provenance, generation) of documents already stored; "
                                    "without it each difference is reported as a conflict and not applied."),
        quiet: bool = typer.Option(False, "--quiet", "-q"),
    ) -> None:
        from veribench.corpus.importers import read_documents, store_import

        report, docs = read_documents(file, fmt, corpus)
        with _ws(workspace) as ws:
            _show(store_import(ws, report, docs, update=update), quiet)

    cmd.__doc__ = f"Import documents from a {fmt.upper()} file (schema: docs/corpus-schema.md)."
    cmd.__name__ = f"import_{fmt}"
    return cmd


for _fmt in ("jsonl", "csv", "parquet"):
    import_app.command(_fmt)(_documents_command(_fmt))


@import_app.command("scores")
@friendly_errors
def import_scores_cmd(
    file: Path = typer.Argument(..., help="CSV, JSON or JSONL of (doc_id, raw value, ...) records."),
    detector: str | None = typer.Option(None, "--detector", help="Detector name for rows without one."),
    version: str | None = typer.Option(None, "--version", help="Detector version for rows without one."),
    scale: str | None = typer.Option(None, "--scale",
                                        help="Native scale: p_ai, percent_ai, p_human, human_0_100, "
                                             "zippy_confidence, ... (default p_ai)."),
    value_field: str | None = typer.Option(None, "--value-field", help="Field holding the value "
                                              "(default: raw, score or value)."),
    verdict_field: str | None = typer.Option(None, "--verdict-field", help="Field holding the tool's own "
                                                "verdict. No column is ever read as a verdict unless named here "
                                                "(a 'label' column is usually the ground truth)."),
    workspace: Path = WorkspaceOpt,
    quiet: bool = typer.Option(False, "--quiet", "-q"),
) -> None:
    """Import detector scores gathered elsewhere (e.g. by hand from a commercial tool)."""
    from veribench.corpus.importers import import_scores

    with _ws(workspace) as ws:
        _show(import_scores(ws, file, detector=detector, version=version, scale=scale, value_field=value_field,
                            verdict_field=verdict_field), quiet)


@import_app.command("edited")
@friendly_errors
def import_edited_cmd(
    file: Path = typer.Argument(..., help="JSONL or CSV of {draft_id, text, [id, draft_sha256, editor, edited_at, "
                                          "attestation, method, tags]} (docs/robustness.md)."),
    protocol: Path | None = typer.Option(None, "--protocol", "-p", help="Protocol whose [arms] table sets the "
                                            "edit budget (default: 10% of words, no sentence added or removed)."),
    arm: str = typer.Option("C2", "--arm", help="Arm of the edited documents."),
    corpus: str | None = typer.Option(None, "--corpus", help="Corpus name (default: the draft's corpus)."),
    workspace: Path = WorkspaceOpt,
    quiet: bool = typer.Option(False, "--quiet", "-q"),
) -> None:
    """Import human-edited versions beside their drafts (the C2 arm), each edit measured
    and held to the protocol's edit budget (outside: refused or moved, as it says)."""
    from veribench.corpus.importers.edited import import_edited

    with _ws(workspace) as ws:
        rep = import_edited(ws, file, protocol=protocol, arm=arm, corpus=corpus)
    if quiet:
        outcomes: dict[str, int] = {}
        for e in rep.edits:
            outcomes[e["outcome"]] = outcomes.get(e["outcome"], 0) + 1
        typer.echo(f"edited: {rep.documents} documents stored; " + ", ".join(
            f"{k} {v}" for k, v in sorted(outcomes.items())) + f" (import {rep.import_id})")
    else:
        rep.print()
        typer.echo(f"import id: {rep.import_id}")


@export_app.command("documents")
@friendly_errors
def export_documents_cmd(
    out: Path = typer.Option(..., "--out", "-o", help="Output JSONL file."),
    corpus: str | None = typer.Option(None, "--corpus", help="Only this corpus."),
    workspace: Path = WorkspaceOpt,
) -> None:
    """Write one JSON object per document (import schema plus source_id, attack, edits)."""
    from veribench.corpus.stored import export_documents
    from veribench.errors import InputError
    from veribench.store import Workspace

    if not (workspace / "veribench.duckdb").is_file():
        raise InputError("no workspace here", file=str(workspace))
    with Workspace(workspace, read_only=True) as ws:
        n = export_documents(ws, out, corpus=corpus)
    typer.echo(f"wrote {n} documents to {out}")


# -- the field's public corpora (issue 16): streamed, one transaction each -------------------
SourceArg = typer.Argument(..., help="A released file, a folder laid out as the release, or hf://datasets/<repo>.")
SplitOpt = typer.Option(None, "--split", help="Only this split (default: every split found).")
NoProgressOpt = typer.Option(False, "--no-progress", help="No progress display.")


def _corpus_command(name: str, target: str, doc: str, source: Any = SourceArg, split: bool = True,
                    multi: bool = False):
    """``veribench import NAME SOURCE [--split S]`` for one of the public corpora (``multi``:
    several SOURCE arguments)."""

    def run(source: Any, corpus: str, workspace: Path, quiet: bool, no_progress: bool, **kw: Any) -> None:
        import importlib

        mod, fn = target.split(":")
        importer = getattr(importlib.import_module(mod), fn)
        with _ws(workspace) as ws:
            _show(importer(ws, source, corpus=corpus, progress=not no_progress, **kw), quiet)

    corpus_opt = typer.Option(name, "--corpus", help="Corpus name stored with each document.")
    if split:
        def cmd(source: str = source, split: str | None = SplitOpt, corpus: str = corpus_opt,
                workspace: Path = WorkspaceOpt, quiet: bool = typer.Option(False, "--quiet", "-q"),
                no_progress: bool = NoProgressOpt) -> None:
            run(source, corpus, workspace, quiet, no_progress, split=split)
    else:
        def cmd(source: Any = source, corpus: str = corpus_opt, workspace: Path = WorkspaceOpt,
                quiet: bool = typer.Option(False, "--quiet", "-q"), no_progress: bool = NoProgressOpt) -> None:
            run(source, corpus, workspace, quiet, no_progress)
        cmd.__annotations__["source"] = "list[str]" if multi else "str"  # typer reads the hint

    cmd.__doc__ = doc
    cmd.__name__ = f"import_{name}_cmd"
    import_app.command(name)(friendly_errors(cmd))


_corpus_command("raid", "veribench.corpus.importers.raid:import_raid",
                "Import RAID's released CSV (train.csv, extra.csv; hf://datasets/liamdugan/raid). Predictions "
                "([{\"id\", \"score\"}]) then enter with `veribench import scores FILE --detector NAME`.")
_corpus_command("mage", "veribench.corpus.importers.mage:import_mage",
                "Import MAGE (train/valid/test and the two wilder test sets; hf://datasets/yaful/MAGE).")
_corpus_command("m4", "veribench.corpus.importers.m4:import_m4", "Import M4 (mbzuai-nlp/M4): each line's human and "
                "machine text.", typer.Argument(..., help="M4 <DOMAIN>_<MODEL>.jsonl files or the data/ folder."),
                split=False, multi=True)
_corpus_command("detectrl", "veribench.corpus.importers.detectrl:import_detectrl",
                "Import DetectRL's benchmark files (NLP2CT/DetectRL).",
                typer.Argument(..., help="A <setting>_{train,test}.json file or Benchmark_Data/."), split=False)
_corpus_command("beemo", "veribench.corpus.importers.beemo:import_beemo", "Import Beemo: human, machine, "
                "expert-edited and LLM-edited versions of each prompt's answer.",
                typer.Argument("hf://datasets/toloka/beemo", help="hf://datasets/toloka/beemo, a local copy of it, or a "
                               ".parquet file."), split=False)


@import_app.command("semeval")
@friendly_errors
def import_semeval_cmd(source: str = typer.Argument(..., help="A subtask{A,B,C}_*.jsonl file or a folder of them."),
                       subtask: str | None = typer.Option(None, "--subtask", help="A, B or C (default: file name)."),
                       split: str | None = typer.Option(None, "--split", help="train, dev or test (default: file name)."),
                       gold: Path | None = typer.Option(None, "--gold", help="Gold labels ({id, label} lines) of a test file."),
                       corpus: str = typer.Option("semeval2024-task8", "--corpus"), workspace: Path = WorkspaceOpt,
                       quiet: bool = typer.Option(False, "--quiet", "-q"), no_progress: bool = NoProgressOpt) -> None:
    """Import SemEval-2024 Task 8 (subtasks A, B; C as mixed texts with their human/machine boundary)."""
    from veribench.corpus.importers.semeval import import_semeval

    with _ws(workspace) as ws:
        _show(import_semeval(ws, source, subtask=subtask, split=split, gold=gold, corpus=corpus,
                             progress=not no_progress), quiet)


@import_app.command("hc3")
@friendly_errors
def import_hc3_cmd(source: str = SourceArg,
                   config: str | None = typer.Option(None, "--config", help="One source file (finance, ...; all)."),
                   language: str | None = typer.Option(None, "--language", help="en or zh (default: from the source)."),
                   corpus: str = typer.Option("hc3", "--corpus"), workspace: Path = WorkspaceOpt,
                   quiet: bool = typer.Option(False, "--quiet", "-q"), no_progress: bool = NoProgressOpt) -> None:
    """Import HC3 (hf://datasets/Hello-SimpleAI/HC3 or HC3-Chinese): every human and ChatGPT answer."""
    from veribench.corpus.importers.hc3 import import_hc3

    with _ws(workspace) as ws:
        _show(import_hc3(ws, source, config=config, language=language, corpus=corpus, progress=not no_progress),
              quiet)


@export_app.command("scores")
@friendly_errors
def export_scores(
    out: Path = typer.Option(..., "--out", "-o", help="Output file: .csv or .parquet."),
    run: str | None = typer.Option(None, "--run", help="Export one evaluation run (its tag or id; the newest "
                                      "run of a tag): each document x detector it evaluated, with the split side, "
                                      "the rule, the threshold, counted/flagged and the exclusion reason."),
    workspace: Path = WorkspaceOpt,
) -> None:
    """Write raw per-document scores (one row per document x detector, with text_differs), or one run's rows."""
    from veribench.errors import InputError
    from veribench.store import Workspace

    if out.suffix.lower() not in (".csv", ".parquet"):
        raise InputError("export format must be .csv or .parquet", file=str(out))
    if not (workspace / "veribench.duckdb").is_file():
        raise InputError("no workspace here", file=str(workspace))
    with Workspace(workspace, read_only=True) as ws:
        if run is not None:
            from veribench.evaluate.run import export_run

            p, n, run_id = export_run(ws, run, out)
            typer.echo(f"wrote {n} rows of run {run_id} to {p}")
            return
        p = ws.export_scores(out)
        n = ws.query(f"SELECT count(*) FROM ({ws.RAW_SCORES_SQL})")[0][0]
    typer.echo(f"wrote {n} rows to {p}")


def register(app: typer.Typer) -> None:
    """Add ``import`` and ``export`` to the root app."""
    app.add_typer(import_app, name="import")
    app.add_typer(export_app, name="export")
