"""Running the packs of a pass: one forward at a time per model (the per-model locks,
:func:`_models_locked`), packs one after another with an adaptive thread count
(:class:`_Threads`) or side by side on CPU workers, progress (:func:`report_progress`) and
cancellation (:func:`cancelled_by`, :class:`PassesCancelled`), all through :func:`_run_groups`.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from veribench.detectors.local.engine.plan import Plan, _device_type, plan_workers
from veribench.detectors.local.models import LoadedModel
from veribench.progress import batch_progress

_MODEL_LOCKS: dict[int, threading.RLock] = {}
_MODEL_LOCKS_GUARD = threading.Lock()


def _model_lock(lm: LoadedModel) -> threading.RLock:
    with _MODEL_LOCKS_GUARD:
        return _MODEL_LOCKS.setdefault(id(lm.model), threading.RLock())


@contextlib.contextmanager
def _models_locked(*lms: LoadedModel) -> Iterator[None]:
    """Hold each model's lock (re-entrant), taken in one global order so that two callers
    locking the same pair in opposite roles cannot deadlock."""
    locks = sorted({id(lm.model): _model_lock(lm) for lm in lms}.items())
    with contextlib.ExitStack() as stack:
        for _, lk in locks:
            stack.enter_context(lk)
        yield


class _Threads:
    """Adaptive torch thread count on CPU: all of torch's threads or one, whichever measured faster.

    The first two groups run with each option; the faster (tokens/s) is kept and the
    other re-tried every ``every`` groups, so a machine that gets busy (or idle) mid-run
    is followed. A fixed setting or a non-CPU device leaves torch's threads alone.
    """

    def __init__(self, plan: Plan, n_groups: int, every: int = 6):
        import torch

        self.torch = torch
        self.orig = torch.get_num_threads()
        self.active = _device_type(plan.device) == "cpu"
        self.options: list[int] = []
        if self.active:
            if plan.threads == "auto":  # at most the threads torch was given (one per Ray actor, say)
                n = max(1, min(self.orig, os.cpu_count() or 1))
                self.options = [n, 1] if n > 1 and n_groups >= 3 else [self.orig]
            else:
                self.options = [int(plan.threads)]
        self.rate: dict[int, float] = {}
        self.i = 0
        self.every = every
        self.current: int | None = None

    def before(self) -> None:
        if not self.active or not self.options:
            return
        if len(self.options) == 1:
            choice = self.options[0]
        elif self.i < len(self.options):
            choice = self.options[self.i]
        else:
            best = max(self.rate, key=self.rate.get)
            other = [o for o in self.options if o != best]
            choice = other[0] if other and self.i % self.every == 0 else best
        if choice != self.torch.get_num_threads():
            self.torch.set_num_threads(choice)
        self.current = choice
        self.i += 1

    def after(self, tokens: int, seconds: float) -> None:
        if self.current is None or seconds <= 0:
            return
        r = tokens / seconds
        old = self.rate.get(self.current)
        self.rate[self.current] = r if old is None else 0.5 * old + 0.5 * r

    def close(self) -> None:
        if self.active and self.torch.get_num_threads() != self.orig:
            self.torch.set_num_threads(self.orig)


#: Progress sinks for long passes (see :func:`report_progress`).
_SINKS: list[tuple[Callable[[str], None], float, Any]] = []


@contextlib.contextmanager
def report_progress(sink: Callable[[str], None] | None = None, *, interval: float = 3.0,
                    console: Any = None) -> Iterator[None]:
    """Report the engine's forward passes while inside the block.

    On a terminal ``console`` (a rich Console), a progress bar with the text count and
    tokens/s; otherwise a line through ``sink`` (default: print to stderr) at most every
    ``interval`` seconds and when a pass ends: ``forward smollm2: 48/120 texts, 4,096
    tokens, 812 tokens/s, 5 s``.
    """
    import sys

    s = sink or (lambda m: print(m, file=sys.stderr, flush=True))
    entry = (s, float(interval), console)
    _SINKS.append(entry)
    try:
        yield
    finally:
        _SINKS.remove(entry)


class _Progress:
    def __init__(self, desc: str, total_texts: int, total_tokens: int, enabled: bool):
        self.desc, self.total, self.total_tokens = desc, total_texts, total_tokens
        self.done = self.tokens = 0
        self.t0 = self.last = time.perf_counter()
        self.bar = None
        self.sink: tuple[Callable[[str], None], float, Any] | None = _SINKS[-1] if _SINKS else None
        if self.sink is None and enabled:
            import sys

            self.sink = ((lambda m: print(m, file=sys.stderr, flush=True)), 3.0, None)
        if self.sink is not None and total_texts > 0:
            con = self.sink[2]
            if con is None and enabled:
                from rich.console import Console

                con = Console(stderr=True)
            if con is not None and getattr(con, "is_terminal", False):
                from rich.progress import (
                    BarColumn,
                    MofNCompleteColumn,
                    Progress,
                    TextColumn,
                    TimeElapsedColumn,
                )

                self.bar = Progress(TextColumn(desc), BarColumn(), MofNCompleteColumn(),
                                    TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), console=con,
                                    transient=True)
                self.bar.start()
                self.task = self.bar.add_task(desc, total=total_texts, rate="")

    def line(self) -> str:
        el = time.perf_counter() - self.t0
        rate = self.tokens / el if el > 0 else 0.0
        return (f"{self.desc}: {self.done}/{self.total} texts, {self.tokens:,} tokens, "
                f"{rate:,.0f} tokens/s, {el:.0f} s")

    def advance(self, texts: int, tokens: int) -> None:
        self.done += texts
        self.tokens += tokens
        batch_progress(self.done, self.total)  # the scoring count of the pipeline's batch moves with the packs
        if self.sink is None:
            return
        now = time.perf_counter()
        if self.bar is not None:
            el = now - self.t0
            self.bar.update(self.task, advance=texts, rate=f"{self.tokens / el:,.0f} tokens/s" if el > 0 else "")
        elif now - self.last >= self.sink[1] and self.done < self.total:
            self.last = now
            self.sink[0](self.line())

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
        if self.sink is not None and self.total > 0 and self.done:
            self.sink[0](self.line())


class PassesCancelled(RuntimeError):
    """Raised by a pass whose :func:`cancelled_by` event was set: the packs not yet started
    were skipped (the memo keeps those that finished)."""


_CANCEL = threading.local()


@contextlib.contextmanager
def cancelled_by(event: threading.Event) -> Iterator[None]:
    """Passes started on this thread inside the block stop at the next pack once
    ``event`` is set, raising :class:`PassesCancelled` (a background thread's forward
    that the program no longer needs, e.g. after Ctrl-C, ends within a pack)."""
    old = getattr(_CANCEL, "event", None)
    _CANCEL.event = event
    try:
        yield
    finally:
        _CANCEL.event = old


def _run_groups(desc: str, plan: Plan, items: list, groups: list[list[int]], fn: Callable[[list], None],
                progress: bool, sizes: list[tuple[int, int]] | None = None) -> None:
    """Run ``fn`` on each group of ``items``: side by side on :func:`plan_workers` workers,
    else one after the other with adaptive threads; with progress either way.

    ``sizes``: (texts, tokens) of each item (default: one text of ``len(item[1])`` tokens).
    ``fn`` must be safe to call from several threads at once (each call writes its own
    outputs). The first error of any group is raised once the groups already running end;
    groups not yet started are cancelled.
    """
    sizes = sizes or [(1, len(it[1])) for it in items]
    pr = _Progress(desc, sum(n for n, _ in sizes), sum(t for _, t in sizes), progress)
    workers = plan_workers(plan, len(groups))
    try:
        if workers > 1:
            _run_side_by_side(plan, items, groups, fn, sizes, pr, workers)
            return
        th = _Threads(plan, len(groups))
        cancel = getattr(_CANCEL, "event", None)
        try:
            for g in groups:
                if cancel is not None and cancel.is_set():
                    raise PassesCancelled("forward passes cancelled")
                grp = [items[j] for j in g]
                th.before()
                t0 = time.perf_counter()
                fn(grp)
                ntexts, ntok = sum(sizes[j][0] for j in g), sum(sizes[j][1] for j in g)
                th.after(ntok, time.perf_counter() - t0)
                pr.advance(ntexts, ntok)
        finally:
            th.close()
    finally:
        pr.close()


def _run_side_by_side(plan: Plan, items: list, groups: list[list[int]], fn: Callable[[list], None],
                      sizes: list[tuple[int, int]], pr: _Progress, workers: int) -> None:
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    import torch

    orig = torch.get_num_threads()
    base = orig if plan.threads == "auto" else int(plan.threads)
    torch.set_num_threads(max(1, base // workers))
    ex = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="veribench-pack")

    cancel = getattr(_CANCEL, "event", None)

    def task(grp: list) -> None:
        if cancel is not None and cancel.is_set():
            raise PassesCancelled("forward passes cancelled")
        fn(grp)

    try:
        futs = {ex.submit(task, [items[j] for j in g]): g for g in groups}
        pending = set(futs)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)  # progress as each pack ends
            for f in done:
                if f.exception() is not None:
                    for p in pending:
                        p.cancel()
                    raise f.exception()
                g = futs[f]
                pr.advance(sum(sizes[j][0] for j in g), sum(sizes[j][1] for j in g))
    finally:
        ex.shutdown(wait=True, cancel_futures=True)
        torch.set_num_threads(orig)
