"""``manual``: humanizer outputs produced by hand (a web UI, a browser extension), imported from a file.

File formats:

- CSV with a header row, or
- JSON: a list of objects, or ``{"items": [...]}``; JSON Lines (``.jsonl``) also works.

Fields per record: ``input_text`` (or ``input_sha256`` when the input is not kept),
``output_text``, optional ``status`` (default ``ok``; else a reason code such as
``refused`` or ``site_down``), ``date`` (when the output was produced), ``settings``
(the UI mode/options used; JSON object or a JSON string in CSV), ``vendor_version``,
``humanizer`` (the tool's name). The spec records the tool name and the file's SHA-256,
so re-importing a changed file is a new humanizer configuration.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from veribench.errors import InputError
from veribench.hashing import sha256_bytes, text_sha256
from veribench.humanizers.base import HumanizeResult
from veribench.records import STATUS_CODES
from veribench.spec import Spec

ADAPTER_VERSION = "1"


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Records of a CSV, JSON or JSON Lines file (see the module docstring).

    Raises:
        InputError: unreadable file, bad JSON, or a record that is not an object.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("no such file or folder", file=str(p), field="path") from None
    except UnicodeDecodeError:
        raise InputError("file is not UTF-8", file=str(p)) from None
    suf = p.suffix.lower()
    if suf == ".csv":
        return [dict(r) for r in csv.DictReader(io.StringIO(text))]
    if suf == ".jsonl":
        rows = []
        for i, line in enumerate(text.splitlines()):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as e:
                    raise InputError(f"bad JSON: {e}", file=str(p), record=i) from None
    else:
        try:
            data = json.loads(text)
        except ValueError as e:
            raise InputError(f"bad JSON: {e}", file=str(p)) from None
        rows = data.get("items") if isinstance(data, dict) else data
        if not isinstance(rows, list):
            raise InputError("expected a list of records or {'items': [...]}", file=str(p))
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            raise InputError("record is not an object", file=str(p), record=i)
    return rows


class ManualHumanizer:
    """Outputs looked up by input SHA-256 from an imported file; sends nothing, costs nothing.

    Args:
        path: CSV / JSON / JSONL file.
        tool: the humanizer's name as recorded (default: the records' ``humanizer`` field).

    Inputs with no record get ``bad_response`` with reason "no manual output recorded".

    Raises:
        InputError: naming file, record and field, for a missing input/output field, an
            unknown status, duplicate inputs with different outputs, or bad ``settings`` JSON.
    """

    cost_unit = "words"
    batch_size = 64

    def __init__(self, path: str, tool: str | None = None):
        self.path = str(path)
        raw = Path(path).read_bytes() if Path(path).is_file() else b""
        rows = read_records(path)
        self.table: dict[str, HumanizeResult] = {}
        tools = set()
        for i, r in enumerate(rows):
            inp, isha = r.get("input_text"), r.get("input_sha256")
            if isinstance(inp, str) and inp:
                sha = text_sha256(inp)
                if isha and isha != sha:
                    raise InputError("input_sha256 does not match input_text", file=self.path, record=i,
                                     field="input_sha256")
            elif isinstance(isha, str) and len(isha) == 64:
                sha = isha.lower()
            else:
                raise InputError("needs input_text or a 64-hex input_sha256", file=self.path, record=i,
                                 field="input_text")
            status = (r.get("status") or "ok").strip() if isinstance(r.get("status") or "ok", str) else None
            if status not in STATUS_CODES:
                raise InputError(f"unknown status {r.get('status')!r}; known: {sorted(STATUS_CODES)}",
                                 file=self.path, record=i, field="status")
            out = r.get("output_text")
            if status == "ok" and (not isinstance(out, str) or not out.strip()):
                raise InputError("status ok needs a non-empty output_text", file=self.path, record=i,
                                 field="output_text")
            settings = r.get("settings")
            if isinstance(settings, str) and settings.strip():
                try:
                    settings = json.loads(settings)
                except ValueError:
                    raise InputError("settings is not valid JSON", file=self.path, record=i, field="settings") from None
            if r.get("humanizer"):
                tools.add(str(r["humanizer"]))
            detail = {"date": r.get("date") or None, "settings": settings or None, "source_file_record": i,
                      "manual": True}
            res = (HumanizeResult(status="ok", output=out, vendor_version=r.get("vendor_version") or None, detail=detail)
                   if status == "ok" else HumanizeResult.failed(status, str(r.get("reason") or "recorded by hand"),
                                                                **detail))
            prev = self.table.get(sha)
            if prev is not None and (prev.status, prev.output) != (res.status, res.output):
                raise InputError("the same input appears twice with different outputs", file=self.path, record=i,
                                 field="output_text")
            self.table[sha] = res
        if tool is None:
            if len(tools) > 1:
                raise InputError(f"records name several humanizers {sorted(tools)}; import one at a time or set tool",
                                 file=self.path, field="humanizer")
            tool = next(iter(tools), "manual")
        self.tool = tool
        self.spec = Spec("humanizer", "manual", ADAPTER_VERSION, {"tool": tool, "file_sha256": sha256_bytes(raw)})

    def cost(self, text: str) -> float:
        return 0.0

    def humanize_batch(self, texts: Sequence[str]) -> list[HumanizeResult]:
        out = []
        for t in texts:
            r = self.table.get(text_sha256(t))
            out.append(r if r is not None else HumanizeResult.failed("bad_response", "no manual output recorded for "
                                                                     "this input", manual=True))
        return out
