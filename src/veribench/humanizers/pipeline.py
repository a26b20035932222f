"""The one humanizing path, mirroring :func:`veribench.detectors.pipeline.score_texts`.

De-duplication by input hash, a workspace cache keyed by (humanizer spec hash, input
SHA-256) in the table ``humanizations``, length checks before spending, ``--max-spend``,
dry runs, thread concurrency, and every completed call stored at once in its own
transaction: a run killed at any moment resumes without repeating a stored call and
without losing a stored result.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from veribench.detectors.pipeline import RunStats, run_cached
from veribench.hashing import text_sha256
from veribench.humanizers.base import Humanizer, HumanizeResult
from veribench.spec import Spec
from veribench.store import writes
from veribench.store.workspace import now_utc
from veribench.store.writes import json_text as _json


def cached_humanizations(ws: Any, spec_hash: str, shas: Iterable[str]) -> dict[str, HumanizeResult]:
    """Stored results of ``spec_hash`` among input hashes ``shas``."""
    shas = list(dict.fromkeys(shas))
    if not shas:
        return {}
    rows = ws.query(
        "SELECT input_sha256, status, output, vendor_version, detail FROM humanizations "
        "WHERE spec_hash = ? AND input_sha256 IN (SELECT unnest(?::VARCHAR[]))", [spec_hash, shas])
    return {s: HumanizeResult(status=st, output=o, vendor_version=v, detail=json.loads(d) if d else {})
            for s, st, o, v, d in rows}


def put_humanizations(ws: Any, spec: Spec, items: Sequence[tuple[str, HumanizeResult]], *,
                      replace: bool = False) -> None:
    """Store (input sha256, result) pairs in one transaction; existing rows kept unless ``replace``."""

    ts = now_utc()
    rows = [[spec.hash, s, r.status, r.output, text_sha256(r.output) if r.output is not None else None,
             r.vendor_version, _json(r.detail), ts] for s, r in items]
    verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
    with ws.transaction() as c:
        writes.put_spec(c, spec)
        if rows:
            c.executemany(f"{verb} INTO humanizations VALUES (?,?,?,?,?,?,?,?)", rows)


def humanize_texts(
    ws: Any,
    humanizer: Humanizer,
    texts: Iterable[str],
    *,
    progress: bool = False,
    max_spend: float | None = None,
    dry_run: bool = False,
    stats: RunStats | None = None,
    store: bool = True,
    retry_failed: bool = False,
    on_batch: Callable[[list[tuple[str, HumanizeResult]]], None] | None = None,
) -> dict[str, HumanizeResult]:
    """Humanize ``texts`` with ``humanizer`` through the workspace cache.

    Args:
        ws: a :class:`veribench.store.Workspace`, or ``None`` (nothing cached or stored).
        humanizer: any object meeting :class:`Humanizer`.
        texts: input texts; duplicates are sent once.
        max_spend: stop before the cumulative ``humanizer.cost(text)`` would exceed this
            (units ``humanizer.cost_unit``); cached texts cost nothing.
        dry_run: send nothing; fill ``stats.planned`` with requests and costs.
        retry_failed: also send again stored failures that describe the text
            (:data:`veribench.records.TEXT_FAILURES`); stored call failures (``auth``,
            ``site_down``, ...) are sent again on every run (:func:`veribench.records.is_final`).

    Returns:
        ``{input_sha256: HumanizeResult}`` for every text done or cached (texts left out
        for budget are absent and ``stats.stopped_for_budget`` is set).
    """
    spec = humanizer.spec
    keep = ws is not None and store
    return run_cached(
        humanizer, texts, kind="humanizer", verb="humanizing", call=humanizer.humanize_batch, default_batch_size=1,
        lookup=(lambda shas: cached_humanizations(ws, spec.hash, shas)) if ws is not None else None,
        put=(lambda items, replace: put_humanizations(ws, spec, items, replace=replace)) if keep else None,
        attach_ws=ws if keep else None, progress=progress, max_spend=max_spend, dry_run=dry_run, stats=stats,
        on_batch=on_batch, retry_failed=retry_failed,
    )
