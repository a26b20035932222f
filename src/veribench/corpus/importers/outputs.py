"""The joins a user needs: veribench's own outputs imported as corpus arms, one command each.

- :func:`read_generated`: ``veribench generate`` output (JSONL rows ``{prompt_slug,
  category, prompt, sample, status, text, generation}``) -> AI documents (label ``ai``,
  arm ``C`` unless named), each with its full generation spec: provider, model asked for,
  ``version`` = the model string the server returned, date, prompt, seed and every
  sampling setting. Texts from one prompt share a ``group_key`` (calibration split).
- :func:`read_humanized`: ``veribench humanize`` output (JSONL rows ``{id, humanizer,
  spec_hash, status, output, vendor_version, input_sha256, detail}``) whose ``id`` is a
  document already in the workspace -> derived documents (CONTRACTS.md):
  ``provenance.source_id`` = the source's id, ``tags.derivation`` = ``humanize``,
  ``tags.attack`` = the humanizer's name; the source's label, group key, tags and
  generation spec are kept, with the humanizer recorded in ``generation.post_editing``
  and ``provenance.humanizer``; the arm is the source's unless one is named.
- :func:`read_cycle`: a HumanizerBench-format cycle bundle (``samples.json``,
  ``tests.json``, optional ``prompts.json``/``cycle.json``) -> its samples as AI
  documents and its complete humanizer outputs as derived documents, as above.

Rows that did not succeed (a failed generation, a failed humanization, an incomplete
test) are not documents: they are counted and named in the import report's notes.
Every problem in the input raises :class:`InputError` naming the file, record and field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from veribench.corpus.document import Document
from veribench.corpus.importers._io import iter_jsonl, load_json, refuse_nonfinite
from veribench.corpus.importers._store import store_import, validation_error
from veribench.corpus.report import ImportReport, text_quirks
from veribench.errors import InputError
from veribench.hashing import text_sha256
from veribench.text.hazards import is_blank

DERIVATION = "humanize"


def _str(v: Any) -> str | None:
    return None if v is None else str(v)


def _doc(data: dict[str, Any], *, file: str, record: Any) -> Document:
    try:
        return Document.model_validate(data)
    except ValidationError as e:
        raise validation_error(e, file=file, record=record) from None


def _need(row: dict[str, Any], key: str, *, file: str, record: Any, kind: type = str) -> Any:
    v = row.get(key)
    if v is None:
        raise InputError("required field is missing", file=file, record=record, field=key)
    if not isinstance(v, kind) or isinstance(v, bool):
        raise InputError(f"expected {kind.__name__}, got {type(v).__name__}", file=file, record=record, field=key)
    return v


def _finish(report: ImportReport, docs: list[Document], name: str) -> None:
    entry = report.set_entry(name)
    by_sha: dict[str, list[str]] = {}
    for d in docs:
        entry["documents"] += 1
        entry["labels"][d.label] = entry["labels"].get(d.label, 0) + 1
        by_sha.setdefault(d.text_sha256, []).append(d.id)
        q = text_quirks(d.text or "")
        if q:
            report.suspicious_text.append({"doc_id": d.id, **q})
    for sha, ids in by_sha.items():
        if len(ids) > 1:
            report.duplicates.append({"set": name, "text_sha256": sha, "doc_ids": ids, "kept": "all"})


def _close(report: ImportReport, docs: list[Document], p: Path, records: int, failed: list[str],
           what: str) -> tuple[ImportReport, list[Document]]:
    """Count the file's records, name the rows that did not succeed, refuse a file with no success."""
    report.set_entry(p.name)["records"] = records
    if failed:
        report.notes.append(f"{len(failed)} {what} did not succeed and were not imported: "
                            + ", ".join(failed[:20]) + (" ..." if len(failed) > 20 else ""))
    if not docs:
        raise InputError(f"no successful row in the file: every one of the {what} failed", file=str(p))
    _finish(report, docs, p.name)
    return report, docs


def generation_from_record(rec: dict[str, Any], prompt: str | None) -> dict[str, Any]:
    """A :class:`Generation` dict from a chat-call record (:meth:`veribench.llm.client.ChatResult.record`).

    ``version`` is the model string the server returned (``server_model``), the most
    exact name of what produced the text; ``model`` is the id that was asked for.
    """
    sampling = dict(rec.get("sampling") or {})
    gen: dict[str, Any] = {
        "provider": _str(rec.get("provider")), "model": _str(rec.get("model")),
        "version": _str(rec.get("version") or rec.get("server_model")), "date": _str(rec.get("date")),
        "prompt": prompt, "seed": rec.get("seed", sampling.get("seed")),
    }
    for k in ("temperature", "top_p", "max_tokens"):
        if k in sampling:
            gen[k] = sampling.pop(k)
    sampling.pop("seed", None)
    settings = {k: rec[k] for k in ("messages", "finish_reason", "request_sha256", "client_spec_hash")
                if rec.get(k) is not None}
    if sampling:
        settings["sampling"] = sampling
    gen["settings"] = settings
    return {k: v for k, v in gen.items() if v is not None}


def read_generated(path: str | Path, *, corpus: str | None = None, arm: str = "C",
                   label: str = "ai") -> tuple[ImportReport, list[Document]]:
    """Read ``veribench generate`` output; nothing is written.

    Ids are ``<corpus>/<prompt_slug>/<sample>``; ``group_key`` is ``<corpus>/prompt/<prompt_slug>``.

    Raises:
        InputError: a row without prompt, sample or generation record, a bad value, or
            no successful row at all.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("file not found", file=str(p))
    f = str(p)
    corpus = corpus or p.stem
    report = ImportReport(kind="generated", source=f, corpus=corpus)
    docs: list[Document] = []
    failed: list[str] = []
    seen: dict[str, str] = {}
    n = 0
    for rec, row in iter_jsonl(p):
        n += 1
        refuse_nonfinite(row, file=f, record=rec)
        slug = str(_need(row, "prompt_slug", file=f, record=rec))
        sample = _need(row, "sample", file=f, record=rec, kind=int)
        status = str(row.get("status") or "")
        if status != "ok" or not isinstance(row.get("text"), str) or is_blank(row["text"]):
            failed.append(f"{slug}/{sample} ({status or 'no status'})")
            continue
        gen_rec = _need(row, "generation", file=f, record=rec, kind=dict)
        doc_id = f"{corpus}/{slug}/{sample}"
        if doc_id in seen:
            raise InputError(f"prompt {slug!r} sample {sample} given twice (first at {seen[doc_id]})", file=f,
                             record=rec, field="sample")
        seen[doc_id] = rec
        tags = {"prompt": slug}
        if isinstance(row.get("category"), str):
            tags["category"] = row["category"]
        docs.append(_doc({
            "id": doc_id, "text": row["text"], "label": label, "arm": arm, "kind": row.get("category"),
            "tags": tags, "group_key": f"{corpus}/prompt/{slug}",
            "provenance": {"method": f"generated by veribench generate (prompt {slug}, sample {sample})",
                           "file": p.name, "record": rec},
            "generation": generation_from_record(gen_rec, row.get("prompt") if isinstance(row.get("prompt"), str)
                                                 else None),
        }, file=f, record=rec))
    return _close(report, docs, p, n, failed, "generation request(s)")


def _stored_doc(row: tuple) -> dict[str, Any]:
    doc_id, corpus, text, sha, label, arm, kind, subgroup, tags, group_key, prov, gen = row
    return {"id": doc_id, "corpus": corpus, "text": text, "text_sha256": sha, "label": label, "arm": arm,
            "kind": kind, "subgroup": subgroup, "tags": json.loads(tags) if tags else {}, "group_key": group_key,
            "provenance": json.loads(prov) if prov else {}, "generation": json.loads(gen) if gen else None}


def derived_document(source: dict[str, Any], *, doc_id: str, text: str, tool: str, arm: str | None,
                     humanizer: dict[str, Any], method: str, extra_provenance: dict[str, Any] | None = None
                     ) -> dict[str, Any]:
    """A humanized output as a derived document (CONTRACTS.md, "Derived documents").

    Keeps the source's label, group key, kind, subgroup, tags and generation spec; adds
    ``tags.derivation`` = ``humanize`` and ``tags.attack`` = ``tool``;
    ``provenance.source_id`` = the source's id; the arm is ``arm`` or the source's.
    """
    gen = dict(source.get("generation") or {}) or None
    post = f"humanized by {tool}" + (f" ({humanizer['vendor_version']})" if humanizer.get("vendor_version") else "")
    if gen is not None:
        gen["post_editing"] = "; ".join(x for x in (gen.get("post_editing"), post) if x)
        gen["humanizer"] = humanizer
    prov = {"source_id": source["id"], "method": method, "humanizer": humanizer,
            "source_text_sha256": source.get("text_sha256"), **(extra_provenance or {})}
    return {"id": doc_id, "text": text, "label": source["label"], "arm": arm or source.get("arm"),
            "kind": source.get("kind"), "subgroup": source.get("subgroup"),
            "tags": {**(source.get("tags") or {}), "derivation": DERIVATION, "attack": tool},
            "group_key": source.get("group_key"), "provenance": prov, "generation": gen}


def read_humanized(ws: Any, path: str | Path, *, corpus: str | None = None,
                   arm: str | None = None) -> tuple[ImportReport, list[Document]]:
    """Read ``veribench humanize`` output against the source documents in ``ws``; nothing is written.

    Ids are ``<source id>/humanize/<humanizer>-<spec hash[:10]>``.

    Raises:
        InputError: a row whose id is not a document in the workspace, whose source text
            differs from the text that was humanized (``input_sha256``), a missing field,
            or no successful row.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("file not found", file=str(p))
    f = str(p)
    report = ImportReport(kind="humanized", source=f, corpus=corpus or p.stem)
    rows = list(iter_jsonl(p))
    ids = [str(r.get("id")) for _, r in rows]
    stored = {r[0]: _stored_doc(r) for r in ws.query(
        "SELECT doc_id, corpus, text, text_sha256, label, arm, kind, subgroup, tags, group_key, provenance, "
        "generation FROM documents WHERE doc_id IN (SELECT unnest(?::VARCHAR[]))", [ids])}
    specs = {h: json.loads(j) for h, j in ws.query("SELECT spec_hash, spec_json FROM specs WHERE kind = 'humanizer'")}
    docs: list[Document] = []
    failed: list[str] = []
    seen: dict[str, str] = {}
    for rec, row in rows:
        refuse_nonfinite(row, file=f, record=rec)
        src_id = row.get("id")
        if src_id is None:
            raise InputError("required field is missing", file=f, record=rec, field="id")
        src_id = str(src_id)
        name = str(_need(row, "humanizer", file=f, record=rec))
        if row.get("status") != "ok" or not isinstance(row.get("output"), str) or is_blank(row["output"]):
            failed.append(f"{src_id} ({row.get('status') or 'no status'})")
            continue
        src = stored.get(src_id)
        if src is None:
            raise InputError(f"source document {src_id!r} is not in the workspace: import the texts that were "
                             "humanized first (their ids must match)", file=f, record=rec, field="id")
        want = row.get("input_sha256")
        if want is not None and want != src["text_sha256"]:
            raise InputError(f"the text that was humanized (sha256 {str(want)[:12]}...) is not the stored text of "
                             f"document {src_id!r} (sha256 {src['text_sha256'][:12]}...)", file=f, record=rec,
                             field="input_sha256")
        spec_hash = row.get("spec_hash")
        spec = specs.get(spec_hash) if isinstance(spec_hash, str) else None
        hum = {"name": name, "spec_hash": spec_hash, "version": (spec or {}).get("version"),
               "settings": (spec or {}).get("settings"), "vendor_version": _str(row.get("vendor_version"))}
        if isinstance(spec_hash, str):
            when = ws.query("SELECT created_at FROM humanizations WHERE spec_hash = ? AND input_sha256 = ?",
                            [spec_hash, src["text_sha256"]]) if _has_table(ws, "humanizations") else []
            if when:
                hum["date"] = when[0][0].isoformat()
        hum = {k: v for k, v in hum.items() if v is not None}
        doc_id = f"{src_id}/humanize/{name}" + (f"-{spec_hash[:10]}" if isinstance(spec_hash, str) else "")
        if doc_id in seen:
            raise InputError(f"document {src_id!r} humanized by the same humanizer twice (first at {seen[doc_id]})",
                             file=f, record=rec, field="id")
        seen[doc_id] = rec
        docs.append(_doc(derived_document(src, doc_id=doc_id, text=row["output"], tool=name, arm=arm, humanizer=hum,
                                          method=f"output of humanizer {name} for document {src_id} "
                                                 f"(veribench humanize, {p.name} {rec})"), file=f, record=rec))
    return _close(report, docs, p, len(rows), failed, "humanization(s)")


def _has_table(ws: Any, name: str) -> bool:
    return bool(ws.query("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name])[0][0])


def read_cycle(directory: str | Path, *, corpus: str | None = None, arm: str = "C",
               humanized_arm: str | None = None) -> tuple[ImportReport, list[Document]]:
    """Read a HumanizerBench-format cycle bundle; nothing is written.

    Samples become ``<corpus>/sample/<id>`` (label ``ai``, arm ``arm``), complete tests
    ``<corpus>/test/<id>`` (derived from their sample; arm ``humanized_arm`` or the
    sample's). The sample's generation spec: ``model`` = its ``source_model_slug``,
    ``date`` = ``generated_at``, ``prompt`` = the resolved prompt of its ``prompt_slug``
    from ``prompts.json`` when present. Corpus default: the cycle name (``cycle.json``) or
    the folder name.

    Raises:
        InputError: a missing file or field, a test whose sample is not in the bundle.
    """
    d = Path(directory)
    if not d.is_dir():
        raise InputError("cycle bundle folder not found", file=str(d))
    for need in ("samples.json", "tests.json"):
        if not (d / need).is_file():
            raise InputError("file not found (a cycle bundle needs samples.json and tests.json)", file=str(d / need))
    meta = load_json(d / "cycle.json") if (d / "cycle.json").is_file() else {}
    cycle = str(meta.get("cycle")) if isinstance(meta, dict) and meta.get("cycle") else d.name
    corpus = corpus or cycle
    prompts: dict[str, str] = {}
    if (d / "prompts.json").is_file():
        pj = load_json(d / "prompts.json")
        for pr in (pj if isinstance(pj, list) else []):
            if isinstance(pr, dict) and isinstance(pr.get("slug"), str) and isinstance(pr.get("resolved"), str):
                prompts[pr["slug"]] = pr["resolved"]
    report = ImportReport(kind="cycle", source=str(d), corpus=corpus)
    sf, tf = str(d / "samples.json"), str(d / "tests.json")
    samples, tests = load_json(d / "samples.json"), load_json(d / "tests.json")
    for name, data in ((sf, samples), (tf, tests)):
        if not isinstance(data, list):
            raise InputError(f"expected a JSON list of records, got {type(data).__name__}", file=name)
    docs: list[Document] = []
    by_sample: dict[str, dict[str, Any]] = {}
    for i, s in enumerate(samples):
        if not isinstance(s, dict):
            raise InputError(f"expected a JSON object, got {type(s).__name__}", file=sf, record=i)
        refuse_nonfinite(s, file=sf, record=i)
        sid = str(_need(s, "id", file=sf, record=i))
        text = _need(s, "input_text", file=sf, record=i)
        slug = s.get("prompt_slug") if isinstance(s.get("prompt_slug"), str) else None
        tags = {"cycle": cycle}
        for k, tk in (("prompt_slug", "prompt"), ("category", "category"), ("source_model_slug", "generator")):
            if isinstance(s.get(k), str):
                tags[tk] = s[k]
        gen = {"model": _str(s.get("source_model_slug")), "date": _str(s.get("generated_at")),
               "prompt": prompts.get(slug) if slug else None,
               "settings": {k: s[k] for k in ("prompt_slug", "category", "word_count") if s.get(k) is not None}}
        data = {"id": f"{corpus}/sample/{sid}", "text": text, "label": "ai", "arm": arm,
                "kind": s.get("category") if isinstance(s.get("category"), str) else None, "subgroup": slug,
                "tags": tags, "group_key": f"{corpus}/prompt/{slug}" if slug else f"{corpus}/sample/{sid}",
                "provenance": {"method": f"sample {sid} of cycle {cycle} (samples.json)", "dataset": cycle,
                               "record": i},
                "generation": {k: v for k, v in gen.items() if v is not None}}
        doc = _doc(data, file=sf, record=i)
        if sid in by_sample:
            raise InputError(f"sample id {sid!r} given twice", file=sf, record=i, field="id")
        by_sample[sid] = {**data, "text_sha256": doc.text_sha256, "tags": doc.tags,
                          "generation": doc.generation.model_dump(exclude_none=True) if doc.generation else None}
        docs.append(doc)
    skipped: dict[str, int] = {}
    differs = 0
    n_tests = 0
    seen: set[str] = set()
    for i, t in enumerate(tests):
        if not isinstance(t, dict):
            raise InputError(f"expected a JSON object, got {type(t).__name__}", file=tf, record=i)
        refuse_nonfinite(t, file=tf, record=i)
        tid = str(_need(t, "id", file=tf, record=i))
        sid = str(_need(t, "sample_id", file=tf, record=i))
        tool = str(_need(t, "humanizer_slug", file=tf, record=i))
        if t.get("status") != "complete" or not isinstance(t.get("output_text"), str) or is_blank(t["output_text"]):
            why = str(t.get("failure_reason_code") or t.get("status") or "no output")
            skipped[why] = skipped.get(why, 0) + 1
            continue
        src = by_sample.get(sid)
        if src is None:
            raise InputError(f"sample {sid!r} is not in samples.json", file=tf, record=i, field="sample_id")
        if tid in seen:
            raise InputError(f"test id {tid!r} given twice", file=tf, record=i, field="id")
        seen.add(tid)
        extra: dict[str, Any] = {"dataset": cycle, "record": i}
        if isinstance(t.get("input_text"), str) and text_sha256(t["input_text"]) != src["text_sha256"]:
            differs += 1
            extra["input_text_sha256"] = text_sha256(t["input_text"])
            extra["input_differs_from_sample"] = True
        for k in ("meaning_preservation", "readability", "retry_count"):
            if t.get(k) is not None:
                extra[k] = t[k]
        hum = {"name": tool, "date": _str(t.get("completed_at")), "cycle": cycle, "test_id": tid}
        docs.append(_doc(derived_document(src, doc_id=f"{corpus}/test/{tid}", text=t["output_text"], tool=tool,
                                          arm=humanized_arm, humanizer={k: v for k, v in hum.items() if v},
                                          method=f"test {tid} of cycle {cycle}: humanizer {tool} on sample {sid} "
                                                 "(tests.json)", extra_provenance=extra), file=tf, record=i))
        n_tests += 1
    report.set_entry("samples.json")["records"] = len(samples)
    report.set_entry("tests.json")["records"] = len(tests)
    _finish(report, docs[:len(samples)], "samples.json")
    _finish(report, docs[len(samples):], "tests.json")
    if skipped:
        report.notes.append("tests not imported (no complete output): "
                            + ", ".join(f"{k}: {v}" for k, v in sorted(skipped.items())))
    if differs:
        report.notes.append(f"{differs} test(s) were run on an input that differs from their sample's text; "
                            "each names the input's sha256 in provenance.input_text_sha256")
    return report, docs


def import_generated(ws: Any, path: str | Path, **kw: Any) -> ImportReport:
    """Import ``veribench generate`` output into ``ws`` (all or nothing)."""
    report, docs = read_generated(path, **kw)
    return store_import(ws, report, docs)


def import_humanized(ws: Any, path: str | Path, **kw: Any) -> ImportReport:
    """Import ``veribench humanize`` output into ``ws`` as derived documents (all or nothing)."""
    report, docs = read_humanized(ws, path, **kw)
    return store_import(ws, report, docs)


def import_cycle(ws: Any, directory: str | Path, **kw: Any) -> ImportReport:
    """Import a cycle bundle's samples and humanizer outputs into ``ws`` (all or nothing)."""
    report, docs = read_cycle(directory, **kw)
    return store_import(ws, report, docs)
