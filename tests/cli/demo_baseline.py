"""Comparing a demo's ``results.json`` with the one veribench made before issue 23
(tests/data/demo-results/, made at f6c21e4): equal except the event hashes and times."""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path
from typing import Any

BASELINES = Path(__file__).resolve().parents[1] / "data" / "demo-results"
#: The paths that hold an event hash, a time or an id made of a time: they differ on every run.
VOLATILE = {"/run/chain_head/hash", "/run/created_at", "/run/run_id", "/run/protocol/commit_event_hash",
            "/run/protocol/committed_at"}
#: Relative bound for a float: every number here is a sum, mean or ratio of at most a few
#: thousand float64 terms computed from the same stored scores; a different summation order
#: (another CPU's SIMD width in numpy) moves such a value by at most n * 2**-53 relative
#: (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 4.4), below 1e-12 for
#: n <= 9,000. Nothing else may differ.
REL = 1e-12


def baseline(name: str) -> dict[str, Any]:
    """A stored baseline: ``no-models`` or ``full``."""
    return json.loads(gzip.decompress((BASELINES / f"{name}-f6c21e4.json.gz").read_bytes()))


_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _model_row(d: dict[str, Any]) -> bool:
    return any(isinstance(v, str) and "SmolLM2" in v for v in d.values())


def differences(old: Any, new: Any, *, skip_model_numbers: bool = False, path: str = "") -> list[str]:
    """Every place where ``new`` is not ``old``, as ``path: old != new`` lines.

    Args:
        skip_model_numbers: numbers inside an object that names a SmolLM2 detector are not
            compared (they come from fp32 forward passes, whose last bits differ between
            CPUs); their keys, strings and shapes still are.
    """
    if path in VOLATILE:
        return []
    out: list[str] = []
    if isinstance(old, dict) and isinstance(new, dict):
        if set(old) != set(new):
            return [f"{path}: keys {sorted(set(old) ^ set(new))} differ"]
        skip = skip_model_numbers and (_model_row(old) or _model_row(new))
        for k in old:
            sub = differences(old[k], new[k], skip_model_numbers=skip_model_numbers, path=f"{path}/{k}")
            if skip or (skip_model_numbers and "SmolLM2" in str(k)):  # a row, or a block keyed by a SmolLM2 name
                sub = [s for s in sub if not s.endswith("(number)")]
            out += sub
        return out
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{path}: {len(old)} items != {len(new)}"]
        for i, (a, b) in enumerate(zip(old, new)):
            out += differences(a, b, skip_model_numbers=skip_model_numbers, path=f"{path}[{i}]")
        return out
    if isinstance(old, float) and isinstance(new, (int, float)) and not isinstance(new, bool):
        if not math.isclose(old, new, rel_tol=REL, abs_tol=0.0):
            return [f"{path}: {old!r} != {new!r} (number)"]
        return []
    if isinstance(old, int) and not isinstance(old, bool) and isinstance(new, float):
        return differences(float(old), new, skip_model_numbers=skip_model_numbers, path=path)
    if isinstance(old, str) and isinstance(new, str) and old != new and _NUMBER.sub("#", old) == _NUMBER.sub("#", new):
        # the same text around different numbers ("oriented score > -3.16958" / "-3.16957"): a
        # model-derived number written into a string is a number too (issue 25: the last digits
        # follow the CPU's kernels, docs/statistics.md "Numerical tolerance across CPUs")
        return [f"{path}: {old!r} != {new!r} (number)"]
    if old != new or type(old) is not type(new):
        return [f"{path}: {old!r} != {new!r}" + (" (number)" if isinstance(old, (int, float)) else "")]
    return []
