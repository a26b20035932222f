"""CLI group: ``veribench humanize``, ``veribench generate`` and ``veribench readability``.

- ``humanize``: rewrite every text of a JSONL file ``{id, text}`` with one humanizer
  (vendor API, ``llm-humanizer`` or ``manual``), through the workspace cache
  (:func:`veribench.humanizers.pipeline.humanize_texts`): a killed run resumes without
  repeating a stored call; ``--max-spend`` and ``--dry-run`` as for ``score``.
- ``generate``: source texts from cycle prompts (``prompts.json``) with an
  OpenAI-compatible endpoint, each with its full generation record.
- ``readability``: the LLM readability judge on [0, 1] (higher = better writing).

Keys come only from ``VERIBENCH_<VENDOR>_API_KEY``; see ``docs/vendors.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from veribench.cli.common import WorkspaceOpt, friendly_errors
from veribench.cli.corpus import _show


def _rows(path: Path) -> list[tuple[str, str]]:
    from veribench.cli.score import read_rows

    return read_rows(path)


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")


def _settings(pairs: list[str] | None) -> dict[str, Any]:
    from veribench.errors import InputError
    from veribench.registry import parse_settings

    try:
        return parse_settings(pairs)
    except ValueError as e:
        raise InputError(str(e), field="--set") from None


@friendly_errors
def humanize_cmd(
    humanizer: str = typer.Option(..., "--humanizer", "-H", help="undetectable, stealthgpt, writehuman, hix, humbot, llm-humanizer or manual."),
    set_: list[str] | None = typer.Option(None, "--set", help="Humanizer setting key=value (repeatable), e.g. base_url=..., strength=..., prompt_file=..., path=... (manual)."),
    input: Path = typer.Option(..., "--input", "-i", help="JSONL file of {id, text} rows."),
    output: Path | None = typer.Option(None, "--output", "-o", help="JSONL file of {id, humanizer, spec_hash, input_sha256, status, output, vendor_version, detail} rows (`veribench import humanized` reads it)."),
    workspace: Path = WorkspaceOpt,
    max_spend: float | None = typer.Option(None, "--max-spend", help="Budget for this run, across resumes (words; finite, >= 0): stored in the workspace under the run's key, so rerunning a killed command never sends more than this in total."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Send nothing; print what would be sent and its cost."),
    retry_transient: bool = typer.Option(False, "--retry-transient", help="Try again stored site_down/timeout/rate_limited failures."),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
) -> None:
    """Humanize every text of a JSONL file with one humanizer, through the workspace cache."""
    from veribench import registry
    from veribench.detectors.pipeline import RunStats, budget_note, check_budget
    from veribench.hashing import text_sha256
    from veribench.humanizers.pipeline import TRANSIENT, humanize_texts
    from veribench.store import Workspace

    max_spend = check_budget(max_spend)
    rows = _rows(input)
    h = registry.create("humanizer", humanizer, _settings(set_))
    st = RunStats()
    with Workspace(workspace) as ws:
        res = humanize_texts(ws, h, [t for _, t in rows], progress=progress, max_spend=max_spend, dry_run=dry_run,
                             stats=st, retry_statuses=TRANSIENT if retry_transient else ())
    if dry_run:
        total = sum(p["cost"] for p in st.planned)
        for p in st.planned:
            typer.echo(json.dumps(p, default=str))
        typer.echo(f"dry run: {len(st.planned)} request(s) to send, {st.cached} cached; estimated cost {total:g} "
                   f"{getattr(h, 'cost_unit', '')}", err=True)
        return
    out = []
    for rid, t in rows:
        r = res.get(text_sha256(t))
        if r is None:
            out.append({"id": rid, "humanizer": h.spec.name, "spec_hash": h.spec.hash, "input_sha256": text_sha256(t),
                        "status": "not_run", "output": None,
                        "detail": {"reason": "stopped by --max-spend before this text"}})
        else:
            out.append({"id": rid, "humanizer": h.spec.name, "spec_hash": h.spec.hash, "input_sha256": text_sha256(t),
                        "status": r.status, "output": r.output, "vendor_version": r.vendor_version,
                        "detail": r.detail})
    if output is not None:
        _write(output, out)
    typer.echo(f"{h.spec.label}: {st.computed} done, {st.cached} cached, {st.failed} failed, spent {st.spent:g}"
               + (" (stopped for budget)" if st.stopped_for_budget else ""), err=True)
    note = budget_note(st, getattr(h, "cost_unit", None))
    if note:
        typer.echo(note, err=True)


@friendly_errors
def generate_cmd(
    prompts: Path = typer.Option(..., "--prompts", "-p", help="Cycle prompts.json (rows with 'resolved') or a JSON list of strings."),
    set_: list[str] | None = typer.Option(None, "--set", help="Client setting key=value: base_url, model, provider, temperature, top_p, max_tokens, ..."),
    samples: int = typer.Option(1, "--samples", help="Texts per prompt (sample i uses seed+i)."),
    seed: int = typer.Option(0, "--seed"),
    output: Path = typer.Option(..., "--output", "-o", help="JSONL of {prompt_slug, category, prompt, sample, status, text, generation} (`veribench import generated` reads it)."),
    workspace: Path = WorkspaceOpt,
) -> None:
    """Generate source texts from cycle prompts with an OpenAI-compatible endpoint.

    Exits with status 1 when any request failed (the output file still lists every row).
    """
    from veribench.corpus.importers._io import load_json
    from veribench.errors import InputError
    from veribench.llm.generate import generate_sources
    from veribench.store import Workspace

    if not prompts.is_file():
        raise InputError("no such file", file=str(prompts))
    data = load_json(prompts)
    with Workspace(workspace) as ws:
        recs = generate_sources(_settings(set_), data, ws, samples=samples, seed=seed)
    _write(output, recs)
    ok = sum(r["status"] == "ok" for r in recs)
    typer.echo(f"generated {ok}/{len(recs)} texts → {output}", err=True)
    if ok < len(recs):
        from collections import Counter

        why = ", ".join(f"{k}: {v}" for k, v in sorted(Counter(r["status"] for r in recs if r["status"] != "ok").items()))
        typer.secho(f"error: {len(recs) - ok} of {len(recs)} requests failed ({why}); {output} lists each with its "
                    "reason. Answered calls are cached: run the same command again to retry only the failed ones",
                    fg="red", err=True)
        raise typer.Exit(1)


@friendly_errors
def readability_cmd(
    set_: list[str] | None = typer.Option(None, "--set", help="Judge client setting key=value: base_url, model, provider."),
    input: Path = typer.Option(..., "--input", "-i", help="JSONL file of {id, text} rows."),
    output: Path = typer.Option(..., "--output", "-o", help="JSONL of {id, readability, status, reason, call}."),
    workspace: Path = WorkspaceOpt,
) -> None:
    """Rate readability on [0, 1] (higher = better) with an LLM judge (temperature 0, fixed seed)."""
    from veribench.llm.judge import readability_records
    from veribench.store import Workspace

    rows = _rows(input)
    with Workspace(workspace) as ws:
        recs = readability_records(_settings(set_), [t for _, t in rows], ws)
    _write(output, [{"id": rid, **r} for (rid, _), r in zip(rows, recs)])


@friendly_errors
def import_generated_cmd(
    file: Path = typer.Argument(..., help="`veribench generate` output (JSONL)."),
    corpus: str | None = typer.Option(None, "--corpus", help="Corpus name and id prefix (default: the file stem)."),
    arm: str = typer.Option("C", "--arm", help="Protocol arm of the generated texts."),
    workspace: Path = WorkspaceOpt,
    quiet: bool = typer.Option(False, "--quiet", "-q"),
) -> None:
    """Import generated texts as AI documents, each with its generation spec (version = the server's model string)."""
    from veribench.corpus.importers._store import store_import
    from veribench.corpus.importers.outputs import read_generated
    from veribench.store import Workspace

    report, docs = read_generated(file, corpus=corpus, arm=arm)
    with Workspace(workspace) as ws:
        _show(store_import(ws, report, docs), quiet)


@friendly_errors
def import_humanized_cmd(
    file: Path = typer.Argument(..., help="`veribench humanize` output (JSONL); its ids are workspace document ids."),
    corpus: str | None = typer.Option(None, "--corpus", help="Corpus name (default: the file stem)."),
    arm: str | None = typer.Option(None, "--arm", help="Arm of the outputs (default: each source's arm; C2 for "
                                                          "lightly edited AI text)."),
    workspace: Path = WorkspaceOpt,
    quiet: bool = typer.Option(False, "--quiet", "-q"),
) -> None:
    """Import humanized outputs as derived documents of their sources (tags derivation=humanize, attack=<humanizer>)."""
    from veribench.corpus.importers.outputs import import_humanized
    from veribench.store import Workspace

    with Workspace(workspace) as ws:
        _show(import_humanized(ws, file, corpus=corpus, arm=arm), quiet)


@friendly_errors
def import_cycle_cmd(
    directory: Path = typer.Argument(..., help="HumanizerBench-format cycle bundle (samples.json, tests.json)."),
    corpus: str | None = typer.Option(None, "--corpus", help="Corpus name and id prefix (default: the cycle name)."),
    arm: str = typer.Option("C", "--arm", help="Arm of the samples (AI source texts)."),
    humanized_arm: str | None = typer.Option(None, "--humanized-arm",
                                                help="Arm of the humanized outputs (default: the sample's arm)."),
    workspace: Path = WorkspaceOpt,
    quiet: bool = typer.Option(False, "--quiet", "-q"),
) -> None:
    """Import a cycle's samples (AI documents) and complete humanizer outputs (derived documents)."""
    from veribench.corpus.importers._store import store_import
    from veribench.corpus.importers.outputs import read_cycle
    from veribench.store import Workspace

    report, docs = read_cycle(directory, corpus=corpus, arm=arm, humanized_arm=humanized_arm)
    with Workspace(workspace) as ws:
        _show(store_import(ws, report, docs), quiet)


def register(app: typer.Typer) -> None:
    """Add ``humanize``, ``generate`` and ``readability`` to the root app, and ``import generated``,
    ``import humanized`` and ``import cycle`` to the ``import`` group."""
    from veribench.cli.corpus import import_app

    app.command("humanize")(humanize_cmd)
    app.command("generate")(generate_cmd)
    app.command("readability")(readability_cmd)
    import_app.command("generated")(import_generated_cmd)
    import_app.command("humanized")(import_humanized_cmd)
    import_app.command("cycle")(import_cycle_cmd)
