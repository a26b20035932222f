"""CLI group ``veribench watermark``: watermarked AI text for arm C (``generate``).

``watermark generate --scheme kgw|unigram|none --key-file K --model smollm2 [--n N]
[--prompts FILE] -w WS`` samples N texts from a local causal model with the scheme's
watermark (``none``: the same prompts without one, the plain control) and imports them
into arm C tagged ``watermark = <scheme>`` (:func:`veribench.llm.watermark.generate_watermarked`).
The key is read from the file or env ``VERIBENCH_WATERMARK_KEY`` and never printed or
stored; score the texts with ``veribench score -d watermark --set scheme=kgw --set
key_file=K`` (docs/detectors.md, "watermark").
"""

from __future__ import annotations

from pathlib import Path

import typer

from veribench.cli.common import ProgressOpt, QuietOpt, WorkspaceOpt, input_path, open_workspace, progress
from veribench.detectors.local.watermark import read_key
from veribench.llm.watermark import generate_watermarked, read_prompts

watermark_app = typer.Typer(help="Watermarked AI text for arm C, from a local model (kgw, unigram).",
                            no_args_is_help=True)


@watermark_app.command("generate")
def generate_cmd(
    scheme: str = typer.Option(..., "--scheme", help="kgw (Kirchenbauer et al. 2023, transformers), unigram "
                               "(Zhao et al. 2023), or none (plain control texts of the same prompts)."),
    key_file: Path | None = typer.Option(None, "--key-file", help="File holding the secret key (else env "
                                         "VERIBENCH_WATERMARK_KEY); never printed or stored.",
                                         callback=input_path("file")),
    model: str = typer.Option("smollm2", "--model", help="Local causal model (offline alias, folder or hub id)."),
    n: int = typer.Option(50, "--n", min=1, help="Texts to generate (one per prompt)."),
    prompts: Path | None = typer.Option(None, "--prompts", help="JSON list of prompt strings or {prompt|resolved, "
                                        "slug} objects (default: veribench's 50 topics).",
                                        callback=input_path("file")),
    max_new_tokens: int = typer.Option(200, "--max-new-tokens", min=1, help="Tokens sampled per text."),
    batch_size: int = typer.Option(10, "--batch-size", min=1, help="Prompts sampled together (left-padded)."),
    seed: int = typer.Option(0, "--seed", help="Sampling seed of the first batch (batch b uses seed + b)."),
    corpus: str = typer.Option("watermark", "--corpus", help="Corpus name and id prefix."),
    workspace: Path = WorkspaceOpt,
    quiet: bool = QuietOpt,
    show_progress: bool = ProgressOpt,
) -> None:
    """Generate watermarked AI text with a local model and import it into arm C (tag watermark)."""
    key = read_key(key_file) if scheme != "none" else None
    rows = read_prompts(prompts) if prompts is not None else None
    with progress("watermark generate", show_progress), open_workspace(workspace, create=True) as ws:
        rep = generate_watermarked(ws, scheme=scheme, key=key, model=model, n=n, prompts=rows,
                                   max_new_tokens=max_new_tokens, seed=seed, batch_size=batch_size,
                                   corpus=corpus)
    if quiet:
        typer.echo(f"watermark {scheme}: {rep.documents} documents (import {rep.import_id})")
    else:
        rep.print()
        typer.echo(f"import id: {rep.import_id}")
