"""The one scoring path: "score these texts with this detector spec".

Above this layer, code asks for scores; below it live de-duplication by text hash,
the workspace cache, batching, concurrency, budget, dry runs and progress. Every
completed batch is stored at once, in its own transaction, so a run killed at any
moment resumes without repeating a stored call and without losing a stored result.

Budgets (``--max-spend``) belong to the run, not to one process: the cap and what was
spent are stored in the workspace table ``run_budgets`` under the run's key (the kind,
the plug-in's spec hash and the set of input texts, :func:`budget_key`). The cost of a
batch is reserved there, in a committed transaction, *before* the batch is sent; a batch
in flight when the process dies therefore stays counted (the vendor may have billed it),
and a rerun of the same command can never send more than the cap in total.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from veribench.detectors.base import Detector, results_per_input, submitted_text, with_hazards
from veribench.errors import InputError
from veribench.hashing import canonical_json, sha256_bytes, text_sha256
from veribench.progress import Progress
from veribench.progress import batch as progress_batch
from veribench.records import ScoreResult, is_final
from veribench.store import writes
from veribench.store.workspace import now_utc

#: Failures that mean the vendor refused the call before doing any work (bad key, no
#: credits): their reserved cost is given back to the budget. Every other sent call stays
#: counted, whatever its outcome.
UNBILLED = ("auth", "no_credits")


class BudgetExceeded(Exception):
    """Raised after stopping because the next call would exceed ``--max-spend``."""


def check_budget(value: Any, what: str = "--max-spend") -> float | None:
    """A budget as a finite, non-negative float (``None`` passes: no budget).

    Raises:
        InputError: NaN, infinite, negative or non-numeric (a cap of ``inf`` or ``nan`` would
            silently mean "no cap"; a negative one means nothing).
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(f"budget must be a number of words or credits, got {value!r}", field=what)
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"budget must be a number of words or credits, got {value!r}", field=what) from None
    if not math.isfinite(v) or v < 0:
        raise InputError(f"budget must be a finite number >= 0, got {value!r}", field=what)
    return v


def budget_key(kind: str, spec_hash: str, shas: Iterable[str]) -> str:
    """The run's key: SHA-256 of (kind, plug-in spec hash, sorted unique input text hashes).

    Rerunning the same command on the same input file gives the same key, so a resumed run
    shares its budget with the run it resumes.
    """
    return sha256_bytes(canonical_json({"kind": kind, "spec": spec_hash,
                                        "texts": sorted(set(shas))}).encode("utf-8"))


class RunBudget:
    """A run's spending cap and ledger, kept in the workspace (or in memory without one).

    ``spent`` = ``reserved - released``: every call sent counts from the moment before it is
    sent; only calls the vendor refused outright (:data:`UNBILLED`) are given back.

    Args:
        ws: a Workspace, or ``None`` (the ledger then lives only as long as this object).
        key: :func:`budget_key`.
        cap: the cap given now, or ``None`` to use the stored one (a stored cap holds for
            reruns that omit ``--max-spend``; a cap given replaces it).
    """

    def __init__(self, ws: Any, key: str, cap: float | None, *, kind: str, spec_hash: str, label: str,
                 unit: str | None, texts: int):

        self.ws, self.key = ws, key
        self.lock = threading.Lock()
        row = None
        if ws is not None:
            with ws.transaction() as c:
                row = c.execute("SELECT cap, reserved, released, calls_sent, calls_done, calls_released "
                                "FROM run_budgets WHERE run_key = ?", [key]).fetchone()
                if row is None and cap is not None:
                    c.execute("INSERT INTO run_budgets VALUES (?,?,?,?,?,?,?,0,0,0,0,0,?,?)",
                              [key, kind, spec_hash, label, unit, texts, cap, now_utc(), now_utc()])
                elif row is not None and cap is not None and cap != row[0]:
                    c.execute("UPDATE run_budgets SET cap = ?, updated_at = ? WHERE run_key = ?", [cap, now_utc(), key])
        self.stored_cap = row[0] if row else None
        self.cap = cap if cap is not None else (row[0] if row else None)
        self.reserved, self.released = (row[1], row[2]) if row else (0.0, 0.0)
        sent, done, rel = (row[3], row[4], row[5]) if row else (0, 0, 0)
        #: calls sent by earlier runs whose result was never stored (in flight at a kill)
        self.in_flight_before = max(0, sent - done - rel)
        self.spent_before = self.spent

    @property
    def active(self) -> bool:
        return self.cap is not None

    @property
    def spent(self) -> float:
        return self.reserved - self.released

    @property
    def left(self) -> float:
        return math.inf if self.cap is None else max(0.0, self.cap - self.spent)

    def _update(self, **add: float) -> None:
        if self.ws is None:
            return

        sets = ", ".join(f"{k} = {k} + ?" for k in add)
        with self.ws.transaction() as c:
            c.execute(f"UPDATE run_budgets SET {sets}, updated_at = ? WHERE run_key = ?",
                      [*add.values(), now_utc(), self.key])

    def reserve(self, costs: Sequence[float]) -> int:
        """Reserve the longest prefix of ``costs`` that fits under the cap, committed before
        anything is sent. Returns how many fit (all when there is no cap)."""
        if not self.active:
            return len(costs)
        with self.lock:
            n, total = 0, 0.0
            for c in costs:
                if self.spent + total + c > self.cap + 1e-9:
                    break
                total += c
                n += 1
            if n:
                self._update(reserved=total, calls_sent=n)
                self.reserved += total
            return n

    def settle(self, costs_and_statuses: Sequence[tuple[float, str]]) -> None:
        """Record finished calls; give back the cost of those the vendor refused outright."""
        if not self.active:
            return
        with self.lock:
            back = [c for c, st in costs_and_statuses if st in UNBILLED]
            self._update(calls_done=len(costs_and_statuses) - len(back), released=sum(back),
                         calls_released=len(back))
            self.released += sum(back)


@dataclass
class RunStats:
    """Counts of one scoring call: texts asked, cache hits, stored failures sent again,
    computed, failed, spend.

    ``spent`` is what this call sent (units of the plug-in's ``cost_unit``); with a budget,
    ``budget_key``, ``budget_cap``, ``spent_before`` (earlier runs of the same key) and
    ``spent_total`` describe the run across resumes, and ``in_flight_before`` counts calls
    an earlier run sent whose result was never stored (they stay counted).
    """

    requested: int = 0
    unique: int = 0
    cached: int = 0
    #: stored failures sent again (call failures always; text failures with ``retry_failed``)
    retried: int = 0
    computed: int = 0
    failed: int = 0
    spent: float = 0.0
    stopped_for_budget: bool = False
    planned: list[dict[str, Any]] = field(default_factory=list)
    budget_key: str | None = None
    budget_cap: float | None = None
    spent_before: float = 0.0
    spent_total: float = 0.0
    in_flight_before: int = 0


def budget_note(st: RunStats, unit: str | None) -> str:
    """One line on the run's budget for the command line ("" without a budget)."""
    if st.budget_key is None:
        return ""
    u = f" {unit}" if unit else ""
    note = (f"budget {st.budget_cap:g}{u} for this run (key {st.budget_key[:12]}): {st.spent_total:g} spent in all, "
            f"{st.spent_before:g} of it by earlier runs")
    if st.in_flight_before:
        note += (f"; {st.in_flight_before} call(s) were in flight when an earlier run stopped: their cost stays "
                 "counted and their texts were sent again")
    if st.stopped_for_budget:
        note += "; stopped: the next text would exceed the budget"
    return note


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
    retry_failed: bool = False,
    rescan_after: tuple[int, datetime] | None = None,
) -> dict[str, ScoreResult]:
    """Score ``texts`` with ``detector``, through the workspace cache.

    Args:
        ws: a :class:`veribench.store.Workspace`, or ``None`` for no cache (results
            are then computed and not stored).
        detector: any object meeting :class:`veribench.detectors.Detector`.
        texts: texts to score; duplicates are scored once.
        progress: show progress (:class:`veribench.progress.Progress`: a bar on a terminal, else a line
            on standard error every few seconds).
        max_spend: the run's budget, across resumes: stop before the cost of everything
            this run has sent (``detector.cost(text)``, units ``detector.cost_unit``,
            words or credits), by this call and earlier calls with the same
            :func:`budget_key`, would exceed it. Cached texts cost nothing. Finite and
            >= 0 (:func:`check_budget`); ``None`` keeps a cap stored for this run.
        dry_run: compute nothing; fill ``stats.planned`` with what would be sent and its cost.
        stats: optional :class:`RunStats` to fill.
        store: write results to the workspace (default True).
        retry_failed: also send again the stored failures that describe the text
            (:data:`veribench.records.TEXT_FAILURES`, e.g. ``too_short``). Stored call
            failures (:data:`veribench.records.CALL_FAILURES`: ``auth``, ``site_down``, ...)
            are sent again on every run, with or without it; a re-sent text's row is replaced
            (:func:`veribench.records.is_final`).
        rescan_after: ``(event seq, time)`` of a protocol commitment under ``rescan``: a
            stored score taken before it (logged at or before ``seq``, or dated before
            ``time``) is not served from the cache; the text is scanned again and the new
            score becomes the newest, the earlier one kept in ``scores_superseded``
            (:func:`veribench.store.writes.put_scores`, ``replace``).

    Every result carries ``detail["hazards"]`` (:func:`veribench.text.hazards.text_hazards`
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
        lookup=(lambda shas: ws.cached_scores(spec.hash, shas, after=rescan_after)) if ws is not None else None,
        put=((lambda items, replace: writes.put_scores(ws, spec, items, replace=replace or rescan_after is not None))
             if keep else None),
        attach_ws=ws if keep else None, progress=progress, max_spend=max_spend, dry_run=dry_run, stats=stats,
        on_batch=on_batch, retry_failed=retry_failed,
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
    retry_failed: bool = False,
    annotate: Callable[[str, Any], Any] | None = None,
) -> dict[str, Any]:
    """The shared execution layer of every cached, paid-for call (detectors, humanizers).

    De-duplicates ``texts`` by SHA-256, takes the stored results that are final from
    ``lookup`` (:func:`veribench.records.is_final`: never a call failure such as ``auth`` or
    ``site_down``; a text failure such as ``too_short`` unless ``retry_failed``; the others
    are sent again, counted in ``stats.retried``, and their rows replaced), stores ``plugin.preflight``
    failures without a call, honours ``dry_run`` and ``max_spend`` (``plugin.cost``),
    then calls ``call`` on batches of ``plugin.batch_size`` (default
    ``default_batch_size``) with ``plugin.max_concurrency`` threads, passing every
    completed batch to ``put`` at once (one transaction each). ``annotate(sha, result)``,
    when given, sees every new result (preflight or computed) before it is stored.

    Budget: with ``max_spend`` (or a cap stored for the same run, see :class:`RunBudget`)
    the cost of each batch is reserved in the workspace before it is sent, and sending
    stops at the first text that would go over the cap.

    Returns:
        ``{text_sha256: result}`` for every text done or found stored.

    Raises:
        InputError: ``max_spend`` is NaN, infinite or negative.
        RuntimeError: ``call`` returned a different number of results than texts.
    """
    max_spend = check_budget(max_spend)
    st = stats if stats is not None else RunStats()
    by_sha: dict[str, str] = {}
    for t in texts:
        st.requested += 1
        by_sha.setdefault(text_sha256(t), t)
    st.unique = len(by_sha)
    spec = plugin.spec
    results: dict[str, Any] = {}
    stored = lookup(by_sha.keys()) if lookup is not None else {}
    results.update({s: r for s, r in stored.items() if is_final(r.status, retry_failed=retry_failed)})
    st.retried = len(stored) - len(results)
    replace = st.retried > 0  # a re-sent text's stored failure is replaced by its new result
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

    # Budget: the run's cap and ledger, across resumes (reserved batch by batch below).
    budget = None
    if cost is not None:
        budget = RunBudget(attach_ws, budget_key(kind, spec.hash, by_sha), max_spend, kind=kind, spec_hash=spec.hash,
                           label=spec.label, unit=getattr(plugin, "cost_unit", None), texts=len(by_sha))
        if budget.active:
            st.budget_key, st.budget_cap = budget.key, budget.cap
            st.spent_before = st.spent_total = budget.spent_before
            st.in_flight_before = budget.in_flight_before
        else:
            budget = None

    attach = getattr(plugin, "attach_workspace", None)  # async API adapters journal their task ids
    if attach is not None and attach_ws is not None:
        attach(attach_ws)

    bs = max(1, int(getattr(plugin, "batch_size", default_batch_size) or default_batch_size))
    conc = max(1, int(getattr(plugin, "max_concurrency", 1) or 1))
    batches = [todo[i:i + bs] for i in range(0, len(todo), bs)]
    bar = Progress(f"{verb} {spec.label}", total=len(todo), unit="texts", enabled=progress and bool(todo))
    lock = threading.Lock()
    costs: dict[str, float] = {s: float(cost(t)) for s, t in todo} if budget is not None else {}

    def admit(batch: list[tuple[str, str]] | None) -> list[tuple[str, str]] | None:
        """The part of ``batch`` the budget lets through, reserved before sending (None: stop)."""
        if batch is None or st.stopped_for_budget:
            return None
        if budget is None:
            return batch
        n = budget.reserve([costs[s] for s, _ in batch])
        if n < len(batch):
            st.stopped_for_budget = True
        return batch[:n] or None

    credited: dict[int, int] = {}

    def run_batch(batch: list[tuple[str, str]]) -> list[tuple[str, Any]]:
        with progress_batch(bar, len(batch)) as counted:  # a detector that scores in packs counts each
            out = call([t for _, t in batch])
            with lock:
                credited[id(batch)] = counted.credited
        if len(out) != len(batch):
            raise RuntimeError(f"{kind} {spec.name} returned {len(out)} results for {len(batch)} texts")
        return [(s, annotate(s, r) if annotate else r) for (s, _), r in zip(batch, out)]

    def done(items: list[tuple[str, Any]], batch: list[tuple[str, str]]) -> None:
        if put is not None:
            put(items, replace)  # stored at once, transactionally
        if budget is not None:
            budget.settle([(costs[s], r.status) for s, r in items])
        with lock:
            results.update(dict(items))
            st.computed += sum(1 for _, r in items if r.status == "ok")
            st.failed += sum(1 for _, r in items if r.status != "ok")
            if cost is not None:
                st.spent += sum(float(cost(t)) for (_, t), (_, r) in zip(batch, items)
                                if budget is None or r.status not in UNBILLED)
            if budget is not None:
                st.spent_total = budget.spent
        if on_batch:
            on_batch(items)
        with lock:
            already = credited.pop(id(batch), 0)
        if len(items) > already:
            bar.advance(len(items) - already)

    bar.start()
    try:
        if conc == 1:
            for b in batches:
                b = admit(b)
                if b is None:
                    break
                done(run_batch(b), b)
        else:
            with ThreadPoolExecutor(max_workers=conc) as ex:
                pending: dict[Future, list[tuple[str, str]]] = {}
                it = iter(batches)
                for b in it:
                    b = admit(b)
                    if b is None:
                        break
                    pending[ex.submit(run_batch, b)] = b
                    if len(pending) >= conc:
                        break
                while pending:
                    fin, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for f in fin:
                        b = pending.pop(f)
                        done(f.result(), b)
                        nb = admit(next(it, None))
                        if nb is not None:
                            pending[ex.submit(run_batch, nb)] = nb
    finally:
        bar.close()
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
        with ws.transaction() as con:  # canonical texts are kept for inspection, like imports' submitted texts
            writes.put_submitted_texts(con, {text_sha256(sub): sub for _, t, sub in done if sub != t})
            writes.link_submissions(ws, detector.spec, links)
    return {d: res[text_sha256(t)] for d, t, _ in done}
