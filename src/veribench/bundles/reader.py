"""The one hardened reader under both verifiers (detector-run bundles and humanizer cycles).

Rules, each with a clear verdict instead of a traceback or an unbounded read:

- **Only regular files.** A symbolic link (to anything, inside or outside the bundle)
  and anything that is not a regular file (a FIFO, a device, a socket) is refused and
  never opened; files are opened with ``O_NOFOLLOW`` relative to the bundle folder, one
  path component at a time, so a symlinked sub-folder cannot be traversed either.
  A hard link (a regular file with ``st_nlink > 1``: the same file also has another
  name, possibly outside the bundle or given to the verifier as a trusted root) is
  refused too: a bundle holds only files of its own.
- **Size caps.** Every file has a cap (:data:`MAX_FILE_BYTES` for files parsed whole,
  :data:`MAX_DATA_BYTES` for streamed data files); the size is checked with ``fstat``
  before reading and the read stops at the cap, so a 2 GB file costs nothing.
- **Strict JSON with a depth cap.** UTF-8 without BOM, no ``NaN``/``Infinity``, no
  duplicate keys, at most :data:`MAX_JSON_DEPTH` levels of nesting (checked before
  parsing, so deep nesting never reaches Python's recursion limit).
- **Frozen code is data.** A frozen JavaScript file is recognised only when it equals
  a known text byte for byte outside its constant holes (:func:`match_frozen`); a hole
  accepts only a number or a flat JSON object of numbers, so no code fits in one.
  Nothing is ever executed.
- **Published numbers at published precision.** :func:`matches_rounded` compares a
  published value with the re-derived one rounded to the published number of decimals,
  exactly (no tolerance): a +1 in the last printed digit fails.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from veribench.bundles.jscompat import js_math_round, js_trim
from veribench.hashing import no_constant, no_duplicate_keys

#: Cap for a file read and parsed whole (JSON, JavaScript, text): 256 MiB.
MAX_FILE_BYTES = 256 * 1024 * 1024
#: Cap for a streamed data file (CSV, Parquet, JSON Lines): 16 GiB.
MAX_DATA_BYTES = 16 * 1024 * 1024 * 1024
#: Deepest JSON nesting accepted (the deepest bundle file veribench knows nests 8 levels).
MAX_JSON_DEPTH = 64
#: Most entries a bundle folder may hold (all levels together).
MAX_ENTRIES = 100_000
_CHUNK = 1 << 20
#: Why a regular file with more than one name is refused.
HARD_LINK = ("a hard link (the same file has another name, st_nlink > 1); bundles hold only files of "
             "their own")


class ReadError(Exception):
    """A file the reader refuses: ``file`` (relative path) and a one-line ``message``."""

    def __init__(self, file: str, message: str):
        super().__init__(f"{file}: {message}")
        self.file, self.message = file, message


@dataclass
class Listing:
    """What a bundle folder holds: regular files (relative POSIX path -> size) and refusals."""

    root: Path
    files: dict[str, int] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    dirs: list[str] = field(default_factory=list)


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def scan(root: str | Path, *, max_depth: int = 3, max_entries: int = MAX_ENTRIES) -> Listing:
    """List ``root`` without following any link.

    Sub-folders are entered up to ``max_depth`` levels; deeper ones, links and special
    files are listed in ``refused`` with the reason.

    Raises:
        ReadError: ``root`` is not a folder, or holds more than ``max_entries`` entries.
    """
    root = Path(root)
    out = Listing(root)
    if not root.is_dir():
        raise ReadError(str(root), "not a folder")
    count = 0

    def walk(d: Path, rel: str, depth: int) -> None:
        nonlocal count
        with os.scandir(d) as it:
            for e in sorted(it, key=lambda x: x.name):
                count += 1
                if count > max_entries:
                    raise ReadError(str(root), f"holds more than {max_entries} entries")
                r = f"{rel}{e.name}"
                st = e.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    if depth >= max_depth:
                        out.refused[r + "/"] = f"a folder nested deeper than {max_depth} levels"
                    else:
                        out.dirs.append(r)
                        walk(Path(e.path), r + "/", depth + 1)
                elif stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                    out.refused[r] = HARD_LINK
                elif stat.S_ISREG(st.st_mode):
                    out.files[r] = st.st_size
                else:
                    out.refused[r] = _kind(st.st_mode) + "; bundles hold only regular files"

    walk(root, "", 0)
    return out


def _open(root: Path, rel: str) -> int:
    """A read-only fd of ``root/rel``, refusing a link or a non-regular file at any component."""
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise ReadError(rel, "unsafe path")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    dfd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        for p in parts[:-1]:
            try:
                nfd = os.open(p, flags | getattr(os, "O_DIRECTORY", 0), dir_fd=dfd)
            except OSError as e:
                raise ReadError(rel, f"folder {p!r} cannot be entered ({_why(e)})") from None
            os.close(dfd)
            dfd = nfd
        try:
            fd = os.open(parts[-1], flags | getattr(os, "O_NONBLOCK", 0), dir_fd=dfd)
        except OSError as e:
            raise ReadError(rel, f"cannot be opened ({_why(e)})") from None
    finally:
        os.close(dfd)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise ReadError(rel, _kind(st.st_mode) + "; bundles hold only regular files")
    if st.st_nlink > 1:
        os.close(fd)
        raise ReadError(rel, HARD_LINK)
    return fd


def _why(e: OSError) -> str:
    if e.errno == errno.ELOOP:
        return "it is a symbolic link; bundles hold only regular files"
    if e.errno == errno.ENOENT:
        return "missing"
    return e.strerror or str(e)


def _cap_text(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n} bytes"


def read_bytes(root: str | Path, rel: str, cap: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``root/rel``, read with a cap.

    Raises:
        ReadError: a link, not a regular file, missing, or larger than ``cap``.
    """
    fd = _open(Path(root), rel)
    try:
        size = os.fstat(fd).st_size
        if size > cap:
            raise ReadError(rel, f"{size} bytes exceeds the size cap of {_cap_text(cap)}; not read")
        chunks, n = [], 0
        while True:
            b = os.read(fd, min(_CHUNK, cap + 1 - n))
            if not b:
                break
            chunks.append(b)
            n += len(b)
            if n > cap:
                raise ReadError(rel, f"grew beyond the size cap of {_cap_text(cap)} while being read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def iter_chunks(root: str | Path, rel: str, cap: int = MAX_DATA_BYTES) -> Iterator[bytes]:
    """The bytes of ``root/rel`` in 1 MiB chunks, with the same checks as :func:`read_bytes`."""
    fd = _open(Path(root), rel)
    try:
        size = os.fstat(fd).st_size
        if size > cap:
            raise ReadError(rel, f"{size} bytes exceeds the size cap of {_cap_text(cap)}; not read")
        n = 0
        while True:
            b = os.read(fd, _CHUNK)
            if not b:
                return
            n += len(b)
            if n > cap:
                raise ReadError(rel, f"grew beyond the size cap of {_cap_text(cap)} while being read")
            yield b
    finally:
        os.close(fd)


def sha256_file(root: str | Path, rel: str, cap: int = MAX_DATA_BYTES) -> str:
    """Hex SHA-256 of a file's raw bytes, streamed (constant memory)."""
    h = hashlib.sha256()
    for b in iter_chunks(root, rel, cap):
        h.update(b)
    return h.hexdigest()


# -- JSON ---------------------------------------------------------------------------------------

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


def json_depth(data: bytes) -> int:
    """Deepest nesting of ``[``/``{`` in JSON bytes, outside string literals (linear time,
    bounded memory)."""
    stripped = _STRING.sub(b'""', data)
    depth, best = 0, 0
    step = 1 << 24
    for i in range(0, len(stripped), step):
        a = np.frombuffer(stripped[i:i + step], dtype=np.uint8)
        d = (a == 0x5B).astype(np.int32) + (a == 0x7B) - (a == 0x5D) - (a == 0x7D)
        if not d.any():
            continue
        c = np.cumsum(d, dtype=np.int64) + depth
        best = max(best, int(c.max()))
        depth = int(c[-1])
    return best


def parse_json(data: bytes, file: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse raw bytes as strict JSON (UTF-8, no BOM, no NaN/Infinity, no duplicate keys,
    nesting at most ``max_depth``).

    Raises:
        ReadError: naming the file, with the line and column of a syntax error.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ReadError(file, f"not UTF-8 at byte {e.start}") from None
    depth = json_depth(data)
    if depth > max_depth:
        raise ReadError(file, f"JSON nested {depth} levels deep, beyond the cap of {max_depth}; not parsed")
    try:
        return json.loads(text, object_pairs_hook=no_duplicate_keys, parse_constant=no_constant)
    except json.JSONDecodeError as e:
        raise ReadError(file, f"unparsable JSON: {e.msg} at line {e.lineno} column {e.colno}"
                              f" ({len(data)} bytes; truncated?)") from None
    except RecursionError:  # pragma: no cover - the depth cap stops this first
        raise ReadError(file, "JSON nested too deeply to parse") from None
    except ValueError as e:
        raise ReadError(file, f"invalid JSON: {e}") from None


def read_json(root: str | Path, rel: str, *, cap: int = MAX_FILE_BYTES, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """:func:`read_bytes` then :func:`parse_json`."""
    return parse_json(read_bytes(root, rel, cap), rel, max_depth=max_depth)


# -- published numbers --------------------------------------------------------------------------

def is_number(x: Any) -> bool:
    """A finite JSON number (not a boolean)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def matches_rounded(published: Any, value: float, decimals: int,
                    idioms: tuple[Callable[[float, int], float], ...] | None = None) -> bool:
    """True when ``published`` equals ``value`` rounded to ``decimals`` by one of
    ``idioms`` (default: JavaScript's ``Math.round(x * 10**d) / 10**d``, the idiom of the
    published bundles), exactly: no tolerance."""

    if not is_number(published) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return False
    for f in idioms or (js_math_round,):
        if float(published) == f(float(value), decimals):
            return True
    return False


def published_rounding_matches(published: float, replayed: float, digits: int) -> bool:
    """True when ``published`` equals ``replayed`` rounded to ``digits`` decimals with
    ``Math.round(x * 10**d) / 10**d``, exactly.

    That is the publisher's idiom: all 459 rounded values of the two shared HumanizerBench
    cycles follow it (``Number(x.toFixed(d))`` differs at 5 ties), and veribench's own
    bundles use it. There is no tolerance and no second idiom: either would let a value
    with a +1 or -1 in its last printed digit pass.
    """
    return matches_rounded(published, replayed, digits, (js_math_round,))


def same_number(published: Any, value: Any) -> bool:
    """Exact equality of a number printed at full precision (JSON written by Python,
    shortest round-trip): ints must be ints, floats equal as doubles."""
    if isinstance(published, bool) or isinstance(value, bool):
        return published is value
    if isinstance(published, int) and isinstance(value, int):
        return published == value
    if is_number(published) and isinstance(value, (int, float)):
        return float(published) == float(value) and (isinstance(published, float) == isinstance(value, float)
                                                     or float(value).is_integer())
    return False


# -- frozen code --------------------------------------------------------------------------------

#: What a constant hole of a frozen JavaScript file may hold.
HOLE_PATTERNS = {
    "number": r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?",
    # a flat or nested JSON object of names and numbers: no quotes inside names' text beyond
    # [A-Za-z0-9_], no parentheses, operators, comments or line breaks - no code fits
    "object": r'\{[{}":,.\-+0-9A-Za-z_ ]*\}',
}
_MARK = re.compile(r"@([A-Z_]+)@")


@dataclass(frozen=True)
class FrozenMatch:
    """A recognised frozen file: which known text, and the constants in its holes."""

    name: str
    constants: Mapping[str, Any]


def compile_template(template: str, holes: Mapping[str, str]) -> tuple[re.Pattern[str], list[str]]:
    """A regular expression that matches ``template`` exactly, with each ``@NAME@`` mark
    replaced by the pattern of its hole kind (``holes[NAME]`` in :data:`HOLE_PATTERNS`)."""
    parts, names, pos = [], [], 0
    for m in _MARK.finditer(template):
        parts.append(re.escape(template[pos:m.start()]))
        name = m.group(1)
        if name in names:
            parts.append(f"(?P={name})")  # a constant used twice must be the same text
        else:
            parts.append(f"(?P<{name}>{HOLE_PATTERNS[holes[name]]})")
            names.append(name)
        pos = m.end()
    parts.append(re.escape(template[pos:]))
    return re.compile("".join(parts), re.S), names


def match_frozen(data: bytes, known: Mapping[str, tuple[re.Pattern[str], list[str]]]) -> FrozenMatch | None:
    """The known text ``data`` equals outside its holes (with the holes' values parsed as
    JSON), or None. ``data`` must be UTF-8; any other byte anywhere fails."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    for name, (pat, names) in known.items():
        m = pat.fullmatch(text)
        if m is None:
            continue
        try:
            vals = {n: json.loads(m.group(n), object_pairs_hook=no_duplicate_keys, parse_constant=no_constant) for n in names}
        except ValueError:
            continue
        return FrozenMatch(name, vals)
    return None


# -- text normalisation of bundle files ---------------------------------------------------------

def reference_trim(text: str) -> str:
    """How the frozen reference implementation normalises a bundle text file (the nonce):
    JavaScript's ``String.prototype.trim`` - ECMAScript WhiteSpace and LineTerminator
    (:data:`veribench.bundles.jscompat.JS_WHITESPACE`), which includes U+FEFF, U+00A0,
    U+2028 and the other Unicode spaces, and excludes U+0085 and U+001C..U+001F."""

    return js_trim(text)


def open_file(root: str | Path, rel: str, cap: int = MAX_DATA_BYTES):
    """A binary file object of ``root/rel`` after the reader's checks (for Arrow readers).

    Raises:
        ReadError: a link, not a regular file, missing, or larger than ``cap``.
    """
    fd = _open(Path(root), rel)
    size = os.fstat(fd).st_size
    if size > cap:
        os.close(fd)
        raise ReadError(rel, f"{size} bytes exceeds the size cap of {_cap_text(cap)}; not read")
    return os.fdopen(fd, "rb")


def iter_lines(root: str | Path, rel: str, cap: int = MAX_DATA_BYTES) -> Iterator[bytes]:
    """The lines of ``root/rel`` (without the newline), streamed with the reader's checks."""
    rest = b""
    for chunk in iter_chunks(root, rel, cap):
        buf = rest + chunk
        lines = buf.split(b"\n")
        rest = lines.pop()
        yield from lines
    if rest:
        yield rest


def parse_json_line(line: bytes, file: str, lineno: int, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """One JSON Lines record, with the same strictness and depth cap as :func:`parse_json`."""
    if line.count(b"[") + line.count(b"{") > max_depth and json_depth(line) > max_depth:
        raise ReadError(file, f"line {lineno}: JSON nested beyond the cap of {max_depth}; not parsed")
    try:
        return json.loads(line.decode("utf-8"), object_pairs_hook=no_duplicate_keys, parse_constant=no_constant)
    except UnicodeDecodeError as e:
        raise ReadError(file, f"line {lineno}: not UTF-8 at byte {e.start}") from None
    except json.JSONDecodeError as e:
        raise ReadError(file, f"line {lineno}: unparsable JSON: {e.msg} at column {e.colno}") from None
    except RecursionError:  # pragma: no cover - the depth cap stops this first
        raise ReadError(file, f"line {lineno}: JSON nested too deeply to parse") from None
    except ValueError as e:
        raise ReadError(file, f"line {lineno}: invalid JSON: {e}") from None
