"""``veribench log verify``: a workspace's rows checked against its event log.

:func:`verify_workspace` re-checks the chain (:func:`veribench.store.events.check_chain`)
and every logged table against it: a row edited with plain SQL (a protocol's
``committed_at``, a label, a score) no longer matches its leaf or its event and is
reported by name; a row no event covers is reported as such, and the documents of an
import that has not finished (interrupted, or still running) are named as that.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from veribench.errors import InputError
from veribench.hashing import canonical_json, loads_strict
from veribench.spec import Spec
from veribench.store.commitments import commitment_record, record_bytes
from veribench.store.events import (
    ITEM_KINDS,
    LogFinding,
    _obj,
    check_chain,
    detached_problems,
    doc_leaf,
    items_digest,
    link_leaf,
    read_events,
    results_digest,
    run_rows_digest,
    score_leaf,
    utc_text,
)


@dataclass
class LogReport:
    """The outcome of :func:`verify_workspace`."""

    workspace: str
    events: int = 0
    head: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    findings: list[LogFinding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def lines(self) -> list[str]:
        if self.ok:
            covered = ", ".join(f"{v} {k}" for k, v in self.counts.items())
            return [f"[ok] event log of {self.workspace}: {self.events} events, head {self.head.get('hash', '')[:16]}… "
                    f"(seq {self.head.get('seq')}); checked {covered}"]
        out = [f"[FAIL] event log of {self.workspace}: {self.findings[0].line()}"]
        out += [f"    {f.line()}" for f in self.findings[1:50]]
        if len(self.findings) > 50:
            out.append(f"    … {len(self.findings) - 50} more findings")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"workspace": self.workspace, "ok": self.ok, "events": self.events, "head": self.head,
                "counts": self.counts, "findings": [asdict(f) for f in self.findings]}


def latest_items(con: Any, kind: str) -> dict[tuple[Any, Any], tuple[str, int]]:
    """``{(k1, k2): (leaf, seq)}``: the newest logged fingerprint of every row of ``kind``
    (fingerprints a withdrawal detached from their keys are left out)."""
    rows = con.execute(
        "SELECT k1, k2, leaf, seq FROM log_items WHERE kind = ? AND k1 IS NOT NULL "
        "QUALIFY row_number() OVER (PARTITION BY k1, k2 ORDER BY seq DESC) = 1", [kind]).fetchall()
    return {(a, b): (leaf, int(s)) for a, b, leaf, s in rows}


def _chunks(con: Any, sql: str, size: int = 100_000) -> Iterator[list[tuple[Any, ...]]]:
    cur = con.execute(sql)
    while True:
        rows = cur.fetchmany(size)
        if not rows:
            return
        yield rows


#: A row of a checked table, as the database returns it.
_Row = tuple[Any, ...]
#: The tables checked row by row against their newest leaf: (item kind, table, query, key of a
#: row, leaf of a row, how to name a row, what a row is).
_ROW_CHECKS: tuple[tuple[str, str, str, Callable[[_Row], tuple[Any, Any]], Callable[[_Row], str],
                         Callable[[_Row], str], str], ...] = (
    ("doc", "documents", "SELECT doc_id, text_sha256, label, arm, kind, subgroup, corpus, group_key, tags, provenance, "
                         "generation, text, import_id FROM documents",
     lambda r: (r[0], None), lambda r: doc_leaf(*r[:11]), lambda r: f"doc {r[0]}", "document row"),
    ("score", "scores", "SELECT spec_hash, text_sha256, status, raw, scale, direction, ai_probability, verdict, "
                        "vendor_version, scanned_at, CAST(json_extract(detail, '$.hazards') AS VARCHAR) FROM scores",
     lambda r: (r[0], r[1]), lambda r: score_leaf(*r[:10], _obj(r[10])), lambda r: f"spec {r[0][:12]}… text {r[1][:12]}…",
     "score row"),
    ("link", "submissions", "SELECT doc_id, spec_hash, submitted_sha256 FROM submissions",
     lambda r: (r[0], r[1]), lambda r: link_leaf(*r), lambda r: f"doc {r[0]}", "link"),
)
_ORIGIN = {"doc": "its import", "score": "its scan batch", "link": "its scan batch"}
_EDITED = {"doc": "one of label, arm, kind, subgroup, corpus, group_key, tags, provenance, generation or the text "
                  "hash", "score": "value, status or scan date",
           "link": "submitted text"}


def _check_superseded(con: Any, rep: LogReport, add: Callable[[LogFinding], None]) -> None:
    """Each earlier scan kept in ``scores_superseded`` matches a fingerprint its own scan batch
    logged for the same (spec, text): not only the newest, which the ``scores`` row holds."""
    logged: dict[tuple[Any, Any], set[str]] = {}
    for rows in _chunks(con, "SELECT k1, k2, leaf FROM log_items WHERE kind = 'score' AND k1 IS NOT NULL AND "
                             "(k1, k2) IN (SELECT (spec_hash, text_sha256) FROM scores_superseded)"):
        for a, b, leaf in rows:
            logged.setdefault((a, b), set()).add(leaf)
    n = 0
    for rows in _chunks(con, _ROW_CHECKS[1][2].replace("FROM scores", "FROM scores_superseded")):
        for r in rows:
            n += 1
            if _ROW_CHECKS[1][4](r) not in logged.get((r[0], r[1]), set()):
                add(LogFinding("scores_superseded", "earlier score row differs from every scan batch that logged "
                                                    f"its key ({_EDITED['score']} edited, or stored outside a "
                                                    "logged write)", None, "scores_superseded", _ROW_CHECKS[1][5](r)))
    if n:
        rep.counts["scores_superseded"] = n


def verify_workspace(ws: Any, *, max_findings: int = 200) -> LogReport:
    """Check a workspace's chain and every table against it.

    Checks: the chain (:func:`check_chain`); each event's item digests against the
    ``log_items`` rows; every document, score and submission row against its latest
    leaf (a row with no leaf is "not covered by the log"); each committed protocol
    (its bytes, name and ``committed_at``) against its commit event; each run's results
    against its run event; each import row against its import event.
    """
    con = ws.con
    rep = LogReport(workspace=str(ws.path))

    def add(f: LogFinding) -> None:
        if len(rep.findings) < max_findings:
            rep.findings.append(f)

    with ws.lock:
        have = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        if not {"events", "log_items"} <= have:
            add(LogFinding("chain", "this workspace has no event log (it was created before veribench kept one): "
                                    "none of its rows can be checked; open it once read-write to start the log"))
            return rep
        try:
            events = read_events(con)
        except InputError as bad:
            add(LogFinding("chain", str(bad), table="events"))
            return rep
        rep.events = len(events)
        found, rep.head = check_chain(events)
        for f in found:
            add(f)
        # item digests
        groups: dict[tuple[int, str], list[str]] = {}
        for rows in _chunks(con, "SELECT seq, kind, leaf FROM log_items"):
            for s, k, leaf in rows:
                groups.setdefault((int(s), k), []).append(leaf)
        e: dict[str, Any] | None  # an event; below, also the event a row looks up (None: none logged)
        for e in events:
            for kind in ITEM_KINDS:
                n = e["payload"].get(f"n_{kind}")
                if n is None:
                    continue
                leaves = groups.pop((e["seq"], kind), [])
                if len(leaves) != n or items_digest(leaves) != e["payload"].get(f"{kind}_sha256"):
                    add(LogFinding("items", f"{kind} fingerprints differ from the event's digest "
                                            f"({len(leaves)} stored, {n} logged)", e["seq"], "log_items"))
        for (s, k) in groups:
            add(LogFinding("items", f"{k} fingerprints stored for an event that logged none", s, "log_items"))
        for _kind, msg, _want, _got in detached_problems(events, con.execute(
                "SELECT kind, seq, leaf FROM log_items WHERE k1 IS NULL").fetchall()):
            add(LogFinding("items", msg, table="log_items"))
        for q, kind, k1 in con.execute(
                "SELECT r.seq, r.kind, r.k1 FROM replaced_leaves r WHERE sha256(r.fields) <> r.leaf OR NOT EXISTS "
                "(SELECT 1 FROM log_items li WHERE li.seq = r.seq AND li.kind = r.kind AND li.k1 = r.k1 AND li.k2 IS "
                "NOT DISTINCT FROM r.k2 AND li.leaf = r.leaf) ORDER BY 1, 2, 3 LIMIT 5").fetchall():
            add(LogFinding("items", f"the kept text of a replaced {kind} is not a logged fingerprint of its key",
                           int(q), "replaced_leaves", str(k1)[:40]))

        unfinished = dict(con.execute(
            "SELECT import_id, kind FROM imports WHERE json_extract_string(report, '$.status') = 'in_progress'"
        ).fetchall())
        held: dict[str, int] = {}  # documents of unfinished imports, by import
        # which import first logged each document: its row must name it (publish reaches a
        # document through its import)
        import_of = {e["seq"]: e["payload"].get("import_id") for e in events if e["type"] == "import"}
        first_import = {k: import_of[s] for k, s in con.execute(
            "SELECT k1, min(seq) FROM log_items WHERE kind = 'doc' AND k1 IS NOT NULL AND seq IN "
            "(SELECT unnest(?::BIGINT[])) GROUP BY k1", [sorted(import_of)]).fetchall()}
        for kind, table, sql, key, leaf, what, label in _ROW_CHECKS:
            latest = latest_items(con, kind)
            n = 0
            for rows in _chunks(con, sql):
                for r in rows:
                    n += 1
                    got = latest.pop(key(r), None)
                    if got is None and kind == "doc" and r[12] in unfinished:
                        held[r[12]] = held.get(r[12], 0) + 1
                        continue
                    if got is None:
                        add(LogFinding(table, f"{label} is not covered by the log (stored outside a logged write, or "
                                              "before the log existed)", table=table, key=what(r)))
                        continue
                    try:
                        mine = leaf(r)
                    except ValueError as bad:  # a JSON column two readers would read differently
                        add(LogFinding(table, f"{label} holds JSON that is not strict ({bad}): edited behind the log",
                                       got[1], table, what(r)))
                        continue
                    if mine != got[0]:
                        add(LogFinding(table, f"{label} differs from what {_ORIGIN[kind]} logged "
                                              f"({_EDITED[kind]} edited)", got[1], table, what(r)))
                    if kind == "doc" and r[11] is not None and \
                            hashlib.sha256(r[11].encode("utf-8")).hexdigest() != r[1]:
                        add(LogFinding(table, "stored text does not hash to its text_sha256", got[1], table, what(r)))
                    if kind == "doc" and r[0] in first_import and r[12] != first_import[r[0]]:
                        add(LogFinding(table, f"import_id {r[12]!r} is not the import that logged the document "
                                              f"({first_import[r[0]]!r}; import_id edited)", got[1], table, what(r)))
            for k, (_, s_) in latest.items():
                add(LogFinding(table, f"logged {label} is missing from the table (deleted)", s_, table,
                               what(k + (None,) * 2)))
            rep.counts[table] = n
        _check_superseded(con, rep, add)
        for iid in sorted(unfinished):
            add(LogFinding("imports", f"import {iid} ({unfinished[iid]}) has not finished: its {held.get(iid, 0)} "
                                      "documents are not logged yet (interrupted, or still running in another "
                                      "process); the next streamed import removes an interrupted one, or run the "
                                      "import again", table="imports", key=f"import {iid}"))

        # protocols
        commits = {e["payload"].get("protocol_sha256"): e for e in events
                   if e["type"] in ("protocol_commit", "protocol_amend")}
        rows = con.execute("SELECT protocol_hash, name, committed_at, content FROM protocols").fetchall()
        for h, name, at, content in rows:
            e = commits.pop(h, None)
            if e is None:
                add(LogFinding("protocols", "committed protocol has no commit event", table="protocols",
                               key=f"protocol {h[:16]}…"))
                continue
            if utc_text(at) != e["at"]:
                add(LogFinding("protocols", f"committed_at {utc_text(at)} differs from the commit event's time "
                                            f"{e['at']}", e["seq"], "protocols", f"protocol {name}"))
            if name != e["payload"].get("name"):
                add(LogFinding("protocols", f"name {name!r} differs from the committed name "
                                            f"{e['payload'].get('name')!r}", e["seq"], "protocols", f"protocol {h[:16]}…"))
            if content is None or hashlib.sha256(content.encode("utf-8")).hexdigest() != h:
                add(LogFinding("protocols", "stored protocol bytes do not hash to the committed SHA-256", e["seq"],
                               "protocols", f"protocol {name}"))
        for h, e in commits.items():
            add(LogFinding("protocols", "logged protocol commit is missing from the table", e["seq"], "protocols",
                           f"protocol {h[:16] if h else h}…"))
        rep.counts["protocols"] = len(rows)

        # commitment records: each must be the record its commit event re-derives
        has = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'commitments'").fetchone()
        crow = con.execute("SELECT protocol_sha256, record FROM commitments").fetchall() if has[0] else []
        by_hash = {e["payload"].get("protocol_sha256"): e for e in events
                   if e["type"] in ("protocol_commit", "protocol_amend")}
        for h, record in crow:
            e = by_hash.get(h)
            if e is None:
                add(LogFinding("commitments", "commitment record has no commit event", table="commitments",
                               key=f"protocol {str(h)[:16]}…"))
            elif record is not None and record.encode("utf-8") != record_bytes(commitment_record(e)):
                add(LogFinding("commitments", "stored commitment record differs from the one its commit event "
                                              "re-derives (edited)", e["seq"], "commitments", f"protocol {h[:16]}…"))
        rep.counts["commitments"] = len(crow)

        # detector specs: a spec's hash is the SHA-256 of its canonical JSON, and its columns
        # are that JSON's fields (a swapped name or setting would relabel every score of it)
        srows = con.execute("SELECT spec_hash, kind, name, version, settings, spec_json FROM specs").fetchall()
        for h, kind, name, version, settings, sj in srows:
            try:
                sp = Spec.from_json(sj)
                ok = sp.hash == h and (sp.kind, sp.name, sp.version) == (kind, name, version) and \
                    canonical_json(dict(sp.settings)) == canonical_json(loads_strict(settings) if isinstance(
                        settings, str) else (settings or {}))
            except (TypeError, ValueError, KeyError):
                ok = False
            if not ok:
                add(LogFinding("specs", "detector spec row does not match its hash (name, version, settings or "
                                        "spec JSON edited)", table="specs", key=f"spec {str(h)[:16]}…"))
        rep.counts["specs"] = len(srows)

        # runs
        run_events = {e["payload"].get("run_id"): e for e in events if e["type"] == "run"}
        rows = con.execute("SELECT run_id, tag, protocol_hash, results FROM runs").fetchall()
        for run_id, tag, ph, results in rows:
            e = run_events.pop(run_id, None)
            if e is None:
                add(LogFinding("runs", "run has no run event", table="runs", key=f"run {run_id}"))
                continue
            try:
                rs = results_digest(loads_strict(results))
            except (TypeError, ValueError):
                rs = None
            if rs != e["payload"].get("results_sha256"):
                add(LogFinding("runs", "stored results differ from what the run event logged", e["seq"], "runs",
                               f"run {run_id}"))
            if tag != e["payload"].get("tag") or ph != e["payload"].get("protocol_sha256"):
                add(LogFinding("runs", "tag or protocol hash differs from the run event", e["seq"], "runs",
                               f"run {run_id}"))
            if "rows_sha256" in e["payload"]:  # runs logged before the rows' digest was kept have none
                n_rows, rows_sha = run_rows_digest(con, run_id)
                if (n_rows, rows_sha) != (e["payload"].get("n_rows"), e["payload"]["rows_sha256"]):
                    add(LogFinding("run_rows", f"per-document rows differ from what the run event logged ({n_rows} "
                                               f"stored, {e['payload'].get('n_rows')} logged; rows edited, added "
                                               "or deleted)", e["seq"], "run_rows", f"run {run_id}"))
        for run_id, e in run_events.items():
            add(LogFinding("runs", "logged run is missing from the table", e["seq"], "runs", f"run {run_id}"))
        for (orphan,) in con.execute("SELECT DISTINCT run_id FROM run_rows WHERE run_id NOT IN (SELECT run_id FROM "
                                     "runs) ORDER BY 1").fetchall():
            add(LogFinding("run_rows", "per-document rows of a run that is not stored", table="run_rows",
                           key=f"run {orphan}"))
        rep.counts["runs"] = len(rows)

        # imports
        imp_events = {e["payload"].get("import_id"): e for e in events if e["type"] == "import"}
        rows = con.execute("SELECT import_id, kind FROM imports WHERE import_id NOT IN (SELECT unnest(?::VARCHAR[]))",
                           [sorted(unfinished)]).fetchall()
        for iid, kind in rows:
            e = imp_events.pop(iid, None)
            if e is None:
                add(LogFinding("imports", "import has no import event", table="imports", key=f"import {iid}"))
            elif kind != e["payload"].get("kind"):
                add(LogFinding("imports", "import kind differs from its event", e["seq"], "imports", f"import {iid}"))
        for iid, e in imp_events.items():
            add(LogFinding("imports", "logged import is missing from the table", e["seq"], "imports",
                           f"import {iid}"))
        rep.counts["imports"] = len(rows)
    return rep
