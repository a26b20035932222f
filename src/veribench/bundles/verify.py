"""``veribench verify`` for detector-run bundles: re-derive everything, trust nothing.

Every check is named; each failure names the check, file, field, expected and got
(:class:`veribench.bundles.findings.Finding`, the cycle verifier's shape too). In order:

``reader``      only regular files, no links or special files, size and depth caps
``manifest``    ``manifest.json`` lists every other file with the SHA-256 of its raw
                bytes; the root hash recomputes; no unknown, missing or unlisted file; its
                fields are the format's, in publish's byte form, run id, tag and protocol
                the run event's (``verify_chain.check_labels``)
``chain``       ``log/events.jsonl`` links from the first event to the run's event: each
                hash, link, payload digest, sequence number and time order recomputes;
                each line is the event's canonical line
``commitment``  the protocol bytes hash to the committed SHA-256; every version of the
                protocol id is present and chained by ``supersedes``; the commitment
                records re-derive from the log; the run used the current version; the
                run's protocol block agrees with the log; every protocol and commitment
                file is of a logged version (``verify_chain.check_protocol_files``)
``amendments``  ``amendments.json`` and the run's changelog equal the log's; no
                amendment is dated before the version it supersedes; each is written in
                the amended file as logged
``corpus``      every document of every import the selection can reach is present and
                matches what its import logged; text hashes; fingerprint-only status is
                the logged provenance's (:mod:`veribench.bundles.docstatus`) and a text
                is present exactly where it allows; ``in_run`` equals the selection
``scores``      ``scores.csv`` equals ``scores.parquet``; each row's score and link are
                the latest the log holds for them, and every logged scan batch of the
                run's detectors recomputes from the rows and ``log/leaves.csv`` (a
                changed, added or dropped score fails); spec hashes recompute; every key
                of ``log/leaves.csv`` follows from the log (:mod:`.verify_leaves`)
``timing``      every scan is dated and logged after the commitment, or the count that
                is not equals what the results and tables declare
``split``       the calibration split re-derived from the protocol's rule equals the
                published split side of every row
``results``     ``results.json`` is what the run logged, in publish's byte form, and every
                number in it equals the one re-derived from ``scores.csv`` (exactly, at
                full precision); its labels follow from the log (:mod:`.runblock`)
``tables``      the tables and README re-derived from the results equal the published
                files byte for byte (every printed number at its printed rounding)
``timestamp``   each RFC 3161 token stamps its commitment record's exact bytes, verifies
                against the authority's certificate and agrees with the log

Nothing in a bundle is executed; protocol files are parsed as data, and no file is
accepted that the reader and the manifest did not recognise byte for byte.

Each check lives in its own module; this one runs them in order (:func:`verify_bundle`):

- :mod:`veribench.bundles.verify_report`: the checks in order (``CHECKS``) and ``BundleReport`` (the outcome);
- :mod:`veribench.bundles.verify_files`: reading and recognising files (``reader``; the log's files);
- :mod:`veribench.bundles.verify_chain`: ``manifest``, ``chain``;
- :mod:`veribench.bundles.verify_commitment`: ``commitment``, ``amendments``, ``timestamp``;
- :mod:`veribench.bundles.verify_corpus`: ``corpus``;
- :mod:`veribench.bundles.verify_scores`: ``scores``, ``timing``;
- :mod:`veribench.bundles.verify_leaves`: the keys of ``log/leaves.csv`` (``corpus``, ``scores``);
- :mod:`veribench.bundles.verify_results`: ``split``, ``results``, ``tables`` (the run re-derived).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from veribench.bundles import layout, reader
from veribench.bundles.reader import ReadError
from veribench.bundles.snapshot import Snapshot, needs_texts
from veribench.bundles.verify_chain import check_chain, check_labels, check_manifest, check_protocol_files
from veribench.bundles.verify_commitment import check_amendments, check_commitment, check_timestamps
from veribench.bundles.verify_corpus import check_corpus, selected_corpora
from veribench.bundles.verify_files import Context, check_reader, read_events, read_leaves
from veribench.bundles.verify_leaves import check_leaf_keys
from veribench.bundles.verify_report import BundleReport
from veribench.bundles.verify_results import check_results, check_tables
from veribench.bundles.verify_scores import check_scores, check_timing, read_scores
from veribench.errors import InputError
from veribench.spec import Spec


def is_detector_bundle(path: Path) -> bool:
    """A folder whose ``manifest.json`` (a regular file) names a version of the detector-bundle
    format (an older version is then verified, and refused with its reason)."""
    try:
        m = reader.read_json(path, layout.MANIFEST, cap=16 * 1024 * 1024)
    except (ReadError, OSError):
        return False
    return isinstance(m, dict) and isinstance(m.get("format"), str) and m["format"].startswith(layout.FORMAT_PREFIX)


def verify_bundle(path: str | Path, *, tsa_roots: Sequence[Any] = (), max_file_bytes: int | None = None,
                  max_data_bytes: int | None = None) -> BundleReport:
    """Run every check on one detector-run bundle folder; never executes bundle content."""
    root = Path(path)
    rep = BundleReport(path=str(root))
    c = Context(root, rep, max_file_bytes or reader.MAX_FILE_BYTES, max_data_bytes or reader.MAX_DATA_BYTES)
    listing = check_reader(c)
    if listing is None:
        return rep
    m = check_manifest(c, listing)
    if m is None:
        return rep
    results = c.json(layout.RESULTS, "results")
    events = read_events(c)
    if not isinstance(results, dict) or events is None or not events:
        if isinstance(results, list) or results is None:
            c.fail("results", "results.json is not a run's results", layout.RESULTS)
        return rep
    run_ev = check_chain(c, events, m)
    if run_ev is None:
        return rep
    rep.run_id = (run_ev.get("payload") or {}).get("run_id")  # shown from the log, never the manifest
    got = check_commitment(c, events, run_ev, m, results)
    if got is None:
        return rep
    proto, ve, mine = got
    check_protocol_files(c, mine)
    if proto is not None:
        rep.tag = str(proto.tag)  # the committed protocol's tag: the one label the report shows
        check_labels(c, m, results, run_ev, proto, mine, events)
    check_amendments(c, events, ve, mine, results)
    check_timestamps(c, events, mine, tsa_roots)
    if proto is None:
        return rep
    head_seq = int(((results.get("run") or {}).get("chain_head") or {}).get("seq") or 0)

    keep = needs_texts([Spec("detector", str(d.get("name")), str(d.get("version")), dict(d.get("settings") or {}))
                        for d in results.get("detectors") or [] if isinstance(d, dict)], proto)
    extra = read_leaves(c)
    if extra is None:
        return rep
    corpus = check_corpus(c, events, head_seq, proto, extra, keep_texts=keep)
    table = read_scores(c)
    if corpus is None or table is None:
        return rep

    import duckdb

    snap = Snapshot()
    try:
        snap.con.register("rows", table)
        snap.con.register("docs", corpus.table)
        rep.counts = {"documents": corpus.n_selected, "score_rows": table.num_rows}
        specs = check_scores(c, snap.con, table.num_rows, extra, events, head_seq, corpus, proto, results)
        check_leaf_keys(c, snap.con, extra, events, head_seq, selected_corpora(proto))
        check_timing(c, snap.con, events, ve, results)
        if specs is None or len(specs) != len(proto.detectors):
            return rep
        try:
            again = check_results(c, snap, specs, proto, results, run_ev)
        except (InputError, ValueError, duckdb.Error) as e:
            # a value the run's evaluation refuses (a second scale, malformed hazards JSON): the rows
            # cannot be what publish wrote, so the results are not re-derived from them
            c.fail("results", f"the results cannot be re-derived from the score rows ({str(e).splitlines()[0][:200]})",
                   layout.SCORES_CSV)
            return rep
    finally:
        snap.close()
    check_tables(c, again, results, m)
    return rep
