"""Benchmark: the board's own submission path end to end at RAID's test-set size (issue 26),
with CPU time and peak RSS (not a test).

:meth:`veribench.leaderboard.service.Board.submit` (team, RAID ``predictions.json`` bytes,
``metadata.json`` bytes, ``"raid"``): read ``texts.jsonl``'s ids, parse the file
(``raid_format.read_predictions``), store it durably (fsync) with its row, import the scores
into the board's workspace, evaluate Table 1 and the headline (AUROC, in-sample), the canary
test, step the Ladder and sign the receipt. ``bench_leaderboard.py`` times the grid alone;
this times what a running board pays per submission.

The hidden set is **synthetic and seeded** (``documents`` JSONL, veribench's corpus schema):
RAID's layout by position, row ``i``: attack ``i % 12`` (none + 11), generation ``(i // 12) %
35`` (0 the human text, 1-34 one of 11 models), source ``i // 420``, domain ``source % 8``; so
1/35 of the texts are human, as in RAID's test set. Each text is short (``Text <i>.`` and 8
seeded words). Scores: ``sigmoid(z)``, ``z ~ Normal(1.2 * is_ai + 0.1 * domain, 1)`` (seeded per
submission), RAID's ``[{"id", "score"}]`` in ``texts.jsonl``'s order.

Per size, each step in a fresh process so its peak RSS (``ru_maxrss``) is its own:

1. **launch** (timed apart): ``Board.open`` + ``Board.launch`` of the hidden set (SQLite) +
   one team. The hidden set and, after the launch, the prediction files are written by the
   parent, untimed.
2. **submit**: ``Board.open`` (timed apart), the team's three submissions one after the other
   in the same process: the first is the cold figure (fresh process, board already on disk),
   the second and third the warm per-submission cost of a running board. CPU = user + system
   (``resource.getrusage``), wall, peak RSS after each (and before the first: what the
   process held before submitting).
3. **checks, before any figure is printed** (exit 1 otherwise): every receipt verifies
   (``receipts.check_receipt`` with ``board.public_key_pem``); each submission's unrounded
   headline equals scikit-learn's ``roc_auc_score`` over the non-canary texts within 1e-12
   (labels from the layout, not from the board). With ``--reveal`` (default: the smallest size)
   the board is revealed (``reveal(force=True)``), and ``ladder.json``'s unrounded headlines
   and ``hidden_set.jsonl``'s labels are checked the same way.
4. ``--profile N``: a fourth submission in a fresh process under cProfile, the N functions
   with the most cumulative time, then the N with the most own time (printed; in the JSON).

    PYTHONPATH=src .venv/bin/python benchmarks/bench_board_submit.py [--sizes 20000 100000 672000]
        [--canaries 3] [--profile 15 --profile-size 100000] [--json OUT] [--keep DIR]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import platform
import pstats
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from bench_tables import yardstick
from sqlalchemy import select
from sqlalchemy.orm import Session

from veribench.leaderboard import db, receipts
from veribench.leaderboard.service import Board

DOMAINS = ("abstracts", "books", "news", "poetry", "recipes", "reddit", "reviews", "wiki")
MODELS = ("gpt4", "chatgpt", "gpt3", "gpt2", "cohere", "cohere-chat", "llama-chat", "mistral", "mistral-chat",
          "mpt", "mpt-chat")
ATTACKS = ("none", "article_deletion", "homoglyph", "number", "paraphrase", "perplexity_misspelling",
           "synonym", "upper_lower", "whitespace", "zero_width_space", "insert_paragraphs", "alternative_spelling")
GENERATIONS = 35  # per source: the human text and 34 generations (RAID)
WORDS = "the a of river light stone paper window garden quiet north market bright cold sea field".split()
SEEDS = (1, 2, 3)  # the three timed submissions
PROFILE_SEED = 4
AUROC_BOUND = 1e-12
#: the marker ``Board.launch`` appends to a canary's text
CANARY = re.compile(r"\n\n\[ref [0-9a-f]{32}\]$")
METADATA = json.dumps({"date_released": "2026-12-05", "detector_name": "Bench detector",
                       "contact_info": "bench@example.org", "website": None, "paper_link": None,
                       "huggingface_link": None, "github_link": None, "additional_metadata": None}).encode("utf-8")


def layout(i: int) -> tuple[str, str, str, str]:
    """Row ``i``'s (label, domain, model, attack) in RAID's layout (module docstring)."""
    gen = (i // len(ATTACKS)) % GENERATIONS
    source = i // (len(ATTACKS) * GENERATIONS)
    model = "human" if gen == 0 else MODELS[(gen - 1) % len(MODELS)]
    return ("human" if gen == 0 else "ai", DOMAINS[source % len(DOMAINS)], model, ATTACKS[i % len(ATTACKS)])


def write_hidden_set(path: Path, n: int, seed: int = 0) -> None:
    """``n`` documents (``documents`` JSONL: id, text, label, tags domain/model/attack)."""
    rnd = random.Random(seed)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            label, domain, model, attack = layout(i)
            text = f"Text {i}. " + " ".join(rnd.choices(WORDS, k=8)) + "."
            fh.write(json.dumps({"id": f"raid-{i:07d}", "text": text, "label": label,
                                 "tags": {"domain": domain, "model": model, "attack": attack}}) + "\n")


def write_board_toml(folder: Path, canaries: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / "board.toml"
    p.write_text("\n".join([
        "[board]", 'name = "bench-board"', f'database_url = "sqlite:///{folder / "board.sqlite"}"',
        'headline_metric = "auroc"', "ladder_eta = 0.01", "min_cell_size = 30", "submission_limit = 5",
        f"canaries = {canaries}", 'grid = ["domain", "model", "attack"]']) + "\n", encoding="utf-8")
    return p


def texts(folder: Path) -> list[tuple[str, int, bool]]:
    """(board id, layout row, is a canary) of each line of the board's public ``texts.jsonl``:
    the row is read from the text's ``Text <i>.`` prefix (a canary copies its source's text)."""
    out = []
    for line in (folder / "texts.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        out.append((r["id"], int(r["text"].split(".", 1)[0][5:]), bool(CANARY.search(r["text"]))))
    return out


def scores_for(rows: np.ndarray, seed: int) -> np.ndarray:
    """Continuous P(AI) for layout rows ``rows`` (shape (n,)), seeded (module docstring)."""
    rng = np.random.default_rng(seed)
    is_ai = np.array([layout(int(i))[0] == "ai" for i in rows], dtype=float)
    dom = (rows // (len(ATTACKS) * GENERATIONS)) % len(DOMAINS)
    z = rng.normal(1.2 * is_ai + 0.1 * dom, 1.0)
    return np.asarray(1.0 / (1.0 + np.exp(-z)))


def write_predictions(folder: Path, seed: int) -> Path:
    t = texts(folder)
    sc = scores_for(np.array([r for _, r, _ in t]), seed)
    p = folder / f"predictions-{seed}.json"
    p.write_text(json.dumps([{"id": i, "score": s} for (i, _, _), s in zip(t, sc.tolist(), strict=True)]),
                 encoding="utf-8")
    return p


def sklearn_auroc(folder: Path, seed: int) -> float:
    """scikit-learn's AUROC of submission ``seed`` over the non-canary texts (labels from the layout)."""
    from sklearn.metrics import roc_auc_score  # here, so that the timed child processes do not hold it

    sc = {r["id"]: r["score"] for r in json.loads((folder / f"predictions-{seed}.json").read_text())}
    t = [x for x in texts(folder) if not x[2]]
    return float(roc_auc_score([layout(r)[0] == "ai" for _, r, _ in t], [sc[i] for i, _, _ in t]))


def usage() -> tuple[float, float, float]:
    """(CPU seconds user + system, wall seconds, peak RSS MiB) of this process so far."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime, time.perf_counter(), ru.ru_maxrss / 1024


def step(t0: tuple[float, float, float]) -> dict[str, float]:
    c, w, rss = usage()
    return {"cpu_s": round(c - t0[0], 3), "wall_s": round(w - t0[1], 3), "peak_rss_mib": round(rss, 1)}


# ---------------------------------------------------------------------------- child processes
def child_launch(folder: Path) -> dict[str, Any]:
    t0 = usage()
    with Board.open(folder / "board.toml") as board:
        board.launch(folder / "hidden.jsonl", "documents")
        token = board.add_team("bench-team")
    (folder / "token.txt").write_text(token, encoding="utf-8")
    return {"launch": step(t0)}


def child_submit(folder: Path) -> dict[str, Any]:
    files = [(folder / f"predictions-{s}.json").read_bytes() for s in SEEDS]
    t0 = usage()
    board = Board.open(folder / "board.toml")
    out: dict[str, Any] = {"open": step(t0)}
    team = board.team_for_token((folder / "token.txt").read_text(encoding="utf-8"))
    assert team is not None
    out["before_submit_peak_rss_mib"] = round(usage()[2], 1)
    got = []
    for k, data in enumerate(files):
        t = usage()
        got.append(board.submit(team, data, METADATA, "raid"))
        out[f"submit_{k + 1}"] = step(t)
    pem = board.public_key_pem
    for r in got:
        receipts.check_receipt(r, pem)  # raises InputError when it does not verify
    out["receipts_verified"] = len(got)
    with Session(board.engine) as s:  # the unrounded headlines, as the organiser reads them before the reveal
        out["headlines"] = list(s.scalars(select(db.Submission.headline).where(db.Submission.team_id == team.id)
                                          .order_by(db.Submission.seq)))
    board.close()
    return out


def child_profile(folder: Path, top: int) -> dict[str, Any]:
    data = (folder / f"predictions-{PROFILE_SEED}.json").read_bytes()
    with Board.open(folder / "board.toml") as board:
        team = board.team_for_token((folder / "token.txt").read_text(encoding="utf-8"))
        assert team is not None
        prof = cProfile.Profile()
        t = usage()
        prof.enable()
        board.submit(team, data, METADATA, "raid")
        prof.disable()
        timing = step(t)
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(top)
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)  # own time: where it is spent
    return {"profile": timing, "profile_text": buf.getvalue()}


def child_reveal(folder: Path) -> dict[str, Any]:
    t0 = usage()
    with Board.open(folder / "board.toml") as board:
        out = board.reveal(force=True)
    res: dict[str, Any] = {"reveal": step(t0)}
    lad = json.loads((out / "ladder.json").read_text(encoding="utf-8"))
    res["ladder_headlines"] = [h["headline"] for h in lad["submissions"]]
    hidden = [json.loads(x) for x in (out / "hidden_set.jsonl").read_text(encoding="utf-8").splitlines()]
    labels = {r["doc_id"]: r["label"] for r in hidden if r["canary_of"] is None}
    mine = {i: layout(r)[0] for i, r, c in texts(folder) if not c}
    res["revealed_labels_match_layout"] = labels == mine
    return res


def run_child(phase: str, folder: Path, *extra: str) -> dict[str, Any]:
    r = subprocess.run([sys.executable, __file__, "--child", phase, "--dir", str(folder), *extra],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{phase} at {folder} failed:\n{r.stderr[-3000:]}")
    return dict(json.loads(r.stdout.strip().splitlines()[-1]))


# ---------------------------------------------------------------------------- parent
def machine() -> dict[str, Any]:
    """CPU model (lscpu), the x86-64 flags level (/proc/cpuinfo), Python and numpy."""
    model = "unknown"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    flags: set[str] = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    v4 = {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
    v3 = {"avx2", "bmi1", "bmi2", "fma", "movbe"}
    level = "x86-64-v4" if v4 <= flags and v3 <= flags else "x86-64-v3" if v3 <= flags else "below x86-64-v3"
    return {"cpu": model, "flags_level": level, "cores": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__}


def bench_size(n: int, args: argparse.Namespace, base: Path, *, reveal: bool, profile: int) -> dict[str, Any]:
    folder = base / f"n{n}"
    if folder.exists():
        shutil.rmtree(folder)
    write_board_toml(folder, args.canaries)
    write_hidden_set(folder / "hidden.jsonl", n)
    res: dict[str, Any] = {"texts": n, "canaries": args.canaries, "utc_start": time.strftime("%H:%M:%S", time.gmtime()),
                           "load_start": os.getloadavg()[0], "yardstick_sort_cpu_s": yardstick()}
    res |= run_child("launch", folder)
    for s in (*SEEDS, PROFILE_SEED):
        write_predictions(folder, s)
    res["predictions_mib"] = round((folder / f"predictions-{SEEDS[0]}.json").stat().st_size / 2**20, 1)
    res |= run_child("submit", folder)
    want = [sklearn_auroc(folder, s) for s in SEEDS]
    res["sklearn_auroc"] = want
    if any(h is None for h in res["headlines"]):
        raise SystemExit(f"n={n}: a headline is null (fewer than min_cell_size human or AI texts?): {res['headlines']}")
    bad = [(k, h, w) for k, (h, w) in enumerate(zip(res["headlines"], want, strict=True))
           if not math.isclose(h, w, rel_tol=0.0, abs_tol=AUROC_BOUND)]
    res["max_abs_diff"] = max(abs(h - w) for h, w in zip(res["headlines"], want, strict=True))
    if bad:
        raise SystemExit(f"n={n}: headline differs from scikit-learn's AUROC beyond {AUROC_BOUND}: {bad}")
    if profile:
        res |= run_child("profile", folder, "--profile", str(profile))
    if reveal:
        res |= run_child("reveal", folder)
        lad = res["ladder_headlines"][:len(SEEDS)]
        if not res["revealed_labels_match_layout"] or any(
                h is None or abs(h - w) > AUROC_BOUND for h, w in zip(lad, want, strict=True)):
            raise SystemExit(f"n={n}: the revealed ladder.json or labels disagree: {lad} vs {want}")
    res["utc_end"] = time.strftime("%H:%M:%S", time.gmtime())
    res["load_end"] = os.getloadavg()[0]
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    return res


def show(r: dict[str, Any]) -> None:
    def f(d: dict[str, float]) -> str:
        return f"{d['cpu_s']:.2f} s CPU ({d['wall_s']:.2f} s wall), peak RSS {d['peak_rss_mib']:.0f} MiB"
    print(f"n = {r['texts']:,} texts (+{r['canaries']} canaries), {r['utc_start']}-{r['utc_end']} UTC, "
          f"load {r['load_start']:.1f}-{r['load_end']:.1f}, yardstick {r['yardstick_sort_cpu_s']} s")
    print(f"  launch (open + launch + team):   {f(r['launch'])}")
    print(f"  Board.open before submitting:    {f(r['open'])}; held {r['before_submit_peak_rss_mib']:.0f} MiB "
          f"before the first submission; predictions.json {r['predictions_mib']} MiB")
    for k in (1, 2, 3):
        print(f"  submission {k} ({'cold' if k == 1 else 'warm'}):          {f(r[f'submit_{k}'])}")
    print(f"  checks: {r['receipts_verified']} receipts verify; headline - sklearn AUROC max |diff| "
          f"{r['max_abs_diff']:.1e}" + (f"; revealed: {f(r['reveal'])}, ladder.json and labels agree"
                                       if "reveal" in r else ""))
    if "profile" in r:
        print(f"  profiled 4th submission (fresh process): {f(r['profile'])}\n{r['profile_text']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000, 672_000])
    ap.add_argument("--canaries", type=int, default=3)
    ap.add_argument("--reveal", type=int, nargs="*", default=None,
                    help="sizes to reveal and check (default: the smallest)")
    ap.add_argument("--profile", type=int, default=0, help="top N by cumulative time of a 4th submission")
    ap.add_argument("--profile-size", type=int, default=100_000)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--keep", type=Path, help="keep the boards in this folder")
    ap.add_argument("--child", choices=["launch", "submit", "profile", "reveal"], help=argparse.SUPPRESS)
    ap.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        phases = {"launch": child_launch, "submit": child_submit, "reveal": child_reveal}
        out = child_profile(args.dir, args.profile) if args.child == "profile" else phases[args.child](args.dir)
        print(json.dumps(out))
        return
    reveal = set(args.reveal if args.reveal is not None else [min(args.sizes)])
    info = machine()
    print(f"{info['cpu']}, {info['cores']} cores, {info['flags_level']}, Python {info['python']}, "
          f"numpy {info['numpy']}")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        for n in args.sizes:
            r = bench_size(n, args, base, reveal=n in reveal,
                           profile=args.profile if n == args.profile_size else 0)
            show(r)
            results.append(r)
            if args.json:
                args.json.write_text(json.dumps({"machine": info, "runs": results}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
