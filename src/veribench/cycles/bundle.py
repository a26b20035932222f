"""A cycle bundle on disk: its file names, the manifest, and strict loading of raw bytes.

The file set is HumanizerBench's (``shared/reference/datasets.md``): ``commit.json``
and ``cycle.json`` (the manifest) plus ten manifest-covered files. veribench's own
bundles may add the names in :data:`VERIBENCH_FILES`. Hashes are always taken over
the raw bytes on disk, never over decoded or re-serialised text.
"""

from __future__ import annotations

import os
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from veribench.bundles import layout, reader
from veribench.bundles.findings import Finding
from veribench.bundles.reader import ReadError, parse_json
from veribench.hashing import sha256_bytes

#: Files outside the manifest: the commitment (published at cycle start) and the manifest itself.
META_FILES = ("commit.json", "cycle.json")
#: Files every bundle's manifest must cover, in HumanizerBench's manifest order.
MANIFEST_FILES = ("leaderboard.json", "nonce.txt", "prompts.json", "templates.json", "banks.json",
                  "select-placeholders.js", "samples.json", "tests.json", "detector-scores.json", "scoring.js")
#: Optional files of veribench bundles: the scoring rules as data, the record of the
#: models and detectors used, and the test rows of humanizers listed as unavailable.
VERIBENCH_FILES = ("scoring-spec.json", "provenance.json", "unavailable-tests.json")
ALLOWED_MANIFEST_NAMES = frozenset(MANIFEST_FILES + VERIBENCH_FILES)
REQUIRED_FILES = META_FILES + MANIFEST_FILES
ALL_KNOWN = frozenset(REQUIRED_FILES + VERIBENCH_FILES)
#: ``cycle.json`` ``format`` of bundles veribench publishes.
VERIBENCH_FORMAT = "veribench-cycle/1"


class BundleFileError(Exception):
    """A bundle file that is missing, not UTF-8, or not valid JSON (strict)."""

    def __init__(self, file: str, message: str):
        super().__init__(f"{file}: {message}")
        self.file, self.message = file, message


def parse_json_bytes(data: bytes, file: str) -> Any:
    """Parse raw bytes as strict JSON (UTF-8, no BOM, no NaN/Infinity, no duplicate keys,
    nesting within :data:`veribench.bundles.reader.MAX_JSON_DEPTH`).

    Raises:
        BundleFileError: naming the file, and the line and column of a syntax error
            (a truncated file fails here).
    """

    try:
        return parse_json(data, file)
    except ReadError as e:
        raise BundleFileError(file, e.message) from None


def is_cycle_dir(path: Path) -> bool:
    """A folder holding at least one known bundle file (or a link or special file by such a name)."""
    return path.is_dir() and any(os.path.lexists(path / n) for n in ALL_KNOWN)


def discover(path: Path) -> list[Path]:
    """Cycle folders at ``path``: the folder itself, or its sub-folders that are cycles (sorted;
    a link is never followed: :func:`candidates` reports it)."""
    if is_cycle_dir(path):
        return [path]
    if path.is_dir():
        return [c.path for c in candidates(path) if c.kind == "cycle"]
    return []


#: File names that make a sub-folder a detector-run bundle to verify: its manifest, and the
#: files only such a bundle holds (a bundle whose ``manifest.json`` was removed is still
#: found, and fails).
DETECTOR_NAMES = frozenset({layout.MANIFEST, layout.RESULTS, layout.CORPUS, layout.SCORES_CSV, layout.SCORES_PARQUET,
                            layout.AMENDMENTS})
#: Names of files only a cycle carries (:data:`ALL_KNOWN`); with a detector-run bundle's file
#: names at any depth (:data:`veribench.bundles.layout.BUNDLE_FILE_NAME`), one beside bundle
#: folders makes that folder a failing candidate (:func:`is_stray_name`).
STRAY_NAMES = frozenset(n.casefold() for n in ALL_KNOWN)


def is_stray_name(name: str) -> bool:
    """Whether a loose file named ``name`` (a base name) is a bundle's or a cycle's file.

    Hidden files (a leading ``.``: ``.DS_Store``, ``._x``, editor swap files) are OS or tool
    litter and never bundle files; ``README.md``, a licence or notes are not either. Names
    match in any letter case (``Results.JSON``, ``SCORES.CSV``): case-insensitive file systems
    open them as the bundle's files.
    """
    return not name.startswith(".") and (name.casefold() in STRAY_NAMES or layout.BUNDLE_FILE_NAME.fullmatch(name) is not None)
#: The kinds of :class:`Candidate`: the two that are verified, and the three that are refused.
CANDIDATE_KINDS = ("detector-run", "cycle", "link", "unreadable", "unrecognised")


@dataclass(frozen=True)
class Candidate:
    """An entry of a folder given to ``veribench verify`` that must be reported with its verdict.

    ``kind``: ``"detector-run"`` (a sub-folder holding ``manifest.json`` or another file of
    :data:`DETECTOR_NAMES`), ``"cycle"`` (a sub-folder holding a cycle bundle's file,
    ``cycle.json`` or another of :data:`ALL_KNOWN`), ``"link"`` (a symbolic link of any
    kind, never followed) or ``"unreadable"`` (an entry that cannot be listed or read, is
    neither a file nor a folder: a FIFO, socket or device, or a bundle folder whose name is
    not printable, which could forge a line of the verdict) or ``"unrecognised"`` (any other
    sub-folder: one holding no marker file of either kind, such as a damaged bundle left
    with only ``tables.md``, or a bundle nested one level deeper). The last three are
    failures (``why`` says what); every sub-folder is a candidate. A plain file is a
    candidate only when it is an archive (:data:`veribench.bundles.layout.ARCHIVE_SUFFIXES`,
    never unpacked) or bears a name a bundle or cycle carries (:func:`is_stray_name`: the folder
    itself is then reported, "looks like a bundle without manifest.json"); others (a licence,
    README, notes, hidden files such as ``.DS_Store``) are not.
    """

    path: Path
    kind: str
    why: str = ""

    @property
    def ok(self) -> bool:
        """A refused candidate (a link, an unreadable entry) never passes."""
        return self.kind not in ("link", "unreadable", "unrecognised")

    def lines(self) -> list[str]:
        """The verdict of a refused candidate: ``[FAIL] NAME: reader: NAME: WHY`` (the name
        escaped: :func:`shown_name`)."""
        return [f"[FAIL] {shown_name(self.path.name)}: {self.finding().line()}"]

    def finding(self) -> Finding:
        return Finding("reader", self.why, shown_name(self.path.name))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": str(self.path), "ok": self.ok,
                "failures": [] if self.ok else [asdict(self.finding())]}


def shown_name(name: str) -> str:
    """``name`` with every character that is not printable (control, format, line or
    paragraph separators, spaces other than U+0020: ``str.isprintable``) written as a Python
    escape (``\\n``, ``\\u200b``), so that a name cannot start a line of its own in a verdict."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] if c in "\t\n\r" else f"\\u{ord(c):04x}"
                   if ord(c) < 0x10000 else f"\\U{ord(c):08x}" for c in name)


def _special(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def candidates(folder: Path) -> list[Candidate]:
    """Every candidate in ``folder`` (one level, sorted by name; see :class:`Candidate`).

    Entries are examined with ``lstat`` only: no link is followed, no special file opened.

    Raises:
        OSError: ``folder`` itself cannot be listed.
    """
    out: list[Candidate] = []
    stray: list[str] = []
    for name in sorted(os.listdir(folder)):
        p = folder / name
        try:
            st = os.lstat(p)
        except OSError as e:
            out.append(Candidate(p, "unreadable", f"cannot be read ({e.strerror or type(e).__name__}); not verified"))
            continue
        if stat.S_ISLNK(st.st_mode):
            out.append(Candidate(p, "link", "a symbolic link: not followed, not verified (verify the folder it "
                                            "points to by its own path)"))
            continue
        if stat.S_ISREG(st.st_mode):
            if name.lower().endswith(layout.ARCHIVE_SUFFIXES):
                out.append(Candidate(p, "unrecognised", "an archive is not verified: unpack it and verify the folder"))
            elif is_stray_name(name):
                stray.append(name)
            continue  # any other plain file (a licence, README, notes, hidden OS litter): not a candidate
        if not stat.S_ISDIR(st.st_mode):
            out.append(Candidate(p, "unreadable", f"{_special(st.st_mode)}, neither a file nor a folder: not read, "
                                                  "not verified"))
            continue
        try:
            names = set(os.listdir(p))
        except OSError as e:
            out.append(Candidate(p, "unreadable", f"a folder that cannot be listed ({e.strerror or type(e).__name__})"
                                                  "; not verified"))
            continue
        if not name.isprintable():
            out.append(Candidate(p, "unreadable", "a folder whose name holds characters that are not "
                                                  "printable (shown escaped): not verified (rename it to verify it)"))
        elif not names & (DETECTOR_NAMES | ALL_KNOWN):
            # every sub-folder is a candidate: one holding none of a bundle's or a cycle's marker
            # files (a damaged bundle, a bundle nested deeper, a stray log) is reported, never
            # passed over in silence
            out.append(Candidate(p, "unrecognised", "not a bundle or cycle (holds none of their marker files, "
                                                    "e.g. manifest.json, cycle.json): skipped, not verified"))
        elif names & DETECTOR_NAMES:
            out.append(Candidate(p, "detector-run"))
        elif names & ALL_KNOWN:
            out.append(Candidate(p, "cycle"))
    if stray:
        shown = ", ".join(shown_name(n) for n in stray[:4]) + (", ..." if len(stray) > 4 else "")
        out.insert(0, Candidate(folder, "unrecognised", f"looks like a bundle without manifest.json (holds {shown}, "
                                                        "files a bundle or cycle carries): not verified"))
    return out


@dataclass
class Bundle:
    """The raw bytes of a cycle folder's known files (read once, safely), parsed on demand.

    Read through :mod:`veribench.bundles.reader`: links and special files are refused
    and never opened (``refused``), each file is read with a size cap (``max_file_bytes``).
    """

    path: Path
    raw: dict[str, bytes] = field(default_factory=dict)
    extra: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    _parsed: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path, max_file_bytes: int | None = None) -> Bundle:

        cap = max_file_bytes or reader.MAX_FILE_BYTES
        b = cls(Path(path))
        listing = reader.scan(b.path, max_depth=0)
        for n, why in listing.refused.items():
            if n.endswith("/"):
                b.extra.append(n.rstrip("/"))  # a sub-folder: not part of a cycle bundle
            else:
                b.refused[n] = why
        for name in listing.files:
            if name not in ALL_KNOWN:
                b.extra.append(name)
                continue
            try:
                b.raw[name] = reader.read_bytes(b.path, name, cap)
            except reader.ReadError as e:
                b.refused[name] = e.message
        return b

    def sha256(self, name: str) -> str:
        return sha256_bytes(self.raw[name])

    def has(self, name: str) -> bool:
        return name in self.raw

    def json(self, name: str) -> Any:
        """Parsed JSON of ``name``.

        Raises:
            BundleFileError: missing or unparsable.
        """
        if name not in self._parsed:
            if name not in self.raw:
                raise BundleFileError(name, "required file missing")
            self._parsed[name] = parse_json_bytes(self.raw[name], name)
        return self._parsed[name]

    @property
    def is_veribench(self) -> bool:
        """Published by veribench (its methodology requires completeness)."""
        try:
            c = self.json("cycle.json")
        except BundleFileError:
            return False
        return isinstance(c, dict) and c.get("format") == VERIBENCH_FORMAT
