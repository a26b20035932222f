"""The one scoring path: "score these texts with this detector spec".

Above this layer, code asks for scores; below it live de-duplication by text hash,
the workspace cache, batching, concurrency, budget, dry runs and progress. Every
completed batch is stored at once, in its own transaction, so a run killed at any
moment resumes without repeating a stored call and without losing a stored result.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from ..hashing import text_sha256
from .base import Detector, ScoreResult, results_per_input, submitted_text, with_hazards


#: Failures a later run may send again when asked (``retry_statuses``); never credit or key errors.
TRANSIENT = ("site_down", "timeout", "rate_limited")


class BudgetExceeded(Exception):
    """Raised after stopping because the next call would exceed ``--max-spend``."""


@dataclass
class RunStats:
    """Counts of one scoring call: texts asked, cache hits, computed, failed, spend."""

    requested: int = 0
    unique: int = 0
    cached: int = 0
    computed: int = 0
    failed: int = 0
    spent: float = 0.0
    stopped_for_budget: bool = False
    planned: list[dict[str, Any]] = field(default_factory=list)


def _progress(total: int, description: str, enabled: bool):
    if not enabled or total == 0:
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    prog = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    transient=False)
    prog.start()
    task = prog.add_task(description, total=total)
    return prog, task


def score_texts(
    ws: Any,
    detector: Detector,
    texts: Iterable[str],
    *,
    progress: bool = False,
    max_spend: float | None = None,
    dry_run: bool = False,
    stats: RunStats | None = None,
    store: bool = True,
    on_batch: Callable[[list[tuple[str, ScoreResult]]], None] | None = None,
    retry_statuses: Sequence[str] = (),
) -> dict[str, ScoreResult]:
    """Score ``texts`` with ``detector``, through the workspace cache.

    Args:
        ws: a :class:`veribench.store.Workspace`, or ``None`` for no cache (results
            are then computed and not stored).
        detector: any object meeting :class:`veribench.detectors.Detector`.
        texts: texts to score; duplicates are scored once.
        progress: show a rich progress bar.
        max_spend: stop before the cumulative ``detector.cost(text)`` would exceed this
            (units: ``detector.cost_unit``, words or credits). Cached texts cost nothing.
        dry_run: compute nothing; fill ``stats.planned`` with what would be sent and its cost.
        stats: optional :class:`RunStats` to fill.
        store: write results to the workspace (default True).
        retry_statuses: stored failures with these codes (transient only: ``site_down``,
            ``timeout``, ``rate_limited``) are sent again and their rows replaced; every
            other stored result is final.

    Every result carries ``detail["hazards"]`` (:func:`veribench.corpus.hazards.text_hazards`
    of the text before canonicalisation). A detector whose spec sets ``canonicalize`` is sent,
    and cached under, the canonical text (:func:`submitted_text`); its results are returned
    per input text, each with that input's own hazards and ``detail["canonicalization"] =
    {"setting", "input_sha256", "submitted_sha256"}``.

    Returns:
        ``{text_sha256: ScoreResult}`` keyed by the SHA-256 of each input text, for every
        text scored or found in the cache (texts skipped for budget are absent;
        ``stats.stopped_for_budget`` is then set).
    """
    spec = detector.spec
    keep = ws is not None and store
    texts = list(texts)
    subs = [submitted_text(spec, t) for t in texts]
    first: dict[str, str] = {}  # submitted sha -> the first input text that gave it
    for t, s in zip(texts, subs):
        first.setdefault(text_sha256(s), t)
    res = run_cached(
        detector, subs, kind="detector", verb="scoring", call=detector.score_batch, default_batch_size=32,
        lookup=(lambda shas: ws.cached_scores(spec.hash, shas)) if ws is not None else None,
        put=(lambda items, replace: ws.put_scores(spec, items, replace=replace)) if keep else None,
        attach_ws=ws if keep else None, progress=progress, max_spend=max_spend, dry_run=dry_run, stats=stats,
        on_batch=on_batch, retry_statuses=retry_statuses,
        annotate=lambda sha, r: with_hazards(spec, r, first[sha], sha),
    )
    return results_per_input(spec, texts, subs, first, res)


def run_cached(
    plugin: Any,
    texts: Iterable[str],
    *,
    kind: str,
    verb: str,
    call: Callable[[list[str]], list[Any]],
    default_batch_size: int,
    lookup: Callable[[Iterable[str]], dict[str, Any]] | None,
    put: Callable[[list[tuple[str, Any]], bool], None] | None,
    attach_ws: Any = None,
    progress: bool = False,
    max_spend: float | None = None,
    dry_run: bool = False,
    stats: RunStats | None = None,
    on_batch: Callable[[list[tuple[str, Any]]], None] | None = None,
    retry_statuses: Sequence[str] = (),
    annotate: Callable[[str, Any], Any] | None = None,
) -> dict[str, Any]:
    """The shared execution layer of every cached, paid-for call (detectors, humanizers).

    De-duplicates ``texts`` by SHA-256, takes stored results from ``lookup`` (except
    transient failures named in ``retry_statuses``), stores ``plugin.preflight``
    failures without a call, honours ``dry_run`` and ``max_spend`` (``plugin.cost``),
    then calls ``call`` on batches of ``plugin.batch_size`` (default
    ``default_batch_size``) with ``plugin.max_concurrency`` threads, passing every
    completed batch to ``put`` at once (one transaction each). ``annotate(sha, result)``,
    when given, sees every new result (preflight or computed) before it is stored.

    Returns:
        ``{text_sha256: result}`` for every text done or found stored.

    Raises:
        ValueError: ``retry_statuses`` names a non-transient status.
        RuntimeError: ``call`` returned a different number of results than texts.
    """
    st = stats if stats is not None else RunStats()
    by_sha: dict[str, str] = {}
    for t in texts:
        st.requested += 1
        by_sha.setdefault(text_sha256(t), t)
    st.unique = len(by_sha)
    spec = plugin.spec
    results: dict[str, Any] = {}
    if set(retry_statuses) - set(TRANSIENT):
        raise ValueError(f"retry_statuses may only name transient failures {TRANSIENT}, got {sorted(retry_statuses)}")
    replace = bool(retry_statuses)
    if lookup is not None:
        results.update({s: r for s, r in lookup(by_sha.keys()).items() if r.status not in retry_statuses})
    st.cached = len(results)
    todo = [(s, t) for s, t in by_sha.items() if s not in results]

    # Failures known before any call (length limits) cost nothing and are stored.
    pre = getattr(plugin, "preflight", None)
    if pre is not None:
        keep_todo, pre_items = [], []
        for s, t in todo:
            r = pre(t)
            if r is not None and annotate is not None:
                r = annotate(s, r)
            if r is None:
                keep_todo.append((s, t))
            else:
                pre_items.append((s, r))
        todo = keep_todo
        if pre_items and not dry_run:
            if put is not None:
                put(pre_items, replace)
            results.update(dict(pre_items))
            st.failed += len(pre_items)

    cost = getattr(plugin, "cost", None)
    if dry_run:
        describe = getattr(plugin, "describe_request", None)
        for s, t in todo:
            st.planned.append({
                "text_sha256": s,
                "request": describe(t) if describe else {kind: spec.name, "chars": len(t)},
                "cost": cost(t) if cost else 0.0,
                "cost_unit": getattr(plugin, "cost_unit", None),
            })
        return results

    # Budget: admit texts in order while the cumulative cost stays within max_spend.
    if max_spend is not None and cost is not None:
        admitted, total = [], 0.0
        for s, t in todo:
            c = float(cost(t))
            if total + c > max_spend:
                st.stopped_for_budget = True
                break
            total += c
            admitted.append((s, t))
        todo = admitted

    attach = getattr(plugin, "attach_workspace", None)  # async API adapters journal their task ids
    if attach is not None and attach_ws is not None:
        attach(attach_ws)

    bs = max(1, int(getattr(plugin, "batch_size", default_batch_size) or default_batch_size))
    conc = max(1, int(getattr(plugin, "max_concurrency", 1) or 1))
    batches = [todo[i:i + bs] for i in range(0, len(todo), bs)]
    bar = _progress(len(todo), f"{verb} {spec.label}", progress)
    lock = threading.Lock()

    def run_batch(batch: list[tuple[str, str]]) -> list[tuple[str, Any]]:
        out = call([t for _, t in batch])
        if len(out) != len(batch):
            raise RuntimeError(f"{kind} {spec.name} returned {len(out)} results for {len(batch)} texts")
        return [(s, annotate(s, r) if annotate else r) for (s, _), r in zip(batch, out)]

    def done(items: list[tuple[str, Any]], batch: list[tuple[str, str]]) -> None:
        if put is not None:
            put(items, replace)  # stored at once, transactionally
        with lock:
            results.update(dict(items))
            st.computed += sum(1 for _, r in items if r.status == "ok")
            st.failed += sum(1 for _, r in items if r.status != "ok")
            if cost is not None:
                st.spent += sum(float(cost(t)) for _, t in batch)
        if on_batch:
            on_batch(items)
        if bar:
            bar[0].advance(bar[1], len(items))

    try:
        if conc == 1:
            for b in batches:
                done(run_batch(b), b)
        else:
            with ThreadPoolExecutor(max_workers=conc) as ex:
                pending: dict[Future, list[tuple[str, str]]] = {}
                it = iter(batches)
                for b in it:
                    pending[ex.submit(run_batch, b)] = b
                    if len(pending) >= conc:
                        break
                while pending:
                    fin, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for f in fin:
                        b = pending.pop(f)
                        done(f.result(), b)
                        nb = next(it, None)
                        if nb is not None:
                            pending[ex.submit(run_batch, nb)] = nb
    finally:
        if bar:
            bar[0].stop()
    return results


def score_documents(
    ws: Any,
    detector: Detector,
    doc_ids: Sequence[str] | None = None,
    *,
    progress: bool = False,
    **kw: Any,
) -> dict[str, ScoreResult]:
    """Score workspace documents (all, or ``doc_ids``) and link each to its submitted text.

    Documents stored without text (fingerprint only) are skipped. The submission linked
    is the text the detector was sent (:func:`submitted_text`: the canonical text when the
    spec sets ``canonicalize``; then also kept in ``submitted_texts``).

    Returns:
        ``{doc_id: ScoreResult}``.
    """
    if doc_ids is None:
        rows = ws.query("SELECT doc_id, text FROM documents WHERE text IS NOT NULL ORDER BY doc_id")
    else:
        rows = list(ws.texts_for(doc_ids).items())
    res = score_texts(ws, detector, [t for _, t in rows], progress=progress, **kw)
    done = [(d, t, submitted_text(detector.spec, t)) for d, t in rows if text_sha256(t) in res]
    links = [(d, text_sha256(sub)) for d, _, sub in done]
    if links and not kw.get("dry_run"):
        from ..corpus.importers._store import put_submitted_texts

        with ws.transaction() as con:  # canonical texts are kept for inspection, like imports' submitted texts
            put_submitted_texts(con, {text_sha256(sub): sub for _, t, sub in done if sub != t})
            ws.link_submissions(detector.spec, links)
    return {d: res[text_sha256(t)] for d, t, _ in done}
