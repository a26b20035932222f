"""Python's cyclic garbage collector around veribench's heavy imports: one rule for the
frozen heap (``gc.freeze``), shared by the demo's start-up pause and by the places that
shield a full collection.

Once torch, transformers and scipy are imported the process holds ~2 million objects, and
every full collection walks them all (0.1-0.3 s on the project's 2-core machine, with the
GIL held; benchmarks/README.md, "Fourth pass"). Frozen objects are skipped. The rule here:
whoever freezes the heap unfreezes it only if it was not frozen before, so a caller's
freeze is never undone by a callee.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def frozen() -> Iterator[None]:
    """Every object alive now is skipped by collections inside the block (e.g. a library's
    own ``gc.collect()``); afterwards they rejoin the oldest generation, unless the heap
    was frozen already (then what was frozen here stays frozen with it)."""
    before = gc.get_freeze_count()
    gc.freeze()
    try:
        yield
    finally:
        if not before:
            gc.unfreeze()


class CollectionPause:
    """No automatic garbage collection from construction until :meth:`resume`.

    Importing torch, transformers, scipy and the corpora grows the heap from nothing to
    ~2 million objects, and CPython runs a full collection each time it grows by a
    quarter: eight of them in the demo's first 5.3 s (0.95 s in all, GIL held, ~250
    objects freed), on the path to its first forward pass. :meth:`resume` (e.g. once a
    model is loaded) freezes every object alive then (later collections skip them) and
    turns collection back on; :meth:`end` also unfreezes them, unless the heap was frozen
    before :meth:`resume`, leaving the collector as it was found. Thread-safe and
    idempotent; a process that had collection off keeps it off.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._paused = gc.isenabled()
        self._froze = False
        if self._paused:
            gc.disable()

    def resume(self) -> None:
        with self._lock:
            if self._paused:
                self._paused = False
                self._froze = gc.get_freeze_count() == 0
                gc.freeze()
                gc.enable()

    def end(self) -> None:
        self.resume()
        with self._lock:
            if self._froze:
                self._froze = False
                gc.unfreeze()
