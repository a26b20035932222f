"""Importer for the Liang et al. (2023) sets with the seven detectors' recorded outputs.

Source: Liang, Yuksekgonul, Mao, Wu, Zou, "GPT detectors are biased against non-native
English writers", Patterns 4(7), 2023 (arXiv:2304.02819); data and raw detector outputs
from https://github.com/Weixin-Liang/ChatGPT-Detector-Bias (marked MIT upstream).

Layout read (``DIR`` is the folder holding ``Human_Data/`` and ``GPT_Data/``, or the
upstream repository root holding ``Data_and_Results/``)::

    <group>/<set>/data.json      [{"document": str, "prompt"?: str, ...}]
    <group>/<set>/name.json      {"name": str, "kind": "Human-Written"|"AI-Generated", "model": str}
    <group>/<set>/<Detector>.json  [{"document": str, "score": P(AI) in [0,1], ...}], same order

Rules (acceptance of veribench issue 2):

- each set folder is a subgroup named exactly as the folder; document ids are
  ``liang2023/<set>/<index>`` (index = 0-based position in data.json);
- ``kind`` Human-Written -> ``human``; AI-Generated -> ``ai``, or ``ai-edited-human``
  when the set sits under ``Human_Data/`` (GPT-4-polished TOEFL, GPT-simplified essays);
- each detector file's stem is the detector name; its top-level ``score`` is P(AI) in
  [0, 1] for every detector (the paper's rule is ``score > 0.5``), stored as a score of
  ``ImportedDetector(name, version="liang2023-recorded", source="liang2023")``;
- the score is keyed by the hash of the text the detector actually saw: the text its
  response echoes (:data:`SUBMITTED_TEXT_FIELDS`), else the record's ``document``. The
  authors doubled short essays and some vendors truncated long ones, so these differ
  from data.json for many records; each one is listed in the report and flagged
  downstream (``submissions.submitted_sha256 != documents.text_sha256``);
- duplicates inside a set are all kept as documents (counts follow the source records)
  and listed in the report; non-finite scores are not stored and are named; integer
  scores, NaN in nested fields, missing detector files, control characters and mojibake
  are reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from veribench.corpus.document import Document, Generation, Provenance
from veribench.corpus.importers._io import (
    fmt_value,
    json_safe,
    load_json,
    load_json_flagged,
    nonfinite_paths,
    refuse_nonfinite,
)
from veribench.corpus.importers._store import ScoreBatch, store_import
from veribench.corpus.report import ImportReport, classify_difference, text_quirks
from veribench.errors import InputError
from veribench.hashing import text_sha256
from veribench.records import ScoreResult
from veribench.scales import ImportedDetector, get_scale

CORPUS = "liang2023"
DETECTORS = ("GPTZero", "OriginalityAI", "ZeroGPT", "Crossplag", "HFOpenAI", "Quil", "Sapling")
GROUPS = ("Human_Data", "GPT_Data")
VERSION = "liang2023-recorded"
SOURCE_URL = "https://github.com/Weixin-Liang/ChatGPT-Detector-Bias"
CITATION = ('Liang, Yuksekgonul, Mao, Wu, Zou, "GPT detectors are biased against non-native English writers", '
            "Patterns 4(7), 2023")
LICENCE = "MIT (as marked upstream)"
#: The decision rule the paper applies to every detector's recorded score (``veribench list corpora``).
DECISION_RULE = {"rule": "score > 0.5 on each detector's recorded P(AI)",
                 "source": "Liang et al. 2023 (Patterns 4(7)); the same as veribench's no-protocol default"}
#: The scans predate the paper's first public version (arXiv:2304.02819v1, 6 April 2023);
#: their exact dates are not recorded, so that date stands for "on or before".
SCAN_DATE = datetime(2023, 4, 6, tzinfo=UTC)
SCAN_DATE_NOTE = "on or before 2023-04-06 (arXiv:2304.02819v1); exact scan dates not recorded upstream"

#: name.json ``kind`` -> label; AI-Generated under Human_Data/ is a human text edited by AI.
KIND_LABELS = {"Human-Written": "human", "AI-Generated": "ai"}
EDITED_LABEL = "ai-edited-human"
#: Protocol arm per label: human essays predate ChatGPT (A); AI essays (C); AI-edited
#: human essays get their own arm so they are never blended into headline rates.
ARMS = {"human": "A", "ai": "C", "ai-edited-human": "AI-edited"}
#: Declared "written on or before" date of the human essays, by set-name prefix, where it is
#: documented (``provenance.date_bound``; :mod:`veribench.protocol.arm_rules`). The US 8th-grade
#: essays are the Hewlett Foundation's Automated Student Assessment Prize (ASAP) essays, released
#: on Kaggle in 2012 (Liang et al. 2023, Methods). No date is documented for the TOEFL and the
#: college essays: they are stored as "date unknown" and every run counts them among arm A's
#: undated texts.
DATE_BOUNDS: dict[str, tuple[str, str]] = {
    "HewlettStudentEssay": ("2012", "Hewlett Foundation ASAP essays, released on Kaggle in 2012 (Liang et al. 2023)"),
}
#: Writer tag by set-name prefix (the paper's native / non-native split).
WRITERS = {"TOEFL": "non-native", "HewlettStudentEssay": "native", "CollegeEssay": "native"}
#: Where a detector's response echoes the text it actually scored (path in the record).
SUBMITTED_TEXT_FIELDS: dict[str, tuple[str, ...]] = {
    "OriginalityAI": ("result_full", "content"),
    "Quil": ("result_full", "text"),
    "Sapling": ("result_full", "text"),
}
#: Vendor verdict field, where the response has one.
VERDICT_FIELDS: dict[str, tuple[str, ...]] = {"Quil": ("result_full", "label")}
PROVIDERS = {"GPT3": "openai", "GPT4": "openai", "ChatGPT": "openai"}
_SCALE = get_scale("p_ai")


@dataclass
class _Set:
    group: str
    name: str
    path: Path
    meta: dict[str, Any]
    label: str
    records: list[dict[str, Any]]
    texts: list[str] = field(default_factory=list)


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for k in path:
        if not isinstance(obj, dict) or k not in obj:
            return None
        obj = obj[k]
    return obj


def _rel(p: Path, root: Path) -> str:
    try:
        return str(p.relative_to(root.parent))
    except ValueError:
        return str(p)


def find_root(directory: str | Path) -> Path:
    """The folder holding ``Human_Data``/``GPT_Data`` under ``directory``.

    Raises:
        InputError: no such folder.
    """
    d = Path(directory)
    for cand in (d, d / "Data_and_Results", d / "liang2023"):
        if any((cand / g).is_dir() for g in GROUPS):
            return cand
    if not d.exists():
        raise InputError("folder not found", file=str(d))
    raise InputError(f"no {' or '.join(GROUPS)} folder found (is this the liang2023 data?)", file=str(d))


def _find(root: Path, group: str, sdir: Path, fname: str) -> Path:
    """``sdir/fname``; in the upstream repository layout some sets keep ``name.json`` and
    ``data.json`` only under ``data/<group lower-case>/<set>/``, which is tried next."""
    p = sdir / fname
    if not p.is_file() and root.name == "Data_and_Results":
        alt = root.parent / "data" / group.lower() / sdir.name / fname
        if alt.is_file():
            return alt
    return p


def _read_sets(root: Path) -> list[_Set]:
    sets = []
    for group in GROUPS:
        gdir = root / group
        if not gdir.is_dir():
            continue
        for sdir in sorted(p for p in gdir.iterdir() if p.is_dir()):
            name_file, data_file = _find(root, group, sdir, "name.json"), _find(root, group, sdir, "data.json")
            for f in (name_file, data_file):
                if not f.is_file():
                    raise InputError("missing file", file=_rel(f, root))
            nf = _rel(name_file, root)
            meta = load_json(name_file, label=nf)
            if not isinstance(meta, dict):
                raise InputError("expected a JSON object", file=nf)
            refuse_nonfinite(meta, file=nf, record=None)
            for k in ("name", "model"):
                if meta.get(k) is not None and not isinstance(meta[k], str):
                    raise InputError(f"expected a string, got {type(meta[k]).__name__}", file=nf, field=k)
            kind = meta.get("kind")
            if kind is None:
                raise InputError("required field is missing", file=nf, field="kind")
            if kind not in KIND_LABELS:
                raise InputError(f"unknown kind {kind!r}; expected one of {sorted(KIND_LABELS)}", file=nf, field="kind")
            label = KIND_LABELS[kind]
            if label == "ai" and group == "Human_Data":
                label = EDITED_LABEL
            df = _rel(data_file, root)
            data = load_json(data_file, label=df)
            if not isinstance(data, list):
                raise InputError(f"expected a JSON array of records, got {type(data).__name__}", file=df)
            s = _Set(group, sdir.name, sdir, meta, label, data)
            for i, rec in enumerate(data):
                if not isinstance(rec, dict):
                    raise InputError(f"expected a JSON object, got {type(rec).__name__}", file=df, record=i)
                doc = rec.get("document")
                if doc is None:
                    raise InputError("required field is missing", file=df, record=i, field="document")
                if not isinstance(doc, str):
                    raise InputError(f"expected a string, got {type(doc).__name__}", file=df, record=i,
                                     field="document")
                if not doc.strip():
                    raise InputError("text is empty or whitespace only", file=df, record=i, field="document")
                s.texts.append(doc)
            sets.append(s)
    if not sets:
        raise InputError("no set folders found", file=str(root))
    return sets


def _group_keys(sets: list[_Set]) -> tuple[dict[tuple[str, int], str], dict[tuple[str, int], str], list[str]]:
    """Calibration-split group of every record, and the source document of edited texts.

    A record whose ``prompt`` contains the full text of a record of another set of the
    same family (set-name prefix) was written from it: it joins that record's group.
    When most of a set's records match one source set at the same index, the set is
    index-aligned with it and its unmatched records follow the same pairing. A prompted
    record without a source groups by its prompt (the topic); every other record is its
    own group.
    """
    notes: list[str] = []
    by_family: dict[str, list[_Set]] = {}
    for s in sets:
        by_family.setdefault(s.name.split("_")[0], []).append(s)
    source: dict[tuple[str, int], tuple[str, int]] = {}
    for s in sets:
        prompts = [r.get("prompt") if isinstance(r.get("prompt"), str) else None for r in s.records]
        if not any(prompts):
            continue
        others = [o for o in by_family[s.name.split("_")[0]] if o is not s]
        cands = [(t.strip(), (o.name, j)) for o in others for j, t in enumerate(o.texts) if len(t.strip()) > 40]
        matched: dict[int, tuple[str, int]] = {}
        for i, p in enumerate(prompts):
            if not p:
                continue
            # the record at the same index first (aligned sets), then any record
            same = [(o.texts[i].strip(), (o.name, i)) for o in others if i < len(o.texts)]
            for ts, key in same + cands:
                if len(ts) > 40 and ts[:40] in p and ts in p:
                    matched[i] = key
                    break
        aligned = None
        if matched:
            sets_hit = {k[0] for k in matched.values()}
            same_idx = sum(1 for i, k in matched.items() if k[1] == i)
            if len(sets_hit) == 1 and same_idx == len(matched) and len(matched) * 2 >= len(s.records):
                aligned = next(iter(sets_hit))
        for i in range(len(s.records)):
            if i in matched:
                source[(s.name, i)] = matched[i]
            elif aligned is not None:
                n_src = next(len(o.records) for o in sets if o.name == aligned)
                if i < n_src:
                    source[(s.name, i)] = (aligned, i)
        if aligned is not None:
            notes.append(f"{s.name}: written from {aligned} (index-aligned; {len(matched)} of {len(s.records)} "
                         "prompts contain the source text verbatim)")
    prompts_of = {(s.name, i): r.get("prompt") for s in sets for i, r in enumerate(s.records)}
    # identical texts inside a set share a group (so a duplicate never straddles the split)
    first_same: dict[tuple[str, int], tuple[str, int]] = {}
    for s in sets:
        firsts: dict[str, int] = {}
        for i, t in enumerate(s.texts):
            first_same[(s.name, i)] = (s.name, firsts.setdefault(t, i))
    keys: dict[tuple[str, int], str] = {}

    def resolve(k: tuple[str, int], depth: int = 0) -> str:
        if k in keys:
            return keys[k]
        if k in source and depth < 10:
            g = resolve(source[k], depth + 1)
        elif isinstance(prompts_of.get(k), str) and prompts_of[k].strip():
            g = f"{CORPUS}/prompt/{text_sha256(prompts_of[k])[:16]}"
        elif first_same.get(k, k) != k:
            g = resolve(first_same[k], depth + 1)
        else:
            g = f"{CORPUS}/{k[0]}/{k[1]}"
        keys[k] = g
        return g

    for k in prompts_of:
        resolve(k)
    src_ids = {k: f"{CORPUS}/{v[0]}/{v[1]}" for k, v in source.items()}
    return keys, src_ids, notes


def _detail(rec: dict[str, Any], file: str, index: int) -> dict[str, Any]:
    """Small, JSON-safe extras of a detector record (long echoes and HTML left out)."""
    out: dict[str, Any] = {"source_file": file, "record": index, "scan_date_note": SCAN_DATE_NOTE}
    for k, v in rec.items():
        if k in ("document", "score", "result_full"):
            continue
        if isinstance(v, (int, float, bool)) or (isinstance(v, str) and len(v) <= 200) or v is None:
            out[k] = v
    rf = rec.get("result_full")
    if isinstance(rf, dict):
        small = {}
        for k, v in rf.items():
            if isinstance(v, (int, float, bool)) or v is None or (isinstance(v, str) and len(v) <= 64):
                small[k] = v
            elif isinstance(v, dict) and all(isinstance(x, (int, float, bool, str)) or x is None for x in v.values()) \
                    and len(v) <= 10:
                small[k] = v
        if small:
            out["result_full"] = small
    return json_safe(out)


def read_liang2023(directory: str | Path) -> tuple[ImportReport, list[Document], list[ScoreBatch], dict[str, str]]:
    """Read and validate the whole folder; nothing is written.

    Returns:
        ``(report, documents, score batches, submitted texts that differ from the corpus
        text by sha256)``.

    Raises:
        InputError: malformed JSON, a missing ``data.json``/``name.json``, a missing or
            empty ``document``, a missing, non-numeric or out-of-range ``score``, or a
            detector file whose record count differs from data.json; the message names
            the file, record and field.
    """
    root = find_root(directory)
    report = ImportReport(kind="liang2023", source=str(Path(directory)), corpus=CORPUS)
    sets = _read_sets(root)
    groups, sources, notes = _group_keys(sets)
    report.notes.extend(notes)
    docs: list[Document] = []
    for s in sets:
        entry = report.set_entry(s.name)
        entry["records"] = len(s.records)
        entry["documents"] = len(s.records)
        entry["labels"] = {s.label: len(s.records)}
        entry["group"] = s.group
        entry["name"] = s.meta.get("name")
        prefix = s.name.split("_")[0]
        writer = WRITERS.get(prefix) if s.label != "ai" else None
        model = s.meta.get("model")
        by_sha: dict[str, list[int]] = {}
        for i, (rec, text) in enumerate(zip(s.records, s.texts)):
            doc_id = f"{CORPUS}/{s.name}/{i}"
            tags = {"set": s.name, "source_group": s.group}
            if writer:
                tags["writer"] = writer
            if s.label != "human" and model:
                tags["generator"] = str(model)
            for k, v in rec.items():
                if k not in ("document", "prompt") and isinstance(v, str) and len(v) <= 100:
                    tags[k] = v
            gen = None
            if s.label != "human":
                gen = Generation(provider=PROVIDERS.get(str(model)), model=str(model) if model else None,
                                 prompt=rec.get("prompt") if isinstance(rec.get("prompt"), str) else None,
                                 source_document=sources.get((s.name, i)))
            prov = Provenance(
                source_url=f"{SOURCE_URL}/tree/main/Data_and_Results/{s.group}/{s.name}",
                licence=LICENCE, citation=CITATION,
                method=(f"{s.meta.get('name', s.name)}: set {s.name} of Liang et al. (2023), record {i} of data.json; "
                        "detector outputs recorded by the authors"),
                dataset=CORPUS, dataset_published="2023-04",
                **({"date_bound": DATE_BOUNDS[prefix][0], "date_bound_source": DATE_BOUNDS[prefix][1]}
                   if s.label == "human" and prefix in DATE_BOUNDS else {}),
            )
            docs.append(Document(id=doc_id, text=text, label=s.label, arm=ARMS[s.label], kind="essay",
                                 subgroup=s.name, tags=tags, group_key=groups[(s.name, i)], provenance=prov,
                                 generation=gen))
            by_sha.setdefault(docs[-1].text_sha256, []).append(i)
            q = text_quirks(text)
            if q:
                report.suspicious_text.append({"set": s.name, "doc_id": doc_id, "record": i, **q})
        for sha, idx in by_sha.items():
            if len(idx) > 1:
                report.duplicates.append({"set": s.name, "text_sha256": sha, "records": idx,
                                          "doc_ids": [f"{CORPUS}/{s.name}/{i}" for i in idx],
                                          "kept": "all (one document per source record)"})
    batches, submitted = _read_scores(root, sets, report)
    return report, docs, batches, submitted


def _read_scores(root: Path, sets: list[_Set], report: ImportReport) -> tuple[list[ScoreBatch], dict[str, str]]:
    batches: dict[str, ScoreBatch] = {}
    seen: dict[tuple[str, str], tuple[float, str]] = {}
    submitted: dict[str, str] = {}
    for s in sets:
        for det in DETECTORS:
            f = s.path / f"{det}.json"
            rel = _rel(f, root)
            if not f.is_file():
                report.missing_detector_files.append({"set": s.name, "detector": det, "file": rel})
                continue
            recs, has_nonfinite = load_json_flagged(f, label=rel)
            if not isinstance(recs, list):
                raise InputError(f"expected a JSON array of records, got {type(recs).__name__}", file=rel)
            if len(recs) != len(s.records):
                raise InputError(f"{len(recs)} records but data.json has {len(s.records)}; records must be in the "
                                 "same order as data.json", file=rel)
            spec = ImportedDetector(det, version=VERSION, source=CORPUS).spec
            batch = batches.setdefault(det, ScoreBatch(spec=spec, scanned_at=SCAN_DATE))
            n_int, int_recs = 0, []
            for i, rec in enumerate(recs):
                doc_id = f"{CORPUS}/{s.name}/{i}"
                if not isinstance(rec, dict):
                    raise InputError(f"expected a JSON object, got {type(rec).__name__}", file=rel, record=i)
                if "score" not in rec or rec["score"] is None:
                    raise InputError("required field is missing", file=rel, record=i, field="score")
                v = rec["score"]
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise InputError(f"score must be a number, got {type(v).__name__} {v!r}", file=rel, record=i,
                                     field="score")
                for path, bad in (nonfinite_paths({k: x for k, x in rec.items() if k != "score"})
                                  if has_nonfinite else ()):
                    report.nested_nonfinite.append({"file": rel, "record": i, "doc_id": doc_id, "path": path,
                                                    "value": fmt_value(bad)})
                if isinstance(v, float) and not math.isfinite(v):
                    report.nonfinite_scores.append({"file": rel, "record": i, "doc_id": doc_id, "detector": det,
                                                    "field": "score", "value": fmt_value(v),
                                                    "action": "not imported"})
                    continue
                if isinstance(v, int):
                    n_int += 1
                    int_recs.append(i)
                bad_range = _SCALE.check(float(v))
                if bad_range:
                    raise InputError(f"score out of range: {bad_range} (P(AI) must be in [0, 1])", file=rel,
                                     record=i, field="score")
                # The text the detector saw: its echo, else the record's document, else data.json's.
                corpus_text = s.texts[i]
                seen_text, fld = corpus_text, None
                doc_field = rec.get("document")
                if isinstance(doc_field, str) and doc_field != corpus_text:
                    seen_text, fld = doc_field, "document"
                echo_path = SUBMITTED_TEXT_FIELDS.get(det)
                echo = _get(rec, echo_path) if echo_path else None
                if isinstance(echo, str) and echo.strip():
                    if echo != seen_text or fld is not None:
                        seen_text, fld = echo, ".".join(echo_path)
                sha = text_sha256(seen_text)
                how = classify_difference(corpus_text, seen_text)
                if how is not None:
                    submitted[sha] = seen_text
                    report.text_differs.append({"set": s.name, "detector": det, "doc_id": doc_id, "record": i,
                                                "field": fld, "how": how, "corpus_chars": len(corpus_text),
                                                "submitted_chars": len(seen_text)})
                verdict = _get(rec, VERDICT_FIELDS[det]) if det in VERDICT_FIELDS else None
                r = ScoreResult(status="ok", raw=float(v), scale=_SCALE.name, direction=_SCALE.direction,
                                ai_probability=_SCALE.to_probability(float(v)),
                                verdict=verdict if isinstance(verdict, str) else None,
                                detail=_detail(rec, rel, i))
                prev = seen.get((det, sha))
                if prev is not None and prev[0] != float(v):
                    report.score_conflicts.append({"detector": det, "text_sha256": sha, "doc_id": doc_id,
                                                   "score": float(v), "stored_from": prev[1], "stored_score": prev[0]})
                elif prev is None:
                    seen[(det, sha)] = (float(v), doc_id)
                    batch.items.append((sha, r))
                batch.links.append((doc_id, sha))
                report.count_score(s.name, det)
            if n_int:
                report.integer_scores.append({"file": rel, "detector": det, "count": n_int, "records": int_recs,
                                              "action": "imported as floats"})
    return list(batches.values()), submitted


def import_liang2023(ws: Any, directory: str | Path) -> ImportReport:
    """Import the liang2023 folder into workspace ``ws`` (all or nothing).

    Returns the :class:`ImportReport`, also stored in the ``imports`` table.
    Raises :class:`InputError` on bad input, leaving the workspace unchanged.
    """
    report, docs, batches, submitted = read_liang2023(directory)
    _check_stored_conflicts(ws, batches, report)
    return store_import(ws, report, docs, batches, submitted)


def _check_stored_conflicts(ws: Any, batches: list[ScoreBatch], report: ImportReport) -> None:
    """Name imported scores that differ from a score already stored for the same spec and text."""
    for b in batches:
        stored = ws.cached_scores(b.spec.hash, [s for s, _ in b.items])
        for sha, r in b.items:
            old = stored.get(sha)
            if old is not None and old.raw != r.raw:
                report.score_conflicts.append({"detector": b.spec.name, "text_sha256": sha, "score": r.raw,
                                               "stored_score": old.raw, "stored_from": "workspace (kept)"})
