"""Reading and recognising a detector-run bundle's files, byte for byte.

:class:`Context` reads every file through :mod:`veribench.bundles.reader` (regular files
only, inside the bundle, within the size caps) and records each failure in the report;
:func:`check_reader` is the ``reader`` check; :data:`ALLOWED` and :func:`required_names`
are the only file names a bundle may hold (:func:`veribench.bundles.verify_chain.check_manifest`
accepts no other file); :func:`read_events` and :func:`read_leaves` parse the log's two
files. Nothing read is executed; JSON is parsed as data.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from veribench.bundles import layout, reader
from veribench.bundles.findings import Finding
from veribench.bundles.reader import ReadError
from veribench.bundles.verify_report import BundleReport
from veribench.store import events as ev

#: The fields of an event line of ``log/events.jsonl`` (:func:`veribench.store.events.event_line`).
_EVENT_KEYS = ("seq", "at", "type", "payload", "payload_sha256", "prev", "hash")

#: File names a bundle may hold besides :func:`required_names`: protocol versions and their
#: commitment records, timestamp tokens and authority certificates.
ALLOWED = re.compile(r"(protocol/v[1-9][0-9]*\.(toml|yaml|yml)|commitments/v[1-9][0-9]*\.(json|tsr|roots\.pem))")


class Context:
    """What the checks of one bundle share: its root, the files the reader accepted
    (``present``), the size caps, and the report that failures and passes are written to.

    Files are read only through :mod:`veribench.bundles.reader` (regular files inside the
    root, within the caps); a file that is absent, over a cap or unreadable is a recorded
    failure of the check that asked for it (``None`` is returned), never an exception.
    """

    def __init__(self, root: Path, rep: BundleReport, max_file_bytes: int, max_data_bytes: int):
        self.root, self.r = root, rep
        self.cap, self.data_cap = max_file_bytes, max_data_bytes
        self.present: set[str] = set()

    def fail(self, check: str, message: str, file: str | None = None, fld: str | None = None, expected: Any = None,
             got: Any = None) -> None:
        if sum(1 for f in self.r.failures if f.check == check) < 200:
            self.r.failures.append(Finding(check, message, file, fld, expected, got))

    def ok(self, check: str, detail: str, status: str = "ok", **extra: Any) -> None:
        self.r.checks[check] = {"status": status, "detail": detail, **extra}

    def has(self, rel: str) -> bool:
        return rel in self.present

    def json(self, rel: str, check: str = "manifest") -> Any:
        if not self.has(rel):
            self.fail(check, "required file missing", rel)
            return None
        try:
            v = reader.read_json(self.root, rel, cap=self.cap)
        except ReadError as e:
            self.fail("reader" if "cap" in e.message else check, e.message, rel)
            return None
        if v is None:  # no bundle file may be null: None always means a recorded failure
            self.fail(check, "expected an object, got null", rel)
        return v

    def bytes(self, rel: str, check: str) -> bytes | None:
        if not self.has(rel):
            self.fail(check, "required file missing", rel)
            return None
        try:
            return reader.read_bytes(self.root, rel, self.cap)
        except ReadError as e:
            self.fail("reader", e.message, rel)
            return None


def check_reader(c: Context) -> reader.Listing | None:
    """The ``reader`` check: list the bundle's files (regular files only, no links or special
    files, within the depth cap) and drop those over their size cap from ``c.present``.

    Returns:
        The listing, or ``None`` when the folder cannot be listed (a recorded failure).
    """
    rep = c.r
    try:
        listing = reader.scan(c.root, max_depth=1)
    except ReadError as e:
        c.fail("reader", e.message, e.file)
        return None
    for rel, why in listing.refused.items():
        c.fail("reader", why, rel)
    c.present = set(listing.files)
    for rel, size in listing.files.items():
        cap = c.data_cap if rel in (layout.CORPUS, layout.SCORES_CSV, layout.SCORES_PARQUET, layout.EVENTS,
                                    layout.LEAVES) else c.cap
        if size > cap:
            c.fail("reader", f"{size} bytes exceeds the size cap of {cap / 2**20:.0f} MiB; not read", rel)
            c.present.discard(rel)
    if not any(f.check == "reader" for f in rep.failures):
        c.ok("reader", f"{len(listing.files)} regular files, no links or special files, within the caps")
    return listing


def required_names() -> tuple[str, ...]:
    """The files every detector-run bundle holds (``manifest.json`` included)."""
    return (layout.MANIFEST, layout.README, layout.CORPUS, layout.SCORES_CSV, layout.SCORES_PARQUET, layout.EVENTS,
            layout.LEAVES, layout.AMENDMENTS, layout.RESULTS, *layout.TABLE_FILES)


def read_events(c: Context) -> list[dict[str, Any]] | None:
    """The events of ``log/events.jsonl``, each a JSON object; ``None`` after a recorded failure."""
    if not c.has(layout.EVENTS):
        c.fail("chain", "required file missing", layout.EVENTS)
        return None
    out = []
    try:
        for i, line in enumerate(reader.iter_lines(c.root, layout.EVENTS, c.data_cap), 1):
            if not line.strip():
                continue
            e = reader.parse_json_line(line, layout.EVENTS, i)
            if not isinstance(e, dict):
                c.fail("chain", "event is not an object", layout.EVENTS, f"line {i}")
                return None
            if set(e) != set(_EVENT_KEYS) or line != ev.event_line(e).encode("utf-8"):
                # one byte form per event: a key the hashes do not cover has nowhere to hide
                c.fail("chain", "not the log's canonical event line (a field the event's hash does not cover, or "
                                "another byte form)", layout.EVENTS, f"line {i}", list(_EVENT_KEYS), sorted(e))
            out.append(e)
    except ReadError as e:
        c.fail("reader" if "cap" in e.message else "chain", e.message, layout.EVENTS)
        return None
    return out


def read_leaves(c: Context) -> list[tuple[str, int, str | None, str | None, str, str | None]] | None:
    """The rows of ``log/leaves.csv`` (:data:`veribench.bundles.layout.LEAF_COLUMNS`: ``kind, seq,
    k1, k2, leaf, fields``: fingerprints of logged rows that are not in the bundle's own rows,
    with the canonical text each hashes where it is its key's newest); ``None`` after a
    recorded failure."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    if not c.has(layout.LEAVES):
        c.fail("scores", "required file missing", layout.LEAVES)
        return None
    try:
        with reader.open_file(c.root, layout.LEAVES, c.data_cap) as f:
            t = pacsv.read_csv(f, convert_options=pacsv.ConvertOptions(
                column_types={"kind": pa.string(), "seq": pa.int64(), "k1": pa.string(), "k2": pa.string(),
                              "leaf": pa.string(), "fields": pa.string()}, strings_can_be_null=True, quoted_strings_can_be_null=False))
    except ReadError as e:
        c.fail("reader", e.message, layout.LEAVES)
        return None
    except (pa.ArrowInvalid, OSError) as e:
        c.fail("scores", f"cannot be read ({str(e).splitlines()[0]})", layout.LEAVES)
        return None
    if t.schema.names != list(layout.LEAF_COLUMNS):
        c.fail("scores", "columns differ from the bundle format", layout.LEAVES, "columns", list(layout.LEAF_COLUMNS),
               t.schema.names)
        return None
    return list(zip(*(t.column(n).to_pylist() for n in layout.LEAF_COLUMNS))) if t.num_rows else []
