"""The ``corpus`` check of a detector-run bundle: every document of every import the
run's selection can reach is present in ``corpus.jsonl`` and matches what its import (or
a later correction) logged, byte for byte: each record's ``doc`` object is hashed as
written, so no other byte form matches the log. Texts hash to their ``text_sha256``;
fingerprint-only documents carry no text; withdrawn documents are accounted for by the
log's withdrawals. (``in_run`` against the protocol's selection is checked with the
results, :func:`veribench.bundles.verify_results.check_results`.)
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from veribench.bundles import docstatus, layout, reader
from veribench.bundles.reader import ReadError
from veribench.bundles.verify_files import Context
from veribench.bundles.verify_report import MAX_LISTED
from veribench.hashing import loads_strict, no_constant, no_duplicate_keys
from veribench.store import events as ev

_LEAF_KEYS = frozenset(ev.DOC_FIELDS)
_REST_KEYS = frozenset({"doc_seq", "in_run", "fingerprint_only"})
_DOC_COLS = ("doc_id", "text_sha256", "label", "arm", "kind", "subgroup", "corpus", "group_key", "tags", "provenance",
             "in_run", "fingerprint_only", "doc_seq", "text")


@dataclass
class Corpus:
    """The corpus manifest as an Arrow table (``tags`` as canonical JSON text)."""

    table: Any
    n: int
    n_selected: int


def selected_corpora(proto: Any) -> list[str] | None:
    """The protocol's ``[selection] corpora`` as a list of names (None: every corpus)."""
    corpora = proto.selection.get("corpora") if proto is not None else None
    return [str(x) for x in (corpora if isinstance(corpora, list) else [corpora])] if corpora else None


def _corpus_chunk(cols: dict[str, list[Any]]):
    import pyarrow as pa

    types = {"in_run": pa.bool_(), "fingerprint_only": pa.bool_(), "doc_seq": pa.int64()}
    t = pa.table({k: pa.array(v, types.get(k, pa.string())) for k, v in cols.items()})
    for v in cols.values():
        v.clear()
    return t


def check_corpus(c: Context, events: list[dict[str, Any]], head_seq: int, proto: Any, extra: list[tuple],
                  keep_texts: bool = False) -> Corpus | None:
    """Every document of every reachable import, as its import logged it (see the module docstring).

    Streamed: lines are parsed one at a time and kept as Arrow columns, so memory follows the
    metadata, not the texts."""
    import hashlib

    import pyarrow as pa

    if not c.has(layout.CORPUS):
        c.fail("corpus", "required file missing", layout.CORPUS)
        return None
    cols: dict[str, list[Any]] = {k: [] for k in _DOC_COLS}
    chunks = []
    seen: set[str] = set()
    leaves: dict[int, list[bytes]] = defaultdict(list)
    loads, sha, enc = loads_strict, hashlib.sha256, json.encoder.encode_basestring
    raw_decode = json.JSONDecoder(object_pairs_hook=no_duplicate_keys, parse_constant=no_constant).raw_decode
    canonical = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode  # the workspace's form of stored JSON
    n_fp = n_sel = 0
    with_text: set[str] = set()
    try:
        for i, line in enumerate(reader.iter_lines(c.root, layout.CORPUS, c.data_cap), 1):
            if not line.strip():
                continue
            if line.count(b"[") + line.count(b"{") > reader.MAX_JSON_DEPTH and \
                    reader.json_depth(line) > reader.MAX_JSON_DEPTH:
                c.fail("reader", f"line {i}: JSON nested beyond the cap of {reader.MAX_JSON_DEPTH}; not parsed",
                       layout.CORPUS)
                continue
            try:
                text_line = line.decode("utf-8")
                if not text_line.startswith('{"doc":{'):
                    raise ValueError("no doc object first")
                # the doc object's exact bytes are what its leaf hashes: no other byte form matches the log
                doc, end = raw_decode(text_line, 7)
                tail = text_line[end:]
                rest = loads("{" + tail[1:]) if tail.startswith(",") else None
            except (UnicodeDecodeError, ValueError, RecursionError) as e:
                c.fail("corpus", f"unreadable record ({type(e).__name__}: {str(e)[:60]})", layout.CORPUS, f"line {i}")
                continue
            if type(doc) is not dict or doc.keys() != _LEAF_KEYS or type(rest) is not dict or \
                    not (_REST_KEYS <= rest.keys() <= _REST_KEYS | {"text"}):
                c.fail("corpus", "record does not have the corpus manifest's fields", layout.CORPUS, f"line {i}")
                continue
            fp, sel, iseq, text = rest["fingerprint_only"], rest["in_run"], rest["doc_seq"], rest.get("text")
            if type(sel) is not bool or type(fp) is not bool or type(iseq) is not int or \
                    (text is not None and type(text) is not str):
                c.fail("corpus", "in_run, fingerprint_only, doc_seq or text has the wrong type", layout.CORPUS,
                       f"line {i}")
                continue
            want = (f',"doc_seq":{iseq},"fingerprint_only":{"true" if fp else "false"},'
                    f'"in_run":{"true" if sel else "false"}' + ("" if text is None else ',"text":' + enc(text)) + "}")
            if tail != want:  # one byte form per record: no duplicate keys, spacing or escapes to hide in
                c.fail("corpus", "record is not in the bundle's canonical JSON form", layout.CORPUS, f"line {i}")
                continue
            did = doc["doc_id"]
            if did in seen:
                c.fail("corpus", "document listed twice", layout.CORPUS, f"line {i}", got=did)
                continue
            if text is not None:
                if sha(text.encode("utf-8")).hexdigest() != doc["text_sha256"]:
                    c.fail("corpus", "text does not hash to its text_sha256", layout.CORPUS, f"doc {did}")
                if fp:
                    c.fail("corpus", "a fingerprint-only document carries its text", layout.CORPUS, f"doc {did}")
            elif sel and not fp:
                c.fail("corpus", "a selected document's text is missing (and it is not fingerprint-only)",
                       layout.CORPUS, f"doc {did}")
            leaves[iseq].append(sha(text_line[7:end].encode("utf-8")).digest())
            seen.add(did)
            t_ = doc["tags"]
            for k in _DOC_COLS[:8]:
                cols[k].append(doc[k])
            cols["tags"].append(canonical(t_) if t_ else None)  # {} and none evaluate alike
            p_ = doc["provenance"]
            cols["provenance"].append(canonical(p_) if p_ else None)  # source_id / attack pair derived texts
            cols["in_run"].append(sel)
            cols["fingerprint_only"].append(fp)
            cols["doc_seq"].append(iseq)
            cols["text"].append(text if keep_texts else None)  # texts enter the run only via canonicalisation
            if text is not None:
                with_text.add(did)
            n_fp += fp
            n_sel += sel
            if len(cols["doc_id"]) >= 100_000:
                chunks.append(_corpus_chunk(cols))
    except ReadError as e:
        c.fail("reader" if "cap" in e.message else "corpus", e.message, layout.CORPUS)
        return None
    chunks.append(_corpus_chunk(cols))
    table = pa.concat_tables(chunks)
    # a document's status is its logged provenance's (docstatus), never the record's own flag
    ids, provs = table.column("doc_id").to_pylist(), table.column("provenance").to_pylist()
    rule = docstatus.fingerprint_only_ids(zip(ids, provs))
    wrong = 0
    for did, fp, sel in zip(ids, table.column("fingerprint_only").to_pylist(), table.column("in_run").to_pylist()):
        want_text = sel and did not in rule
        if fp != (did in rule) or (did in with_text) != want_text:
            wrong += 1
            if wrong <= MAX_LISTED:
                c.fail("corpus", "fingerprint-only status or text differs from the document's logged provenance "
                                 "(fingerprint-only only where provenance.fingerprint_only, or a source's, says so; "
                                 "a text for every other selected document)", layout.CORPUS, f"doc {did}",
                       {"fingerprint_only": did in rule, "text": want_text},
                       {"fingerprint_only": fp, "text": did in with_text})
    doc_seq = dict(zip(table.column("doc_id").to_pylist(), table.column("doc_seq").to_pylist()))
    corpora = selected_corpora(proto)
    imports = {e["seq"]: e for e in events if e["type"] == "import" and e["seq"] <= head_seq}
    updates = {e["seq"]: e for e in events if e["type"] == "document_update" and e["seq"] <= head_seq}
    for seq in sorted(leaves):
        if seq not in imports and seq not in updates:
            c.fail("corpus", "documents attributed to an event that is no import or correction before the run "
                             "(added documents)", layout.CORPUS, f"doc_seq {seq}", got=len(leaves[seq]))
    detached = 0
    later: dict[str, int] = {}  # the newest event of each document key leaves.csv holds
    for x in extra:
        if x[0] == "doc" and x[2] is not None and isinstance(x[1], int):
            later[x[2]] = max(later.get(x[2], -1), x[1])
    for _kind, seq, k1, _, leaf, fields in (x for x in extra if x[0] == "doc"):
        if seq not in imports and seq not in updates:
            c.fail("corpus", "a document fingerprint of no import or correction", layout.LEAVES, f"seq {seq}")
            continue
        if k1 is None:
            detached += 1  # a withdrawn document: counted against the log's withdrawals below
        elif fields is None and not (isinstance(doc_seq.get(k1), int) and doc_seq[k1] > seq) and \
                not later.get(k1, -1) > seq:
            c.fail("corpus", "a document's logged fields are listed as superseded, but no later correction of it is "
                             "in the corpus (a dropped or reverted document)", layout.LEAVES, f"doc {k1}, seq {seq}")
            continue
        try:
            leaves[seq].append(bytes.fromhex(leaf))
        except (TypeError, ValueError):
            c.fail("corpus", "not a hex SHA-256", layout.LEAVES, f"seq {seq}", got=leaf)
    budget = ev.blanked_budget(e for e in events if e["seq"] <= head_seq)
    if detached > budget["doc"]:
        c.fail("corpus", f"{detached} document fingerprints without their document, but the log's withdrawals "
                         f"account for {budget['doc']}", layout.LEAVES)
    named = set(doc_seq) | {x[2] for x in extra if x[0] == "doc" and x[2] is not None}
    check = {s_: e for s_, e in imports.items() if ev.import_reaches(e["payload"], corpora)}
    check.update({s_: e for s_, e in updates.items() if named & set(e["payload"].get("doc_ids") or [])})
    # every import or correction the corpus rows or leaves.csv name is carried whole (publish carries
    # each event it shows a fingerprint of): it recomputes from them, whether or not it reaches the selection
    check.update({s_: e for s_, e in {**imports, **updates}.items() if s_ in leaves})
    for seq, e in sorted(check.items()):
        got = leaves.get(seq, [])
        p = e["payload"]
        dg = ev.items_digest(got)
        if len(got) != p.get("n_doc") or dg != p.get("doc_sha256"):
            what = f"import {p.get('import_id')}" if e["type"] == "import" else f"correction (event {seq})"
            c.fail("corpus", f"the documents of {what} differ from what it logged (a document was added, dropped "
                             "or edited: label, arm, subgroup, tags, provenance or text hash)",
                   layout.CORPUS, f"doc_seq {seq}", f"{p.get('n_doc')} documents, digest "
                   f"{str(p.get('doc_sha256'))[:16]}…", f"{len(got)} documents, digest {dg[:16]}…")
    c.ok("corpus", f"{len(seen):,} documents match their imports' fingerprints; {n_sel:,} selected, "
                   f"{n_fp:,} fingerprint-only")
    return Corpus(table, len(seen), n_sel)
