"""``veribench publish``: freeze one detector run into a bundle anyone can verify.

The bundle (layout in :mod:`.layout`) holds the rows the run rests on, as the event log
recorded them at the run's chain head, with everything needed to re-derive every
number: the protocol bytes as committed, the commitment records and timestamp tokens,
the amendments, the corpus manifest, per-document scores, the log up to the run and the
results and tables.

Before writing, the workspace's log is verified (:func:`veribench.store.logcheck.verify_workspace`)
and the run is re-derived from the rows it is about to publish
(:func:`veribench.bundles.snapshot.derive`): a workspace whose rows were edited, or a run
whose scores changed since it ran, is refused rather than published.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veribench import __version__
from veribench.bundles import docstatus, layout, runblock
from veribench.bundles.reader import scan, sha256_file
from veribench.bundles.snapshot import (
    DetectorPlan,
    Snapshot,
    decisions,
    derive,
    hazards_text,
    protocol_from_bytes,
    split_sides,
)
from veribench.errors import InputError
from veribench.evaluate import honesty
from veribench.evaluate.run import find_run
from veribench.evaluate.tables import write_outputs
from veribench.hashing import canonical_json, sha256_bytes, text_sha256
from veribench.spec import Spec
from veribench.store import events as ev
from veribench.store import logcheck
from veribench.store.commitments import changelog_of, record_bytes, stored_commitment, versions_of


@dataclass
class PublishResult:
    """What :func:`publish` wrote."""

    out: Path
    run_id: str
    files: int
    documents: int
    score_rows: int
    root_sha256: str
    notes: list[str] = field(default_factory=list)


def _find_run(ws: Any, ref: str) -> tuple[str, dict[str, Any]]:
    """``(run_id, results)`` of the run ``--run`` names (:func:`veribench.evaluate.run.find_run`,
    the one lookup of every command that takes ``--run``).

    Raises:
        InputError: no such run, naming the option ``--run`` and the stored tags.
    """
    run_id, _ = find_run(ws, ref)
    return run_id, json.loads(ws.query("SELECT results FROM runs WHERE run_id = ?", [run_id])[0][0])


#: A bundle is written into ``.<out name>.publishing-<process id>`` beside ``out`` and renamed
#: into place when complete; a publish that is killed leaves that folder behind.
STAGING_PREFIX, STAGING_MARK = ".", ".publishing-"
_STAGING = re.compile(re.escape(STAGING_PREFIX) + r".+" + re.escape(STAGING_MARK) + r"([0-9]+)")


#: The names a publish writes at the top of its staging folder: a folder holding anything else
#: is not removed as a leftover.
_STAGED_NAMES = frozenset({*layout.FOLDERS, layout.MANIFEST, layout.README, layout.CORPUS, layout.SCORES_CSV,
                           layout.SCORES_PARQUET, layout.AMENDMENTS, layout.RESULTS, *layout.TABLE_FILES})


def _process_gone(pid: int) -> bool:
    """True only when no process ``pid`` exists on this machine (``kill(pid, 0)`` answers ESRCH).

    Any other answer - the process exists (even owned by someone else), the id is not
    positive, or this platform cannot ask without side effects (``kill`` terminates on
    Windows) - counts as running: a staging folder is never removed on a guess.
    """
    if pid <= 0 or os.name != "posix":
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def clean_staging(folder: Path) -> list[str]:
    """Remove the staging folders that killed publishes left in ``folder``.

    A leftover is a real folder (never a link) named ``.<name>.publishing-<pid>`` whose
    process is gone (:func:`_process_gone`) and which holds only names a publish writes at
    its top (:data:`_STAGED_NAMES`); the staging folder of a publish still running (this
    one's included) is never touched. Nothing else in ``folder`` is read or changed.

    Returns:
        One note per folder removed (its name and the process id it belonged to), and one per
        folder named like a leftover but kept because it holds something else.
    """
    notes: list[str] = []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return notes
    for name in names:
        m = _STAGING.fullmatch(name)
        if m is None or int(m.group(1)) == os.getpid():
            continue
        p = folder / name
        try:
            if not stat.S_ISDIR(os.lstat(p).st_mode) or not _process_gone(int(m.group(1))):
                continue
            foreign = sorted(set(os.listdir(p)) - _STAGED_NAMES)
        except OSError:
            continue
        if foreign:
            notes.append(f"kept {p}: named like a staging folder of publish process {m.group(1)}, which is gone, "
                         f"but it holds {foreign[0]!r}, which publish does not write; remove it yourself if "
                         "nothing in it is needed")
            continue
        shutil.rmtree(p, ignore_errors=True)
        if not os.path.lexists(p):
            notes.append(f"removed {p}, the staging folder of publish process {m.group(1)}, which is gone "
                         "(killed before it finished)")
    return notes


def publish(ws: Any, run_ref: str, out: str | Path) -> PublishResult:
    """Write the bundle of run ``run_ref`` (a run id, or a tag: its newest run) to ``out``.

    The bundle is written into a staging folder beside ``out`` and renamed into place when
    complete; staging folders that killed publishes left beside ``out`` are removed first
    (:func:`clean_staging`; the result's ``notes`` name them).

    Raises:
        InputError: unknown run; ``out`` exists and is not empty; the workspace's log does
            not verify; the run has no committed protocol or no listed detectors; its
            rows changed since it ran; it does not re-derive from its rows.
    """
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError("output folder exists and is not empty; choose a new folder", file=str(out))
    notes: list[str] = clean_staging(out.parent)
    rep = logcheck.verify_workspace(ws)
    if not rep.ok:
        raise InputError(f"the workspace's event log does not verify ({rep.findings[0].line()}); run "
                         f"`veribench log verify --workspace {ws.path}`", file=str(ws.db_path))
    run_id, results = _find_run(ws, run_ref)
    con = ws.con
    events = ev.read_events(con)
    run_ev = next((e for e in events if e["type"] == "run" and e["payload"].get("run_id") == run_id), None)
    if run_ev is None:  # verify_workspace already refuses a run without its event
        raise InputError(f"run {run_id} has no run event", file=str(ws.db_path))
    run = results["run"]
    pblock = run.get("protocol") or {}
    sha = pblock.get("hash")
    if not sha:
        raise InputError(f"run {run_id} ran without a committed protocol; commit one and evaluate again to publish",
                         file=str(ws.db_path), field="runs")
    head_seq = int((run.get("chain_head") or {}).get("seq") or 0)
    events = events[: run_ev["seq"]]

    vs = versions_of(events)
    pid = vs[sha]["payload"]["protocol_id"]
    mine = sorted((e for e in vs.values() if e["payload"]["protocol_id"] == pid), key=lambda e: e["seq"])
    stage = out.with_name(f"{STAGING_PREFIX}{out.name}{STAGING_MARK}{os.getpid()}")
    shutil.rmtree(stage, ignore_errors=True)
    for sub in layout.FOLDERS:
        (stage / sub).mkdir(parents=True)
    try:
        protocol_file = None
        proto = None
        for e in mine:
            p = e["payload"]
            k = int(p.get("version", 1))
            row = ws.query("SELECT content FROM protocols WHERE protocol_hash = ?", [p["protocol_sha256"]])
            raw = row[0][0].encode("utf-8") if row and row[0][0] is not None else None
            if raw is None or sha256_bytes(raw) != p["protocol_sha256"]:
                raise InputError(f"the stored bytes of protocol version {k} do not hash to its commitment",
                                 file=str(ws.db_path), field="protocols")
            name = layout.protocol_file_name(k, p.get("file"))
            (stage / name).write_bytes(raw)
            rec, token, roots = stored_commitment(ws, p["protocol_sha256"])
            (stage / f"commitments/v{k}.json").write_bytes(record_bytes(rec))
            if token:
                (stage / f"commitments/v{k}.tsr").write_bytes(token)
            if roots:
                (stage / f"commitments/v{k}.roots.pem").write_bytes(roots)
            if p["protocol_sha256"] == sha:
                protocol_file = name
                proto = protocol_from_bytes(raw, p.get("file") or name)
        assert proto is not None and protocol_file is not None
        if not proto.detectors:
            raise InputError("the run's protocol lists no [[detectors]]: its decision rules were not committed; "
                             "list them in the protocol to publish", file=protocol_file)
        for pr in runblock.label_problems(run, run_ev, proto, [e["payload"].get("file") for e in mine], events):
            raise InputError(f"run {run_id}: {pr.message} (expected {pr.expected!r}, got {pr.got!r}); a bundle "
                             "shows only labels the log and the committed protocol give", file=str(ws.db_path),
                             field=pr.field)
        (stage / layout.AMENDMENTS).write_text(layout.json_file_text(changelog_of(events, pid, upto=vs[sha]["seq"])),
                                               encoding="utf-8")

        # -- the rows, as of the run's chain head --------------------------------------------
        corpora = proto.selection.get("corpora")
        corpora = [str(c) for c in (corpora if isinstance(corpora, list) else [corpora])] if corpora else None
        imports = [e for e in events if e["type"] == "import" and e["seq"] <= head_seq
                   and ev.import_reaches(e["payload"], corpora)]
        import_seq = {e["payload"]["import_id"]: e["seq"] for e in imports}
        specs: dict[str, Spec] = {}
        for d in results["detectors"]:
            r = ws.query("SELECT spec_json FROM specs WHERE spec_hash = ?", [d["spec_hash"]])
            specs[d["detector"]] = Spec.from_json(r[0][0])
        spec_hashes = sorted({s.hash for s in specs.values()})
        doc_rows = con.execute(
            "SELECT doc_id, corpus, text, text_sha256, label, arm, kind, subgroup, tags, group_key, provenance, "
            "generation, import_id FROM documents WHERE import_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY doc_id",
            [list(import_seq)]).fetchall()
        doc_rows.sort(key=lambda r: r[0])  # corpus.jsonl's order: by doc_id, as Python compares strings
        doc_ids = [r[0] for r in doc_rows]
        docs_latest = logcheck.latest_items(con, "doc")
        doc_seq = {}
        for r in doc_rows:
            got = docs_latest.get((r[0], None))
            if got is None or got[1] > head_seq:
                raise InputError(f"document {r[0]} was changed after run {run_id} (evaluate again and publish the "
                                 "new run)", file=str(ws.db_path))
            doc_seq[r[0]] = got[1]
        known = set(doc_ids)
        doc_events = [e["seq"] for e in imports] + [
            e["seq"] for e in events if e["type"] == "document_update" and e["seq"] <= head_seq
            and known & set(e["payload"].get("doc_ids") or [])]
        links_latest = logcheck.latest_items(con, "link")
        scores_latest = logcheck.latest_items(con, "score")
        links_now = con.execute(
            "SELECT doc_id, spec_hash, submitted_sha256 FROM submissions WHERE spec_hash IN "
            "(SELECT unnest(?::VARCHAR[])) AND doc_id IN (SELECT unnest(?::VARCHAR[]))",
            [spec_hashes, doc_ids]).fetchall()
        # verify_workspace has matched every current row with its latest leaf; the run rests on
        # them only if none was logged after the run's chain head
        link_rows = []
        for d, h, s in links_now:
            got = links_latest.get((d, h))
            if got is None or got[1] > head_seq:
                raise InputError(f"document {d}: its link to detector {h[:12]}… changed after run {run_id} "
                                 "(evaluate again and publish the new run)", file=str(ws.db_path))
            link_rows.append((d, h, s, got[1]))
        keys = sorted({(h, s) for _, h, s, _ in link_rows})
        score_rows = {}
        keyset = set(keys)
        if keys:
            for r in con.execute(
                    "SELECT spec_hash, text_sha256, status, raw, scale, direction, ai_probability, verdict, "
                    "vendor_version, scanned_at, detail FROM scores WHERE spec_hash IN (SELECT unnest(?::VARCHAR[]))",
                    [spec_hashes]).fetchall():
                if (r[0], r[1]) in keyset:
                    score_rows[(r[0], r[1])] = r
        for k in keys:
            got = scores_latest.get(k)
            if k not in score_rows:
                if got is not None:
                    raise InputError(f"a logged score of detector {k[0][:12]}… is missing", file=str(ws.db_path))
            elif got is None or got[1] > head_seq:
                raise InputError(f"a score of detector {k[0][:12]}… (text {k[1][:12]}…) changed after run {run_id} "
                                 "(evaluate again and publish the new run)", file=str(ws.db_path))

        # -- re-derive the run from exactly these rows ----------------------------------------
        import pyarrow as pa

        snap = Snapshot()
        try:
            fp_ids = _fingerprint_only(ws, doc_rows)
            fp = [r[0] in fp_ids for r in doc_rows]
            snap.load("documents", pa.table({
                "doc_id": pa.array(doc_ids, pa.string()), "corpus": pa.array([r[1] for r in doc_rows], pa.string()),
                # only texts a bundle may publish: what the verifier will have
                "text": pa.array([None if f else r[2] for r, f in zip(doc_rows, fp)], pa.string()),
                "text_sha256": pa.array([r[3] for r in doc_rows], pa.string()),
                "label": pa.array([r[4] for r in doc_rows], pa.string()),
                "arm": pa.array([r[5] for r in doc_rows], pa.string()),
                "kind": pa.array([r[6] for r in doc_rows], pa.string()),
                "subgroup": pa.array([r[7] for r in doc_rows], pa.string()),
                "tags": pa.array([r[8] for r in doc_rows], pa.string()),
                "group_key": pa.array([r[9] for r in doc_rows], pa.string()),
                "provenance": pa.array([_json_text(r[10]) for r in doc_rows], pa.string())}))
            snap.load("submissions", pa.table({"doc_id": pa.array([x[0] for x in link_rows], pa.string()),
                                               "spec_hash": pa.array([x[1] for x in link_rows], pa.string()),
                                               "submitted_sha256": pa.array([x[2] for x in link_rows], pa.string())}))
            sr = [score_rows[k] for k in keys if k in score_rows]
            snap.load("scores", pa.table({
                "spec_hash": pa.array([r[0] for r in sr], pa.string()),
                "text_sha256": pa.array([r[1] for r in sr], pa.string()),
                "status": pa.array([r[2] for r in sr], pa.string()), "raw": pa.array([r[3] for r in sr], pa.float64()),
                "scale": pa.array([r[4] for r in sr], pa.string()),
                "direction": pa.array([r[5] for r in sr], pa.string()),
                "ai_probability": pa.array([r[6] for r in sr], pa.float64()),
                "verdict": pa.array([r[7] for r in sr], pa.string()),
                "vendor_version": pa.array([r[8] for r in sr], pa.string()),
                "detail": pa.array([_detail_of(r[10]) for r in sr], pa.string()),
                "scanned_at": pa.array([r[9] for r in sr], pa.timestamp("us", tz="UTC"))}))
            plans = [DetectorPlan(specs[e.display], e.display, e.rule, tuple(e.corpora)) for e in proto.detectors]
            again, docs, arrays = derive(snap, proto, plans, dict(run))
            stored = {k: v for k, v in results.items() if k != "files"}
            if canonical_json(again) != canonical_json(stored):
                raise InputError(f"run {run_id} does not re-derive from its rows (the stored results differ from a "
                                 "fresh computation); evaluate again and publish the new run", file=str(ws.db_path))
            score_table = _score_rows(snap, proto, plans, docs, arrays, again, link_rows, score_rows, scores_latest)
        finally:
            snap.close()
        in_run = set(docs.doc_id.tolist())
        # the workspace's rule also hides texts stored without one: the log does not say why
        hidden = (set(ws.fingerprint_only_ids()) if hasattr(ws, "fingerprint_only_ids") else
                  {r[0] for r in doc_rows if r[2] is None}) & in_run
        for d in sorted(hidden - fp_ids)[:1]:
            raise InputError(f"document {d} is selected and its text is withheld in the workspace (stored without "
                             "text, or derived from such a document), but its logged provenance does not mark it "
                             "fingerprint-only: a bundle can neither publish the text nor show why it is withheld; "
                             "re-import it with provenance.fingerprint_only = true and --update, then evaluate "
                             "again", file=str(ws.db_path), field="documents")

        # -- corpus manifest: {"doc": <the fields its leaf hashes>, ...} in canonical JSON -------
        with open(stage / layout.CORPUS, "w", encoding="utf-8", newline="\n") as f:
            dump = json.JSONEncoder(**ev.CANONICAL).encode
            for r in doc_rows:
                doc = ev.doc_fields(r[0], r[3], r[4], r[5], r[6], r[7], r[1], r[9], r[8], r[10], r[11])
                fp_only = r[0] in fp_ids
                rec = {"doc": doc, "doc_seq": doc_seq[r[0]], "in_run": r[0] in in_run, "fingerprint_only": fp_only}
                if r[0] in in_run and not fp_only:
                    rec["text"] = r[2]
                f.write(dump(rec) + "\n")

        # -- scores and the leaves they do not reproduce -----------------------------------
        write_scores(stage, score_table)
        batch_seqs = [e["seq"] for e in events if e["type"] == "scan_batch" and e["seq"] <= head_seq
                      and e["payload"].get("spec_hash") in spec_hashes]
        extra = log_leaves(ws, events, head_seq, set(doc_events) | set(batch_seqs), doc_seq, score_table)
        with open(stage / layout.EVENTS, "w", encoding="utf-8", newline="\n") as f:
            for e in events:
                f.write(ev.event_line(e) + "\n")
        write_leaves(stage, extra)

        # -- results and tables: written from the re-derivation (what the verifier re-derives) -------
        write_outputs(again, stage)
        (stage / layout.README).write_text(readme(again, protocol_file), encoding="utf-8")
        manifest = build_manifest(stage, manifest_meta(str(run.get("veribench_version", __version__)), run_ev, pid, protocol_file))
        (stage / layout.MANIFEST).write_text(layout.manifest_text(manifest), encoding="utf-8")
        if out.exists():
            out.rmdir()
        stage.rename(out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return PublishResult(out=out, run_id=run_id, files=len(manifest["files"]) + 1, documents=len(doc_rows),
                         score_rows=score_table.num_rows, root_sha256=manifest["root_sha256"], notes=notes)


def manifest_meta(version: str, run_ev: dict[str, Any], protocol_id: str, protocol_file: str) -> dict[str, Any]:
    """The manifest's fields besides ``files`` and ``root_sha256`` (:data:`layout.MANIFEST_KEYS`
    order), each from the run's logged event, ``version`` the run's own ``veribench_version``
    (its results, which the run event's ``results_sha256`` fixes): what the verifier re-derives."""
    p = run_ev["payload"]
    return {"format": layout.FORMAT, "veribench_version": version, "run_id": p.get("run_id"), "tag": p.get("tag"),
            "protocol_id": protocol_id, "protocol_sha256": p.get("protocol_sha256"), "protocol_file": protocol_file,
            "run_event": {"seq": run_ev["seq"], "hash": run_ev["hash"]}}


def log_leaves(ws: Any, events: list[dict[str, Any]], head_seq: int, carried: set[int], doc_seq: dict[str, int],
               score_table: Any) -> list[tuple]:
    """The rows of ``log/leaves.csv``: every logged fingerprint of the events the bundle carries
    whole that its corpus and score rows do not reproduce, each ``(kind, seq, k1, k2, leaf, fields)``.

    The events carried whole are ``carried`` (the imports the selection reaches, the corrections
    of their documents, the scan batches of the run's detectors), every event holding a
    fingerprint a withdrawal detached (so each is placed in its event, and their number equals
    what the withdrawals logged), and every event holding a later fingerprint of a key one of
    these holds (so each replaced value is shown replaced), to closure. A fingerprint is
    published with its keys and the canonical text it hashes (``fields``): from the row the
    workspace holds when it is its key's newest up to the run's chain head, or from
    ``replaced_leaves`` when a later one of the same key replaced it; with neither keys nor
    text when a withdrawal detached it.

    Raises:
        InputError: a withdrawal logged after the run detached fingerprints the run's log holds;
            a fingerprint's row changed after the run (its value at the run cannot be shown);
            a replaced value whose text the workspace did not keep (replaced before schema 3).
    """
    con = ws.con
    run_seq = events[-1]["seq"] if events else 0
    detached = con.execute("SELECT kind, seq, count(*) FROM log_items WHERE k1 IS NULL AND seq <= ? GROUP BY ALL",
                           [run_seq]).fetchall()
    budget = ev.blanked_budget(events)
    got = dict.fromkeys(ev.ITEM_KINDS, 0)
    for kind, q, k in detached:
        got[kind] += int(k)
        if int(q) > head_seq:
            raise InputError(f"a withdrawal detached fingerprints of event {q}, logged after run "
                             f"{events[-1]['payload'].get('run_id')} ran; evaluate again", file=str(ws.db_path))
    if got != {k: budget.get(k, 0) for k in got}:
        raise InputError(f"fingerprints detached in the log ({got}) are not the ones the withdrawals up to run "
                         f"{events[-1]['payload'].get('run_id')} logged ({budget}): a withdrawal after the run "
                         "removed rows it rests on; evaluate again and publish the new run", file=str(ws.db_path))
    seqs = set(carried) | {int(q) for _, q, _ in detached}
    while True:  # every later fingerprint of a key the carried events hold, up to the chain head
        more = {int(r[0]) for r in con.execute(
            "SELECT DISTINCT o.seq FROM log_items li JOIN log_items o ON o.kind = li.kind AND o.k1 = li.k1 AND "
            "o.k2 IS NOT DISTINCT FROM li.k2 AND o.seq > li.seq WHERE li.seq IN (SELECT unnest(?::BIGINT[])) AND "
            "o.seq <= ?", [sorted(seqs), head_seq]).fetchall()} - seqs
        if not more:
            break
        seqs |= more
    con.register("_vb_rep", _reproduced(score_table))
    try:
        items = con.execute(
            "SELECT li.seq, li.kind, li.k1, li.k2, li.leaf, (SELECT min(o.seq) FROM log_items o WHERE o.kind = li.kind "
            "AND o.k1 = li.k1 AND o.k2 IS NOT DISTINCT FROM li.k2 AND o.seq > li.seq) AS nxt FROM log_items li "
            "WHERE li.seq IN (SELECT unnest(?::BIGINT[])) AND NOT EXISTS (SELECT 1 FROM _vb_rep r WHERE "
            "r.kind = li.kind AND r.seq = li.seq AND r.k1 = li.k1 AND r.k2 = li.k2)", [sorted(seqs)]).fetchall()
    finally:
        con.unregister("_vb_rep")
    items = [x for x in items if not (x[1] == "doc" and x[2] is not None and doc_seq.get(x[2]) == int(x[0]))]
    for q, kind, k1, _k2, _leaf, nxt in items:
        if k1 is not None and nxt is not None and nxt > head_seq:
            raise InputError(f"the {kind} of key {str(k1)[:40]} logged at event {q} was replaced after run "
                             f"{events[-1]['payload'].get('run_id')} ran (event {nxt}): its value at the run cannot be "
                             "shown; evaluate again and publish the new run", file=str(ws.db_path))
    texts = _leaf_texts(con, [x for x in items if x[2] is not None and x[5] is None])
    kept = {(k, int(q), leaf): f for q, k, leaf, f in con.execute(
        "SELECT seq, kind, leaf, fields FROM replaced_leaves WHERE seq IN (SELECT unnest(?::BIGINT[]))",
        [sorted({int(x[0]) for x in items if x[2] is not None and x[5] is not None})]).fetchall()}
    out = []
    for q, kind, k1, k2, leaf, nxt in items:
        if k1 is None:
            f = None
        elif nxt is None:
            f = texts.get((kind, k1, k2))
            if f is None or text_sha256(f) != leaf:
                raise InputError(f"the stored row of the {kind} of key {str(k1)[:40]} (event {q}) does not hash to "
                                 "its newest fingerprint", file=str(ws.db_path))
        else:
            f = kept.get((kind, int(q), leaf))
            if f is None or text_sha256(f) != leaf:
                raise InputError(f"the {kind} of key {str(k1)[:40]} logged at event {q} was replaced (event {nxt}) "
                                 "before this workspace kept replaced rows (schema version 3): a bundle cannot show "
                                 "that its key follows from the log; score or import those rows again in a new "
                                 "workspace and evaluate there", file=str(ws.db_path))
        out.append((kind, int(q), k1, k2, leaf, f))
    out.sort(key=leaf_order)
    return out


def leaf_order(row: tuple) -> tuple:
    """The order of ``log/leaves.csv``: by event, kind, keys (empty first) and leaf."""
    kind, seq, k1, k2, leaf = row[:5]
    return (seq, kind, k1 or "", k2 or "", leaf)


def _leaf_texts(con: Any, items: list[tuple]) -> dict[tuple[str, Any, Any], str]:
    """``{(kind, k1, k2): canonical leaf text}`` of the rows the workspace holds for these keys
    (documents, scores, submission links), with the log's own leaf functions."""
    import pyarrow as pa

    out: dict[tuple[str, Any, Any], str] = {}
    by = {k: [(x[2], x[3]) for x in items if x[1] == k] for k in ev.ITEM_KINDS}
    queries = {
        "doc": ("SELECT d.doc_id, NULL, d.doc_id, d.text_sha256, d.label, d.arm, d.kind, d.subgroup, d.corpus, "
                "d.group_key, d.tags, d.provenance, d.generation FROM documents d JOIN _vb_keys k ON d.doc_id = k.k1"),
        "score": ("SELECT c.spec_hash, c.text_sha256, c.spec_hash, c.text_sha256, c.status, c.raw, c.scale, "
                  "c.direction, c.ai_probability, c.verdict, c.vendor_version, c.scanned_at, c.detail FROM scores c "
                  "JOIN _vb_keys k ON c.spec_hash = k.k1 AND c.text_sha256 = k.k2"),
        "link": ("SELECT u.doc_id, u.spec_hash, u.doc_id, u.spec_hash, u.submitted_sha256 FROM submissions u "
                 "JOIN _vb_keys k ON u.doc_id = k.k1 AND u.spec_hash = k.k2"),
    }
    for kind, keys in by.items():
        if not keys:
            continue
        con.register("_vb_keys", pa.table({"k1": pa.array([a for a, _ in keys], pa.string()),
                                           "k2": pa.array([b for _, b in keys], pa.string())}))
        try:
            for r in con.execute(queries[kind]).fetchall():
                if kind == "doc":
                    t = ev.doc_leaf_text(*r[2:])
                elif kind == "score":
                    t = ev.score_leaf_text(*r[2:11], r[11], hazards_text(r[12]))
                else:
                    t = ev.link_leaf_text(*r[2:])
                out[(kind, r[0], None if kind == "doc" else r[1])] = t
        finally:
            con.unregister("_vb_keys")
    return out


def _score_rows(snap: Snapshot, proto: Any, plans: list[DetectorPlan], docs: Any, arrays: list[Any],
                again: dict[str, Any], link_rows: list[tuple], score_rows: dict[tuple, tuple],
                scores_latest: dict[tuple, tuple[str, int]]):
    """The ``scores.csv`` rows (an Arrow table in :data:`layout.SCORE_COLUMNS` order), joined in SQL:
    one row per selected document x detector with a link, in (document, protocol order)."""
    import pyarrow as pa

    ids = docs.doc_id.tolist()
    sides = split_sides(docs, proto).tolist()
    dec = decisions(docs, arrays, proto, again)
    per = {"det_index": [], "doc_id": [], "split": [], "flag": []}
    for j, (plan, _arr) in enumerate(zip(plans, arrays)):
        fl = dec[plan.label]
        per["det_index"] += [j] * len(ids)
        per["doc_id"] += ids
        per["split"] += sides
        per["flag"] += [None if x is None else bool(x) for x in fl]
    dets = pa.table({"det_index": pa.array(range(len(plans)), pa.int64()),
                     "detector": pa.array([p.label for p in plans], pa.string()),
                     "detector_name": pa.array([p.spec.name for p in plans], pa.string()),
                     "detector_version": pa.array([p.spec.version for p in plans], pa.string()),
                     "detector_settings": pa.array([canonical_json(dict(p.spec.settings)) for p in plans], pa.string()),
                     "spec_hash": pa.array([p.spec.hash for p in plans], pa.string()),
                     "corpora": pa.array([list(p.corpora) or None for p in plans], pa.list_(pa.string()))})
    used = list(score_rows.items())
    extra = pa.table({"spec_hash": pa.array([k[0] for k, _ in used], pa.string()),
                      "text_sha256": pa.array([k[1] for k, _ in used], pa.string()),
                      # the failure's reason text is not in the score's fingerprint (its leaf holds the
                      # status code and the hazards only): a verifier could not re-derive it, so a
                      # bundle carries it empty (null) and ``verify`` refuses any other value
                      "reason": pa.array([None] * len(used), pa.string()),
                      "hazards": pa.array([hazards_text(r[10]) for _, r in used], pa.string()),
                      "score_seq": pa.array([scores_latest[k][1] for k, _ in used], pa.int64())})
    lseq = pa.table({"doc_id": pa.array([x[0] for x in link_rows], pa.string()),
                     "spec_hash": pa.array([x[1] for x in link_rows], pa.string()),
                     "link_seq": pa.array([x[3] for x in link_rows], pa.int64())})
    con = snap.con
    views = {"_p_per": pa.table({"det_index": pa.array(per["det_index"], pa.int64()),
                                 "doc_id": pa.array(per["doc_id"], pa.string()),
                                 "split": pa.array(per["split"], pa.string()),
                                 "flag": pa.array(per["flag"], pa.bool_())}),
             "_p_det": dets, "_p_score": extra, "_p_link": lseq}
    for k, v in views.items():
        con.register(k, v)
    try:
        t = con.sql("""
            SELECT x.doc_id, d.detector, d.detector_name, d.detector_version, d.detector_settings, d.spec_hash,
                   u.submitted_sha256, u.submitted_sha256 <> doc.text_sha256 AS text_differs, c.status, e.reason,
                   c.raw, c.scale, c.direction, c.ai_probability, c.verdict, c.vendor_version,
                   strftime(c.scanned_at, '%Y-%m-%dT%H:%M:%S.%fZ') AS scanned_at, e.hazards, e.score_seq, l.link_seq,
                   x.split, x.flag
            FROM _p_per x JOIN _p_det d USING (det_index)
            JOIN submissions u ON u.doc_id = x.doc_id AND u.spec_hash = d.spec_hash
            JOIN documents doc ON doc.doc_id = x.doc_id
            JOIN _p_link l ON l.doc_id = u.doc_id AND l.spec_hash = u.spec_hash
            LEFT JOIN scores c ON c.spec_hash = u.spec_hash AND c.text_sha256 = u.submitted_sha256
            LEFT JOIN _p_score e ON e.spec_hash = c.spec_hash AND e.text_sha256 = c.text_sha256
            WHERE d.corpora IS NULL OR list_contains(d.corpora, doc.corpus)
            ORDER BY x.doc_id, x.det_index""").to_arrow_table()
    finally:
        for k in views:
            con.unregister(k)
    return t.cast(arrow_schema())


def _fingerprint_only(ws: Any, doc_rows: list[tuple]) -> set[str]:
    """The documents whose text a bundle withholds: the logged rule of
    :mod:`veribench.bundles.docstatus` on the rows' provenance (what the verifier applies)."""
    return docstatus.fingerprint_only_ids((r[0], r[10]) for r in doc_rows)


def _detail_of(detail: Any) -> str | None:
    """The part of a score's detail a bundle carries (its hazards), as the snapshot's ``detail``."""
    hz = hazards_text(detail)
    return None if hz is None else '{"hazards":' + hz + "}"


def _reproduced(t: Any):
    """The (kind, seq, k1, k2) log items a score table's rows reproduce."""
    import pyarrow as pa
    import pyarrow.compute as pc

    has = pc.is_valid(t.column("status"))
    s = t.filter(has)
    return pa.table({
        "kind": pa.array(["link"] * t.num_rows + ["score"] * s.num_rows, pa.string()),
        "seq": pa.concat_arrays([t.column("link_seq").combine_chunks(), s.column("score_seq").combine_chunks()]),
        "k1": pa.concat_arrays([t.column("doc_id").combine_chunks(), s.column("spec_hash").combine_chunks()]),
        "k2": pa.concat_arrays([t.column("spec_hash").combine_chunks(), s.column("submitted_sha256").combine_chunks()]),
    })


def arrow_schema():
    import pyarrow as pa

    types = {"string": pa.string(), "float64": pa.float64(), "int64": pa.int64(), "bool": pa.bool_()}
    return pa.schema([(c, types[t]) for c, t, _ in layout.SCORE_COLUMNS])


def write_scores(stage: Path, cols: Any) -> None:
    """``scores.csv`` (every non-null value quoted, nulls empty: ``""`` and null stay distinct) and
    ``scores.parquet`` from the same rows (an Arrow table, or ``{column: list}``)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    schema = arrow_schema()
    tbl = cols if isinstance(cols, pa.Table) else pa.table(
        {c: pa.array(cols[c], schema.field(c).type) for c in schema.names}, schema=schema)
    pacsv.write_csv(tbl, stage / layout.SCORES_CSV, pacsv.WriteOptions(quoting_style="all_valid"))
    pq.write_table(tbl, stage / layout.SCORES_PARQUET, compression="zstd")


def write_leaves(stage: Path, extra: list[tuple]) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    names = layout.LEAF_COLUMNS
    types = [pa.string(), pa.int64(), pa.string(), pa.string(), pa.string(), pa.string()]
    tbl = pa.table({n: pa.array([x[i] if i < len(x) else None for x in extra], t)
                    for i, (n, t) in enumerate(zip(names, types))})
    pacsv.write_csv(tbl, stage / layout.LEAVES, pacsv.WriteOptions(quoting_style="all_valid"))


def build_manifest(root: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The manifest over every file under ``root`` except itself, with its root hash."""

    files = {rel: sha256_file(root, rel) for rel in sorted(scan(root).files) if rel != layout.MANIFEST}
    m = {**meta, "files": files}
    m["root_sha256"] = manifest_root(m)
    return m


def manifest_root(manifest: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the manifest without ``root_sha256``."""
    return sha256_bytes(canonical_json({k: v for k, v in manifest.items() if k != "root_sha256"}).encode("utf-8"))


def readme(results: dict[str, Any], protocol_file: str) -> str:
    """The bundle's ``README.md``: integrity statements first, then what is inside and how to check it."""
    run = results.get("run") or {}
    p = run.get("protocol") or {}
    lines = [f"# veribench detector-run bundle: {run.get('tag')}", "", f"Run `{run.get('run_id')}`, protocol "
             f"{p.get('name')!r} (id `{p.get('id')}`, version {p.get('version')}, sha256 `{p.get('hash')}`, file "
             f"`{protocol_file}`).", ""]
    lines += honesty.markdown(results)
    lines += ["Verify everything in this folder (manifest, protocol bytes against the commitment, the event log, "
              "scan dates against the commitment, the calibration split, every number in `results.json` and the "
              "tables, timestamp tokens):", "", "    veribench verify THIS_FOLDER", "",
              "See `docs/bundles.md` in veribench for the layout and every check.", ""]
    return "\n".join(lines)


def _json_text(value: Any) -> str | None:
    """A stored JSON column (text or object) as the canonical text the verifier rebuilds from the
    corpus manifest (``None`` for an empty object), so both snapshots hold the same bytes."""
    if value is None:
        return None
    obj = json.loads(value) if isinstance(value, str) else value
    return json.dumps(obj, ensure_ascii=False, sort_keys=True) if obj else None
