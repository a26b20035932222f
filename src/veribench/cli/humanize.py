"""CLI: ``veribench humanize``, ``veribench generate`` and ``veribench readability``.

- ``humanize``: rewrite every text of a JSONL file ``{id, text}`` with one humanizer
  (vendor API, ``llm-humanizer`` or ``manual``), through the workspace cache
  (:func:`veribench.humanizers.pipeline.humanize_texts`): a killed run resumes without
  repeating a stored call; ``--max-spend`` and ``--dry-run`` as for ``score``.
- ``generate``: source texts from cycle prompts (``prompts.json``) with an
  OpenAI-compatible endpoint, each with its full generation record (``veribench import
  generated`` imports them; ``import humanized`` the outputs of ``humanize``).
- ``readability``: the LLM readability judge on [0, 1] (higher = better writing).

Keys come only from ``VERIBENCH_<VENDOR>_API_KEY``; see ``docs/vendors.md``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import typer

from veribench.cli.common import (
    ProgressOpt,
    RetryFailedOpt,
    WorkspaceOpt,
    build,
    check_setting_types,
    input_path,
    max_spend_opt,
    open_workspace,
    out_opt,
    progress,
    refuse_failures,
    setting_errors,
    settings,
)
from veribench.cli.grammar import CliError
from veribench.cli.score import InputOpt, read_rows
from veribench.corpus.importers._io import load_json
from veribench.detectors.pipeline import RunStats, budget_note
from veribench.hashing import text_sha256
from veribench.humanizers.pipeline import humanize_texts
from veribench.llm.client import ChatClient, make_client
from veribench.llm.generate import generate_sources
from veribench.llm.judge import readability_records
from veribench.registry import settings_of


def chat_client(pairs: list[str] | None, option: str = "--set") -> ChatClient:
    """The chat client of ``--set`` (or ``--judge-set``) pairs, built before any workspace
    is opened: a bad setting is ``error: --set: <key>: <what> (<fix>)``."""
    conf = settings(pairs, option)
    check_setting_types(settings_of(ChatClient)[0], conf, option)
    with setting_errors(conf, "the chat client", option):
        return make_client(conf)


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")


def humanize_cmd(
    humanizer: str = typer.Option(..., "--humanizer", "-H", help="undetectable, stealthgpt, writehuman, hix, humbot, "
                                  "llm-humanizer or manual (veribench list humanizers)."),
    set_: list[str] | None = typer.Option(None, "--set", help="Humanizer setting key=value (repeatable), e.g. "
                                          "base_url=..., strength=..., prompt_file=..., path=... (manual)."),
    input: Path = InputOpt,
    out: Path | None = out_opt("JSONL file of {id, humanizer, spec_hash, input_sha256, status, output, "
                               "vendor_version, detail} rows (`veribench import humanized` reads it).", None),
    workspace: Path = WorkspaceOpt,
    max_spend: float | None = max_spend_opt("Budget for this run, across resumes (words; finite, >= 0): stored in "
                                            "the workspace under the run's key, so rerunning a killed command "
                                            "never sends more than this in total."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Send nothing; print what would be sent and its cost."),
    retry_failed: bool = RetryFailedOpt,
    show_progress: bool = ProgressOpt,
) -> None:
    """Humanize every text of a JSONL file with one humanizer, through the workspace cache.

    Stored call failures (a missing key, a site down) are sent again by every run; stored
    failures that describe the text only with --retry-failed. Exits with status 1 when any
    text failed (the output file, if any, still lists every row with its status).
    """
    rows = read_rows(input)
    h = build("humanizer", humanizer, settings(set_))
    st = RunStats()
    with progress("humanize", show_progress), open_workspace(workspace, create=True) as ws:
        res = humanize_texts(ws, h, [t for _, t in rows], progress=show_progress, max_spend=max_spend,
                             dry_run=dry_run, stats=st, retry_failed=retry_failed)
    if dry_run:
        total = sum(p["cost"] for p in st.planned)
        for p in st.planned:
            typer.echo(json.dumps(p, default=str))
        typer.echo(f"dry run: {len(st.planned)} request(s) to send, {st.cached} cached; estimated cost {total:g} "
                   f"{getattr(h, 'cost_unit', '')}", err=True)
        return
    records = []
    for rid, t in rows:
        r = res.get(text_sha256(t))
        if r is None:
            records.append({"id": rid, "humanizer": h.spec.name, "spec_hash": h.spec.hash, "input_sha256": text_sha256(t),
                        "status": "not_run", "output": None,
                        "detail": {"reason": "stopped by --max-spend before this text"}})
        else:
            records.append({"id": rid, "humanizer": h.spec.name, "spec_hash": h.spec.hash, "input_sha256": text_sha256(t),
                        "status": r.status, "output": r.output, "vendor_version": r.vendor_version,
                        "detail": r.detail})
    if out is not None:
        _write(out, records)
    typer.echo(f"{h.spec.label}: {st.computed} done, {st.cached} cached, "
               + (f"{st.retried} stored failures sent again, " if st.retried else "")
               + f"{st.failed} failed, spent {st.spent:g}"
               + (" (stopped for budget)" if st.stopped_for_budget else ""), err=True)
    note = budget_note(st, getattr(h, "cost_unit", None))
    if note:
        typer.echo(note, err=True)
    refuse_failures(str(out) if out is not None else "humanize", [r["status"] for r in records])


def generate_cmd(
    prompts: Path = typer.Option(..., "--prompts", help="Cycle prompts.json (rows with 'resolved') or a JSON list of "
                                 "strings.", callback=input_path("file")),
    set_: list[str] | None = typer.Option(None, "--set", help="Client setting key=value (repeatable): base_url, "
                                          "model, provider, temperature, top_p, max_tokens, ..."),
    samples: int = typer.Option(1, "--samples", min=1, help="Texts per prompt (sample i uses seed+i)."),
    seed: int = typer.Option(0, "--seed", help="Request seed of the first sample of each prompt."),
    out: Path = out_opt("JSONL of {prompt_slug, category, prompt, sample, status, text, generation} "
                        "(`veribench import generated` reads it)."),
    workspace: Path = WorkspaceOpt,
    show_progress: bool = ProgressOpt,
) -> None:
    """Generate source texts from cycle prompts with an OpenAI-compatible endpoint.

    Exits with status 1 when any request failed (the output file still lists every row).
    """
    data = load_json(prompts)
    client = chat_client(set_)
    with progress("generate", show_progress), open_workspace(workspace, create=True) as ws:
        recs = generate_sources(client, data, ws, samples=samples, seed=seed)
    _write(out, recs)
    ok = sum(r["status"] == "ok" for r in recs)
    typer.echo(f"generated {ok}/{len(recs)} texts → {out}", err=True)
    if ok < len(recs):
        why = ", ".join(f"{k}: {v}" for k, v in sorted(Counter(r["status"] for r in recs if r["status"] != "ok").items()))
        raise CliError(str(out), f"{len(recs) - ok} of {len(recs)} requests failed ({why}); the file lists each with "
                       "its reason", "answered calls are cached: run the same command again to retry only the "
                       "failed ones")


def readability_cmd(
    set_: list[str] | None = typer.Option(None, "--set", help="Judge client setting key=value (repeatable): "
                                          "base_url, model, provider."),
    input: Path = InputOpt,
    out: Path = out_opt("JSONL of {id, readability, status, reason, call}."),
    workspace: Path = WorkspaceOpt,
    show_progress: bool = ProgressOpt,
) -> None:
    """Rate readability on [0, 1] (higher = better) with an LLM judge (temperature 0, fixed seed)."""
    rows = read_rows(input)
    client = chat_client(set_)
    with progress("readability", show_progress), open_workspace(workspace, create=True) as ws:
        recs = readability_records(client, [t for _, t in rows], ws)
    _write(out, [{"id": rid, **r} for (rid, _), r in zip(rows, recs)])
