"""Import detector scores recorded elsewhere (for example gathered by hand from a
commercial tool's web page) as the scores of an :class:`ImportedDetector`.

Input: CSV (header row), JSON (an array of objects, or ``{"scores": [...]}``) or JSONL,
one record per (document, detector):

==================  =====================================================================
field               meaning (aliases)
==================  =====================================================================
doc_id              id of a document already in the workspace (``id``, ``document_id``)
detector            the detector's name (or ``--detector``; the file's value wins)
raw                 the value as displayed (``score``, ``value``, or ``--value-field``); a
                    two-item list ``[verdict, value]`` gives both (ZipPy's output)
scale               native scale (or ``--scale``, default ``p_ai``); see
                    :data:`veribench.scales.SCALES`
(verdict)           the tool's verdict text: read only from the field the user names with
                    ``--verdict-field`` (never by alias: a ``label`` column is usually the
                    ground truth, case c28)
version             the detector's version string (``detector_version``, or ``--version``)
scan_date           ISO date or date-time of the scan (``scanned_at``, ``date``); default now
submitted_text      the exact text pasted into the tool, when it differs from the corpus
                    text (``text``); the score is then keyed by its hash and flagged
status              ``ok`` (default) or a failure code from ``STATUS_CODES`` (``too_short``
                    ...); a failed row needs no value
reason              the failure's reason text (failed rows)
==================  =====================================================================

Any other column is not read; it is named in the report (``unused_fields``) with the
number of records holding it, so a column such as ``label`` or ``truth`` is visibly left
out rather than silently taken as the detector's answer.

Rows whose value is NaN or infinite are not imported and are named in the report (never
coerced to 0). A value outside the declared scale's range, an unknown document id, a
repeated (document, detector) pair, a non-numeric value or a bad date raises
:class:`InputError` naming the file, record and field; the import then writes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from veribench.corpus.importers._io import fmt_value, iter_csv, iter_jsonl, load_json
from veribench.corpus.importers._store import ScoreBatch, store_import
from veribench.corpus.report import ImportReport, classify_difference
from veribench.errors import InputError
from veribench.hashing import text_sha256
from veribench.records import STATUS_CODES, ScoreResult
from veribench.scales import ImportedDetector, get_scale, normalise

ALIASES = {
    "doc_id": ("doc_id", "id", "document_id"),
    "detector": ("detector", "detector_name"),
    "raw": ("raw", "score", "value"),
    "scale": ("scale",),
    "version": ("version", "detector_version"),
    "scan_date": ("scan_date", "scanned_at", "date"),
    "submitted_text": ("submitted_text", "text"),
    "status": ("status",),
    "reason": ("reason",),
}
#: Columns that often hold the ground truth; the report says so when one is left unused.
GROUND_TRUTH_NAMES = frozenset({"label", "labels", "truth", "ground_truth", "gold", "y", "y_true", "target", "class"})


def _records(path: Path) -> Iterator[tuple[Any, dict[str, Any]]]:
    suf = path.suffix.lower()
    if suf == ".csv":
        yield from iter_csv(path)
    elif suf in (".jsonl", ".ndjson"):
        yield from iter_jsonl(path)
    elif suf == ".json":
        obj = load_json(path)
        if isinstance(obj, dict) and isinstance(obj.get("scores"), list):
            obj = obj["scores"]
        if not isinstance(obj, list):
            raise InputError("expected a JSON array of score records (or {\"scores\": [...]})", file=str(path))
        for i, rec in enumerate(obj):
            if not isinstance(rec, dict):
                raise InputError(f"expected a JSON object, got {type(rec).__name__}", file=str(path), record=i)
            yield i, rec
    else:
        raise InputError(f"unknown score file type {suf!r}; use .csv, .json or .jsonl", file=str(path))


def _pick(rec: dict[str, Any], name: str, override: str | None = None) -> tuple[str | None, Any]:
    """(field name, value) of the first non-empty of ``override`` then ``name``'s aliases."""
    for k in ((override,) if override else ()) + ALIASES.get(name, ()):
        if k in rec and rec[k] is not None and not (isinstance(rec[k], str) and not rec[k].strip()):
            return k, rec[k]
    return None, None


def _date(v: Any, *, file: str, record: Any, field: str) -> datetime:
    try:
        d = datetime.fromisoformat(str(v).strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"not an ISO date or date-time: {v!r}", file=file, record=record, field=field) from None
    d = d if d.tzinfo else d.replace(tzinfo=UTC)
    now = datetime.now(UTC)
    if d > now:  # a scan cannot be dated after the import that records it (the log would contradict it)
        raise InputError(f"scan date {v!r} is in the future (now {now.isoformat(timespec='seconds')})", file=file,
                         record=record, field=field)
    return d


def read_scores(
    ws: Any,
    path: str | Path,
    *,
    detector: str | None = None,
    version: str | None = None,
    scale: str | None = None,
    value_field: str | None = None,
    verdict_field: str | None = None,
    rescan: bool = False,
) -> tuple[ImportReport, list[ScoreBatch], dict[str, str]]:
    """Read and validate a score file against the documents in ``ws``; nothing is written.

    Returns ``(report, score batches, submitted texts that differ from the corpus)``.
    ``rescan``: the batches replace the stored scores of their texts (a new scan; the old
    rows move to ``scores_superseded``) instead of being kept as conflicts.

    Raises:
        InputError: see the module docstring; also a ``verdict_field`` or ``value_field``
            that no record holds.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("file not found", file=str(p))
    f = str(p)
    if scale is not None:
        get_scale(scale)  # fail early on an unknown --scale
    report = ImportReport(kind="scores", source=f)
    rows: list[tuple[Any, dict[str, Any]]] = list(_records(p))
    if not rows:
        raise InputError("no score records found", file=f)
    for opt, name in (("--verdict-field", verdict_field), ("--value-field", value_field)):
        if name and not any(name in row for _, row in rows):
            cols = sorted({k for _, row in rows for k in row if isinstance(k, str)})
            raise InputError(f"{opt} {name!r} is not a field of any record; fields: {', '.join(cols)}", file=f,
                             field=name)
    used: set[str] = set()
    ids = []
    for rec, row in rows:
        k, v = _pick(row, "doc_id")
        if k is None:
            raise InputError("required field is missing (doc_id)", file=f, record=rec, field="doc_id")
        ids.append(str(v))
    known = {d: (sha, text) for d, sha, text in ws.query(
        "SELECT doc_id, text_sha256, text FROM documents WHERE doc_id IN (SELECT unnest(?::VARCHAR[]))",
        [list(dict.fromkeys(ids))])}
    batches: dict[tuple[str, str, datetime | None], ScoreBatch] = {}
    first_of: dict[tuple[str, str], tuple[Any, Any, str]] = {}  # (spec hash, text) -> the first record's score
    seen: dict[tuple[str, str, str], Any] = {}
    submitted: dict[str, str] = {}
    for (rec, row), doc_id in zip(rows, ids):
        if doc_id not in known:
            raise InputError(f"unknown document id {doc_id!r}; import the documents first", file=f, record=rec,
                             field="doc_id")
        used.update(k for k in (_pick(row, n, o)[0] for n, o in (
            ("doc_id", None), ("detector", None), ("version", None), ("scale", None), ("status", None),
            ("reason", None), ("verdict", verdict_field), ("raw", value_field), ("scan_date", None),
            ("submitted_text", None))) if k)
        _, name = _pick(row, "detector")
        name = str(name).strip() if name is not None else detector
        if not name:
            raise InputError("no detector name: give a detector column or --detector", file=f, record=rec,
                             field="detector")
        _, ver = _pick(row, "version")
        ver = str(ver) if ver is not None else (version or "")
        key = (doc_id, name, ver)
        if key in seen:
            raise InputError(f"second score for document {doc_id!r} and detector {name!r} (first at record "
                             f"{seen[key]})", file=f, record=rec, field="doc_id")
        seen[key] = rec
        sk, sc_name = _pick(row, "scale")
        try:
            sc = get_scale(str(sc_name) if sc_name is not None else (scale or "p_ai"))
        except InputError as e:
            raise InputError(e.reason, file=f, record=rec, field=sk or "scale") from None
        _, status = _pick(row, "status")
        status = str(status).strip() if status is not None else "ok"
        if status not in STATUS_CODES:
            raise InputError(f"unknown status {status!r}; known: {sorted(STATUS_CODES)}", file=f, record=rec,
                             field="status")
        _, verdict = _pick(row, "verdict", verdict_field)
        vk, value = _pick(row, "raw", value_field)
        if isinstance(value, (list, tuple)) and len(value) == 2 and isinstance(value[0], str):
            verdict, value = value[0], value[1]
        if status != "ok":
            _, why = _pick(row, "reason")
            result = ScoreResult.failed(status, reason=str(why or "recorded as " + status))
        else:
            if value is None:
                raise InputError("required field is missing (the score value)", file=f, record=rec,
                                 field=value_field or "raw")
            if isinstance(value, bool):
                raise InputError(f"score must be a number, got {value!r}", file=f, record=rec, field=vk)
            try:
                num = float(value)
            except (TypeError, ValueError):
                raise InputError(f"score must be a number, got {value!r}", file=f, record=rec, field=vk) from None
            if not math.isfinite(num):
                report.nonfinite_scores.append({"file": f, "record": rec, "doc_id": doc_id, "detector": name,
                                                "field": vk, "value": fmt_value(num), "action": "not imported"})
                continue
            if isinstance(value, int) and sc.name == "p_ai":
                report.integer_scores.append({"file": f, "record": rec, "doc_id": doc_id, "count": 1,
                                              "action": "imported as float"})
            try:
                result = normalise(num, sc, verdict)
            except ValueError as e:
                fld = (verdict_field or vk) if "verdict" in str(e) else vk
                hint = "; name the verdict column with --verdict-field" if "needs a verdict" in str(e) and \
                    not verdict_field else ""
                raise InputError(f"score out of range or unusable: {e}{hint}", file=f, record=rec,
                                 field=fld) from None
        result.vendor_version = ver or None
        result.detail = {**result.detail, "source_file": f, "record": rec}
        dk, dv = _pick(row, "scan_date")
        when = _date(dv, file=f, record=rec, field=dk) if dv is not None else None
        doc_sha, doc_text = known[doc_id]
        _, sub = _pick(row, "submitted_text")
        sha = doc_sha
        if sub is not None:
            if not isinstance(sub, str):
                raise InputError("expected text", file=f, record=rec, field="submitted_text")
            sha = text_sha256(sub)
            if sha != doc_sha:
                submitted[sha] = sub
                report.text_differs.append({"detector": name, "doc_id": doc_id, "record": rec,
                                            "field": "submitted_text",
                                            "how": classify_difference(doc_text, sub) if doc_text else "substituted",
                                            "submitted_chars": len(sub)})
        spec = ImportedDetector(name, version=ver).spec
        b = batches.setdefault((spec.hash, name, when), ScoreBatch(spec=spec, scanned_at=when, replace=rescan))
        prev = first_of.get((spec.hash, sha))
        if prev is None:
            first_of[(spec.hash, sha)] = (result.raw, result.status, doc_id)
            b.items.append((sha, result))
        elif (prev[0], prev[1]) != (result.raw, result.status):  # one score per text: the first is stored
            report.score_conflicts.append({"detector": name, "text_sha256": sha, "doc_id": doc_id, "score": result.raw,
                                           "stored_score": prev[0], "stored_from": f"record of {prev[2]} in this file"})
        b.links.append((doc_id, sha))
        report.count_score(p.name, spec.name)
        entry = report.set_entry(p.name)
        entry["documents"] = len(known)
    report.set_entry(p.name)["records"] = len(rows)
    counts: dict[str, int] = {}
    for _, row in rows:
        for k, v in row.items():
            if k not in used and v is not None and not (isinstance(v, str) and not v.strip()):
                counts[str(k)] = counts.get(str(k), 0) + 1
    for k, n in counts.items():
        hint = ("not read as the detector's verdict (it may be the ground truth); name it with --verdict-field if "
                "it is the tool's own verdict" if k.strip().lower() in GROUND_TRUTH_NAMES else
                "not read; name it with --value-field or --verdict-field to use it")
        report.unused_fields.append({"file": f, "field": k, "records": n, "action": hint})
    for b in batches.values() if not rescan else ():
        stored = ws.cached_scores(b.spec.hash, [s for s, _ in b.items])
        for sha, r in b.items:
            old = stored.get(sha)
            if old is not None and (old.raw != r.raw or old.status != r.status):
                report.score_conflicts.append({"detector": b.spec.name, "text_sha256": sha, "score": r.raw,
                                               "stored_score": old.raw, "stored_from": "workspace (kept)"})
        kept = sum(1 for sha, _ in b.items if sha in stored)  # a stored score is never overwritten
        if kept:  # so it is not counted as stored by this import
            report.count_score(p.name, b.spec.name, -kept)
    return report, list(batches.values()), submitted


def import_scores(
    ws: Any,
    path: str | Path,
    *,
    detector: str | None = None,
    version: str | None = None,
    scale: str | None = None,
    value_field: str | None = None,
    verdict_field: str | None = None,
    rescan: bool = False,
) -> ImportReport:
    """Import a score file into ``ws`` (all or nothing); see the module docstring.

    Args:
        detector: detector name for rows without a ``detector`` field.
        version: version string for rows without a ``version`` field.
        scale: scale for rows without a ``scale`` field (default ``p_ai``).
        value_field: name of the field holding the value, if not ``raw``/``score``/``value``.
        verdict_field: name of the field holding the tool's own verdict; without it no
            column is read as a verdict (a ``[verdict, value]`` value still gives both).
        rescan: store the file as a new scan of its texts (e.g. under a ``rescan = true``
            protocol): each stored score of the same spec and text moves to
            ``scores_superseded`` (kept, never lost) and the new one is used; without it a
            stored score is kept and a differing value is reported as a conflict.
    """
    report, batches, submitted = read_scores(ws, path, detector=detector, version=version, scale=scale,
                                             value_field=value_field, verdict_field=verdict_field, rescan=rescan)
    return store_import(ws, report, (), batches, submitted)
