"""Durable file writes of the board: what is acknowledged survives a kill -9 or a power cut."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def fsync_folder(folder: Path) -> None:
    """fsync a folder, so that a rename or a new file in it is on disk (POSIX)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durably(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` so that it survives a kill -9 or a power cut once this
    returns: a temporary file in the same folder, fsync'd, renamed over ``path``, then the
    folder fsync'd (POSIX rename is atomic: a reader sees the old file or the new one).
    ``mode``: the file's permission bits (e.g. ``0o644`` for a public file), set before the
    rename; None keeps the temporary file's 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_folder(path.parent)


def make_private(path: Path) -> None:
    """Restrict ``path`` to its owner: a file 0600; a folder 0700 and everything under it
    (folders 0700, files 0600). A path that does not exist is left alone. The board's
    database and workspace hold the salt and the labels until the reveal."""
    if not path.exists():
        return
    if path.is_file():
        os.chmod(path, 0o600)
        return
    os.chmod(path, 0o700)
    for root, dirs, names in os.walk(path):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o700)
        for n in names:
            p = os.path.join(root, n)
            if not os.path.islink(p):
                os.chmod(p, 0o600)


def create_private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 when it does not exist (so that a database created
    in it, and its journal files, which SQLite gives the database file's mode, are never
    readable by others); an existing file is set to 0600."""
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)
