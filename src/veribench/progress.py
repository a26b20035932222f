"""One progress reporter for every long command (``--progress/--no-progress``, docs/cli.md).

Where the output goes decides how progress looks:

- **a terminal** (standard error is a TTY): a rich bar on standard error, with the count,
  the total when it is known, and the time elapsed; it disappears when the work ends.
  Reporters open at once share one display (one line each).
- **anything else** (a pipe, a log file, CI): a plain line on standard error every
  ``interval`` seconds while the work goes on, whether or not an item finished in that
  time (a step that runs for minutes still prints a line every few seconds), and one
  closing line for work that printed any. Work that ends within the first interval
  prints nothing. The line names the innermost reporter open, after the ones around it::

      cycle rescore > score zippy: 1,200/5,000 texts (24%), 41.3 texts/s, 29 s

Reporters nest: a command opens one for its whole run (no total: the line still says
which step runs and for how long), and a lower layer opens one per step with counts. A
reporter opened with ``enabled=False`` shows nothing itself, but while an enabled one
around it is open, its counts appear in that one's lines.

A step that hands a whole batch of items to code that works through them one by one (a
model detector scores 256 texts per call, in packs) opens a :func:`batch` around the call;
the code inside reports its share done as it goes with :func:`batch_progress`, and the count of
the reporter moves then, not only when the batch returns.

``interval`` defaults to :data:`DEFAULT_INTERVAL` seconds; the environment variable
``VERIBENCH_PROGRESS_INTERVAL`` (seconds, > 0) overrides it.

Base layer: imports nothing of veribench; ``rich`` is imported only for a terminal.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, TextIO

__all__ = ["DEFAULT_INTERVAL", "INTERVAL_ENV", "Batch", "Progress", "batch", "default_interval", "elapsed",
           "batch_progress", "notice"]

#: Seconds between two plain progress lines (output that is not a terminal).
DEFAULT_INTERVAL = 5.0
#: Environment variable that overrides :data:`DEFAULT_INTERVAL` (seconds, > 0).
INTERVAL_ENV = "VERIBENCH_PROGRESS_INTERVAL"

_LOCK = threading.RLock()
#: Reporters open now, outermost first (all threads of the process).
_OPEN: list[Progress] = []
#: The shared rich display while any terminal reporter is open: ``[rich Progress, users]``.
_LIVE: list[Any] = []
#: Plain lines printed so far by this process (a reporter that saw one prints a closing line).
_PRINTED = [0]


def default_interval() -> float:
    """Seconds between plain lines: ``VERIBENCH_PROGRESS_INTERVAL`` when it is a number
    above 0, else :data:`DEFAULT_INTERVAL`."""
    try:
        v = float(os.environ.get(INTERVAL_ENV, ""))
    except ValueError:
        return DEFAULT_INTERVAL
    return v if v > 0 and v == v and v != float("inf") else DEFAULT_INTERVAL


def elapsed(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 07 min``: a duration for a progress line."""
    s = int(max(0.0, seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class Progress:
    """Progress of one piece of work; use as a context manager.

    Args:
        description: what runs, e.g. ``"score zippy"`` or ``"import raid"``.
        total: how many items in all (``None``: unknown; the line gives the count only).
        unit: what an item is, plural (``"texts"``, ``"records"``); ``""`` for none.
        enabled: show it (``--progress``); ``False`` counts silently (see the module
            docstring for how an enclosing reporter shows those counts).
        interval: seconds between plain lines (default :func:`default_interval`).
        stream: where to write (default: standard error at the time of :meth:`start`).
        bar: on a terminal, show a bar; ``False`` for a reporter around steps that show
            their own (a command's whole run): it then shows only in plain lines.

    :meth:`advance` and :meth:`update` may be called from any thread.
    """

    def __init__(self, description: str, total: int | None = None, *, unit: str = "", enabled: bool = True,
                 interval: float | None = None, stream: TextIO | None = None, bar: bool = True):
        self.description = description
        self.bar = bar
        self.total = total
        self.unit = unit
        self.enabled = enabled
        self.interval = interval if interval is not None and interval > 0 else default_interval()
        self.stream = stream
        self.completed = 0
        self.t0 = time.perf_counter()
        self._printed_before = 0
        self._task: Any = None
        self._ticker: threading.Thread | None = None
        self._stop = threading.Event()
        self._open = False

    # -- life cycle -------------------------------------------------------------------
    def __enter__(self) -> Progress:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start(self) -> Progress:
        """Open the reporter (a bar on a terminal, the ticker elsewhere); returns itself."""
        if self._open:
            return self
        self._open = True
        self.t0 = time.perf_counter()
        self._printed_before = _PRINTED[0]
        if self.stream is None:
            self.stream = sys.stderr
        with _LOCK:
            _OPEN.append(self)
        if not self.enabled:
            return self
        if _is_terminal(self.stream):
            if self.bar:
                self._task = _live_add(self)
        elif not any(p._ticker is not None for p in _OPEN if p is not self):
            self._ticker = threading.Thread(target=self._tick, name="veribench-progress", daemon=True)
            self._ticker.start()
        return self

    def close(self) -> None:
        """Close the reporter: the bar goes; a plain closing line if any line was printed."""
        if not self._open:
            return
        self._open = False
        if self._ticker is not None:
            self._stop.set()
            self._ticker.join()
            self._ticker = None
        with _LOCK:
            printed = _PRINTED[0] > self._printed_before
            chain = self._chain()
            _OPEN.remove(self)
        if self._task is not None:
            _live_remove(self._task)
            self._task = None
        elif self.enabled and printed and self.stream is not None:
            done = f", {self._count()}" if self.completed or self.total else ""
            self._write(f"{chain}: done{done} in {elapsed(time.perf_counter() - self.t0)}")

    # -- counting ---------------------------------------------------------------------
    def advance(self, n: int = 1) -> None:
        """``n`` more items done."""
        with _LOCK:
            self.completed += n
        self._refresh()

    def update(self, *, completed: int | None = None, total: int | None = None,
               description: str | None = None) -> None:
        """Set the count, the total or the description."""
        with _LOCK:
            if completed is not None:
                self.completed = completed
            if total is not None:
                self.total = total
            if description is not None:
                self.description = description
        self._refresh()

    def line(self) -> str:
        """The plain line for this reporter and the ones around it."""
        with _LOCK:
            return f"{self._chain()}: {self._status()}"

    # -- internals --------------------------------------------------------------------
    def _count(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        if self.total:
            return f"{self.completed:,}/{self.total:,}{unit} ({100 * self.completed / self.total:.0f}%)"
        return f"{self.completed:,}{unit}" if self.completed or self.total is not None else "working"

    def _status(self) -> str:
        el = time.perf_counter() - self.t0
        parts = [self._count()]
        if self.completed and el > 0 and self.unit:
            parts.append(f"{self.completed / el:,.1f} {self.unit}/s")
        parts.append(elapsed(el))
        return ", ".join(parts)

    def _chain(self) -> str:
        """Descriptions of the open reporters from the outermost enabled one to this one."""
        if self not in _OPEN:
            return self.description
        upto = _OPEN[:_OPEN.index(self) + 1]
        first = next((i for i, p in enumerate(upto) if p.enabled), len(upto) - 1)
        return " > ".join(p.description for p in upto[first:])

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            with _LOCK:
                inner = _OPEN[-1] if _OPEN else self
                text = inner.line()
                _PRINTED[0] += 1
            self._write(text)

    def _write(self, text: str) -> None:
        try:
            print(text, file=self.stream, flush=True)
        except (OSError, ValueError):  # a closed pipe or stream: progress is never worth an error
            pass

    def _refresh(self) -> None:
        if self._task is not None and _LIVE:
            _LIVE[0].update(self._task, completed=self.completed, total=self.total, description=self.description)


def notice(message: str) -> bool:
    """Say at once that a step starts (loading a model, converting its weights): one line on
    the stream of the open reporters, ``<their descriptions>: <message>``, e.g. ``score >
    score loglik: loading model smollm2 (cpu, float32)``, also when the output is not a
    terminal (a step that runs before the first item is done would otherwise show nothing
    until the next plain line, or nothing at all in a run that then fails). On a terminal the
    line is printed above the bars. Nothing is printed while no enabled reporter is open (a
    command run with ``--no-progress``, or a library call outside any command). Never raises.

    Returns:
        Whether a line was printed.
    """
    with _LOCK:
        shown = [p for p in _OPEN if p.enabled]
        if not shown:
            return False
        text = f"{_OPEN[-1]._chain()}: {message}"
        stream = shown[0].stream
        live = _LIVE[0] if _LIVE else None
        _PRINTED[0] += 1
    if live is not None:
        try:
            live.console.print(text, markup=False, highlight=False)
            return True
        except Exception:  # progress is never worth an error
            return False
    try:
        print(text, file=stream or sys.stderr, flush=True)
    except (OSError, ValueError):  # a closed pipe or stream
        return False
    return True


class Batch:
    """The items of one batch that a reporter is counting (see :func:`batch`).

    Attributes:
        reporter: the :class:`Progress` whose count moves.
        size: items in the batch (>= 0).
        credited: items already added to ``reporter``'s count (0..``size``).
    """

    def __init__(self, reporter: Progress, size: int):
        self.reporter = reporter
        self.size = max(0, int(size))
        self.credited = 0

    def credit(self, n: int) -> int:
        """Add up to ``n`` items to the reporter's count, never past ``size``; returns how many."""
        with _LOCK:
            k = max(0, min(int(n), self.size - self.credited))
            self.credited += k
        if k:
            self.reporter.advance(k)
        return k

    def finish(self, n: int) -> int:
        """The batch returned ``n`` results: count those not yet credited; returns how many."""
        return self.credit(max(0, int(n) - self.credited))


_BATCH = threading.local()


@contextlib.contextmanager
def batch(reporter: Progress, size: int) -> Iterator[Batch]:
    """While the block runs, :func:`batch_progress` on this thread counts items of this batch
    on ``reporter`` (at most ``size`` in all). Call :meth:`Batch.finish` with the number
    of results when the batch returns, so its items are counted once, whether or not the
    code inside reported them. Batches nest (the innermost counts)."""
    b = Batch(reporter, size)
    old = getattr(_BATCH, "current", None)
    _BATCH.current = b
    try:
        yield b
    finally:
        _BATCH.current = old


def batch_progress(done: int, total: int) -> int:
    """``done`` of the ``total`` units of work of the batch running on this thread are
    finished (a model detector calls it as each pack of its forward pass ends; a unit may
    be a text, a perturbation or a token count: only the share ``done / total`` matters).
    Brings the count of the innermost :func:`batch` open on this thread to
    ``floor(size * done / total)`` items (never backwards, never past ``size``); without
    an open batch, or with ``total <= 0``, does nothing. Never raises.

    Returns:
        How many items were added to the count (0 outside a batch).
    """
    b = getattr(_BATCH, "current", None)
    if b is None or total <= 0:
        return 0
    try:
        return b.credit(b.size * min(max(int(done), 0), int(total)) // int(total) - b.credited)
    except Exception:  # progress is never worth an error
        return 0


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _live_add(p: Progress) -> Any:
    """A task for ``p`` on the shared rich display (started by the first terminal reporter)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as RichProgress

    with _LOCK:
        if not _LIVE:
            bar = RichProgress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                               TimeElapsedColumn(), console=Console(file=p.stream), transient=True)
            bar.start()
            _LIVE[:] = [bar, 0]
        _LIVE[1] += 1
        return _LIVE[0].add_task(p.description, total=p.total, completed=p.completed)


def _live_remove(task: Any) -> None:
    with _LOCK:
        if not _LIVE:
            return
        bar = _LIVE[0]
        bar.remove_task(task)
        _LIVE[1] -= 1
        if _LIVE[1] <= 0:
            bar.stop()
            _LIVE.clear()
