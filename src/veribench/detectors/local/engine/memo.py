"""Reuse and counting: the in-process memo of pass outputs (:class:`PassMemo`, the
process-wide :data:`MEMO`) and the counters of texts and tokens forwarded (:class:`EngineStats`,
:data:`STATS`).

Entries are keyed by ``("single", model key, text sha)`` or ``("pair", p key, q key, text
sha)``; by causality an entry for the first k tokens serves any cap ≤ k (:meth:`PassMemo.get`
slices it). The memo's own lock makes each get/put atomic; the engine reads it under the
model's lock (:func:`veribench.detectors.local.engine.schedule._models_locked`), so a text
another thread is forwarding is waited for, never forwarded twice.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from veribench.detectors.local.engine.records import Mismatch, TooShort


class PassMemo:
    """In-process LRU memo of pass outputs, bounded by bytes (default 1 GiB)."""

    def __init__(self, max_bytes: int = 2**30):
        self.max_bytes = max_bytes
        self._d: OrderedDict[tuple, Any] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple, cap: int) -> Any:
        with self._lock:
            e = self._d.get(key)
            if e is None:
                return None
            need = min(e.n_total, cap)
            if isinstance(e, (TooShort, Mismatch)):
                return e
            if e.tokens_used < need:
                return None
            self._d.move_to_end(key)
            return e.prefix(need)

    def put(self, key: tuple, entry: Any) -> None:
        with self._lock:
            old = self._d.pop(key, None)
            if old is not None:
                self._bytes -= getattr(old, "nbytes", 0)
                if getattr(old, "tokens_used", 0) > getattr(entry, "tokens_used", 0):
                    entry = old  # keep the longer pass
            self._d[key] = entry
            self._bytes += getattr(entry, "nbytes", 0)
            while self._bytes > self.max_bytes and len(self._d) > 1:
                _, ev = self._d.popitem(last=False)
                self._bytes -= getattr(ev, "nbytes", 0)

    def clear(self) -> None:
        with self._lock:
            self._d.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._d)


#: The process-wide memo shared by every zero-shot detector.
MEMO = PassMemo()


@dataclass
class EngineStats:
    """Counters for tests and benchmarks: texts forwarded per model key, batches run."""

    texts_forwarded: dict[tuple, int] = field(default_factory=dict)
    tokens_forwarded: dict[tuple, int] = field(default_factory=dict)
    batches: int = 0
    _lock: Any = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, key: tuple, n_texts: int, n_tokens: int, batches: int = 0) -> None:
        """Count ``n_texts`` texts and ``n_tokens`` tokens forwarded by model ``key``
        (and ``batches`` packs); safe from the workers that run packs side by side."""
        with self._lock:
            self.texts_forwarded[key] = self.texts_forwarded.get(key, 0) + n_texts
            self.tokens_forwarded[key] = self.tokens_forwarded.get(key, 0) + n_tokens
            self.batches += batches

    def reset(self) -> None:
        self.texts_forwarded.clear()
        self.tokens_forwarded.clear()
        self.batches = 0


STATS = EngineStats()
