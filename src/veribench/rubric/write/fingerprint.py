"""The fingerprint of an arm-B text: how a writer's text is normalised once, and hashed.

Every revision the writing app stores is first passed through :func:`normalise_text`, so
the text kept (and scored by detectors) *is* the normalised text, and its fingerprint is
veribench's ordinary text hash of it (:func:`veribench.hashing.text_sha256`: SHA-256 of the
UTF-8 bytes). The normalisation is only what a browser or a text editor changes by itself:

1. line endings: CR LF and lone CR become LF (browsers send form text with CR LF; editors
   on Windows save CR LF);
2. leading and trailing spaces, tabs and line feeds of the whole text are removed (editors
   add a final newline).

Nothing else changes: no Unicode normalisation, no change inside the text. Anyone holding
the text can therefore prove it belongs to the corpus with a one-liner (``veribench write
fingerprint FILE``, or plain Python, see ``docs/arm-b.md``) and compare the result with the
published ``text_sha256``.
"""

from __future__ import annotations

from pathlib import Path

from veribench.errors import InputError
from veribench.hashing import text_sha256

#: Characters stripped from both ends of a text (after line endings become LF).
STRIP_CHARS = " \t\n"


def normalise_text(text: str) -> str:
    """``text`` with CR LF / CR turned into LF and outer spaces, tabs and LFs removed."""
    return text.replace("\r\n", "\n").replace("\r", "\n").strip(STRIP_CHARS)


def fingerprint(text: str) -> str:
    """SHA-256 (64 lowercase hex) of the UTF-8 bytes of ``normalise_text(text)``."""
    return text_sha256(normalise_text(text))


def file_fingerprint(path: str | Path) -> str:
    """Fingerprint of a UTF-8 text file (a leading byte-order mark is ignored).

    Raises:
        InputError: the file is missing or not UTF-8 (naming the byte offset).
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read ({e.strerror})", file=str(p)) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text (byte {e.start})", file=str(p)) from None
    return fingerprint(text)
