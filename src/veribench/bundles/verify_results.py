"""The ``split``, ``results`` and ``tables`` checks of a detector-run bundle: the run is
re-derived from the score rows with the evaluation's own code
(:func:`veribench.bundles.snapshot.derive`) and compared with what was published.

``split``: the calibration split re-derived from the protocol's rule equals the published
split side of every row. ``results``: ``results.json`` is what the run logged, and every
number in it equals the one re-derived (exactly, at full precision:
:func:`veribench.bundles.reader.same_number`); every flag follows from the decision rule.
``tables``: the tables and README written from the re-derived results
(:func:`veribench.evaluate.tables.write_outputs`, :func:`veribench.bundles.publish.readme`)
equal the published files byte for byte.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from veribench.bundles import layout, runblock
from veribench.bundles.publish import readme
from veribench.bundles.reader import same_number
from veribench.bundles.snapshot import DetectorPlan, decisions, derive, split_sides
from veribench.bundles.verify_files import Context
from veribench.evaluate.tables import write_outputs
from veribench.spec import Spec
from veribench.store import events as ev


def _diff(pub: Any, got: Any, path: str, out: list[tuple[str, Any, Any]], limit: int = 50) -> None:
    """Where ``pub`` (published) and ``got`` (re-derived) differ: numbers exactly (full precision)."""

    if len(out) >= limit:
        return
    if isinstance(got, dict) and isinstance(pub, dict):
        for k in dict.fromkeys(list(got) + list(pub)):
            if k not in pub or k not in got:
                out.append((f"{path}.{k}", got.get(k, "<absent>"), pub.get(k, "<absent>")))
            else:
                _diff(pub[k], got[k], f"{path}.{k}", out, limit)
    elif isinstance(got, (list, tuple)) and isinstance(pub, list):
        if len(got) != len(pub):
            out.append((path + " (length)", len(got), len(pub)))
        for i, (a, b) in enumerate(zip(pub, got)):
            _diff(a, b, f"{path}[{i}]", out, limit)
    elif isinstance(got, (int, float)) and not isinstance(got, bool):
        if not same_number(pub, got):
            out.append((path, got, pub))
    elif pub != got:
        out.append((path, got, pub))


def check_results(c: Context, snap: Any, specs: dict[str, Spec], proto: Any,
                   results: dict[str, Any], run_ev: dict[str, Any]):
    """Re-derive the run from the rows with the evaluation's own code; compare every value."""
    import pyarrow as pa


    if ev.results_digest(results) != (run_ev.get("payload") or {}).get("results_sha256"):
        c.fail("results", "results.json is not what the run logged (its SHA-256 differs from the run event's)",
               layout.RESULTS, expected=(run_ev.get("payload") or {}).get("results_sha256"),
               got=ev.results_digest(results))
    snap.fill_from_bundle("docs", "rows")
    plans = [DetectorPlan(specs[e.display], e.display, e.rule, tuple(e.corpora)) for e in proto.detectors]
    # the run block as the log and the protocol give it: a label or key they do not give differs below
    again, darr, arrays = derive(snap, proto, plans, runblock.expected_run(dict(results.get("run") or {}), run_ev, proto))
    con = snap.con
    ids = darr.doc_id.tolist()
    sides = split_sides(darr, proto)
    dec = decisions(darr, arrays, proto, again)
    id_arr = pa.array(ids, pa.string())
    parts = []
    for p, _a in zip(plans, arrays):
        f = dec[p.label]
        parts.append(pa.table({"detector": pa.array([p.label] * len(ids), pa.string()), "doc_id": id_arr,
                               "flag": pa.array(f.tolist(), pa.bool_())}))
    con.register("_sel_ids", pa.table({"doc_id": id_arr, "side": pa.array(sides.tolist(), pa.string())}))
    con.register("_flags", pa.concat_tables(parts) if parts else pa.table({"detector": pa.array([], pa.string()),
                                                                           "doc_id": pa.array([], pa.string()),
                                                                           "flag": pa.array([], pa.bool_())}))
    try:
        for did, sel in con.execute("SELECT d.doc_id, s.doc_id IS NOT NULL FROM docs d LEFT JOIN _sel_ids s USING "
                                    "(doc_id) WHERE d.in_run IS DISTINCT FROM (s.doc_id IS NOT NULL) ORDER BY 1 LIMIT 5").fetchall():
            c.fail("corpus", "in_run differs from the protocol's selection", layout.CORPUS, f"doc {did}", sel, not sel)
        moved = con.execute("SELECT count(*) FROM rows r JOIN _sel_ids s USING (doc_id) WHERE r.split IS DISTINCT "
                            "FROM s.side").fetchall()[0][0]
        for did, want, got in con.execute("SELECT r.doc_id, s.side, r.split FROM rows r JOIN _sel_ids s USING (doc_id) "
                                          "WHERE r.split IS DISTINCT FROM s.side ORDER BY 1 LIMIT 5").fetchall():
            c.fail("split", "split side differs from the protocol's rule (a moved split assignment)",
                   layout.SCORES_CSV, f"doc {did}", want, got)
        wrong = con.execute("SELECT count(*) FROM rows r JOIN _flags f USING (detector, doc_id) WHERE r.flag IS "
                            "DISTINCT FROM f.flag").fetchall()[0][0]
        for did, label, want, got in con.execute(
                "SELECT r.doc_id, r.detector, f.flag, r.flag FROM rows r JOIN _flags f USING (detector, doc_id) "
                "WHERE r.flag IS DISTINCT FROM f.flag ORDER BY 1 LIMIT 5").fetchall():
            c.fail("results", "flag differs from the decision rule applied to the score", layout.SCORES_CSV,
                   f"doc {did}, {label}", want, got)
    finally:
        con.unregister("_sel_ids")
        con.unregister("_flags")
    if not moved:
        n_cal = int((sides == "calibration").sum())
        c.ok("split", f"rule {proto.split_rule!r}: {n_cal:,} calibration and {len(sides) - n_cal:,} test documents "
                      "re-derived" if proto.split_rule == "hash" else "no split declared; every document evaluated")
    stored = {k: v for k, v in results.items() if k != "files"}
    diffs: list[tuple[str, Any, Any]] = []
    _diff(stored, again, "results", diffs)
    for p, got, pub in diffs:
        c.fail("results", "published value differs from the one re-derived from scores.csv", layout.RESULTS, p, got, pub)
    if not diffs and not wrong:
        c.ok("results", f"every value of results.json re-derived from the score rows ({len(plans)} detectors, "
                        f"{len(ids):,} documents)")
    return again


def check_tables(c: Context, again: dict[str, Any], results: dict[str, Any], m: dict[str, Any]) -> None:
    """The ``tables`` check: every table file and the README written from the re-derived
    results ``again`` equal the published bytes; the first differing line (and cell) is named."""
    with tempfile.TemporaryDirectory(prefix="veribench-verify-") as d:
        write_outputs(again, Path(d))  # the same writer as the run's: every table
        want = {n: (Path(d) / n).read_bytes() for n in layout.TABLE_FILES}
        results_bytes = (Path(d) / layout.RESULTS).read_bytes()
    # results.json's values are compared one by one (the results check); its bytes must also be
    # the ones publish writes from those values: no other key order, spacing or escape
    got_results = c.bytes(layout.RESULTS, "results")
    if got_results is not None and got_results != results_bytes:
        c.fail("results", "not the byte form publish writes from the re-derived results (key order, spacing or "
                          "escapes differ, or a value does)", layout.RESULTS)
    want[layout.README] = readme(again, str(m.get("protocol_file"))).encode("utf-8")
    bad = 0
    for n, data in want.items():
        check = "tables"
        got = c.bytes(n, check)
        if got is None:
            continue
        if got != data:
            bad += 1
            gl, wl = got.decode("utf-8", "replace").splitlines(), data.decode("utf-8", "replace").splitlines()
            k = next((i for i in range(min(len(gl), len(wl))) if gl[i] != wl[i]), min(len(gl), len(wl)))
            g_, w_ = (gl[k] if k < len(gl) else "<end>"), (wl[k] if k < len(wl) else "<end>")
            cell = ""
            if "|" in g_ and "|" in w_:
                gc, wc = g_.split("|"), w_.split("|")
                j = next((i for i in range(min(len(gc), len(wc))) if gc[i] != wc[i]), None)
                if j is not None:
                    cell = f", column {j}"
                    g_, w_ = gc[j].strip(), wc[j].strip()
            c.fail(check, "differs from the file re-derived from scores.csv (compared at its printed rounding)",
                   n, f"line {k + 1}{cell}", w_, g_)
    if not bad:
        names = sorted(want)
        c.ok("tables", f"{len(names)} files ({', '.join(names)}) equal the ones re-derived, byte for byte")
