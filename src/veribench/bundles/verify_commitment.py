"""The ``commitment``, ``amendments`` and ``timestamp`` checks of a detector-run bundle.

``commitment``: the protocol bytes hash to the committed SHA-256; every version of the
protocol id is present and chained by ``supersedes``; the commitment records re-derive
from the log (:mod:`veribench.store.commitments`); the run used the current version; the
run's protocol block agrees with the log. ``amendments``: ``amendments.json`` and the
run's changelog equal the log's; no amendment is dated before the version it supersedes;
each is written in the amended file as logged. ``timestamp``: each RFC 3161 token stamps
its commitment record's exact bytes and agrees with the log, within :data:`CLOCK_SKEW_S`;
its date counts as proven only when its chain ends at a root the verifying user trusts
(``--tsa-root``, or the pinned public list), never at a certificate the bundle carries
(:func:`check_timestamps`, :func:`veribench.commit.tsa.anchor_token`).
Protocol files are parsed as data (:func:`veribench.bundles.snapshot.protocol_from_bytes`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from veribench.bundles import layout
from veribench.bundles.snapshot import protocol_from_bytes
from veribench.bundles.verify_files import Context
from veribench.commit import tsa
from veribench.hashing import sha256_bytes
from veribench.store import events as ev
from veribench.store.commitments import (
    changelog_of,
    commitment_record,
    earlier_runs_of,
    heads_of,
    record_bytes,
    versions_of,
)

#: Clock allowance between an authority's time and the workspace's (seconds).
CLOCK_SKEW_S = 5


def check_commitment(c: Context, events: list[dict[str, Any]], run_ev: dict[str, Any], m: dict[str, Any],
                      results: dict[str, Any]) -> tuple[Any, dict[str, Any], list[dict[str, Any]]] | None:
    """The ``commitment`` check of the run's protocol (see the module docstring).

    Returns:
        ``(protocol, commit event of the run's version, commit events of every version of its
        id in order)``; the protocol is ``None`` when its committed file does not parse. ``None``
        when the run's protocol was never committed in this log.
    """
    run = results.get("run") or {}
    pb = run.get("protocol") or {}
    sha = m.get("protocol_sha256")
    rp = run_ev.get("payload") or {}
    for who, v in (("the run event", rp.get("protocol_sha256")), ("results.json", pb.get("hash"))):
        if v != sha:
            c.fail("commitment", f"protocol SHA-256 in {who} differs from the manifest's",
                   layout.RESULTS if who == "results.json" else layout.EVENTS, "protocol hash", sha, v)
    vs = versions_of(events)
    ve = vs.get(sha)
    if ve is None:
        c.fail("commitment", "the run's protocol was never committed in this log", layout.EVENTS,
               expected=sha, got=None)
        return None
    pid = ve["payload"]["protocol_id"]
    mine = sorted((e for e in vs.values() if e["payload"]["protocol_id"] == pid), key=lambda e: e["seq"])
    first = mine[0]
    if first["type"] != "protocol_commit" or pid != "vbp-" + first["payload"]["protocol_sha256"][:16]:
        c.fail("commitment", "the protocol id is not the one fixed at its first commit", layout.EVENTS,
               f"event {first['seq']}", "vbp-" + first["payload"]["protocol_sha256"][:16], pid)
    proto = None
    for i, e in enumerate(mine):
        p = e["payload"]
        k = p.get("version")
        if k != i + 1:
            c.fail("commitment", "version numbers of the protocol id are not 1, 2, ...", layout.EVENTS,
                   f"event {e['seq']}", i + 1, k)
        if i and p.get("supersedes") != mine[i - 1]["payload"]["protocol_sha256"]:
            c.fail("commitment", "an amendment does not supersede the version before it", layout.EVENTS,
                   f"event {e['seq']}", mine[i - 1]["payload"]["protocol_sha256"], p.get("supersedes"))
        files = [f for f in c.present if re.fullmatch(rf"protocol/v{k}\.(toml|yaml|yml)", f)]
        if len(files) != 1:
            c.fail("commitment", f"protocol version {k} is not in the bundle exactly once", "protocol/",
                   expected=1, got=len(files))
            continue
        raw = c.bytes(files[0], "commitment")
        if raw is not None and sha256_bytes(raw) != p["protocol_sha256"]:
            c.fail("commitment", "protocol bytes do not hash to the committed SHA-256 (the file was changed after "
                                 "its commitment)", files[0], expected=p["protocol_sha256"], got=sha256_bytes(raw))
        rec = c.bytes(f"commitments/v{k}.json", "commitment")
        if rec is not None and rec != record_bytes(commitment_record(e)):
            c.fail("commitment", "the commitment record differs from the one the log's commit event gives",
                   f"commitments/v{k}.json")
        if p["protocol_sha256"] == sha and raw is not None:
            if files[0] != m.get("protocol_file"):
                c.fail("commitment", "the manifest names another protocol file", layout.MANIFEST, "protocol_file",
                       files[0], m.get("protocol_file"))
            try:
                proto = protocol_from_bytes(raw, p.get("file") or files[0])
            except Exception as ex:  # ProtocolError: a committed file veribench cannot read
                c.fail("commitment", f"protocol does not parse: {ex}", files[0])
    head = heads_of([e for e in events if e["seq"] < run_ev["seq"]]).get(pid)
    if head is not None and head["payload"]["protocol_sha256"] != sha:
        c.fail("commitment", "the run used a superseded version: an amendment was committed before the run and "
                             "skipped", layout.EVENTS, f"event {run_ev['seq']}", head["payload"]["protocol_sha256"], sha)
    before = [e for e in events if e["seq"] < run_ev["seq"]]
    stamps = [e for e in before if e["type"] == "timestamp" and e["payload"].get("protocol_sha256") == sha]
    vp = ve["payload"]
    want = {"id": pid, "version": vp.get("version"), "commit_seq": ve["seq"], "commit_event_hash": ve["hash"],
            "committed_at": ve["at"], "name": vp.get("name"),
            "declared_new_protocol": bool(vp.get("declared_new_protocol")),
            "prior_protocol_ids": list(vp.get("prior_protocol_ids") or []),
            "earlier_runs": earlier_runs_of(before, pid),
            "timestamp": ({"authority": stamps[-1]["payload"].get("authority"),
                           "gen_time": stamps[-1]["payload"].get("gen_time"), "seq": stamps[-1]["seq"]}
                          if stamps else None)}
    for k, v in want.items():
        if pb.get(k) != v:
            c.fail("commitment", f"the run's protocol.{k} differs from the log (renamed, re-dated or re-numbered "
                                 "after the fact)", layout.RESULTS, f"run.protocol.{k}", v, pb.get(k))
    if rp.get("protocol_id") != pid:
        c.fail("commitment", "the run event names another protocol id", layout.EVENTS, f"event {run_ev['seq']}", pid,
               rp.get("protocol_id"))
    ch = run.get("chain_head") or {}
    at = next((e for e in events if e["seq"] == ch.get("seq")), None) if ch.get("seq") else None
    if ch.get("seq") == 0 and ch.get("hash") == ev.GENESIS:
        at = {"hash": ev.GENESIS, "seq": 0}
    if at is None or at.get("hash") != ch.get("hash") or not (0 <= ch.get("seq", -1) < run_ev["seq"]):
        c.fail("commitment", "the chain head the run records is not an event before the run", layout.RESULTS,
               "run.chain_head", None, ch)
    if rp.get("chain_head") != ch:
        c.fail("commitment", "the run event records another chain head", layout.EVENTS, f"event {run_ev['seq']}",
               rp.get("chain_head"), ch)
    c.ok("commitment", f"protocol {vp.get('name')!r} (id {pid}, version {vp.get('version')}) hashes to its "
                       f"commitment of {ve['at']}; {len(mine)} version(s)")
    return proto, ve, mine


def check_amendments(c: Context, events: list[dict[str, Any]], ve: dict[str, Any], mine: list[dict[str, Any]],
                      results: dict[str, Any]) -> None:
    """The ``amendments`` check: the changelog up to the run's version (``ve``), as the log
    gives it (:func:`veribench.store.commitments.changelog_of`), against ``amendments.json``,
    the run's results and the amended protocol files; passed with a note when an amendment
    was committed after results existed."""
    pid = ve["payload"]["protocol_id"]
    want = changelog_of(events, pid, upto=ve["seq"])
    got = c.json(layout.AMENDMENTS, "amendments")
    if got is not None and got != want:
        c.fail("amendments", "amendments.json differs from the log's changelog (an amendment was re-dated, "
                             "re-worded, dropped or moved)", layout.AMENDMENTS, expected=want, got=got)
    pub = ((results.get("run") or {}).get("protocol") or {}).get("amendments")
    if pub != want:
        c.fail("amendments", "the run's amendment list differs from the log's changelog", layout.RESULTS,
               "run.protocol.amendments", want, pub)
    by_sha = {e["payload"]["protocol_sha256"]: e for e in mine}
    for a in want:
        sup = by_sha.get(a.get("supersedes"))
        if sup is None:
            continue
        try:
            day = ev.parse_utc(str(a.get("date"))).date()
        except ValueError:
            c.fail("amendments", "amendment date is not a date", layout.EVENTS, f"event {a['seq']}", got=a.get("date"))
            continue
        if day < ev.parse_utc(sup["at"]).date():
            c.fail("amendments", f"backdated amendment: dated {day}, before the version it supersedes was committed "
                                 f"({sup['at'][:10]}, log time)", layout.EVENTS, f"event {a['seq']}",
                   f">= {sup['at'][:10]}", str(day))
        if a.get("committed_at", "") < sup["at"]:
            c.fail("amendments", "amendment logged before the version it supersedes", layout.EVENTS,
                   f"event {a['seq']}")
        # the amended file carries the amendment as logged
        k = next((e["payload"].get("version") for e in mine if e["payload"]["protocol_sha256"] == a["hash"]), None)
        files = [f for f in c.present if re.fullmatch(rf"protocol/v{k}\.(toml|yaml|yml)", f)]
        if files:
            raw = c.bytes(files[0], "amendments")
            if raw is not None:

                try:
                    entries = protocol_from_bytes(raw, files[0]).amendments
                except Exception:
                    entries = []
                if not any(str(x.get("supersedes")) == a.get("supersedes") and str(x.get("date")) == a.get("date")
                           and str(x.get("summary")) == a.get("summary") for x in entries):
                    c.fail("amendments", "the amended protocol file does not carry the amendment as logged", files[0])
    after = sum(1 for a in want if a.get("after_results"))
    c.ok("amendments", f"{len(want)} amendment(s) as logged" + (f"; {after} committed after results existed (shown)"
                                                                 if after else ""),
         status="note" if after else "ok")


def trusted_roots(tsa_roots: Sequence[Any] = ()) -> list[tsa.TrustedRoots]:
    """The roots a verifier trusts, in order: those the user supplied (``tsa_roots``: each a
    :class:`veribench.commit.tsa.TrustedRoots`, or bare certificates, named ``--tsa-root``),
    then the pinned public list (:func:`veribench.commit.tsa.public_roots`). Nothing a
    bundle carries is ever among them."""
    sets = [r for r in tsa_roots if isinstance(r, tsa.TrustedRoots)]
    bare = tuple(r for r in tsa_roots if not isinstance(r, tsa.TrustedRoots))
    if bare:
        sets.append(tsa.TrustedRoots("--tsa-root", bare))
    return [*sets, tsa.public_roots()]


#: The verdict on a token whose chain ends at no root the verifying user trusts.
NOT_PROVEN = "token present, authority not trusted: the date is NOT proven"


def check_timestamps(c: Context, events: list[dict[str, Any]], mine: list[dict[str, Any]],
                     tsa_roots: Sequence[Any]) -> None:
    """The ``timestamp`` check of every version's token (``commitments/vK.tsr``).

    Each token must stamp its commitment record's exact bytes, agree with the log (its
    ``timestamp`` event, the same ``gen_time``, not before its commit event, not logged
    before the authority issued it, within :data:`CLOCK_SKEW_S`) and, when the bundle
    carries the authority's certificate (``vK.roots.pem``), verify against it; otherwise
    the check fails. Whether the date is *proven* is a separate verdict
    (:func:`veribench.commit.tsa.anchor_token`): only when the token's chain ends at a root
    the verifying user trusts (:func:`trusted_roots`: ``--tsa-root`` files, then the pinned
    public list named with its version). A certificate carried in the bundle is information,
    never trust: a token that no trusted root anchors gives status ``note`` with
    :data:`NOT_PROVEN`, never ``ok``. Status ``none`` when the bundle holds no token and the
    log records none. Token or certificate files of a version the log does not define, and
    a certificate file without its token, fail.
    """
    trusted = trusted_roots(tsa_roots)
    known = {e["payload"].get("version") for e in mine}
    for rel in sorted(c.present):
        m = re.fullmatch(r"commitments/v([1-9][0-9]*)\.(tsr|roots\.pem)", rel)
        if m is None:
            continue
        k = int(m.group(1))
        if k not in known:
            c.fail("timestamp", f"a token or certificate of protocol version {k}, which the log does not define", rel)
        elif m.group(2) == "roots.pem" and not c.has(f"commitments/v{k}.tsr"):
            c.fail("timestamp", "an authority certificate without its token", rel)
    anchors: list[dict[str, Any]] = []
    for e in mine:
        k = e["payload"].get("version")
        sha = e["payload"]["protocol_sha256"]
        stamps = [x for x in events if x["type"] == "timestamp" and x["payload"].get("protocol_sha256") == sha]
        rel = f"commitments/v{k}.tsr"
        if not c.has(rel):
            if stamps:
                c.fail("timestamp", "the log records a timestamp token that the bundle lacks", rel)
            continue
        token = c.bytes(rel, "timestamp")
        rec = c.bytes(f"commitments/v{k}.json", "timestamp")
        if token is None or rec is None:
            continue
        carried: list[Any] = []
        pem_rel = f"commitments/v{k}.roots.pem"
        if c.has(pem_rel):
            pem = c.bytes(pem_rel, "timestamp")
            try:
                carried = tsa.load_certificates(pem or b"", pem_rel)
            except tsa.TimestampError as ex:
                c.fail("timestamp", str(ex), pem_rel)
                continue
        try:
            a = tsa.anchor_token(token, rec, trusted, carried)
        except tsa.TimestampError as ex:
            c.fail("timestamp", str(ex), rel)
            continue
        info = a.info
        st = next((x for x in stamps if x["payload"].get("token_sha256") == sha256_bytes(token)), None)
        if st is None:
            c.fail("timestamp", "no timestamp event of the log records this token", rel)
            continue
        if st["payload"].get("gen_time") != info.gen_time:
            c.fail("timestamp", "the token's time differs from the one logged", rel, "gen_time",
                   st["payload"].get("gen_time"), info.gen_time)
        g = tsa.gen_time(info)
        skew = timedelta(seconds=CLOCK_SKEW_S)
        if g + skew < ev.parse_utc(e["at"]):
            c.fail("timestamp", "the token predates the commit event it stamps (the log's time was moved)", rel,
                   "gen_time", f">= {e['at']}", info.gen_time)
        if ev.parse_utc(st["at"]) + skew < g:
            c.fail("timestamp", "the log records the token before the authority issued it (events backdated)",
                   layout.EVENTS, f"event {st['seq']}", f">= {info.gen_time}", st["at"])
        who = st["payload"].get("authority") or "the authority"
        anchors.append({"version": k, "file": rel, "authority": who, **a.to_dict()})
        if a.proven:
            c.r.notes.append(f"version {k} is timestamped by {info.signer or who} at {info.gen_time}: its chain ends "
                             f"at {a.root or 'a root'} ({a.trusted_by}; sha256 {(a.root_sha256 or '-')[:16]}…)")
        else:
            c.r.notes.append(
                f"version {k}: token from {who} at {info.gen_time} (signer {info.signer or 'not named'}); its chain "
                f"ends at no root you trust ({'; '.join(a.consulted)}); {pem_rel if carried else 'a certificate'} "
                "carried in a bundle is information, never trust: the date is NOT proven (pass --tsa-root FILE with "
                "the authority's root certificate if you trust that authority)")
    if any(f.check == "timestamp" for f in c.r.failures):
        return
    unproven = [x for x in anchors if not x["proven"]]
    if unproven:
        c.ok("timestamp", f"{NOT_PROVEN} (version(s) {', '.join(str(x['version']) for x in unproven)}: chain ends "
                          f"at no root of {'; '.join(unproven[0]['consulted'])}); {len(anchors)} RFC 3161 token(s) "
                          "stamp their commitment records exactly", status="note", anchors=anchors)
    elif anchors:
        by = sorted({str(x["trusted_by"]) for x in anchors})
        c.ok("timestamp", f"{len(anchors)} RFC 3161 token(s) stamp their commitment records exactly and verify up "
                          f"to a root you trust ({'; '.join(by)})", anchors=anchors)
    else:
        c.ok("timestamp", "no timestamp token in this bundle (the commitment rests on the event log)", status="none")
