"""The ``scores`` and ``timing`` checks of a detector-run bundle.

``scores``: ``scores.csv`` equals ``scores.parquet``; each row's score and link are the
latest the log holds for them, and every logged scan batch of the run's detectors
recomputes from the rows and ``log/leaves.csv`` with the log's own leaf functions (a
changed, added or dropped score fails); spec hashes recompute. ``timing``: every scan is
dated and logged after the commitment, or the count that is not equals what the results
and tables declare. The rows are queried in SQL (tables ``rows`` and ``docs`` of the
verifier's in-memory snapshot, :mod:`veribench.bundles.snapshot`), in bounded batches.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from veribench.bundles import layout, reader
from veribench.bundles.publish import arrow_schema
from veribench.bundles.reader import ReadError
from veribench.bundles.verify_corpus import Corpus
from veribench.bundles.verify_files import Context
from veribench.bundles.verify_report import MAX_LISTED
from veribench.hashing import canonical_json
from veribench.spec import OPERATIONAL, SECRET_SOURCES, Spec
from veribench.store import events as ev


def read_scores(c: Context):
    """``scores.csv`` and ``scores.parquet`` read with the bundle's Arrow schema
    (:func:`veribench.bundles.publish.arrow_schema`), checked equal (part of the ``scores``
    check). Returns the table, or ``None`` after a recorded failure."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq


    schema = arrow_schema()
    tables = {}
    for rel in (layout.SCORES_CSV, layout.SCORES_PARQUET):
        if not c.has(rel):
            c.fail("scores", "required file missing", rel)
            return None
        try:
            if rel.endswith(".csv"):
                with reader.open_file(c.root, rel, c.data_cap) as g:
                    header = g.readline(1 << 16).decode("utf-8", "replace").strip()
                if header != ",".join(f'"{n}"' for n in schema.names):
                    c.fail("scores", "columns differ from the bundle format", rel, "header", ",".join(schema.names),
                           header)
                    return None
                with reader.open_file(c.root, rel, c.data_cap) as f:
                    t = pacsv.read_csv(f, convert_options=pacsv.ConvertOptions(
                        column_types={x.name: x.type for x in schema}, strings_can_be_null=True,
                        quoted_strings_can_be_null=False, true_values=["true"], false_values=["false"]))
            else:
                with reader.open_file(c.root, rel, c.data_cap) as f:
                    t = pq.read_table(f)
        except ReadError as e:
            c.fail("reader", e.message, rel)
            return None
        except (pa.ArrowInvalid, pa.ArrowTypeError, OSError, KeyError) as e:
            c.fail("scores", f"cannot be read as the bundle's score table ({str(e).splitlines()[0]})", rel)
            return None
        if t.schema.names != schema.names:
            c.fail("scores", "columns differ from the bundle format", rel, "columns", schema.names, t.schema.names)
            return None
        try:
            tables[rel] = t.cast(schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            c.fail("scores", f"column types differ from the bundle format ({e})", rel)
            return None
    a, b = tables[layout.SCORES_CSV], tables[layout.SCORES_PARQUET]
    if not a.equals(b):
        if a.num_rows != b.num_rows:
            c.fail("scores", "scores.parquet and scores.csv differ in their number of rows", layout.SCORES_PARQUET,
                   "row count", a.num_rows, b.num_rows)
        else:
            row, name, want, have = _first_difference(a, b)
            doc = a.column("doc_id")[row].as_py() if "doc_id" in a.column_names and row >= 0 else None
            c.fail("scores", "scores.parquet differs from scores.csv, whose value is expected"
                   + (f", in the row of document {doc!r}" if doc is not None else ""), layout.SCORES_PARQUET,
                   f"row {row + 1}, column {name}" if row >= 0 else f"column {name}", want, have)
    return a


def _first_difference(a: Any, b: Any) -> tuple[int, str, Any, Any]:
    """The first (row, column, value in ``a``, value in ``b``) where two tables of the same
    schema and row count differ (rows 0-based, in file order; NaN equals NaN); row ``-1``
    with the column's types when no single value differs (a type or chunk difference)."""
    for name in a.column_names:
        ca, cb = a.column(name), b.column(name)
        if ca.equals(cb):
            continue
        for i, (x, y) in enumerate(zip(ca.to_pylist(), cb.to_pylist())):
            if x != y and not (isinstance(x, float) and isinstance(y, float) and x != x and y != y):
                return i, name, x, y
        return -1, name, str(ca.type), str(cb.type)
    return -1, "(none)", None, None


def _batches(con: Any, sql: str, size: int = 200_000):
    """A query's result in Arrow record batches, each as Python column lists (bounded memory)."""
    rdr = con.sql(sql).to_arrow_reader(size)
    for b in rdr:
        yield [b.column(i).to_pylist() for i in range(b.num_columns)]


def _row_leaves(c: Context, con: Any, score_cols: str) -> dict[tuple[int, str], list[bytes]]:
    """The leaves the rows reproduce, by (scan batch, kind): computed with the log's own leaf
    functions, streamed in batches ordered by scan batch. (A key held by several rows is
    counted once; the rows were checked to agree on it.)"""
    import hashlib

    sha = hashlib.sha256
    lt, st_ = ev.link_leaf_text, ev.score_leaf_text
    items: dict[tuple[int, str], list[bytes]] = defaultdict(list)
    shared_links, shared_scores = con.execute(
        "SELECT (SELECT count(*) FROM (SELECT 1 FROM rows GROUP BY doc_id, spec_hash HAVING count(*) > 1)), "
        "(SELECT count(*) FROM (SELECT 1 FROM rows WHERE status IS NOT NULL GROUP BY spec_hash, submitted_sha256 "
        "HAVING count(*) > 1))").fetchall()[0]
    distinct_l = "DISTINCT " if shared_links else ""  # de-duplicating 2M unique rows costs a hash table
    distinct_s = "DISTINCT " if shared_scores else ""
    for dids, hs, subs, qs in _batches(con, f"SELECT {distinct_l}doc_id, spec_hash, submitted_sha256, link_seq FROM "
                                            "rows ORDER BY link_seq"):
        cur, dest = None, None
        for did, h, sub, q in zip(dids, hs, subs, qs):
            if q != cur:  # rows come grouped by their scan batch
                cur, dest = q, items[(q, "link")]
            dest.append(sha(lt(did, h, sub).encode("utf-8")).digest())
    for b in _batches(con, f"SELECT {distinct_s}spec_hash, submitted_sha256, {score_cols} FROM rows "
                           "WHERE status IS NOT NULL ORDER BY score_seq"):
        cur, dest = None, None
        for h, sub, stt, raw, scale, dirn, p, vd, vv, at, hz, q in zip(*b):
            if q != cur:
                cur, dest = q, items[(q, "score")]
            # hazards as published: any other byte form than the logged canonical one fails here
            try:
                dest.append(sha(st_(h, sub, stt, raw, scale, dirn, p, vd, vv, at, hz).encode("utf-8")).digest())
            except ValueError:  # a scan date not in the log's form: no logged leaf can match it
                dest.append(sha(repr((h, sub, at)).encode("utf-8")).digest())
    return items


def check_scores(c: Context, con: Any, n: int, extra: list[tuple], events: list[dict[str, Any]], head_seq: int,
                  corpus: Corpus, proto: Any, results: dict[str, Any]) -> dict[str, Spec] | None:
    """The score rows (table ``rows``) and the corpus (table ``docs``) against the log."""
    import pyarrow as pa

    dets = {d.get("detector"): d for d in results.get("detectors") or [] if isinstance(d, dict)}
    entries = {e.display: e for e in proto.detectors}
    specs: dict[str, Spec] = {}
    for label, e in entries.items():
        d = dets.get(label)
        if d is None:
            c.fail("scores", "a protocol detector is missing from the results", layout.RESULTS, f"detectors[{label}]")
            continue
        s = Spec(kind="detector", name=str(d.get("name")), version=str(d.get("version")),
                 settings=dict(d.get("settings") or {}))
        if s.hash != d.get("spec_hash"):
            c.fail("scores", "detector spec does not hash to its spec_hash", layout.RESULTS,
                   f"detectors[{label}].spec_hash", s.hash, d.get("spec_hash"))
        # operational settings of a vendor adapter (timeouts, retries, pacing) and where a secret is read from
        # (a watermark's key file: its spec has the key's fingerprint) never enter a spec
        if s.name != e.name or any(s.settings.get(k) != v for k, v in e.settings.items()
                                   if k not in OPERATIONAL and k not in SECRET_SOURCES):
            c.fail("scores", "the results' detector is not the one the protocol names", layout.RESULTS,
                   f"detectors[{label}]", {"name": e.name, "settings": e.settings},
                   {"name": s.name, "settings": dict(s.settings)})
        specs[label] = s
    # detector columns, duplicates, documents: set checks in SQL
    for label, h, name, ver, sett, k in con.execute(
            "SELECT detector, spec_hash, detector_name, detector_version, detector_settings, count(*) FROM rows "
            "GROUP BY ALL ORDER BY 1").fetchall():
        s = specs.get(label)
        if s is None:
            c.fail("scores", f"{k} rows of a detector the protocol does not list", layout.SCORES_CSV,
                   f"detector {label!r}")
        elif (h, name, ver, sett) != (s.hash, s.name, s.version, canonical_json(dict(s.settings))):
            c.fail("scores", "detector columns differ from the run's detector spec", layout.SCORES_CSV,
                   f"detector {label!r}", [s.hash, s.name, s.version], [h, name, ver])
    for did, label, k in con.execute("SELECT doc_id, detector, count(*) AS k FROM rows GROUP BY ALL HAVING k > 1 "
                                     "ORDER BY 1 LIMIT 5").fetchall():
        c.fail("scores", "document and detector listed more than once (an added row)", layout.SCORES_CSV,
               f"doc {did}, {label}", 1, k)
    for did, label, missing, in_run, differs, want in con.execute(
            "SELECT r.doc_id, r.detector, d.doc_id IS NULL, d.in_run, r.text_differs, "
            "r.submitted_sha256 <> d.text_sha256 FROM rows r LEFT JOIN docs d USING (doc_id) WHERE d.doc_id IS NULL "
            "OR NOT d.in_run OR r.text_differs IS DISTINCT FROM (r.submitted_sha256 <> d.text_sha256) "
            "ORDER BY 1 LIMIT 10").fetchall():
        if missing or not in_run:
            c.fail("scores", "row of a document the run does not select (an added document)", layout.SCORES_CSV,
                   f"doc {did}, {label}")
        else:
            c.fail("scores", "text_differs does not follow from the hashes", layout.SCORES_CSV, f"doc {did}, {label}",
                   want, differs)
    det_map = pa.table({"detector": pa.array(list(specs), pa.string()),
                        "spec_hash": pa.array([s.hash for s in specs.values()], pa.string()),
                        "corpora": pa.array([list(entries[x].corpora) or None for x in specs], pa.list_(pa.string()))})
    con.register("_dets", det_map)
    for label, k in con.execute("SELECT r.detector, count(*) FROM rows r JOIN docs d USING (doc_id) JOIN _dets m "
                                "USING (detector) WHERE m.corpora IS NOT NULL AND NOT list_contains(m.corpora, "
                                "d.corpus) GROUP BY 1 ORDER BY 1").fetchall():
        c.fail("scores", f"{k} rows of documents outside the detector's corpora", layout.SCORES_CSV,
               f"detector {label!r}")
    # free text the log does not fingerprint: the reason column is always null (publish writes it so)
    for did, label, why in con.execute("SELECT doc_id, detector, reason FROM rows WHERE reason IS NOT NULL "
                                       "ORDER BY 1, 2 LIMIT 5").fetchall():
        c.fail("scores", "reason holds text the log does not fingerprint (a bundle carries it empty)",
               layout.SCORES_CSV, f"doc {did}, {label}, column reason", None, str(why)[:40])
    # keys held by more than one row (rare: a detector listed twice, documents sharing a text) must agree
    for did, _h in con.execute("WITH g AS (SELECT doc_id, spec_hash FROM rows GROUP BY ALL HAVING count(*) > 1) "
                              "SELECT doc_id, spec_hash FROM rows JOIN g USING (doc_id, spec_hash) GROUP BY ALL "
                              "HAVING count(DISTINCT (submitted_sha256, link_seq)) > 1 ORDER BY 1, 2 LIMIT 5").fetchall():
        c.fail("scores", "two rows disagree on one document's link", layout.SCORES_CSV, f"doc {did}")
    score_cols = ("status, raw, scale, direction, ai_probability, verdict, vendor_version, scanned_at, hazards, "
                  "score_seq")
    for _h, sub in con.execute(f"WITH g AS (SELECT spec_hash, submitted_sha256 FROM rows GROUP BY ALL HAVING count(*) > 1) "
                              f"SELECT spec_hash, submitted_sha256 FROM rows JOIN g USING (spec_hash, submitted_sha256) "
                              f"GROUP BY ALL HAVING count(DISTINCT ({score_cols})) FILTER (WHERE status IS NOT NULL) > 1 "
                              f"OR (count(*) FILTER (WHERE status IS NULL) > 0 AND count(*) FILTER (WHERE status IS "
                              f"NOT NULL) > 0) ORDER BY 1, 2 LIMIT 5").fetchall():
        c.fail("scores", "two rows disagree on one score", layout.SCORES_CSV, f"text {sub[:12]}…")

    # the logged items: every scan batch of the run's detectors up to the chain head
    spec_hashes = {s.hash for s in specs.values()}
    batches = {e["seq"]: e for e in events if e["type"] == "scan_batch" and e["seq"] <= head_seq
               and e["payload"].get("spec_hash") in spec_hashes}
    # scan batches of other detectors that leaves.csv names are carried whole too (publish carries
    # every event a withdrawal detached fingerprints of, and every later value of a key it holds):
    # each recomputes from leaves.csv alone (no row can name one, below)
    others = {e["seq"]: e for e in events if e["type"] == "scan_batch" and e["seq"] <= head_seq
              and e["seq"] not in batches and any(x[1] == e["seq"] for x in extra)} if extra else {}
    items = _row_leaves(c, con, score_cols)
    ex = pa.table({n_: pa.array([x[i] for x in extra], t) for i, (n_, t) in enumerate(
        zip(layout.LEAF_COLUMNS, (pa.string(), pa.int64(), pa.string(), pa.string(), pa.string(), pa.string())))})
    con.register("_extra", ex)
    try:
        detached = {"score": 0, "link": 0}
        for kind, seq, k1, _k2, leaf, _f in extra:
            if kind == "doc":
                continue  # the corpus check's
            if kind not in ("score", "link") or (seq not in batches and seq not in others):
                c.fail("scores", "a score or link fingerprint of no scan batch up to the run's chain head",
                       layout.LEAVES, f"seq {seq}")
                continue
            if k1 is None:
                detached[kind] += 1
            try:
                items[(seq, kind)].append(bytes.fromhex(leaf))
            except (TypeError, ValueError):
                c.fail("scores", "not a hex SHA-256", layout.LEAVES, f"seq {seq}", got=leaf)
        checks = [
            ("SELECT kind, seq, k1 FROM _extra WHERE k1 IS NOT NULL GROUP BY kind, seq, k1, k2 HAVING count(*) > 1 "
             "ORDER BY 1, 2, 3 LIMIT 5",
             "a leaf listed twice", layout.LEAVES),
            ("SELECT 'link', x.seq, x.k1 FROM _extra x JOIN (SELECT DISTINCT doc_id, spec_hash, link_seq FROM rows) r "
             "ON x.kind = 'link' AND x.k1 = r.doc_id AND x.k2 = r.spec_hash AND x.seq = r.link_seq ORDER BY 2, 3 LIMIT 5",
             "a leaf listed both in the rows and in leaves.csv", layout.LEAVES),
            ("SELECT 'score', x.seq, x.k2 FROM _extra x JOIN (SELECT DISTINCT spec_hash, submitted_sha256, score_seq "
             "FROM rows WHERE status IS NOT NULL) r ON x.kind = 'score' AND x.k1 = r.spec_hash AND "
             "x.k2 = r.submitted_sha256 AND x.seq = r.score_seq ORDER BY 2, 3 LIMIT 5",
             "a leaf listed both in the rows and in leaves.csv", layout.LEAVES),
            ("SELECT 'link', x.seq, r.doc_id FROM _extra x JOIN (SELECT DISTINCT doc_id, spec_hash, link_seq FROM rows) "
             "r ON x.kind = 'link' AND x.k1 = r.doc_id AND x.k2 = r.spec_hash AND x.seq > r.link_seq ORDER BY 2, 3 LIMIT 5",
             "a row's link is not the latest the log holds", layout.SCORES_CSV),
            ("SELECT 'score', x.seq, r.submitted_sha256 FROM _extra x JOIN (SELECT DISTINCT spec_hash, "
             "submitted_sha256, score_seq FROM rows WHERE status IS NOT NULL) r ON x.kind = 'score' AND "
             "x.k1 = r.spec_hash AND x.k2 = r.submitted_sha256 AND x.seq > r.score_seq ORDER BY 2, 3 LIMIT 5",
             "a row's score is not the latest the log holds (an older or replaced value)", layout.SCORES_CSV),
            ("SELECT 'score', x.seq, r.doc_id FROM _extra x JOIN rows r ON x.kind = 'score' AND x.k1 = r.spec_hash AND "
             "x.k2 = r.submitted_sha256 WHERE r.status IS NULL ORDER BY 2, 3 LIMIT 5",
             "a row without a score, although the log holds one (a dropped score)", layout.SCORES_CSV),
            ("SELECT 'link', x.seq, x.k1 FROM _extra x JOIN docs d ON d.doc_id = x.k1 JOIN _dets m ON "
             "m.spec_hash = x.k2 WHERE x.kind = 'link' AND d.in_run AND (m.corpora IS NULL OR "
             "list_contains(m.corpora, d.corpus)) AND NOT EXISTS (SELECT 1 FROM rows r WHERE r.doc_id = x.k1 AND "
             "r.spec_hash = x.k2) AND NOT EXISTS (SELECT 1 FROM _extra y WHERE y.kind = 'link' AND y.k1 = x.k1 AND "
             "y.k2 = x.k2 AND y.seq > x.seq) ORDER BY 2, 3 LIMIT 5",
             "a logged link of a selected document has no row (a dropped score row)", layout.LEAVES),
        ]
        budget = ev.blanked_budget(e for e in events if e["seq"] <= head_seq)
        for kind, k in detached.items():
            if k > budget[kind]:
                c.fail("scores", f"{k} {kind} fingerprints without their keys, but the log's withdrawals account for "
                                 f"{budget[kind]}", layout.LEAVES)
        for sql, msg, f in checks if extra else ():  # each check pairs a leaves.csv entry with the rows
            for kind, seq, key in con.execute(sql).fetchall():
                c.fail("scores", msg, f, f"{kind} of event {seq}: {str(key)[:40]}")
        seqs = con.execute("SELECT DISTINCT link_seq, 'link' FROM rows UNION SELECT DISTINCT score_seq, 'score' FROM "
                           "rows WHERE status IS NOT NULL ORDER BY 2, 1").fetchall()
    finally:
        con.unregister("_extra")
        con.unregister("_dets")
    for seq, kind in seqs:
        if seq not in batches:
            c.fail("scores", "a row names a scan batch of another detector or after the run's chain head",
                   layout.SCORES_CSV, f"{kind}_seq {seq}")
    changed = 0
    for seq, e in sorted({**batches, **others}.items()):
        p = e["payload"]
        for kind in ("score", "link"):
            got = items.get((seq, kind), [])
            if p.get(f"n_{kind}") is None and not got:
                continue
            if len(got) != (p.get(f"n_{kind}") or 0) or ev.items_digest(got) != p.get(f"{kind}_sha256"):
                changed += 1
                if changed <= MAX_LISTED:
                    c.fail("scores", f"scan batch {seq} ({p.get('detector')}): its {kind}s differ from what the log "
                                     f"holds (a {kind} was changed, added or dropped)", layout.SCORES_CSV,
                           f"{kind}s of event {seq}", p.get(f"n_{kind}"), len(got))
    c.ok("scores", f"{n:,} rows; {len(batches)} scan batch(es) of {len(specs)} detector(s) recompute from the rows "
                   f"and {len(extra):,} further leaves")
    return specs


def check_timing(c: Context, con: Any, events: list[dict[str, Any]], ve: dict[str, Any],
                  results: dict[str, Any]) -> None:
    """Scans after the commitment, or declared: by log order (scan batch before the commit
    event) and by scan date (before the commit time); a score dated after the batch that
    logged it is impossible."""
    import pyarrow as pa

    con.register("_ev", pa.table({"seq": pa.array([e["seq"] for e in events], pa.int64()),
                                  "at": pa.array([e["at"] for e in events], pa.string())}))
    try:
        bad = con.execute("SELECT doc_id, scanned_at FROM rows WHERE status IS NOT NULL AND (scanned_at IS NULL OR NOT "
                          "regexp_full_match(scanned_at, '[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
                          "[.][0-9]{6}Z')) ORDER BY 1 LIMIT 5").fetchall()
        for did, at in bad:
            c.fail("timing", "scan date is not in the log's UTC form", layout.SCORES_CSV, f"doc {did}", got=at)
        late = con.execute("SELECT r.doc_id, r.scanned_at, e.at FROM rows r JOIN _ev e ON e.seq = r.score_seq "
                           "WHERE r.status IS NOT NULL AND r.scanned_at > e.at ORDER BY 1 LIMIT 5").fetchall()
        for did, at, eat in late:
            c.fail("timing", "a score is dated after the scan batch that logged it", layout.SCORES_CSV, f"doc {did}",
                   f"<= {eat}", at)
        tot, logged, dated, either = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE score_seq < $1), count(*) FILTER (WHERE scanned_at < $2), "
            "count(*) FILTER (WHERE score_seq < $1 OR scanned_at < $2) FROM (SELECT DISTINCT doc_id, spec_hash, "
            "score_seq, scanned_at FROM rows WHERE status IS NOT NULL)", [ve["seq"], ve["at"]]).fetchall()[0]
    finally:
        con.unregister("_ev")
    pb = (results.get("run") or {}).get("protocol") or {}
    want = {"scores_total": tot, "scores_logged_before_commit": logged, "scores_dated_before_commit": dated,
            "scores_before_commit": either}
    for k, v in want.items():
        if pb.get(k) != v:
            c.fail("timing", f"the results declare {pb.get(k)} for {k}, the rows and the log give {v} (scans before "
                             "the commitment must be declared)", layout.RESULTS, f"run.protocol.{k}", v, pb.get(k))
    if either:
        c.ok("timing", f"{either:,} of {tot:,} scores predate the commitment of {ve['at']} ({logged:,} logged before "
                       f"it, {dated:,} dated before it); declared in the results and tables: NOT pre-registered",
             status="note")
    else:
        c.ok("timing", f"all {tot:,} scores were logged and dated after the commitment of {ve['at']}")
