"""``veribench verify`` for detector-run bundles: re-derive everything, trust nothing.

Every check is named; each failure names the check, file, field, expected and got
(:class:`veribench.bundles.findings.Finding`, the cycle verifier's shape too). In order:

``reader``      only regular files, no links or special files, size and depth caps
``manifest``    ``manifest.json`` lists every other file with the SHA-256 of its raw
                bytes; the root hash recomputes; no unknown, missing or unlisted file
``chain``       ``log/events.jsonl`` links from the first event to the run's event: each
                hash, link, payload digest, sequence number and time order recomputes
``commitment``  the protocol bytes hash to the committed SHA-256; every version of the
                protocol id is present and chained by ``supersedes``; the commitment
                records re-derive from the log; the run used the current version; the
                run's protocol block agrees with the log
``amendments``  ``amendments.json`` and the run's changelog equal the log's; no
                amendment is dated before the version it supersedes; each is written in
                the amended file as logged
``corpus``      every document of every import the selection can reach is present and
                matches what its import logged; text hashes; fingerprint-only documents
                carry no text; ``in_run`` equals the protocol's selection
``scores``      ``scores.csv`` equals ``scores.parquet``; each row's score and link are
                the latest the log holds for them, and every logged scan batch of the
                run's detectors recomputes from the rows and ``log/leaves.csv`` (a
                changed, added or dropped score fails); spec hashes recompute
``timing``      every scan is dated and logged after the commitment, or the count that
                is not equals what the results and tables declare
``split``       the calibration split re-derived from the protocol's rule equals the
                published split side of every row
``results``     ``results.json`` is what the run logged, and every number in it equals
                the one re-derived from ``scores.csv`` (exactly, at full precision)
``tables``      the tables and README re-derived from the results equal the published
                files byte for byte (every printed number at its printed rounding)
``timestamp``   each RFC 3161 token stamps its commitment record's exact bytes, verifies
                against the authority's certificate and agrees with the log

Nothing in a bundle is executed; protocol files are parsed as data.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from veribench.bundles import layout, reader
from veribench.bundles.findings import Finding
from veribench.bundles.publish import arrow_schema, manifest_root, readme
from veribench.bundles.reader import ReadError, same_number
from veribench.bundles.snapshot import (
    DetectorPlan,
    Snapshot,
    decisions,
    derive,
    needs_texts,
    protocol_from_bytes,
    split_sides,
)
from veribench.commit import tsa
from veribench.evaluate.tables import write_outputs
from veribench.hashing import canonical_json, sha256_bytes
from veribench.spec import Spec
from veribench.store import events as ev
from veribench.store.commitments import (
    changelog_of,
    commitment_record,
    earlier_runs_of,
    heads_of,
    record_bytes,
    versions_of,
)

CHECKS = ("reader", "manifest", "chain", "commitment", "amendments", "corpus", "scores", "timing", "split", "results",
          "tables", "timestamp")
_ALLOWED = re.compile(r"(protocol/v[1-9][0-9]*\.(toml|yaml|yml)|commitments/v[1-9][0-9]*\.(json|tsr|roots\.pem))")
#: Clock allowance between an authority's time and the workspace's (seconds).
CLOCK_SKEW_S = 5
MAX_LISTED = 20


def is_detector_bundle(path: Path) -> bool:
    """A folder whose ``manifest.json`` (a regular file) names the detector-bundle format."""
    try:
        m = reader.read_json(path, layout.MANIFEST, cap=16 * 1024 * 1024)
    except (ReadError, OSError):
        return False
    return isinstance(m, dict) and m.get("format") == layout.FORMAT


@dataclass
class BundleReport:
    """The outcome for one detector-run bundle."""

    path: str
    tag: str | None = None
    run_id: str | None = None
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """No check failed and every check ran: a bundle is accepted only when each of
        :data:`CHECKS` passed (a check that could not run is never a pass)."""
        return not self.failures and all(c in self.checks for c in CHECKS)

    def not_run(self) -> list[str]:
        """The checks of :data:`CHECKS` that neither passed nor failed (in check order)."""
        return [c for c in CHECKS if c not in self.checks and not any(f.check == c for f in self.failures)]

    def status(self, check: str) -> str:
        if any(f.check == check for f in self.failures):
            return "FAIL"
        return self.checks.get(check, {}).get("status", "not run")

    def lines(self) -> list[str]:
        """``[ok] TAG: ...`` or ``[FAIL] TAG: first failure``, then one line per check."""
        name = self.tag or Path(self.path).name
        if self.ok:
            head = (f"[ok] {name} (run {self.run_id}): {len(CHECKS)} checks passed; "
                    f"{self.counts.get('documents', 0):,} documents, {self.counts.get('score_rows', 0):,} scores "
                    "re-derived")
        elif self.failures:
            head = f"[FAIL] {name}: {self.failures[0].line()}"
        else:
            head = f"[FAIL] {name}: checks that did not run: {', '.join(self.not_run())}"
        out = [head]
        for c in CHECKS:
            st = self.status(c)
            detail = self.checks.get(c, {}).get("detail", "")
            fails = [f for f in self.failures if f.check == c]
            if fails:
                detail = fails[0].line()[len(c) + 2:] + (f" (+{len(fails) - 1} more)" if len(fails) > 1 else "")
            out.append(f"    {st:<8} {c}: {detail}".rstrip())
        shown = {id(f) for c in CHECKS for f in [next((x for x in self.failures if x.check == c), None)] if f}
        rest = [f for f in self.failures if id(f) not in shown]
        out += [f"    {f.line()}" for f in rest[:MAX_LISTED]]
        if len(rest) > MAX_LISTED:
            out.append(f"    … {len(rest) - MAX_LISTED} more failures in the --json report")
        out += [f"    note: {n}" for n in self.notes]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "detector-run", "path": self.path, "tag": self.tag, "run_id": self.run_id, "ok": self.ok,
                "checks": {c: {"status": self.status(c), **{k: v for k, v in self.checks.get(c, {}).items()
                                                             if k != "status"}} for c in CHECKS},
                "counts": self.counts, "failures": [asdict(f) for f in self.failures], "notes": self.notes}


class _Ctx:
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


# -- manifest --------------------------------------------------------------------------------

def _check_manifest(c: _Ctx, listing: reader.Listing) -> dict[str, Any] | None:
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
        if not isinstance(rel, str) or not (rel in _required_names() or _ALLOWED.fullmatch(rel)):
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
    for rel in _required_names():
        if rel not in files and rel != layout.MANIFEST:
            c.fail("manifest", "required file not in the manifest", layout.MANIFEST, f"files[{rel!r}]")

    if m.get("root_sha256") != manifest_root(m):
        c.fail("manifest", "root hash does not recompute", layout.MANIFEST, "root_sha256", manifest_root(m),
               m.get("root_sha256"))
    c.ok("manifest", f"{len(files)} files, root {str(m.get('root_sha256'))[:16]}…")
    return m


def _required_names() -> tuple[str, ...]:
    return (layout.MANIFEST, layout.README, layout.CORPUS, layout.SCORES_CSV, layout.SCORES_PARQUET, layout.EVENTS,
            layout.LEAVES, layout.AMENDMENTS, layout.RESULTS, *layout.TABLE_FILES)


# -- chain -----------------------------------------------------------------------------------

def _read_events(c: _Ctx) -> list[dict[str, Any]] | None:
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
            out.append(e)
    except ReadError as e:
        c.fail("reader" if "cap" in e.message else "chain", e.message, layout.EVENTS)
        return None
    return out


def _check_chain(c: _Ctx, events: list[dict[str, Any]], m: dict[str, Any]) -> dict[str, Any] | None:
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


# -- commitment and amendments --------------------------------------------------------------

def _check_commitment(c: _Ctx, events: list[dict[str, Any]], run_ev: dict[str, Any], m: dict[str, Any],
                      results: dict[str, Any]) -> tuple[Any, dict[str, Any], list[dict[str, Any]]] | None:

    run = results.get("run") or {}
    pb = run.get("protocol") or {}
    sha = m.get("protocol_sha256")
    rp = run_ev.get("payload") or {}
    for who, v in (("the run event", rp.get("protocol_sha256")), ("results.json", pb.get("hash"))):
        if v != sha:
            c.fail("commitment", f"protocol SHA-256 in {who} differs from the manifest's",
                   layout.RESULTS if who == "results.json" else layout.EVENTS, "protocol hash", sha, v)
    vs = versions_of(events)
    ve = vs.get(sha)
    if ve is None:
        c.fail("commitment", "the run's protocol was never committed in this log", layout.EVENTS,
               expected=sha, got=None)
        return None
    pid = ve["payload"]["protocol_id"]
    mine = sorted((e for e in vs.values() if e["payload"]["protocol_id"] == pid), key=lambda e: e["seq"])
    first = mine[0]
    if first["type"] != "protocol_commit" or pid != "vbp-" + first["payload"]["protocol_sha256"][:16]:
        c.fail("commitment", "the protocol id is not the one fixed at its first commit", layout.EVENTS,
               f"event {first['seq']}", "vbp-" + first["payload"]["protocol_sha256"][:16], pid)
    proto = None
    for i, e in enumerate(mine):
        p = e["payload"]
        k = p.get("version")
        if k != i + 1:
            c.fail("commitment", "version numbers of the protocol id are not 1, 2, ...", layout.EVENTS,
                   f"event {e['seq']}", i + 1, k)
        if i and p.get("supersedes") != mine[i - 1]["payload"]["protocol_sha256"]:
            c.fail("commitment", "an amendment does not supersede the version before it", layout.EVENTS,
                   f"event {e['seq']}", mine[i - 1]["payload"]["protocol_sha256"], p.get("supersedes"))
        files = [f for f in c.present if re.fullmatch(rf"protocol/v{k}\.(toml|yaml|yml)", f)]
        if len(files) != 1:
            c.fail("commitment", f"protocol version {k} is not in the bundle exactly once", "protocol/",
                   expected=1, got=len(files))
            continue
        raw = c.bytes(files[0], "commitment")
        if raw is not None and sha256_bytes(raw) != p["protocol_sha256"]:
            c.fail("commitment", "protocol bytes do not hash to the committed SHA-256 (the file was changed after "
                                 "its commitment)", files[0], expected=p["protocol_sha256"], got=sha256_bytes(raw))
        rec = c.bytes(f"commitments/v{k}.json", "commitment")
        if rec is not None and rec != record_bytes(commitment_record(e)):
            c.fail("commitment", "the commitment record differs from the one the log's commit event gives",
                   f"commitments/v{k}.json")
        if p["protocol_sha256"] == sha and raw is not None:
            if files[0] != m.get("protocol_file"):
                c.fail("commitment", "the manifest names another protocol file", layout.MANIFEST, "protocol_file",
                       files[0], m.get("protocol_file"))
            try:
                proto = protocol_from_bytes(raw, p.get("file") or files[0])
            except Exception as ex:  # ProtocolError: a committed file veribench cannot read
                c.fail("commitment", f"protocol does not parse: {ex}", files[0])
    head = heads_of([e for e in events if e["seq"] < run_ev["seq"]]).get(pid)
    if head is not None and head["payload"]["protocol_sha256"] != sha:
        c.fail("commitment", "the run used a superseded version: an amendment was committed before the run and "
                             "skipped", layout.EVENTS, f"event {run_ev['seq']}", head["payload"]["protocol_sha256"], sha)
    before = [e for e in events if e["seq"] < run_ev["seq"]]
    stamps = [e for e in before if e["type"] == "timestamp" and e["payload"].get("protocol_sha256") == sha]
    vp = ve["payload"]
    want = {"id": pid, "version": vp.get("version"), "commit_seq": ve["seq"], "commit_event_hash": ve["hash"],
            "committed_at": ve["at"], "name": vp.get("name"),
            "declared_new_protocol": bool(vp.get("declared_new_protocol")),
            "prior_protocol_ids": list(vp.get("prior_protocol_ids") or []),
            "earlier_runs": earlier_runs_of(before, pid),
            "timestamp": ({"authority": stamps[-1]["payload"].get("authority"),
                           "gen_time": stamps[-1]["payload"].get("gen_time"), "seq": stamps[-1]["seq"]}
                          if stamps else None)}
    for k, v in want.items():
        if pb.get(k) != v:
            c.fail("commitment", f"the run's protocol.{k} differs from the log (renamed, re-dated or re-numbered "
                                 "after the fact)", layout.RESULTS, f"run.protocol.{k}", v, pb.get(k))
    if rp.get("protocol_id") != pid:
        c.fail("commitment", "the run event names another protocol id", layout.EVENTS, f"event {run_ev['seq']}", pid,
               rp.get("protocol_id"))
    ch = run.get("chain_head") or {}
    at = next((e for e in events if e["seq"] == ch.get("seq")), None) if ch.get("seq") else None
    if ch.get("seq") == 0 and ch.get("hash") == ev.GENESIS:
        at = {"hash": ev.GENESIS, "seq": 0}
    if at is None or at.get("hash") != ch.get("hash") or not (0 <= ch.get("seq", -1) < run_ev["seq"]):
        c.fail("commitment", "the chain head the run records is not an event before the run", layout.RESULTS,
               "run.chain_head", None, ch)
    if rp.get("chain_head") != ch:
        c.fail("commitment", "the run event records another chain head", layout.EVENTS, f"event {run_ev['seq']}",
               rp.get("chain_head"), ch)
    c.ok("commitment", f"protocol {vp.get('name')!r} (id {pid}, version {vp.get('version')}) hashes to its "
                       f"commitment of {ve['at']}; {len(mine)} version(s)")
    return proto, ve, mine


def _check_amendments(c: _Ctx, events: list[dict[str, Any]], ve: dict[str, Any], mine: list[dict[str, Any]],
                      results: dict[str, Any]) -> None:

    pid = ve["payload"]["protocol_id"]
    want = changelog_of(events, pid, upto=ve["seq"])
    got = c.json(layout.AMENDMENTS, "amendments")
    if got is not None and got != want:
        c.fail("amendments", "amendments.json differs from the log's changelog (an amendment was re-dated, "
                             "re-worded, dropped or moved)", layout.AMENDMENTS, expected=want, got=got)
    pub = ((results.get("run") or {}).get("protocol") or {}).get("amendments")
    if pub != want:
        c.fail("amendments", "the run's amendment list differs from the log's changelog", layout.RESULTS,
               "run.protocol.amendments", want, pub)
    by_sha = {e["payload"]["protocol_sha256"]: e for e in mine}
    for a in want:
        sup = by_sha.get(a.get("supersedes"))
        if sup is None:
            continue
        try:
            day = ev.parse_utc(str(a.get("date"))).date()
        except ValueError:
            c.fail("amendments", "amendment date is not a date", layout.EVENTS, f"event {a['seq']}", got=a.get("date"))
            continue
        if day < ev.parse_utc(sup["at"]).date():
            c.fail("amendments", f"backdated amendment: dated {day}, before the version it supersedes was committed "
                                 f"({sup['at'][:10]}, log time)", layout.EVENTS, f"event {a['seq']}",
                   f">= {sup['at'][:10]}", str(day))
        if a.get("committed_at", "") < sup["at"]:
            c.fail("amendments", "amendment logged before the version it supersedes", layout.EVENTS,
                   f"event {a['seq']}")
        # the amended file carries the amendment as logged
        k = next((e["payload"].get("version") for e in mine if e["payload"]["protocol_sha256"] == a["hash"]), None)
        files = [f for f in c.present if re.fullmatch(rf"protocol/v{k}\.(toml|yaml|yml)", f)]
        if files:
            raw = c.bytes(files[0], "amendments")
            if raw is not None:

                try:
                    entries = protocol_from_bytes(raw, files[0]).amendments
                except Exception:
                    entries = []
                if not any(str(x.get("supersedes")) == a.get("supersedes") and str(x.get("date")) == a.get("date")
                           and str(x.get("summary")) == a.get("summary") for x in entries):
                    c.fail("amendments", "the amended protocol file does not carry the amendment as logged", files[0])
    after = sum(1 for a in want if a.get("after_results"))
    c.ok("amendments", f"{len(want)} amendment(s) as logged" + (f"; {after} committed after results existed (shown)"
                                                                 if after else ""),
         status="note" if after else "ok")


# -- corpus ----------------------------------------------------------------------------------

_LEAF_KEYS = frozenset(ev.DOC_FIELDS)
_REST_KEYS = frozenset({"doc_seq", "in_run", "fingerprint_only"})
_DOC_COLS = ("doc_id", "text_sha256", "label", "arm", "kind", "subgroup", "corpus", "group_key", "tags", "provenance",
             "in_run", "fingerprint_only", "doc_seq", "text")


@dataclass
class Corpus:
    """The corpus manifest as an Arrow table (``tags`` as canonical JSON text)."""

    table: Any
    n: int
    n_selected: int


def _corpus_chunk(cols: dict[str, list[Any]]):
    import pyarrow as pa

    types = {"in_run": pa.bool_(), "fingerprint_only": pa.bool_(), "doc_seq": pa.int64()}
    t = pa.table({k: pa.array(v, types.get(k, pa.string())) for k, v in cols.items()})
    for v in cols.values():
        v.clear()
    return t


def _check_corpus(c: _Ctx, events: list[dict[str, Any]], head_seq: int, proto: Any, extra: list[tuple],
                  keep_texts: bool = False) -> Corpus | None:
    """Every document of every reachable import, as its import logged it (see the module docstring).

    Streamed: lines are parsed one at a time and kept as Arrow columns, so memory follows the
    metadata, not the texts."""
    import hashlib

    import pyarrow as pa

    if not c.has(layout.CORPUS):
        c.fail("corpus", "required file missing", layout.CORPUS)
        return None
    cols: dict[str, list[Any]] = {k: [] for k in _DOC_COLS}
    chunks = []
    seen: set[str] = set()
    leaves: dict[int, list[bytes]] = defaultdict(list)
    loads, sha, enc = json.loads, hashlib.sha256, json.encoder.encode_basestring
    raw_decode = json.JSONDecoder().raw_decode
    canonical = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode  # the workspace's form of stored JSON
    n_fp = n_sel = 0
    try:
        for i, line in enumerate(reader.iter_lines(c.root, layout.CORPUS, c.data_cap), 1):
            if not line.strip():
                continue
            if line.count(b"[") + line.count(b"{") > reader.MAX_JSON_DEPTH and \
                    reader.json_depth(line) > reader.MAX_JSON_DEPTH:
                c.fail("reader", f"line {i}: JSON nested beyond the cap of {reader.MAX_JSON_DEPTH}; not parsed",
                       layout.CORPUS)
                continue
            try:
                text_line = line.decode("utf-8")
                if not text_line.startswith('{"doc":{'):
                    raise ValueError("no doc object first")
                # the doc object's exact bytes are what its leaf hashes: no other byte form matches the log
                doc, end = raw_decode(text_line, 7)
                tail = text_line[end:]
                rest = loads("{" + tail[1:]) if tail.startswith(",") else None
            except (UnicodeDecodeError, ValueError, RecursionError) as e:
                c.fail("corpus", f"unreadable record ({type(e).__name__}: {str(e)[:60]})", layout.CORPUS, f"line {i}")
                continue
            if type(doc) is not dict or doc.keys() != _LEAF_KEYS or type(rest) is not dict or \
                    not (_REST_KEYS <= rest.keys() <= _REST_KEYS | {"text"}):
                c.fail("corpus", "record does not have the corpus manifest's fields", layout.CORPUS, f"line {i}")
                continue
            fp, sel, iseq, text = rest["fingerprint_only"], rest["in_run"], rest["doc_seq"], rest.get("text")
            if type(sel) is not bool or type(fp) is not bool or type(iseq) is not int or \
                    (text is not None and type(text) is not str):
                c.fail("corpus", "in_run, fingerprint_only, doc_seq or text has the wrong type", layout.CORPUS,
                       f"line {i}")
                continue
            want = (f',"doc_seq":{iseq},"fingerprint_only":{"true" if fp else "false"},'
                    f'"in_run":{"true" if sel else "false"}' + ("" if text is None else ',"text":' + enc(text)) + "}")
            if tail != want:  # one byte form per record: no duplicate keys, spacing or escapes to hide in
                c.fail("corpus", "record is not in the bundle's canonical JSON form", layout.CORPUS, f"line {i}")
                continue
            did = doc["doc_id"]
            if did in seen:
                c.fail("corpus", "document listed twice", layout.CORPUS, f"line {i}", got=did)
                continue
            if text is not None:
                if sha(text.encode("utf-8")).hexdigest() != doc["text_sha256"]:
                    c.fail("corpus", "text does not hash to its text_sha256", layout.CORPUS, f"doc {did}")
                if fp:
                    c.fail("corpus", "a fingerprint-only document carries its text", layout.CORPUS, f"doc {did}")
            elif sel and not fp:
                c.fail("corpus", "a selected document's text is missing (and it is not fingerprint-only)",
                       layout.CORPUS, f"doc {did}")
            leaves[iseq].append(sha(text_line[7:end].encode("utf-8")).digest())
            seen.add(did)
            t_ = doc["tags"]
            for k in _DOC_COLS[:8]:
                cols[k].append(doc[k])
            cols["tags"].append(canonical(t_) if t_ else None)  # {} and none evaluate alike
            p_ = doc["provenance"]
            cols["provenance"].append(canonical(p_) if p_ else None)  # source_id / attack pair derived texts
            cols["in_run"].append(sel)
            cols["fingerprint_only"].append(fp)
            cols["doc_seq"].append(iseq)
            cols["text"].append(text if keep_texts else None)  # texts enter the run only via canonicalisation
            n_fp += fp
            n_sel += sel
            if len(cols["doc_id"]) >= 100_000:
                chunks.append(_corpus_chunk(cols))
    except ReadError as e:
        c.fail("reader" if "cap" in e.message else "corpus", e.message, layout.CORPUS)
        return None
    chunks.append(_corpus_chunk(cols))
    table = pa.concat_tables(chunks)
    doc_seq = dict(zip(table.column("doc_id").to_pylist(), table.column("doc_seq").to_pylist()))
    corpora = proto.selection.get("corpora") if proto is not None else None
    corpora = [str(x) for x in (corpora if isinstance(corpora, list) else [corpora])] if corpora else None
    imports = {e["seq"]: e for e in events if e["type"] == "import" and e["seq"] <= head_seq}
    updates = {e["seq"]: e for e in events if e["type"] == "document_update" and e["seq"] <= head_seq}
    for seq in sorted(leaves):
        if seq not in imports and seq not in updates:
            c.fail("corpus", "documents attributed to an event that is no import or correction before the run "
                             "(added documents)", layout.CORPUS, f"doc_seq {seq}", got=len(leaves[seq]))
    detached = 0
    for _kind, seq, k1, _, leaf in (x for x in extra if x[0] == "doc"):
        if seq not in imports and seq not in updates:
            c.fail("corpus", "a document fingerprint of no import or correction", layout.LEAVES, f"seq {seq}")
            continue
        if k1 is None:
            detached += 1  # a withdrawn document: counted against the log's withdrawals below
        elif not (isinstance(doc_seq.get(k1), int) and doc_seq[k1] > seq):
            c.fail("corpus", "a document's logged fields are listed as superseded, but no later correction of it is "
                             "in the corpus (a dropped or reverted document)", layout.LEAVES, f"doc {k1}, seq {seq}")
            continue
        try:
            leaves[seq].append(bytes.fromhex(leaf))
        except (TypeError, ValueError):
            c.fail("corpus", "not a hex SHA-256", layout.LEAVES, f"seq {seq}", got=leaf)
    budget = ev.blanked_budget(e for e in events if e["seq"] <= head_seq)
    if detached > budget["doc"]:
        c.fail("corpus", f"{detached} document fingerprints without their document, but the log's withdrawals "
                         f"account for {budget['doc']}", layout.LEAVES)
    named = set(doc_seq) | {x[2] for x in extra if x[0] == "doc" and x[2] is not None}
    check = {s_: e for s_, e in imports.items() if ev.import_reaches(e["payload"], corpora)}
    check.update({s_: e for s_, e in updates.items() if named & set(e["payload"].get("doc_ids") or [])})
    for seq, e in sorted(check.items()):
        got = leaves.get(seq, [])
        p = e["payload"]
        dg = ev.items_digest(got)
        if len(got) != p.get("n_doc") or dg != p.get("doc_sha256"):
            what = f"import {p.get('import_id')}" if e["type"] == "import" else f"correction (event {seq})"
            c.fail("corpus", f"the documents of {what} differ from what it logged (a document was added, dropped "
                             "or edited: label, arm, subgroup, tags, provenance or text hash)",
                   layout.CORPUS, f"doc_seq {seq}", f"{p.get('n_doc')} documents, digest "
                   f"{str(p.get('doc_sha256'))[:16]}…", f"{len(got)} documents, digest {dg[:16]}…")
    c.ok("corpus", f"{len(seen):,} documents match their imports' fingerprints; {n_sel:,} selected, "
                   f"{n_fp:,} fingerprint-only")
    return Corpus(table, len(seen), n_sel)


# -- scores, timing, split, results ---------------------------------------------------------

def _read_scores(c: _Ctx):
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq


    schema = arrow_schema()
    tables = {}
    for rel in (layout.SCORES_CSV, layout.SCORES_PARQUET):
        if not c.has(rel):
            c.fail("scores", "required file missing", rel)
            return None
        try:
            if rel.endswith(".csv"):
                with reader.open_file(c.root, rel, c.data_cap) as g:
                    header = g.readline(1 << 16).decode("utf-8", "replace").strip()
                if header != ",".join(f'"{n}"' for n in schema.names):
                    c.fail("scores", "columns differ from the bundle format", rel, "header", ",".join(schema.names),
                           header)
                    return None
                with reader.open_file(c.root, rel, c.data_cap) as f:
                    t = pacsv.read_csv(f, convert_options=pacsv.ConvertOptions(
                        column_types={x.name: x.type for x in schema}, strings_can_be_null=True,
                        quoted_strings_can_be_null=False, true_values=["true"], false_values=["false"]))
            else:
                with reader.open_file(c.root, rel, c.data_cap) as f:
                    t = pq.read_table(f)
        except ReadError as e:
            c.fail("reader", e.message, rel)
            return None
        except (pa.ArrowInvalid, pa.ArrowTypeError, OSError, KeyError) as e:
            c.fail("scores", f"cannot be read as the bundle's score table ({str(e).splitlines()[0]})", rel)
            return None
        if t.schema.names != schema.names:
            c.fail("scores", "columns differ from the bundle format", rel, "columns", schema.names, t.schema.names)
            return None
        try:
            tables[rel] = t.cast(schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            c.fail("scores", f"column types differ from the bundle format ({e})", rel)
            return None
    a, b = tables[layout.SCORES_CSV], tables[layout.SCORES_PARQUET]
    if not a.equals(b):
        where = "row count"
        if a.num_rows == b.num_rows:
            for name in schema.names:
                if not a.column(name).equals(b.column(name)):
                    where = f"column {name}"
                    break
        c.fail("scores", "scores.csv and scores.parquet differ", layout.SCORES_PARQUET, where, a.num_rows, b.num_rows)
    return a


def _read_leaves(c: _Ctx) -> list[tuple[str, int, str, str, str]] | None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    if not c.has(layout.LEAVES):
        c.fail("scores", "required file missing", layout.LEAVES)
        return None
    try:
        with reader.open_file(c.root, layout.LEAVES, c.data_cap) as f:
            t = pacsv.read_csv(f, convert_options=pacsv.ConvertOptions(
                column_types={"kind": pa.string(), "seq": pa.int64(), "k1": pa.string(), "k2": pa.string(),
                              "leaf": pa.string()}, strings_can_be_null=True, quoted_strings_can_be_null=False))
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


def _batches(con: Any, sql: str, size: int = 200_000):
    """A query's result in Arrow record batches, each as Python column lists (bounded memory)."""
    rdr = con.sql(sql).to_arrow_reader(size)
    for b in rdr:
        yield [b.column(i).to_pylist() for i in range(b.num_columns)]


def _row_leaves(c: _Ctx, con: Any, score_cols: str) -> dict[tuple[int, str], list[bytes]]:
    """The leaves the rows reproduce, by (scan batch, kind): computed with the log's own leaf
    functions, streamed in batches ordered by scan batch. (A key held by several rows is
    counted once; the rows were checked to agree on it.)"""
    import hashlib

    sha = hashlib.sha256
    lt, st_ = ev.link_leaf_text, ev.score_leaf_text
    items: dict[tuple[int, str], list[bytes]] = defaultdict(list)
    shared_links, shared_scores = con.execute(
        "SELECT (SELECT count(*) FROM (SELECT 1 FROM rows GROUP BY doc_id, spec_hash HAVING count(*) > 1)), "
        "(SELECT count(*) FROM (SELECT 1 FROM rows WHERE status IS NOT NULL GROUP BY spec_hash, submitted_sha256 "
        "HAVING count(*) > 1))").fetchall()[0]
    distinct_l = "DISTINCT " if shared_links else ""  # de-duplicating 2M unique rows costs a hash table
    distinct_s = "DISTINCT " if shared_scores else ""
    for dids, hs, subs, qs in _batches(con, f"SELECT {distinct_l}doc_id, spec_hash, submitted_sha256, link_seq FROM "
                                            "rows ORDER BY link_seq"):
        cur, dest = None, None
        for did, h, sub, q in zip(dids, hs, subs, qs):
            if q != cur:  # rows come grouped by their scan batch
                cur, dest = q, items[(q, "link")]
            dest.append(sha(lt(did, h, sub).encode("utf-8")).digest())
    for b in _batches(con, f"SELECT {distinct_s}spec_hash, submitted_sha256, {score_cols} FROM rows "
                           "WHERE status IS NOT NULL ORDER BY score_seq"):
        cur, dest = None, None
        for h, sub, stt, raw, scale, dirn, p, vd, vv, at, hz, q in zip(*b):
            if q != cur:
                cur, dest = q, items[(q, "score")]
            # hazards as published: any other byte form than the logged canonical one fails here
            dest.append(sha(st_(h, sub, stt, raw, scale, dirn, p, vd, vv, at, hz).encode("utf-8")).digest())
    return items


def _check_scores(c: _Ctx, con: Any, n: int, extra: list[tuple], events: list[dict[str, Any]], head_seq: int,
                  corpus: Corpus, proto: Any, results: dict[str, Any]) -> dict[str, Spec] | None:
    """The score rows (table ``rows``) and the corpus (table ``docs``) against the log."""
    import pyarrow as pa

    dets = {d.get("detector"): d for d in results.get("detectors") or [] if isinstance(d, dict)}
    entries = {e.display: e for e in proto.detectors}
    specs: dict[str, Spec] = {}
    for label, e in entries.items():
        d = dets.get(label)
        if d is None:
            c.fail("scores", "a protocol detector is missing from the results", layout.RESULTS, f"detectors[{label}]")
            continue
        s = Spec(kind="detector", name=str(d.get("name")), version=str(d.get("version")),
                 settings=dict(d.get("settings") or {}))
        if s.hash != d.get("spec_hash"):
            c.fail("scores", "detector spec does not hash to its spec_hash", layout.RESULTS,
                   f"detectors[{label}].spec_hash", s.hash, d.get("spec_hash"))
        if s.name != e.name or any(s.settings.get(k) != v for k, v in e.settings.items()):
            c.fail("scores", "the results' detector is not the one the protocol names", layout.RESULTS,
                   f"detectors[{label}]", {"name": e.name, "settings": e.settings},
                   {"name": s.name, "settings": dict(s.settings)})
        specs[label] = s
    # detector columns, duplicates, documents: set checks in SQL
    for label, h, name, ver, sett, k in con.execute(
            "SELECT detector, spec_hash, detector_name, detector_version, detector_settings, count(*) FROM rows "
            "GROUP BY ALL ORDER BY 1").fetchall():
        s = specs.get(label)
        if s is None:
            c.fail("scores", f"{k} rows of a detector the protocol does not list", layout.SCORES_CSV,
                   f"detector {label!r}")
        elif (h, name, ver, sett) != (s.hash, s.name, s.version, canonical_json(dict(s.settings))):
            c.fail("scores", "detector columns differ from the run's detector spec", layout.SCORES_CSV,
                   f"detector {label!r}", [s.hash, s.name, s.version], [h, name, ver])
    for did, label, k in con.execute("SELECT doc_id, detector, count(*) AS k FROM rows GROUP BY ALL HAVING k > 1 "
                                     "ORDER BY 1 LIMIT 5").fetchall():
        c.fail("scores", "document and detector listed more than once (an added row)", layout.SCORES_CSV,
               f"doc {did}, {label}", 1, k)
    for did, label, missing, in_run, differs, want in con.execute(
            "SELECT r.doc_id, r.detector, d.doc_id IS NULL, d.in_run, r.text_differs, "
            "r.submitted_sha256 <> d.text_sha256 FROM rows r LEFT JOIN docs d USING (doc_id) WHERE d.doc_id IS NULL "
            "OR NOT d.in_run OR r.text_differs IS DISTINCT FROM (r.submitted_sha256 <> d.text_sha256) "
            "ORDER BY 1 LIMIT 10").fetchall():
        if missing or not in_run:
            c.fail("scores", "row of a document the run does not select (an added document)", layout.SCORES_CSV,
                   f"doc {did}, {label}")
        else:
            c.fail("scores", "text_differs does not follow from the hashes", layout.SCORES_CSV, f"doc {did}, {label}",
                   want, differs)
    det_map = pa.table({"detector": pa.array(list(specs), pa.string()),
                        "spec_hash": pa.array([s.hash for s in specs.values()], pa.string()),
                        "corpora": pa.array([list(entries[x].corpora) or None for x in specs], pa.list_(pa.string()))})
    con.register("_dets", det_map)
    for label, k in con.execute("SELECT r.detector, count(*) FROM rows r JOIN docs d USING (doc_id) JOIN _dets m "
                                "USING (detector) WHERE m.corpora IS NOT NULL AND NOT list_contains(m.corpora, "
                                "d.corpus) GROUP BY 1").fetchall():
        c.fail("scores", f"{k} rows of documents outside the detector's corpora", layout.SCORES_CSV,
               f"detector {label!r}")
    # keys held by more than one row (rare: a detector listed twice, documents sharing a text) must agree
    for did, _h in con.execute("WITH g AS (SELECT doc_id, spec_hash FROM rows GROUP BY ALL HAVING count(*) > 1) "
                              "SELECT doc_id, spec_hash FROM rows JOIN g USING (doc_id, spec_hash) GROUP BY ALL "
                              "HAVING count(DISTINCT (submitted_sha256, link_seq)) > 1 LIMIT 5").fetchall():
        c.fail("scores", "two rows disagree on one document's link", layout.SCORES_CSV, f"doc {did}")
    score_cols = ("status, raw, scale, direction, ai_probability, verdict, vendor_version, scanned_at, hazards, "
                  "score_seq")
    for _h, sub in con.execute(f"WITH g AS (SELECT spec_hash, submitted_sha256 FROM rows GROUP BY ALL HAVING count(*) > 1) "
                              f"SELECT spec_hash, submitted_sha256 FROM rows JOIN g USING (spec_hash, submitted_sha256) "
                              f"GROUP BY ALL HAVING count(DISTINCT ({score_cols})) FILTER (WHERE status IS NOT NULL) > 1 "
                              f"OR (count(*) FILTER (WHERE status IS NULL) > 0 AND count(*) FILTER (WHERE status IS "
                              f"NOT NULL) > 0) LIMIT 5").fetchall():
        c.fail("scores", "two rows disagree on one score", layout.SCORES_CSV, f"text {sub[:12]}…")

    # the logged items: every scan batch of the run's detectors up to the chain head
    spec_hashes = {s.hash for s in specs.values()}
    batches = {e["seq"]: e for e in events if e["type"] == "scan_batch" and e["seq"] <= head_seq
               and e["payload"].get("spec_hash") in spec_hashes}
    items = _row_leaves(c, con, score_cols)
    ex = pa.table({n_: pa.array([x[i] for x in extra], t) for i, (n_, t) in enumerate(
        zip(layout.LEAF_COLUMNS, (pa.string(), pa.int64(), pa.string(), pa.string(), pa.string())))})
    con.register("_extra", ex)
    try:
        detached = {"score": 0, "link": 0}
        for kind, seq, k1, _k2, leaf in extra:
            if kind == "doc":
                continue  # the corpus check's
            if kind not in ("score", "link") or seq not in batches:
                c.fail("scores", "a leaf of no scan batch of the run's detectors", layout.LEAVES, f"seq {seq}")
                continue
            if k1 is None:
                detached[kind] += 1
            try:
                items[(seq, kind)].append(bytes.fromhex(leaf))
            except (TypeError, ValueError):
                c.fail("scores", "not a hex SHA-256", layout.LEAVES, f"seq {seq}", got=leaf)
        checks = [
            ("SELECT kind, seq, k1 FROM _extra WHERE k1 IS NOT NULL GROUP BY kind, seq, k1, k2 HAVING count(*) > 1 "
             "LIMIT 5",
             "a leaf listed twice", layout.LEAVES),
            ("SELECT 'link', x.seq, x.k1 FROM _extra x JOIN (SELECT DISTINCT doc_id, spec_hash, link_seq FROM rows) r "
             "ON x.kind = 'link' AND x.k1 = r.doc_id AND x.k2 = r.spec_hash AND x.seq = r.link_seq LIMIT 5",
             "a leaf listed both in the rows and in leaves.csv", layout.LEAVES),
            ("SELECT 'score', x.seq, x.k2 FROM _extra x JOIN (SELECT DISTINCT spec_hash, submitted_sha256, score_seq "
             "FROM rows WHERE status IS NOT NULL) r ON x.kind = 'score' AND x.k1 = r.spec_hash AND "
             "x.k2 = r.submitted_sha256 AND x.seq = r.score_seq LIMIT 5",
             "a leaf listed both in the rows and in leaves.csv", layout.LEAVES),
            ("SELECT 'link', x.seq, r.doc_id FROM _extra x JOIN (SELECT DISTINCT doc_id, spec_hash, link_seq FROM rows) "
             "r ON x.kind = 'link' AND x.k1 = r.doc_id AND x.k2 = r.spec_hash AND x.seq > r.link_seq LIMIT 5",
             "a row's link is not the latest the log holds", layout.SCORES_CSV),
            ("SELECT 'score', x.seq, r.submitted_sha256 FROM _extra x JOIN (SELECT DISTINCT spec_hash, "
             "submitted_sha256, score_seq FROM rows WHERE status IS NOT NULL) r ON x.kind = 'score' AND "
             "x.k1 = r.spec_hash AND x.k2 = r.submitted_sha256 AND x.seq > r.score_seq LIMIT 5",
             "a row's score is not the latest the log holds (an older or replaced value)", layout.SCORES_CSV),
            ("SELECT 'score', x.seq, r.doc_id FROM _extra x JOIN rows r ON x.kind = 'score' AND x.k1 = r.spec_hash AND "
             "x.k2 = r.submitted_sha256 WHERE r.status IS NULL LIMIT 5",
             "a row without a score, although the log holds one (a dropped score)", layout.SCORES_CSV),
            ("SELECT 'link', x.seq, x.k1 FROM _extra x JOIN docs d ON d.doc_id = x.k1 JOIN _dets m ON "
             "m.spec_hash = x.k2 WHERE x.kind = 'link' AND d.in_run AND (m.corpora IS NULL OR "
             "list_contains(m.corpora, d.corpus)) LIMIT 5",
             "a logged link of a selected document has no row (a dropped score row)", layout.LEAVES),
        ]
        budget = ev.blanked_budget(e for e in events if e["seq"] <= head_seq)
        for kind, k in detached.items():
            if k > budget[kind]:
                c.fail("scores", f"{k} {kind} fingerprints without their keys, but the log's withdrawals account for "
                                 f"{budget[kind]}", layout.LEAVES)
        for sql, msg, f in checks if extra else ():  # each check pairs a leaves.csv entry with the rows
            for kind, seq, key in con.execute(sql).fetchall():
                c.fail("scores", msg, f, f"{kind} of event {seq}: {str(key)[:40]}")
        seqs = con.execute("SELECT DISTINCT link_seq, 'link' FROM rows UNION SELECT DISTINCT score_seq, 'score' FROM "
                           "rows WHERE status IS NOT NULL").fetchall()
    finally:
        con.unregister("_extra")
        con.unregister("_dets")
    for seq, kind in seqs:
        if seq not in batches:
            c.fail("scores", "a row names a scan batch of another detector or after the run's chain head",
                   layout.SCORES_CSV, f"{kind}_seq {seq}")
    changed = 0
    for seq, e in sorted(batches.items()):
        p = e["payload"]
        for kind in ("score", "link"):
            got = items.get((seq, kind), [])
            if p.get(f"n_{kind}") is None and not got:
                continue
            if len(got) != (p.get(f"n_{kind}") or 0) or ev.items_digest(got) != p.get(f"{kind}_sha256"):
                changed += 1
                if changed <= MAX_LISTED:
                    c.fail("scores", f"scan batch {seq} ({p.get('detector')}): its {kind}s differ from what the log "
                                     f"holds (a {kind} was changed, added or dropped)", layout.SCORES_CSV,
                           f"{kind}s of event {seq}", p.get(f"n_{kind}"), len(got))
    c.ok("scores", f"{n:,} rows; {len(batches)} scan batch(es) of {len(specs)} detector(s) recompute from the rows "
                   f"and {len(extra):,} further leaves")
    return specs


def _check_timing(c: _Ctx, con: Any, events: list[dict[str, Any]], ve: dict[str, Any],
                  results: dict[str, Any]) -> None:
    """Scans after the commitment, or declared: by log order (scan batch before the commit
    event) and by scan date (before the commit time); a score dated after the batch that
    logged it is impossible."""
    import pyarrow as pa

    con.register("_ev", pa.table({"seq": pa.array([e["seq"] for e in events], pa.int64()),
                                  "at": pa.array([e["at"] for e in events], pa.string())}))
    try:
        bad = con.execute("SELECT doc_id, scanned_at FROM rows WHERE status IS NOT NULL AND (scanned_at IS NULL OR NOT "
                          "regexp_full_match(scanned_at, '[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
                          "[.][0-9]{6}Z')) LIMIT 5").fetchall()
        for did, at in bad:
            c.fail("timing", "scan date is not in the log's UTC form", layout.SCORES_CSV, f"doc {did}", got=at)
        late = con.execute("SELECT r.doc_id, r.scanned_at, e.at FROM rows r JOIN _ev e ON e.seq = r.score_seq "
                           "WHERE r.status IS NOT NULL AND r.scanned_at > e.at LIMIT 5").fetchall()
        for did, at, eat in late:
            c.fail("timing", "a score is dated after the scan batch that logged it", layout.SCORES_CSV, f"doc {did}",
                   f"<= {eat}", at)
        tot, logged, dated, either = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE score_seq < $1), count(*) FILTER (WHERE scanned_at < $2), "
            "count(*) FILTER (WHERE score_seq < $1 OR scanned_at < $2) FROM (SELECT DISTINCT doc_id, spec_hash, "
            "score_seq, scanned_at FROM rows WHERE status IS NOT NULL)", [ve["seq"], ve["at"]]).fetchall()[0]
    finally:
        con.unregister("_ev")
    pb = (results.get("run") or {}).get("protocol") or {}
    want = {"scores_total": tot, "scores_logged_before_commit": logged, "scores_dated_before_commit": dated,
            "scores_before_commit": either}
    for k, v in want.items():
        if pb.get(k) != v:
            c.fail("timing", f"the results declare {pb.get(k)} for {k}, the rows and the log give {v} (scans before "
                             "the commitment must be declared)", layout.RESULTS, f"run.protocol.{k}", v, pb.get(k))
    if either:
        c.ok("timing", f"{either:,} of {tot:,} scores predate the commitment of {ve['at']} ({logged:,} logged before "
                       f"it, {dated:,} dated before it); declared in the results and tables: NOT pre-registered",
             status="note")
    else:
        c.ok("timing", f"all {tot:,} scores were logged and dated after the commitment of {ve['at']}")


def _diff(pub: Any, got: Any, path: str, out: list[tuple[str, Any, Any]], limit: int = 50) -> None:
    """Where ``pub`` (published) and ``got`` (re-derived) differ: numbers exactly (full precision)."""

    if len(out) >= limit:
        return
    if isinstance(got, dict) and isinstance(pub, dict):
        for k in dict.fromkeys(list(got) + list(pub)):
            if k not in pub or k not in got:
                out.append((f"{path}.{k}", got.get(k, "<absent>"), pub.get(k, "<absent>")))
            else:
                _diff(pub[k], got[k], f"{path}.{k}", out, limit)
    elif isinstance(got, (list, tuple)) and isinstance(pub, list):
        if len(got) != len(pub):
            out.append((path + " (length)", len(got), len(pub)))
        for i, (a, b) in enumerate(zip(pub, got)):
            _diff(a, b, f"{path}[{i}]", out, limit)
    elif isinstance(got, (int, float)) and not isinstance(got, bool):
        if not same_number(pub, got):
            out.append((path, got, pub))
    elif pub != got:
        out.append((path, got, pub))


def _check_results(c: _Ctx, snap: Any, specs: dict[str, Spec], proto: Any,
                   results: dict[str, Any], run_ev: dict[str, Any]):
    """Re-derive the run from the rows with the evaluation's own code; compare every value."""
    import pyarrow as pa


    if ev.results_digest(results) != (run_ev.get("payload") or {}).get("results_sha256"):
        c.fail("results", "results.json is not what the run logged (its SHA-256 differs from the run event's)",
               layout.RESULTS, expected=(run_ev.get("payload") or {}).get("results_sha256"),
               got=ev.results_digest(results))
    snap.fill_from_bundle("docs", "rows")
    plans = [DetectorPlan(specs[e.display], e.display, e.rule, tuple(e.corpora)) for e in proto.detectors]
    again, darr, arrays = derive(snap, proto, plans, dict(results.get("run") or {}))
    con = snap.con
    ids = darr.doc_id.tolist()
    sides = split_sides(darr, proto)
    dec = decisions(darr, arrays, proto, again)
    id_arr = pa.array(ids, pa.string())
    parts = []
    for p, _a in zip(plans, arrays):
        f = dec[p.label]
        parts.append(pa.table({"detector": pa.array([p.label] * len(ids), pa.string()), "doc_id": id_arr,
                               "flag": pa.array(f.tolist(), pa.bool_())}))
    con.register("_sel_ids", pa.table({"doc_id": id_arr, "side": pa.array(sides.tolist(), pa.string())}))
    con.register("_flags", pa.concat_tables(parts) if parts else pa.table({"detector": pa.array([], pa.string()),
                                                                           "doc_id": pa.array([], pa.string()),
                                                                           "flag": pa.array([], pa.bool_())}))
    try:
        for did, sel in con.execute("SELECT d.doc_id, s.doc_id IS NOT NULL FROM docs d LEFT JOIN _sel_ids s USING "
                                    "(doc_id) WHERE d.in_run IS DISTINCT FROM (s.doc_id IS NOT NULL) LIMIT 5").fetchall():
            c.fail("corpus", "in_run differs from the protocol's selection", layout.CORPUS, f"doc {did}", sel, not sel)
        moved = con.execute("SELECT count(*) FROM rows r JOIN _sel_ids s USING (doc_id) WHERE r.split IS DISTINCT "
                            "FROM s.side").fetchall()[0][0]
        for did, want, got in con.execute("SELECT r.doc_id, s.side, r.split FROM rows r JOIN _sel_ids s USING (doc_id) "
                                          "WHERE r.split IS DISTINCT FROM s.side ORDER BY 1 LIMIT 5").fetchall():
            c.fail("split", "split side differs from the protocol's rule (a moved split assignment)",
                   layout.SCORES_CSV, f"doc {did}", want, got)
        wrong = con.execute("SELECT count(*) FROM rows r JOIN _flags f USING (detector, doc_id) WHERE r.flag IS "
                            "DISTINCT FROM f.flag").fetchall()[0][0]
        for did, label, want, got in con.execute(
                "SELECT r.doc_id, r.detector, f.flag, r.flag FROM rows r JOIN _flags f USING (detector, doc_id) "
                "WHERE r.flag IS DISTINCT FROM f.flag ORDER BY 1 LIMIT 5").fetchall():
            c.fail("results", "flag differs from the decision rule applied to the score", layout.SCORES_CSV,
                   f"doc {did}, {label}", want, got)
    finally:
        con.unregister("_sel_ids")
        con.unregister("_flags")
    if not moved:
        n_cal = int((sides == "calibration").sum())
        c.ok("split", f"rule {proto.split_rule!r}: {n_cal:,} calibration and {len(sides) - n_cal:,} test documents "
                      "re-derived" if proto.split_rule == "hash" else "no split declared; every document evaluated")
    stored = {k: v for k, v in results.items() if k != "files"}
    diffs: list[tuple[str, Any, Any]] = []
    _diff(stored, again, "results", diffs)
    for p, got, pub in diffs:
        c.fail("results", "published value differs from the one re-derived from scores.csv", layout.RESULTS, p, got, pub)
    if not diffs and not wrong:
        c.ok("results", f"every value of results.json re-derived from the score rows ({len(plans)} detectors, "
                        f"{len(ids):,} documents)")
    return again


def _check_tables(c: _Ctx, again: dict[str, Any], results: dict[str, Any], m: dict[str, Any]) -> None:

    with tempfile.TemporaryDirectory(prefix="veribench-verify-") as d:
        write_outputs(again, Path(d))  # the same writer as the run's: every table
        # (results.json itself is compared value by value above: its key order is not a number)
        want = {n: (Path(d) / n).read_bytes() for n in layout.TABLE_FILES}
    want[layout.README] = readme(again, str(m.get("protocol_file"))).encode("utf-8")
    bad = 0
    for n, data in want.items():
        check = "tables"
        got = c.bytes(n, check)
        if got is None:
            continue
        if got != data:
            bad += 1
            gl, wl = got.decode("utf-8", "replace").splitlines(), data.decode("utf-8", "replace").splitlines()
            k = next((i for i in range(min(len(gl), len(wl))) if gl[i] != wl[i]), min(len(gl), len(wl)))
            g_, w_ = (gl[k] if k < len(gl) else "<end>"), (wl[k] if k < len(wl) else "<end>")
            cell = ""
            if "|" in g_ and "|" in w_:
                gc, wc = g_.split("|"), w_.split("|")
                j = next((i for i in range(min(len(gc), len(wc))) if gc[i] != wc[i]), None)
                if j is not None:
                    cell = f", column {j}"
                    g_, w_ = gc[j].strip(), wc[j].strip()
            c.fail(check, "differs from the file re-derived from scores.csv (compared at its printed rounding)",
                   n, f"line {k + 1}{cell}", w_, g_)
    if not bad:
        names = sorted(want)
        c.ok("tables", f"{len(names)} files ({', '.join(names)}) equal the ones re-derived, byte for byte")


def _check_timestamps(c: _Ctx, events: list[dict[str, Any]], mine: list[dict[str, Any]],
                      tsa_roots: Sequence[Any]) -> None:

    n = 0
    for e in mine:
        k = e["payload"].get("version")
        sha = e["payload"]["protocol_sha256"]
        stamps = [x for x in events if x["type"] == "timestamp" and x["payload"].get("protocol_sha256") == sha]
        rel = f"commitments/v{k}.tsr"
        if not c.has(rel):
            if stamps:
                c.fail("timestamp", "the log records a timestamp token that the bundle lacks", rel)
            continue
        token = c.bytes(rel, "timestamp")
        rec = c.bytes(f"commitments/v{k}.json", "timestamp")
        if token is None or rec is None:
            continue
        roots = list(tsa_roots)
        anchor = "--tsa-root"
        if not roots and c.has(f"commitments/v{k}.roots.pem"):
            pem = c.bytes(f"commitments/v{k}.roots.pem", "timestamp")
            try:
                roots = tsa.load_certificates(pem or b"", f"commitments/v{k}.roots.pem")
                anchor = "the bundle's authority certificate"
            except tsa.TimestampError as ex:
                c.fail("timestamp", str(ex), f"commitments/v{k}.roots.pem")
                continue
        try:
            info = tsa.check_token(token, rec, roots=roots, require_signature=True)
        except tsa.TimestampError as ex:
            c.fail("timestamp", str(ex), rel)
            continue
        n += 1
        st = next((x for x in stamps if x["payload"].get("token_sha256") == sha256_bytes(token)), None)
        if st is None:
            c.fail("timestamp", "no timestamp event of the log records this token", rel)
            continue
        if st["payload"].get("gen_time") != info.gen_time:
            c.fail("timestamp", "the token's time differs from the one logged", rel, "gen_time",
                   st["payload"].get("gen_time"), info.gen_time)
        g = tsa.gen_time(info)
        skew = timedelta(seconds=CLOCK_SKEW_S)
        if g + skew < ev.parse_utc(e["at"]):
            c.fail("timestamp", "the token predates the commit event it stamps (the log's time was moved)", rel,
                   "gen_time", f">= {e['at']}", info.gen_time)
        if ev.parse_utc(st["at"]) + skew < g:
            c.fail("timestamp", "the log records the token before the authority issued it (events backdated)",
                   layout.EVENTS, f"event {st['seq']}", f">= {info.gen_time}", st["at"])
        c.r.notes.append(f"version {k} is timestamped by {info.signer or 'the authority'} at {info.gen_time} "
                         f"(anchor: {anchor}, sha256 {info.anchor_sha256[0][:16] if info.anchor_sha256 else '-'}…)")
    if n:
        c.ok("timestamp", f"{n} RFC 3161 token(s) stamp their commitment records exactly and verify")
    else:
        c.ok("timestamp", "no timestamp token in this bundle (the commitment rests on the event log)", status="none")


# -- entry point -----------------------------------------------------------------------------

def verify_bundle(path: str | Path, *, tsa_roots: Sequence[Any] = (), max_file_bytes: int | None = None,
                  max_data_bytes: int | None = None) -> BundleReport:
    """Run every check on one detector-run bundle folder; never executes bundle content."""
    root = Path(path)
    rep = BundleReport(path=str(root))
    c = _Ctx(root, rep, max_file_bytes or reader.MAX_FILE_BYTES, max_data_bytes or reader.MAX_DATA_BYTES)
    try:
        listing = reader.scan(root, max_depth=1)
    except ReadError as e:
        c.fail("reader", e.message, e.file)
        return rep
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
    m = _check_manifest(c, listing)
    if m is None:
        return rep
    rep.tag, rep.run_id = m.get("tag"), m.get("run_id")
    results = c.json(layout.RESULTS, "results")
    events = _read_events(c)
    if not isinstance(results, dict) or events is None or not events:
        if isinstance(results, list) or results is None:
            c.fail("results", "results.json is not a run's results", layout.RESULTS)
        return rep
    run_ev = _check_chain(c, events, m)
    if run_ev is None:
        return rep
    got = _check_commitment(c, events, run_ev, m, results)
    if got is None:
        return rep
    proto, ve, mine = got
    _check_amendments(c, events, ve, mine, results)
    _check_timestamps(c, events, mine, tsa_roots)
    if proto is None:
        return rep
    head_seq = int(((results.get("run") or {}).get("chain_head") or {}).get("seq") or 0)

    keep = needs_texts([Spec("detector", str(d.get("name")), str(d.get("version")), dict(d.get("settings") or {}))
                        for d in results.get("detectors") or [] if isinstance(d, dict)])
    extra = _read_leaves(c)
    if extra is None:
        return rep
    corpus = _check_corpus(c, events, head_seq, proto, extra, keep_texts=keep)
    table = _read_scores(c)
    if corpus is None or table is None:
        return rep

    snap = Snapshot()
    try:
        snap.con.register("rows", table)
        snap.con.register("docs", corpus.table)
        rep.counts = {"documents": corpus.n_selected, "score_rows": table.num_rows}
        specs = _check_scores(c, snap.con, table.num_rows, extra, events, head_seq, corpus, proto, results)
        _check_timing(c, snap.con, events, ve, results)
        if specs is None or len(specs) != len(proto.detectors):
            return rep
        again = _check_results(c, snap, specs, proto, results, run_ev)
    finally:
        snap.close()
    _check_tables(c, again, results, m)
    return rep
