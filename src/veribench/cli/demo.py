"""CLI: ``veribench demo`` — the main job on the bundled real data, offline.

The demo data ships inside the package (``veribench/data/demo/``: the Liang et al. 2023
essays with seven detectors' recorded outputs, a slice of the fast-detect-gpt pairs, the
two demo protocols and their attribution), so an installed wheel runs the demo with no
source checkout; ``veribench demo --show-data`` prints that folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import tempfile
import threading
import time
from importlib.resources import files
from pathlib import Path
from typing import Any

import typer

from veribench import registry
from veribench.attacks import attack_documents
from veribench.attacks.base import AttackError
from veribench.cli.common import ProgressOpt, WorkspaceOpt, open_workspace, out_opt, progress
from veribench.commit import commit
from veribench.console import wide_console
from veribench.corpus.importers import import_fastdetectgpt, import_liang2023
from veribench.detectors.base import submitted_text
from veribench.detectors.local import models
from veribench.detectors.local.engine.schedule import cancelled_by, report_progress
from veribench.errors import RegistryError
from veribench.evaluate import evaluate_workspace
from veribench.evaluate.run import load_documents, unscored_documents
from veribench.evaluate.split import split_documents
from veribench.evaluate.tables import OUTPUT_FILES, print_tables, print_warnings, write_outputs
from veribench.heap import CollectionPause
from veribench.protocol.model import load_protocol
from veribench.report.site import build_report, check_out

#: The offline model the demo's zero-shot detectors run on.
DEMO_MODEL = "smollm2"
#: RAID's cheap rule-based attacks the demo applies to the fast-detect-gpt AI texts (RAID's
#: default parameters, one seed): their robustness rows pair each attacked text with its source.
DEMO_ATTACKS = ("homoglyph", "zero_width_space", "article_deletion")
DEMO_ATTACK_SEED = 0
DEMO_ATTACK_CORPUS = "fastdetectgpt"
#: Sources attacked per attack, within the demo's time goal: AI texts of the test split (the
#: only ones a robustness row pairs), two from each fast-detect-gpt set, the same for every
#: attack. ``veribench attack NAME --corpus fastdetectgpt --label ai`` derives them all.
DEMO_ATTACK_PER_SET = 2


def demo_data_dir() -> Path:
    """The demo corpora and protocols shipped as package data (``veribench/data/demo``).

    Raises:
        FileNotFoundError: the installation lacks its package data (naming where it looked).
    """
    p = Path(str(files("veribench").joinpath("data", "demo")))
    if not (p / "protocols" / "demo.toml").is_file():
        raise FileNotFoundError(f"the demo data is missing from this installation of veribench (looked in {p}); "
                                "reinstall veribench")
    return p


class _Prefetch:
    """The demo's background thread: it loads the demo model while the corpora are
    imported (mostly single-threaded Python, so the other core is free), then, once the
    protocol is committed and :meth:`submit` names the texts, runs the zero-shot
    detectors' forward passes into the engine's memo while ZipPy scores on the main
    thread. The scoring step then reads the passes: the engine reads its memo under the
    model's lock, so a text still being forwarded is waited for, never forwarded twice.
    An error here is dropped: the scoring step loads and forwards again itself and
    reports its own error."""

    def __init__(self, gc_pause: CollectionPause | None = None, show_progress: bool = True) -> None:
        self._gc = gc_pause
        self._show = show_progress
        self._ready = threading.Event()
        self._cancel = threading.Event()
        self._job: tuple[Any, list[str], Any] | None = None
        self.thread = threading.Thread(target=self._run, name="veribench-prefetch", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            try:
                models.load_causal_lm(DEMO_MODEL, device="auto", dtype="auto")
            finally:
                if self._gc is not None:
                    self._gc.resume()
            self._ready.wait()
            if self._job is not None and not self._cancel.is_set():
                det, texts, sink = self._job
                lines = report_progress(sink, interval=3.0) if self._show else contextlib.nullcontext()
                with lines, cancelled_by(self._cancel):
                    det.warm(texts)
        except BaseException:
            pass

    def submit(self, ws, proto, sink) -> int:
        """Start the forward passes of ``proto``'s first zero-shot detector on the texts it
        has yet to score (read here, on the calling thread); returns how many."""
        for e in proto.detectors:
            try:
                factory = registry.get("detector", e.name)
            except RegistryError:
                continue
            det = factory(**e.settings)
            if not callable(getattr(det, "warm", None)):
                continue
            ids = unscored_documents(ws, proto, e, det)
            texts = sorted({submitted_text(det.spec, t) for t in ws.texts_for(ids).values()})
            self._job = (det, texts, sink) if texts else None
            break
        self._ready.set()
        return len(self._job[1]) if self._job else 0

    def close(self) -> None:
        """Wait for the background thread (its passes are done or were read by then)."""
        self._ready.set()
        self.thread.join()

    def cancel(self) -> None:
        """Stop the background passes at the next pack, without waiting (after an error or Ctrl-C)."""
        self._cancel.set()
        self._ready.set()


def demo_cmd(
    workspace: Path = WorkspaceOpt,
    out: Path = out_opt("Report folder: the report site (`veribench report`; open OUT/index.html) with the "
                        "tables beside it (Markdown, CSV, JSON).", Path("veribench-report"), kind="folder"),
    no_models: bool = typer.Option(False, "--no-models", help="Skip the SmolLM2 zero-shot detectors."),
    show_data: bool = typer.Option(False, "--show-data", help="Print the folder holding the demo data and exit."),
    show_progress: bool = ProgressOpt,
) -> None:
    """Benchmark detectors on two bundled real corpora, offline, and print Table 1 and Table 2.

    Imports the Liang et al. 2023 essays with seven commercial detectors' recorded
    outputs and a slice of the fast-detect-gpt human/AI pairs, derives three RAID attacks
    (homoglyph, zero-width space, article deletion) of the fast-detect-gpt AI texts, runs
    ZipPy (and, with the `models` extra, five zero-shot detectors on SmolLM2-135M)
    locally, evaluates under the bundled, committed protocol (pairwise comparisons, the
    TOEFL vs US-essay false-positive gap, robustness rows) and writes the report site that
    `veribench report` builds, with the tables (Markdown, CSV, JSON) beside its pages.
    The workspace is created when missing.
    """
    ex = demo_data_dir()
    if show_data:
        typer.echo(str(ex))
        return
    check_out(out, OUTPUT_FILES)  # before any work: a folder the site may not replace is refused now
    t0 = time.perf_counter()
    startup_gc = CollectionPause()  # the imports below run with no full collection
    prefetch: _Prefetch | None = None
    try:
        con = wide_console()
        missing = [] if no_models else models.missing_packages(DEMO_MODEL)
        use_models = not no_models and not missing
        proto_path = ex / "protocols" / ("demo.toml" if use_models else "demo-core.toml")
        if missing:
            con.print("[yellow]SmolLM2 zero-shot detectors skipped: " + "; ".join(str(m) for m in missing) + "[/]")
        con.print(f"[dim]demo data: {ex}[/]")
        note = lambda m: con.print(f"[dim]{m}[/]")  # noqa: E731
        models.LOAD_LOG.append(note)
        try:
            with progress("demo", show_progress), open_workspace(workspace, create=True) as ws:
                done = {r[0] for r in ws.query("SELECT DISTINCT corpus FROM documents")}
                # a fresh workspace will need the model: load it while the corpora are imported
                prefetch = _Prefetch(startup_gc, show_progress) if use_models and "fastdetectgpt" not in done \
                    else None
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
                _attack(ws, con, proto_path)
                con.print(f"[dim]{time.perf_counter() - t0:.1f} s[/]")
                con.rule("[bold]2. Commit the protocol before any scan")
                rec = commit(ws, proto_path)
                con.print(f"{'committed' if rec.new else 'already committed'}: {rec.name} sha256={rec.hash}")
                con.rule("[bold]3. Score locally and evaluate")
                proto = load_protocol(proto_path)
                show = lambda m: con.print(f"[dim]{m}[/]")  # noqa: E731
                if prefetch is not None:
                    n = prefetch.submit(ws, proto, show)
                    if n:
                        note(f"SmolLM2 forward passes of {n} texts start in the background while ZipPy scores")
                else:
                    startup_gc.resume()
                try:
                    lines = report_progress(show, interval=3.0, console=con) if show_progress \
                        else contextlib.nullcontext()
                    with lines:
                        res = evaluate_workspace(ws, proto, allow_scoring=True, progress=False, log=con.print)
                except BaseException:
                    if prefetch is not None:  # an error or Ctrl-C: stop the background passes, do not wait
                        prefetch.cancel()
                    raise
                if prefetch is not None:
                    prefetch.close()
                con.print(f"[dim]{time.perf_counter() - t0:.1f} s[/]")
                con.rule("[bold]4. Tables")
                print_tables(res, con)
                print_warnings(res, con)
                out.parent.mkdir(parents=True, exist_ok=True)
                tables = Path(tempfile.mkdtemp(prefix=f".{out.name}.tables-", dir=out.parent))
                write_outputs(res, tables, ws, html=False)
        finally:
            models.LOAD_LOG.remove(note)
        try:
            site = build_report([workspace], out, progress=None, replaceable=OUTPUT_FILES)  # workspace closed
            written = sorted(p.name for p in tables.iterdir())  # the tables (the site is index.html)
            for name in written:
                shutil.move(tables / name, out / name)
        finally:
            shutil.rmtree(tables, ignore_errors=True)
        con.print(f"\nReport written to [bold]{out}/[/]: open [bold]{out / 'index.html'}[/] ({len(site.pages)} pages); "
                  f"tables beside it ({', '.join(written)}); workspace {workspace}/; "
                  f"{time.perf_counter() - t0:.1f} s.")
    finally:
        if prefetch is not None:  # after an error before the scoring step: end the background thread
            prefetch.cancel()
        startup_gc.end()  # also after an error: collection is never left off


def attack_sources(ws, proto_path: Path) -> list[str]:
    """The demo's attacked sources: per fast-detect-gpt set, the first
    :data:`DEMO_ATTACK_PER_SET` AI texts of the test split in SHA-256 order of their ids.
    The split is the evaluation's own (``evaluate.split.split_documents`` under the demo
    protocol), so every attacked text pairs with its source in the robustness rows."""
    proto = load_protocol(proto_path)
    docs = load_documents(ws, proto)
    _, calib, _ = split_documents(docs, proto)
    by_set: dict[str, list[str]] = {}
    for i, did in enumerate(docs.doc_id):
        derived = docs.source_id is not None and docs.source_id[i] is not None
        if docs.corpus[i] == DEMO_ATTACK_CORPUS and docs.label[i] == "ai" and not calib[i] and not derived:
            by_set.setdefault(str(did).split("/")[1], []).append(str(did))
    pick = []
    for ids in by_set.values():
        pick += sorted(ids, key=lambda x: hashlib.sha256(x.encode("utf-8")).hexdigest())[:DEMO_ATTACK_PER_SET]
    return sorted(pick)


def _attack(ws, con, proto_path: Path) -> None:
    """Derive the demo's attacked texts (:data:`DEMO_ATTACKS` of :func:`attack_sources`);
    each already derived is kept (a second run derives nothing). An attack whose optional
    package is missing is skipped with the package named."""
    ids = attack_sources(ws, proto_path)
    for name in DEMO_ATTACKS:
        try:
            rep = attack_documents(ws, name, seed=DEMO_ATTACK_SEED, doc_ids=ids)
        except AttackError as e:
            con.print(f"[yellow]attack {name} skipped: {e}[/]")
            continue
        con.print(rep.line())
