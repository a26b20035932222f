"""What every output of a run says first: is this pre-registered, and what changed after results?

One function turns a run's ``results.run.protocol`` block (written by
:func:`veribench.store.commitments.run_integrity`) into the statements the terminal,
``tables.md``, the report site and the bundle's ``README.md`` all show at the top:

- how many of the run's scores predate the protocol commitment (by log order or by scan
  date), so a commitment made after scanning never reads as pre-registration;
- which amendments were committed after results existed under the same protocol id;
- the earlier runs under the same protocol id, each with the SHA-256 of its results;
- a new protocol declared beside runs of another one;
- the arm rules' relaxations by the protocol, and how many arm-A texts are undated
  (:mod:`veribench.protocol.arm_rules`; ``results.run.arm_rules``);
- whether an RFC 3161 token was logged for the commitment; the date it states is never shown
  as proven here (only `veribench verify` with a root the user trusts proves it).
"""

from __future__ import annotations

from typing import Any

#: The caveat every output keeps while nothing it shows proves the commitment's date.
LOG_ALONE = "the commitment's date rests on this workspace's event log alone"
#: Why a token named in results, tables, a README or a report proves nothing by itself: only
#: the verifier can anchor it (:func:`veribench.bundles.verify_commitment.check_timestamps`).
UNANCHORED = (f"until `veribench verify` finds that the token's certificate chain ends at a root you trust "
              f"(`--tsa-root FILE`, or the public list it names), {LOG_ALONE} (a certificate carried with the "
              "token is never trusted).")


def facts(results: dict[str, Any]) -> dict[str, Any]:
    """The integrity facts of a run (all present keys of the protocol block, with defaults).

    ``status`` is ``"pre-registered"`` (every score logged and dated after the commit),
    ``"not pre-registered"`` (some predate it), ``"no protocol"`` or ``"unknown"`` (a run
    recorded before veribench kept an event log).
    """
    run = results.get("run") or {}
    p = run.get("protocol") or {}
    out = {
        "protocol_id": p.get("id"), "protocol_hash": p.get("hash"), "committed_at": p.get("committed_at"),
        "scores_total": p.get("scores_total"), "scores_before_commit": p.get("scores_before_commit"),
        "scores_logged_before_commit": p.get("scores_logged_before_commit"),
        "scores_dated_before_commit": p.get("scores_dated_before_commit"),
        "amendments": list(p.get("amendments") or []), "earlier_runs": list(p.get("earlier_runs") or []),
        "declared_new_protocol": bool(p.get("declared_new_protocol")),
        "prior_protocol_ids": list(p.get("prior_protocol_ids") or []), "timestamp": p.get("timestamp"),
        "chain_head": run.get("chain_head"),
    }
    if not p.get("hash"):
        out["status"] = "no protocol"
    elif out["scores_before_commit"] is None:
        out["status"] = "unknown"
    elif out["scores_before_commit"] > 0:
        out["status"] = "not pre-registered"
    else:
        out["status"] = "pre-registered"
    out["amended_after_results"] = [a for a in out["amendments"] if a.get("after_results")]
    return out


def lines(results: dict[str, Any]) -> list[str]:
    """The statements, most important first (plain text, one per line)."""
    f = facts(results)
    out: list[str] = []
    if f["status"] == "no protocol":
        out.append("NOT PRE-REGISTERED: no committed protocol; the default rules were applied after the scores existed.")
    elif f["status"] == "unknown":
        out.append("PRE-REGISTRATION UNKNOWN: this run was recorded without an event log; when its scores were taken "
                   "relative to the commitment cannot be shown.")
    elif f["status"] == "not pre-registered":
        n, tot = f["scores_before_commit"], f["scores_total"]
        out.append(f"NOT PRE-REGISTERED: {n:,} of {tot:,} scores predate the protocol commitment of "
                   f"{f['committed_at']} ({f['scores_logged_before_commit']:,} were logged before it, "
                   f"{f['scores_dated_before_commit']:,} carry a scan date before it).")
    else:
        out.append(f"Pre-registered: all {f['scores_total']:,} scores were logged and dated after the protocol "
                   f"commitment of {f['committed_at']}.")
    for a in f["amended_after_results"]:
        out.append(f"AMENDED AFTER RESULTS: version {a.get('version')} ({a.get('hash', '')[:12]}…, committed "
                   f"{a.get('committed_at')}, file date {a.get('date')}) was committed after run(s) "
                   f"{', '.join(a.get('runs_before') or [])} existed: {a.get('summary')}")
    for a in f["amendments"]:
        if a.get("renamed_from"):
            out.append(f"Renamed: protocol id {f['protocol_id']} was renamed from {a['renamed_from']!r} to "
                       f"{a.get('name')!r} by amendment version {a.get('version')}.")
    if f["declared_new_protocol"]:
        out.append(f"DECLARED NEW PROTOCOL: committed while runs of {', '.join(f['prior_protocol_ids'])} existed; "
                   "it is not an amendment of them.")
    for r in f["earlier_runs"]:
        out.append(f"Earlier run under protocol id {f['protocol_id']}: {r.get('run_id')} (tag {r.get('tag')}, protocol "
                   f"{(r.get('protocol_sha256') or '')[:12]}…, results sha256 {r.get('results_sha256')}).")
    out.extend(arm_rule_lines(results))
    if f["status"] not in ("no protocol",):
        ts = f["timestamp"]
        if ts:
            out.append(f"Timestamp: RFC 3161 token from {ts.get('authority')} at {ts.get('gen_time')}, a date NOT "
                       f"proven here: {UNANCHORED}")
        elif f["protocol_hash"]:
            out.append(f"No timestamp token: {LOG_ALONE}.")
    return out


def explanation(results: dict[str, Any]) -> list[str]:
    """What a "NOT PRE-REGISTERED" statement means, why this run is in that case, and how
    to pre-register (plain text, one paragraph per item); empty for any other status.

    Shown beside the statement wherever there is room for it (the report site's run page).
    """
    f = facts(results)
    if f["status"] not in ("not pre-registered", "no protocol"):
        return []
    what = ("What it means: a run is pre-registered when its protocol (the detectors, their decision rules, "
            "the split, the metrics and the comparisons) was committed to the workspace's event log before any "
            "of its scores existed, so no choice in it could have been made after seeing the results. These "
            "results may still be right; nothing here shows they were not tuned to the scores.")
    if f["status"] == "no protocol":
        why = ("Why this run is not: it was evaluated with no committed protocol, so the default rules were "
               "chosen when the scores already existed.")
    else:
        why = (f"Why this run is not: {f['scores_before_commit']:,} of its {f['scores_total']:,} scores existed "
               f"before the commitment ({f['scores_dated_before_commit']:,} carry a scan date before it). "
               "Scores imported as recorded outputs were taken before any commitment here, and can never be "
               "pre-registered (for example, the demo's seven commercial detectors are the outputs Liang et al. "
               "recorded in 2023). The scores veribench takes itself after the commitment are pre-registered.")
    how = ("How to pre-register: write the protocol file, run `veribench protocol commit PROTOCOL.toml -w WS` "
           "before any `veribench score` (or an `evaluate` that scores), then score and evaluate; every score "
           "is then logged after the commitment and this line reads \"Pre-registered\".")
    return [what, why, how]


def arm_rule_lines(results: dict[str, Any]) -> list[str]:
    """The arm-rule statements of a run (none for a run recorded before the rules were checked):
    each relaxation the protocol made, and arm A's undated texts."""
    a = (results.get("run") or {}).get("arm_rules")
    if not a:
        return []
    out = []
    if a.get("statement"):
        out.append(f"ARM RULES RELAXED by the protocol's [arm_rules]: {a['statement']}.")
    n, tot = a.get("arm_a_undated"), a.get("arm_a_texts") or 0
    if n is None and tot:
        out.append(f"ARM-A DATES NOT COUNTED: {a.get('arm_a_undated_reason')}.")
    elif n:
        out.append(f"UNDATED ARM-A TEXTS: {n:,} of {tot:,} arm-A texts have no date and no declared date bound "
                   "(stored as \"date unknown\"); they are not shown to predate 2022.")
    elif tot:
        out.append(f"Arm A dates: all {tot:,} arm-A texts carry a date or their corpus's declared date bound.")
    return out


def is_alert(line: str) -> bool:
    """A statement that qualifies the results (shown in red): its label is upper case."""
    head = line.split(":", 1)[0]
    return head.isupper()


def markdown(results: dict[str, Any]) -> list[str]:
    """The statements as a Markdown block quote (for ``tables.md`` and ``README.md``)."""
    return ["> **Integrity**", ">"] + [f"> - {x}" for x in lines(results)] + [""]
