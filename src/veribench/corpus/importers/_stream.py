"""Streaming import of the field's public corpora: batches, progress, bounded memory.

Used by the importers of RAID, M4, SemEval-2024 Task 8, MAGE, HC3, DetectRL and Beemo.

Reading
-------
CSV and JSON Lines files are read one record at a time by the shared reader of
:mod:`veribench.corpus.importers._io` (:class:`~veribench.corpus.importers._io.CsvStream`,
:func:`~veribench.corpus.importers._io.jsonl_records`), from a local copy or from the Hub
(``hf://datasets/<repo>/<file>``, opened through ``fsspec``) by the same call: only the
location differs. CSV cells are all read as text (no type guessing: an id ``0007`` stays
``0007``, a text ``NA`` stays ``NA``; an empty cell is a missing value). The shared reader
refuses rather than guesses (a truncated record, an extra cell, a NUL, a file with no
records; each importer adds its required fields through
:func:`~veribench.corpus.importers._io.check_record`). Parquet files and dataset
repositories are streamed through the ``datasets`` library (``load_dataset(...,
streaming=True)``). Before any row is read the file's columns are checked against the
dataset's released schema: a missing or renamed column stops the import with the file,
the column and the closest name found.

Writing
-------
:class:`StreamWriter` validates every record as a :class:`~veribench.corpus.Document` and
inserts it in batches through the one logged write path (:mod:`veribench.store.writes`),
each batch committed, so memory holds one batch, not the corpus. The import's event, over
every document it stored, is appended when it finishes. The import is still all or
nothing: a failure at any record (or Ctrl-C) deletes every document it stored before the
error is raised, and an import killed outright (or one whose clean-up failed too: the
first error is still the one raised) is removed by the next one (see :class:`StreamWriter`). At the end it reports, over everything
this import stored, texts that repeat (within a split and across splits, with conflicting
labels named) and ids that repeat in the source.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from veribench.corpus.document import Document
from veribench.corpus.importers._io import CsvStream, jsonl_records, no_records, nothing_importable
from veribench.corpus.importers._store import _doc_rows, apply_arm_rules, segment_rows, validation_error
from veribench.corpus.report import ImportReport, text_quirks
from veribench.errors import InputError, VeribenchError
from veribench.progress import Progress as _Progress
from veribench.protocol.arm_rules import ArmRules
from veribench.store import writes
from veribench.store.commitments import committed_arm_rules
from veribench.store.writes import new_import_id
from veribench.text.hazards import is_blank

HF_PREFIX = "hf://datasets/"
#: Documents per inserted batch.
BATCH = 20_000
#: Examples kept in the report per flag kind (the totals are in its notes).
MAX_EXAMPLES = 200
#: DuckDB's buffer-pool limit while a corpus streams in (its default, 80% of RAM, would let
#: cached pages of a 12 GB import fill the machine); ``VERIBENCH_IMPORT_MEMORY`` overrides.
IMPORT_MEMORY = "2GB"


@dataclass(frozen=True)
class Source:
    """One split's file: ``location`` is a local path or an ``hf://datasets/...`` URL."""

    split: str
    location: str

    @property
    def remote(self) -> bool:
        return self.location.startswith("hf://")

    @property
    def name(self) -> str:
        return self.location.rstrip("/").rsplit("/", 1)[-1]


def resolve_sources(source: str | os.PathLike[str], files: dict[str, str], *, split: str | None = None,
                    what: str) -> list[Source]:
    """The files to read for ``source``.

    Args:
        source: a local file, a local folder laid out as the dataset's release (or its Hub
            repository), ``hf://datasets/<owner>/<name>`` (the repository) or an
            ``hf://datasets/.../<file>`` URL.
        files: split -> file path inside the release (e.g. ``{"train": "train.csv"}``).
        split: only this split (a folder or repository); for a single file, its split
            (default: the split whose file name matches, else the file stem).
        what: the dataset's name, for messages.

    Raises:
        InputError: no such file or folder, an unknown split (also for a single file: its
            documents would carry a split the release does not have), or a folder without
            any of the release's files.
    """
    s = str(source)
    if split is not None and split not in files:
        raise InputError(f"unknown {what} split {split!r}; known: {', '.join(sorted(files))}", file=s)
    if s.startswith("hf://"):
        if _looks_like_file(s, files):
            return [Source(split or _split_of(s, files), s)]
        root = s.rstrip("/")
        chosen = [split] if split else list(files)
        return [Source(sp, f"{root}/{files[sp]}") for sp in chosen]
    p = Path(s)
    if p.is_file():
        return [Source(split or _split_of(p.name, files), str(p))]
    if p.is_dir():
        chosen = [split] if split else list(files)
        out = [Source(sp, str(p / files[sp])) for sp in chosen if (p / files[sp]).is_file()]
        if split and not out:
            raise InputError(f"no {files[split]} in this folder", file=str(p))
        if not out:
            raise InputError(f"no {what} file found here; expected one of {sorted(set(files.values()))}", file=str(p))
        return out
    raise InputError("file or folder not found", file=s)


def _looks_like_file(s: str, files: dict[str, str]) -> bool:
    last = s.rstrip("/").rsplit("/", 1)[-1]
    return "." in last and not s.endswith("/")


def _split_of(name: str, files: dict[str, str]) -> str:
    base = name.rstrip("/").rsplit("/", 1)[-1]
    for sp, f in files.items():
        if f.rsplit("/", 1)[-1] == base:
            return sp
    return base.split(".", 1)[0]


def check_columns(found: Sequence[str], required: Sequence[str], *, file: str, what: str,
                  record: Any = None) -> None:
    """Raise ``InputError`` if a column of the released schema is missing (renamed or dropped),
    naming the closest column found."""
    dup = sorted({c for c in found if list(found).count(c) > 1})
    if dup:
        raise InputError(f"duplicate column name(s) {dup}", file=file, record=record, field=dup[0])
    for col in required:
        if col not in found:
            close = difflib.get_close_matches(col, [c for c in found if c not in required], n=1, cutoff=0.5)
            hint = f"; found {close[0]!r} - renamed?" if close else f"; columns found: {list(found)}"
            raise InputError(f"column {col!r} of {what}'s released format is missing{hint}", file=file, record=record,
                             field=col)


def _datasets():
    """The ``datasets`` library, or a one-line error saying how to install it."""
    try:
        import datasets
    except ImportError:  # pragma: no cover - installed with the corpora extra
        raise VeribenchError("reading this corpus needs the datasets library: pip install 'veribench[corpora]'") \
            from None
    return datasets


def _open(loc: str, mode: str):
    """``loc`` (a path or an ``hf://`` URL) opened through fsspec, streamed; text mode keeps
    bytes that are not UTF-8 as surrogates, so the reader names the record that holds them."""
    import fsspec

    if "b" in mode:
        return fsspec.open(loc, mode)
    return fsspec.open(loc, mode, encoding="utf-8", errors="surrogateescape", newline="")


@contextmanager
def _opened(src: Source, mode: str) -> Iterator[Any]:
    try:
        with _open(src.location, mode) as fh:
            yield fh
    except FileNotFoundError:
        raise InputError("file not found", file=src.location) from None
    except IsADirectoryError:
        raise InputError("a folder, not a file", file=src.location) from None
    except OSError as e:
        raise InputError(f"cannot read: {e}", file=src.location) from e


def csv_header(src: Source) -> list[str]:
    """The header row of a CSV file (local or on the Hub; :class:`~._io.CsvStream`'s checks)."""
    with _opened(src, "rt") as fh:
        return CsvStream(fh, file=src.location).header


def csv_records(src: Source, required: Sequence[str], *, what: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """``("line L", {column: cell})`` for each data row of a CSV file, every cell as
    text (``None`` when empty: an id ``0007`` stays ``0007``, a text ``NA`` stays ``NA``),
    read one record at a time by the shared reader (:class:`~._io.CsvStream`: a truncated
    record, an extra cell, a NUL or no records at all are refused there). ``L`` is the line
    the record starts on (line 1 is the header; a quoted text may span several lines).

    Raises:
        InputError: a column of the released schema missing (:func:`check_columns`), and
            every refusal of the shared reader.
    """
    with _opened(src, "rt") as fh:
        stream = CsvStream(fh, file=src.location)
        check_columns(stream.header, required, file=src.location, what=what)
        for _, line, row in stream:
            yield f"line {line}", row


def jsonl_source_records(src: Source) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """``(0-based record index, "line N", object)`` for each line of a JSON Lines file (local
    or on the Hub), one line at a time, by the shared reader (:func:`~._io.jsonl_records`)."""
    with _opened(src, "rb") as fh:
        for i, (rec, obj) in enumerate(jsonl_records(fh, file=src.location)):
            yield i, rec, obj


def hub_batches(src: Source, *, builder: str | None = None, config: str | None = None,
                batch_size: int = BATCH) -> Iterator[tuple[int, dict[str, list[Any]]]]:
    """Batches of a JSON Lines / Parquet file, or of a dataset repository's configured split
    (``builder=None``: ``load_dataset(location, config, split=...)``), streamed."""
    if builder == "parquet" and not src.remote:
        # a file without rows is refused here: ``datasets`` fails on it with a logged traceback
        import pyarrow.parquet as pq

        try:
            rows = pq.ParquetFile(src.location).metadata.num_rows
        except Exception as e:  # pyarrow ArrowInvalid, OSError: not a Parquet file
            raise InputError(f"cannot read Parquet ({type(e).__name__}: {str(e).splitlines()[0][:300]})",
                             file=src.location) from None
        if not rows:
            raise no_records(src.location, "row 0")
    load_dataset = _datasets().load_dataset
    try:
        if builder is None:
            ds = load_dataset(src.location, config, split=src.split, streaming=True)
        else:
            ds = load_dataset(builder, data_files={src.split: src.location}, split=src.split, streaming=True)
    except FileNotFoundError as e:
        raise InputError(f"not found: {e}", file=src.location) from None
    except ValueError as e:  # datasets: unknown split or config
        raise InputError(str(e).splitlines()[0][:300], file=src.location) from None
    yield from _batches(ds, src, None, batch_size)


def _batches(ds, src: Source, first_col: str | None, batch_size: int):
    row = 0
    it = iter(ds.iter(batch_size=batch_size))
    while True:
        try:
            batch = next(it)
        except StopIteration:
            if not row:
                raise no_records(src.location, "row 0") from None
            return
        except UnicodeDecodeError as e:
            raise InputError(f"not valid UTF-8 (byte 0x{e.object[e.start]:02x}) after row {row}; re-save the file "
                             "as UTF-8", file=src.location, record=f"row {row}") from None
        except FileNotFoundError:
            raise InputError("file not found", file=src.location) from None
        except Exception as e:  # pandas ParserError, pyarrow ArrowInvalid, datasets errors
            raise InputError(f"cannot read ({type(e).__name__}: {str(e).splitlines()[0][:300]}) after row {row}",
                             file=src.location, record=f"row {row}") from None
        yield row, batch
        n = len(next(iter(batch.values()))) if batch else 0
        row += n


class Progress(_Progress):
    """Records read, with rate (:class:`veribench.progress.Progress`: a bar on a terminal,
    a line on standard error every few seconds otherwise). It opens with the first records,
    so a writer that never ran leaves no reporter open (``close`` ends it either way)."""

    def __init__(self, what: str, enabled: bool = True):
        super().__init__(what, unit="records", enabled=enabled)

    def advance(self, n: int = 1) -> None:
        self.start()
        super().advance(n)


class StreamWriter:
    """Validate and store documents in batches; all of the import or none of it.

    Use as a context manager around the reading loop::

        with StreamWriter(ws, report) as w:
            for rec, data in records:
                w.add(data, record=rec, set_name=split, file=path)

    ``add`` takes a mapping in the corpus schema (``docs/corpus-schema.md``). Each batch is
    committed as it is written, so memory holds one batch (one DuckDB transaction over a
    whole 11.8 GB corpus keeps every uncommitted row in memory). All or nothing still holds:
    the import's row in ``imports`` is written first, marked ``in_progress``, and every
    document carries the import's id; on any error (or Ctrl-C) they are deleted before the
    error is raised, and an import that was killed is removed by the next streamed import
    (named in its report). Nothing stored by anything else is touched. On success the
    duplicates are reported, the ``import`` event is appended over every document the import
    stored, and the ``imports`` row completed, in one transaction
    (:func:`veribench.store.writes.finish_import`).
    """

    def __init__(self, ws: Any, report: ImportReport, *, batch_size: int = BATCH, progress: bool = True):
        self.ws, self.report, self.batch_size = ws, report, batch_size
        self.import_id = new_import_id(report.kind)
        report.import_id = self.import_id
        self.buf: list[tuple[Document, str, str]] = []
        self.progress = Progress(f"import {report.kind}", progress)
        #: records skipped (:meth:`skip`) since the last batch: counted as read by the next flush
        self._skipped_since = 0
        #: records read (added or skipped): an import that read none is refused, never recorded
        self.read = 0
        self.repeats = 0
        self.suspicious = 0
        self.skipped: dict[str, Any] = {}
        #: the arm rules in force (read from the workspace when the import begins)
        self.rules = ArmRules()

    def __enter__(self) -> StreamWriter:
        with self.ws.lock:
            self._memory = self.ws.con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
            self.ws.con.execute(f"SET memory_limit = '{_memory_setting()}'")
        with self.ws.transaction() as con:
            self.rules = committed_arm_rules(con)
            for old, k in writes.unfinished_imports(con):
                writes.discard_import(con, old)
                self.report.notes.append(f"removed an interrupted import {old} ({k} documents) before this one")
            writes.begin_import(con, self.import_id, self.report.kind, self.report.source, self.report.to_dict())
        return self

    def __exit__(self, et, ev, tb) -> bool:
        error = ev
        try:
            if et is None:
                try:
                    if not self.read:
                        raise no_records(self.report.source)
                    if self.skipped and self.read == sum(n for n, _ in self.skipped.values()):
                        raise nothing_importable(self.report.source, self.skipped)
                    self.flush()
                    self._finish()
                except BaseException as e:  # the last batch or the report failed: undo, re-raise
                    error = e
                    self._undo(e)
                    raise
                return False
            self._undo(ev)
            return False
        finally:
            self.progress.close()  # after the last batch's flush, which advances (and opens) it
            try:
                with self.ws.lock:
                    self.ws.con.execute(f"SET memory_limit = '{self._memory}'")
            except Exception as x:
                if error is None:
                    raise
                error.add_note(f"(the workspace's memory limit could not be restored: {x})")

    def _undo(self, error: BaseException) -> None:
        """Remove what this import stored, after ``error``. If that fails too (a broken
        connection, a full disk), ``error`` is still the one raised, with a note: the import
        stays marked in progress, ``log verify`` names it, and the next streamed import
        removes it."""
        try:
            with self.ws.transaction() as con:
                writes.discard_import(con, self.import_id)
        except Exception as x:
            error.add_note(f"import {self.import_id} could not be undone ({type(x).__name__}: {x}); its documents "
                           "are left unlogged until the next streamed import removes them")

    def add(self, data: dict[str, Any], *, record: Any, set_name: str, file: str) -> Document:
        """Validate one record and queue it; raises ``InputError`` naming the file, record and field."""
        try:
            doc = Document.model_validate(data)
        except ValidationError as e:
            raise validation_error(e, file=file, record=record) from None
        apply_arm_rules(doc, self.rules, file=file, record=record)
        self.read += 1
        entry = self.report.set_entry(set_name)
        entry["records"] += 1
        entry["labels"][doc.label] = entry["labels"].get(doc.label, 0) + 1
        if doc.text is not None:
            q = text_quirks(doc.text)
            if q:
                self.suspicious += 1
                if len(self.report.suspicious_text) < MAX_EXAMPLES:
                    self.report.suspicious_text.append({"doc_id": doc.id, "file": file, "record": record, **q})
        self.buf.append((doc, f"{file}, record {record}", set_name))
        if len(self.buf) >= self.batch_size:
            self.flush()
        return doc

    def skip(self, reason: str, where: str) -> None:
        """A record not imported (a known data fault): counted per reason, examples kept."""
        self.read += 1
        n, ex = self.skipped.get(reason, (0, []))
        if len(ex) < 20:
            ex = ex + [where]
        self.skipped[reason] = (n + 1, ex)
        self._skipped_since += 1

    def flush(self) -> None:
        """Store the queued batch; the progress count then moves by every record read
        since the last flush (stored, repeated or skipped), so the closing line's count, after
        the last flush, is every record of the source."""
        if not self.buf:
            if self._skipped_since:
                self.progress.advance(self._skipped_since)
                self._skipped_since = 0
            return
        first: dict[str, tuple[Document, str, str]] = {}
        for item in self.buf:
            d = item[0]
            if d.id in first:
                self._repeat(first[d.id], item)
            else:
                first[d.id] = item
        docs = [it[0] for it in first.values()]
        tbl = _doc_rows(docs, self.report.corpus, self.import_id)
        view = "_vb_stream_docs"
        with self.ws.transaction() as con:
            skip = self._insert(con, view, tbl, first)
        stored = len(docs) - len(skip)
        self.report.documents += stored
        counted: dict[str, int] = {}
        for doc_id, (_, _, set_name) in first.items():
            if doc_id not in skip:
                counted[set_name] = counted.get(set_name, 0) + 1
        for set_name, k in counted.items():
            self.report.set_entry(set_name)["documents"] += k
        self.progress.advance(len(self.buf) + self._skipped_since)
        self._skipped_since = 0
        self.buf = []

    def _insert(self, con, view, tbl, first) -> set[str]:
        """Insert one batch (ids stored before with the same text and label are skipped)."""
        con.register(view, tbl)
        try:
            clash = con.execute(
                f"SELECT n.doc_id, d.text_sha256, d.label, d.import_id FROM {view} n JOIN documents d USING (doc_id)"
            ).fetchall()
            skip = set()
            for doc_id, sha, lab, imp in clash:
                d, where, set_name = first[doc_id]
                if imp == self.import_id:
                    self._repeat((None, "an earlier record of this import", None), first[doc_id], stored=(sha, lab))
                elif sha != d.text_sha256 or lab != d.label:
                    what = "text" if sha != d.text_sha256 else f"label ({lab} stored, {d.label} given)"
                    raise InputError(f"document id already in the workspace with a different {what}; use a new "
                                     "workspace", file=where.split(", record ")[0], record=where.split(", record ")[-1],
                                     field="id")
                else:
                    self.report.already_present += 1
                skip.add(doc_id)
            if skip:
                import pyarrow as pa
                import pyarrow.compute as pc

                tbl = tbl.filter(pc.invert(pc.is_in(tbl["doc_id"], value_set=pa.array(sorted(skip), pa.string()))))
        finally:
            con.unregister(view)
        writes.add_documents(con, tbl, segment_rows([it[0] for k, it in first.items() if k not in skip]))
        return skip

    def _repeat(self, a, b, stored: tuple[str, str] | None = None) -> None:
        """An id read twice: the same text and label is a repeated record (kept once,
        reported); anything else is refused."""
        d = b[0]
        sha, lab = stored if stored else (a[0].text_sha256, a[0].label)
        if sha != d.text_sha256 or lab != d.label:
            f, r = b[1].split(", record ", 1)
            raise InputError(f"id {d.id!r} appears twice with a different {'text' if sha != d.text_sha256 else 'label'} "
                             f"(first at {a[1]})", file=f, record=r, field="id")
        self.repeats += 1
        if self.repeats <= MAX_EXAMPLES:
            self.report.notes.append(f"repeated record: id {d.id!r} at {b[1]} repeats {a[1]} (same text and label; "
                                     "stored once)")

    def _finish(self) -> None:
        with self.ws.transaction() as con:
            self._summarise(con)
            writes.finish_import(con, self.import_id, self.report.kind, self.report.corpus, self.report.source,
                                 self.report.to_dict())

    def _summarise(self, con) -> None:
        rep = self.report
        groups = con.execute(
            "SELECT text_sha256, count(*) AS n, list(doc_id ORDER BY doc_id), list(DISTINCT label ORDER BY label), "
            "list(DISTINCT coalesce(json_extract_string(tags, '$.split'), '') ORDER BY 1) "
            "FROM documents WHERE import_id = ? GROUP BY text_sha256 HAVING count(*) > 1 "
            "ORDER BY n DESC, text_sha256 LIMIT ?", [self.import_id, MAX_EXAMPLES]).fetchall()
        for sha, _k, ids, labels, splits in groups:
            g = {"set": ",".join(s for s in splits if s) or None, "text_sha256": sha, "doc_ids": list(ids),
                 "kept": "all"}
            if len(labels) > 1:
                g["labels"] = list(labels)
            rep.duplicates.append(g)
        tot = con.execute(
            "SELECT count(*), coalesce(sum(n), 0), coalesce(sum((n_split > 1)::INT), 0), coalesce(sum((n_label > 1)::INT), 0), "
            "coalesce(sum(n - n_split), 0) "
            "FROM (SELECT count(*) AS n, count(DISTINCT coalesce(json_extract_string(tags, '$.split'), '')) AS n_split, "
            "count(DISTINCT label) AS n_label FROM documents WHERE import_id = ? GROUP BY text_sha256 "
            "HAVING count(*) > 1)", [self.import_id]).fetchone()
        n_groups, n_recs, cross, conflict, _ = (int(x) for x in tot)
        if n_groups:
            within = con.execute(
                "SELECT coalesce(sum(n), 0), count(*) FROM (SELECT count(*) AS n FROM documents WHERE import_id = ? "
                "GROUP BY text_sha256, coalesce(json_extract_string(tags, '$.split'), '') HAVING count(*) > 1)",
                [self.import_id]).fetchone()
            rep.notes.append(
                f"duplicate texts: {n_recs} records in {n_groups} groups of identical text (all kept); "
                f"{int(within[0])} records in {int(within[1])} groups repeat within a split, {cross} groups span "
                f"several splits, {conflict} groups carry different labels"
                + (f"; the first {MAX_EXAMPLES} groups are listed" if n_groups > MAX_EXAMPLES else ""))
        for reason, (k, ex) in self.skipped.items():
            rep.notes.append(f"not imported ({reason}): {k} records, e.g. {'; '.join(ex[:5])}")
        if self.repeats:
            rep.notes.append(f"repeated records: {self.repeats} records repeat an earlier record's id, text and label "
                             "(stored once)")
        if self.suspicious > MAX_EXAMPLES:
            rep.notes.append(f"suspicious text: {self.suspicious} records (the first {MAX_EXAMPLES} are listed)")


def _memory_setting() -> str:
    v = os.environ.get("VERIBENCH_IMPORT_MEMORY", IMPORT_MEMORY).strip()
    if not v or not all(c.isalnum() or c in ". " for c in v):
        raise InputError(f"VERIBENCH_IMPORT_MEMORY must be a size such as 2GB, got {v!r}")
    return v


def clean(v: Any) -> str | None:
    """A cell as text: ``None`` for missing or blank values (:func:`veribench.text.hazards.is_blank`:
    empty, or only white space and invisible characters)."""
    if v is None:
        return None
    if isinstance(v, float) and v != v:
        return None
    s = str(v)
    return None if is_blank(s) else s
