"""The board as a service, without HTTP: launch, teams and tokens, submissions with signed
receipts, the Ladder before the reveal, the reveal.

A board is a folder holding ``board.toml`` (:mod:`veribench.leaderboard.config`) and, once
launched:

==========================  ==========================================================
``board.sqlite``            the board's database (default; or PostgreSQL): teams, hashed
                            tokens, submissions, receipts, Ladder state (:mod:`.db`)
``workspace/``              an ordinary veribench workspace: the hidden set (corpus
                            ``<board>``), the canaries (corpus ``<board>-canaries``) and each
                            submission's scores as a detector named ``<team>.<n>``
``protocol.toml``           the evaluation protocol, fixed at launch; its SHA-256 is in the
                            commitment
``commitment.json``         the launch commitment (:func:`.setcommit.commitment_record`), public
``texts.jsonl``             ids and texts, no labels: what submitters score
``signing_key.pem``         the Ed25519 receipt key (0600; secret)
``submissions/<sha256>``     every submitted file (either format), named by its SHA-256
``reveal/``                 written by :meth:`Board.reveal`
==========================  ==========================================================

Before the reveal the only number published per team is the headline metric through the
Ladder (:func:`veribench.metrics.ladder.ladder_step`, Blum & Hardt 2015, Algorithm 1); no
per-text feedback is returned. A submission is acknowledged (its receipt returned) only after
its file is on disk (written, fsync'd, renamed, folder fsync'd) and its rows are committed; a
submission received but not yet scored when the process died is scored when the board is next
opened (:meth:`Board.open`).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import hmac
import json
import os
import random
import re
import secrets
import shutil
import tempfile
import tomllib
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

import pyarrow as pa
import pyarrow.parquet as pq
import tomli_w
from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from veribench.bundles.publish import publish
from veribench.bundles.verify import verify_bundle
from veribench.commit import commit, tsa
from veribench.corpus.document import Document
from veribench.corpus.importers import import_scores, read_documents, read_fastdetectgpt, store_import
from veribench.corpus.stored import load_documents
from veribench.errors import InputError, VeribenchError, echo
from veribench.evaluate import evaluate_workspace
from veribench.evaluate.grid import COLUMNS as GRID_COLUMNS
from veribench.hashing import loads_strict, merkle_root, sha256_bytes, text_sha256
from veribench.leaderboard import db, raid_format, receipts, setcommit
from veribench.leaderboard.config import HEADLINE_TARGET_FPR, HEADLINES, PASSWORD_ENV, BoardConfig, load_config
from veribench.leaderboard.files import create_private_file, fsync_folder, make_private, write_durably
from veribench.leaderboard.suppress import SLICE_KEYS, suppress_cells, suppress_slices
from veribench.metrics._base import UndefinedMetricWarning
from veribench.metrics.canary import canary_leak_test
from veribench.metrics.ladder import LADDER_RULE, ladder_step
from veribench.protocol.model import parse_protocol
from veribench.protocol.roles import POSITIVE_CODE, classify
from veribench.protocol.split import calibration_mask
from veribench.store import Workspace
from veribench.store.events import parse_utc

#: Importers a hidden set may be read with: name -> function(path) -> (report, documents).
IMPORTERS: dict[str, Callable[[Path], tuple[Any, list[Document]]]] = {
    "documents": lambda p: read_documents(p),
    "fastdetectgpt": lambda p: read_fastdetectgpt(p),
}
#: Team names: also part of detector names and file names.
TEAM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")
#: Names no team may take: the reveal's folder of all entries together.
RESERVED_TEAMS = frozenset({"all"})
#: The scale every entry's scores are stored on: any real number, higher = more likely AI
#: (RAID's predictions.json convention).
ENTRY_SCALE = "score_higher_ai"
#: Target FPRs of the TPR-at-FPR blocks (RAID reports 5%; the issue asks for 1% and 5%).
TPR_AT_FPR = (0.01, 0.05)

#: Why an entry has no decision rule under RAID's in-sample rule: its Table 1 catch rate, FPR
#: and balanced accuracy are null (``"no decision rule"``, the evaluation's reason); this says why.
NO_DECISION_RULE = "no decision rule: submitted scores have no fixed scale; see TPR at a fixed FPR"

#: Permission bits of the board's public files (commitment.json, commitment.tsr, texts.jsonl; the
#: reveal folder as a whole): anyone may read them.
PUBLIC_MODE = 0o644
#: What the commitment record says when ``board.toml`` names no time-stamping authority.
NO_TSA = "no time-stamp: no TSA configured"

SubmissionFormat = Literal["raid", "veribench"]


class BoardError(VeribenchError):
    """A request the board's state refuses (not launched, already revealed, over the limit)."""


@dataclass(frozen=True)
class TeamInfo:
    """A team as the service hands it out."""

    id: int
    name: str


def _now() -> datetime:
    return datetime.now(UTC)


def _aware(t: datetime) -> datetime:
    """``t`` with a time zone (a TOML local date-time is read as UTC)."""
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def _iso(t: datetime) -> str:
    """``t`` as ISO 8601 UTC (``...Z``); a time without a zone is UTC (as every time the board
    stores is: SQLite gives them back without one), never the server's local time."""
    return _aware(t).astimezone(UTC).isoformat().replace("+00:00", "Z")


def split_salt(set_salt: bytes, declared: str) -> str:
    """The calibration split's salt: HMAC-SHA256 (RFC 2104) of the declared salt
    (``board.toml``'s ``calibration.salt``) keyed by the board's secret set salt, 32 hex
    characters. The board ids are public, so a split salt anyone knows tells every team which
    texts calibrate (a team could then score the calibration texts low and every other text
    high: TPR 1 at any FPR); derived from the secret salt, it stays secret until the reveal
    publishes ``protocol.toml`` (whose SHA-256 the launch commits) and the salt."""
    return hmac.new(set_salt, declared.encode("utf-8"), hashlib.sha256).hexdigest()[:32]


def protocol_text(cfg: BoardConfig, *, name: str, tag: str, detectors: Sequence[str] = (),
                  labels: Mapping[str, str] | None = None, salt: str | None = None) -> str:
    """The board's evaluation protocol (TOML) for ``detectors``: the whole set (corpus
    ``<board>``; the canaries are left out), the declared calibration split or none (RAID's
    in-sample rule), TPR at 1% and 5% FPR, the grid's tags as slices, paired comparisons
    with Holm. At launch it is written with no detectors (its SHA-256 is committed); at the
    reveal each bundle's protocol is this text with the entries' ``[[detectors]]``. ``salt``:
    the split's salt (:func:`split_salt` at launch; default the declared one)."""
    b = cfg.board
    doc: dict[str, Any] = {
        "protocol": {"name": name, "tag": tag,
                     "description": f"leaderboard {b.name}: headline {b.headline_metric} through the Ladder "
                                    f"(eta {b.ladder_eta:g}); "
                                    + ("thresholds by RAID's in-sample rule (fitted on the test set's own human "
                                       f"texts); {NO_DECISION_RULE}" if cfg.in_sample
                                       else "thresholds from the declared calibration split")},
        "selection": {"corpora": [b.name]},
        "metrics": {"tpr_at_fpr": list(TPR_AT_FPR)},
        "tables": {"slices": ["subgroup", "arm", *[f"tag:{t}" for t in b.grid]]},
        "comparisons": {"enabled": True, "correction": "holm"},
    }
    if b.gaps:
        doc["gaps"] = [g.model_dump(exclude_none=True) for g in b.gaps]
    if not cfg.in_sample:
        cal = b.calibration
        assert not isinstance(cal, str)
        doc["split"] = {"rule": "hash", "every": cal.every, "salt": salt or cal.salt, "corpora": [b.name]}
    dets = _detector_entries(cfg.in_sample, detectors, labels)
    if dets:
        doc["detectors"] = dets
    return tomli_w.dumps(doc)


def _detector_entries(in_sample: bool, detectors: Sequence[str],
                      labels: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The protocol's ``[[detectors]]`` of the board's entries: under RAID's in-sample rule no
    decision rule (submitted scores have no fixed scale: catch rate, FPR and balanced accuracy
    are null with :data:`NO_DECISION_RULE`), else a threshold fitted at 5% FPR on the
    calibration split."""
    dets = []
    for d in detectors:
        entry: dict[str, Any] = {"name": d, "label": (labels or {}).get(d, d)}
        if not in_sample:  # in-sample: no rule (NO_DECISION_RULE); rates null with the reason
            entry["rule"] = {"fit": "target_fpr", "target_fpr": 0.05}
        dets.append(entry)
    return dets


def entry_headline(ws: Workspace, protocol: Mapping[str, Any], detector: str, scores: Mapping[str, float], *,
                   metric: str, min_cell_size: int) -> tuple[dict[str, Any], float | None, str | None]:
    """Score one entry as the board does, in workspace ``ws`` (which holds the set): import
    ``scores`` ({doc id: score}, higher = more likely AI) as ``detector``, evaluate it under
    ``protocol`` (the board's protocol as a TOML mapping, without ``[[detectors]]``; the
    entry's rule is added by :func:`_detector_entries`, in-sample when it declares no split)
    with no label-derived warning emitted, and read the headline ``metric``
    (:func:`headline_value`); null with the reason when computed on fewer than
    ``min_cell_size`` human or AI texts. Returns ``(table1 row, headline, reason)``."""
    doc = {**protocol, "detectors": _detector_entries("split" not in protocol, [detector])}
    proto = parse_protocol(doc, path="<board protocol>")
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / f"{detector}.json"
        p.write_text(json.dumps([{"doc_id": k, "score": v} for k, v in sorted(scores.items())], allow_nan=False),
                     encoding="utf-8")
        try:
            import_scores(ws, p, detector=detector, scale=ENTRY_SCALE, version="")
        except InputError as e:  # the upload, by the name teams know: never the server's temporary path
            raise InputError(e.reason, file="predictions.json", record=e.record, field=e.field) from None
    with warnings.catch_warnings():  # label-derived (counts, accuracies): nothing logged before the reveal
        warnings.simplefilter("ignore")
        res = evaluate_workspace(ws, proto, allow_scoring=False, record=False)
    row = next(r for r in res["table1"] if r["detector"] == detector)
    value, reason = headline_value(row, metric)
    if min(int(row.get("human_n") or 0), int(row.get("ai_n") or 0)) < min_cell_size:
        value, reason = None, (f"fewer than {min_cell_size} human or AI texts in the set the headline is computed "
                               "on (the board's minimum cell size)")
    return row, value, reason


def same_text_conflict(groups: Sequence[Sequence[str]], scores: Mapping[str, float], *, source: str) -> None:
    """Refuse a submission that gives two ids of one text (``groups``: ids sharing a text)
    different scores: a detector scores a text, and the board's workspace keeps one score per
    detector and text, so one of the two would silently stand for both.

    Raises:
        InputError: one line naming the file, both ids and their scores.
    """
    for g in groups:
        first = scores.get(g[0])
        for other in g[1:]:
            if scores.get(other) != first:
                raise InputError(f"ids {echo(g[0])} and {echo(other)} are the same text but scored {first!r} and "
                                 f"{scores.get(other)!r}: a detector scores a text, so give them one score",
                                 file=source, record=f"id {echo(other)}", field="score")


def hidden_rows(ws: Workspace, ids: Sequence[str], canaries: Mapping[str, Mapping[str, Any]]) -> list[setcommit.HiddenRow]:
    """The hidden set's rows as stored in the board's workspace (``ids`` order): text, label,
    arm, tags, the canary marking (``canaries``: ``{canary id: {"source", "label"}}``) and the
    other stored fields (:data:`.setcommit.RECORD_FIELDS`, as
    :func:`veribench.corpus.stored.load_documents` gives them). The launch commits these rows
    and the reveal publishes them, both read the same way."""
    docs = load_documents(ws, ids)
    return [setcommit.HiddenRow(doc_id=i, text=docs[i]["text"], label=docs[i]["label"], arm=docs[i]["arm"],
                                tags=_tags(docs[i]["tags"]), canary_of=canaries.get(i, {}).get("source"),
                                record={k: docs[i][k] for k in setcommit.RECORD_FIELDS})
            for i in ids]


def launch_notes(cfg: BoardConfig, docs: Sequence[Document], *, split: str | None = None) -> list[str]:
    """Warnings for a hidden set on which the headline can never be defined, one line each
    (printed by ``launch`` and kept in the commitment record's ``notes``): fewer human or AI
    headline texts than ``min_cell_size`` (a headline on fewer is never released), or, for a
    TPR-at-FPR headline of target FPR ``t``, fewer than ``1 / t`` human headline texts (no
    threshold flags exactly that share of them). Only headline texts count
    (:func:`veribench.protocol.roles.classify`: not derived or attacked side rows, not other
    labels); the number of side rows is said. Canaries are not counted (outside the protocol).
    Under a declared calibration split (``split``: its salt, :func:`split_salt`; ``docs`` with
    their board ids and group keys), fewer than 20 human headline texts in the split
    (:func:`veribench.protocol.split.calibration_mask`): no threshold gives an FPR in (0, 5%]
    there, so the 5%-FPR decision rule's threshold leaves no calibration human text flagged
    (FPR 0 there, not 5%) and TPR at 5% FPR and every canary test are undefined."""
    b = cfg.board
    roles = classify([d.label for d in docs], [d.arm for d in docs], [dict(d.tags or {}) for d in docs])
    n_ai = int((roles.headline & (roles.code == POSITIVE_CODE)).sum())
    n_human = int(roles.headline.sum()) - n_ai
    side = len(docs) - int(roles.headline.sum())
    counted = (f"{n_human} human and {n_ai} AI headline texts"
               + (f" ({side} side rows, e.g. derived or attacked texts, not counted)" if side else ""))
    notes = []
    if min(n_human, n_ai) < b.min_cell_size:
        notes.append(f"the headline can never be released: {counted}, fewer than min_cell_size {b.min_cell_size}")
    target = HEADLINE_TARGET_FPR.get(b.headline_metric)
    if target is not None and n_human < 1 / target:
        notes.append(f"the headline {b.headline_metric} is undefined on this set: {counted}; a target FPR of "
                     f"{target:g} needs at least {1 / target:g} human texts")
    cal = b.calibration
    if split is not None and not isinstance(cal, str):
        mask = calibration_mask([d.id for d in docs], None, [d.group_key for d in docs], every=cal.every, salt=split)
        n_cal = int((mask & roles.headline & (roles.code != POSITIVE_CODE)).sum())
        if n_cal < 20:
            notes.append(f"the calibration split (1 in {cal.every} groups) holds fewer than the 20 human headline texts "
                         "a 5% FPR needs: the decision rule's threshold flags no calibration human text "
                         "(FPR 0 there, not 5%), and TPR at 5% FPR and every canary test are undefined; a smaller "
                         "calibration.every puts more texts in the split")
    return notes


def decision_rule(cfg: BoardConfig) -> dict[str, Any]:
    """The decision rule every entry's Table 1 catch rate, FPR and balanced accuracy come from:
    under RAID's in-sample rule none (``rule`` null, ``reason`` :data:`NO_DECISION_RULE`: the
    submitted scores have no fixed scale, so those rates are null and TPR at a fixed FPR is
    the number to read); under a declared calibration split the threshold fitted there for 5% FPR."""
    if cfg.in_sample:
        return {"rule": None, "reason": NO_DECISION_RULE}
    return {"rule": "oriented score > the threshold fitted on the calibration split for 5% FPR", "reason": None}


def board_rules(cfg: BoardConfig) -> dict[str, Any]:
    """The board's scoring rules, committed in the launch record (``rules``,
    :func:`veribench.leaderboard.setcommit.commitment_record`) so that none can change after the
    launch, and repeated at the top of ``results.json`` (:data:`RULE_KEYS`): the headline metric
    (:data:`.config.HEADLINES`) and its description, the Ladder's rule and ``eta``, the minimum
    cell size (texts of a label), the grid's tags, how thresholds are fitted and every entry's
    decision rule (:func:`decision_rule`), the per-team submission limit, the number of
    canaries, when submissions close (``reveal_at``, ISO 8601 UTC, or null) and the declared
    calibration split (``{"rule", "every", "salt"}``, or null under RAID's in-sample rule): its
    declared salt is public (the split's own salt is :func:`split_salt` of it and the secret set
    salt), so that check-reveal can recompute the split's salt from the revealed set salt."""
    b = cfg.board
    return {"headline_metric": b.headline_metric, "headline_description": HEADLINES[b.headline_metric],
            "ladder_rule": LADDER_RULE, "ladder_eta": b.ladder_eta, "min_cell_size": b.min_cell_size,
            "grid": list(b.grid), "thresholds": cfg.threshold_rule, "decision_rule": decision_rule(cfg),
            "submission_limit": b.submission_limit, "canaries": b.canaries,
            "reveal_at": _iso(_aware(b.reveal_at)) if b.reveal_at is not None else None,
            "calibration": None if isinstance(b.calibration, str) else
            {"rule": b.calibration.rule, "every": b.calibration.every, "salt": b.calibration.salt},
            "gaps": [g.model_dump(exclude_none=True) for g in b.gaps]}


#: The committed rules (:func:`board_rules`) that come from ``board.toml``'s ``[board]`` keys of the
#: same names: a launched board refuses to open when one of them was edited (:meth:`Board.check_rules`).
EDITABLE_RULES = ("headline_metric", "ladder_eta", "min_cell_size", "grid", "submission_limit", "canaries",
                  "reveal_at", "thresholds", "calibration", "gaps")
#: The ``board.toml`` field behind a committed rule whose name differs (``thresholds`` is how
#: ``calibration`` reads).
RULE_FIELD = {"thresholds": "calibration"}

#: The keys of the committed rules (:func:`board_rules`) repeated at the top of ``results.json``.
RULE_KEYS = ("headline_metric", "headline_description", "ladder_rule", "ladder_eta", "min_cell_size", "thresholds")


def rules_problems(rules: Any, *, scoring_only: bool = False) -> list[str]:
    """The problems of a committed ``rules`` object (empty: usable), one line each naming the
    field: ``headline_metric`` one of :data:`.config.HEADLINES`, ``ladder_eta`` a finite number
    > 0, ``min_cell_size`` an integer >= 1, ``grid`` a list of strings, ``submission_limit`` an
    integer >= 1, ``canaries`` >= 0, ``reveal_at`` null or ISO 8601 UTC (not required with
    ``scoring_only``: rules rebuilt from ``results.json``, which repeats only the scoring ones), and every key of
    :func:`board_rules` present."""
    if not isinstance(rules, Mapping):
        return ["the launch record commits no scoring rules (field rules): min_cell_size, the grid and the "
                "thresholds of results.json cannot be checked against the launch"]
    out = [f"rules.{k}: missing from the launch record" for k in
           ("headline_metric", "headline_description", "ladder_rule", "ladder_eta", "min_cell_size", "grid",
            "thresholds", "decision_rule", *(() if scoring_only else ("submission_limit", "canaries", "reveal_at")))
           if k not in rules]
    if rules.get("headline_metric") not in HEADLINES:
        out.append(f"rules.headline_metric: {echo(str(rules.get('headline_metric')))} is not a headline metric")
    eta = rules.get("ladder_eta")
    if isinstance(eta, bool) or not isinstance(eta, int | float) or not 0 < eta < float("inf"):
        out.append("rules.ladder_eta: must be a finite number > 0")
    k = rules.get("min_cell_size")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        out.append("rules.min_cell_size: must be an integer >= 1")
    g = rules.get("grid")
    if not isinstance(g, list) or not all(isinstance(t, str) for t in g):
        out.append("rules.grid: must be a list of tag names")
    for key, low in (("submission_limit", 1), ("canaries", 0)):
        v = rules.get(key, low)
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            out.append(f"rules.{key}: must be an integer >= {low}")
    if rules.get("reveal_at") is not None and _parse_utc(rules.get("reveal_at")) is None:
        out.append("rules.reveal_at: must be null or an ISO 8601 UTC time (…Z)")
    return out


def bundle_protocol(launch_protocol: str, *, name: str, tag: str, detectors: Sequence[str],
                    labels: Mapping[str, str]) -> str:
    """The protocol (TOML) of one revealed bundle: the committed launch protocol
    (``protocol.toml``, :func:`protocol_text` with no detectors) with the bundle's ``name`` and
    ``tag`` and the entries' ``[[detectors]]`` (:func:`_detector_entries`, shown by
    ``labels[detector]``). The reveal writes it and ``check-reveal`` re-derives it, so a bundle
    evaluated under any other protocol (another split, rule or slice) is caught."""
    doc = tomllib.loads(launch_protocol)
    doc["protocol"] = {**doc.get("protocol", {}), "name": name, "tag": tag}
    dets = _detector_entries("split" not in doc, detectors, labels)
    if dets:
        doc["detectors"] = dets
    return tomli_w.dumps(doc)


def entry_grid(ws: Workspace, protocol: str, tags: Sequence[str], min_cell_size: int) -> list[dict[str, Any]]:
    """RAID's grid of one entry (:func:`veribench.evaluate.grid.grid_results` over ``tags``,
    Wilson and bootstrap intervals) under its bundle's ``protocol`` (:func:`bundle_protocol`),
    in workspace ``ws``, as JSON values, with cells under ``min_cell_size`` suppressed
    (:func:`.suppress.suppress_cells`). ``[]`` when the board names no grid tags."""
    if not tags:
        return []
    proto = parse_protocol(tomllib.loads(protocol), path="<board protocol>")
    with warnings.catch_warnings():  # a cell's undefined metric is null with its reason in the row
        warnings.simplefilter("ignore")
        res = evaluate_workspace(ws, proto, allow_scoring=False, record=False, grid=list(tags))
    return suppress_cells(json.loads(json.dumps(res.get("grid") or [], allow_nan=False)), min_cell_size)


def ladder_bytes(rules: Mapping[str, Any], history: Sequence[Mapping[str, Any]]) -> bytes:
    """``ladder.json``'s exact bytes: the Ladder's rule, eta and metric (from the committed
    ``rules``) and every scored submission (``history``, rows of :meth:`Board._ladder_history`)."""
    return json.dumps({"rule": rules["ladder_rule"], "eta": rules["ladder_eta"], "metric": rules["headline_metric"],
                       "submissions": list(history)}, indent=1, allow_nan=False).encode("utf-8")


def entry_record(rules: Mapping[str, Any], last: Mapping[str, Any], *, canary: Any, table1: Any,
                 grid: Sequence[Mapping[str, Any]], root: str) -> dict[str, Any]:
    """One entry of ``results.json``: the team's last scored submission (``last``, a row of
    ``ladder.json``), its canary block, its Table 1 row (from its bundle's ``results.json``),
    its grid (:func:`entry_grid`) and its bundle's root. The canary block's keys are sorted (a
    database may keep a JSON object's keys in another order)."""
    team = str(last["team"])
    return {"team": team, "submission_id": last["submission_id"], "submission_n": last["n"],
            "detector": f"{team}.{last['n']}", "predictions_sha256": last["predictions_sha256"],
            "released": last["released"], "headline": last["headline"], "headline_reason": last["headline_reason"],
            "canary": dict(sorted(canary.items())) if isinstance(canary, Mapping) else canary, "table1": table1, "decision_rule": rules["decision_rule"], "grid": list(grid),
            "bundle": f"bundles/{team}", "bundle_root_sha256": root}


def results_bytes(commitment: Mapping[str, Any], rules: Mapping[str, Any], entries: Sequence[Mapping[str, Any]],
                  all_results: Mapping[str, Any], all_root: str) -> bytes:
    """``results.json``'s exact bytes: the board, the launch record, the committed rules
    (:data:`RULE_KEYS`), the entries (:func:`entry_record`, by team name) and the keys
    :data:`ALL_BUNDLE_KEYS` of the bundle of all entries, every number of a slice under the
    committed minimum cell size nulled with the reason (:func:`.suppress.suppress_slices`). The reveal writes them and
    ``check-reveal`` requires the published file to be these bytes re-derived."""
    doc = {"board": commitment["board"], "commitment": dict(commitment), **{k: rules[k] for k in RULE_KEYS},
           "entries": list(entries), "all_bundle": "bundles/all", "all_bundle_root_sha256": all_root,
           **suppress_slices(all_results, int(rules["min_cell_size"]))}
    return json.dumps(doc, indent=1, allow_nan=False).encode("utf-8")


def _bundle_root(bundle: Path) -> str:
    """A bundle's root SHA-256 (its ``manifest.json``'s ``root_sha256``)."""
    return str(json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))["root_sha256"])


def bundle_table1_row(bundle: Path, team: str, detector: str) -> Any:
    """The entry's Table 1 row from its bundle's ``results.json`` (shown by its team name).

    Raises:
        OSError, ValueError, KeyError, StopIteration: an unreadable bundle or no such row.
    """
    res = json.loads((bundle / "results.json").read_text(encoding="utf-8"))
    return next(r for r in res["table1"] if r.get("detector") in (team, detector))


def _short(v: Any, n: int = 64) -> str:
    t = json.dumps(v, allow_nan=True, default=str)
    return t if len(t) <= n else t[:n] + "…"


def first_difference(published: Any, derived: Any, path: str = "") -> str | None:
    """Where two JSON values first differ, in the re-derived value's order (``path: published
    X, re-derived Y``; a key or item on one side only is named), or None when they are equal
    (a ``1`` and a ``1.0`` differ: the bytes do)."""
    here = path or "(the whole file)"
    if isinstance(published, dict) and isinstance(derived, dict):
        for k in [*derived, *(k for k in published if k not in derived)]:
            sub = f"{path}.{k}" if path else str(k)
            if k not in published:
                return f"{sub}: missing from the published file"
            if k not in derived:
                return f"{sub}: not in the re-derived file"
            d = first_difference(published[k], derived[k], sub)
            if d:
                return d
        return None
    if isinstance(published, list) and isinstance(derived, list):
        for i, (a, b) in enumerate(zip(published, derived, strict=False)):
            d = first_difference(a, b, f"{path}[{i}]")
            if d:
                return d
        if len(published) != len(derived):
            return f"{here}: {len(published)} items published, {len(derived)} re-derived"
        return None
    if published != derived or type(published) is not type(derived):
        return f"{here}: published {_short(published)}, re-derived {_short(derived)}"
    return None


def _tags(v: Any) -> dict[str, Any]:
    if isinstance(v, str):
        v = json.loads(v)
    return dict(v or {})


def check_reveal_dir(folder: str | Path) -> list[str]:
    """The problems of a reveal folder against its launch commitment (empty: the revealed
    labels, texts, arms, tags and salt are exactly those committed, ``protocol.toml`` is
    the committed protocol, every bundle evaluated exactly the revealed set (its documents'
    texts, labels, arms and tags), ``results.json`` repeats the bundles' numbers (each
    entry's bundle root and Table 1 row, the tiers and comparisons), every published
    submission file has its SHA-256 and the released values follow the Ladder from the revealed
    headlines (``ladder.json``), and ``commitment.tsr``, when present, stamps ``commitment.json``'s
    exact bytes (its imprint; the authority's signature is checked by whoever trusts it, with
    :func:`veribench.commit.tsa.check_token` and the authority's roots). Reads ``commitment.json``, ``hidden_set.jsonl``, ``salt.txt``
    and ``protocol.toml``; a missing or unreadable file is a problem, never an exception."""
    f = Path(folder)
    try:
        record = json.loads((f / "commitment.json").read_text(encoding="utf-8"))
        salt = bytes.fromhex((f / "salt.txt").read_text(encoding="ascii").strip())
        raw_rows = list(map(loads_strict, filter(None, (f / "hidden_set.jsonl").read_text(encoding="utf-8")
                                                 .splitlines())))  # a key twice (two labels) is refused
        rows = [setcommit.HiddenRow(doc_id=r["doc_id"], text=r["text"], label=r["label"], arm=r.get("arm"),
                                    tags=r.get("tags") or {}, canary_of=r.get("canary_of"),
                                    record=r.get("record") or {})
                for r in raw_rows]
        proto = (f / "protocol.toml").read_bytes()
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        return [f"reveal folder {f}: cannot read it ({e.__class__.__name__}: {e})"]
    problems = [f"hidden_set.jsonl, row {i + 1}: field {echo(k)} is no field of a revealed row (none is read: "
                f"{', '.join(HIDDEN_ROW_FIELDS)})"
                for i, r in enumerate(raw_rows) for k in r if k not in HIDDEN_ROW_FIELDS][:5]
    problems += setcommit.check_reveal(record, rows, salt)
    canary_ids = {r["doc_id"] for r in map(json.loads, filter(None, (f / "hidden_set.jsonl")
                                                              .read_text(encoding="utf-8").splitlines()))
                  if r.get("canary_of")}
    problems += _unknown_files(f)
    problems += _check_bundles(f, {r.doc_id: r for r in rows}, canary_ids)
    problems += _check_results(f)
    problems += _check_ladder(f)
    if (f / "commitment.tsr").is_file():
        try:
            tsa.check_token((f / "commitment.tsr").read_bytes(), (f / "commitment.json").read_bytes())
        except VeribenchError as e:
            problems.append(f"commitment.tsr does not stamp commitment.json: {e}")
    if isinstance(record, dict) and sha256_bytes(proto) != record.get("protocol_sha256"):
        problems.append("protocol.toml is not the committed protocol (its SHA-256 differs from protocol_sha256)")
    return problems


#: The files at the top of a reveal folder (``commitment.tsr`` only when the launch was time-stamped).
REVEAL_FILES = frozenset({"commitment.json", "commitment.tsr", "hidden_set.jsonl", "salt.txt", "protocol.toml",
                          "ladder.json", "results.json"})


#: The fields of a row of the revealed ``hidden_set.jsonl`` (any other is never read: refused).
HIDDEN_ROW_FIELDS = ("doc_id", "text", "label", "arm", "tags", "canary_of", "record")


def _unknown_files(f: Path) -> list[str]:
    """Every entry of the reveal folder that no check reads, one line each: a symbolic link
    anywhere (it could point outside the folder), a file or folder at the top other than
    :data:`REVEAL_FILES`, ``protocols/``, ``bundles/`` and ``submissions/``, under
    ``protocols/`` anything but ``<entry>.toml``, under ``bundles/`` anything but an entry's
    folder (a bundle's own files are ``veribench verify``'s), under ``submissions/`` anything
    but a file of ``ladder.json`` (entries: the teams of ``ladder.json`` and ``all``)."""
    try:
        lad = json.loads((f / "ladder.json").read_text(encoding="utf-8"))
        subs = lad["submissions"] if isinstance(lad, dict) and isinstance(lad.get("submissions"), list) else []
        teams = {str(h.get("team")) for h in subs if isinstance(h, dict)}
        shas = {str(h.get("predictions_sha256")) for h in subs if isinstance(h, dict)}
    except (OSError, ValueError):
        teams, shas = set(), set()
    allowed = {"protocols": {f"{t}.toml" for t in (*teams, "all")}, "bundles": {*teams, "all"}, "submissions": shas}
    problems = [f"{p.relative_to(f)}: a symbolic link in the reveal (nothing in a reveal is read through one)"
                for p in sorted(f.rglob("*")) if p.is_symlink()]
    for p in sorted(f.iterdir()):
        if p.name in REVEAL_FILES and p.is_file() and not p.is_symlink():
            continue
        if p.name in allowed and p.is_dir() and not p.is_symlink():
            problems += [f"{p.name}/{q.name}: not a file of this reveal (no entry or submission of ladder.json)"
                         for q in sorted(p.iterdir()) if q.name not in allowed[p.name]]
            continue
        if not p.is_symlink():
            problems.append(f"{p.name}: not a file of a reveal (no check reads it)")
    return problems


def _check_bundles(f: Path, rows: Mapping[str, setcommit.HiddenRow], canaries: set[str]) -> list[str]:
    """Each bundle under ``f/bundles`` evaluated the revealed set: every document it holds is
    a revealed row with the same text (SHA-256), label, arm and tags, and every revealed row
    but the canaries is in its run. (``veribench verify`` checks each bundle within itself.)"""
    problems: list[str] = []
    folder = f / "bundles"
    for b in sorted(folder.iterdir()) if folder.is_dir() else []:
        try:
            lines = [json.loads(x) for x in (b / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if x]
        except (OSError, ValueError) as e:
            problems.append(f"bundle {b.name}: cannot read corpus.jsonl ({e.__class__.__name__})")
            continue
        in_run = set()
        for line in lines:
            d = line.get("doc") or {}
            r = rows.get(str(d.get("doc_id")))
            if r is None:
                problems.append(f"bundle {b.name}: document {d.get('doc_id')!r} is not in the revealed set")
                continue
            if line.get("in_run"):
                in_run.add(r.doc_id)
            for fld, want in (("text_sha256", text_sha256(r.text)), ("label", r.label), ("arm", r.arm),
                              ("tags", dict(r.tags)),
                              *((k, r.record.get(k) or None) for k in setcommit.RECORD_FIELDS if r.record)):
                if (d.get(fld) or ({} if fld == "tags" else None)) != want:
                    problems.append(f"bundle {b.name}: document {r.doc_id}'s {fld} differs from the revealed set")
        missing = set(rows) - canaries - in_run
        if missing:
            problems.append(f"bundle {b.name}: {len(missing)} revealed documents are not in its run "
                            f"(e.g. {sorted(missing)[0]})")
    return problems


#: The keys of ``results.json`` copied from the bundle of all entries (``bundles/all/results.json``),
#: slices under the minimum cell size suppressed (:func:`.suppress.suppress_slices`).
ALL_BUNDLE_KEYS = SLICE_KEYS

#: Each entry's fields of ``results.json`` that repeat its team's last scored submission in
#: ``ladder.json``: (the entry's field, the ladder row's field).
ENTRY_LADDER_FIELDS = (("submission_id", "submission_id"), ("submission_n", "n"),
                       ("predictions_sha256", "predictions_sha256"), ("released", "released"),
                       ("headline", "headline"), ("headline_reason", "headline_reason"))


def _check_results(f: Path) -> list[str]:
    """``results.json`` says what the bundles and ``ladder.json`` say: each entry's bundle root and
    Table 1 row, the keys :data:`ALL_BUNDLE_KEYS` of the bundle of all entries (numbers
    ``veribench verify`` re-derives from each bundle), each entry's :data:`ENTRY_LADDER_FIELDS`
    equal to its team's last scored submission in ``ladder.json`` (released and headline
    compared exactly), one entry per team of ``ladder.json`` and none for another team."""
    def load(p: Path) -> Any:
        return json.loads(p.read_text(encoding="utf-8"))

    try:
        res = load(f / "results.json")
        last = {h["team"]: h for h in load(f / "ladder.json")["submissions"]}
        problems = []
        for e in res["entries"]:
            b = f / "bundles" / e["team"]
            if load(b / "manifest.json").get("root_sha256") != e["bundle_root_sha256"]:
                problems.append(f"results.json: entry {e['team']}'s bundle root differs from bundles/{e['team']}")
            rows = [r for r in load(b / "results.json")["table1"] if r.get("detector") in (e["team"], e["detector"])]
            if rows != [e["table1"]]:
                problems.append(f"results.json: entry {e['team']}'s Table 1 row differs from its bundle's")
            h = last.get(e["team"])
            if h is None:
                problems.append(f"results.json: entry {e['team']} has no scored submission in ladder.json")
                continue
            for mine, theirs in ENTRY_LADDER_FIELDS:
                if e.get(mine) != h.get(theirs):
                    problems.append(f"results.json: entry {e['team']}'s {mine} differs from ladder.json's last "
                                    f"scored submission of that team ({theirs})")
        for team in sorted(set(last) - {e["team"] for e in res["entries"]}):
            problems.append(f"results.json: team {team} of ladder.json has no entry")
        allr = suppress_slices(load(f / "bundles" / "all" / "results.json"), int(res["min_cell_size"]))
        for key in ALL_BUNDLE_KEYS:
            if res.get(key) != allr.get(key):
                problems.append(f"results.json: {key} differ from the bundle of all entries")
        return problems
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        return [f"results.json: cannot check it against the bundles and ladder.json ({e.__class__.__name__}: {e})"]


_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def _parse_utc(v: Any) -> datetime | None:
    """An ISO 8601 UTC time as the board writes it (``...Z``, read by
    :func:`veribench.store.events.parse_utc`), or None for anything else."""
    if not isinstance(v, str) or not v.endswith("Z"):
        return None
    try:
        return parse_utc(v)
    except ValueError:
        return None


def _ladder_shape(lad: Any) -> list[str]:
    """The problems of ``ladder.json``'s shape, each naming the field: an object with ``eta`` a
    finite number > 0 and ``submissions`` a list of objects, each with a ``team`` string, a
    ``predictions_sha256`` of 64 lowercase hex digits (a file name under ``submissions/``, no
    path), ``headline``/``released`` null or a number in [0, 1] (the headline metrics are
    rates and AUROC), ``n`` an integer >= 1, ``submission_id`` unique, ``format`` one of the
    board's formats, ``received_at`` an ISO 8601 UTC time, and each team's rows in the order
    received (numbers increasing, times not decreasing)."""
    if not isinstance(lad, dict) or not isinstance(lad.get("submissions"), list):
        return ["ladder.json: not an object with a list 'submissions'"]
    eta = lad.get("eta")
    problems = []
    if isinstance(eta, bool) or not isinstance(eta, int | float) or not 0 < eta < float("inf"):
        problems.append(f"ladder.json: field eta must be a finite number > 0, not {str(eta)[:64]}")
    last: dict[str, tuple[int, datetime]] = {}
    ids: set[str] = set()
    for i, h in enumerate(lad["submissions"]):
        if not isinstance(h, dict) or not isinstance(h.get("team"), str):
            problems.append(f"ladder.json: submissions[{i}] is not an object with a string 'team'")
            continue
        n, sid, fmt = h.get("n"), h.get("submission_id"), h.get("format")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            problems.append(f"ladder.json: submissions[{i}].n must be an integer >= 1")
            n = None
        if not isinstance(sid, str) or not sid or sid in ids:
            problems.append(f"ladder.json: submissions[{i}].submission_id must be a string no other row has")
        ids.add(str(sid))
        if fmt not in get_args(SubmissionFormat):
            problems.append(f"ladder.json: submissions[{i}].format must be one of {', '.join(get_args(SubmissionFormat))}")
        when = _parse_utc(h.get("received_at"))
        if when is None:
            problems.append(f"ladder.json: submissions[{i}].received_at must be an ISO 8601 UTC time (…Z)")
        prev = last.get(h["team"])
        if n is not None and when is not None:
            if prev is not None and (n <= prev[0] or when < prev[1]):
                problems.append(f"ladder.json: submissions[{i}] ({h['team']} {n}) comes after {h['team']} {prev[0]} "
                                "in the file but not in number and time: a team's rows are in the order received")
            last[h["team"]] = (n, when)
        sha = h.get("predictions_sha256")
        if not isinstance(sha, str) or not _SHA256_HEX.fullmatch(sha):
            problems.append(f"ladder.json: submissions[{i}].predictions_sha256 is not 64 hex digits")
        for fld in ("headline", "released"):
            v = h.get(fld)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1):
                problems.append(f"ladder.json: submissions[{i}].{fld} must be null or a number in [0, 1], "
                                f"not {str(v)[:64]}")
    return problems


def _check_ladder(f: Path) -> list[str]:
    """``ladder.json``: every published file has the SHA-256 it is named by, and each team's
    released values follow the Ladder (:func:`veribench.metrics.ladder.ladder_step`) from the
    revealed headlines."""
    try:
        lad = json.loads((f / "ladder.json").read_text(encoding="utf-8"))
        problems = _ladder_shape(lad)
        if problems:
            return problems
        best: dict[str, float | None] = {}
        for h in lad["submissions"]:
            data = (f / "submissions" / h["predictions_sha256"]).read_bytes()
            if sha256_bytes(data) != h["predictions_sha256"]:
                problems.append(f"ladder.json: the file of {h['team']}'s submission {h['n']} has another SHA-256")
            step = ladder_step(best.get(h["team"]), h["headline"], eta=float(lad["eta"]))
            best[h["team"]] = step.released
            if step.released != h["released"]:
                problems.append(f"ladder.json: {h['team']}'s submission {h['n']} released {h['released']!r}; the "
                                f"Ladder gives {step.released!r}")
        return problems
    except (OSError, ValueError, KeyError, TypeError) as e:
        return [f"ladder.json: cannot check it ({e.__class__.__name__}: {e})"]


#: The longest reason stored for a submission that could not be scored (characters).
REASON_MAX = 300


def _safe_reason(e: BaseException, *, secrets_: Sequence[str] = ()) -> str:
    """One line telling why scoring failed: a :class:`VeribenchError`'s own first line, any
    other exception as ``ClassName: message`` (its first line), with every string of
    ``secrets_`` replaced by ``[redacted]`` and cut to :data:`REASON_MAX` characters."""
    first = str(e).splitlines()[0] if str(e).strip() else ""
    text = first if isinstance(e, VeribenchError) and first else f"{type(e).__name__}: {first}".rstrip(": ")
    for sec in secrets_:
        if sec:
            text = text.replace(sec, "[redacted]")
    text = " ".join(text.split())
    return text if len(text) <= REASON_MAX else text[:REASON_MAX - 1] + "…"


def rederive_reveal(folder: str | Path) -> list[str]:
    """Re-derive ``ladder.json`` and ``results.json`` of a reveal folder from what it reveals and
    require each, byte for byte, equal to the published file. Returns the problems (empty: both
    hold), one line each naming the first field that differs; a missing or unreadable file is a
    problem, never an exception.

    From the committed ``rules`` of ``commitment.json`` (:func:`board_rules`; a record without
    them is a problem, and ``results.json``'s own values are used), the revealed labels
    (``hidden_set.jsonl``), the committed ``protocol.toml`` and each scored submission's file
    (``submissions/<sha256>``): every headline and its reason (:func:`entry_headline`), the
    Ladder replayed per team (:func:`veribench.metrics.ladder.ladder_step`), and for each team's
    last submission its canary block (:func:`canary_block`), its grid (:func:`entry_grid`, cells
    under the committed minimum cell size suppressed) and its Table 1 row, evaluated from its
    file under its bundle's protocol (:func:`bundle_protocol` of the committed one, which
    ``protocols/<team>.toml`` and the bundle's ``protocol/v1.toml`` must be), and the tiers,
    comparisons, significance, gaps and corrections of all entries evaluated together. So a
    bundle whose scores are not the submitted file's disagrees with ``results.json``
    (:func:`check_reveal_dir` holds each bundle's Table 1 row and the bundle of all entries to
    it; ``veribench verify`` re-derives each bundle's numbers from its own rows). Each bundle's
    root is read from its manifest. The identity of each submission (team, number, id, time, file hash, format)
    is taken from ``ladder.json``: a receipt is what proves it (:func:`check_receipts_in_reveal`)."""
    f = Path(folder)
    problems: list[str] = []
    try:
        lad = json.loads((f / "ladder.json").read_text(encoding="utf-8"))
        if _ladder_shape(lad):
            return ["ladder.json: cannot re-derive it (its shape fails; see the problems above)"]
        res = json.loads((f / "results.json").read_text(encoding="utf-8"))
        commitment = json.loads((f / "commitment.json").read_text(encoding="utf-8"))
        launch_proto = (f / "protocol.toml").read_text(encoding="utf-8")
        proto = tomllib.loads(launch_proto)
        rows = [json.loads(x) for x in (f / "hidden_set.jsonl").read_text(encoding="utf-8").splitlines() if x]
        board = str(commitment["board"])
        rules: Any = commitment.get("rules")
        if rules_problems(rules):
            problems += [f"commitment.json: {p}" for p in rules_problems(rules)]
            rules = {**{k: res[k] for k in RULE_KEYS},
                     "grid": [t.removeprefix("tag:") for t in proto.get("tables", {}).get("slices", [])
                              if str(t).startswith("tag:")],
                     "decision_rule": (res["entries"][0]["decision_rule"] if res.get("entries") else None)}
            if rules_problems(rules, scoring_only=True):
                return [*problems, *(f"results.json: {p.removeprefix('rules.')}"
                                     for p in rules_problems(rules, scoring_only=True))]
        metric, eta, k = str(rules["headline_metric"]), float(rules["ladder_eta"]), int(rules["min_cell_size"])
        declared = rules.get("calibration")
        if isinstance(declared, Mapping):  # the split's salt is the HMAC the docs say, of the revealed set salt
            set_salt = bytes.fromhex((f / "salt.txt").read_text(encoding="ascii").strip())
            got = (proto.get("split") or {}).get("salt")
            if got != split_salt(set_salt, str(declared.get("salt"))) or (proto.get("split") or {}).get("every") != \
                    declared.get("every"):
                problems.append("protocol.toml: its calibration split is not the declared one (every, or salt "
                                "HMAC-SHA256 of the declared salt keyed by the revealed set salt)")
        history = list(lad["submissions"])
        docs_jsonl = "".join(json.dumps({"id": r["doc_id"], "text": r["text"], "label": r["label"],
                                         **({"arm": r["arm"]} if r.get("arm") is not None else {}),
                                         "tags": r.get("tags") or {},
                                         **{k: v for k, v in (r.get("record") or {}).items()
                                            if k in setcommit.RECORD_FIELDS and v not in (None, {})}},
                                        ensure_ascii=False) + "\n" for r in rows)
        corpora: dict[str, str | None] = {r["doc_id"]: f"{board}-canaries" if r.get("canary_of") else board
                                          for r in rows}
        canaries = {r["doc_id"]: {"source": r["canary_of"], "label": r["label"]} for r in rows if r.get("canary_of")}
        last = {h["team"]: h for h in history}
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as e:
        return [*problems, f"ladder.json/results.json: cannot re-derive them ({e.__class__.__name__}: {e})"]
    ids = list(corpora)
    best: dict[str, float | None] = {}
    derived: list[dict[str, Any]] = []
    entries: list[dict[str, Any]] = []
    entry_scores: dict[str, Mapping[str, float]] = {}
    labels = {f"{t}.{last[t]['n']}": t for t in sorted(last)}  # the reveal's order: by team name
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / f"{board}.jsonl"
        src.write_text(docs_jsonl, encoding="utf-8")
        ws = Workspace(Path(tmp) / "workspace")
        try:
            try:
                report, docs = read_documents(src, corpus=board)
                store_import(ws, report, docs, corpora=corpora)
            except VeribenchError as e:
                return [*problems, f"hidden_set.jsonl: cannot be evaluated ({' '.join(str(e).split())})"]
            for h in history:
                where = f"ladder.json: {h.get('team')}'s submission {h.get('n')}"
                team = str(h["team"])
                det = f"{team}.{h.get('n')}"
                try:
                    data = (f / "submissions" / str(h["predictions_sha256"])).read_bytes()
                    reader = raid_format.read_run_export if h.get("format") == "veribench" else \
                        raid_format.read_predictions
                    scores = reader(data, source=f"submissions/{h['predictions_sha256']}", ids=ids)
                    row, value, reason = entry_headline(ws, proto, det, scores, metric=metric, min_cell_size=k)
                except (OSError, KeyError, TypeError, VeribenchError) as e:
                    problems.append(f"{where}: cannot re-derive its headline ({' '.join(str(e).split())})")
                    return problems
                step = ladder_step(best.get(team), value, eta=eta)
                best[team] = step.released
                derived.append({**{key: h.get(key) for key in LADDER_IDENTITY}, "headline": value,
                                "headline_reason": reason, "released": step.released})
                if last[team] is not h:
                    continue
                entry_scores[det] = scores
                with warnings.catch_warnings():  # an undefined test is reported in the block, not logged
                    warnings.simplefilter("ignore")
                    canary = json.loads(json.dumps(canary_block(row or {}, scores, canaries)))
                name = f"{board}-{team.lower()}"
                ptext = bundle_protocol(launch_proto, name=name, tag=name.upper(), detectors=[det], labels=labels)
                problems += _protocol_files(f, team, ptext)
                try:
                    root = _bundle_root(f / "bundles" / team)
                except (OSError, ValueError, KeyError) as e:
                    problems.append(f"bundles/{team}: no root of entry {team} ({e.__class__.__name__})")
                    root = ""
                table1 = next(r for r in _evaluated(ws, ptext)["table1"] if r.get("detector") in (team, det))
                entries.append(entry_record(rules, derived[-1], canary=canary, table1=table1,
                                            grid=entry_grid(ws, ptext, rules["grid"], k), root=root))
            name = f"{board}-all"
            ptext = bundle_protocol(launch_proto, name=name, tag=name.upper(), detectors=list(labels), labels=labels)
            problems += _protocol_files(f, "all", ptext)
            all_results = _evaluated(ws, ptext) if labels else {}
        finally:
            ws.close()
    problems += _rule_limits(rules, history)
    plain = {i for i in ids if corpora[i] == board}
    for key in [*sorted(last), "all"]:
        problems += _bundle_scores(f / "bundles" / key, {d: entry_scores[d] for d, t in labels.items()
                                                         if key in (t, "all") and d in entry_scores}, plain)
    extra = sorted(p.name for p in (f / "bundles").iterdir() if p.name not in {*last, "all"}) \
        if (f / "bundles").is_dir() else []
    if extra:
        problems.append(f"bundles/: {', '.join(extra)} is no entry of ladder.json")
    problems += _same_bytes(f / "ladder.json", ladder_bytes(rules, derived))
    try:
        all_root = _bundle_root(f / "bundles" / "all")
    except (OSError, ValueError, KeyError) as e:
        problems.append(f"bundles/all: cannot read its root ({e.__class__.__name__})")
        all_root = ""
    return problems + _same_bytes(f / "results.json", results_bytes(
        commitment, rules, sorted(entries, key=lambda e: e["team"]), all_results, all_root))


def _evaluated(ws: Workspace, protocol: str) -> dict[str, Any]:
    """The results of ``protocol`` (a bundle's, :func:`bundle_protocol`) evaluated in ``ws``
    without recording a run, as JSON values (what the bundle's ``results.json`` holds)."""
    with warnings.catch_warnings():  # undefined metrics are null with their reasons in the results
        warnings.simplefilter("ignore")
        res = evaluate_workspace(ws, parse_protocol(tomllib.loads(protocol), path="<board protocol>"),
                                 allow_scoring=False, record=False)
    return dict(json.loads(json.dumps(res, allow_nan=False, default=str)))


def _rule_limits(rules: Mapping[str, Any], history: Sequence[Mapping[str, Any]]) -> list[str]:
    """``ladder.json`` within the committed rules: no team with more scored submissions than
    ``submission_limit``, none received at or after ``reveal_at`` (rules of a record that
    carries them)."""
    out = []
    limit = rules.get("submission_limit")
    counts: dict[str, int] = {}
    for h in history:
        counts[str(h["team"])] = counts.get(str(h["team"]), 0) + 1
    if isinstance(limit, int):
        out += [f"ladder.json: team {t} has {c} scored submissions; the launch committed a limit of {limit}"
                for t, c in sorted(counts.items()) if c > limit]
    closes = _parse_utc(rules.get("reveal_at"))
    if closes is not None:
        out += [f"ladder.json: {h['team']}'s submission {h['n']} was received at {h['received_at']}, not before "
                f"reveal_at {rules['reveal_at']} committed at launch"
                for h in history if (t := _parse_utc(h.get("received_at"))) is not None and t >= closes]
    return out


def _bundle_scores(bundle: Path, want: Mapping[str, Mapping[str, float]], plain: set[str]) -> list[str]:
    """A bundle's per-text scores are the submitted files': its ``scores.parquet`` (which
    ``veribench verify`` holds equal to ``scores.csv``) holds exactly the detectors of
    ``want`` (``{detector name: {doc_id: submitted score}}``), each scoring every text of
    ``plain`` (the hidden set without the canaries), and every ``raw`` score equals the
    submitted one exactly. So every number ``verify`` re-derives from the bundle's rows is a
    number of the submitted files."""
    name = f"bundles/{bundle.name}/scores.parquet"
    try:
        t = pq.read_table(bundle / "scores.parquet", columns=["doc_id", "detector_name", "raw"]).to_pydict()
    except (OSError, ValueError, KeyError, pa.ArrowException) as e:
        return [f"{name}: cannot read its scores ({e.__class__.__name__})"]
    got: dict[str, dict[str, Any]] = {}
    for doc, det, raw in zip(t["doc_id"], t["detector_name"], t["raw"], strict=True):
        got.setdefault(str(det), {})[str(doc)] = raw
    if set(got) != set(want):
        return [f"{name}: detectors {', '.join(sorted(got)) or 'none'}, not the entries' "
                f"{', '.join(sorted(want)) or 'none'}"]
    for det in sorted(want):
        missing = sorted(plain - set(got[det]))
        if missing:
            return [f"{name}: {det} scores {len(got[det])} texts; {len(missing)} of the set are missing "
                    f"(e.g. {missing[0]})"]
        for doc, raw in got[det].items():
            if doc not in want[det] or raw != want[det][doc]:
                return [f"{name}: {det}'s score of {doc} is {echo(raw)}; the submitted file says "
                        f"{echo(want[det].get(doc))}"]
    return []


#: The fields of a ``ladder.json`` row that say which submission it is (taken as published; a
#: receipt proves them): the rest (headline, its reason, the value released) is re-derived.
LADDER_IDENTITY = ("team", "n", "submission_id", "received_at", "predictions_sha256", "format")


def _protocol_files(f: Path, key: str, want: str) -> list[str]:
    """``protocols/<key>.toml`` and the bundle's ``protocol/`` (one file, ``v1.toml``) are ``want``."""
    out = []
    for p in (f / "protocols" / f"{key}.toml", f / "bundles" / key / "protocol" / "v1.toml"):
        try:
            ok = p.read_text(encoding="utf-8") == want
        except (OSError, UnicodeDecodeError):
            ok = False
        if not ok:
            out.append(f"{p.relative_to(f)}: not the committed protocol.toml with the entries' detectors "
                       "(the bundle was evaluated under another protocol)")
    folder = f / "bundles" / key / "protocol"
    if folder.is_dir() and sorted(x.name for x in folder.iterdir()) != ["v1.toml"]:
        out.append(f"bundles/{key}/protocol: holds other versions than v1.toml (an amended protocol)")
    return out


def _same_bytes(path: Path, want: bytes) -> list[str]:
    """``path`` is ``want`` byte for byte, else one line naming the first field that differs."""
    try:
        got = path.read_bytes()
    except OSError as e:
        return [f"{path.name}: cannot read it ({e.__class__.__name__})"]
    if got == want:
        return []
    try:
        where = first_difference(json.loads(got), json.loads(want))
    except ValueError:
        where = None
    return [f"{path.name} is not the file re-derived from the reveal: "
            + (where or "the same values, other bytes (layout, key order or number form)")]


def canary_block(row: Mapping[str, Any], scores: Mapping[str, float],
                 canaries: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The canary leak test of one entry (:func:`veribench.metrics.canary.canary_leak_test`):
    correct decisions on the canaries (``{canary doc_id: {"source": matched doc_id, "label"}}``)
    against those on their matched ordinary texts, at the entry's 5%-FPR threshold (the Table 1
    row's ``tpr_at_fpr_5`` block; ``scores`` higher = more likely AI). Returns the test's fields
    and ``threshold``, or ``p_value``/``flagged`` null with the reason."""
    block = row.get("tpr_at_fpr_5") or {}
    thr = block.get("threshold") if isinstance(block, Mapping) else None
    if not canaries or thr is None:
        why = "no canaries in this board" if not canaries else "the entry's 5%-FPR threshold is undefined"
        return {"p_value": None, "flagged": None, "reason": why}

    def correct(doc: str, label: str) -> bool:
        return bool((scores[doc] > thr) == (label == "ai"))

    k_c = sum(correct(c, v["label"]) for c, v in canaries.items())
    k_m = sum(correct(v["source"], v["label"]) for v in canaries.values())
    t = canary_leak_test(k_c, len(canaries), k_m, len(canaries))
    out = {k: (v.item() if hasattr(v, "item") else v) for k, v in dataclasses.asdict(t).items()}
    out["threshold"] = float(thr)
    return out


def check_receipts_in_reveal(folder: str | Path, saved: Sequence[tuple[str, Any]]) -> list[str]:
    """The receipts submitters saved (``(name, receipt JSON)``) against the reveal: each
    receipt's submission is a row of ``ladder.json`` saying what the receipt signed (team, file
    SHA-256, time received, submission number and, for receipts that carry it, the value the
    board released after it), and its team has an entry in ``results.json``. For every team
    with at least one receipt here, every row of that team in ``ladder.json`` must have its
    receipt here: give all of a team's receipts, and a row the team never submitted (or a
    renumbered one) is caught. (Whether the board signed a receipt is ``veribench
    leaderboard check-receipt``'s check.) Problems are one line each; an unreadable file is a
    problem."""
    f = Path(folder)
    try:
        subs = json.loads((f / "ladder.json").read_text(encoding="utf-8"))["submissions"]
        teams = {e["team"] for e in json.loads((f / "results.json").read_text(encoding="utf-8"))["entries"]}
        scored = {str(h["submission_id"]): h for h in subs}
    except (OSError, ValueError, KeyError, TypeError) as e:
        return [f"ladder.json/results.json: cannot check the receipts ({e.__class__.__name__})"]
    problems = []
    held: dict[str, set[str]] = {}
    for name, r in saved:
        if not isinstance(r, dict) or not all(isinstance(r.get(k), str) for k in
                                              ("team", "submission_id", "predictions_sha256", "received_at")):
            problems.append(f"{name}: not a receipt (team, submission_id, predictions_sha256, received_at)")
            continue
        held.setdefault(r["team"], set()).add(r["submission_id"])
        h = scored.get(r["submission_id"])
        if h is None or h.get("team") != r["team"]:
            problems.append(f"{name}: submission {echo(r['submission_id'])} of team {echo(r['team'])} is not "
                            "in ladder.json")
        else:
            for mine, theirs in RECEIPT_LADDER_FIELDS:
                if mine in r and r[mine] != h.get(theirs):
                    problems.append(f"{name}: ladder.json's row of submission {echo(r['submission_id'])} says "
                                    f"{theirs} {echo(h.get(theirs))}; the receipt signed {echo(r[mine])}")
        if r["team"] not in teams:
            problems.append(f"{name}: team {echo(r['team'])} has no entry in results.json")
    for h in subs:
        if isinstance(h, dict) and h.get("team") in held and str(h.get("submission_id")) not in held[h["team"]]:
            problems.append(f"ladder.json: team {echo(h['team'])}'s submission {echo(h.get('n'))} "
                            f"({echo(h.get('submission_id'))}) has no receipt among those given: a submission the "
                            "team did not make, or a receipt left out")
    return problems


def teams_without_receipts(folder: str | Path, saved: Sequence[tuple[str, Any]]) -> list[str]:
    """The teams of ``ladder.json`` none of whose receipts is among ``saved``: their rows (which
    submission each is, how many) rest on the organiser's word. Sorted; empty when unreadable."""
    try:
        subs = json.loads((Path(folder) / "ladder.json").read_text(encoding="utf-8"))["submissions"]
        teams = {str(h["team"]) for h in subs if isinstance(h, dict) and "team" in h}
    except (OSError, ValueError, KeyError, TypeError):
        return []
    held = {r.get("team") for _, r in saved if isinstance(r, dict)}
    return sorted(teams - held)


#: The fields a receipt signed and the ``ladder.json`` row of its submission must repeat: (the
#: receipt's field, the row's field).
RECEIPT_LADDER_FIELDS = (("predictions_sha256", "predictions_sha256"), ("received_at", "received_at"),
                         ("submission_n", "n"), ("released", "released"), ("format", "format"))


def check_reveal_against_launch(folder: str | Path, launch: Any) -> list[str]:
    """Every problem of a reveal folder against the launch record its submitters saved
    (:func:`.receipts.launch_record_parts`): ``commitment.json`` must be the launch record (SHA-256 of
    the canonical JSON, :func:`veribench.hashing.canonical_json`); when the launch had an
    RFC 3161 token, ``commitment.tsr`` must be there, be that token byte for byte and stamp
    ``commitment.json`` (:func:`veribench.commit.tsa.check_token`); then
    :func:`check_reveal_dir`, ``veribench verify`` on every bundle
    (:func:`veribench.bundles.verify.verify_bundle`) and :func:`rederive_reveal`. Empty: the
    reveal holds.

    Raises:
        InputError: ``launch`` is not a launch record.
    """
    f = Path(folder)
    record, token = receipts.launch_record_parts(launch)
    problems: list[str] = []
    want = receipts.commitment_sha256(record)
    try:
        revealed = json.loads((f / "commitment.json").read_text(encoding="utf-8"))
        got = receipts.commitment_sha256(revealed) if isinstance(revealed, dict) else "not a JSON object"
    except (OSError, ValueError, TypeError) as e:
        got = f"unreadable ({e.__class__.__name__})"
    if got != want:
        problems.append(f"commitment.json is not the launch record (canonical JSON SHA-256 {got}; the launch "
                        f"record's is {want})")
    if token is not None:
        tsr = f / "commitment.tsr"
        if not tsr.is_file():
            problems.append("commitment.tsr is missing: the launch record carries an RFC 3161 token")
        elif tsr.read_bytes() != token:
            problems.append("commitment.tsr is not the launch record's RFC 3161 token")
        else:
            try:
                tsa.check_token(token, (f / "commitment.json").read_bytes())
            except (OSError, VeribenchError) as e:
                problems.append(f"the launch token does not stamp commitment.json: {' '.join(str(e).split())}")
    problems += check_reveal_dir(f)
    bundles = f / "bundles"
    for b in sorted(bundles.iterdir()) if bundles.is_dir() else []:
        rep = verify_bundle(b)
        if not rep.ok:
            first = rep.failures[0].message if rep.failures else "checks not run: " + ", ".join(rep.not_run())
            problems.append(f"bundle {b.name}: veribench verify fails ({' '.join(str(first).split())})")
    problems += rederive_reveal(f)
    return problems


def headline_value(row: Mapping[str, Any], metric: str) -> tuple[float | None, str | None]:
    """The headline ``metric`` (:data:`.config.HEADLINES`) from a Table 1 row: ``(value, None)``
    or ``(None, reason)``."""
    v = row.get(metric)
    if isinstance(v, Mapping):
        val, reason = v.get("tpr"), v.get("tpr_reason") or v.get("reason")
    else:
        val, reason = v, row.get(f"{metric}_reason")
    if val is None:
        return None, str(reason or f"{metric} is undefined for this entry")
    return float(val), None


class Board:
    """One leaderboard (see the module docstring). Open with :meth:`open`."""

    def __init__(self, cfg: BoardConfig, engine: Engine):
        self.cfg = cfg
        self.engine = engine
        self.folder = cfg.folder
        self._dup_groups: list[list[str]] | None = None

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, config_path: str | Path) -> Board:
        """Open the board of ``config_path`` (``board.toml``): its database is created or
        migrated; submissions received but not scored before a crash are scored now.

        Raises:
            InputError: a bad ``board.toml`` (one line naming the field), or a launched board's
                scoring rules edited since the launch (:meth:`check_rules`).
            db.SchemaVersionError: a board database newer than this veribench.
        """
        cfg = load_config(config_path)
        url = cfg.database_url()
        if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
            sqlite_file = Path(url.database)
            if sqlite_file.parent.is_dir():
                create_private_file(sqlite_file)
                for extra in ("-wal", "-shm", "-journal"):
                    make_private(sqlite_file.with_name(sqlite_file.name + extra))
        board = cls(cfg, db.open_db(url))
        try:
            board.check_rules()
        except InputError:
            board.close()
            raise
        board.recover()
        return board

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Board:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _workspace(self) -> Iterator[Workspace]:
        wsp = self.cfg.workspace_path
        if not wsp.exists():
            wsp.mkdir(mode=0o700, parents=True)
        ws = Workspace(wsp)
        try:
            yield ws
        finally:
            ws.close()
            make_private(wsp)  # it holds the labels and the canaries until the reveal

    def _state(self, s: Session) -> db.BoardState | None:
        return s.get(db.BoardState, 1)

    def _launched(self, s: Session) -> db.BoardState:
        st = self._state(s)
        if st is None:
            raise BoardError(f"board {self.cfg.board.name} is not launched yet (veribench leaderboard launch)")
        return st

    @property
    def key_path(self) -> Path:
        return self.folder / "signing_key.pem"

    @property
    def public_key_pem(self) -> str:
        return receipts.public_key_pem(receipts.load_signing_key(self.key_path))

    # ------------------------------------------------------------------ launch
    def launch(self, hidden_set_path: str | Path, importer: str = "documents", *,
               created_at: datetime | None = None) -> dict[str, Any]:
        """Load the hidden set, mix in the canaries, commit the set and the protocol, and
        return the public commitment record (also written to ``commitment.json``).

        With ``tsa_url`` in ``board.toml`` the exact bytes of ``commitment.json`` are
        time-stamped (RFC 3161) before anything is stored, and the token is kept as
        ``commitment.tsr`` (served at ``/commitment.tsr`` and published again at the reveal).
        The record says which: ``timestamp`` = ``{"tsa_url", "token", "reason"}``, ``reason``
        :data:`NO_TSA` when no authority is named. Its ``notes`` are :func:`launch_notes`
        (a headline that can never be defined on the set).

        Each document gets a board id (the first 20 hex of SHA-256(salt, original id)), so the
        ids in the texts file tell nothing of the organiser's ids; a derived text's
        ``provenance.source_id`` naming a text of the set is rewritten to that text's board id
        (so attacked texts stay paired with their sources). Each canary is a copy of a
        hidden document drawn with the salt as seed, with a unique marker
        (``[ref <32 hex>]``) appended, the same label, arm and tags; its source is its
        matched ordinary text for the canary test.

        Raises:
            BoardError: already launched; more canaries than documents; the board's workspace
                exists already (an interrupted launch leaves it: nothing was acknowledged).
            InputError: an unknown importer; any problem of the set (the importer's one-line
                errors); a label other than human or ai; a grid tag of ``board.toml`` that no
                document has.
            TimestampError: the authority failed (nothing is launched).
        """
        b = self.cfg.board
        read = IMPORTERS.get(importer)
        if read is None:
            raise InputError(f"unknown importer {importer!r}; one of {', '.join(IMPORTERS)}", field="importer")
        with Session(self.engine) as s:
            if self._state(s) is not None:
                raise BoardError(f"board {b.name} is already launched")
        wsp = self.cfg.workspace_path
        if wsp.exists() and (not wsp.is_dir() or any(wsp.iterdir())):
            raise BoardError(f"workspace {wsp} exists but board {b.name} is not launched (an interrupted launch, or "
                             "another workspace): remove it or name a new one in board.toml, then launch again")
        report, docs = read(Path(hidden_set_path))
        for d in docs:
            if d.label not in ("human", "ai"):
                raise InputError(f"label {d.label!r}: a board's hidden set holds human and ai texts",
                                 file=str(hidden_set_path), record=d.id, field="label")
        present = {k for d in docs for k, v in (d.tags or {}).items() if v is not None}
        present |= {c for c in GRID_COLUMNS if any(getattr(d, c, None) is not None for d in docs)}
        for t in b.grid:
            if t not in present:
                raise InputError(f"grid tag {t!r} is in no document of the hidden set "
                                 f"({', '.join(sorted(present)) or 'none'} are)", file=str(self.cfg.path),
                                 field="board.grid")
        if b.canaries > len(docs):
            raise BoardError(f"{b.canaries} canaries asked for, but the hidden set has {len(docs)} documents")
        salt = setcommit.new_salt()
        rng = random.Random(salt)

        def board_id(key: str) -> str:
            return "d" + sha256_bytes(salt + key.encode("utf-8"))[:20]

        board_docs: list[Document] = []
        corpora: dict[str, str | None] = {}
        originals = {d.id for d in docs}
        for d in docs:
            dump = d.model_dump(exclude={"text_sha256", "corpus"}, exclude_none=True)
            src = (dump.get("provenance") or {}).get("source_id")
            if isinstance(src, str) and src in originals:  # a derived text's source, by its board id
                dump["provenance"] = {**dump["provenance"], "source_id": board_id("doc\0" + src)}
            nd = Document.model_validate({**dump, "id": board_id("doc\0" + d.id)})
            board_docs.append(nd)
            corpora[nd.id] = b.name
        canaries: dict[str, dict[str, Any]] = {}
        for i, src in enumerate(rng.sample(board_docs, b.canaries)):
            marker = f"[ref {secrets.token_hex(16)}]"
            cid = board_id(f"canary\0{i}")
            cd = Document.model_validate({**src.model_dump(exclude={"text_sha256"}, exclude_none=True),
                                          "id": cid, "text": f"{src.text}\n\n{marker}"})
            board_docs.append(cd)
            corpora[cid] = f"{b.name}-canaries"
            canaries[cid] = {"source": src.id, "label": src.label}
        with self._workspace() as ws:  # the rows are read back as stored: the reveal reads them the same way
            store_import(ws, report, board_docs, corpora=corpora)
            rows = hidden_rows(ws, [d.id for d in board_docs], canaries)
        cal = b.calibration
        proto = protocol_text(self.cfg, name=b.name, tag=b.name.upper(),
                              salt=None if isinstance(cal, str) else split_salt(salt, cal.salt)).encode("utf-8")
        when = created_at or _now()
        record = setcommit.commitment_record(rows, salt, protocol_sha256=sha256_bytes(proto), board=b.name,
                                             created_at=_iso(when), rules=board_rules(self.cfg))
        record["timestamp"] = ({"tsa_url": b.tsa_url, "token": "commitment.tsr (served at /commitment.tsr)",
                                "reason": None} if b.tsa_url else {"tsa_url": None, "token": None, "reason": NO_TSA})
        record["notes"] = launch_notes(self.cfg, [d for d in board_docs if corpora[d.id] == b.name],
                                       split=None if isinstance(cal, str) else split_salt(salt, cal.salt))
        if not self.key_path.exists():
            receipts.generate_signing_key(self.key_path)
        write_durably(self.folder / "protocol.toml", proto)  # secret until the reveal: the split's salt
        texts = "".join(json.dumps({"id": r.doc_id, "text": r.text}, ensure_ascii=False) + "\n"
                        for r in sorted(rows, key=lambda r: r.doc_id))
        write_durably(self.folder / "texts.jsonl", texts.encode("utf-8"), mode=PUBLIC_MODE)
        record_bytes = (json.dumps(record, indent=1) + "\n").encode("utf-8")
        token = tsa.request_token(b.tsa_url, record_bytes)[0] if b.tsa_url else None
        write_durably(self.folder / "commitment.json", record_bytes, mode=PUBLIC_MODE)
        if token is not None:
            write_durably(self.folder / "commitment.tsr", token, mode=PUBLIC_MODE)
        with Session(self.engine) as s, s.begin():
            s.add(db.BoardState(id=1, launched_at=when, salt_hex=salt.hex(), commitment=record,
                                protocol_sha256=record["protocol_sha256"], canaries=canaries, n_documents=len(rows)))
        return record

    def commitment(self) -> dict[str, Any]:
        """The public commitment record. Raises BoardError before the launch."""
        with Session(self.engine) as s:
            return dict(self._launched(s).commitment)

    def commitment_token(self) -> bytes | None:
        """The RFC 3161 token of ``commitment.json``'s bytes (``commitment.tsr``), or None when
        ``board.toml`` named no authority (the record's ``timestamp.reason`` says so).
        Raises BoardError before the launch."""
        with Session(self.engine) as s:
            self._launched(s)
        p = self.folder / "commitment.tsr"
        return p.read_bytes() if p.is_file() else None

    def texts_file(self) -> bytes:
        """The texts to score: JSONL of ``{"id", "text"}`` (board ids; no labels, arms or tags)."""
        with Session(self.engine) as s:
            self._launched(s)
        return (self.folder / "texts.jsonl").read_bytes()

    def _ids(self) -> list[str]:
        """The set's ids, from ``texts.jsonl``. Raises BoardError when the file holds another
        number of texts than the commitment (a truncated or replaced file: restore it)."""
        ids = [json.loads(line)["id"] for line in self.texts_file().decode("utf-8").splitlines() if line]
        n = self.commitment().get("n")
        if len(ids) != n:
            raise BoardError(f"texts.jsonl holds {len(ids)} texts, the launch commitment {n}: the file is truncated "
                             "or replaced; restore it from the board's backup (docs/leaderboard.md)")
        return ids

    def _same_texts(self) -> list[list[str]]:
        """The ids that share one text (groups of two or more, from ``texts.jsonl``): a score is a
        text's (the workspace stores one score per detector and text), so a submission must give
        them one score (:func:`same_text_conflict`). Read once per board object."""
        if self._dup_groups is None:
            by_text: dict[str, list[str]] = {}
            for line in self.texts_file().decode("utf-8").splitlines():
                if line:
                    r = json.loads(line)
                    by_text.setdefault(text_sha256(r["text"]), []).append(r["id"])
            self._dup_groups = [g for g in by_text.values() if len(g) > 1]
        return self._dup_groups

    def check_texts(self) -> None:
        """Check ``texts.jsonl`` against the launch commitment (its ``texts_root``: the Merkle root
        over each id and its text's SHA-256, :func:`.setcommit.texts_leaves`); run before serving,
        so ``/texts`` is never served truncated or altered.

        Raises:
            BoardError: not launched; a line that is not ``{"id", "text"}`` JSON, or a root other
                than the committed one (one line naming the file and what to do).
        """
        path = self.folder / "texts.jsonl"
        rows = []
        for k, line in enumerate(self.texts_file().decode("utf-8").splitlines()):
            try:
                obj = json.loads(line)
                rows.append(setcommit.HiddenRow(doc_id=str(obj["id"]), text=str(obj["text"]), label="unlabelled"))
            except (ValueError, KeyError, TypeError):
                raise BoardError(f"{path} line {k + 1} is not an {{\"id\", \"text\"}} object: the file is damaged; "
                                 "restore it from the board's backup") from None
        record = self.commitment()
        try:  # the label is not part of the texts' leaves
            root = merkle_root(setcommit.texts_leaves(rows)) if rows else None
        except InputError as e:
            raise BoardError(f"{path}: {e}; restore it from the board's backup") from None
        if len(rows) != record.get("n") or root != record.get("texts_root"):
            raise BoardError(f"{path} ({len(rows)} texts) disagrees with the launch commitment ({record.get('n')} "
                             "texts, texts_root): it is truncated or altered; restore it from the board's backup")

    # ------------------------------------------------------------------ teams
    def add_team(self, name: str) -> str:
        """Create team ``name``; returns its API token (32 random bytes, URL-safe base64), shown
        once: only its SHA-256 is stored.

        Raises:
            InputError: a name that is not 1-40 letters, digits, '-' or '_', or one already taken.
        """
        if not TEAM_NAME.fullmatch(name or ""):
            raise InputError("a team name is 1-40 letters, digits, '-' or '_' (starting with a letter or digit)",
                             field="team")
        if name.lower() in RESERVED_TEAMS:
            raise InputError(f"{name!r} is reserved (the reveal's bundle of all entries)", field="team")
        token = secrets.token_urlsafe(32)
        with Session(self.engine) as s, s.begin():
            if s.scalar(select(db.Team).where(func.lower(db.Team.name) == name.lower())) is not None:
                raise InputError(f"team {name!r} exists already", field="team")
            team = db.Team(name=name, created_at=_now())
            s.add(team)
            s.flush()
            s.add(db.Token(token_sha256=db.token_sha256(token), team_id=team.id, created_at=_now()))
            s.add(db.Ladder(team_id=team.id, best=None, released=None, updated_at=_now()))
        return token

    def team_for_token(self, token: str | None) -> TeamInfo | None:
        """The team holding ``token`` (compared by SHA-256), or None for an unknown or revoked one."""
        if not token:
            return None
        with Session(self.engine) as s:
            row = s.execute(select(db.Team.id, db.Team.name).join(db.Token, db.Token.team_id == db.Team.id)
                            .where(db.Token.token_sha256 == db.token_sha256(token), db.Token.revoked_at.is_(None))
                            ).first()
        return TeamInfo(int(row[0]), str(row[1])) if row else None

    def teams(self) -> list[TeamInfo]:
        with Session(self.engine) as s:
            return [TeamInfo(t.id, t.name) for t in s.scalars(select(db.Team).order_by(db.Team.name))]

    # ------------------------------------------------------------------ submissions
    def submit(self, team: TeamInfo, predictions: bytes, metadata: bytes | None = None,
               fmt: SubmissionFormat = "raid") -> dict[str, Any]:
        """Validate, store and score one submission; returns its signed receipt.

        ``fmt`` ``raid``: RAID's ``predictions.json`` (and optionally ``metadata.json``);
        ``veribench``: a veribench run export (``veribench export scores``). The file is stored
        by content hash with fsync and its row committed before it is scored; the receipt is
        returned only once the score, the Ladder and the receipt are committed.

        The receipt (:func:`veribench.leaderboard.receipts.sign_receipt`) signs the file's
        SHA-256, the receipt time (UTC, ISO 8601), the submission id, the team and
        ``commitment_sha256`` = SHA-256 of the canonical JSON
        (:func:`veribench.hashing.canonical_json`) of the launch commitment record, so it does
        not depend on how ``commitment.json`` is laid out.

        Raises:
            InputError: bad predictions or metadata (one line naming the file, record and field).
            BoardError: not launched, revealed, past ``reveal_at``, or the team's submission
                limit reached.
        """
        limit = self.cfg.board.submission_limit
        with Session(self.engine) as s:
            st = self._launched(s)
            if st.revealed_at is not None or st.closed_at is not None:
                state = "revealed" if st.revealed_at is not None else "being revealed"
                raise BoardError(f"board {self.cfg.board.name} is {state}: submissions are closed")
            closes = self.cfg.board.reveal_at
            if closes is not None and _now() >= _aware(closes):
                raise BoardError(f"board {self.cfg.board.name}: submissions closed at {_iso(_aware(closes))}")
            if self._used(s, team.id)[0] >= limit:
                raise BoardError(f"team {team.name} has used its {limit} submissions")
        ids = self._ids()  # parsed only once the board takes the team's submission
        if fmt == "raid":
            scores = raid_format.read_predictions(predictions, source="predictions.json", ids=ids)
        elif fmt == "veribench":
            scores = raid_format.read_run_export(predictions, source="predictions", ids=ids)
        else:
            raise InputError(f"unknown format {fmt!r}; raid or veribench", field="fmt")
        same_text_conflict(self._same_texts(), scores, source="predictions.json" if fmt == "raid" else "predictions")
        meta = (raid_format.read_metadata(metadata, source="metadata.json").model_dump(mode="json")
                if metadata is not None else None)
        sha = sha256_bytes(predictions)
        path = self._submission_file(sha)
        existed = path.exists()
        try:
            with Session(self.engine) as s, s.begin():
                if self._launched(s).closed_at is not None:
                    raise BoardError(f"board {self.cfg.board.name} is being revealed: submissions are closed")
                used, last = self._used(s, team.id)
                if used >= limit:
                    raise BoardError(f"team {team.name} has used its {limit} submissions")
                write_durably(path, predictions)  # on disk before its row commits; checked first
                sub = db.Submission(id=uuid.uuid4().hex, team_id=team.id, seq=last + 1, fmt=fmt,
                                    predictions_sha256=sha, metadata_json=meta, received_at=_now(),
                                    status="received", detector=f"{team.name}.{last + 1}")
                s.add(sub)
                sub_id = sub.id
        except BaseException as e:
            self._drop_orphan(sha, existed)
            if isinstance(e, IntegrityError):  # another submission of the team took the same number first
                raise BoardError(f"team {team.name}: another submission is being stored; send it again") from None
            raise
        return self._score_or_fail(sub_id, scores)

    @staticmethod
    def _used(s: Session, team_id: int) -> tuple[int, int]:
        """(submissions that count against the limit: all but failed ones, the last number used)."""
        used = s.scalar(select(func.count()).select_from(db.Submission)
                        .where(db.Submission.team_id == team_id, db.Submission.status != "failed"))
        last = s.scalar(select(func.max(db.Submission.seq)).where(db.Submission.team_id == team_id))
        return int(used or 0), int(last or 0)

    def _score_or_fail(self, sub_id: str, scores: Mapping[str, float] | None = None) -> dict[str, Any]:
        """:meth:`_score`; a submission that cannot be scored, for any reason (the evaluation
        refuses it, or any unexpected error such as a ValueError of the arithmetic on extreme
        scores), is marked ``failed`` with a one-line reason (never acknowledged, not counted
        against the limit). A :class:`VeribenchError` is raised again as it is; any other
        exception as a :class:`BoardError` naming its class and message (:func:`_safe_reason`),
        so that no caller (a request, :meth:`recover` when the board is opened) sees a traceback."""
        try:
            return self._score(sub_id, scores)
        except Exception as e:
            reason = _safe_reason(e, secrets_=self._secrets())
            with Session(self.engine) as s, s.begin():
                sub = s.get(db.Submission, sub_id)
                assert sub is not None
                if sub.status == "received":
                    sub.status, sub.headline_reason = "failed", reason
            if isinstance(e, VeribenchError):
                raise
            raise BoardError(f"the submission could not be scored: {reason}") from None

    def _secrets(self) -> list[str]:
        """Strings no error message may carry: the salt (hex), the calibration split's salt
        (:func:`split_salt`) and the database password."""
        out = [os.environ.get(PASSWORD_ENV, "")]
        with contextlib.suppress(Exception), Session(self.engine) as s:
            st = self._state(s)
            out.append(st.salt_hex if st is not None and st.salt_hex else "")
            cal = self.cfg.board.calibration
            if st is not None and st.salt_hex and not isinstance(cal, str):
                out.append(split_salt(bytes.fromhex(st.salt_hex), cal.salt))  # the calibration split's
        return [x for x in out if x]

    def _drop_orphan(self, sha: str, existed: bool) -> None:
        """Remove the file of SHA-256 ``sha`` written by a refused request: only when it was not
        there before the request and no stored submission names it."""
        if existed:
            return
        with Session(self.engine) as s:
            if s.scalar(select(func.count()).select_from(db.Submission)
                        .where(db.Submission.predictions_sha256 == sha)):
                return
        self._submission_file(sha).unlink(missing_ok=True)

    def _submission_file(self, sha: str) -> Path:
        """Where the submitted file of SHA-256 ``sha`` is kept (a name no request chooses)."""
        return self.folder / "submissions" / sha

    def _evaluate(self, ws: Workspace, detectors: Sequence[str], *, record: bool = False,
                  proto_path: Path | None = None, labels: Mapping[str, str] | None = None,
                  grid: bool = False) -> dict[str, Any]:
        """Evaluate ``detectors`` under the board's protocol (``proto_path``: a committed file,
        else the same text in memory, not recorded). ``grid``: add RAID's grid over the board's
        grid tags (never in a recorded run: a bundle re-derives its run without it)."""
        b = self.cfg.board
        if proto_path is None:
            text = protocol_text(self.cfg, name=b.name, tag=b.name.upper(), detectors=detectors, labels=labels)
            proto = parse_protocol(tomllib.loads(text), path="<board protocol>")
        else:
            proto = parse_protocol(tomllib.loads(proto_path.read_text(encoding="utf-8")), path=str(proto_path),
                                   digest=sha256_bytes(proto_path.read_bytes()))
        return evaluate_workspace(ws, proto, allow_scoring=False, record=record,
                                  grid=(b.grid or None) if grid and not record else None)

    def _score(self, sub_id: str, scores: Mapping[str, float] | None = None) -> dict[str, Any]:
        """Score a received submission, step the Ladder, sign and store the receipt (one transaction)."""
        with Session(self.engine) as s:
            sub = s.get(db.Submission, sub_id)
            assert sub is not None
            if sub.status == "scored":
                rec = s.get(db.Receipt, sub_id)
                assert rec is not None
                return dict(rec.receipt)
            team = s.get(db.Team, sub.team_id)
            st = self._launched(s)
            assert team is not None
            detector, sha, fmt, team_id = sub.detector, sub.predictions_sha256, sub.fmt, team.id
            received_at, team_name, commitment = sub.received_at, team.name, dict(st.commitment)
            canaries = dict(st.canaries)
        if scores is None:
            data = (self._submission_file(sha)).read_bytes()
            reader = raid_format.read_predictions if fmt == "raid" else raid_format.read_run_export
            scores = reader(data, source=f"submissions/{sha}", ids=self._ids())
        b = self.cfg.board
        with self._workspace() as ws:
            row, value, reason = entry_headline(ws, tomllib.loads((self.folder / "protocol.toml").read_text("utf-8")),
                                                detector, scores, metric=b.headline_metric,
                                                min_cell_size=b.min_cell_size)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            canary = canary_block(row, scores, canaries)
        key = receipts.load_signing_key(self.key_path)
        stamp = None
        if self.cfg.board.tsa_url:  # over the predictions file's bytes: it existed at the token's time
            data = (self._submission_file(sha)).read_bytes()
            stamp = base64.b64encode(tsa.request_token(self.cfg.board.tsa_url, data)[0]).decode("ascii")
        with Session(self.engine) as s, s.begin():
            lad = s.execute(select(db.Ladder).where(db.Ladder.team_id == team_id).with_for_update()).scalar_one()
            sub = s.get(db.Submission, sub_id, populate_existing=True)
            assert sub is not None
            if sub.status != "received":  # scored meanwhile by another process (a reveal's recovery)
                rec = s.get(db.Receipt, sub_id)
                if rec is None:
                    raise BoardError(f"submission {sub_id} was {sub.status} meanwhile")
                return dict(rec.receipt)
            if value is not None:
                step = ladder_step(lad.best, value, eta=self.cfg.board.ladder_eta)
                lad.best, lad.released = step.best, step.released
                lad.updated_at = _now()
            sub.headline, sub.headline_reason, sub.released = value, reason, lad.released
            sub.canary, sub.status = canary, "scored"
            receipt = receipts.sign_receipt(key, board=self.cfg.board.name,
                                            commitment_sha256=receipts.commitment_sha256(commitment),
                                            team=team_name, predictions_sha256=sha, received_at=_iso(received_at),
                                            submission_id=sub_id, submission_n=sub.seq, released=lad.released,
                                            fmt=fmt, tsa_token_b64=stamp)
            s.add(db.Receipt(submission_id=sub_id, receipt=receipt))
        return receipt

    def team_submissions(self, team: TeamInfo) -> list[dict[str, Any]]:
        """``team``'s own submissions (never another team's): id, number, time, file hash,
        status, the value the Ladder released after it, and the receipt. The unrounded
        headline is not shown before the reveal."""
        with Session(self.engine) as s:
            revealed = (st := self._state(s)) is not None and st.revealed_at is not None
            out = []
            for sub in s.scalars(select(db.Submission).where(db.Submission.team_id == team.id)
                                 .order_by(db.Submission.seq)):
                rec = s.get(db.Receipt, sub.id)
                d = {"submission_id": sub.id, "n": sub.seq, "received_at": _iso(sub.received_at),
                     "predictions_sha256": sub.predictions_sha256, "format": sub.fmt, "status": sub.status,
                     "released": sub.released, "receipt": dict(rec.receipt) if rec else None,
                     "failed_reason": sub.headline_reason if sub.status == "failed" else None}
                if revealed:
                    d.update(headline=sub.headline, headline_reason=sub.headline_reason, canary=sub.canary)
                out.append(d)
        return out

    def public_scores(self) -> list[dict[str, Any]]:
        """The public board: per team, the headline metric as the Ladder released it (null with
        the reason before its first released score; a reason that would tell anything of the
        labels, such as a count of human texts, waits for the reveal and is shown after it: the
        reason of the team's entry), the number of scored
        submissions, the rule and how thresholds are fitted. A headline computed on fewer human
        or AI texts than the minimum cell size is never released."""
        m = self.cfg.board.headline_metric
        with Session(self.engine) as s:
            revealed = (st := self._state(s)) is not None and st.revealed_at is not None
            why = {team: sub.headline_reason for team, sub in self._entries(s)} if revealed else {}
            rows = s.execute(select(db.Team.name, db.Ladder.released,
                                    select(func.count()).select_from(db.Submission)
                                    .where(db.Submission.team_id == db.Team.id, db.Submission.status == "scored")
                                    .scalar_subquery())
                             .join(db.Ladder, db.Ladder.team_id == db.Team.id)).all()
        out = [{"team": name, "metric": m, "metric_description": HEADLINES[m], "released": rel,
                "released_reason": None if rel is not None else (
                    "no submission scored yet" if not n else
                    f"the headline of this team's entry is undefined: {why[name]}" if why.get(name) else
                    "the headline of this team's submissions is undefined so far (the reason is published at the "
                    "reveal: before it, nothing about the hidden labels is told)"),
                "submissions": int(n or 0), "rule": LADDER_RULE, "eta": self.cfg.board.ladder_eta,
                "thresholds": self.cfg.threshold_rule}
               for name, rel, n in rows]
        return sorted(out, key=lambda r: (r["released"] is None, -(r["released"] or 0.0), r["team"]))

    # ------------------------------------------------------------------ reveal
    def _entries(self, s: Session) -> list[tuple[str, db.Submission]]:
        """(team, its last scored submission) for every team with one: the entries."""
        out = []
        for team in s.scalars(select(db.Team).order_by(db.Team.name)):
            sub = s.scalars(select(db.Submission).where(db.Submission.team_id == team.id,
                                                        db.Submission.status == "scored")
                            .order_by(db.Submission.seq.desc())).first()
            if sub is not None:
                out.append((team.name, sub))
        return out

    def _rules(self, commitment: Mapping[str, Any]) -> dict[str, Any]:
        """The scoring rules committed at launch (the record's ``rules``); for a board launched
        before they were committed (formats /1 and /2), :func:`board_rules` of ``board.toml``."""
        r = commitment.get("rules")
        return dict(r) if isinstance(r, Mapping) else board_rules(self.cfg)

    def check_rules(self) -> None:
        """Refuse to run a launched board whose ``board.toml`` now says other scoring rules than
        those committed at launch (:data:`EDITABLE_RULES`: the Ladder, the headline, the minimum
        cell size and the grid would change under the teams, and ``check-reveal`` would fail).

        Raises:
            InputError: one line naming ``board.toml``, the field, the committed value and the new one.
        """
        with Session(self.engine) as s:
            st = self._state(s)
            committed = (st.commitment or {}).get("rules") if st is not None else None
        if not isinstance(committed, Mapping):
            return
        now = board_rules(self.cfg)
        if st is not None and (st.commitment or {}).get("board") != self.cfg.board.name:
            raise InputError(f"{(st.commitment or {}).get('board')!r} was committed at launch, "
                             f"{self.cfg.board.name!r} is there now; a launched board's name cannot change",
                             file=str(self.cfg.path), field="board.name")
        for key in EDITABLE_RULES:
            if key in committed and committed.get(key) != now[key]:
                raise InputError(f"{committed.get(key)!r} was committed at launch, {now[key]!r} is there now; a "
                                 "launched board's rules cannot change: restore the launch value",
                                 file=str(self.cfg.path), field=f"board.{RULE_FIELD.get(key, key)}")

    def reveal(self, *, force: bool = False) -> Path:
        """Publish the labels, the salt and one veribench bundle per entry (its last scored
        submission), plus one bundle of all entries together (paired tests, Holm, tiers), in
        ``reveal/``; returns that folder. Every scored submission's file is published too
        (``submissions/<sha256>``) with the Ladder's history (``ladder.json``: each unrounded
        headline and the value released), so that each released value can be recomputed. ``veribench verify`` checks each bundle;
        :func:`check_reveal_dir` checks the revealed set against the launch commitment.

        Submissions are closed first (``closed_at``) and any still in flight are scored; the
        folder is written as ``.reveal.partial-<pid>`` and renamed into place, then the reveal
        is recorded; a reveal killed midway leaves no ``reveal/`` (submissions stay closed) and
        is run again.

        Raises:
            BoardError: not launched, no entry, or before ``reveal_at`` without ``force``.
        """
        b = self.cfg.board
        if b.reveal_at is not None and _now() < _aware(b.reveal_at) and not force:
            raise BoardError(f"board {b.name} reveals at {_iso(_aware(b.reveal_at))}; "
                             "revealing earlier ends the cycle for every team (`veribench leaderboard reveal --force` does so)")
        with Session(self.engine) as s, s.begin():  # close submissions first, then finish those in flight
            st = self._launched(s)
            if st.revealed_at is not None and st.reveal_dir:
                return Path(st.reveal_dir)
            if not any(self._entries(s)):
                raise BoardError(f"board {b.name} has no scored entry to reveal")
            st.closed_at = st.closed_at or _now()
        self.recover()
        with Session(self.engine) as s:
            st = self._launched(s)
            entries = sorted((team, sub.detector, sub.id, sub.seq) for team, sub in self._entries(s))
            salt, commitment, canaries = bytes.fromhex(st.salt_hex), dict(st.commitment), dict(st.canaries)
        if not entries:
            raise BoardError(f"board {b.name} has no scored entry to reveal")
        for old in self.folder.glob(".reveal.partial-*"):
            shutil.rmtree(old, ignore_errors=True)
        out = self.folder / "reveal"
        if out.exists():  # renamed by a reveal killed before it was recorded: never acknowledged
            shutil.rmtree(out)
        stage = self.folder / f".reveal.partial-{os.getpid()}"
        (stage / "protocols").mkdir(parents=True)
        (stage / "bundles").mkdir()
        ids = self._ids()
        labels = {det: team for team, det, _, _ in entries}
        rules = self._rules(commitment)
        launch_proto = (self.folder / "protocol.toml").read_text(encoding="utf-8")
        with self._workspace() as ws:
            rows = hidden_rows(ws, ids, canaries)
            problems = setcommit.check_reveal(commitment, rows, salt)
            if problems:
                raise BoardError(f"the workspace's set disagrees with the launch commitment: {problems[0]}")
            runs: list[tuple[str, list[str]]] = [(team, [det]) for team, det, _, _ in entries]
            runs.append(("all", [det for _, det, _, _ in entries]))
            grids: dict[str, list[dict[str, Any]]] = {}
            for key, dets in runs:
                name = f"{b.name}-{key.lower()}"
                ptext = bundle_protocol(launch_proto, name=name, tag=name.upper(), detectors=dets, labels=labels)
                pfile = stage / "protocols" / f"{key}.toml"
                pfile.write_text(ptext, encoding="utf-8")
                commit(ws, pfile, new_protocol=True)
                self._evaluate(ws, dets, record=True, proto_path=pfile)
                publish(ws, name.upper(), stage / "bundles" / key)
                if key != "all":
                    grids[key] = entry_grid(ws, ptext, rules["grid"], int(rules["min_cell_size"]))
        history = self._ladder_history()
        last = {h["team"]: h for h in history}
        with Session(self.engine) as s:
            subs = {team: s.get(db.Submission, sub_id) for team, _, sub_id, _ in entries}
        result_entries = []
        for team, det, _, _ in entries:
            sub = subs[team]
            assert sub is not None
            result_entries.append(entry_record(
                rules, last[team], canary=sub.canary, table1=bundle_table1_row(stage / "bundles" / team, team, det),
                grid=grids[team], root=_bundle_root(stage / "bundles" / team)))
            if isinstance(sub.canary, Mapping) and sub.canary.get("reason") and canaries:  # logged now, never before
                warnings.warn(f"entry {team}: canary leak test undefined: {sub.canary['reason']}",
                              UndefinedMetricWarning, stacklevel=2)
        all_results = json.loads((stage / "bundles" / "all" / "results.json").read_text(encoding="utf-8"))
        hidden = "".join(json.dumps({"doc_id": r.doc_id, "text": r.text, "label": r.label, "arm": r.arm,
                                     "tags": dict(r.tags), "canary_of": r.canary_of, "record": dict(r.record)},
                                    ensure_ascii=False) + "\n" for r in rows)
        write_durably(stage / "hidden_set.jsonl", hidden.encode("utf-8"))
        write_durably(stage / "salt.txt", (salt.hex() + "\n").encode("ascii"))
        for h in history:
            write_durably(stage / "submissions" / h["predictions_sha256"],
                          self._submission_file(h["predictions_sha256"]).read_bytes())
        write_durably(stage / "ladder.json", ladder_bytes(rules, history))
        write_durably(stage / "commitment.json", (self.folder / "commitment.json").read_bytes())  # the launch bytes
        write_durably(stage / "protocol.toml", (self.folder / "protocol.toml").read_bytes())
        if (self.folder / "commitment.tsr").is_file():
            write_durably(stage / "commitment.tsr", (self.folder / "commitment.tsr").read_bytes())
        launch_record = json.loads((self.folder / "commitment.json").read_text(encoding="utf-8"))  # as published
        write_durably(stage / "results.json", results_bytes(launch_record, rules, result_entries, all_results,
                                                            _bundle_root(stage / "bundles" / "all")))
        for p in [stage, *stage.rglob("*")]:  # published as a whole: readable by anyone
            if not p.is_symlink():
                p.chmod(0o755 if p.is_dir() else PUBLIC_MODE)
        os.replace(stage, out)
        fsync_folder(self.folder)
        with Session(self.engine) as s, s.begin():
            st2 = self._launched(s)
            st2.revealed_at, st2.reveal_dir = _now(), str(out)
        return out

    def _ladder_history(self) -> list[dict[str, Any]]:
        """Every scored submission in the order the Ladder saw them per team: its file's SHA-256
        and format, the unrounded headline (or null and the reason) and the value released."""
        with Session(self.engine) as s:
            rows = s.execute(select(db.Team.name, db.Submission).join(db.Team, db.Team.id == db.Submission.team_id)
                             .where(db.Submission.status == "scored")
                             .order_by(db.Team.name, db.Submission.seq)).all()
            out = [{"team": name, "n": sub.seq, "submission_id": sub.id, "received_at": _iso(sub.received_at),
                    "predictions_sha256": sub.predictions_sha256, "format": sub.fmt, "headline": sub.headline,
                    "headline_reason": sub.headline_reason, "released": sub.released} for name, sub in rows]
        return sorted(out, key=lambda h: (h["team"], h["n"]))  # by code point, whatever the database's collation

    def results(self) -> dict[str, Any]:
        """The revealed results (``reveal/results.json``). Raises BoardError before the reveal."""
        with Session(self.engine) as s:
            st = self._launched(s)
            if st.revealed_at is None or not st.reveal_dir:
                raise BoardError(f"board {self.cfg.board.name} is not revealed yet: only the Ladder's headline is public")
            path = Path(st.reveal_dir) / "results.json"
        return dict(json.loads(path.read_text(encoding="utf-8")))

    def recover(self) -> list[str]:
        """Score every submission received but not yet scored (a process killed in between);
        returns their ids. Such a submission had no receipt: nothing acknowledged is lost."""
        with Session(self.engine) as s:
            todo = list(s.scalars(select(db.Submission.id).where(db.Submission.status == "received")
                                  .order_by(db.Submission.received_at)))
        for sub_id in todo:
            with contextlib.suppress(VeribenchError):  # marked failed with its reason, never acknowledged
                self._score_or_fail(sub_id)
        return todo

