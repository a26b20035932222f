"""Deriving documents in a workspace: attacked copies and humanized / paraphrased arms.

Every derived document (see :mod:`veribench.corpus.document` for the fields) keeps its
source's label, kind, subgroup, group_key, tags and corpus, and adds
``tags.derivation`` and ``tags.attack``; ``provenance`` holds ``source_id``, ``attack``
(``{name, version, params, seed}``), ``edits`` (spans over the source text) and
``derivation`` (full spec and hash, per-document seed, counts, the model used). Its id
is ``{source_id}~{name}~{h}`` with ``h`` the first 10 hex digits of SHA-256 over the
spec and seed (attacks) or the humanizer spec hash and arm name (arms), so a rerun
finds what is already derived and computes only the rest (resumable), and a different
seed or setting gives new documents beside the old ones.

Work is stored in chunks (``batch_size`` sources), each chunk in one transaction; a
killed run keeps every chunk already stored. Paid rewriters go through the shared
cached, budgeted execution layer (:func:`veribench.humanizers.pipeline.humanize_texts`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from veribench.attacks.base import SEED_SCHEME, Attack, AttackError, AttackResult, create, doc_seed
from veribench.attacks.paraphrase import build_humanizer
from veribench.corpus.document import Document
from veribench.corpus.edits import apply_edits, diff_edits
from veribench.corpus.report import ImportReport
from veribench.corpus.stored import load_documents, store_derived
from veribench.detectors.pipeline import RunStats
from veribench.errors import InputError
from veribench.hashing import canonical_json, sha256_bytes, text_sha256
from veribench.humanizers.pipeline import humanize_texts
from veribench.spec import Spec


@dataclass
class DeriveReport:
    """What one ``attack`` / ``derive-arm`` call did.

    Attributes:
        kind: ``attack``, ``humanize`` or ``paraphrase`` (the ``tags.derivation`` value).
        name: attack or humanizer name; ``spec``: its full spec; ``seed``: the run seed.
        selected: source documents selected; ``derived``: new documents stored;
        already_present: sources whose derived document was already stored (skipped);
        failed: reason code -> count (no document stored for those); ``failed_ids``: first 20.
        not_run: sources left for budget (``--max-spend``) or by a dry run.
        planned: dry-run requests (paid rewriters); ``import_ids``: one per stored chunk.
    """

    kind: str
    name: str
    spec: dict[str, Any]
    seed: int | None
    arm: str | None = None
    selected: int = 0
    derived: int = 0
    already_present: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    failed_ids: list[str] = field(default_factory=list)
    not_run: int = 0
    stopped_for_budget: bool = False
    dry_run: bool = False
    planned: list[dict[str, Any]] = field(default_factory=list)
    import_ids: list[str] = field(default_factory=list)
    model: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """One summary line (the CLI prints it)."""
        verb = "would derive" if self.dry_run else "derived"
        n = self.not_run if self.dry_run else self.derived
        parts = [f"{self.name}: {verb} {n} document(s) from {self.selected} source(s)"]
        if self.already_present:
            parts.append(f"{self.already_present} already present")
        if self.failed:
            parts.append("failed " + ", ".join(f"{k} {v}" for k, v in sorted(self.failed.items())))
        if self.not_run and not self.dry_run:
            parts.append(f"{self.not_run} not run" + (" (stopped for budget; rerun to resume)"
                                                        if self.stopped_for_budget else ""))
        return "; ".join(parts)


# --------------------------------------------------------------------------- selection
def select_sources(ws: Any, *, corpus: str | None = None, arm: str | None = None, label: str | None = None,
                   include_derived: bool = False, doc_ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Source documents (with text), ordered by id: filtered by corpus, arm and label;
    derived documents (``tags.derivation`` set) are left out unless ``include_derived``."""
    where, params = ["text IS NOT NULL"], []
    for col, v in (("corpus", corpus), ("arm", arm), ("label", label)):
        if v is not None:
            where.append(f"{col} = ?")
            params.append(v)
    if doc_ids is not None:
        where.append("doc_id IN (SELECT unnest(?::VARCHAR[]))")
        params.append(list(doc_ids))
    if not include_derived:
        where.append("(tags IS NULL OR json_extract_string(tags, '$.derivation') IS NULL)")
    ids = [r[0] for r in ws.query(f"SELECT doc_id FROM documents WHERE {' AND '.join(where)} ORDER BY doc_id",
                                  params)]
    docs = load_documents(ws, ids)
    return [docs[i] for i in ids]


def _existing(ws: Any, ids: Sequence[str]) -> set[str]:
    if not ids:
        return set()
    return {r[0] for r in ws.query("SELECT doc_id FROM documents WHERE doc_id IN (SELECT unnest(?::VARCHAR[]))",
                                   [list(ids)])}


def derived_id(source_id: str, name: str, key: Any) -> str:
    """``{source_id}~{name}~{first 10 hex of SHA-256(canonical JSON of key)}``."""
    return f"{source_id}~{name}~{sha256_bytes(canonical_json(key).encode('utf-8'))[:10]}"


# --------------------------------------------------------------------------- building documents
_NOT_INHERITED = ("published", "method", "attestation", "source_id", "attack", "edits", "derivation")

def derived_document(src: dict[str, Any], *, doc_id: str, text: str, edits: Sequence[tuple[int, int, str]],
                     derivation: str, name: str, record: dict[str, Any], detail: dict[str, Any],
                     arm: str | None) -> Any:
    """The :class:`~veribench.corpus.document.Document` derived from stored source row ``src``.

    Raises:
        RuntimeError: the edits do not reproduce ``text`` from the source (a bug, never stored).
    """

    if apply_edits(src["text"], edits) != text:
        raise RuntimeError(f"{name}: edits do not reproduce the derived text of {src['doc_id']}")
    sp = src.get("provenance") or {}
    # The source's attribution travels with the text; its dates, method and attestation do not.
    prov: dict[str, Any] = {k: v for k, v in sp.items() if v is not None and k not in _NOT_INHERITED}
    prov.update({"method": f"{derivation} {name} (veribench) of {src['doc_id']}", "source_id": src["doc_id"],
                 "attack": record, "edits": [list(e) for e in edits],
                 "derivation": {"kind": derivation, "source_sha256": src["text_sha256"], **detail}})
    gen = dict(src["generation"]) if src.get("generation") else None
    if gen is not None:
        note = f"{derivation} {name} by veribench (provenance.attack)"
        gen["post_editing"] = f"{gen['post_editing']}; {note}" if gen.get("post_editing") else note
    tags = {**(src.get("tags") or {}), "derivation": derivation, "attack": name}
    return Document.model_validate({
        "id": doc_id, "text": text, "label": src["label"], "arm": arm, "kind": src["kind"],
        "subgroup": src["subgroup"], "tags": tags, "group_key": src["group_key"], "provenance": prov,
        "generation": gen})


def _store(ws: Any, kind: str, name: str, source: str, items: list[tuple[Any, str | None]]) -> str | None:

    if not items:
        return None
    rep = ImportReport(kind=kind, source=source, corpus=None)
    entry = rep.set_entry(name)
    entry["records"] = entry["documents"] = len(items)
    for d, _ in items:
        entry["labels"][d.label] = entry["labels"].get(d.label, 0) + 1
    store_derived(ws, rep, items)
    return rep.import_id


def _derive(ws: Any, sources: list[dict[str, Any]], report: DeriveReport, *, id_for: Callable[[dict], str],
            compute: Callable[[list[dict[str, Any]]], list[AttackResult]], record: Callable[[], dict[str, Any]],
            detail: Callable[[dict[str, Any], AttackResult], dict[str, Any]], arm_for: Callable[[dict], str | None],
            batch_size: int) -> DeriveReport:
    report.selected = len(sources)
    ids = {s["doc_id"]: id_for(s) for s in sources}
    have = _existing(ws, list(ids.values()))
    todo = [s for s in sources if ids[s["doc_id"]] not in have]
    report.already_present = len(sources) - len(todo)
    for b in range(0, len(todo), max(1, batch_size)):
        chunk = todo[b:b + batch_size]
        results = compute(chunk)
        items = []
        for src, res in zip(chunk, results):
            if res.status == "not_run":
                report.not_run += 1
                continue
            if res.status != "ok":
                report.failed[res.status] = report.failed.get(res.status, 0) + 1
                if len(report.failed_ids) < 20:
                    report.failed_ids.append(src["doc_id"])
                continue
            doc = derived_document(src, doc_id=ids[src["doc_id"]], text=res.text, edits=res.edits,
                                   derivation=report.kind, name=report.name, record=record(),
                                   detail=detail(src, res), arm=arm_for(src))
            items.append((doc, src["corpus"]))
        if report.dry_run:
            report.not_run += len(items)
            continue
        iid = _store(ws, report.kind, report.name, f"{report.kind} {report.name} (seed {report.seed})", items)
        if iid:
            report.import_ids.append(iid)
            report.derived += len(items)
    return report


# --------------------------------------------------------------------------- attacks
def attack_documents(ws: Any, attack: Attack | str, params: dict[str, Any] | None = None, *, seed: int = 0,
                     corpus: str | None = None, arm: str | None = None, label: str | None = None,
                     doc_ids: Sequence[str] | None = None, batch_size: int = 256, max_spend: float | None = None,
                     dry_run: bool = False, progress: bool = False) -> DeriveReport:
    """Derive one attacked document per selected source (see the module docstring).

    Args:
        attack: an :class:`Attack` or a name (built with ``params``).
        seed: the run seed; each document's stream is :func:`~.base.doc_seed` of it.
        corpus, arm, label, doc_ids: source selection (derived documents never selected).
        max_spend, dry_run: for paid rewriters (``paraphrase``), as for ``veribench humanize``.

    Returns:
        a :class:`DeriveReport`.
    """

    atk = create(attack, params) if isinstance(attack, str) else attack
    sources = select_sources(ws, corpus=corpus, arm=arm, label=label, doc_ids=doc_ids)
    rep = DeriveReport(kind="attack", name=atk.name, spec=atk.spec.to_dict(), seed=int(seed), dry_run=dry_run)
    stats = RunStats()
    key = {"spec": atk.spec.to_dict(), "seed": int(seed)}

    def compute(chunk: list[dict[str, Any]]) -> list[AttackResult]:
        seeds = [doc_seed(seed, atk.name, s["doc_id"]) for s in chunk]
        return atk.run([s["text"] for s in chunk], seeds, ws=ws, seed=int(seed), max_spend=max_spend,
                       dry_run=dry_run, stats=stats, progress=progress)

    def detail(src: dict[str, Any], res: AttackResult) -> dict[str, Any]:
        d = {"spec": atk.spec.to_dict(), "spec_hash": atk.spec.hash, "seed_scheme": SEED_SCHEME,
             "doc_seed": doc_seed(seed, atk.name, src["doc_id"]), "stats": res.stats, "source": atk.source}
        d.update({k: v for k, v in res.detail.items() if v is not None})
        return d

    _derive(ws, sources, rep, id_for=lambda s: derived_id(s["doc_id"], atk.name, key), compute=compute,
            record=lambda: atk.record(int(seed)), detail=detail, arm_for=lambda s: s["arm"], batch_size=batch_size)
    rep.stopped_for_budget = stats.stopped_for_budget
    rep.planned = list(stats.planned)
    try:
        rep.model = atk.describe_model()
    except AttackError:  # e.g. nothing selected, so a hub model's config was never read
        rep.model = None
    return rep


# --------------------------------------------------------------------------- humanized / paraphrased arms
def humanize_arm(ws: Any, humanizer: Any, settings: dict[str, Any] | None = None, *, new_arm: str,
                 corpus: str | None = None, arm: str | None = None, label: str | None = None,
                 doc_ids: Sequence[str] | None = None, seed: int | None = None, batch_size: int = 256,
                 max_spend: float | None = None, dry_run: bool = False, progress: bool = False) -> DeriveReport:
    """Run a humanizer (any registered one, or ``llm-paraphraser``) over a corpus slice and
    store every output as a new document in arm ``new_arm``, linked to its source.

    Outputs go through :func:`veribench.humanizers.pipeline.humanize_texts` (cache,
    preflight, budget, dry run, per-batch storage): a rerun resumes without repeating a
    stored call. ``tags.derivation`` is ``paraphrase`` for ``llm-paraphraser``, else
    ``humanize``; the full humanizer spec is kept in ``provenance.derivation.spec``.

    Raises:
        InputError: ``new_arm`` empty.
    """

    if not new_arm or not new_arm.strip():
        raise InputError("the new arm needs a name", field="--name")
    if isinstance(humanizer, str):
        s = dict(settings or {})
        if humanizer == "llm-paraphraser" and seed is not None:
            s.setdefault("seed", int(seed))
        humanizer = build_humanizer(humanizer, s)
    spec: Spec = humanizer.spec
    kind = "paraphrase" if spec.name == "llm-paraphraser" else "humanize"
    sources = select_sources(ws, corpus=corpus, arm=arm, label=label, doc_ids=doc_ids)
    rep = DeriveReport(kind=kind, name=spec.name, spec=spec.to_dict(), seed=seed, arm=new_arm, dry_run=dry_run)
    stats = RunStats()

    def compute(chunk: list[dict[str, Any]]) -> list[AttackResult]:
        res = humanize_texts(ws, humanizer, [s["text"] for s in chunk], max_spend=max_spend, dry_run=dry_run,
                             stats=stats, progress=progress)
        out = []
        for s in chunk:
            r = res.get(text_sha256(s["text"]))
            if r is None:
                out.append(AttackResult(status="not_run"))
            elif r.status != "ok":
                out.append(AttackResult(status=r.status, reason=str(r.detail.get("reason") or "")))
            else:
                out.append(AttackResult(edits=diff_edits(s["text"], r.output), text=r.output,
                                        detail={"vendor_version": r.vendor_version}))
        return out

    record = {"name": spec.name, "version": spec.version, "params": dict(spec.settings), "seed": seed}
    _derive(ws, sources, rep, id_for=lambda s: derived_id(s["doc_id"], spec.name, {"spec": spec.hash, "arm": new_arm}),
            compute=compute, record=lambda: record,
            detail=lambda s, r: {"spec": spec.to_dict(), "spec_hash": spec.hash, "arm": new_arm,
                                 **{k: v for k, v in r.detail.items() if v is not None}},
            arm_for=lambda s: new_arm, batch_size=batch_size)
    rep.stopped_for_budget = stats.stopped_for_budget
    rep.planned = list(stats.planned)
    return rep


# --------------------------------------------------------------------------- pairing
def pairs(ws: Any, *, derivation: str | None = None, attack: str | None = None) -> dict[str, str]:
    """``{derived doc_id: source doc_id}`` for every derived document in ``ws`` (pure read).

    Args:
        derivation: only this ``tags.derivation`` (``attack``, ``paraphrase``, ``humanize``, ``edit``).
        attack: only this ``tags.attack`` (attack or humanizer name).
    """
    where, params = ["json_extract_string(provenance, '$.source_id') IS NOT NULL"], []
    if derivation is not None:
        where.append("json_extract_string(tags, '$.derivation') = ?")
        params.append(derivation)
    if attack is not None:
        where.append("json_extract_string(tags, '$.attack') = ?")
        params.append(attack)
    rows = ws.query("SELECT doc_id, json_extract_string(provenance, '$.source_id') FROM documents WHERE "
                    + " AND ".join(where) + " ORDER BY doc_id", params)
    return dict(rows)


def derived_documents(ws: Any) -> list[dict[str, Any]]:
    """One row per derived document: ``{doc_id, source_id, derivation, attack, arm, label, seed, spec_hash}``
    (``attack`` is the name; ``seed`` the run seed; for building robustness rows)."""
    rows = ws.query(
        "SELECT doc_id, json_extract_string(provenance, '$.source_id'), json_extract_string(tags, '$.derivation'), "
        "json_extract_string(tags, '$.attack'), arm, label, json_extract(provenance, '$.attack.seed'), "
        "json_extract_string(provenance, '$.derivation.spec_hash') FROM documents "
        "WHERE json_extract_string(provenance, '$.source_id') IS NOT NULL ORDER BY doc_id")
    return [{"doc_id": d, "source_id": s, "derivation": k, "attack": a, "arm": arm, "label": lab,
             "seed": json.loads(seed) if seed is not None else None, "spec_hash": h}
            for d, s, k, a, arm, lab, seed, h in rows]
