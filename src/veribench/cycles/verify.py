"""``veribench verify``: prove a cycle bundle's prompts and leaderboard, natively in Python.

Checks, in order (each failure names the check, file, field, expected and got):

1. ``commit``: ``sha256(nonce bytes) == commit.json.committed_hash``; the cycle name
   agrees across ``commit.json``, ``cycle.json`` and ``leaderboard.json``; for
   veribench bundles, the committed hashes of templates, banks and algorithm.
2. ``selection``: the placeholders re-derived from nonce, templates and banks with the
   recognised selection algorithm (JavaScript semantics) equal ``prompts.json`` and
   ``leaderboard.json.placeholders_used``, in both directions.
3. ``prompts``: the substituted text equals ``prompts.json`` ``resolved`` exactly.
4. ``manifest``: every listed file matches its SHA-256 over raw bytes; unknown names,
   names with path separators or ``..`` fail; required files present and parsable.
5. ``replay``: the leaderboard re-computed from the raw files with the recognised
   scoring rules matches the published one at its published precision (2 decimals for
   composite and score_delta, 4 for the rest), exactly - a +1 in the last printed
   digit fails - in both directions:
   sub-scores, detector and category breakdowns, penalties, counts, confidence,
   ranks. Unavailable humanizers never enter the replay, and their listing must be
   supported by the data (at least half of the attempts are access failures). When
   consecutive cycles are verified together, ``rank_change`` is checked too.
6. ``provenance``: each sample's prompt is a committed prompt (same category); each
   test fed its humanizer the published sample text verbatim.
7. ``completeness``: ranked humanizers faced every sample; unique test ids; each
   complete test scored by every declared detector. Where the bundle's own
   methodology does not require it (HumanizerBench's), a gap is a warning, a failure
   under ``strict``; veribench bundles require it.

``algorithm`` failures ("cannot verify: unknown scoring algorithm") mean a frozen
file is not recognised (it must equal a known text byte for byte outside its constant
holes); it is never executed. ``reader`` failures name a file the hardened reader
(:mod:`veribench.bundles.reader`) refused: a symbolic link or special file, a file over
the size cap, JSON nested beyond the depth cap.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from veribench.bundles.findings import Finding
from veribench.bundles.jscompat import js_math_round
from veribench.bundles.reader import ReadError, published_rounding_matches, reference_trim
from veribench.cycles.bundle import (
    ALLOWED_MANIFEST_NAMES,
    MANIFEST_FILES,
    META_FILES,
    REQUIRED_FILES,
    Bundle,
    BundleFileError,
    candidates,
    is_cycle_dir,
    shown_name,
)
from veribench.cycles.scoring import SUB_SCORES, compute_leaderboard, recognise_scoring
from veribench.cycles.selection import UnknownAlgorithm, recognise_selection, resolve_prompts
from veribench.hashing import sha256_bytes

#: Failure codes that count as access failures (HumanizerBench methodology,
#: "Unavailable tools are excluded": site down, paywall, captcha, no output
#: generated, or a ToS block), plus veribench's own humanizer status codes.
ACCESS_FAILURE_CODES = frozenset({
    "site_down", "paywall", "captcha", "no_output", "no_output_generated", "tos_block", "access_failure",
    "auth", "no_credits", "rate_limited", "timeout"})
#: Rounding of each published value (``shared/reference/datasets.md``).
DECIMALS_COMPOSITE = 2
DECIMALS_OTHER = 4
_HEX64 = re.compile(r"[0-9a-f]{64}")
_ABSENT = "<absent>"  # a leaderboard entry without rank_change (veribench's own)


@dataclass
class CycleReport:
    """The outcome for one cycle folder."""

    path: str
    cycle: str
    prompts_verified: int = 0
    humanizers_replayed: int = 0
    failures: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    algorithms: dict[str, Any] = field(default_factory=dict)
    #: for the cross-cycle rank_change check: commit started_at and {slug: (rank, rank_change)}
    started_at: str | None = field(default=None, repr=False)
    ranks: dict[str, tuple[Any, Any]] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return not self.failures

    def lines(self) -> list[str]:
        """``[ok] <cycle>: ...`` or ``[FAIL] <cycle>: <check>: ...`` then further failures indented."""
        if self.ok:
            s = (f"[ok] {self.cycle}: {self.prompts_verified} prompts verified, "
                 f"{self.humanizers_replayed} humanizers replayed")
            if self.warnings:
                s += f" ({len(self.warnings)} warning{'s' if len(self.warnings) > 1 else ''}: " + "; ".join(
                    w.line() for w in self.warnings) + ")"
            return [s]
        out = [f"[FAIL] {self.cycle}: {self.failures[0].line()}"]
        out += [f"    {f.line()}" for f in self.failures[1:]]
        out += [f"    warning: {w.line()}" for w in self.warnings]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"cycle": self.cycle, "path": self.path, "ok": self.ok, "prompts_verified": self.prompts_verified,
                "humanizers_replayed": self.humanizers_replayed,
                "failures": [asdict(f) for f in self.failures], "warnings": [asdict(w) for w in self.warnings],
                "algorithms": self.algorithms}


class _Ctx:
    def __init__(self, bundle: Bundle, report: CycleReport, strict: bool):
        self.b, self.r, self.strict = bundle, report, strict
        self.requires_completeness = bundle.is_veribench

    def fail(self, check: str, message: str, file: str | None = None, field: str | None = None,
             expected: Any = None, got: Any = None) -> None:
        self.r.failures.append(Finding(check, message, file, field, expected, got))

    def gap(self, check: str, message: str, file: str | None = None, field: str | None = None,
            expected: Any = None, got: Any = None) -> None:
        """A gap the bundle's methodology may not require: warning, or failure when required/strict."""
        if self.strict or self.requires_completeness:
            self.fail(check, message, file, field, expected, got)
        else:
            self.r.warnings.append(Finding(check, message, file, field, expected, got, "warning"))

    def warn(self, check: str, message: str, file: str | None = None, field: str | None = None) -> None:
        if self.strict:
            self.fail(check, message, file, field)
        else:
            self.r.warnings.append(Finding(check, message, file, field, severity="warning"))

    def json(self, name: str) -> Any:
        """Parsed file, or None after recording the failure (missing / unparsable / JSON
        ``null``: no bundle file may be null, so None always means a recorded failure)."""
        try:
            v = self.b.json(name)
        except BundleFileError as e:
            v, msg = None, e.message
        else:
            if v is not None:
                return v
            msg = "holds JSON null where its content is expected"
        key = ("manifest", name, msg)
        if not any((f.check, f.file, f.message) == key for f in self.r.failures):
            self.fail("manifest", msg, name)
        return None


# -- shape checks: clear errors before any arithmetic ---------------------------------------

def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _shape(c: _Ctx, name: str, data: Any, kind: type, fields: Mapping[str, Any]) -> bool:
    """Check ``data`` is a ``kind`` (list of records / dict) whose records have ``fields``.

    ``fields``: name -> predicate (True when the value is acceptable).
    """
    if not isinstance(data, list):
        c.fail("manifest", "expected a JSON array of records", name, got=type(data).__name__)
        return False
    ok = True
    for i, rec in enumerate(data):
        if not isinstance(rec, dict):
            c.fail("manifest", "record is not an object", name, f"[{i}]")
            return False
        for f, pred in fields.items():
            if not pred(rec.get(f)):
                c.fail("manifest", "missing or invalid value", name, f"[{i}].{f}", got=rec.get(f))
                ok = False
                if sum(1 for x in c.r.failures if x.file == name) > 5:
                    return False
    return ok


_str = lambda v: isinstance(v, str)  # noqa: E731
_nstr = lambda v: v is None or isinstance(v, str)  # noqa: E731
_nnum = lambda v: v is None or _is_num(v)  # noqa: E731
_score = lambda v: _is_num(v) and 0 <= v <= 1  # noqa: E731


# -- the checks ------------------------------------------------------------------------------

def _check_manifest(c: _Ctx) -> None:
    b = c.b
    for n in REQUIRED_FILES:
        if not b.has(n) and n not in b.refused:
            c.fail("manifest", "required file missing", n)
    cyc = c.json("cycle.json") if b.has("cycle.json") else None
    if cyc is None:
        return
    files = cyc.get("files") if isinstance(cyc, dict) else None
    if not isinstance(files, dict):
        c.fail("manifest", "no files manifest", "cycle.json", "files")
        return
    for name, digest in files.items():
        if ("/" in name or "\\" in name or ".." in name or name.startswith(".") or "\x00" in name
                or name in META_FILES):
            c.fail("manifest", "unsafe or reserved file name in manifest", "cycle.json", f"files[{name!r}]")
            continue
        if name not in ALLOWED_MANIFEST_NAMES:
            c.fail("manifest", "unknown file name in manifest", "cycle.json", f"files[{name!r}]")
            continue
        if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
            c.fail("manifest", "not a lowercase hex SHA-256", "cycle.json", f"files[{name!r}]", got=digest)
            continue
        if not b.has(name):
            if name not in b.refused:
                c.fail("manifest", "listed file missing", name)
            continue
        got = b.sha256(name)
        if got != digest:
            c.fail("manifest", "SHA-256 of raw bytes differs from the manifest", name, expected=digest, got=got)
    for n in MANIFEST_FILES:
        if n not in files and b.has(n):
            c.fail("manifest", "required file not covered by the manifest", "cycle.json", f"files[{n!r}]")
    for n in b.raw:
        if n not in files and n not in META_FILES:
            c.fail("manifest", "file present but not covered by the manifest", "cycle.json", f"files[{n!r}]")
    for n in b.extra:
        c.warn("manifest", "file in the cycle folder is not part of the bundle", n)


def _nonce(c: _Ctx) -> tuple[bytes, str] | None:
    """The revealed nonce as the reference implementation reads it: the file's UTF-8 text
    trimmed with JavaScript's ``String.prototype.trim`` whitespace set."""
    if not c.b.has("nonce.txt"):
        return None
    try:
        text = reference_trim(c.b.raw["nonce.txt"].decode("utf-8"))
    except UnicodeDecodeError:
        c.fail("commit", "nonce is not UTF-8", "nonce.txt")
        return None
    return text.encode("utf-8"), text


def _check_commit(c: _Ctx) -> None:
    if not c.b.has("commit.json"):  # commit-reveal rests on it: without it nothing is verified
        c.fail("commit", "required file missing: the cycle's commitment", "commit.json")
        return
    commit = c.json("commit.json")
    if not isinstance(commit, dict):
        if commit is not None:
            c.fail("commit", "expected an object", "commit.json")
        return
    nonce = _nonce(c)
    committed = commit.get("committed_hash")
    if nonce is not None:
        got = sha256_bytes(nonce[0])
        if not isinstance(committed, str) or got != committed.lower():
            c.fail("commit", "sha256(nonce) differs from the committed hash", "nonce.txt",
                   expected=committed, got=got)
    names = {"commit.json": commit.get("cycle")}
    for f in ("cycle.json", "leaderboard.json"):
        d = c.json(f) if c.b.has(f) else None
        if isinstance(d, dict):
            names[f] = d.get("cycle")
    if not isinstance(names["commit.json"], str) or not names["commit.json"]:
        c.fail("commit", "no cycle name", "commit.json", "cycle")
    for f, n in names.items():
        if n != names["commit.json"]:
            c.fail("commit", "cycle name differs from commit.json", f, "cycle", names["commit.json"], n)
    # veribench commitments also bind the frozen inputs of the selection.
    for key, f in (("templates_sha256", "templates.json"), ("banks_sha256", "banks.json"),
                   ("selection_sha256", "select-placeholders.js")):
        if key in commit and c.b.has(f) and commit[key] != c.b.sha256(f):
            c.fail("commit", f"{f} differs from the file committed at cycle start", f,
                   expected=commit[key], got=c.b.sha256(f))


def _check_prompts(c: _Ctx) -> list[dict[str, Any]] | None:
    b = c.b
    templates, banks, prompts = (c.json(n) if b.has(n) else None
                                 for n in ("templates.json", "banks.json", "prompts.json"))
    nonce = _nonce(c)
    if b.has("select-placeholders.js"):
        try:
            alg = recognise_selection(b.raw["select-placeholders.js"])
            c.r.algorithms["selection"] = asdict(alg)
        except UnknownAlgorithm as e:
            c.fail("algorithm", str(e), "select-placeholders.js")
            return None
    if templates is None or banks is None or prompts is None or nonce is None:
        return None
    if not _shape(c, "templates.json", templates, list, {"slug": _str, "category": _str, "prompt_text": _str}):
        return None
    if not isinstance(banks, dict) or not all(
            isinstance(v, list) and all(isinstance(x, str) for x in v) for v in banks.values()):
        c.fail("manifest", "banks must map each token to an array of strings", "banks.json")
        return None
    if not _shape(c, "prompts.json", prompts, list, {"slug": _str, "resolved": _str,
                                                    "placeholders": lambda v: isinstance(v, dict)}):
        return None
    derived = resolve_prompts(nonce[1], templates, banks)
    by_slug = {p["slug"]: (i, p) for i, p in enumerate(prompts)}
    dslugs = {d["slug"] for d in derived}
    if len(by_slug) != len(prompts):
        c.fail("prompts", "duplicate prompt slug", "prompts.json")
    for s in by_slug:
        if s not in dslugs:
            c.fail("prompts", "published prompt has no template", "prompts.json", f"[{by_slug[s][0]}].slug", got=s)
    for d in derived:
        if d["slug"] not in by_slug:
            c.fail("prompts", "template has no published prompt", "prompts.json", expected=d["slug"], got=None)
            continue
        i, p = by_slug[d["slug"]]
        for f in ("category", "template"):
            if f in p and p[f] != d[f]:
                c.fail("prompts", "differs from templates.json", "prompts.json", f"[{i}].{f}", d[f], p[f])
        pv, dv = p["placeholders"], d["placeholders"]
        for k in dict.fromkeys(list(dv) + list(pv)):
            if pv.get(k) != dv.get(k):
                c.fail("selection", "re-derived placeholder differs", "prompts.json", f"[{i}].placeholders.{k}",
                       dv.get(k), pv.get(k))
        if p["resolved"].encode("utf-8", "surrogatepass") != d["resolved"].encode("utf-8", "surrogatepass"):
            c.fail("prompts", "resolved text differs from the re-derived prompt", "prompts.json", f"[{i}].resolved",
                   d["resolved"], p["resolved"])
    lb = c.json("leaderboard.json") if b.has("leaderboard.json") else None
    if isinstance(lb, dict) and "placeholders_used" in lb:
        used = lb["placeholders_used"] if isinstance(lb["placeholders_used"], dict) else {}
        dused = {d["slug"]: d["placeholders"] for d in derived if d["placeholders"]}
        for s in dict.fromkeys(list(dused) + list(used)):
            if used.get(s) != dused.get(s):
                c.fail("selection", "placeholders_used differs from the re-derived selection", "leaderboard.json",
                       f"placeholders_used.{s}", dused.get(s), used.get(s))
    commit = c.json("commit.json") if b.has("commit.json") else None
    if isinstance(lb, dict) and isinstance(commit, dict) and "prompt_set_version" in lb \
            and lb.get("prompt_set_version") != commit.get("prompt_set_version"):
        c.fail("commit", "prompt_set_version differs from commit.json", "leaderboard.json", "prompt_set_version",
               commit.get("prompt_set_version"), lb.get("prompt_set_version"))
    c.r.prompts_verified = len(derived)
    return derived


def _load_data(c: _Ctx) -> tuple[list, list, list] | None:
    b = c.b
    samples, tests, dets = (c.json(n) if b.has(n) else None for n in ("samples.json", "tests.json",
                                                                        "detector-scores.json"))
    if samples is None or tests is None or dets is None:
        return None
    ok = _shape(c, "samples.json", samples, list, {"id": _str, "prompt_slug": _str, "category": _nstr,
                                                  "input_text": _str})
    ok &= _shape(c, "tests.json", tests, list, {
        "id": _str, "sample_id": _str, "humanizer_slug": _str, "status": _str, "input_text": _str,
        "output_text": _nstr, "meaning_preservation": _nnum, "readability": _nnum,
        "failure_reason_code": _nstr})
    ok &= _shape(c, "detector-scores.json", dets, list, {"test_id": _str, "detector_slug": _str,
                                                         "raw_score": _score})
    return (samples, tests, dets) if ok else None


def _cmp(c: _Ctx, published: Any, replayed: float, digits: int, fld: str) -> None:
    """Published value against the replay rounded to the published ``digits``, exactly."""
    if not published_rounding_matches(published, replayed, digits):
        c.fail("replay", "published value differs from the replayed one", "leaderboard.json", fld,
               expected=js_math_round(replayed, digits), got=published)


def _check_replay(c: _Ctx, data: tuple[list, list, list]) -> None:
    b = c.b
    samples, tests, dets = data
    lb = c.json("leaderboard.json") if b.has("leaderboard.json") else None
    if not b.has("scoring.js"):
        return
    try:
        rules = recognise_scoring(b.raw["scoring.js"])
    except UnknownAlgorithm as e:
        c.fail("algorithm", str(e), "scoring.js")
        return
    c.r.algorithms["scoring"] = rules.to_dict()
    if b.has("scoring-spec.json"):
        spec = c.json("scoring-spec.json")
        if isinstance(spec, dict) and isinstance(spec.get("rules"), dict):
            mine = {k: v for k, v in rules.to_dict().items() if k not in ("source", "family")}
            theirs = {k: v for k, v in spec["rules"].items() if k not in ("source", "family")}
            if mine != theirs:
                c.fail("algorithm", "scoring-spec.json rules differ from scoring.js constants", "scoring-spec.json",
                       "rules", mine, theirs)
    if not isinstance(lb, dict) or not isinstance(lb.get("humanizers"), list):
        if lb is not None:
            c.fail("manifest", "expected an object with a humanizers array", "leaderboard.json", "humanizers")
        return
    unavailable = lb.get("unavailable_humanizers") or []
    if not isinstance(unavailable, list) or not all(isinstance(u, dict) and _str(u.get("slug")) for u in unavailable):
        c.fail("manifest", "unavailable_humanizers must be an array of objects with a slug", "leaderboard.json",
               "unavailable_humanizers")
        return
    _check_unavailable(c, tests, unavailable)
    excluded = {u["slug"] for u in unavailable}
    replay = compute_leaderboard(samples, tests, dets, rules, exclude=excluded)
    c.r.humanizers_replayed = len(replay)
    pub = lb["humanizers"]
    if not all(isinstance(h, dict) and _str(h.get("slug")) for h in pub):
        c.fail("manifest", "every humanizer needs a slug", "leaderboard.json", "humanizers")
        return
    pub_by = {h["slug"]: h for h in pub}
    rep_by = {h["slug"]: h for h in replay}
    if len(pub_by) != len(pub):
        dup = [s for s, n in Counter(h["slug"] for h in pub).items() if n > 1]
        c.fail("replay", "humanizer ranked twice", "leaderboard.json", "humanizers", got=dup)
    for s in pub_by:
        if s in excluded:
            c.fail("replay", "humanizer is both ranked and unavailable", "leaderboard.json", f"humanizers[{s}]")
        elif s not in rep_by:
            c.fail("replay", "ranked humanizer has no complete test in tests.json", "leaderboard.json",
                   f"humanizers[{s}]", expected=None, got=s)
    for s in rep_by:
        if s not in pub_by:
            c.fail("replay", "humanizer with complete tests is missing from the ranking", "leaderboard.json",
                   "humanizers", expected=s, got=None)
    if "cycle_sample_count" in lb and lb["cycle_sample_count"] != len(samples):
        c.fail("replay", "differs from samples.json", "leaderboard.json", "cycle_sample_count", len(samples),
               lb["cycle_sample_count"])
    # rank order: published order and rank numbers follow the replay's order.
    rep_order = [h["slug"] for h in replay if h["slug"] in pub_by]
    pub_order = [h["slug"] for h in pub if h["slug"] in rep_by]
    if rep_order != pub_order:
        c.fail("replay", "rank order differs from the replay", "leaderboard.json", "humanizers", rep_order, pub_order)
    for i, h in enumerate(pub):
        if "rank" in h and h["rank"] != i + 1:
            c.fail("replay", "rank is not the position in the ranking", "leaderboard.json",
                   f"humanizers[{h['slug']}].rank", i + 1, h["rank"])
    for slug, r in rep_by.items():
        p = pub_by.get(slug)
        if p is None:
            continue
        f0 = f"humanizers[{slug}]"
        sc = p.get("scores") if isinstance(p.get("scores"), dict) else {}
        _cmp(c, sc.get("composite"), r["composite"], DECIMALS_COMPOSITE, f"{f0}.scores.composite")
        for k in SUB_SCORES:
            _cmp(c, sc.get(k), r[k], DECIMALS_OTHER, f"{f0}.scores.{k}")
        for bd in ("detector_breakdown", "category_breakdown"):
            pb = p.get(bd) if isinstance(p.get(bd), dict) else {}
            for k in pb:
                if k not in r[bd]:
                    c.fail("replay", "published key absent from the replay", "leaderboard.json", f"{f0}.{bd}.{k}",
                           None, pb[k])
            for k, v in r[bd].items():
                if k not in pb:
                    c.fail("replay", "replayed key absent from the published breakdown", "leaderboard.json",
                           f"{f0}.{bd}.{k}", js_math_round(v, DECIMALS_OTHER), None)
                else:
                    _cmp(c, pb[k], v, DECIMALS_OTHER, f"{f0}.{bd}.{k}")
        pp = p.get("penalties_applied") if isinstance(p.get("penalties_applied"), list) else []
        ppc = {x.get("code"): x for x in pp if isinstance(x, dict)}
        rpc = {x["code"]: x for x in r["penalties_applied"]}
        for code in dict.fromkeys(list(rpc) + list(ppc)):
            fld = f"{f0}.penalties_applied.{code}"
            if code not in ppc or code not in rpc:
                c.fail("replay", "penalty present on one side only", "leaderboard.json", fld,
                       rpc.get(code), ppc.get(code))
                continue
            if ppc[code].get("count") != rpc[code]["count"]:
                c.fail("replay", "penalty count differs", "leaderboard.json", fld + ".count", rpc[code]["count"],
                       ppc[code].get("count"))
            _cmp(c, ppc[code].get("score_delta"), rpc[code]["score_delta"], DECIMALS_COMPOSITE, fld + ".score_delta")
        for k in ("successful_test_count", "flagged_test_count", "sample_count", "confidence"):
            if k in p and p[k] != r[k]:
                c.fail("replay", "differs from the replay", "leaderboard.json", f"{f0}.{k}", r[k], p[k])
            elif k not in p:
                c.fail("replay", "missing", "leaderboard.json", f"{f0}.{k}", r[k], None)


def _all_test_rows(c: _Ctx, tests: list) -> list:
    rows = list(tests)
    if c.b.has("unavailable-tests.json"):
        extra = c.json("unavailable-tests.json")
        if isinstance(extra, list):
            rows += [t for t in extra if isinstance(t, dict)]
    return rows


def _check_unavailable(c: _Ctx, tests: list, unavailable: list) -> None:
    rows = _all_test_rows(c, tests)
    by_h: dict[str, list] = {}
    for t in rows:
        by_h.setdefault(t.get("humanizer_slug"), []).append(t)
    listed = set()
    for i, u in enumerate(unavailable):
        s = u["slug"]
        listed.add(s)
        fld = f"unavailable_humanizers[{i}]"
        ht = by_h.get(s, [])
        if not ht:
            c.gap("completeness", f"the attempts behind unavailable humanizer {s!r} are not published; "
                            "the listing cannot be checked", "leaderboard.json", fld)
            continue
        access = sum(1 for t in ht if t.get("failure_reason_code") in ACCESS_FAILURE_CODES)
        complete = sum(1 for t in ht if t.get("status") == "complete")
        if 2 * access < len(ht):
            c.fail("replay", f"humanizer {s!r} is listed unavailable but only {access} of its {len(ht)} attempts "
                             f"are access failures ({complete} complete); the rule needs at least half",
                   "leaderboard.json", fld)
        for k, v in (("attempted_test_count", len(ht)), ("unavailable_test_count", access),
                     ("successful_test_count", complete)):
            if k in u and u[k] != v:
                c.fail("replay", "attempt count differs from the test rows", "leaderboard.json", f"{fld}.{k}", v, u[k])
    for s, ht in by_h.items():
        if s in listed or not ht:
            continue
        access = sum(1 for t in ht if t.get("failure_reason_code") in ACCESS_FAILURE_CODES)
        if 2 * access >= len(ht) and access:
            c.fail("replay", f"humanizer {s!r} has {access} access failures in {len(ht)} attempts but is not listed "
                             "unavailable", "leaderboard.json", "unavailable_humanizers")


def _check_provenance(c: _Ctx, data: tuple[list, list, list], derived: list | None) -> None:
    samples, tests, _ = data
    prompts = {d["slug"]: d for d in derived} if derived is not None else None
    if prompts is None:
        pj = c.json("prompts.json") if c.b.has("prompts.json") else None
        if isinstance(pj, list):
            prompts = {p.get("slug"): p for p in pj if isinstance(p, dict)}
    sample_by = {}
    for i, s in enumerate(samples):
        if s["id"] in sample_by:
            c.fail("provenance", "duplicate sample id", "samples.json", f"[{i}].id", got=s["id"])
        sample_by[s["id"]] = s
        if prompts is not None:
            p = prompts.get(s["prompt_slug"])
            if p is None:
                c.fail("provenance", "sample comes from no committed prompt", "samples.json", f"[{i}].prompt_slug",
                       got=s["prompt_slug"])
            elif s.get("category") != p.get("category"):
                c.fail("provenance", "sample category differs from its prompt's", "samples.json", f"[{i}].category",
                       p.get("category"), s.get("category"))
    for i, t in enumerate(_all_test_rows(c, tests)):
        fname = "tests.json" if i < len(tests) else "unavailable-tests.json"
        j = i if i < len(tests) else i - len(tests)
        s = sample_by.get(t.get("sample_id"))
        if s is None:
            c.fail("provenance", "test refers to no published sample", fname, f"[{j}].sample_id", got=t.get("sample_id"))
        elif not isinstance(t.get("input_text"), str) or \
                t["input_text"].encode("utf-8", "surrogatepass") != s["input_text"].encode("utf-8", "surrogatepass"):
            c.fail("provenance", "the humanizer was not fed the published sample verbatim", fname,
                   f"[{j}].input_text (test {t.get('id')})")


def _check_completeness(c: _Ctx, data: tuple[list, list, list]) -> None:
    samples, tests, dets = data
    ids = Counter(t["id"] for t in tests)
    for tid, n in ids.items():
        if n > 1:
            c.fail("completeness", f"test id used {n} times", "tests.json", "id", got=tid)
    known = set(ids)
    pairs = Counter((d["test_id"], d["detector_slug"]) for d in dets)
    for (tid, det), n in pairs.items():
        if n > 1:
            c.fail("completeness", f"{n} scores for one test and detector", "detector-scores.json",
                   f"test {tid}, detector {det}")
    for i, d in enumerate(dets):
        if d["test_id"] not in known:
            c.fail("completeness", "score for a test absent from tests.json", "detector-scores.json", f"[{i}].test_id",
                   got=d["test_id"])
    declared = list(dict.fromkeys(d["detector_slug"] for d in dets))
    cyc = c.json("cycle.json") if c.b.has("cycle.json") else None
    if isinstance(cyc, dict):
        if isinstance(cyc.get("detectors"), list):
            listed = cyc["detectors"]
            for s in declared:
                if s not in listed:
                    c.fail("completeness", "detector scored but not declared", "cycle.json", "detectors", got=s)
            declared = list(listed)
        counts = cyc.get("counts") if isinstance(cyc.get("counts"), dict) else {}
        humanizers = {t["humanizer_slug"] for t in tests}
        for k, v in (("samples", len(samples)), ("tests", len(tests)), ("detector_scores", len(dets)),
                     ("humanizers", len(humanizers))):
            if k in counts and counts[k] != v:
                c.fail("completeness", "count differs from the data", "cycle.json", f"counts.{k}", v, counts[k])
        nd = counts.get("detectors")
        if isinstance(nd, int) and nd != len(declared):
            if nd > len(declared):
                c.gap("completeness", f"{nd} detectors declared but {len(declared)} have scores "
                                      f"({', '.join(declared)})", "cycle.json", "counts.detectors")
            else:
                c.fail("completeness", "more detectors scored than declared", "cycle.json", "counts.detectors",
                       len(declared), nd)
    per_test: dict[str, set] = {}
    for d in dets:
        per_test.setdefault(d["test_id"], set()).add(d["detector_slug"])
    recorded: set = set()  # detector failures a veribench bundle publishes (too_short, unsupported, ...)
    prov = c.json("provenance.json") if c.b.has("provenance.json") else None
    if isinstance(prov, dict) and isinstance(prov.get("detector_failures"), list):
        recorded = {(f.get("test_id"), f.get("detector_slug")) for f in prov["detector_failures"] if isinstance(f, dict)}
    gaps, noted = [], 0
    for t in tests:
        if t["status"] == "complete":
            missing = [s for s in declared if s not in per_test.get(t["id"], set())]
            noted += sum(1 for s in missing if (t["id"], s) in recorded)
            missing = [s for s in missing if (t["id"], s) not in recorded]
            if missing:
                gaps.append((t["id"], missing))
    if noted:
        c.warn("completeness", f"{noted} detector scores are recorded failures (provenance.json detector_failures)",
               "provenance.json", "detector_failures")
    for tid, missing in gaps[:5]:
        c.gap("completeness", f"complete test lacks scores from {', '.join(missing)}", "detector-scores.json",
              f"test {tid}")
    if len(gaps) > 5:
        c.gap("completeness", f"{len(gaps) - 5} more complete tests lack detector scores", "detector-scores.json")
    lb = c.json("leaderboard.json") if c.b.has("leaderboard.json") else None
    ranked = [h.get("slug") for h in lb.get("humanizers", []) if isinstance(h, dict)] if isinstance(lb, dict) else []
    sids = [s["id"] for s in samples]
    faced: dict[str, set] = {}
    for t in tests:
        faced.setdefault(t["humanizer_slug"], set()).add(t["sample_id"])
    for h in ranked:
        miss = [s for s in sids if s not in faced.get(h, set())]
        if miss:
            c.gap("completeness", f"ranked humanizer {h!r} has no test row (not even a flagged one) for "
                                  f"{len(miss)} of {len(sids)} samples", "tests.json", f"humanizer {h}")


def verify_cycle(path: str | Path, strict: bool = False, max_file_bytes: int | None = None) -> CycleReport:
    """Run every check on one cycle folder; never executes bundle code."""
    path = Path(path)
    try:
        b = Bundle.load(path, max_file_bytes=max_file_bytes)
    except ReadError as e:
        r = CycleReport(path=str(path), cycle=path.name)
        r.failures.append(Finding("reader", e.message, e.file))
        return r
    name = path.name
    try:
        cm = b.json("commit.json")
        if isinstance(cm, dict) and isinstance(cm.get("cycle"), str):
            name = cm["cycle"]
    except BundleFileError:
        pass
    r = CycleReport(path=str(path), cycle=name)
    c = _Ctx(b, r, strict)
    for n, why in b.refused.items():
        c.fail("reader", why, n)
    try:
        cm, lb = b.json("commit.json"), b.json("leaderboard.json")
        r.started_at = cm.get("started_at") if isinstance(cm, dict) else None
        if isinstance(lb, dict) and isinstance(lb.get("humanizers"), list):
            r.ranks = {h["slug"]: (h.get("rank"), h.get("rank_change", _ABSENT)) for h in lb["humanizers"]
                       if isinstance(h, dict) and isinstance(h.get("slug"), str)}
    except BundleFileError:
        pass
    _check_manifest(c)
    _check_commit(c)
    derived = _check_prompts(c)
    data = _load_data(c)
    if data is not None:
        _check_replay(c, data)
        _check_provenance(c, data, derived)
        _check_completeness(c, data)
    return r


def verify_paths(paths: Sequence[str | Path], strict: bool = False) -> list[CycleReport]:
    """Verify every cycle found under ``paths`` (cycle folders or folders of them); a link or
    an unreadable entry of such a folder (:func:`veribench.cycles.bundle.candidates`) is a
    failed report, never skipped in silence.

    Raises:
        ValueError: a path holds no cycle (a usage error).
    """

    reports = []
    for p in map(Path, paths):
        if is_cycle_dir(p):
            reports.append(verify_cycle(p, strict))
            continue
        found = candidates(p) if p.is_dir() else []
        if not any(c.kind == "cycle" for c in found):
            raise ValueError(f"{p}: not a cycle folder and holds no cycle folders")
        for c in found:
            if c.kind == "cycle":
                reports.append(verify_cycle(c.path, strict))
            elif not c.ok:
                reports.append(CycleReport(path=str(c.path), cycle=shown_name(c.path.name), failures=[c.finding()]))
    check_rank_changes(reports)
    return reports


def check_rank_changes(reports: Sequence[CycleReport]) -> None:
    """``rank_change`` = previous cycle's rank - this rank, when both cycles are verified together.

    The previous cycle is the one with the latest ``commit.json`` ``started_at`` before this
    one's (it must be unique and pass); a humanizer it did not rank must have a null
    ``rank_change``. Leaderboards without ``rank_change`` (veribench's) are not compared.
    """
    dated = [r for r in reports if r.started_at]
    for cur in dated:
        earlier = [r for r in dated if r.started_at < cur.started_at]
        if not earlier:
            continue
        last = max(r.started_at for r in earlier)
        prevs = [r for r in earlier if r.started_at == last]
        if len(prevs) != 1 or not prevs[0].ok:
            continue  # no unique, passing previous cycle: nothing to compare with
        prev = prevs[0]
        prev_ranks = {s: v[0] for s, v in prev.ranks.items()}
        for slug, (rank, change) in cur.ranks.items():
            if change is _ABSENT:
                continue
            before = prev_ranks.get(slug)
            want = before - rank if isinstance(before, int) and isinstance(rank, int) else None
            if change != want:
                cur.failures.append(Finding("replay", f"rank_change differs from {prev.cycle}'s rank minus this rank",
                                            "leaderboard.json", f"humanizers[{slug}].rank_change", want, change))
