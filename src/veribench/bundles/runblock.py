"""The ``run`` block of a bundle's results and its labels, re-derived from the log and the protocol.

``results.json`` is hashed into the run event, but the run event is the last event of a
bundle's log: anyone can rewrite it and re-hash it, so it vouches for nothing the rest of
the bundle does not. Every key of ``results["run"]`` therefore either follows from the
log, the committed protocol and the rows, or is refused:

=============================  ===============================================================
key                            where it comes from (the check that holds it)
=============================  ===============================================================
``tag``                        the committed protocol's ``[protocol] tag`` (``evaluate`` takes
                               it from there): here, with the run event's ``tag``
``run_id``                     the run event's; ``<tag>-<YYYYMMDDTHHMMSS>Z-<6 hex>``, its time
                               at most :data:`RUN_ID_SLACK_S` before ``created_at``: here
``created_at``                 the run event's; UTC to the second, no later than the run
                               event and no earlier than its chain head's event (less
                               :data:`CLOCK_SLACK_S`): here
``veribench_version``          a version (:data:`veribench.bundles.layout.VERSION`, no free
                               text): here
``protocol.path``              a file name some commitment of the protocol id logged: here
``protocol.declared_split``    the protocol's split rule: here
``chain_head``                 the run event's (``commitment``)
``protocol.hash``              the run event's and the manifest's (``commitment``)
``protocol.`` id, version,     the commit events, the runs and timestamps of the log
name, commit_seq,              (``commitment``, ``amendments``)
commit_event_hash,
committed_at, amendments,
declared_new_protocol,
prior_protocol_ids,
earlier_runs, timestamp
``protocol.scores_*``          the rows and the log (``timing``)
every other key                recomputed by :func:`veribench.evaluate.results.compute_results`
=============================  ===============================================================

A key in none of these is not re-derived by anything, and is refused (:func:`expected_run`
leaves it out, so the re-derived results lack it). :func:`label_problems` is shared by
``publish`` (which refuses such a run with one line) and ``verify``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from veribench.bundles import layout
from veribench.store import events as ev

#: Keys of ``results["run"]`` that ``evaluate`` records and ``compute_results`` does not recompute.
RUN_KEYS = ("run_id", "tag", "created_at", "veribench_version", "protocol", "chain_head")
#: Keys of ``results["run"]["protocol"]`` (``evaluate`` and :func:`veribench.store.commitments.run_integrity`).
PROTOCOL_KEYS = ("name", "path", "hash", "committed_at", "amendments", "declared_split", "id", "version",
                 "commit_seq", "commit_event_hash", "scores_total", "scores_logged_before_commit",
                 "scores_dated_before_commit", "scores_before_commit", "declared_new_protocol",
                 "prior_protocol_ids", "earlier_runs", "timestamp")
#: Seconds ``created_at`` may follow the time in the run id (both read from one clock, one line apart).
RUN_ID_SLACK_S = 60
#: Seconds ``created_at`` may precede the chain head's event (a workspace clock set back: the log holds its time).
CLOCK_SLACK_S = 300
_CREATED = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\+00:00")


@dataclass
class Problem:
    """A label of the run that the log and the protocol do not give: where, what, expected, got."""

    field: str
    message: str
    expected: Any = None
    got: Any = None


def run_id_pattern(tag: str) -> re.Pattern[str]:
    """The run ids ``evaluate`` gives a run of ``tag`` (group 1: the time, UTC)."""
    return re.compile(re.escape(tag) + r"-([0-9]{8}T[0-9]{6})Z-[0-9a-f]{6}")


def label_problems(run: dict[str, Any], run_event: dict[str, Any], proto: Any, logged_files: Sequence[Any],
                   events: Sequence[dict[str, Any]]) -> list[Problem]:
    """What in the run's labels (tag, run id, dates, version, protocol file name) the log and the
    committed protocol do not give (see the module docstring).

    Args:
        run: ``results["run"]`` as published or stored.
        run_event: the run's ``run`` event.
        proto: the run's committed protocol (its ``tag``).
        logged_files: the file names (``file``) the commit events of the protocol id logged.
        events: the log up to the run's event (for the chain head's time).

    Returns:
        The problems, in the order of the keys (empty when every label follows).
    """
    p = run_event.get("payload") or {}
    out: list[Problem] = []
    tag = str(proto.tag)
    for where, got in (("run event tag", p.get("tag")), ("run.tag", run.get("tag"))):
        if got != tag:
            out.append(Problem(where, "the run's tag is not the committed protocol's [protocol] tag", tag, got))
    rid = p.get("run_id")
    m = run_id_pattern(tag).fullmatch(rid) if isinstance(rid, str) else None
    if m is None:
        out.append(Problem("run event run_id", "not a run id evaluate gives a run of the protocol's tag "
                                               "(<tag>-<YYYYMMDDTHHMMSS>Z-<6 hex digits>)", f"{tag}-…", rid))
    if run.get("run_id") != rid:
        out.append(Problem("run.run_id", "differs from the run event's", rid, run.get("run_id")))
    ca = p.get("created_at")
    if run.get("created_at") != ca:
        out.append(Problem("run.created_at", "differs from the run event's", ca, run.get("created_at")))
    if not (isinstance(ca, str) and _CREATED.fullmatch(ca)):
        out.append(Problem("run event created_at", "not a UTC time to the second", "YYYY-MM-DDTHH:MM:SS+00:00", ca))
    else:
        t = datetime.fromisoformat(ca)
        at = ev.parse_utc(str(run_event.get("at")))
        if t > at:
            out.append(Problem("run event created_at", "later than the run event that logged it", f"<= {at}", ca))
        head = next((e for e in events if e.get("seq") == (p.get("chain_head") or {}).get("seq")), None)
        if head is not None and isinstance(head.get("at"), str) and \
                t < ev.parse_utc(head["at"]) - timedelta(seconds=CLOCK_SLACK_S):
            out.append(Problem("run event created_at", "earlier than the chain head the run ran at (backdated)",
                               f">= {head['at']}", ca))
        if m is not None:
            rt = datetime.strptime(m.group(1), "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
            if not (rt <= t <= rt + timedelta(seconds=RUN_ID_SLACK_S)):
                out.append(Problem("run event run_id", "the time in the run id is not the run's creation time",
                                   ca, rid))
    v = run.get("veribench_version")
    if "veribench_version" in run and not (isinstance(v, str) and layout.VERSION.fullmatch(v)):
        out.append(Problem("run.veribench_version", "not a veribench version", "a version such as 0.1.0", v))
    path = (run.get("protocol") or {}).get("path")
    if "path" in (run.get("protocol") or {}) and path not in set(logged_files):
        out.append(Problem("run.protocol.path", "a protocol file name no commitment of this protocol id logged",
                           sorted(str(x) for x in set(logged_files) if x is not None), path))
    return out


def expected_run(published: dict[str, Any], run_event: dict[str, Any], proto: Any) -> dict[str, Any]:
    """The ``run`` block to re-derive the results with: in the published key order, each key of
    :data:`RUN_KEYS` / :data:`PROTOCOL_KEYS` present, with the value the log or the protocol
    gives where this module derives it (tag, run id, creation time, split declaration), and
    the published value where another check holds it to the log (the module docstring's
    table: its own findings name a differing value) or :func:`label_problems` refuses it. Any
    other key is left out, so the re-derived results lack it and the ``results`` check names it."""
    p = run_event.get("payload") or {}
    derived = {"tag": str(proto.tag), "run_id": p.get("run_id"), "created_at": p.get("created_at")}
    out: dict[str, Any] = {}
    for k, v in published.items():
        if k not in RUN_KEYS:
            continue
        if k == "protocol" and isinstance(v, dict):
            block = {x: y for x, y in v.items() if x in PROTOCOL_KEYS}
            if "declared_split" in block:
                block["declared_split"] = proto.split_rule != "none"
            out[k] = block
        else:
            out[k] = derived.get(k, v)
    return out
