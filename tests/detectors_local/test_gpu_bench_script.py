"""``benchmarks/gpu_zeroshot.py`` (the prepared H200 run) works: its ``--tiny --device cpu``
mode runs every path (loop, padded, packed, packed+compiled) for every model set and the
agreement checks, through the same code as on the GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_gpu_benchmark_runs_on_cpu_with_tiny_configs(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path), "PYTHONPATH": str(REPO / "src")}
    r = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_zeroshot.py"), "--tiny", "--device", "cpu",
                        "--time-limit", "600"], capture_output=True, text=True, timeout=900, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "gpu_zeroshot.jsonl").read_text().splitlines()]
    speed = {(x["model"], x["path"]): x for x in rows if "path" in x}
    for model in ("gpt2xl", "7b"):
        for path in ("loop", "padded", "packed", "packed+compiled"):
            assert speed[(model, path)]["tokens_per_s"] > 0, (model, path)
    for path in ("padded", "packed", "packed+compiled"):
        assert speed[("pair", path)]["tokens_per_s"] > 0
        assert speed[("pair", path)]["plan"]["packing"] == ("padded" if path == "padded" else "packed")
    assert speed[("7b", "packed+compiled")]["plan"]["compiled"] is True
    assert speed[("7b", "packed+compiled")]["compiled_shapes"] >= 1
    agree = {x["model"]: x for x in rows if x.get("measure", "").startswith("agreement")}
    assert set(agree) == {"gpt2xl", "7b", "pair"}
    assert all(a["within_1e-3"] for a in agree.values())  # fp32 on CPU: the same numbers
    assert rows[-1]["done"] is True
