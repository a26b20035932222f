"""A careful forger of time-stamped bundles: re-stamp every commitment with another authority.

:func:`restamp` does to a published bundle what someone with their own time-stamp authority
would do: optionally move every event of the log back in time (a backdated commitment),
re-chain the log, re-derive each commitment record, ask the loopback authority
(:mod:`tests.bundles.tsa_server`, served over HTTP on 127.0.0.1) for a token over each record
at the log's (moved) time, put the authority's certificates in the bundle, and re-derive
everything that names an event hash or a time (the run's protocol block and chain head, the
run event's results digest, ``amendments.json``, the tables and the README) before
re-hashing the manifest. What is left for the verifier to refuse is the authority itself.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from tests.bundles.bundle_helpers import events, rehash
from tests.bundles.tsa_server import Authority, TSAServer


def restamp(bundle: Path, authority: Authority, *, carry: bytes | None, days: int = 0) -> None:
    """Re-stamp ``bundle``'s commitments with ``authority``.

    Args:
        carry: the PEM written to each ``commitments/vK.roots.pem`` (None: the files are removed).
        days: move every event of the log (and so each token's date) back by this many days.
    """
    from veribench.bundles.publish import readme
    from veribench.evaluate.tables import write_outputs
    from veribench.hashing import sha256_bytes
    from veribench.store import events as ev
    from veribench.store.commitments import changelog_of, commitment_record, earlier_runs_of, record_bytes

    evs = events(bundle)
    for e in evs:
        e["at"] = ev.utc_text(ev.parse_utc(e["at"]) - timedelta(days=days))
    res = json.loads((bundle / "results.json").read_text(encoding="utf-8"))
    res.pop("files", None)
    run, pb = res["run"], res["run"]["protocol"]
    records: dict[str, bytes] = {}
    versions: dict[str, int] = {}
    prev = ev.GENESIS
    by_seq: dict[int, dict] = {}
    with TSAServer(authority=authority) as server:
        from veribench.commit import tsa

        for e in evs:
            p = e["payload"]
            if e["type"] == "timestamp":
                sha = p["protocol_sha256"]
                at = ev.parse_utc(e["at"])
                authority.clock = lambda at=at: at
                token, _ = tsa.request_token(server.url, records[sha])
                info = tsa.check_token(token, records[sha])
                p.update(token_sha256=sha256_bytes(token), gen_time=info.gen_time, serial=info.serial,
                         authority=tsa.authority_name(server.url), signature_checked=False)
                k = versions[sha]
                (bundle / f"commitments/v{k}.tsr").write_bytes(token)
                pem = bundle / f"commitments/v{k}.roots.pem"
                if carry is None:
                    pem.unlink(missing_ok=True)
                else:
                    pem.write_bytes(carry)
            if e["type"] == "run":
                ch = p.get("chain_head") or {}
                if ch.get("seq") in by_seq:
                    p["chain_head"] = {"seq": ch["seq"], "hash": by_seq[ch["seq"]]["hash"]}
            if e is evs[-1]:  # the published run: its results name hashes and times of the events before it
                before = evs[:-1]
                ve = next(x for x in before if x["type"] in ("protocol_commit", "protocol_amend")
                          and x["payload"]["protocol_sha256"] == pb["hash"])
                run["chain_head"] = {"seq": run["chain_head"]["seq"], "hash": by_seq[run["chain_head"]["seq"]]["hash"]}
                stamps = [x for x in before if x["type"] == "timestamp" and x["payload"]["protocol_sha256"] == pb["hash"]]
                pb.update(commit_event_hash=ve["hash"], committed_at=ve["at"],
                          earlier_runs=earlier_runs_of(before, pb["id"]),
                          amendments=changelog_of(before, pb["id"], upto=ve["seq"]),
                          timestamp={"authority": stamps[-1]["payload"]["authority"],
                                     "gen_time": stamps[-1]["payload"]["gen_time"], "seq": stamps[-1]["seq"]})
                if "chain_head" in pb:
                    pb["chain_head"] = run["chain_head"]
                p["chain_head"] = run["chain_head"]
                p["results_sha256"] = ev.results_digest(res)
                (bundle / "amendments.json").write_text(
                    json.dumps(changelog_of(before, pb["id"], upto=ve["seq"]), indent=1, ensure_ascii=False) + "\n",
                    encoding="utf-8")
            e["payload_sha256"] = ev.payload_digest(p)
            e["prev"] = prev
            e["hash"] = ev.event_hash(e["seq"], e["at"], e["type"], e["payload_sha256"], prev)
            prev = e["hash"]
            by_seq[e["seq"]] = e
            if e["type"] in ("protocol_commit", "protocol_amend"):
                versions[p["protocol_sha256"]] = int(p.get("version", 1))
                records[p["protocol_sha256"]] = record_bytes(commitment_record(e))
                (bundle / f"commitments/v{versions[p['protocol_sha256']]}.json").write_bytes(
                    records[p["protocol_sha256"]])
    (bundle / "log/events.jsonl").write_text("".join(ev.event_line(e) + "\n" for e in evs), encoding="utf-8")
    m = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    write_outputs(res, bundle)
    (bundle / "README.md").write_text(readme(res, m["protocol_file"]), encoding="utf-8")
    m["run_event"] = {"seq": evs[-1]["seq"], "hash": evs[-1]["hash"]}
    (bundle / "manifest.json").write_text(json.dumps(m, indent=1) + "\n", encoding="utf-8")
    rehash(bundle)
