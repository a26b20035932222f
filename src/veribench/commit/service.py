"""Committing a protocol before any scan, amending it in the open, and proving both: the
writing half (a service above evaluation; the reading half is :mod:`veribench.store.commitments`).

The record is the workspace's event log (:mod:`veribench.store.events`), not the
``protocols`` table (a cache anyone can edit):

- ``commit`` appends a ``protocol_commit`` event with the SHA-256 of the file's raw
  bytes and a **protocol id** fixed at the first commit (``vbp-`` + the first 16 hex
  digits of that first version's hash). It writes a **commitment record** to publish
  (:func:`commitment_record`: protocol id, SHA-256, version, the commit event and the
  chain head it creates) and, with ``tsa_url``, an RFC 3161 token over the record's
  bytes (:mod:`veribench.commit.tsa`).
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

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from veribench.commit import tsa
from veribench.errors import ProtocolError
from veribench.evaluate.design import design_check
from veribench.evaluate.run import arm_rule_breaches, unresolved_detectors
from veribench.hashing import sha256_bytes
from veribench.protocol.model import load_protocol
from veribench.store import events as ev
from veribench.store import writes
from veribench.store.commitments import (
    CommitRecord,
    changelog,
    commitment_record,
    heads,
    record_bytes,
    record_of,
    stored_commitment,
    versions,
)
from veribench.store.workspace import Workspace


def _day(s: Any) -> date | None:
    if isinstance(s, datetime):
        return s.date()
    if isinstance(s, date):
        return s
    try:
        return datetime.fromisoformat(str(s).replace("Z", "+00:00")).date()
    except ValueError:
        return None


def commit(ws: Workspace, path: str | Path, *, tsa_url: str | None = None, tsa_roots: bytes | None = None,
           new_protocol: bool = False, record_dir: str | Path | None = None, client: Any = None) -> CommitRecord:
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
        ProtocolError: invalid file; a ``[[detectors]]`` entry that names neither a registry
            plug-in nor a stored spec but is close to one ("did you mean") or several stored specs; a changed protocol without an amendment superseding
            the current version; an amendment of an outdated version, backdated or dated
            in the future; a name already committed; an undeclared new protocol beside
            existing runs.
        TimestampError: a URL with credentials in it, or the authority failed or returned a
            token for other bytes. The commit is then not recorded either (with ``tsa_url``
            the commitment and its token are recorded together or not at all); commit
            without ``tsa_url`` and add a token later with :func:`add_timestamp`.
    """
    if tsa_url:
        tsa_url = tsa.check_url(tsa_url)  # before anything: credentials, a query or fragment are refused
    proto = load_protocol(path)
    assert proto.hash is not None
    raw = Path(path).read_bytes()
    with ws.transaction() as con:
        vs = versions(con)
        if proto.hash in vs:
            e = vs[proto.hash]
            existing = record_of(e, changelog(con, e["payload"]["protocol_id"], upto=e["seq"]))
            existing.warnings = design_check(ws, proto)
            return existing
        unresolved = unresolved_detectors(ws, proto)  # caught before anything is fixed, not at evaluate
        if unresolved:
            raise unresolved[0]
        bad = arm_rule_breaches(ws, proto)[0]  # a stored document the file's arm rules refuse
        if bad:
            doc_id, b = bad[0]
            raise ProtocolError(f"protocol {path}: document {doc_id}, field {b.field!r}: {b.message}"
                                + (f" ({len(bad):,} documents break arm rules in all)" if len(bad) > 1 else ""))
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
            today = datetime.now(UTC).date()
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
        e = writes.record_commit(con, etype, payload, content=raw.decode("utf-8"), file_name=Path(path).name,
                                 amendments=proto.amendments,
                                 record=lambda ev_: record_bytes(commitment_record(ev_)))
        rec = record_of(e, changelog(con, pid, upto=e["seq"]))
        if tsa_url:  # inside the commit's transaction: the commitment and its token, or neither
            rec.timestamp = _stamp(con, commitment_record(e), proto.hash, tsa_url, tsa_roots, client)
    rec.new = True
    rec.warnings = design_check(ws, proto)
    rec.record_path = write_record(ws, rec.hash, record_dir)
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


def add_timestamp(ws: Workspace, protocol_hash: str, tsa_url: str, *, tsa_roots: bytes | None = None,
                  record_dir: str | Path | None = None, client: Any = None) -> dict[str, Any]:
    """Stamp a commitment record with an RFC 3161 token from ``tsa_url`` and log it.

    The token is refused unless it stamps exactly the record's bytes with the request's
    nonce (and, with ``tsa_roots``, unless its signature verifies).

    Returns:
        The token's facts (:class:`veribench.commit.tsa.TokenInfo` as a dict).

    Raises:
        TimestampError: see :func:`veribench.commit.tsa.check_token`.
    """
    tsa_url = tsa.check_url(tsa_url)  # requested as given; stored as scheme://host[:port] only
    rec, _, _ = stored_commitment(ws, protocol_hash)
    with ws.transaction() as con:
        info = _stamp(con, rec, protocol_hash, tsa_url, tsa_roots, client)
    write_record(ws, protocol_hash, record_dir)
    return info


def _stamp(con: Any, rec: dict[str, Any], protocol_hash: str, tsa_url: str, tsa_roots: bytes | None,
           client: Any) -> dict[str, Any]:
    """Request a token over the record's bytes, check it, and record it with its ``timestamp``
    event in the caller's transaction (a failure raises before anything is written).

    The event names the authority by host (and port) only; the workspace's ``commitments``
    row keeps ``scheme://host[:port]`` (:func:`veribench.commit.tsa.stored_url`): the URL's
    path, which may hold an account key, is used for the request and never written.
    """
    msg = record_bytes(rec)
    token, nonce = tsa.request_token(tsa_url, msg, client=client)
    roots = tsa.load_certificates(tsa_roots, "the authority's certificate") if tsa_roots else []
    info = tsa.check_token(token, msg, roots=roots, nonce=nonce)
    writes.record_timestamp(con, {
        "protocol_id": rec["protocol_id"], "protocol_sha256": protocol_hash, "record_sha256": sha256_bytes(msg),
        "token_sha256": sha256_bytes(token), "authority": tsa.authority_name(tsa_url), "gen_time": info.gen_time,
        "serial": info.serial, "signature_checked": info.signature_checked},
        token=token, tsa_url=tsa.stored_url(tsa_url), tsa_roots=tsa_roots)
    return info.to_dict()
