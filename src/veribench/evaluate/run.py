"""Load a workspace's documents and scores under a protocol, compute and record a run."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .. import __version__, registry
from ..errors import ProtocolError, RegistryError
from ..protocol.model import DecisionRule, DetectorEntry, Protocol
from ..spec import Spec
from ..store.workspace import Workspace, now_utc
from .core import DetArrays, DocArrays, compute_results

SELECTION_KEYS = {"corpora": "corpus", "labels": "label", "arms": "arm", "subgroups": "subgroup", "kinds": "kind"}


def _selection_sql(sel: dict[str, Any]) -> tuple[str, list[Any]]:
    unknown = set(sel) - set(SELECTION_KEYS)
    if unknown:
        raise ProtocolError(f"selection: unknown keys {sorted(unknown)}; use {sorted(SELECTION_KEYS)}")
    clauses, params = [], []
    for key, col in SELECTION_KEYS.items():
        if key in sel:
            vals = sel[key] if isinstance(sel[key], list) else [sel[key]]
            clauses.append(f"{col} IN (SELECT unnest(?::VARCHAR[]))")
            params.append([str(v) for v in vals])
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def load_documents(ws: Workspace, proto: Protocol) -> DocArrays:
    """Selected documents (protocol ``[selection]``) as arrays, ordered by doc_id; also
    fills the temporary table ``_sel(doc_id, rn)`` used to align scores."""
    where, params = _selection_sql(proto.selection)
    with ws.lock:
        ws.con.execute("DROP TABLE IF EXISTS _sel")
        ws.con.execute(
            f"CREATE TEMP TABLE _sel AS SELECT doc_id, (row_number() OVER (ORDER BY doc_id)) - 1 AS rn, "
            f"label, subgroup, arm, kind, corpus, group_key, tags FROM documents{where}", params)
        t = ws.con.sql("SELECT doc_id, label, subgroup, arm, kind, corpus, group_key, tags FROM _sel ORDER BY rn"
                       ).to_arrow_table()
    cols = {c: np.array(t.column(c).to_pylist(), dtype=object) for c in t.column_names if c != "tags"}
    tags_raw = t.column("tags").to_pylist()
    tags = [json.loads(x) if x else {} for x in tags_raw] if any(tags_raw) else []
    return DocArrays(doc_id=cols["doc_id"], label=cols["label"], subgroup=cols["subgroup"], arm=cols["arm"],
                     kind=cols["kind"], corpus=cols["corpus"], group_key=cols["group_key"], tags=tags)


def load_detector(ws: Workspace, spec: Spec, label: str, rule: DecisionRule, n: int,
                  corpora: tuple[str, ...] = ()) -> DetArrays:
    """Scores of ``spec`` aligned to ``_sel`` (filled by :func:`load_documents`)."""
    extra = ""
    params: list[Any] = [spec.hash]
    if corpora:
        extra = " AND x.corpus IN (SELECT unnest(?::VARCHAR[]))"
        params.append(list(corpora))
    sql = f"""
        SELECT x.rn, c.status, c.ai_probability, c.raw, c.direction, lower(c.verdict),
               (u.submitted_sha256 <> d.text_sha256) AS differs, c.scanned_at
        FROM _sel x JOIN submissions u ON u.doc_id = x.doc_id AND u.spec_hash = ?
        JOIN documents d ON d.doc_id = x.doc_id
        LEFT JOIN scores c ON c.spec_hash = u.spec_hash AND c.text_sha256 = u.submitted_sha256
        WHERE TRUE{extra}
    """
    with ws.lock:
        t = ws.con.sql(sql, params=params).to_arrow_table()
    rn = np.asarray(t.column("rn").to_numpy(zero_copy_only=False), dtype=np.int64)
    present = np.zeros(n, bool)
    ok = np.zeros(n, bool)
    p = np.full(n, np.nan)
    raw = np.full(n, np.nan)
    verdict = np.full(n, None, dtype=object)
    differs = np.zeros(n, bool)
    status = np.array(t.column("status").to_pylist(), dtype=object)
    present[rn] = status != None  # noqa: E711 - elementwise
    ok[rn] = status == "ok"
    pv = t.column("ai_probability").to_numpy(zero_copy_only=False)
    p[rn] = np.where(pv == None, np.nan, pv).astype(float) if pv.dtype == object else pv  # noqa: E711
    rv = t.column("raw").to_numpy(zero_copy_only=False)
    raw[rn] = np.where(rv == None, np.nan, rv).astype(float) if rv.dtype == object else rv  # noqa: E711
    direction = np.array(t.column("direction").to_pylist(), dtype=object)
    verdict[rn] = np.array(t.column(5).to_pylist(), dtype=object)
    differs[rn] = np.array([bool(x) for x in t.column("differs").to_pylist()])
    oriented = np.where(np.isfinite(p), p, np.nan)
    sign = np.ones(n)
    sign[rn] = np.where(direction == "higher_human", -1.0, 1.0)
    no_p = ~np.isfinite(p)
    oriented[no_p] = (raw * sign)[no_p]
    dates = [d for d in t.column("scanned_at").to_pylist() if d is not None]
    scan = None
    if dates:
        lo, hi = min(dates), max(dates)
        scan = f"{lo:%Y-%m-%d}" if f"{lo:%Y-%m-%d}" == f"{hi:%Y-%m-%d}" else f"{lo:%Y-%m-%d}..{hi:%Y-%m-%d}"
    counts: dict[str, int] = {}
    for s in status:
        if s is not None:
            counts[s] = counts.get(s, 0) + 1
    return DetArrays(label=label, spec=spec.to_dict(), spec_hash=spec.hash, rule=rule, present=present, ok=ok, p=p,
                     raw=raw, oriented=oriented, verdict=verdict, text_differs=differs, scan_date=scan,
                     status_counts=counts)


def _stored_specs(ws: Workspace, name: str) -> list[Spec]:
    rows = ws.query("SELECT spec_json FROM specs WHERE kind = 'detector' AND name = ? ORDER BY spec_hash", [name])
    return [Spec.from_json(r[0]) for r in rows]


def resolve_detectors(ws: Workspace, proto: Protocol, *, allow_scoring: bool, progress: bool,
                      log: Callable[[str], None]) -> list[tuple[Spec, DetectorEntry]]:
    """Find (or compute) the scores each protocol detector needs.

    A name stored in the workspace (e.g. an imported detector) is used as stored; a
    registry plug-in is built with the entry's settings and run on the selected
    documents that lack a score (cached scores are reused, never recomputed).

    Raises:
        ProtocolError: a detector that is neither stored nor a registry plug-in, or an
            ambiguous stored name.
    """
    if not proto.detectors:
        specs = ws.detector_specs()
        names = [s.name for s in specs]
        return [(s, DetectorEntry(name=s.name, label=s.name if names.count(s.name) == 1 else s.label)) for s in specs]
    out = []
    for e in proto.detectors:
        try:
            factory = registry.get("detector", e.name)
        except RegistryError:
            factory = None
        if factory is not None and e.name != "imported":
            det = factory(**e.settings)
            if allow_scoring:
                from ..detectors.pipeline import score_documents

                where, params = _selection_sql(proto.selection)
                extra = ""
                if e.corpora:
                    extra = (" AND " if where else " WHERE ") + "corpus IN (SELECT unnest(?::VARCHAR[]))"
                    params = params + [list(e.corpora)]
                ids = [r[0] for r in ws.query(f"SELECT doc_id FROM documents{where}{extra} ORDER BY doc_id", params)]
                done = {r[0] for r in ws.query("SELECT doc_id FROM submissions WHERE spec_hash = ?", [det.spec.hash])}
                todo = [i for i in ids if i not in done]
                if todo:
                    t0 = time.perf_counter()
                    log(f"scoring {len(todo)} documents with {det.spec.label}")
                    score_documents(ws, det, todo, progress=progress)
                    log(f"  {det.spec.name}: {time.perf_counter() - t0:.1f} s")
            out.append((det.spec, e))
            continue
        stored = _stored_specs(ws, e.name)
        if e.settings:
            stored = [s for s in stored if all(s.settings.get(k) == v for k, v in e.settings.items())]
        if not stored:
            raise ProtocolError(f"protocol {proto.path}: detector {e.name!r} has no stored scores and is not a "
                                f"registry plug-in; import its scores first (`veribench import scores`)")
        if len(stored) > 1:
            raise ProtocolError(f"protocol {proto.path}: detector {e.name!r} matches {len(stored)} stored specs; "
                                f"add settings to pick one: {[s.settings for s in stored]}")
        out.append((stored[0], e))
    return out


def evaluate_workspace(ws: Workspace, proto: Protocol | None = None, *, allow_scoring: bool = True,
                       progress: bool = False, log: Callable[[str], None] = lambda m: None,
                       record: bool = True) -> dict[str, Any]:
    """Evaluate the workspace under ``proto`` (default rules when None) and record the run.

    Raises:
        ProtocolError: uncommitted protocol file, unknown detector, bad selection.
    """
    from ..protocol.commit import require_committed

    proto = proto or Protocol.default()
    commit = require_committed(ws, proto) if proto.hash else None
    pairs = resolve_detectors(ws, proto, allow_scoring=allow_scoring, progress=progress, log=log)
    docs = load_documents(ws, proto)
    dets = [load_detector(ws, spec, e.display, e.rule, len(docs), e.corpora) for spec, e in pairs]
    if not proto.detectors:
        # Default rules: P(AI) > 0.5; a detector without probabilities is judged by its own verdict.
        for d in dets:
            if not np.isfinite(d.p[d.ok]).any() and any(v is not None for v in d.verdict[d.ok]):
                d.rule = DecisionRule(field="verdict", op="in", threshold=None,
                                      source="detector's own verdict (it reports no probability)")
    run_id = f"{proto.tag}-{now_utc():%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
    meta = {
        "run_id": run_id, "tag": proto.tag, "created_at": now_utc().isoformat(timespec="seconds"),
        "veribench_version": __version__,
        # the file name only: results are published, a local folder is nobody's business
        "protocol": {"name": proto.name, "path": Path(proto.path).name if proto.path else None, "hash": proto.hash,
                     "committed_at": commit.committed_at.isoformat(timespec="seconds") if commit else None,
                     "amendments": proto.amendments, "declared_split": proto.split_rule != "none"},
    }
    from ..protocol.commit import log_run, run_integrity

    integ = run_integrity(ws, commit, [s.hash for s, _ in pairs])  # chain head, commitment facts (event log)
    meta["chain_head"] = integ.pop("chain_head")
    meta["protocol"].update(integ)
    res = compute_results(docs, dets, proto, run_meta=meta)
    if record:
        with ws.transaction() as c:
            c.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?)",
                      [run_id, proto.tag, proto.hash, now_utc(), json.dumps(res, allow_nan=False)])
            log_run(c, res)
    return res


def latest_run(ws: Workspace) -> dict[str, Any] | None:
    """The newest run's results dict, or None when the workspace has no run."""
    rows = ws.query("SELECT results FROM runs ORDER BY created_at DESC LIMIT 1")
    return json.loads(rows[0][0]) if rows else None
