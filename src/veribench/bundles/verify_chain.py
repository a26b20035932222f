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

from veribench.bundles import layout, reader, runblock
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
        why = layout.OLDER_FORMATS.get(m.get("format")) if isinstance(m.get("format"), str) else None
        other = isinstance(m.get("format"), str) and m["format"].startswith(layout.FORMAT_PREFIX)
        c.fail("manifest", f"an older version of the bundle format: {why}; publish the run again" if why else
               "a version of the bundle format this veribench does not read" if other else
               "not a detector-run bundle", layout.MANIFEST, "format", layout.FORMAT, m.get("format"))
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


def check_labels(c: Context, m: dict[str, Any], results: dict[str, Any], run_ev: dict[str, Any], proto: Any,
                 mine: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
    """Every field of ``manifest.json`` and every label of ``results.json`` follows from the log
    and the committed protocol, or is refused (part of the ``manifest`` and ``results`` checks).

    ``manifest.json``: exactly the fields :data:`veribench.bundles.layout.MANIFEST_KEYS`, in
    that order and byte for byte as :func:`veribench.bundles.layout.manifest_text` writes
    them; ``run_id``, ``tag``, ``protocol_id`` and ``protocol_sha256`` those of the run
    event; ``veribench_version`` a version (no free text) and the run's own (``results.json``
    ``run.veribench_version``, which the logged ``results_sha256`` fixes); ``format``, ``protocol_file``,
    ``run_event``, ``files`` and ``root_sha256`` are held by the other checks.
    ``results.json``: ``files`` is the listing :data:`veribench.bundles.layout.RESULTS_FILES`,
    and the run's labels are those :func:`veribench.bundles.runblock.label_problems` accepts.
    """
    p = run_ev.get("payload") or {}
    if list(m) != list(layout.MANIFEST_KEYS):
        c.fail("manifest", "fields differ from the bundle format's (a field no check re-derives)", layout.MANIFEST,
               ", ".join(str(k) for k in [*(set(m) - set(layout.MANIFEST_KEYS)), *(set(layout.MANIFEST_KEYS) - set(m))])
               or "field order", list(layout.MANIFEST_KEYS), list(m))
    raw = c.bytes(layout.MANIFEST, "manifest")
    if raw is not None and raw != layout.manifest_text(m).encode("utf-8"):
        c.fail("manifest", "not in the byte form publish writes (indented JSON, UTF-8, a final newline)",
               layout.MANIFEST)
    for k in ("run_id", "tag", "protocol_id", "protocol_sha256"):
        if k in m and m.get(k) != p.get(k):
            c.fail("manifest", f"{k} differs from the logged run event's", layout.MANIFEST, k, p.get(k), m.get(k))
    v = m.get("veribench_version")
    if not (isinstance(v, str) and layout.VERSION.fullmatch(v)):
        c.fail("manifest", "not a veribench version", layout.MANIFEST, "veribench_version", "a version such as 0.1.0",
               v)
    run_v = (results.get("run") or {}).get("veribench_version") if isinstance(results.get("run"), dict) else None
    if "veribench_version" in m and v != run_v:
        c.fail("manifest", "veribench_version differs from the run's (results.json run.veribench_version, fixed by "
               "the logged run event's results_sha256)", layout.MANIFEST, "veribench_version", run_v, v)
    if results.get("files") != layout.RESULTS_FILES:
        c.fail("results", "the files listing is not the one the bundle's tables are written as", layout.RESULTS,
               "files", layout.RESULTS_FILES, results.get("files"))
    run = results.get("run")
    if not isinstance(run, dict):
        c.fail("results", "no run block", layout.RESULTS, "run")
        return
    for pr in runblock.label_problems(run, run_ev, proto, [e["payload"].get("file") for e in mine], events):
        c.fail("results", pr.message, layout.RESULTS if pr.field.startswith("run.") else layout.EVENTS, pr.field,
               pr.expected, pr.got)


def check_protocol_files(c: Context, mine: list[dict[str, Any]]) -> None:
    """Every protocol file and commitment file of the bundle is of a version the log commits
    (part of the ``commitment`` check): ``protocol/v<k>.<ext>`` and ``commitments/v<k>.*``
    only for a version ``k`` a commit or amendment event of the run's protocol id logged
    before the run, the protocol file named as :func:`veribench.bundles.layout.protocol_file_name`
    names that commit's file (its bytes hash to the commitment: ``check_commitment``)."""
    logged = {e["payload"].get("version"): e["payload"].get("file") for e in mine}
    for rel in sorted(c.present):
        mt = re.fullmatch(r"(protocol|commitments)/v([1-9][0-9]*)\..*", rel)
        if mt is None:
            continue
        k = int(mt.group(2))
        if k not in logged:
            c.fail("commitment", "a protocol version no commitment or amendment in the log holds", rel, "version",
                   sorted(x for x in logged if isinstance(x, int)), k)
        elif mt.group(1) == "protocol" and rel != layout.protocol_file_name(k, logged[k]):
            c.fail("commitment", "the file of a committed version under another name than the logged commit's",
                   rel, "file name", layout.protocol_file_name(k, logged[k]), rel)
