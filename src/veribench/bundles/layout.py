"""The detector-run bundle format (``veribench-detector-bundle/3``): file names and columns.

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
    log/leaves.csv           logged fingerprints the rows above do not reproduce (LEAF_COLUMNS):
                             each with its keys and the canonical text it hashes (``fields``),
                             its key's newest or a value a later fingerprint of the key replaced
                             (the order of the log says which), or with neither where a logged
                             withdrawal detached it (each named by that withdrawal); every event
                             any of them belongs to recomputes whole
    results.json             the run's results (as logged, plus the ``files`` listing: RESULTS_FILES)
    tables.md, table1.csv, table2.csv, side_rows.csv, rates.csv, agreement.csv, robustness.csv,
    comparisons.csv, gaps.csv, index.html   the tables (evaluate.tables.TABLE_OUTPUTS)

``manifest.json`` covers every other file; ``root_sha256`` is the SHA-256 of the canonical
JSON of the manifest without ``root_sha256``. Its fields are :data:`MANIFEST_KEYS`, in that
order, written as :func:`manifest_text` writes them.

Format 2 (issue 24) added the ``fields`` column of ``log/leaves.csv``; format 3 carries it
for replaced fingerprints too (from the workspace's ``replaced_leaves``). Older bundles are
refused with the reason in :data:`OLDER_FORMATS`.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePath
from typing import Any

from veribench.evaluate.tables import TABLE_OUTPUTS as _TABLE_OUTPUTS

FORMAT = "veribench-detector-bundle/3"
#: What every version of the format's name starts with (an older bundle is recognised, then refused).
FORMAT_PREFIX = "veribench-detector-bundle/"
#: Why each older version of the format is refused (``verify`` says it; publish the run again).
OLDER_FORMATS = {
    FORMAT_PREFIX + "1": "its log/leaves.csv carries no fields, so its leaf keys cannot be shown to follow from the "
                         "log",
    FORMAT_PREFIX + "2": "its log/leaves.csv files replaced fingerprints by key without their text, so a dropped row "
                         "filed as an older value of a real key cannot be told apart",
}
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
#: ``results.json``'s ``files`` listing: what :func:`veribench.evaluate.tables.write_outputs`
#: writes without a workspace (every name a file of the bundle).
RESULTS_FILES = {"json": RESULTS, **_TABLE_OUTPUTS}
#: The names of the files a detector-run bundle carries at its top, but for ``README.md`` (a
#: name any folder may hold): such a file found outside a bundle (beside bundle folders given to
#: ``verify``) is a bundle that lost its ``manifest.json``, and fails.
TOP_FILES = frozenset({MANIFEST, RESULTS, CORPUS, SCORES_CSV, SCORES_PARQUET, AMENDMENTS, *TABLE_FILES})
#: Suffixes a committed protocol version keeps in a bundle (``protocol/v<k><suffix>``).
PROTOCOL_SUFFIXES = (".toml", ".yaml", ".yml")
#: Suffixes of the files of ``commitments/`` (``v<k>.json``, ``v<k>.tsr``, ``v<k>.roots.pem``).
COMMITMENT_SUFFIXES = (".json", ".tsr", ".roots.pem")
#: Base names (full match) of every file a detector-run bundle carries, at any depth, but for
#: ``README.md`` (a name any folder may hold): :data:`TOP_FILES`, the log's files
#: (``events.jsonl``, ``leaves.csv``), ``v<k>`` commitment and protocol files, and any
#: timestamp token or carried root file (``*.tsr``, ``*.roots.pem``: only bundle material has
#: them). Such a file found loose beside bundle folders is a bundle that lost its manifest.
#: Matched in any letter case (``Results.JSON``, ``v1.TSR``): case-insensitive file systems
#: (macOS, Windows) open such a name as the bundle's file.
BUNDLE_FILE_NAME = re.compile("|".join([
    *(re.escape(n) for n in sorted(TOP_FILES | {PurePath(EVENTS).name, PurePath(LEAVES).name})),
    r"v[0-9]+(" + "|".join(re.escape(x) for x in COMMITMENT_SUFFIXES + PROTOCOL_SUFFIXES) + ")",
    r".+\.tsr", r".+\.roots\.pem"]), re.IGNORECASE)
#: Endings of archive files (lower case): an archive in a folder given to ``verify`` is not
#: unpacked (the verifier never expands untrusted archives) and fails, so that a bundle shipped
#: packed is never passed over.
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz", ".tbz2", ".tar.xz", ".txz", ".tar.zst", ".tzst",
                    ".zip", ".whl", ".jar", ".7z", ".rar", ".gz", ".bz2", ".xz", ".zst", ".lz", ".lzma", ".cpio")

#: The fields of ``manifest.json``, in the order :mod:`.publish` writes them.
MANIFEST_KEYS = ("format", "veribench_version", "run_id", "tag", "protocol_id", "protocol_sha256", "protocol_file",
                 "run_event", "files", "root_sha256")
#: A veribench version as a manifest or a run may state it (PEP 440, public part only: no
#: local label, so no free text).
VERSION = re.compile(r"[0-9]{1,6}(\.[0-9]{1,6}){0,4}((a|b|rc)[0-9]{1,6})?(\.post[0-9]{1,6})?(\.dev[0-9]{1,6})?")
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
    ("reason", "string", "always empty (null): a failure's reason text is not in the score's logged fingerprint, "
                         "so no bundle carries it (status holds the logged reason code)"),
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
#: Columns of ``log/leaves.csv``: the item kind (``doc``, ``score``, ``link``), the event that
#: logged it, its keys (as ``log_items`` holds them), the leaf, and ``fields``: the canonical
#: text the leaf is the SHA-256 of (:func:`veribench.store.events.doc_leaf_text`,
#: ``score_leaf_text``, ``link_leaf_text``), from which the keys are read; empty for a value
#: since replaced (the workspace keeps only the newer one) and for a withdrawn row (no key).
LEAF_COLUMNS = ("kind", "seq", "k1", "k2", "leaf", "fields")
#: The detector setting that makes hazards depend on each document's own text (issue 10's
#: canonicalisation): with it, selected documents' texts enter the re-derivation.
CANONICALIZE_SETTING = "canonicalize"


def protocol_file_name(version: int, logged_file: str | None) -> str:
    """``protocol/v<version><suffix>``: the bundle's name of a committed protocol version, its
    suffix that of the file name the commit event logged (``.toml`` unless YAML)."""
    suffix = PurePath(logged_file or "").suffix.lower()
    return f"protocol/v{version}{suffix if suffix in PROTOCOL_SUFFIXES else PROTOCOL_SUFFIXES[0]}"


def manifest_text(manifest: dict[str, Any]) -> str:
    """``manifest.json`` as :mod:`.publish` writes it (indented JSON, UTF-8, a final newline)."""
    return json.dumps(manifest, indent=1, ensure_ascii=False) + "\n"


def json_file_text(obj: Any) -> str:
    """A JSON file of the bundle besides the manifest (``amendments.json``) as publish writes it."""
    return json.dumps(obj, indent=1, ensure_ascii=False) + "\n"
