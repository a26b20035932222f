"""Helpers of the bundle tests: tamper with a bundle copy the way a forger would."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def rehash(bundle: Path) -> None:
    """Recompute manifest.json (every file's SHA-256 and the root hash): a tamper that also fixes the manifest."""
    from veribench.bundles.publish import build_manifest

    m = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    meta = {k: v for k, v in m.items() if k not in ("files", "root_sha256")}
    m = build_manifest(bundle, meta)
    (bundle / "manifest.json").write_text(json.dumps(m, indent=1) + "\n", encoding="utf-8")


def edit_json(bundle: Path, rel: str, fn: Callable[[Any], None], update_manifest: bool = True) -> None:
    p = bundle / rel
    obj = json.loads(p.read_text(encoding="utf-8"))
    fn(obj)
    p.write_text(json.dumps(obj, indent=1, allow_nan=False), encoding="utf-8")
    if update_manifest:
        rehash(bundle)


def edit_text(bundle: Path, rel: str, fn: Callable[[str], str], update_manifest: bool = True) -> None:
    p = bundle / rel
    new = fn(p.read_text(encoding="utf-8"))
    p.write_text(new, encoding="utf-8")
    if update_manifest:
        rehash(bundle)


def read_scores(bundle: Path) -> dict[str, list]:
    import pyarrow.parquet as pq

    t = pq.read_table(bundle / "scores.parquet")
    return {n: t.column(n).to_pylist() for n in t.column_names}


def write_scores(bundle: Path, cols: dict[str, list], update_manifest: bool = True) -> None:
    """Rewrite scores.csv and scores.parquet consistently (a careful forger)."""
    from veribench.bundles.publish import write_scores as w

    w(bundle, cols)
    if update_manifest:
        rehash(bundle)


def edit_scores(bundle: Path, fn: Callable[[dict[str, list]], None], update_manifest: bool = True) -> None:
    cols = read_scores(bundle)
    fn(cols)
    write_scores(bundle, cols, update_manifest)


def corpus_lines(bundle: Path) -> list[dict]:
    """The corpus manifest, one flat dict per document (the ``doc`` object's fields merged in)."""
    out = []
    for x in (bundle / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        if x:
            r = json.loads(x)
            out.append({**r.pop("doc"), **r})
    return out


def write_corpus(bundle: Path, docs: list[dict], update_manifest: bool = True) -> None:
    """Write flat dicts back in the bundle's canonical form (a careful forger)."""
    from veribench.store.events import CANONICAL, DOC_FIELDS

    lines = []
    for d in docs:
        rec = {k: v for k, v in d.items() if k not in DOC_FIELDS}
        rec["doc"] = {k: d[k] for k in DOC_FIELDS}
        lines.append(json.dumps(rec, **CANONICAL) + "\n")
    (bundle / "corpus.jsonl").write_text("".join(lines), encoding="utf-8")
    if update_manifest:
        rehash(bundle)


def events(bundle: Path) -> list[dict]:
    return [json.loads(x) for x in (bundle / "log/events.jsonl").read_text(encoding="utf-8").splitlines() if x]


def write_events(bundle: Path, evs: list[dict], *, rechain: bool = False, update_manifest: bool = True) -> None:
    """Write the log back; with ``rechain`` every payload digest and hash is recomputed (a full rewrite)."""
    from veribench.store import events as ev

    if rechain:
        prev = ev.GENESIS
        for e in evs:
            e["payload_sha256"] = ev.payload_digest(e["payload"])
            e["prev"] = prev
            e["hash"] = ev.event_hash(e["seq"], e["at"], e["type"], e["payload_sha256"], prev)
            prev = e["hash"]
    (bundle / "log/events.jsonl").write_text("".join(ev.event_line(e) + "\n" for e in evs), encoding="utf-8")
    if update_manifest:
        rehash(bundle)


def verify(bundle: Path, **kw):
    from veribench.bundles.verify import verify_bundle

    return verify_bundle(bundle, **kw)


def store_documents(ws, docs, detector: str, results, *, version: str = "v1", corpus: str = "synth",
                    source: str = "synthetic.jsonl") -> None:
    """Import ``docs`` (``Document`` objects) with one detector's ``results`` (one ``ScoreResult``
    per document), through the importers' one write path (logged)."""
    from veribench.corpus.importers._store import ScoreBatch, store_import
    from veribench.corpus.report import ImportReport
    from veribench.spec import Spec

    b = ScoreBatch(spec=Spec("detector", detector, version))
    for d, r in zip(docs, results):
        b.items.append((d.text_sha256, r))
        b.links.append((d.id, d.text_sha256))
    store_import(ws, ImportReport(kind="jsonl", source=source, corpus=corpus), docs, [b])


def evaluate_publish_verify(ws, proto: Path, tag: str, out: Path, cli_run):
    """Evaluate under ``proto``, close the workspace, publish run ``tag`` to ``out`` with the CLI
    and verify it; returns the verifier's report (asserted to pass)."""
    from veribench.evaluate import evaluate_workspace
    from veribench.protocol.model import load_protocol

    evaluate_workspace(ws, load_protocol(proto))
    path = ws.path
    ws.close()
    code, text = cli_run("publish", "--workspace", path, "--run", tag, "--out", out)
    assert code == 0, text
    rep = verify(out)
    assert rep.ok, rep.lines()
    return rep


def read_leaves(bundle: Path) -> list[dict[str, Any]]:
    """The rows of ``log/leaves.csv`` as dicts (empty cells as None)."""
    import csv

    with open(bundle / "log/leaves.csv", newline="", encoding="utf-8") as f:
        return [{k: (v if v != "" else None) for k, v in r.items()} for r in csv.DictReader(f)]


def write_leaves(bundle: Path, rows: list[dict[str, Any]], update_manifest: bool = True) -> None:
    """Write ``log/leaves.csv`` back with the publisher's writer (a careful forger)."""
    from veribench.bundles import layout
    from veribench.bundles.publish import write_leaves as w

    w(bundle, [tuple(int(r[c]) if c == "seq" and r[c] is not None else r.get(c) for c in layout.LEAF_COLUMNS)
               for r in rows])
    if update_manifest:
        rehash(bundle)


def row_leaves(cols: dict[str, list], i: int) -> tuple[tuple[str, int, str], tuple[str, int, str] | None]:
    """``(link leaf, score leaf or None)`` of score row ``i``: ``(leaf, seq, canonical text)``,
    computed with the log's own leaf functions."""
    import hashlib

    from veribench.store import events as ev

    lt = ev.link_leaf_text(cols["doc_id"][i], cols["spec_hash"][i], cols["submitted_sha256"][i])
    link = (hashlib.sha256(lt.encode()).hexdigest(), cols["link_seq"][i], lt)
    if cols["status"][i] is None:
        return link, None
    st = ev.score_leaf_text(cols["spec_hash"][i], cols["submitted_sha256"][i], cols["status"][i], cols["raw"][i],
                            cols["scale"][i], cols["direction"][i], cols["ai_probability"][i], cols["verdict"][i],
                            cols["vendor_version"][i], cols["scanned_at"][i], cols["hazards"][i])
    return link, (hashlib.sha256(st.encode()).hexdigest(), cols["score_seq"][i], st)


def rederive(bundle: Path, *, relabel: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a careful forger does after editing a bundle's rows: re-derive ``results.json``,
    every table and the README from the bundle's own rows with veribench's code, put the new
    results hash in the run event (the log's last event: only it is re-hashed), and recompute
    the manifest. ``relabel`` sets keys of the run block first (``tag``, ``run_id``...).

    Returns:
        The new results.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from veribench.bundles.publish import readme
    from veribench.bundles.snapshot import DetectorPlan, Snapshot, decisions, derive, protocol_from_bytes
    from veribench.evaluate.tables import write_outputs
    from veribench.spec import Spec
    from veribench.store import events as ev

    m = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    results = json.loads((bundle / "results.json").read_text(encoding="utf-8"))
    proto = protocol_from_bytes((bundle / m["protocol_file"]).read_bytes(), m["protocol_file"])
    canon = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode
    docs = corpus_lines(bundle)
    cols = ("doc_id", "corpus", "text", "text_sha256", "label", "arm", "kind", "subgroup", "group_key")
    dt = pa.table({**{k: pa.array([d.get(k) for d in docs], pa.string()) for k in cols},
                   "tags": pa.array([canon(d["tags"]) if d["tags"] else None for d in docs], pa.string()),
                   "provenance": pa.array([canon(d["provenance"]) if d["provenance"] else None for d in docs],
                                          pa.string())})
    rows = pq.read_table(bundle / "scores.parquet")
    run = dict(results["run"], **(relabel or {}))
    # the timing counts the verifier recomputes from the rows
    evs = events(bundle)
    commit = next(e for e in evs if e["seq"] == run["protocol"]["commit_seq"])
    seen = {(d, h, q, a) for d, h, q, a, s in zip(*(rows.column(c).to_pylist() for c in (
        "doc_id", "spec_hash", "score_seq", "scanned_at", "status"))) if s is not None}
    p = dict(run["protocol"])
    p["scores_total"] = len(seen)
    p["scores_logged_before_commit"] = sum(1 for x in seen if x[2] < commit["seq"])
    p["scores_dated_before_commit"] = sum(1 for x in seen if x[3] < commit["at"])
    p["scores_before_commit"] = sum(1 for x in seen if x[2] < commit["seq"] or x[3] < commit["at"])
    run["protocol"] = p
    snap = Snapshot()
    try:
        snap.con.register("docs", dt)
        snap.con.register("rows", rows)
        snap.fill_from_bundle("docs", "rows")
        specs = {d["detector"]: Spec("detector", d["name"], d["version"], dict(d.get("settings") or {}))
                 for d in results["detectors"]}
        plans = [DetectorPlan(specs[e.display], e.display, e.rule, tuple(e.corpora)) for e in proto.detectors]
        again, darr, arrays = derive(snap, proto, plans, run)
        flags = decisions(darr, arrays, proto, again)
    finally:
        snap.close()
    pos = {d: i for i, d in enumerate(darr.doc_id.tolist())}
    sc = read_scores(bundle)
    sc["flag"] = [flags[lab][pos[d]] if d in pos else f for lab, d, f in zip(sc["detector"], sc["doc_id"], sc["flag"])]
    write_scores(bundle, sc, update_manifest=False)
    write_outputs(again, bundle)
    (bundle / "README.md").write_text(readme(again, m["protocol_file"]), encoding="utf-8")
    last = evs[-1]
    last["payload"]["results_sha256"] = ev.results_digest(again)
    for k in ("run_id", "tag", "n_documents", "created_at"):
        if k in last["payload"]:
            last["payload"][k] = again["run"].get(k)
    last["payload_sha256"] = ev.payload_digest(last["payload"])
    last["hash"] = ev.event_hash(last["seq"], last["at"], last["type"], last["payload_sha256"], last["prev"])
    write_events(bundle, evs, update_manifest=False)
    m["run_event"] = {"seq": last["seq"], "hash": last["hash"]}
    for k in ("run_id", "tag"):
        m[k] = again["run"].get(k)
    (bundle / "manifest.json").write_text(json.dumps(m, indent=1) + "\n", encoding="utf-8")
    rehash(bundle)
    return again
