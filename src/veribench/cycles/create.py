"""veribench's own cycles, in HumanizerBench's bundle format, with commit-reveal.

Lifecycle (``veribench cycle ...``):

1. ``new``: copy ``templates.json`` and ``banks.json`` byte for byte, write the frozen
   ``select-placeholders.js``, draw a 32-byte nonce from :mod:`secrets` and write
   ``commit.json`` with ``sha256(nonce hex)``, ``started_at`` and the SHA-256 of the three
   frozen inputs. The nonce lives only in a private file outside the cycle folder
   (``$VERIBENCH_SECRETS_DIR`` or ``~/.config/veribench/cycle-secrets``; folder mode
   0700, file 0600), named by the committed hash; it is never printed or logged.
2. ``prompts``: the operator derives the prompts (same algorithm as HumanizerBench).
3. ``import`` / ``measure``: samples, humanizer outputs (flags computed), detector
   scores, meaning preservation and readability.
4. ``publish``: refuses when a complete test is unscored or ``commit.json`` changed
   since the cycle began; writes ``nonce.txt``, ``prompts.json``, ``scoring.js``,
   ``scoring-spec.json``, ``leaderboard.json`` and, last, the ``cycle.json`` manifest.
   A published cycle is never rewritten.
"""

from __future__ import annotations

import csv
import io
import json
import os
import secrets
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from veribench import __version__
from veribench.bundles.jscompat import dumps_js, js_math_round, js_word_count
from veribench.cycles.bundle import VERIBENCH_FORMAT, BundleFileError, parse_json_bytes
from veribench.cycles.flags import classify_output
from veribench.cycles.frozen import SELECT_PLACEHOLDERS_JS
from veribench.cycles.intervals import bootstrap_ci, method_record
from veribench.cycles.scoring import ScoringRules, compute_leaderboard, recognise_scoring, render_scoring_js
from veribench.cycles.selection import extract_placeholders, resolve_prompts
from veribench.cycles.uncertainty import ranking_uncertainty
from veribench.cycles.verify import ACCESS_FAILURE_CODES
from veribench.errors import InputError, ProtocolError, VeribenchError
from veribench.hashing import sha256_bytes

SECRETS_ENV = "VERIBENCH_SECRETS_DIR"
UUID_NS = uuid.UUID("6c1f1f0e-3f0a-4d38-9b8e-0a5e0c7f1b21")  # veribench cycles (uuid5 namespace)


# -- small file helpers ----------------------------------------------------------------------

def _now_iso() -> str:
    """``new Date().toISOString()`` form: UTC, milliseconds, ``Z``."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _write_new(path: Path, data: bytes | str) -> None:
    """Write a file that must not exist yet (published files are never rewritten)."""
    b = data.encode("utf-8") if isinstance(data, str) else data
    with open(path, "xb") as f:
        f.write(b)


def _write_work(path: Path, obj: Any) -> None:
    """Write a working file (before publish), atomically."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(dumps_js(obj), encoding="utf-8")
    os.replace(tmp, path)


def _load(path: Path) -> Any:
    try:
        return parse_json_bytes(path.read_bytes(), str(path))
    except FileNotFoundError:
        raise InputError("file missing", file=str(path)) from None
    except BundleFileError as e:
        raise InputError(e.message, file=str(path)) from None


def _published(directory: Path) -> bool:
    return (directory / "cycle.json").exists()


def _refuse_if_published(directory: Path) -> None:
    if _published(directory):
        raise ProtocolError(f"{directory} is a published cycle (cycle.json exists); past cycles are immutable")


# -- secrets ---------------------------------------------------------------------------------

def resolve_secrets_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The private folder for nonces (created with mode 0700)."""
    p = Path(path or os.environ.get(SECRETS_ENV) or Path.home() / ".config" / "veribench" / "cycle-secrets")
    p.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(p, 0o700)
    return p


def _secret_path(directory: Path, sdir: Path | None) -> tuple[Path, dict[str, Any]]:
    commit = _load(directory / "commit.json")
    h = commit.get("committed_hash") if isinstance(commit, dict) else None
    if not isinstance(h, str):
        raise InputError("no committed_hash", file=str(directory / "commit.json"), field="committed_hash")
    return resolve_secrets_dir(sdir) / f"{h}.json", commit


def _read_secret(directory: Path, sdir: Path | None) -> tuple[str, dict[str, Any]]:
    """The nonce, after checking commit.json is byte-identical to the one written at cycle start.

    Raises:
        ProtocolError: commit.json changed, or the nonce does not match its hash.
        VeribenchError: no private nonce for this cycle on this machine.
    """
    path, commit = _secret_path(directory, sdir)
    if not path.exists():
        raise VeribenchError(f"no private nonce for this cycle in {path.parent} (set {SECRETS_ENV} or --secrets-dir)")
    rec = json.loads(path.read_text(encoding="utf-8"))
    nonce = rec["nonce"]
    if sha256_bytes((directory / "commit.json").read_bytes()) != rec["commit_sha256"]:
        raise ProtocolError(f"{directory / 'commit.json'} has changed since the cycle began")
    if sha256_bytes(nonce.encode("ascii")) != commit["committed_hash"]:
        raise ProtocolError("the private nonce does not match commit.json's committed hash")
    for key, f in (("templates_sha256", "templates.json"), ("banks_sha256", "banks.json"),
                   ("selection_sha256", "select-placeholders.js")):
        if key in commit and sha256_bytes((directory / f).read_bytes()) != commit[key]:
            raise ProtocolError(f"{directory / f} has changed since the cycle began")
    return nonce, commit


# -- validation of templates and banks ---------------------------------------------------------

def validate_templates_banks(templates: Any, banks: Any, tfile: str, bfile: str) -> None:
    """Templates: ``[{slug, category, prompt_text}]`` with unique slugs; banks: ``{TOKEN: [str, ...]}``.

    Every ``[TOKEN]`` of a template needs a non-empty bank.

    Raises:
        InputError: naming file, record and field.
    """
    if not isinstance(templates, list) or not templates:
        raise InputError("expected a non-empty JSON array of templates", file=tfile)
    if not isinstance(banks, dict):
        raise InputError("expected an object {TOKEN: [values]}", file=bfile)
    for k, v in banks.items():
        if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
            raise InputError("a bank must be an array of non-empty strings", file=bfile, field=k)
    seen = set()
    for i, t in enumerate(templates):
        if not isinstance(t, dict):
            raise InputError("not an object", file=tfile, record=i)
        for f in ("slug", "category", "prompt_text"):
            if not isinstance(t.get(f), str) or not t[f]:
                raise InputError("missing or not a non-empty string", file=tfile, record=i, field=f)
        if t["slug"] in seen:
            raise InputError(f"duplicate slug {t['slug']!r}", file=tfile, record=i, field="slug")
        seen.add(t["slug"])
        for tok in extract_placeholders(t["prompt_text"]):
            if not banks.get(tok):
                raise InputError(f"placeholder [{tok}] has no bank in {bfile}", file=tfile, record=i,
                                 field="prompt_text")


# -- new / prompts ---------------------------------------------------------------------------

def new_cycle(name: str, directory: str | os.PathLike[str], templates: str | os.PathLike[str],
              banks: str | os.PathLike[str], prompt_set_version: str = "1.0.0",
              secrets_dir: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Start cycle ``name`` in ``directory``; returns ``commit.json``'s content (no nonce).

    Raises:
        InputError: bad templates or banks; ``directory`` already holds files.
    """
    directory = Path(directory)
    if not isinstance(name, str) or not name.strip() or name != name.strip() or "/" in name:
        raise InputError("cycle name must be non-empty text without a slash or surrounding spaces", field="name")
    if directory.exists() and any(directory.iterdir()):
        raise InputError("folder already holds files; a cycle starts in a new folder", file=str(directory))
    tb, bb = Path(templates).read_bytes(), Path(banks).read_bytes()
    tj, bj = parse_json_bytes(tb, str(templates)), parse_json_bytes(bb, str(banks))
    validate_templates_banks(tj, bj, str(templates), str(banks))
    sdir = resolve_secrets_dir(secrets_dir)
    directory.mkdir(parents=True, exist_ok=True)
    _write_new(directory / "templates.json", tb)
    _write_new(directory / "banks.json", bb)
    sel = SELECT_PLACEHOLDERS_JS.encode("utf-8")
    _write_new(directory / "select-placeholders.js", sel)
    nonce = secrets.token_bytes(32).hex()
    commit = {
        "cycle": name,
        "committed_hash": sha256_bytes(nonce.encode("ascii")),
        "prompt_set_version": prompt_set_version,
        "started_at": _now_iso(),
        "format": VERIBENCH_FORMAT,
        "templates_sha256": sha256_bytes(tb),
        "banks_sha256": sha256_bytes(bb),
        "selection_sha256": sha256_bytes(sel),
    }
    cbytes = dumps_js(commit).encode("utf-8")
    secret = {"cycle": name, "nonce": nonce, "commit_sha256": sha256_bytes(cbytes)}
    spath = sdir / f"{commit['committed_hash']}.json"
    fd = os.open(spath, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(secret, f)
    os.chmod(spath, 0o600)
    _write_new(directory / "commit.json", cbytes)
    return commit


def derive_prompts(directory: str | os.PathLike[str], secrets_dir: str | os.PathLike[str] | None = None
                   ) -> list[dict[str, Any]]:
    """The cycle's resolved prompts (``prompts.json`` records), from the private nonce."""
    directory = Path(directory)
    nonce, _ = _read_secret(directory, Path(secrets_dir) if secrets_dir else None)
    return resolve_prompts(nonce, _load(directory / "templates.json"), _load(directory / "banks.json"))


# -- import ------------------------------------------------------------------------------------

def _read_rows(path: Path) -> list[dict[str, Any]]:
    """Records from a JSON array (or JSONL) or a CSV with a header."""
    data = path.read_bytes()
    if path.suffix.lower() == ".csv":
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise InputError(f"not UTF-8 at byte {e.start}", file=str(path)) from None
        return [dict(r) for r in csv.DictReader(io.StringIO(text, newline=""))]
    if path.suffix.lower() == ".jsonl":
        rows = []
        for i, line in enumerate(data.decode("utf-8").splitlines()):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as e:
                    raise InputError(f"unparsable JSON: {e}", file=str(path), record=i) from None
        return rows
    obj = _load(path)
    if not isinstance(obj, list):
        raise InputError("expected a JSON array of records", file=str(path))
    return obj


def _req(row: Mapping[str, Any], f: str, path: Path, i: int) -> str:
    v = row.get(f)
    if not isinstance(v, str) or not v:
        raise InputError("missing or empty", file=str(path), record=i, field=f)
    return v


def import_samples(directory: str | os.PathLike[str], path: str | os.PathLike[str]) -> int:
    """Add source texts to ``samples.json`` (each from a committed prompt of this cycle).

    Records: ``prompt_slug``, ``input_text``, optional ``id`` (else uuid5 of slug+text),
    ``source_model_slug``, ``generated_at``. Category and word count are derived.
    """
    directory, path = Path(directory), Path(path)
    _refuse_if_published(directory)
    templates = {t["slug"]: t for t in _load(directory / "templates.json")}
    sp = directory / "samples.json"
    samples = _load(sp) if sp.exists() else []
    have = {s["id"] for s in samples}
    for i, r in enumerate(_read_rows(path)):
        slug = _req(r, "prompt_slug", path, i)
        if slug not in templates:
            raise InputError(f"not a prompt of this cycle ({', '.join(templates)})", file=str(path), record=i,
                             field="prompt_slug")
        text = _req(r, "input_text", path, i)
        sid = r.get("id") or str(uuid.uuid5(UUID_NS, slug + "\x00" + text))
        if sid in have:
            raise InputError(f"duplicate sample id {sid!r}", file=str(path), record=i, field="id")
        have.add(sid)
        samples.append({"id": sid, "prompt_slug": slug, "category": templates[slug]["category"],
                        "source_model_slug": r.get("source_model_slug") or None, "input_text": text,
                        "word_count": js_word_count(text), "generated_at": r.get("generated_at") or _now_iso()})
    _write_work(sp, samples)
    return len(samples)


def import_outputs(directory: str | os.PathLike[str], path: str | os.PathLike[str]) -> int:
    """Add humanizer outputs to ``tests.json``; status and flags come from :func:`classify_output`.

    Records: ``sample_id``, ``humanizer_slug``, ``output_text`` (may be empty), optional
    ``id``, ``failure_reason_code`` (an access failure such as ``site_down``), ``completed_at``.
    A repeated (sample, humanizer) replaces the earlier row.
    """
    directory, path = Path(directory), Path(path)
    _refuse_if_published(directory)
    samples = {s["id"]: s for s in _load(directory / "samples.json")}
    tp = directory / "tests.json"
    tests = _load(tp) if tp.exists() else []
    index = {(t["sample_id"], t["humanizer_slug"]): k for k, t in enumerate(tests)}
    for i, r in enumerate(_read_rows(path)):
        sid = _req(r, "sample_id", path, i)
        if sid not in samples:
            raise InputError("no such sample in samples.json", file=str(path), record=i, field="sample_id")
        h = _req(r, "humanizer_slug", path, i)
        out = r.get("output_text")
        if out is not None and not isinstance(out, str):
            raise InputError("must be text", file=str(path), record=i, field="output_text")
        fail = r.get("failure_reason_code") or None
        if fail and fail not in ACCESS_FAILURE_CODES:
            raise InputError(f"unknown access failure code (known: {', '.join(sorted(ACCESS_FAILURE_CODES))})",
                             file=str(path), record=i, field="failure_reason_code")
        status, code = classify_output(samples[sid]["input_text"], out, fail)
        row = {"id": r.get("id") or str(uuid.uuid5(UUID_NS, sid + "\x00" + h)), "sample_id": sid,
               "humanizer_slug": h, "input_text": samples[sid]["input_text"], "output_text": out or None,
               "status": status, "failure_reason_code": code, "meaning_preservation": None, "readability": None,
               "retry_count": int(r.get("retry_count") or 0), "completed_at": r.get("completed_at") or _now_iso()}
        if (sid, h) in index:
            tests[index[(sid, h)]] = row
        else:
            index[(sid, h)] = len(tests)
            tests.append(row)
    _write_work(tp, tests)
    return len(tests)


# -- leaderboard ---------------------------------------------------------------------------------

def unavailable_humanizers(tests: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Humanizers with at least half of their attempts flagged as access failures (methodology rule)."""
    by: dict[str, list] = {}
    for t in tests:
        by.setdefault(t["humanizer_slug"], []).append(t)
    out = []
    for slug, ht in by.items():
        access = sum(1 for t in ht if t.get("failure_reason_code") in ACCESS_FAILURE_CODES)
        if access and 2 * access >= len(ht):
            done = [t.get("completed_at") for t in ht if t.get("completed_at")]
            out.append({"slug": slug, "reason": "unavailable", "attempted_test_count": len(ht),
                        "successful_test_count": sum(1 for t in ht if t["status"] == "complete"),
                        "unavailable_test_count": access, "last_tested_at": max(done) if done else None})
    return out


def build_leaderboard(*, cycle: str, prompt_set_version: str | None, samples: Sequence[Mapping[str, Any]],
                      tests: Sequence[Mapping[str, Any]], detector_scores: Sequence[Mapping[str, Any]],
                      rules: ScoringRules, unavailable: Sequence[Mapping[str, Any]],
                      prompts: Sequence[Mapping[str, Any]] | None = None, readability_measured: bool = True,
                      seed: int = 20260701, n_resamples: int = 2000,
                      extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A leaderboard in HumanizerBench's published shape, rounded as it rounds, with intervals.

    Composite and ``score_delta`` are rounded to 2 decimals, every other value to 4
    (``Math.round``). ``score_intervals`` are seeded percentile-bootstrap 95% intervals
    (:mod:`veribench.cycles.intervals`), recorded in ``score_intervals_method``; a
    degenerate one is null with ``<name>_reason``. ``uncertainty`` holds the composite and
    rank intervals, paired differences and tiers of :mod:`veribench.cycles.uncertainty`
    (same seed and resamples); each humanizer carries its ``composite_ci_95``,
    ``rank_interval_95`` (null with ``rank_interval_95_reason`` when the resampling carries no
    information about ranks) and composite ``tier``.
    """

    excl = {u["slug"] for u in unavailable}
    replay = compute_leaderboard(samples, tests, detector_scores, rules, exclude=excl)
    r2 = lambda x: js_math_round(x, 2)  # noqa: E731
    r4 = lambda x: js_math_round(x, 4)  # noqa: E731
    last = {}
    for t in tests:
        if t.get("completed_at"):
            last[t["humanizer_slug"]] = max(last.get(t["humanizer_slug"], ""), t["completed_at"])
    unc = ranking_uncertainty(samples, tests, detector_scores, rules, excl, seed, n_resamples)
    unc_by = {u["slug"]: u for u in unc["humanizers"]}
    hs = []
    for i, h in enumerate(replay):
        pt = h["per_test"].values()
        ci_b, why_b = bootstrap_ci([v["bypass"] for v in pt], seed, h["slug"] + "|bypass_rate", n_resamples)
        ci_m, why_m = bootstrap_ci([v["meaning"] for v in pt], seed, h["slug"] + "|meaning_preservation",
                                   n_resamples)
        u = unc_by[h["slug"]]
        si: dict[str, Any] = {"bypass_rate_ci_95": [r4(x) for x in ci_b] if ci_b else None,
                              "meaning_preservation_ci_95": [r4(x) for x in ci_m] if ci_m else None,
                              "composite_ci_95": [r2(x) for x in u["composite_ci_95"]] if u["composite_ci_95"]
                              else None}
        for k, why in (("bypass_rate_ci_95", why_b), ("meaning_preservation_ci_95", why_m),
                       ("composite_ci_95", u["composite_ci_95_reason"])):
            if why:
                si[k + "_reason"] = why
        hs.append({
            "slug": h["slug"], "rank": i + 1,
            "scores": {"composite": r2(h["composite"]), "bypass_rate": r4(h["bypass_rate"]),
                       "meaning_preservation": r4(h["meaning_preservation"]), "readability": r4(h["readability"]),
                       "consistency_across_categories": r4(h["consistency_across_categories"])},
            "score_intervals": si, "rank_interval_95": u["rank_interval_95"],
            **({"rank_interval_95_reason": u["rank_interval_95_reason"]} if u["rank_interval_95_reason"] else {}),
            "tier": u["tier"],
            "penalties_applied": [{"code": p["code"], "count": p["count"], "score_delta": r2(p["score_delta"])}
                                  for p in h["penalties_applied"]],
            "confidence": h["confidence"],
            "detector_breakdown": {k: r4(v) for k, v in h["detector_breakdown"].items()},
            "category_breakdown": {k: r4(v) for k, v in h["category_breakdown"].items()},
            "last_tested_at": last.get(h["slug"]),
            "sample_count": h["sample_count"], "successful_test_count": h["successful_test_count"],
            "flagged_test_count": h["flagged_test_count"],
        })
    lb: dict[str, Any] = {
        "cycle": cycle, "generated_at": _now_iso(), "methodology_version": VERIBENCH_FORMAT,
        "scoring_version": f"veribench {__version__}", "prompt_set_version": prompt_set_version,
    }
    if prompts is not None:
        lb["placeholders_used"] = {p["slug"]: p["placeholders"] for p in prompts if p["placeholders"]}
    lb["cycle_sample_count"] = len(samples)
    lb["readability_measured"] = readability_measured
    if not readability_measured:
        lb["readability_note"] = ("readability not measured: every per-test value is null and counts as 0 "
                                  f"(scoring.js `t.readability ?? 0`), so composites are out of "
                                  f"{100 - rules.weights['readability']:g}, not 100")
    lb["score_intervals_method"] = method_record(seed, n_resamples)
    lb["uncertainty"] = unc
    if extra:
        lb.update(extra)
    lb["humanizers"] = hs
    lb["unavailable_humanizers"] = list(unavailable)
    return lb


def _rules_for(directory: Path) -> ScoringRules:
    """Rules of a cycle folder: its ``scoring.js`` (recognised), else ``scoring-spec.json``, else defaults."""
    if (directory / "scoring.js").exists():
        return recognise_scoring((directory / "scoring.js").read_bytes())
    sp = directory / "scoring-spec.json"
    if sp.exists():
        return ScoringRules.from_dict(_load(sp)["rules"])
    return ScoringRules(source="veribench default")


def score_directory(directory: str | os.PathLike[str], seed: int = 20260701, n_resamples: int = 2000
                    ) -> dict[str, Any]:
    """``veribench cycle score``: the leaderboard of a cycle folder, with bootstrap intervals."""
    directory = Path(directory)
    samples, tests, dets = (_load(directory / f) for f in ("samples.json", "tests.json", "detector-scores.json"))
    old = _load(directory / "leaderboard.json") if (directory / "leaderboard.json").exists() else {}
    rules = _rules_for(directory)
    extra_rows = _load(directory / "unavailable-tests.json") if (directory / "unavailable-tests.json").exists() else []
    unavailable = old.get("unavailable_humanizers") if "unavailable_humanizers" in old else \
        unavailable_humanizers(list(tests) + list(extra_rows))
    commit = _load(directory / "commit.json") if (directory / "commit.json").exists() else {}
    prompts = _load(directory / "prompts.json") if (directory / "prompts.json").exists() else None
    return build_leaderboard(cycle=commit.get("cycle") or old.get("cycle") or directory.name,
                             prompt_set_version=commit.get("prompt_set_version"), samples=samples, tests=tests,
                             detector_scores=dets, rules=rules, unavailable=unavailable, prompts=prompts,
                             readability_measured=any(t.get("readability") is not None for t in tests),
                             seed=seed, n_resamples=n_resamples)


# -- publish -------------------------------------------------------------------------------------

def unscored(tests: Sequence[Mapping[str, Any]], detector_scores: Sequence[Mapping[str, Any]],
             detectors: Sequence[str], readability_required: bool,
             detector_failures: Sequence[Mapping[str, Any]] = ()) -> list[str]:
    """Reasons a complete test is not fully scored (empty when all are).

    A detector that was run on a test and returned a recorded failure (``detector_failures``
    in provenance.json, e.g. ``too_short``) counts as attempted: the gap is published, not hidden.
    """
    have: dict[str, set] = {}
    for d in list(detector_scores) + list(detector_failures):
        have.setdefault(d["test_id"], set()).add(d["detector_slug"])
    out = []
    for t in tests:
        if t["status"] != "complete":
            continue
        if t.get("meaning_preservation") is None:
            out.append(f"test {t['id']}: no meaning_preservation")
        if readability_required and t.get("readability") is None:
            out.append(f"test {t['id']}: no readability")
        miss = [d for d in detectors if d not in have.get(t["id"], set())]
        if miss:
            out.append(f"test {t['id']}: no score from {', '.join(miss)}")
    return out


def publish_cycle(directory: str | os.PathLike[str], secrets_dir: str | os.PathLike[str] | None = None, *,
                  nonce: str | None = None, seed: int = 20260701, n_resamples: int = 2000) -> dict[str, Any]:
    """Publish the cycle in ``directory``; returns the leaderboard.

    ``nonce`` is only for re-publishing a bundle whose nonce is already public
    (re-scoring a published cycle); otherwise the private nonce is read and checked.

    Raises:
        ProtocolError: already published; commit.json or a frozen input changed; a test unscored.
    """
    directory = Path(directory)
    _refuse_if_published(directory)
    if nonce is None:
        nonce, commit = _read_secret(directory, Path(secrets_dir) if secrets_dir else None)
    else:
        commit = _load(directory / "commit.json")
        if sha256_bytes(nonce.encode("utf-8")) != commit.get("committed_hash"):
            raise ProtocolError("the nonce does not match commit.json's committed hash")
    for f in ("samples.json", "tests.json"):
        if not (directory / f).exists():
            raise ProtocolError(f"cannot publish: {f} is missing (import samples and outputs first)")
    templates, banks = _load(directory / "templates.json"), _load(directory / "banks.json")
    samples, tests = _load(directory / "samples.json"), _load(directory / "tests.json")
    dets = _load(directory / "detector-scores.json") if (directory / "detector-scores.json").exists() else []
    prov = _load(directory / "provenance.json") if (directory / "provenance.json").exists() else {}
    spec = _load(directory / "scoring-spec.json") if (directory / "scoring-spec.json").exists() else None
    rules = ScoringRules.from_dict(spec["rules"]) if spec else ScoringRules(source="veribench default")
    detectors = prov.get("detectors_declared") or list(dict.fromkeys(d["detector_slug"] for d in dets))
    readability_mode = prov.get("readability", {}).get("mode", "published")
    problems = unscored(tests, dets, detectors, readability_required=readability_mode != "none",
                        detector_failures=prov.get("detector_failures") or [])
    if problems:
        raise ProtocolError(f"cannot publish: {len(problems)} unscored: " + "; ".join(problems[:5]))
    prompts = resolve_prompts(nonce, templates, banks)
    unavailable = unavailable_humanizers(tests)
    excl = {u["slug"] for u in unavailable}
    ranked_tests = [t for t in tests if t["humanizer_slug"] not in excl]
    unav_tests = [t for t in tests if t["humanizer_slug"] in excl]
    ranked_ids = {t["id"] for t in ranked_tests}
    ranked_dets = [d for d in dets if d["test_id"] in ranked_ids]
    lb = build_leaderboard(cycle=commit["cycle"], prompt_set_version=commit.get("prompt_set_version"),
                           samples=samples, tests=ranked_tests, detector_scores=ranked_dets, rules=rules,
                           unavailable=unavailable, prompts=prompts, readability_measured=readability_mode != "none",
                           seed=seed, n_resamples=n_resamples, extra=prov.get("leaderboard_extra"))
    spec_out = {"format": VERIBENCH_FORMAT, "rules": rules.to_dict(),
                "source": "HumanizerBench methodology (shared/spec/000_*.txt); constants as in scoring.js",
                **({"embedder": spec.get("embedder")} if spec and spec.get("embedder") else {})}
    files: dict[str, bytes] = {
        "leaderboard.json": dumps_js(lb).encode("utf-8"),
        "nonce.txt": (nonce + "\n").encode("ascii"),
        "prompts.json": dumps_js(prompts).encode("utf-8"),
        "templates.json": (directory / "templates.json").read_bytes(),
        "banks.json": (directory / "banks.json").read_bytes(),
        "select-placeholders.js": (directory / "select-placeholders.js").read_bytes(),
        "samples.json": (directory / "samples.json").read_bytes(),
        "tests.json": dumps_js(ranked_tests).encode("utf-8"),
        "detector-scores.json": dumps_js(ranked_dets).encode("utf-8"),
        "scoring.js": render_scoring_js(rules).encode("utf-8"),
        "scoring-spec.json": dumps_js(spec_out).encode("utf-8"),
    }
    if prov:
        files["provenance.json"] = dumps_js(prov).encode("utf-8")
    if unav_tests:
        files["unavailable-tests.json"] = dumps_js(unav_tests).encode("utf-8")
    # Working files are replaced by their frozen form; new ones are created exclusively.
    for name, data in files.items():
        p = directory / name
        if p.exists():
            if p.read_bytes() == data:
                continue
            tmp = p.with_name(p.name + ".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, p)
        else:
            _write_new(p, data)
    cycle_json = {
        "cycle": commit["cycle"], "format": VERIBENCH_FORMAT,
        "counts": {"samples": len(samples), "tests": len(ranked_tests), "detector_scores": len(ranked_dets),
                   "humanizers": len({t["humanizer_slug"] for t in ranked_tests}), "detectors": len(detectors)},
        "detectors": list(detectors),
        "files": {name: sha256_bytes(data) for name, data in files.items()},
    }
    _write_new(directory / "cycle.json", dumps_js(cycle_json))
    return lb
