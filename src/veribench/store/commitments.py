"""The reading half of protocol commitments: what the event log says was committed, when,
and how it was amended (the writing half is :mod:`veribench.commit`).

The record is the workspace's event log (:mod:`veribench.store.events`), not the
``protocols`` table (a cache anyone can edit). A **commitment record**
(:func:`commitment_record`) is derived from a commit or amend event alone, so a verifier
re-derives it from a bundle's log; a timestamp token stamps its exact bytes
(:func:`record_bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from veribench.errors import ProtocolError
from veribench.hashing import canonical_json
from veribench.protocol.arm_rules import ArmRules
from veribench.protocol.model import Protocol, loads_protocol
from veribench.store import events as ev
from veribench.store.workspace import Workspace

#: Format tag of commitment records.
RECORD_FORMAT = "veribench-commitment/1"


@dataclass
class CommitRecord:
    """A committed protocol version, as the event log has it.

    Attributes:
        hash: SHA-256 of the file's bytes.
        name: the ``[protocol] name`` of this version.
        committed_at: the commit event's time (UTC).
        amendments: the changelog of the protocol id up to this version (see :func:`changelog`).
        new: True when this call committed it.
        protocol_id: the stable id fixed at the first commit.
        seq: the commit event's sequence number; ``event_hash`` its chain hash.
        version: 1 for the first commit, +1 per amendment.
        record_path: where the commitment record was written (new commits).
        timestamp: the checked token's facts (:class:`veribench.commit.tsa.TokenInfo` as a dict), if any.
    """

    hash: str
    name: str
    committed_at: datetime
    amendments: list[dict[str, Any]]
    new: bool = False
    protocol_id: str | None = None
    seq: int | None = None
    event_hash: str | None = None
    version: int = 1
    record_path: Path | None = None
    timestamp: dict[str, Any] | None = None
    tag: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    #: Sample-size warnings for the declared comparisons (``veribench.evaluate.design.design_check``).
    warnings: list[str] = field(default_factory=list)


# -- the versions the log knows ----------------------------------------------------------------

def versions_of(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every protocol version in ``events`` (commit and amend events), by SHA-256."""
    return {e["payload"]["protocol_sha256"]: e for e in events if e["type"] in ("protocol_commit", "protocol_amend")}


def versions(con: Any, upto: int | None = None) -> dict[str, dict[str, Any]]:
    """Every committed protocol version, by SHA-256: the commit/amend event plus its payload."""
    return versions_of(ev.read_events(con, upto=upto, types=("protocol_commit", "protocol_amend")))


def heads_of(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The latest version event of each protocol id in ``events``."""
    out: dict[str, dict[str, Any]] = {}
    for e in versions_of(events).values():
        pid = e["payload"]["protocol_id"]
        if pid not in out or e["seq"] > out[pid]["seq"]:
            out[pid] = e
    return out


def heads(con: Any, upto: int | None = None) -> dict[str, dict[str, Any]]:
    """The current (latest) version event of each protocol id."""
    return heads_of(ev.read_events(con, upto=upto, types=("protocol_commit", "protocol_amend")))


def record_of(e: dict[str, Any], amendments: list[dict[str, Any]]) -> CommitRecord:
    p = e["payload"]
    return CommitRecord(hash=p["protocol_sha256"], name=p["name"], committed_at=ev.parse_utc(e["at"]),
                        amendments=amendments, protocol_id=p["protocol_id"], seq=e["seq"], event_hash=e["hash"],
                        version=int(p.get("version", 1)), tag=p.get("tag"), payload=p)


def changelog_of(events: list[dict[str, Any]], protocol_id: str, upto: int | None = None) -> list[dict[str, Any]]:
    """The amendments of ``protocol_id`` in ``events`` (up to ``seq`` ``upto``), in log order,
    each with when it was logged and whether results already existed under the protocol
    id (``after_results``: a run event of the id precedes it).

    Entries: ``{seq, committed_at, date, summary, supersedes, hash, name, renamed_from,
    after_results, runs_before}`` (``date`` is the file's claim, ``committed_at`` the log's).
    """
    evs = [e for e in events if upto is None or e["seq"] <= upto]
    vs = sorted((e for e in versions_of(evs).values() if e["payload"]["protocol_id"] == protocol_id),
                key=lambda e: e["seq"])
    runs = [e for e in evs if e["type"] == "run" and e["payload"].get("protocol_id") == protocol_id]
    out, prev_name = [], None
    for e in vs:
        p = e["payload"]
        if e["type"] == "protocol_amend":
            a = p.get("amendment") or {}
            before = [r["payload"]["run_id"] for r in runs if r["seq"] < e["seq"]]
            out.append({"seq": e["seq"], "committed_at": e["at"], "date": a.get("date"), "summary": a.get("summary"),
                        "supersedes": p.get("supersedes"), "hash": p["protocol_sha256"], "name": p["name"],
                        "version": p.get("version"), "renamed_from": prev_name if prev_name != p["name"] else None,
                        "after_results": bool(before), "runs_before": before})
        prev_name = p["name"]
    return out


def changelog(con: Any, protocol_id: str, upto: int | None = None) -> list[dict[str, Any]]:
    """:func:`changelog_of` over the workspace's log."""
    return changelog_of(ev.read_events(con, upto=upto, types=("protocol_commit", "protocol_amend", "run")),
                        protocol_id)


def earlier_runs_of(events: list[dict[str, Any]], protocol_id: str | None) -> list[dict[str, Any]]:
    """The run events of ``protocol_id`` in ``events``, as listed beside every later run."""
    return [{"run_id": e["payload"]["run_id"], "tag": e["payload"].get("tag"),
             "protocol_sha256": e["payload"].get("protocol_sha256"), "logged_at": e["at"], "seq": e["seq"],
             "results_sha256": e["payload"].get("results_sha256")}
            for e in events if e["type"] == "run" and e["payload"].get("protocol_id") == protocol_id]


def lookup(ws: Workspace, protocol_hash: str) -> CommitRecord | None:
    """The commit record of ``protocol_hash`` from the event log, or None if never committed."""
    with ws.lock:
        e = versions(ws.con).get(protocol_hash)
        if e is None:
            return None
        return record_of(e, changelog(ws.con, e["payload"]["protocol_id"], upto=e["seq"]))


# -- the commitment record -------------------------------------------------------------------

def commitment_record(e: dict[str, Any]) -> dict[str, Any]:
    """The record to publish for a commit/amend event (derived from the event alone, so a
    verifier re-derives it from a bundle's log)."""
    p = e["payload"]
    return {"format": RECORD_FORMAT, "protocol_id": p["protocol_id"], "protocol_sha256": p["protocol_sha256"],
            "name": p["name"], "tag": p.get("tag"), "version": p.get("version", 1), "supersedes": p.get("supersedes"),
            "committed_at": e["at"], "event": {"seq": e["seq"], "type": e["type"], "hash": e["hash"]},
            "chain_head": e["hash"], "workspace_before": p.get("before")}


def record_bytes(record: dict[str, Any]) -> bytes:
    """The exact bytes of a commitment record file (canonical JSON and a newline); a
    timestamp token stamps these bytes."""
    return (canonical_json(record) + "\n").encode("utf-8")


def stored_commitment(ws: Workspace, protocol_hash: str) -> tuple[dict[str, Any], bytes | None, bytes | None]:
    """(record, token DER or None, the authority's roots PEM or None) of a committed version.

    The record is re-derived from the event log and must equal the stored one.

    Raises:
        ProtocolError: not committed, or the stored record differs from the log.
    """
    with ws.lock:
        e = versions(ws.con).get(protocol_hash)
        if e is None:
            raise ProtocolError(f"protocol {protocol_hash} is not committed in workspace {ws.path}")
        rec = commitment_record(e)
        rows = ws.con.execute("SELECT record, tsa_token, tsa_roots FROM commitments WHERE protocol_sha256 = ?",
                              [protocol_hash]).fetchall()
        row = rows[0] if rows else None
    if row is not None and row[0] is not None and row[0].encode("utf-8") != record_bytes(rec):
        raise ProtocolError(f"workspace {ws.path}: the stored commitment record of {protocol_hash} differs from the "
                            "event log (run `veribench log verify`)")
    token = bytes(row[1]) if row is not None and row[1] is not None else None
    roots = row[2].encode("utf-8") if row is not None and row[2] else None
    return rec, token, roots


def require_committed(ws: Workspace, proto: Protocol) -> CommitRecord:
    """The commit record of ``proto`` (from the event log).

    Raises:
        ProtocolError: the exact bytes were never committed to this workspace, or this
            version was superseded by an amendment (evaluate with the amended file).
    """
    rec = lookup(ws, proto.hash or "")
    if rec is None:
        raise ProtocolError(
            f"protocol {proto.path} (sha256 {proto.hash}) is not committed in workspace {ws.path}; "
            f"run `veribench protocol commit {proto.path} --workspace {ws.path}` before any scan"
        )
    with ws.lock:
        head = heads(ws.con).get(rec.protocol_id) if rec.protocol_id is not None else None
    if head is not None and head["payload"]["protocol_sha256"] != rec.hash:
        a = head["payload"].get("amendment") or {}
        raise ProtocolError(
            f"protocol {proto.path} (sha256 {proto.hash}) was superseded: protocol id {rec.protocol_id} was amended "
            f"at {head['at'][:19]}Z to {head['payload']['protocol_sha256']} ({a.get('summary')!r}); evaluate with "
            "the amended file - a run cannot skip an amendment")
    return rec


# -- what a run records about its commitment -----------------------------------------------

def run_integrity(ws: Workspace, rec: CommitRecord | None, spec_hashes: list[str],
                  doc_table: str = "_sel") -> dict[str, Any]:
    """The integrity block of a run (merged into ``results.run.protocol``) plus the chain head.

    Counts, over the run's (document, detector) scores: ``scores_total``,
    ``scores_logged_before_commit`` (their scan batch precedes the commit event),
    ``scores_dated_before_commit`` (their scan date precedes the commit time) and
    ``scores_before_commit`` (either). Also the protocol id, the commit event, the
    amendment changelog and the earlier runs under the same protocol id (with their
    results' SHA-256).
    """
    con = ws.con
    with ws.lock:
        head = ev.chain_head(con)
        out: dict[str, Any] = {"chain_head": {"seq": head["seq"], "hash": head["hash"]}}
        if rec is None:
            return out
        row = con.execute(f"""
            WITH li AS (SELECT k1, k2, max(seq) AS seq FROM log_items WHERE kind = 'score' GROUP BY k1, k2)
            SELECT count(*), count(*) FILTER (WHERE li.seq < ?), count(*) FILTER (WHERE c.scanned_at < ?),
                   count(*) FILTER (WHERE li.seq < ? OR c.scanned_at < ? OR li.seq IS NULL)
            FROM {doc_table} x JOIN submissions u ON u.doc_id = x.doc_id
            JOIN scores c ON c.spec_hash = u.spec_hash AND c.text_sha256 = u.submitted_sha256
            LEFT JOIN li ON li.k1 = c.spec_hash AND li.k2 = c.text_sha256
            WHERE u.spec_hash IN (SELECT unnest(?::VARCHAR[]))""",
                          [rec.seq, rec.committed_at, rec.seq, rec.committed_at, spec_hashes]).fetchall()[0]
        runs = earlier_runs_of(ev.read_events(con, types=("run",)), rec.protocol_id)
        stamps = [e for e in ev.read_events(con, types=("timestamp",))
                  if e["payload"].get("protocol_sha256") == rec.hash]
    out.update({
        "id": rec.protocol_id, "version": rec.version, "commit_seq": rec.seq, "commit_event_hash": rec.event_hash,
        "committed_at": ev.utc_text(rec.committed_at),
        "amendments": rec.amendments,
        "scores_total": int(row[0]), "scores_logged_before_commit": int(row[1]),
        "scores_dated_before_commit": int(row[2]), "scores_before_commit": int(row[3]),
        "declared_new_protocol": bool(rec.payload.get("declared_new_protocol")),
        "prior_protocol_ids": list(rec.payload.get("prior_protocol_ids") or []),
        "earlier_runs": runs,
        "timestamp": ({"authority": stamps[-1]["payload"].get("authority"),
                       "gen_time": stamps[-1]["payload"].get("gen_time"), "seq": stamps[-1]["seq"]}
                      if stamps else None),
    })
    return out


# -- the arm rules an import applies --------------------------------------------------------

def committed_arm_rules(con: Any) -> ArmRules:
    """The arm rules an import applies (:mod:`veribench.protocol.arm_rules`): the built-in
    rules, relaxed only where the current version of a protocol committed in this workspace
    relaxes them explicitly (the union over protocol ids; each run re-checks its own
    protocol's rules, :func:`veribench.evaluate.run.check_arm_rules`). The protocol is
    re-read from the bytes stored at its commit; one that no longer parses (a key this
    version does not know) relaxes nothing, so the built-in rules hold for it.
    """
    rules = ArmRules()
    for e in heads(con).values():
        h = e["payload"]["protocol_sha256"]
        row = con.execute("SELECT path, content FROM protocols WHERE protocol_hash = ?", [h]).fetchone()
        if row is None or row[1] is None:
            continue
        try:
            proto = loads_protocol(str(row[1]).encode("utf-8"), str(row[0] or "protocol.toml"))
        except ProtocolError:
            continue
        rules = rules.merged(proto.arm_rules)
    return rules
