"""``veribench publish``: freeze one detector run into a bundle anyone can verify.

The bundle (layout in :mod:`.layout`) holds the rows the run rests on, as the event log
recorded them at the run's chain head, with everything needed to re-derive every
number: the protocol bytes as committed, the commitment records and timestamp tokens,
the amendments, the corpus manifest, per-document scores, the log up to the run and the
results and tables.

Before writing, the workspace's log is verified (:func:`veribench.store.events.verify_workspace`)
and the run is re-derived from the rows it is about to publish
(:func:`veribench.bundles.snapshot.derive`): a workspace whose rows were edited, or a run
whose scores changed since it ran, is refused rather than published.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from .. import __version__
from ..errors import InputError
from ..hashing import canonical_json, sha256_bytes
from ..spec import Spec
from ..store import events as ev
from . import honesty, layout
from .snapshot import DetectorPlan, Snapshot, derive, flags, protocol_from_bytes, split_sides


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
    rows = ws.query("SELECT run_id, results FROM runs WHERE run_id = ?", [ref])
    if not rows:
        rows = ws.query("SELECT run_id, results FROM runs WHERE tag = ? ORDER BY created_at DESC, run_id DESC LIMIT 1",
                        [ref])
    if not rows:
        tags = [r[0] for r in ws.query("SELECT DISTINCT tag FROM runs ORDER BY 1")]
        raise InputError(f"no run with id or tag {ref!r}; tags in this workspace: {tags or 'none'}",
                         file=str(ws.db_path), field="runs")
    return rows[0][0], json.loads(rows[0][1])


def _suffix(name: str) -> str:
    s = PurePath(name).suffix.lower()
    return s if s in (".toml", ".yaml", ".yml") else ".toml"


def _latest_items(con: Any, kind: str, upto: int) -> dict[tuple, tuple[str, int]]:
    rows = con.execute(
        "SELECT k1, k2, leaf, seq FROM log_items WHERE kind = ? AND seq <= ? "
        "QUALIFY row_number() OVER (PARTITION BY k1, k2 ORDER BY seq DESC) = 1", [kind, upto]).fetchall()
    return {(a, b): (leaf, int(s)) for a, b, leaf, s in rows}


def publish(ws: Any, run_ref: str, out: str | Path) -> PublishResult:
    """Write the bundle of run ``run_ref`` (a run id, or a tag: its newest run) to ``out``.

    Raises:
        InputError: unknown run; ``out`` exists and is not empty; the workspace's log does
            not verify; the run has no committed protocol or no listed detectors; its
            rows changed since it ran; it does not re-derive from its rows.
    """
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError("output folder exists and is not empty; choose a new folder", file=str(out))
    rep = ev.verify_workspace(ws)
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
    from ..protocol.commit import stored_commitment, versions_of

    vs = versions_of(events)
    pid = vs[sha]["payload"]["protocol_id"]
    mine = sorted((e for e in vs.values() if e["payload"]["protocol_id"] == pid), key=lambda e: e["seq"])
    stage = out.with_name(f".{out.name}.publishing-{os.getpid()}")
    shutil.rmtree(stage, ignore_errors=True)
    for sub in layout.FOLDERS:
        (stage / sub).mkdir(parents=True)
    try:
        notes: list[str] = []
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
            name = f"protocol/v{k}{_suffix(p.get('file') or '')}"
            (stage / name).write_bytes(raw)
            rec, token, roots = stored_commitment(ws, p["protocol_sha256"])
            from ..protocol.commit import record_bytes

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
        from ..protocol.commit import changelog_of

        (stage / layout.AMENDMENTS).write_text(
            json.dumps(changelog_of(events, pid, upto=vs[sha]["seq"]), indent=1, ensure_ascii=False) + "\n",
            encoding="utf-8")

        # -- the rows, as of the run's chain head --------------------------------------------
        corpora = proto.selection.get("corpora")
        corpora = [str(c) for c in (corpora if isinstance(corpora, list) else [corpora])] if corpora else None
        imports = [e for e in events if e["type"] == "import" and e["seq"] <= head_seq
                   and (corpora is None or e["payload"].get("corpus") in corpora)]
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
        doc_ids = [r[0] for r in doc_rows]
        links_latest = _latest_items(con, "link", head_seq)
        scores_latest = _latest_items(con, "score", head_seq)
        links_now = con.execute(
            "SELECT doc_id, spec_hash, submitted_sha256 FROM submissions WHERE spec_hash IN "
            "(SELECT unnest(?::VARCHAR[])) AND doc_id IN (SELECT unnest(?::VARCHAR[]))",
            [spec_hashes, doc_ids]).fetchall()
        link_rows = []
        for d, h, s in links_now:
            got = links_latest.get((d, h))
            if got is None or got[0] != ev.link_leaf(d, h, s):
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
            r = score_rows.get(k)
            got = scores_latest.get(k)
            if r is None:
                if got is not None:
                    raise InputError(f"a logged score of detector {k[0][:12]}… is missing", file=str(ws.db_path))
                continue
            if got is None or got[0] != ev.score_leaf(*r[:10]):
                raise InputError(f"a score of detector {k[0][:12]}… (text {k[1][:12]}…) changed after run {run_id} "
                                 "(evaluate again and publish the new run)", file=str(ws.db_path))

        # -- re-derive the run from exactly these rows ----------------------------------------
        import pyarrow as pa

        snap = Snapshot()
        try:
            snap.load("documents", pa.table({
                "doc_id": pa.array(doc_ids, pa.string()), "corpus": pa.array([r[1] for r in doc_rows], pa.string()),
                "text_sha256": pa.array([r[3] for r in doc_rows], pa.string()),
                "label": pa.array([r[4] for r in doc_rows], pa.string()),
                "arm": pa.array([r[5] for r in doc_rows], pa.string()),
                "kind": pa.array([r[6] for r in doc_rows], pa.string()),
                "subgroup": pa.array([r[7] for r in doc_rows], pa.string()),
                "tags": pa.array([r[8] for r in doc_rows], pa.string()),
                "group_key": pa.array([r[9] for r in doc_rows], pa.string())}))
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
                "scanned_at": pa.array([r[9] for r in sr], pa.timestamp("us", tz="UTC"))}))
            plans = [DetectorPlan(specs[e.display], e.display, e.rule, tuple(e.corpora)) for e in proto.detectors]
            again, docs, arrays = derive(snap, proto, plans, dict(run))
        finally:
            snap.close()
        stored = {k: v for k, v in results.items() if k != "files"}
        if canonical_json(again) != canonical_json(stored):
            raise InputError(f"run {run_id} does not re-derive from its rows (the stored results differ from a fresh "
                             "computation); evaluate again and publish the new run", file=str(ws.db_path))
        in_run = set(docs.doc_id.tolist())

        # -- corpus manifest ------------------------------------------------------------------
        with open(stage / layout.CORPUS, "w", encoding="utf-8", newline="\n") as f:
            for r in doc_rows:
                prov = json.loads(r[10]) if r[10] else None
                fp_only = r[2] is None or bool((prov or {}).get("fingerprint_only"))
                rec = {"doc_id": r[0], "corpus": r[1], "text_sha256": r[3], "label": r[4], "arm": r[5], "kind": r[6],
                       "subgroup": r[7], "tags": json.loads(r[8]) if r[8] else None, "group_key": r[9],
                       "provenance": prov, "generation": json.loads(r[11]) if r[11] else None,
                       "import_seq": import_seq[r[12]], "in_run": r[0] in in_run, "fingerprint_only": fp_only}
                if r[0] in in_run and not fp_only:
                    rec["text"] = r[2]
                f.write(json.dumps(rec, ensure_ascii=False, sort_keys=True, allow_nan=False) + "\n")

        # -- scores ----------------------------------------------------------------------------
        sides = split_sides(docs, proto)
        pos = {d: i for i, d in enumerate(docs.doc_id.tolist())}
        det_rows = {d["detector"]: d for d in again["detectors"]}
        doc_sha = {r[0]: r[3] for r in doc_rows}
        link_by = {(d, h): (s, q) for d, h, s, q in link_rows}
        cols: dict[str, list[Any]] = {c: [] for c, _, _ in layout.SCORE_COLUMNS}
        flag_cols = []
        for j, (plan, arr) in enumerate(zip(plans, arrays)):
            rule = det_rows[plan.label]["rule"]
            flag_cols.append(flags(arr, rule.get("threshold") if plan.rule.fit else None))
        order = []
        for j, plan in enumerate(plans):
            for d in docs.doc_id.tolist():
                lk = link_by.get((d, plan.spec.hash))
                if lk is None:
                    continue
                if plan.corpora and docs.corpus[pos[d]] not in plan.corpora:
                    continue
                order.append((d, j, lk))
        order.sort(key=lambda x: (x[0], x[1]))
        for d, j, (sub, lseq) in order:
            plan = plans[j]
            s = plan.spec
            r = score_rows.get((s.hash, sub))
            detail = json.loads(r[10]) if r is not None and r[10] else {}
            i = pos[d]
            fl = flag_cols[j][i]
            vals = {"doc_id": d, "detector": plan.label, "detector_name": s.name, "detector_version": s.version,
                    "detector_settings": canonical_json(dict(s.settings)), "spec_hash": s.hash,
                    "submitted_sha256": sub, "text_differs": sub != doc_sha[d],
                    "status": r[2] if r else None, "reason": detail.get("reason") if isinstance(detail, dict) else None,
                    "raw": r[3] if r else None, "scale": r[4] if r else None, "direction": r[5] if r else None,
                    "ai_probability": r[6] if r else None, "verdict": r[7] if r else None,
                    "vendor_version": r[8] if r else None, "scanned_at": ev.utc_text(r[9]) if r else None,
                    "score_seq": scores_latest[(s.hash, sub)][1] if r else None, "link_seq": lseq,
                    "split": sides[i], "flag": None if fl is None else bool(fl)}
            for c in cols:
                cols[c].append(vals[c])
        write_scores(stage, cols)

        # -- the log -------------------------------------------------------------------------
        with open(stage / layout.EVENTS, "w", encoding="utf-8", newline="\n") as f:
            for e in events:
                f.write(ev.event_line(e) + "\n")
        batch_seqs = [e["seq"] for e in events if e["type"] == "scan_batch" and e["seq"] <= head_seq
                      and e["payload"].get("spec_hash") in spec_hashes]
        reproduced = set()
        for d, j, (sub, lseq) in order:
            h = plans[j].spec.hash
            reproduced.add(("link", lseq, d, h))
            if (h, sub) in score_rows:
                reproduced.add(("score", scores_latest[(h, sub)][1], h, sub))
        extra = []
        if batch_seqs:
            for s_, k, a, b, leaf in con.execute(
                    "SELECT seq, kind, k1, k2, leaf FROM log_items WHERE seq IN (SELECT unnest(?::BIGINT[])) "
                    "ORDER BY seq, kind, k1, k2", [batch_seqs]).fetchall():
                if (k, int(s_), a, b) not in reproduced:
                    extra.append((k, int(s_), a, b, leaf))
        write_leaves(stage, extra)

        # -- results and tables --------------------------------------------------------------
        from ..evaluate.tables import write_outputs

        write_outputs(results, stage)
        (stage / layout.README).write_text(readme(results, protocol_file), encoding="utf-8")
        manifest = build_manifest(stage, {
            "format": layout.FORMAT, "veribench_version": __version__, "run_id": run_id, "tag": run.get("tag"),
            "protocol_id": pid, "protocol_sha256": sha, "protocol_file": protocol_file,
            "run_event": {"seq": run_ev["seq"], "hash": run_ev["hash"]}})
        (stage / layout.MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n",
                                             encoding="utf-8")
        if out.exists():
            out.rmdir()
        stage.rename(out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return PublishResult(out=out, run_id=run_id, files=len(manifest["files"]) + 1, documents=len(doc_rows),
                         score_rows=len(cols["doc_id"]), root_sha256=manifest["root_sha256"], notes=notes)


def arrow_schema():
    import pyarrow as pa

    types = {"string": pa.string(), "float64": pa.float64(), "int64": pa.int64(), "bool": pa.bool_()}
    return pa.schema([(c, types[t]) for c, t, _ in layout.SCORE_COLUMNS])


def write_scores(stage: Path, cols: dict[str, list[Any]]) -> None:
    """``scores.csv`` (every non-null value quoted, nulls empty: ``""`` and null stay distinct) and
    ``scores.parquet`` from the same columns."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    schema = arrow_schema()
    tbl = pa.table({c: pa.array(cols[c], schema.field(c).type) for c in schema.names}, schema=schema)
    pacsv.write_csv(tbl, stage / layout.SCORES_CSV, pacsv.WriteOptions(quoting_style="all_valid"))
    pq.write_table(tbl, stage / layout.SCORES_PARQUET, compression="zstd")


def write_leaves(stage: Path, extra: list[tuple]) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    names = layout.LEAF_COLUMNS
    types = [pa.string(), pa.int64(), pa.string(), pa.string(), pa.string()]
    tbl = pa.table({n: pa.array([x[i] for x in extra], t) for i, (n, t) in enumerate(zip(names, types))})
    pacsv.write_csv(tbl, stage / layout.LEAVES, pacsv.WriteOptions(quoting_style="all_valid"))


def build_manifest(root: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The manifest over every file under ``root`` except itself, with its root hash."""
    from .reader import scan, sha256_file

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
