"""Committing a protocol before any scan, amending it in the open, and proving both.

The record is the workspace's event log (:mod:`veribench.store.events`), not the
``protocols`` table (a cache anyone can edit):

- ``commit`` appends a ``protocol_commit`` event with the SHA-256 of the file's raw
  bytes and a **protocol id** fixed at the first commit (``vbp-`` + the first 16 hex
  digits of that first version's hash). It writes a **commitment record** to publish
  (:func:`commitment_record`: protocol id, SHA-256, version, the commit event and the
  chain head it creates) and, with ``tsa_url``, an RFC 3161 token over the record's
  bytes (:mod:`veribench.bundles.tsa`).
- A file whose ``[[amendments]]`` name ``supersedes = <the current version's hash>`` is
  a ``protocol_amend`` of that protocol id, whatever its name (renaming is recorded,
  never a way out). The amendment's ``date`` may not precede the commit of the version
  it supersedes (backdating is refused: log order is the truth), and a superseded
  version can no longer be evaluated (:func:`require_committed`), so every run after an
  amendment runs under it and lists it.
- A new protocol with the name of a committed one is refused; so is a new protocol id
  in a workspace that already holds runs, unless declared (``new_protocol``): the
  declaration is logged and shown beside its results.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import ProtocolError
from ..hashing import canonical_json, sha256_bytes
from ..store import events as ev
from ..store.workspace import Workspace
from .model import Protocol, load_protocol

#: Format tag of commitment records.
RECORD_FORMAT = "veribench-commitment/1"
COMMITMENTS_SQL = """CREATE TABLE IF NOT EXISTS commitments (
    protocol_sha256 VARCHAR PRIMARY KEY, protocol_id VARCHAR, seq BIGINT, record VARCHAR,
    tsa_token BLOB, tsa_url VARCHAR, tsa_roots VARCHAR, token_seq BIGINT)"""


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
        timestamp: the checked token's facts (:class:`veribench.bundles.tsa.TokenInfo` as a dict), if any.
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


def _record(e: dict[str, Any], amendments: list[dict[str, Any]]) -> CommitRecord:
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


def earlier_runs_of(events: list[dict[str, Any]], protocol_id: str) -> list[dict[str, Any]]:
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
        return _record(e, changelog(ws.con, e["payload"]["protocol_id"], upto=e["seq"]))


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


def _day(s: Any) -> date | None:
    if isinstance(s, datetime):
        return s.date()
    if isinstance(s, date):
        return s
    try:
        return datetime.fromisoformat(str(s).replace("Z", "+00:00")).date()
    except ValueError:
        return None


def _ensure_tables(con: Any) -> None:
    con.execute(COMMITMENTS_SQL)


def commit(ws: Workspace, path: str | Path, *, tsa_url: str | None = None, tsa_roots: bytes | None = None,
           new_protocol: bool = False, record_dir: str | Path | None = None) -> CommitRecord:
    """Commit ``path``'s exact bytes. Idempotent for bytes already committed.

    Args:
        ws: the workspace.
        path: the protocol file (TOML or YAML).
        tsa_url: an RFC 3161 timestamp authority to stamp the commitment record.
        tsa_roots: the authority's root certificate(s), PEM; the token's signature is then
            checked at once and the certificate is kept for verifiers.
        new_protocol: declare an unrelated protocol in a workspace that already holds runs.
        record_dir: where to write the commitment record (default ``WS/commitments``).

    Raises:
        ProtocolError: invalid file; a changed protocol without an amendment superseding
            the current version; an amendment of an outdated version, backdated or dated
            in the future; a name already committed; an undeclared new protocol beside
            existing runs.
        TimestampError: the authority failed or returned a token for other bytes (the
            commit itself stands; add the token later with :func:`add_timestamp`).
    """
    from ..evaluate.design import design_check

    proto = load_protocol(path)
    assert proto.hash is not None
    raw = Path(path).read_bytes()
    with ws.transaction() as con:
        _ensure_tables(con)
        vs = versions(con)
        if proto.hash in vs:
            e = vs[proto.hash]
            existing = _record(e, changelog(con, e["payload"]["protocol_id"], upto=e["seq"]))
            existing.warnings = design_check(ws, proto)
            return existing
        hd = heads(con)
        by_sha_id = {sha: e["payload"]["protocol_id"] for sha, e in vs.items()}
        cur = None  # the amendment entry that supersedes a committed version
        for a in proto.amendments:
            s = str(a.get("supersedes") or "")
            if s in by_sha_id:
                if hd[by_sha_id[s]]["payload"]["protocol_sha256"] == s:
                    cur = a
                elif cur is None:
                    cur = a  # of an outdated version: refused below with the current one named
        runs = ev.read_events(con, types=("run",))
        n_scores = con.execute("SELECT count(*) FROM scores").fetchall()[0][0]
        if cur is not None:
            sup = str(cur["supersedes"])
            pid = by_sha_id[sup]
            head = hd[pid]
            if head["payload"]["protocol_sha256"] != sup:
                raise ProtocolError(
                    f"protocol {path}: the amendment supersedes {sup}, but protocol id {pid} has since been amended "
                    f"to {head['payload']['protocol_sha256']} ({head['payload']['name']!r}, "
                    f"{head['at'][:19]}Z); supersede the current version")
            day, sup_day = _day(cur.get("date")), ev.parse_utc(head["at"]).date()
            today = datetime.now(timezone.utc).date()
            if day is None:
                raise ProtocolError(f"protocol {path}, field 'amendments': date {cur.get('date')!r} is not a date")
            if day < sup_day:
                raise ProtocolError(
                    f"protocol {path}, field 'amendments': the amendment is dated {day} but the version it supersedes "
                    f"was committed on {sup_day} (log time); a backdated amendment is refused - date it {today}")
            if day > today:
                raise ProtocolError(f"protocol {path}, field 'amendments': the amendment is dated {day}, in the "
                                    f"future (today is {today} UTC)")
            # an amendment once committed is history: the file may keep it, never reword it
            logged = {a_["supersedes"]: a_ for a_ in changelog(con, pid)}
            for a in proto.amendments:
                old = logged.get(str(a.get("supersedes") or ""))
                if old is not None and (str(a.get("date")), str(a.get("summary"))) != (str(old["date"]),
                                                                                        str(old["summary"])):
                    raise ProtocolError(
                        f"protocol {path}, field 'amendments': the amendment that supersedes {old['supersedes']} "
                        f"was committed on {old['committed_at'][:10]} as ({old['date']}, {old['summary']!r}); a "
                        "committed amendment cannot be reworded or redated (keep it as it was, or leave it out)")
            etype, version = "protocol_amend", int(head["payload"].get("version", 1)) + 1
            amendment = {"date": str(cur.get("date")), "summary": str(cur.get("summary")), "supersedes": sup}
            prior: list[str] = []
        else:
            for e in hd.values():
                names = {v["payload"]["name"] for v in vs.values()
                         if v["payload"]["protocol_id"] == e["payload"]["protocol_id"]}
                if proto.name in names:
                    h = e["payload"]["protocol_sha256"]
                    raise ProtocolError(
                        f"protocol {path}: {proto.name!r} is protocol id {e['payload']['protocol_id']}, committed as "
                        f"{h} on {e['at'][:16].replace('T', ' ')} UTC; changing it needs an [[amendments]] entry with "
                        f"supersedes = \"{h}\", a date and a summary")
            prior = sorted({r["payload"].get("protocol_id") for r in runs if r["payload"].get("protocol_id")})
            if prior and not new_protocol:
                lines = ", ".join(f"{p} ({hd[p]['payload']['name']!r}, current version "
                                  f"{hd[p]['payload']['protocol_sha256']})" for p in prior if p in hd)
                raise ProtocolError(
                    f"protocol {path}: this workspace already holds runs under protocol id(s) {lines}. Committing "
                    f"{proto.name!r} as a new protocol now is not pre-registration for those results: if it changes "
                    f"one of them, add an [[amendments]] entry that supersedes its current version; if it is an "
                    f"unrelated protocol, pass --new-protocol (declared, logged and shown beside its results)")
            etype, version, sup, amendment = "protocol_commit", 1, None, None
            pid = "vbp-" + proto.hash[:16]
        payload = {
            "protocol_id": pid, "protocol_sha256": proto.hash, "name": proto.name, "tag": proto.tag,
            "file": Path(path).name, "bytes": len(raw), "version": version, "supersedes": sup,
            "amendment": amendment, "amendments_in_file": len(proto.amendments),
            "declared_new_protocol": bool(new_protocol and prior), "prior_protocol_ids": prior,
            "before": {"scores": int(n_scores), "runs": len(runs),
                       "runs_under_id": sum(1 for r in runs if r["payload"].get("protocol_id") == pid)},
        }
        e = ev.append_event(con, etype, payload)
        con.execute("INSERT OR REPLACE INTO protocols VALUES (?, ?, ?, ?, ?, ?)",
                    [proto.hash, proto.name, Path(path).name, ev.parse_utc(e["at"]), raw.decode("utf-8"),
                     json.dumps(proto.amendments, default=str)])
        rec_obj = commitment_record(e)
        con.execute("INSERT OR REPLACE INTO commitments VALUES (?, ?, ?, ?, NULL, NULL, NULL, NULL)",
                    [proto.hash, pid, e["seq"], record_bytes(rec_obj).decode("utf-8")])
        rec = _record(e, changelog(con, pid, upto=e["seq"]))
    rec.new = True
    rec.warnings = design_check(ws, proto)
    rec.record_path = write_record(ws, rec.hash, record_dir)
    if tsa_url:
        rec.timestamp = add_timestamp(ws, rec.hash, tsa_url, tsa_roots=tsa_roots, record_dir=record_dir)
    return rec


def _record_name(rec: dict[str, Any]) -> str:
    return f"{rec['protocol_id']}-v{rec['version']}"


def write_record(ws: Workspace, protocol_hash: str, record_dir: str | Path | None = None) -> Path:
    """Write the commitment record of ``protocol_hash`` (and its token, if any) to publish."""
    rec, token, _ = stored_commitment(ws, protocol_hash)
    d = Path(record_dir) if record_dir else ws.path / "commitments"
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{_record_name(rec)}.json"
    p.write_bytes(record_bytes(rec))
    if token:
        (d / f"{_record_name(rec)}.tsr").write_bytes(token)
    return p


def stored_commitment(ws: Workspace, protocol_hash: str) -> tuple[dict[str, Any], bytes | None, bytes | None]:
    """(record, token DER or None, the authority's roots PEM or None) of a committed version.

    The record is re-derived from the event log and must equal the stored one.

    Raises:
        ProtocolError: not committed, or the stored record differs from the log.
    """
    with ws.lock:
        _ensure_tables(ws.con)
        e = versions(ws.con).get(protocol_hash)
        if e is None:
            raise ProtocolError(f"protocol {protocol_hash} is not committed in workspace {ws.path}")
        rec = commitment_record(e)
        row = ws.con.execute("SELECT record, tsa_token, tsa_roots FROM commitments WHERE protocol_sha256 = ?",
                             [protocol_hash]).fetchall()
        row = row[0] if row else None
    if row is not None and row[0] is not None and row[0].encode("utf-8") != record_bytes(rec):
        raise ProtocolError(f"workspace {ws.path}: the stored commitment record of {protocol_hash} differs from the "
                            "event log (run `veribench log verify`)")
    token = bytes(row[1]) if row is not None and row[1] is not None else None
    roots = row[2].encode("utf-8") if row is not None and row[2] else None
    return rec, token, roots


def add_timestamp(ws: Workspace, protocol_hash: str, tsa_url: str, *, tsa_roots: bytes | None = None,
                  record_dir: str | Path | None = None, client: Any = None) -> dict[str, Any]:
    """Stamp a commitment record with an RFC 3161 token from ``tsa_url`` and log it.

    The token is refused unless it stamps exactly the record's bytes with the request's
    nonce (and, with ``tsa_roots``, unless its signature verifies).

    Returns:
        The token's facts (:class:`veribench.bundles.tsa.TokenInfo` as a dict).

    Raises:
        TimestampError: see :func:`veribench.bundles.tsa.check_token`.
    """
    from ..bundles import tsa

    rec, _, _ = stored_commitment(ws, protocol_hash)
    msg = record_bytes(rec)
    token, nonce = tsa.request_token(tsa_url, msg, client=client)
    roots = tsa.load_certificates(tsa_roots, "the authority's certificate") if tsa_roots else []
    info = tsa.check_token(token, msg, roots=roots, nonce=nonce)
    from urllib.parse import urlsplit

    with ws.transaction() as con:
        _ensure_tables(con)
        e = ev.append_event(con, "timestamp", {
            "protocol_id": rec["protocol_id"], "protocol_sha256": protocol_hash, "record_sha256": sha256_bytes(msg),
            "token_sha256": sha256_bytes(token), "authority": urlsplit(tsa_url).netloc, "gen_time": info.gen_time,
            "serial": info.serial, "signature_checked": info.signature_checked})
        con.execute("UPDATE commitments SET tsa_token = ?, tsa_url = ?, tsa_roots = ?, token_seq = ? "
                    "WHERE protocol_sha256 = ?",
                    [token, tsa_url, tsa_roots.decode("utf-8") if tsa_roots else None, e["seq"], protocol_hash])
    write_record(ws, protocol_hash, record_dir)
    return info.to_dict()


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
        head = heads(ws.con).get(rec.protocol_id)
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


def log_run(con: Any, results: dict[str, Any]) -> dict[str, Any]:
    """Append the ``run`` event of a stored run (inside the run's transaction)."""
    run = results.get("run") or {}
    p = run.get("protocol") or {}
    return ev.append_event(con, "run", {
        "run_id": run.get("run_id"), "tag": run.get("tag"), "protocol_id": p.get("id"),
        "protocol_sha256": p.get("hash"), "chain_head": p.get("chain_head") or run.get("chain_head"),
        "results_sha256": ev.results_digest(results), "n_documents": run.get("n_documents"),
        "created_at": run.get("created_at")})
