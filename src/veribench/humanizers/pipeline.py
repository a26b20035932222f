"""The one humanizing path, mirroring :func:`veribench.detectors.pipeline.score_texts`.

De-duplication by input hash, a workspace cache keyed by (humanizer spec hash, input
SHA-256) in the table ``humanizations``, length checks before spending, ``--max-spend``,
dry runs, thread concurrency, and every completed call stored at once in its own
transaction: a run killed at any moment resumes without repeating a stored call and
without losing a stored result.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Callable, Iterable, Sequence

from ..detectors.pipeline import TRANSIENT, RunStats, _progress
from ..hashing import text_sha256
from ..spec import Spec
from .base import HumanizeResult, Humanizer

TABLE_SQL = """
CREATE TABLE IF NOT EXISTS humanizations (
    spec_hash VARCHAR NOT NULL,
    input_sha256 VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    output VARCHAR,
    output_sha256 VARCHAR,
    vendor_version VARCHAR,
    detail JSON,
    created_at TIMESTAMPTZ,
    PRIMARY KEY (spec_hash, input_sha256)
);
"""



def ensure_table(ws: Any) -> None:
    with ws.lock:
        ws.con.execute(TABLE_SQL)


def cached_humanizations(ws: Any, spec_hash: str, shas: Iterable[str]) -> dict[str, HumanizeResult]:
    """Stored results of ``spec_hash`` among input hashes ``shas``."""
    ensure_table(ws)
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
    from ..store.workspace import _json, now_utc

    ensure_table(ws)
    ts = now_utc()
    rows = [[spec.hash, s, r.status, r.output, text_sha256(r.output) if r.output is not None else None,
             r.vendor_version, _json(r.detail), ts] for s, r in items]
    verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
    with ws.transaction() as c:
        ws.put_spec(spec, c)
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
    retry_statuses: Sequence[str] = (),
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
        retry_statuses: stored failures with these codes are tried again (subset of
            :data:`TRANSIENT`); everything else stored is final.

    Returns:
        ``{input_sha256: HumanizeResult}`` for every text done or cached (texts left out
        for budget are absent and ``stats.stopped_for_budget`` is set).
    """
    bad = set(retry_statuses) - set(TRANSIENT)
    if bad:
        raise ValueError(f"retry_statuses may only name transient failures {TRANSIENT}, got {sorted(bad)}")
    st = stats if stats is not None else RunStats()
    by_sha: dict[str, str] = {}
    for t in texts:
        st.requested += 1
        by_sha.setdefault(text_sha256(t), t)
    st.unique = len(by_sha)
    spec = humanizer.spec
    results: dict[str, HumanizeResult] = {}
    if ws is not None:
        cached = cached_humanizations(ws, spec.hash, by_sha.keys())
        results.update({s: r for s, r in cached.items() if r.status not in retry_statuses})
    st.cached = len(results)
    todo = [(s, t) for s, t in by_sha.items() if s not in results]
    replace = bool(retry_statuses)

    pre = getattr(humanizer, "preflight", None)
    if pre is not None:
        keep, pre_items = [], []
        for s, t in todo:
            r = pre(t)
            (keep.append((s, t)) if r is None else pre_items.append((s, r)))
        todo = keep
        if pre_items and not dry_run:
            if ws is not None and store:
                put_humanizations(ws, spec, pre_items, replace=replace)
            results.update(dict(pre_items))
            st.failed += len(pre_items)

    cost = getattr(humanizer, "cost", None)
    if dry_run:
        describe = getattr(humanizer, "describe_request", None)
        for s, t in todo:
            st.planned.append({"text_sha256": s,
                               "request": describe(t) if describe else {"humanizer": spec.name, "chars": len(t)},
                               "cost": cost(t) if cost else 0.0, "cost_unit": getattr(humanizer, "cost_unit", None)})
        return results

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

    attach = getattr(humanizer, "attach_workspace", None)  # async vendors journal their task ids
    if attach is not None and ws is not None and store:
        attach(ws)

    bs = max(1, int(getattr(humanizer, "batch_size", 1) or 1))
    conc = max(1, int(getattr(humanizer, "max_concurrency", 1) or 1))
    batches = [todo[i:i + bs] for i in range(0, len(todo), bs)]
    bar = _progress(len(todo), f"humanizing {spec.label}", progress)
    lock = threading.Lock()

    def run_batch(batch):
        out = humanizer.humanize_batch([t for _, t in batch])
        if len(out) != len(batch):
            raise RuntimeError(f"humanizer {spec.name} returned {len(out)} results for {len(batch)} texts")
        return [(s, r) for (s, _), r in zip(batch, out)]

    def done(items, batch):
        if ws is not None and store:
            put_humanizations(ws, spec, items, replace=replace)  # stored at once, transactionally
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
                pending: dict[Future, Any] = {}
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
