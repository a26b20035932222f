"""The ``manifest`` and ``chain`` checks of a detector-run bundle.

``manifest``: ``manifest.json`` lists every other file with the SHA-256 of its raw bytes,
the root hash recomputes, and no file is unknown, missing or unlisted. ``chain``:
``log/events.jsonl`` links from the first event to the run's event (each hash, link,
payload digest, sequence number and time order recomputes,
:func:`veribench.store.events.check_chain`), and that event is the manifest's.
"""

from __future__ import annotations

import re
from typing import Any

from veribench.bundles import layout, reader
from veribench.bundles.publish import manifest_root
from veribench.bundles.reader import ReadError
from veribench.bundles.verify_files import ALLOWED, Context, required_names
from veribench.store import events as ev


def check_manifest(c: Context, listing: reader.Listing) -> dict[str, Any] | None:
    """The ``manifest`` check: every listed file is a name the format allows and hashes
    (raw bytes) to its listed SHA-256; every file present is listed; every required file is.

    Returns:
        The manifest, or ``None`` when it is not an object with a ``files`` listing (a
        recorded failure: no further check can run).
    """
    before = len(c.r.failures)
    m = c.json(layout.MANIFEST)
    if not isinstance(m, dict):
        if len(c.r.failures) == before:  # read, but not an object (null, a list, a number ...)
            c.fail("manifest", f"expected an object, got {type(m).__name__ if m is not None else 'null'}",
                   layout.MANIFEST)
        return None
    if m.get("format") != layout.FORMAT:
        c.fail("manifest", "not a detector-run bundle", layout.MANIFEST, "format", layout.FORMAT, m.get("format"))
    files = m.get("files")
    if not isinstance(files, dict):
        c.fail("manifest", "no files listing", layout.MANIFEST, "files")
        return None
    known = set(listing.files)
    for rel, digest in files.items():
        if not isinstance(rel, str) or not (rel in required_names() or ALLOWED.fullmatch(rel)):
            c.fail("manifest", "unknown or unsafe file name in the manifest", layout.MANIFEST, f"files[{rel!r}]")
            continue
        if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            c.fail("manifest", "not a lowercase hex SHA-256", layout.MANIFEST, f"files[{rel!r}]", got=digest)
            continue
        if rel not in known:
            if rel not in listing.refused:
                c.fail("manifest", "listed file missing", rel)
            continue
        try:
            got = reader.sha256_file(c.root, rel, c.data_cap)
        except ReadError as e:
            c.fail("reader", e.message, rel)
            continue
        if got != digest:
            c.fail("manifest", "SHA-256 of raw bytes differs from the manifest", rel, expected=digest, got=got)
    for rel in sorted(known - set(files) - {layout.MANIFEST}):
        c.fail("manifest", "file present but not covered by the manifest", rel)
    for rel in required_names():
        if rel not in files and rel != layout.MANIFEST:
            c.fail("manifest", "required file not in the manifest", layout.MANIFEST, f"files[{rel!r}]")

    if m.get("root_sha256") != manifest_root(m):
        c.fail("manifest", "root hash does not recompute", layout.MANIFEST, "root_sha256", manifest_root(m),
               m.get("root_sha256"))
    c.ok("manifest", f"{len(files)} files, root {str(m.get('root_sha256'))[:16]}…")
    return m


def check_chain(c: Context, events: list[dict[str, Any]], m: dict[str, Any]) -> dict[str, Any] | None:
    """The ``chain`` check: the events link from the first to the last, which is the run's
    event named by the manifest (``m["run_event"]``).

    Returns:
        The run's event, or ``None`` when the log does not end with one.
    """
    found, head = ev.check_chain(events)
    for f in found:
        c.fail("chain", f.message, layout.EVENTS, f"event {f.seq}" if f.seq is not None else None)
    want = m.get("run_event") or {}
    last = events[-1] if events else None
    if last is None or last.get("type") != "run":
        c.fail("chain", "the log does not end with the run's event", layout.EVENTS)
        return None
    if (last.get("seq"), last.get("hash")) != (want.get("seq"), want.get("hash")):
        c.fail("chain", "the run event differs from the manifest's", layout.EVENTS, "run_event",
               want, {"seq": last.get("seq"), "hash": last.get("hash")})
    c.ok("chain", f"{len(events)} events link from the first to the run's (head {str(head.get('hash'))[:16]}…)")
    return last
