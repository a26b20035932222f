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
