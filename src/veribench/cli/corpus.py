"""CLI group ``veribench import SOURCE ...``.

``import`` is the one verb for everything that enters a workspace (docs/cli.md): the
field's corpora, documents in the corpus schema, recorded scores, edited drafts, the
outputs of ``generate`` and ``humanize``, a humanizer cycle bundle and the writing app's
submitted texts (``import arm-b``). Each import creates the workspace when it is missing
and goes through the one logged write path, all or nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from veribench.cli.common import QuietOpt, WorkspaceOpt, check_value, choice, input_path, open_workspace, validated
from veribench.cli.write import check_write_store
from veribench.corpus.importers import hc3, import_liang2023, import_scores, mage, raid, read_documents, semeval
from veribench.corpus.importers._store import store_import
from veribench.corpus.importers.beemo import import_beemo
from veribench.corpus.importers.detectrl import import_detectrl
from veribench.corpus.importers.edited import import_edited
from veribench.corpus.importers.fastdetectgpt import available_sets, read_fastdetectgpt
from veribench.corpus.importers.m4 import import_m4
from veribench.corpus.importers.outputs import import_humanized, read_cycle, read_generated
from veribench.rubric.write import armb
from veribench.rubric.write.db import open_store
from veribench.scales import get_scale

import_app = typer.Typer(help="Import corpora, recorded scores and texts into a workspace (created when missing; "
                              "each import all or nothing, logged).", no_args_is_help=True)

CorpusOpt = typer.Option(None, "--corpus", help="Corpus name stored with each document (default: the file name stem).")
StreamProgressOpt = typer.Option(True, "--progress/--no-progress",
                                 help="Show records read: a bar on a terminal, else a line every few seconds.")


def _show(report: Any, quiet: bool) -> None:
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


@import_app.command("liang2023")
def import_liang(
    directory: Path = typer.Argument(..., help="Folder holding Human_Data/ and GPT_Data/ (Liang et al. 2023).",
                                     callback=input_path("folder")),
    workspace: Path = WorkspaceOpt,
    quiet: bool = QuietOpt,
) -> None:
    """Import the Liang et al. (2023) sets with the seven detectors' recorded scores."""
    with open_workspace(workspace, create=True) as ws:
        _show(import_liang2023(ws, directory), quiet)


@import_app.command("fastdetectgpt")
def import_fdg(
    directory: Path = typer.Argument(..., help="Folder with <set>.raw_data.json and <set>.args.json files.",
                                     callback=input_path("folder")),
    sets: str | None = typer.Option(None, "--sets", help="Comma-separated set names (default: all)."),
    pairs: int | None = typer.Option(None, "--pairs", min=1, help="Only the first N pairs of each set."),
    workspace: Path = WorkspaceOpt,
    quiet: bool = QuietOpt,
) -> None:
    """Import fast-detect-gpt human/AI pairs (human = arm A, AI = arm C with its generation spec)."""
    chosen = [s.strip() for s in sets.split(",") if s.strip()] if sets else None
    found = available_sets(directory)
    for name in chosen or []:
        if found:  # a folder without any set is refused below, naming the folder
            check_value("--sets", name, found, "set")
    report, docs = read_fastdetectgpt(directory, chosen, pairs)
    with open_workspace(workspace, create=True) as ws:
        _show(store_import(ws, report, docs), quiet)


def _documents_command(fmt: str) -> Any:
    def cmd(
        file: Path = typer.Argument(..., help=f"The {fmt.upper()} file (schema: docs/corpus-schema.md).",
                                    callback=input_path("file")),
        corpus: str | None = CorpusOpt,
        workspace: Path = WorkspaceOpt,
        update: bool = typer.Option(False, "--update", help="Apply changed fields (label, arm, kind, subgroup, "
                                    "tags, group_key, provenance, generation) of documents already stored; "
                                    "without it each difference is reported as a conflict and not applied."),
        quiet: bool = QuietOpt,
    ) -> None:
        report, docs = read_documents(file, fmt, corpus)
        with open_workspace(workspace, create=True) as ws:
            _show(store_import(ws, report, docs, update=update), quiet)

    cmd.__doc__ = f"Import documents from a {fmt.upper()} file (schema: docs/corpus-schema.md)."
    cmd.__name__ = f"import_{fmt}"
    return cmd


for _fmt in ("jsonl", "csv", "parquet"):
    import_app.command(_fmt)(_documents_command(_fmt))


@import_app.command("scores")
def import_scores_cmd(
    file: Path = typer.Argument(..., help="CSV, JSON or JSONL of (doc_id, raw value, ...) records.",
                                callback=input_path("file")),
    detector: str | None = typer.Option(None, "--detector", "-d", help="Detector name for rows without one."),
    version: str | None = typer.Option(None, "--version", help="Detector version for rows without one."),
    scale: str | None = typer.Option(None, "--scale",
                                     help="Native scale: p_ai, percent_ai, p_human, human_0_100, "
                                          "zippy_confidence, ... (default p_ai).", callback=validated(get_scale)),
    value_field: str | None = typer.Option(None, "--value-field", help="Field holding the value "
                                           "(default: raw, score or value)."),
    verdict_field: str | None = typer.Option(None, "--verdict-field", help="Field holding the tool's own "
                                             "verdict. No column is ever read as a verdict unless named here "
                                             "(a 'label' column is usually the ground truth)."),
    rescan: bool = typer.Option(False, "--rescan", "--replace", help="A new scan: replace the stored scores of "
                                "these texts (the old rows are kept in scores_superseded), e.g. for a protocol "
                                "with rescan = true. Without it a stored score is kept."),
    workspace: Path = WorkspaceOpt,
    quiet: bool = QuietOpt,
) -> None:
    """Import detector scores gathered elsewhere (e.g. by hand from a commercial tool)."""
    with open_workspace(workspace, create=True) as ws:
        _show(import_scores(ws, file, detector=detector, version=version, scale=scale, value_field=value_field,
                            verdict_field=verdict_field, rescan=rescan), quiet)


@import_app.command("edited")
def import_edited_cmd(
    file: Path = typer.Argument(..., help="JSONL or CSV of {draft_id, text, [id, draft_sha256, editor, edited_at, "
                                          "attestation, method, tags]} (docs/robustness.md).",
                                callback=input_path("file")),
    protocol: Path | None = typer.Option(None, "--protocol", "-p", help="Protocol whose [arms] table sets the "
                                         "edit budget (default: 10% of words, no sentence added or removed).",
                                         callback=input_path("file")),
    arm: str = typer.Option("C2", "--arm", help="Arm of the edited documents."),
    corpus: str | None = typer.Option(None, "--corpus", help="Corpus name (default: the draft's corpus)."),
    workspace: Path = WorkspaceOpt,
    quiet: bool = QuietOpt,
) -> None:
    """Import human-edited versions beside their drafts (the C2 arm), each edit measured
    and held to the protocol's edit budget (outside: refused or moved, as it says)."""
    with open_workspace(workspace, create=True) as ws:
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


@import_app.command("generated")
def import_generated_cmd(
    file: Path = typer.Argument(..., help="`veribench generate` output (JSONL).", callback=input_path("file")),
    corpus: str | None = typer.Option(None, "--corpus", help="Corpus name and id prefix (default: the file stem)."),
    arm: str = typer.Option("C", "--arm", help="Protocol arm of the generated texts."),
    workspace: Path = WorkspaceOpt,
    quiet: bool = QuietOpt,
) -> None:
    """Import generated texts as AI documents, each with its generation spec (version = the server's model string)."""
    report, docs = read_generated(file, corpus=corpus, arm=arm)
    with open_workspace(workspace, create=True) as ws:
        _show(store_import(ws, report, docs), quiet)


@import_app.command("humanized")
def import_humanized_cmd(
    file: Path = typer.Argument(..., help="`veribench humanize` output (JSONL); its ids are workspace document ids.",
                                callback=input_path("file")),
    corpus: str | None = typer.Option(None, "--corpus", help="Corpus name (default: the file stem)."),
    arm: str | None = typer.Option(None, "--arm", help="Arm of the outputs (default: each source's arm; C2 for "
                                                       "lightly edited AI text)."),
    workspace: Path = WorkspaceOpt,
    quiet: bool = QuietOpt,
) -> None:
    """Import humanized outputs as derived documents of their sources (tags derivation=humanize, attack=<humanizer>)."""
    with open_workspace(workspace, create=True) as ws:
        _show(import_humanized(ws, file, corpus=corpus, arm=arm), quiet)


@import_app.command("cycle")
def import_cycle_cmd(
    directory: Path = typer.Argument(..., help="HumanizerBench-format cycle bundle (samples.json, tests.json).",
                                     callback=input_path("folder")),
    corpus: str | None = typer.Option(None, "--corpus", help="Corpus name and id prefix (default: the cycle name)."),
    arm: str = typer.Option("C", "--arm", help="Arm of the samples (AI source texts)."),
    humanized_arm: str | None = typer.Option(None, "--humanized-arm",
                                             help="Arm of the humanized outputs (default: the sample's arm)."),
    workspace: Path = WorkspaceOpt,
    quiet: bool = QuietOpt,
) -> None:
    """Import a cycle's samples (AI documents) and complete humanizer outputs (derived documents).

    (`veribench cycle add` is another thing: it adds texts to a cycle folder.)
    """
    report, docs = read_cycle(directory, corpus=corpus, arm=arm, humanized_arm=humanized_arm)
    with open_workspace(workspace, create=True) as ws:
        _show(store_import(ws, report, docs), quiet)


@import_app.command("arm-b")
def import_armb_cmd(workspace: Path = WorkspaceOpt,
                    corpus: str = typer.Option("arm-b", "--corpus", help="Corpus name of the documents."),
                    quiet: bool = QuietOpt) -> None:
    """Import the writing app's submitted texts as arm-B human documents; apply pending withdrawals.

    Reads WS/write.sqlite (`veribench write invite` made it) and writes the workspace.
    """
    check_write_store(workspace)
    with open_store(workspace) as db:
        ws = open_workspace(workspace, create=True)
        try:
            report, removed = armb.sync(ws, db, corpus=corpus)
        except BaseException:
            ws.close()
            raise
        armb.close_after(ws, removed)
    if quiet:
        typer.echo(f"write: {report.documents} documents, {len(removed)} withdrawn (import {report.import_id})")
        return
    report.print()
    typer.echo(f"import id: {report.import_id}")
    for p in removed:
        typer.echo(f"withdrawn: {p['doc_id']} ({len(p['documents_removed'])} documents, {p['scores_removed']} "
                   f"scores removed; logged as {p['withdrawal_id']})")


# -- the field's public corpora (issue 16): streamed, one transaction each -------------------
SourceArg = typer.Argument(..., help="A released file, a folder laid out as the release, or hf://datasets/<repo>.",
                           callback=input_path("path"))


def split_opt(splits: Any) -> Any:
    """``--split S``: one of the release's splits (``splits``: split -> file), checked when
    the command line is read (an unknown one: exit 2, naming the known ones)."""
    return typer.Option(None, "--split", help=f"Only this split: {', '.join(splits)} (default: every split found).",
                        callback=choice(splits, "split"))


def _corpus_command(name: str, importer: Any, doc: str, source: Any = SourceArg, splits: Any = None,
                    multi: bool = False) -> None:
    """``veribench import NAME SOURCE [--split S]`` for one of the public corpora (``splits``:
    the release's splits, ``None`` for a corpus without ``--split``; ``multi``: several
    SOURCE arguments)."""

    def run(source: Any, corpus: str, workspace: Path, quiet: bool, progress: bool, **kw: Any) -> None:
        with open_workspace(workspace, create=True) as ws:
            _show(importer(ws, source, corpus=corpus, progress=progress, **kw), quiet)

    corpus_opt = typer.Option(name, "--corpus", help="Corpus name stored with each document.")
    if splits:
        def cmd(source: str = source, split: str | None = split_opt(splits), corpus: str = corpus_opt,
                workspace: Path = WorkspaceOpt, quiet: bool = QuietOpt, progress: bool = StreamProgressOpt) -> None:
            run(source, corpus, workspace, quiet, progress, split=split)
    else:
        def cmd(source: Any = source, corpus: str = corpus_opt, workspace: Path = WorkspaceOpt,
                quiet: bool = QuietOpt, progress: bool = StreamProgressOpt) -> None:
            run(source, corpus, workspace, quiet, progress)
        cmd.__annotations__["source"] = "list[str]" if multi else "str"  # typer reads the hint

    cmd.__doc__ = doc
    cmd.__name__ = f"import_{name}_cmd"
    import_app.command(name)(cmd)


_corpus_command("raid", raid.import_raid,
                "Import RAID's released CSV (train.csv, extra.csv; hf://datasets/liamdugan/raid). Predictions "
                "([{\"id\", \"score\"}]) then enter with `veribench import scores FILE --detector NAME`.",
                splits=raid.FILES)
_corpus_command("mage", mage.import_mage,
                "Import MAGE (train/valid/test and the two wilder test sets; hf://datasets/yaful/MAGE).",
                splits=mage.FILES)
_corpus_command("m4", import_m4, "Import M4 (mbzuai-nlp/M4): each line's human and machine text.",
                typer.Argument(..., help="M4 <DOMAIN>_<MODEL>.jsonl files or the data/ folder.",
                               callback=input_path("path")), multi=True)
_corpus_command("detectrl", import_detectrl, "Import DetectRL's benchmark files (NLP2CT/DetectRL).",
                typer.Argument(..., help="A <setting>_{train,test}.json file or Benchmark_Data/.",
                               callback=input_path("path")))
_corpus_command("beemo", import_beemo, "Import Beemo: human, machine, expert-edited and LLM-edited versions of "
                "each prompt's answer.",
                typer.Argument("hf://datasets/toloka/beemo", help="hf://datasets/toloka/beemo, a local copy of it, "
                               "or a .parquet file.", callback=input_path("path")))


@import_app.command("semeval")
def import_semeval_cmd(
    source: str = typer.Argument(..., help="A subtask{A,B,C}_*.jsonl file or a folder of them.",
                                 callback=input_path("path")),
    subtask: str | None = typer.Option(None, "--subtask", help="A, B or C (default: from the file name).",
                                       callback=choice(semeval.COLUMNS, "subtask", upper=True)),
    split: str | None = typer.Option(None, "--split", help="train, dev or test (default: from the file name).",
                                     callback=choice(semeval.SPLITS, "split")),
    gold: Path | None = typer.Option(None, "--gold", help="Gold labels ({id, label} lines) of a test file.",
                                     callback=input_path("file")),
    corpus: str = typer.Option("semeval2024-task8", "--corpus", help="Corpus name stored with each document."),
    workspace: Path = WorkspaceOpt,
    quiet: bool = QuietOpt,
    progress: bool = StreamProgressOpt,
) -> None:
    """Import SemEval-2024 Task 8 (subtasks A, B; C as mixed texts with their human/machine boundary)."""
    with open_workspace(workspace, create=True) as ws:
        _show(semeval.import_semeval(ws, source, subtask=subtask, split=split, gold=gold, corpus=corpus,
                             progress=progress), quiet)


@import_app.command("hc3")
def import_hc3_cmd(
    source: str = SourceArg,
    config: str | None = typer.Option(None, "--config", help="One source file: finance, medicine, ... (the "
                                      "language's files; default: all but all.jsonl)."),
    language: str | None = typer.Option(None, "--language", help="en or zh (default: from the source).",
                                        callback=choice(hc3.FILES, "language")),
    corpus: str = typer.Option("hc3", "--corpus", help="Corpus name stored with each document."),
    workspace: Path = WorkspaceOpt,
    quiet: bool = QuietOpt,
    progress: bool = StreamProgressOpt,
) -> None:
    """Import HC3 (hf://datasets/Hello-SimpleAI/HC3 or HC3-Chinese): every human and ChatGPT answer."""
    if config is not None:
        lang = hc3.language_of(source, language)
        check_value("--config", config, hc3.FILES[lang], "config", f"known for language {lang}")
    with open_workspace(workspace, create=True) as ws:
        _show(hc3.import_hc3(ws, source, config=config, language=language, corpus=corpus, progress=progress), quiet)
