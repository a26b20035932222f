"""Load a workspace's documents and scores under a protocol, compute and record a run."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from veribench import __version__, registry
from veribench.detectors.base import submitted_text
from veribench.detectors.pipeline import RunStats, score_documents
from veribench.errors import InputError, ProtocolError, RegistryError, close_matches, unknown_key
from veribench.evaluate.arrays import DetArrays, DocArrays
from veribench.evaluate.grid import grid_results
from veribench.evaluate.ranking import ranking_scores
from veribench.evaluate.reasons import OUTSIDE_LANGUAGES, outside_language
from veribench.evaluate.results import compute_results
from veribench.evaluate.rows import document_rows
from veribench.evaluate.slices import length_band, reads_lengths
from veribench.evaluate.trends import compute_trends
from veribench.hashing import text_sha256
from veribench.protocol import arm_rules
from veribench.protocol.model import DecisionRule, DetectorEntry, Protocol
from veribench.records import is_final
from veribench.spec import Spec
from veribench.store import writes
from veribench.store.commitments import require_committed, run_integrity
from veribench.store.workspace import SCANNED_AFTER_SQL, Workspace, now_utc
from veribench.text.hazards import SETTING, canonicalize_setting, text_hazards
from veribench.text.language import identify
from veribench.text.words import word_count

SELECTION_KEYS = {"corpora": "corpus", "labels": "label", "arms": "arm", "subgroups": "subgroup", "kinds": "kind"}


def _selection_sql(sel: dict[str, Any]) -> tuple[str, list[Any]]:
    unknown = set(sel) - set(SELECTION_KEYS)
    if unknown:
        raise ProtocolError(f"selection: unknown keys {sorted(unknown)}; use {sorted(SELECTION_KEYS)}")
    clauses, params = [], []
    for key, col in SELECTION_KEYS.items():
        if key in sel:
            vals = sel[key] if isinstance(sel[key], list) else [sel[key]]
            clauses.append(f"{col} IN (SELECT unnest(?::VARCHAR[]))")
            params.append([str(v) for v in vals])
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def _has_table(ws: Workspace, name: str) -> bool:
    return bool(ws.con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [name]).fetchone()[0])


def _languages(ws: Workspace) -> tuple[np.ndarray, np.ndarray]:
    """Per selected document (``_sel`` order): its language and confidence. Read from
    ``document_languages``; a database without that table (a bundle's snapshot) has them
    identified here from the texts, by the same function as at import."""
    if _has_table(ws, "document_languages"):
        rows = ws.con.execute("SELECT l.language, l.confidence FROM _sel x LEFT JOIN document_languages l "
                              "USING (doc_id) ORDER BY x.rn").fetchall()
    else:
        rows = identify([r[0] for r in ws.con.execute(
            "SELECT d.text FROM _sel x JOIN documents d USING (doc_id) ORDER BY x.rn").fetchall()])
    return (np.array([r[0] for r in rows], dtype=object),
            np.array([np.nan if r[1] is None else float(r[1]) for r in rows], dtype=float))


def load_documents(ws: Workspace, proto: Protocol) -> DocArrays:
    """Selected documents (protocol ``[selection]``) as arrays, ordered by doc_id; also
    fills the temporary table ``_sel(doc_id, rn)`` used to align scores.

    Each document's language is loaded (:func:`_languages`); its length band
    (:func:`veribench.evaluate.slices.length_band`) only when the protocol's slices name
    ``length`` or it declares ``[thresholds] per_length`` (it reads every text; a
    fingerprint-only document has none)."""
    where, params = _selection_sql(proto.selection)
    with ws.lock:
        ws.con.execute("DROP TABLE IF EXISTS _sel")
        ws.con.execute(
            f"CREATE TEMP TABLE _sel AS SELECT doc_id, (row_number() OVER (ORDER BY doc_id)) - 1 AS rn, "
            f"label, subgroup, arm, kind, corpus, group_key, tags, "
            f"json_extract_string(provenance, '$.source_id') AS source_id, "
            f"CAST(json_extract(provenance, '$.attack') AS VARCHAR) AS variant, "
            f"json_extract_string(provenance, '$.published') AS published, "
            f"json_extract_string(provenance, '$.date_bound') AS date_bound FROM documents{where}", params)
        t = ws.con.sql("SELECT doc_id, label, subgroup, arm, kind, corpus, group_key, tags, source_id, variant, "
                       "published, date_bound FROM _sel ORDER BY rn").to_arrow_table()
        lang, lang_conf = _languages(ws)
        length = None
        if reads_lengths(proto):
            length = np.array([None if r[0] is None else length_band(word_count(r[0])) for r in ws.con.execute(
                "SELECT d.text FROM _sel x JOIN documents d USING (doc_id) ORDER BY x.rn").fetchall()], dtype=object)
    cols = {c: np.array(t.column(c).to_pylist(), dtype=object) for c in t.column_names if c != "tags"}
    tags_raw = t.column("tags").to_pylist()
    tags = [json.loads(x) if x else {} for x in tags_raw] if any(tags_raw) else []
    undated = np.array([arm_rules.undated({"arm": a, "derived": s is not None or "derivation" in (tags[i] if tags else {}),
                                           "provenance": {"published": p, "date_bound": b}})
                        for i, (a, s, p, b) in enumerate(zip(cols["arm"], cols["source_id"], cols["published"],
                                                             cols["date_bound"]))], dtype=bool)
    return DocArrays(doc_id=cols["doc_id"], label=cols["label"], subgroup=cols["subgroup"], arm=cols["arm"],
                     kind=cols["kind"], corpus=cols["corpus"], group_key=cols["group_key"], tags=tags,
                     source_id=cols["source_id"], variant=cols["variant"], undated=undated, language=lang,
                     language_confidence=lang_conf, length=length)


def language_scope(ok: np.ndarray, language: np.ndarray | None, declared: tuple[str, ...] | None,
                   scope: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The one rule of a detector's language scope: every text (in ``scope``, the protocol's
    corpora; None: all) whose identified language is outside ``declared`` is out of scope,
    whatever its scoring status; a text without an identified language (None) is in scope.

    Args:
        ok: per document (bool, length n), scored ok.
        language: per document (ISO 639-1 or None), :attr:`DocArrays.language`; None: unknown.
        declared: the detector's declared languages; None: not declared (nothing is out of scope).
        scope: per document (bool), the detector's corpora; None: every document.

    Returns:
        ``(ok, out_of_scope, scope_reason)``: ``ok`` without the out-of-scope texts (a copy);
        ``out_of_scope`` (bool) those scored ok (the out-of-scope slice); ``scope_reason``
        (object) :data:`veribench.evaluate.reasons.OUTSIDE_LANGUAGES` for each out-of-scope
        text, else None. Both None when ``declared`` or ``language`` is None.
    """
    if declared is None or language is None:
        return ok.copy(), None, None
    lang = np.asarray(language, dtype=object)
    outside = np.array([x is not None and x not in declared for x in lang], dtype=bool)
    if scope is not None:
        outside &= np.asarray(scope, dtype=bool)
    reason = np.full(lang.size, None, dtype=object)
    for i in np.flatnonzero(outside):
        reason[i] = OUTSIDE_LANGUAGES.format(language=lang[i])
    return ok & ~outside, outside & ok, reason


def load_detector(ws: Workspace, spec: Spec, label: str, rule: DecisionRule | None, n: int,
                  corpora: tuple[str, ...] = (), language: np.ndarray | None = None) -> DetArrays:
    """Scores of ``spec`` aligned to ``_sel`` (filled by :func:`load_documents`), judged by
    ``rule``; a rule no protocol stated (``None``, or ``rule.given`` false) becomes the
    detector's default (:func:`default_rule`) here, for evaluation and re-derivation alike.

    ``corpora`` restricts the detector's scope (documents of other corpora are neither
    scored nor counted as excluded). ``language`` (per document, :attr:`DocArrays.language`)
    excludes each text outside the detector's declared languages
    (:func:`veribench.registry.declared_languages`), whatever its scoring status: it counts in
    no rate, ``scope_reason`` holds the language's reason
    (:data:`veribench.evaluate.reasons.OUTSIDE_LANGUAGES`) and ``status`` keeps its own scoring
    status (``unsupported`` ...), so every exclusion names both
    (:func:`veribench.evaluate.rows.exclusion_reasons`); ``out_of_scope`` marks those scored ok
    (the out-of-scope slice); the stored status counts (``status_counts``) are unchanged. The ranking score is the oriented native value
    (:func:`veribench.evaluate.ranking.ranking_scores`).

    Raises:
        InputError: the detector's scores are on several incompatible scales.
    """
    params: list[Any] = [spec.hash]
    sql = """
        SELECT x.rn, c.status, c.ai_probability, c.raw, c.direction, lower(c.verdict),
               (u.submitted_sha256 <> d.text_sha256) AS differs, c.scanned_at, c.scale,
               TRY_CAST(json_extract(c.detail, '$.hazards.confusables') AS DOUBLE) AS hz_conf,
               TRY_CAST(json_extract(c.detail, '$.hazards.invisible') AS DOUBLE) AS hz_inv,
               TRY_CAST(json_extract(c.detail, '$.hazards.degenerate_repetition') AS BOOLEAN) AS hz_deg
        FROM _sel x JOIN submissions u ON u.doc_id = x.doc_id AND u.spec_hash = ?
        JOIN documents d ON d.doc_id = x.doc_id
        LEFT JOIN scores c ON c.spec_hash = u.spec_hash AND c.text_sha256 = u.submitted_sha256
    """
    with ws.lock:
        t = ws.con.sql(sql, params=params).to_arrow_table()
        scope = None
        if corpora:
            ids = ws.con.sql("SELECT rn FROM _sel WHERE corpus IN (SELECT unnest(?::VARCHAR[]))",
                             params=[list(corpora)]).fetchnumpy()["rn"]
            scope = np.zeros(n, bool)
            scope[np.asarray(ids, dtype=np.int64)] = True
    rn = np.asarray(t.column("rn").to_numpy(zero_copy_only=False), dtype=np.int64)

    def col(name: str) -> np.ndarray:
        v = t.column(name).to_numpy(zero_copy_only=False)
        return np.where(v == None, np.nan, v).astype(float) if v.dtype == object else v.astype(float)  # noqa: E711

    present = np.zeros(n, bool)
    ok = np.zeros(n, bool)
    p = np.full(n, np.nan)
    raw = np.full(n, np.nan)
    verdict = np.full(n, None, dtype=object)
    status_arr = np.full(n, None, dtype=object)
    scale = np.full(n, None, dtype=object)
    direction = np.full(n, None, dtype=object)
    differs = np.zeros(n, bool)
    status = np.array(t.column("status").to_pylist(), dtype=object)
    present[rn] = status != None  # noqa: E711 - elementwise
    ok[rn] = status == "ok"
    status_arr[rn] = status
    p[rn] = col("ai_probability")
    raw[rn] = col("raw")
    scale[rn] = np.array(t.column("scale").to_pylist(), dtype=object)
    direction[rn] = np.array(t.column("direction").to_pylist(), dtype=object)
    verdict[rn] = np.array(t.column(5).to_pylist(), dtype=object)
    differs[rn] = np.array([bool(x) for x in t.column("differs").to_pylist()])
    if scope is not None:
        present &= scope
        ok &= scope
    hazards = _hazard_arrays(ws, spec, n, rn, {k: col(c) for k, c in (
        ("confusables", "hz_conf"), ("invisible", "hz_inv"), ("degenerate_repetition", "hz_deg"))})
    oriented, basis = ranking_scores(label, raw, p, scale, direction, ok)
    dates = [d for d in t.column("scanned_at").to_pylist() if d is not None]
    scan = None
    if dates:
        lo, hi = min(dates), max(dates)
        scan = f"{lo:%Y-%m-%d}" if f"{lo:%Y-%m-%d}" == f"{hi:%Y-%m-%d}" else f"{lo:%Y-%m-%d}..{hi:%Y-%m-%d}"
    counts: dict[str, int] = {}
    for s in status_arr[present]:
        counts[s] = counts.get(s, 0) + 1
    declared = registry.declared_languages(spec.name, dict(spec.settings))
    ok, out_of_scope, scope_reason = language_scope(ok, language, declared, scope)
    d = DetArrays(label=label, spec=spec.to_dict(), spec_hash=spec.hash, rule=rule, present=present, ok=ok, p=p,
                  raw=raw, oriented=oriented, verdict=verdict, text_differs=differs, scan_date=scan,
                  status_counts=counts, status=status_arr, in_scope=scope, hazards=hazards, ranking=basis,
                  scale=scale, direction=direction, corpora=tuple(corpora), languages=declared,
                  out_of_scope=out_of_scope, scope_reason=scope_reason)
    if rule is None or not rule.given:  # no rule stated: the detector's default, as `list detectors` shows it
        d.rule = default_rule(d)
    return d


def submission_hazards(ws: Any, spec: Any) -> dict[str, dict[str, Any] | None]:
    """Per document, the hazards of the text before canonicalisation that ``spec`` scored.

    The one reader for per-document hazard counts (Table 1). Without canonicalisation the
    stored score row is the document's own (``detail["hazards"]`` of the submitted text).
    With ``canonicalize`` set, documents whose canonical texts coincide share one score
    row, whose ``detail["hazards"]`` describes only the input named by
    ``detail["canonicalization"]["input_sha256"]``; each document's hazards are then those
    of its own text.

    Args:
        ws: a :class:`veribench.store.Workspace`.
        spec: the detector :class:`veribench.spec.Spec`.

    Returns:
        ``{doc_id: hazards dict, or None when unknown (score stored without hazards, or a
        fingerprint-only document)}`` for every document with a submission for ``spec``.
    """
    mode = canonicalize_setting(spec.settings.get(SETTING))
    rows = ws.query(
        "SELECT u.doc_id, d.text, c.detail FROM submissions u JOIN documents d USING (doc_id) "
        "LEFT JOIN scores c ON c.spec_hash = u.spec_hash AND c.text_sha256 = u.submitted_sha256 "
        "WHERE u.spec_hash = ? ORDER BY u.doc_id", [spec.hash])
    out: dict[str, dict[str, Any] | None] = {}
    for doc_id, text, detail in rows:
        if mode != "none":
            out[doc_id] = text_hazards(text) if text is not None else None
        else:
            out[doc_id] = (json.loads(detail) if detail else {}).get("hazards")
    return out


def _hazard_arrays(ws: Workspace, spec: Spec, n: int, rn: np.ndarray,
                   from_detail: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per document: confusables, invisible characters, degenerate repetition (NaN = no record).

    Read through :func:`submission_hazards` (the one reader: with canonicalisation,
    documents sharing one score row each get the hazards of their own text). ``rn`` and
    ``from_detail`` (each score's ``detail["hazards"]``) are kept for the callers.
    """
    out = {k: np.full(n, np.nan) for k in from_detail}
    per_doc = submission_hazards(ws, spec)
    with ws.lock:
        sel = ws.con.execute("SELECT doc_id, rn FROM _sel").fetchall()
    for doc_id, i in sel:
        h = per_doc.get(doc_id)
        if h:
            for k in out:
                v = h.get(k)
                out[k][int(i)] = np.nan if v is None else float(v)
    return out


def _stored_specs(ws: Workspace, name: str) -> list[Spec]:
    rows = ws.query("SELECT spec_json FROM specs WHERE kind = 'detector' AND name = ? ORDER BY spec_hash", [name])
    return [Spec.from_json(r[0]) for r in rows]


def is_paid(det: Any) -> bool:
    """True for a detector that bills per call (it declares a ``cost(text)``, as every vendor adapter does)."""
    return callable(getattr(det, "cost", None))


def selected_documents(ws: Workspace, proto: Protocol, entry: DetectorEntry) -> list[str]:
    """Ids (sorted) of the documents that ``proto`` selects for detector ``entry`` (its
    selection and the entry's ``corpora``)."""
    where, params = _selection_sql(proto.selection)
    extra = ""
    if entry.corpora:
        extra = (" AND " if where else " WHERE ") + "corpus IN (SELECT unnest(?::VARCHAR[]))"
        params = params + [list(entry.corpora)]
    return [r[0] for r in ws.query(f"SELECT doc_id FROM documents{where}{extra} ORDER BY doc_id", params)]


def unscored_documents(ws: Workspace, proto: Protocol, entry: DetectorEntry, det: Any,
                       after: tuple[int, datetime] | None = None) -> list[str]:
    """Ids (sorted) of the documents that ``proto`` selects for detector ``entry`` and that
    ``det``'s spec has not scored yet; with ``after = (commit event seq, commit time)`` (a
    ``rescan`` protocol), also those whose newest score was taken before that commitment."""
    done = scored_documents(ws, det.spec.hash, after)
    return [i for i in selected_documents(ws, proto, entry) if i not in done]


def scored_documents(ws: Workspace, spec_hash: str, after: tuple[int, datetime] | None = None) -> set[str]:
    """Ids of the documents with a stored score of ``spec_hash`` (any status); with ``after =
    (commit event seq, commit time)``, only those whose newest score was taken after it
    (:data:`veribench.store.workspace.SCANNED_AFTER_SQL`)."""
    if after is None:
        return {r[0] for r in ws.query("SELECT doc_id FROM submissions WHERE spec_hash = ?", [spec_hash])}
    return {r[0] for r in ws.query(
        "SELECT u.doc_id FROM submissions u JOIN scores c ON c.spec_hash = u.spec_hash AND "
        f"c.text_sha256 = u.submitted_sha256 WHERE u.spec_hash = ? AND {SCANNED_AFTER_SQL}",
        [spec_hash, after[1], after[0]])}


def refuse_rescan_missing(ws: Workspace, proto: Protocol, pairs: Sequence[tuple[Spec, DetectorEntry]],
                          after: tuple[int, datetime]) -> None:
    """Under a ``rescan`` protocol, refuse while a selected text's newest score of a detector
    was taken before the commitment ``after = (commit event seq, commit time)`` (a text never
    scored stays "not scored", as in any run).

    Raises:
        ProtocolError: one line: per detector short of scores, how many of its selected texts
            have no score taken after the commitment, and the commands that take them.
    """
    parts = []
    for spec, e in pairs:
        sel = selected_documents(ws, proto, e)
        stale = (scored_documents(ws, spec.hash) - scored_documents(ws, spec.hash, after)).intersection(sel)
        if not stale:
            continue
        if plugin_factory(e.name) is None:  # hand-imported scores: only a new import rescans them
            how = (f"import them again with `veribench import scores FILE --detector {spec.name}"
                   + (f" --version {spec.version}" if spec.version else "") + " --rescan`")
        else:
            how = (f"scan them again with `veribench evaluate --protocol {proto.path} --allow-paid --max-spend N` "
                   f"(a paid detector), or first `veribench score --rescan --detector {e.name} --input TEXTS.jsonl`")
        parts.append(f"detector {e.display!r}: {len(stale)} of {len(sel)} texts have no score taken after the "
                     f"commitment of {after[1].isoformat(timespec='seconds')}; {how}")
    if parts:
        raise ProtocolError(f"protocol {proto.path} declares rescan = true, and " + "; ".join(parts) +
                            " (their earlier scores stay stored but are not used)")


def resolve_detectors(ws: Workspace, proto: Protocol, *, allow_scoring: bool, progress: bool,
                      log: Callable[[str], None], allow_paid: bool = False,
                      max_spend: float | None = None,
                      rescan_after: tuple[int, datetime] | None = None) -> list[tuple[Spec, DetectorEntry]]:
    """Find (or compute) the scores each protocol detector needs.

    A name stored in the workspace (e.g. an imported detector) is used as stored; a
    registry plug-in is built with the entry's settings and run on the selected
    documents that lack a score (cached scores are reused, never recomputed). A paid
    detector (a vendor API) is never called unless ``allow_paid`` and ``max_spend`` are
    both given; ``max_spend`` (the adapters' cost unit, words) bounds all paid calls of
    this evaluation together.

    Raises:
        ProtocolError: a detector that is neither stored nor a registry plug-in, an
            ambiguous stored name, or a paid detector with texts left to score and no
            ``--allow-paid --max-spend``.

    ``rescan_after = (commit event seq, commit time)`` (a ``rescan`` protocol): a plug-in's
    score taken before the commitment counts as missing; the text is scanned again and the
    earlier score kept (:func:`veribench.detectors.pipeline.score_texts`).
    """
    spent = 0.0
    if not proto.detectors:
        specs = ws.detector_specs()
        names = [s.name for s in specs]
        return [(s, DetectorEntry(name=s.name, label=s.name if names.count(s.name) == 1 else s.label)) for s in specs]
    out = []
    for e in proto.detectors:
        factory = plugin_factory(e.name)
        if factory is not None:
            det = factory(**e.settings)
            if allow_scoring:

                todo = unscored_documents(ws, proto, e, det, rescan_after)
                kw: dict[str, Any] = {"rescan_after": rescan_after}
                if todo and is_paid(det) and not _all_cached(ws, det, todo, rescan_after):
                    if not allow_paid or max_spend is None:
                        when = "" if rescan_after is None else (
                            f" taken after the commitment of {rescan_after[1].isoformat(timespec='seconds')} "
                            "(the protocol declares rescan = true)")
                        raise ProtocolError(
                            f"detector {e.display!r} is a paid API and {len(todo)} selected documents have no "
                            f"stored score{when}: `evaluate` never calls a paid API on its own. Score them first "
                            f"with `veribench score{' --rescan' if when else ''}` (budget and --dry-run), or pass "
                            "--allow-paid --max-spend N")

                    kw.update({"max_spend": max(0.0, max_spend - spent), "stats": RunStats()})
                if todo:
                    t0 = time.perf_counter()
                    log(f"scoring {len(todo)} documents with {det.spec.label}")
                    score_documents(ws, det, todo, progress=progress, **kw)
                    if "stats" in kw:
                        spent += kw["stats"].spent
                        if kw["stats"].stopped_for_budget:
                            log(f"  {det.spec.name}: stopped by --max-spend ({spent:g} of {max_spend:g} spent)")
                    log(f"  {det.spec.name}: {time.perf_counter() - t0:.1f} s")
            out.append((det.spec, e))
            continue
        stored = matching_specs(ws, e)
        if not stored:
            raise unknown_detector_error(ws, proto, e)
        if len(stored) > 1:
            raise ambiguity_error(proto, e, stored)
        out.append((stored[0], e))
    return out


def _all_cached(ws: Workspace, det: Any, doc_ids: list[str], after: tuple[int, datetime] | None) -> bool:
    """True when every one of ``doc_ids`` has its text's score stored for ``det`` (e.g. by
    ``veribench score``; with ``after``, taken after the commitment): linking them calls nothing."""
    texts = ws.texts_for(doc_ids)
    shas = {text_sha256(submitted_text(det.spec, t)) for t in texts.values()}
    got = ws.cached_scores(det.spec.hash, shas, after=after)
    return len(texts) == len(doc_ids) and len(got) == len(shas) and all(is_final(r.status) for r in got.values())


def plugin_factory(name: str) -> Any:
    """The registry factory a ``[[detectors]]`` entry named ``name`` scores with, or ``None``
    when it names stored scores instead (not a plug-in, or ``imported``)."""
    try:
        factory = registry.get("detector", name)
    except RegistryError:
        return None
    return None if name == "imported" else factory


def matching_specs(ws: Workspace, entry: DetectorEntry) -> list[Spec]:
    """The stored detector specs a ``[[detectors]]`` entry that names no registry plug-in
    picks: those named ``entry.name`` whose settings include every setting the entry gives."""
    stored = _stored_specs(ws, entry.name)
    if entry.settings:
        stored = [s for s in stored if all(_identity(s).get(k) == v for k, v in entry.settings.items())]
    return stored


def _identity(spec: Spec) -> dict[str, Any]:
    """What tells stored specs of one name apart: their settings, and their ``version`` (an
    imported detector's ``--version``) unless a setting of that name is stored."""
    return {"version": spec.version, **spec.settings}


def _toml_value(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False) if isinstance(v, (str, bool, int, float)) or v is None else json.dumps(
        str(v), ensure_ascii=False)


def ambiguity_error(proto: Protocol, entry: DetectorEntry, stored: list[Spec]) -> ProtocolError:
    """The error for an entry that matches several stored specs, with the exact TOML line
    that picks each one (the settings in which they differ), e.g.
    ``settings = { source = "liang2023" }``."""
    ids = [_identity(s) for s in stored]

    def key(i: dict[str, Any], ks: Sequence[str]) -> str:
        return json.dumps([i.get(k) for k in ks], sort_keys=True, default=str)

    keys = sorted({k for s in stored for k in s.settings})
    differ = [k for k in keys if len({key(i, [k]) for i in ids}) > 1]
    if len({key(i, differ) for i in ids}) < len(ids) and "version" not in differ and len({key(i, ["version"])
                                                                                         for i in ids}) > 1:  # the settings alone do not
        differ += ["version"]  # tell them apart: the version (an imported detector's --version) may
    picks = []
    for s, i in zip(stored, ids, strict=True):
        inner = ", ".join(f"{k} = {_toml_value(i.get(k))}" for k in differ if k in i)
        picks.append(f"settings = {{ {inner} }}" if inner else
                     f"(spec {s.hash[:12]}: no setting tells it apart; import its scores under another --detector "
                     "name or --version)")
    return ProtocolError(f"protocol {proto.path}: detector {entry.name!r} matches {len(stored)} stored specs; add to "
                         f"its [[detectors]] entry one of: " + " | ".join(picks))


def unknown_detector_error(ws: Workspace, proto: Protocol, entry: DetectorEntry) -> ProtocolError:
    """The error for an entry that names neither a registry plug-in nor a stored spec (with
    its settings): the registry's one-line "did you mean" message
    (:func:`veribench.registry.unknown_message`) over the plug-ins and the stored spec names."""
    stored_names = [s.name for s in ws.detector_specs()]
    how = (f"no stored spec named {entry.name!r} has the settings {entry.settings}" if entry.name in stored_names
           else "it is neither a registry plug-in nor a stored spec; import its scores first (`veribench import "
                "scores`)")
    return ProtocolError(f"protocol {proto.path}: {registry.unknown_message('detector', entry.name, stored_names)} "
                         f"({how})")


def unresolved_detectors(ws: Workspace, proto: Protocol) -> list[ProtocolError]:
    """One error per ``[[detectors]]`` entry of ``proto`` that names no registry plug-in and
    matches no stored spec while its name is close to a plug-in or stored spec name (a
    misspelling: :func:`unknown_detector_error`, "did you mean"), or matches more than one
    stored spec (:func:`ambiguity_error`): ``protocol commit`` refuses them before anything is
    fixed, as ``evaluate`` would after. A name close to none, or equal to a known name but for
    letter case, is a detector whose scores are imported after the commitment
    (pre-registration) and is accepted."""
    out = []
    for e in proto.detectors:
        if plugin_factory(e.name) is not None:
            continue
        stored = matching_specs(ws, e)
        known = [*registry.names("detector"), *(s.name for s in ws.detector_specs())]
        # a name equal to a known one but for case (Liang et al.'s "GPTZero" beside the plug-in
        # "gptzero") names recordings imported under that spelling: no misspelling
        same = e.name.casefold() in {k.casefold() for k in known}
        if not stored and not same and close_matches(e.name, known):
            out.append(unknown_detector_error(ws, proto, e))
        elif len(stored) > 1:
            out.append(ambiguity_error(proto, e, stored))
    return out


def default_rule(d: DetArrays) -> DecisionRule | None:
    """A detector's default rule, used wherever no rule is stated (no protocol, or a
    ``[[detectors]]`` entry without ``rule``): P(AI) > 0.5 (Liang et al. 2023); the
    detector's own verdict when it reports no probability (ZipPy, Binoculars); ``None`` (no
    decision rule: rates null with the reason) when it has neither. ``veribench list
    detectors`` and ``protocol commit`` show the same rule per plug-in."""
    if np.isfinite(d.p[d.ok]).any():
        return DecisionRule(source="default: P(AI) > 0.5 (Liang et al. 2023)")
    if any(v is not None for v in d.verdict[d.ok]):
        return DecisionRule(field="verdict", op="in", threshold=None,
                            source="detector's own verdict (it reports no probability)")
    return None


def rows_table(cols: dict[str, np.ndarray]) -> Any:
    """A run's per-document rows (:func:`veribench.evaluate.rows.document_rows`) as a
    ``pyarrow.Table`` of ``run_rows`` columns (without ``run_id``), or None when empty."""
    if not cols:
        return None
    arrays = {}
    for name, v in cols.items():
        if v.dtype.kind == "f":
            arrays[name] = pa.array(v, pa.float64(), mask=~np.isfinite(v))
        elif v.dtype.kind == "b":
            arrays[name] = pa.array(v, pa.bool_())
        elif name == "flagged":
            arrays[name] = pa.array(list(v), pa.bool_())
        else:
            arrays[name] = pa.array([None if x is None else str(x) for x in v], pa.string())
    return pa.table(arrays)


def arm_rule_breaches(ws: Workspace, proto: Protocol) -> tuple[list[tuple[str, Any]], int, int]:
    """Every selected document that breaks a rule of ``proto.arm_rules``
    (:mod:`veribench.protocol.arm_rules`), and arm A's undated texts.

    Returns:
        ``([(doc_id, Breach)], undated arm-A texts, arm-A texts)`` (derived documents are
        not counted in arm A's totals: their date is their source's).
    """
    where, params = _selection_sql(proto.selection)
    rows = ws.query("SELECT doc_id, label, arm, provenance, tags FROM documents" + where + " ORDER BY doc_id", params)
    out: list[tuple[str, Any]] = []
    undated = total = 0
    for doc_id, label, arm, prov, tags in rows:
        p = json.loads(prov) if prov else {}
        t = json.loads(tags) if tags else {}
        view = {"label": label, "arm": arm, "provenance": p, "derived": bool(p.get("source_id")) or "derivation" in t}
        b = arm_rules.check(view, proto.arm_rules)
        if b is not None:
            out.append((doc_id, b))
        if arm == "A" and not view["derived"]:
            total += 1
            undated += arm_rules.undated(view)
    return out, undated, total


def check_arm_rules(ws: Workspace, proto: Protocol) -> None:
    """Re-check the selected documents under the protocol's arm rules (documents stored
    before the rules were enforced at import, or under another protocol's relaxation).

    The run records the rules in force and arm A's undated texts
    (:func:`veribench.evaluate.results.arm_rules_block`, re-derived by ``verify``).

    Raises:
        InputError: one line naming the first document that breaks a rule not relaxed,
            its field and the rule, with how many break rules in all.
    """
    bad = arm_rule_breaches(ws, proto)[0]
    if bad:
        doc_id, b = bad[0]
        more = f" ({len(bad):,} documents break arm rules in all)" if len(bad) > 1 else ""
        raise InputError(f"{b.message}{more}; fix the document's arm (import it again with --update) or relax the "
                         "rule in the protocol", file=str(ws.path), record=doc_id, field=b.field)


def refuse_unfinished_imports(ws: Any) -> None:
    """Refuse to evaluate while an import has not finished: its documents are stored but not
    logged (a streamed import that was killed), so a run over them could not be published or
    re-derived from the log.

    Raises:
        InputError: one line naming the import and what to run.
    """
    with ws.lock:
        left = writes.unfinished_imports(ws.con)
    if left:
        iid, n = left[0]
        raise InputError(f"import {iid} has not finished: its {n:,} documents are stored but not logged (it was "
                         "interrupted); run the import again (the next streamed import removes an interrupted one) "
                         "before evaluating", file=str(ws.path), field="imports")


def evaluate_workspace(ws: Workspace, proto: Protocol | None = None, *, allow_scoring: bool = True,
                       progress: bool = False, log: Callable[[str], None] = lambda m: None,
                       record: bool = True, allow_paid: bool = False, max_spend: float | None = None,
                       grid: Sequence[str] | None = None, grid_threshold_by: str | None = None) -> dict[str, Any]:
    """Evaluate the workspace under ``proto`` (default rules when None) and record the run.

    The run record is the results dict (``runs`` table) and its per-document rows
    (``run_rows`` table, :func:`veribench.evaluate.rows.document_rows`), exported by
    ``veribench export scores --run TAG``.

    Args:
        allow_scoring: run local plug-ins on selected documents without a stored score.
        allow_paid, max_spend: also call paid (vendor) detectors, within ``max_spend``
            of their cost unit in total; without both, a paid detector with texts left
            to score is refused.
        grid, grid_threshold_by: RAID's grid over these tags, added to the results as
            ``grid`` and ``grid_info`` (:func:`veribench.evaluate.grid.grid_results`).

    Raises:
        ProtocolError: uncommitted protocol file, unknown detector, bad selection, a paid
            detector without ``allow_paid`` and ``max_spend``.
        InputError: a detector's scores on incompatible scales; an import that has not
            finished (:func:`refuse_unfinished_imports`).
    """
    proto = proto or Protocol.default()
    refuse_unfinished_imports(ws)
    commit = require_committed(ws, proto) if proto.hash else None
    after = (int(commit.seq), commit.committed_at) if proto.rescan and commit is not None and commit.seq else None
    pairs = resolve_detectors(ws, proto, allow_scoring=allow_scoring, progress=progress, log=log,
                              allow_paid=allow_paid, max_spend=max_spend, rescan_after=after)
    if after is not None:
        refuse_rescan_missing(ws, proto, pairs, after)
    check_arm_rules(ws, proto)
    docs = load_documents(ws, proto)
    dets = [load_detector(ws, spec, e.display, e.rule, len(docs), e.corpora, docs.language) for spec, e in pairs]
    run_id = f"{proto.tag}-{now_utc():%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
    meta = {
        "run_id": run_id, "tag": proto.tag, "created_at": now_utc().isoformat(timespec="seconds"),
        "veribench_version": __version__,
        # the file name only: results are published, a local folder is nobody's business
        "protocol": {"name": proto.name, "path": Path(proto.path).name if proto.path else None, "hash": proto.hash,
                     "committed_at": commit.committed_at.isoformat(timespec="seconds") if commit else None,
                     "amendments": proto.amendments, "declared_split": proto.split_rule != "none"},
    }
    integ = run_integrity(ws, commit, [s.hash for s, _ in pairs])  # chain head, commitment facts (event log)
    meta["chain_head"] = integ.pop("chain_head")
    meta["protocol"].update(integ)
    res = compute_results(docs, dets, proto, run_meta=meta)
    if grid:

        try:
            res.update(grid_results(docs, dets, proto, grid, grid_threshold_by))
        except ValueError as e:
            raise ProtocolError(f"--grid {','.join(grid)}: {e}") from None
    rows = document_rows(docs, dets, proto)
    if record:
        with ws.transaction() as c:
            writes.record_run(c, res, rows_table(rows))
    # after the record: the run's results stay what its own rows re-derive (a bundle carries
    # one run); trends compare two recorded runs and are shown, not part of either record
    trends = compute_trends(ws, res, rows)
    if trends is not None:
        res["trends"] = trends
    return res


def find_run(ws: Workspace, run: str) -> tuple[str, str]:
    """``(run_id, tag)`` of the newest run whose id or tag is ``run``.

    Raises:
        InputError: no such run (the message lists the stored tags).
    """

    rows = ws.query("SELECT run_id, tag FROM runs WHERE run_id = ? OR tag = ? ORDER BY created_at DESC, run_id DESC",
                    [run, run])
    if not rows:
        tags = [r[0] for r in ws.query("SELECT DISTINCT tag FROM runs ORDER BY 1")]
        raise InputError(f"no run with id or tag {run!r}; stored tags: {', '.join(tags) or '(none)'}", field="--run")
    return rows[0][0], rows[0][1]


RUN_EXPORT_COLUMNS = (
    "run_id", "doc_id", "corpus", "label", "label_role", "arm", "arm_role", "subgroup", "kind", "group_key", "tags",
    "side_group", "headline", "split", "detector", "spec_hash", "status", "raw", "scale", "direction",
    "ai_probability", "verdict", "ranking_score", "rule", "rule_field", "threshold", "rule_defined", "counted",
    "flagged", "excluded")


def export_run(ws: Workspace, run: str, path: str | Path) -> tuple[Path, int, str]:
    """Write one run's per-document rows (``.csv`` or ``.parquet``): ``(path, rows, run_id)``.

    Raises:
        InputError: unknown run, a run recorded before rows were kept, or a bad suffix.
    """

    p = Path(path)
    fmt = {".csv": "FORMAT CSV, HEADER", ".parquet": "FORMAT PARQUET"}.get(p.suffix.lower())
    if fmt is None:
        raise InputError("export format must be .csv or .parquet", file=str(p))
    run_id, tag = find_run(ws, run)
    has = ws.query("SELECT count(*) FROM information_schema.tables WHERE table_name = 'run_rows'")[0][0]
    n = ws.query("SELECT count(*) FROM run_rows WHERE run_id = ?", [run_id])[0][0] if has else 0
    if not n:
        raise InputError(f"run {run_id} has no per-document rows (recorded before veribench kept them, or it "
                         "evaluated no detector); evaluate again to export it", field="--run")
    p.parent.mkdir(parents=True, exist_ok=True)
    with ws.lock:
        cols = ", ".join(RUN_EXPORT_COLUMNS[:1] + ("$1 AS run_tag",) + RUN_EXPORT_COLUMNS[1:])
        ws.con.execute(f"COPY (SELECT {cols} FROM run_rows WHERE run_id = $2 ORDER BY detector, doc_id) "
                       f"TO '{str(p).replace(chr(39), chr(39) * 2)}' ({fmt})", [tag, run_id])
    return p, int(n), run_id


def run_detector_scores(ws: Workspace, run: str, detector: str | None = None, *, include_out_of_scope: bool = False
                        ) -> tuple[str, str, str, dict[str, float], dict[str, str]]:
    """One detector's ranking scores in one run (its stored per-document rows), for exports
    such as RAID's predictions.json.

    Args:
        ws: the workspace (read only).
        run: the run's tag or id (the newest run of a tag).
        detector: the detector's name in the run; None: the run must hold one detector.
        include_out_of_scope: also give the score of a text outside the declared languages
            when it has one (a board needs every text scored); evaluation still excludes it.

    Returns:
        ``(run_id, tag, detector, scores, left_out)``: ``scores`` maps each doc_id in the
        detector's declared languages (with ``include_out_of_scope``, any doc_id) with a finite
        ranking score (the oriented native value, higher = more likely AI,
        :func:`veribench.evaluate.ranking.ranking_scores`) to it; ``left_out`` maps every other
        doc_id of the detector's rows to why: a text outside the declared languages, whatever
        its scoring (with ``include_out_of_scope``: one without a score), to its exclusion
        reason (the rule of evaluation, :func:`veribench.evaluate.rows.exclusion_reasons`: the
        language, and its scoring status when not ok), any other to its status (why it has no
        score).

    Raises:
        InputError: unknown run, a run without rows, several detectors and none named, or a
            detector the run did not evaluate (field ``--run`` or ``--detector``).
    """
    run_id, tag = find_run(ws, run)
    has = ws.query("SELECT count(*) FROM information_schema.tables WHERE table_name = 'run_rows'")[0][0]
    names = [r[0] for r in ws.query("SELECT DISTINCT detector FROM run_rows WHERE run_id = ? ORDER BY 1",
                                    [run_id])] if has else []
    if not names:
        raise InputError(f"run {run_id} has no per-document rows (recorded before veribench kept them, or it "
                         "evaluated no detector); evaluate again to export it", field="--run")
    if detector is None:
        if len(names) > 1:
            raise InputError(f"run {run_id} evaluated {len(names)} detectors ({', '.join(names)}); name one",
                             field="--detector")
        detector = names[0]
    elif detector not in names:
        raise InputError(unknown_key("detector", detector, names, owner=f"run {run_id}"), field="--detector")
    scores: dict[str, float] = {}
    left_out: dict[str, str] = {}
    for doc_id, status, score, why in ws.query("SELECT doc_id, status, ranking_score, excluded FROM run_rows "
                                               "WHERE run_id = ? AND detector = ? ORDER BY doc_id",
                                               [run_id, detector]):
        has_score = score is not None and bool(np.isfinite(score))
        if why is not None and outside_language(why) is not None and not (include_out_of_scope and has_score):
            left_out[str(doc_id)] = str(why)
        elif has_score:
            scores[str(doc_id)] = float(score)
        else:
            left_out[str(doc_id)] = str(status or "no score")
    return run_id, tag, detector, scores, left_out


def latest_run(ws: Workspace) -> dict[str, Any] | None:
    """The newest run's results dict, or None when the workspace has no run."""
    rows = ws.query("SELECT results FROM runs ORDER BY created_at DESC, run_id DESC LIMIT 1")
    return json.loads(rows[0][0]) if rows else None
