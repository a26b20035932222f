"""The detector-run bundle format (``veribench-detector-bundle/1``): file names and columns.

One place for the layout that :mod:`.publish` writes and :mod:`.verify` reads::

    manifest.json            {"format", "veribench_version", "run_id", "tag", "protocol_id",
                              "protocol_sha256", "protocol_file", "run_event": {seq, hash},
                              "files": {relative path: sha256 of raw bytes}, "root_sha256"}
    README.md                what the bundle is, its integrity statements, how to verify it
    protocol/v<k>.<ext>      every version of the run's protocol id up to the run's, as committed
    commitments/v<k>.json    the commitment record of each version (re-derivable from the log)
    commitments/v<k>.tsr     its RFC 3161 timestamp token, when there is one
    commitments/v<k>.roots.pem  the authority's root certificate(s) given at commit
    amendments.json          the amendment changelog of the protocol id (from the log)
    corpus.jsonl             one document per line, canonical JSON ``{"doc": {the fields its leaf
                             hashes}, "doc_seq", "fingerprint_only", "in_run", "text"}``: every
                             document of every import the run's selection can reach (``in_run``
                             false for those it does not select); text only for selected
                             documents that are not fingerprint-only
    scores.csv               one row per selected document x detector with a link (SCORE_COLUMNS)
    scores.parquet           the same rows and columns
    log/events.jsonl         the event log from its first event to the run's event
    log/leaves.csv           logged fingerprints the rows above do not reproduce (scores of
                             other texts or replaced values, links of documents outside the corpus)
    results.json             the run's results (as logged, plus the ``files`` listing)
    tables.md, table1.csv, table2.csv, side_rows.csv, rates.csv, agreement.csv, robustness.csv,
    comparisons.csv, gaps.csv, index.html   the tables (evaluate.tables.TABLE_OUTPUTS)

``manifest.json`` covers every other file; ``root_sha256`` is the SHA-256 of the canonical
JSON of the manifest without ``root_sha256``.
"""

from __future__ import annotations

from veribench.evaluate.tables import TABLE_OUTPUTS as _TABLE_OUTPUTS

FORMAT = "veribench-detector-bundle/1"
MANIFEST = "manifest.json"
README = "README.md"
CORPUS = "corpus.jsonl"
SCORES_CSV = "scores.csv"
SCORES_PARQUET = "scores.parquet"
EVENTS = "log/events.jsonl"
LEAVES = "log/leaves.csv"
AMENDMENTS = "amendments.json"
RESULTS = "results.json"
#: Table files written by :func:`veribench.evaluate.tables.write_outputs` (re-derived byte for byte).
TABLE_FILES = tuple(_TABLE_OUTPUTS.values())
#: Folders a bundle may hold.
FOLDERS = ("protocol", "commitments", "log")

#: Columns of ``scores.csv`` / ``scores.parquet``, in order: (name, type, meaning).
SCORE_COLUMNS = [
    ("doc_id", "string", "document id (corpus.jsonl)"),
    ("detector", "string", "the detector's label in the run (protocol [[detectors]] label or name)"),
    ("detector_name", "string", "plug-in or stored detector name"),
    ("detector_version", "string", "detector version"),
    ("detector_settings", "string", "settings as canonical JSON"),
    ("spec_hash", "string", "SHA-256 of the detector spec (name, version, settings)"),
    ("submitted_sha256", "string", "SHA-256 of the text the detector was given"),
    ("text_differs", "bool", "the submitted text differs from the document's text"),
    ("status", "string", "ok, or the failure's reason code"),
    ("reason", "string", "the failure's reason text, if any"),
    ("raw", "float64", "the value as the detector returned it"),
    ("scale", "string", "the native scale of raw"),
    ("direction", "string", "higher_ai or higher_human for raw"),
    ("ai_probability", "float64", "P(AI) in [0, 1] when the detector gives one"),
    ("verdict", "string", "the detector's own verdict text"),
    ("vendor_version", "string", "the model or vendor version the detector reported"),
    ("scanned_at", "string", "scan date, UTC"),
    ("hazards", "string", "the score's detail['hazards'] as canonical JSON (input hazards of the text as "
                          "submitted: confusables, invisible characters, degenerate repetition)"),
    ("score_seq", "int64", "the scan_batch event that logged this score"),
    ("link_seq", "int64", "the scan_batch event that logged the document -> text link"),
    ("split", "string", "calibration | test | all (no split declared)"),
    ("flag", "bool", "flagged as AI under the run's decision rule (empty: no valid score)"),
]
LEAF_COLUMNS = ("kind", "seq", "k1", "k2", "leaf")
#: The detector setting that makes hazards depend on each document's own text (issue 10's
#: canonicalisation): with it, selected documents' texts enter the re-derivation.
CANONICALIZE_SETTING = "canonicalize"
