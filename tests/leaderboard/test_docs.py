"""docs/leaderboard.md against the code: the board.toml reference names every key of the
pydantic model with its type and default, every headline metric, and the documented shell
command reproduces a receipt's ``commitment_sha256``."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import types
import typing
from datetime import datetime
from pathlib import Path

from fastapi.routing import APIRoute
from pydantic_core import PydanticUndefined
from typer.testing import CliRunner

from tests.leaderboard.board_helpers import board_toml, hidden_set, labels_of
from tests.leaderboard.fake_board import FakeBoard
from veribench.cli.main import app
from veribench.hashing import canonical_json, sha256_bytes
from veribench.leaderboard.app import create_app
from veribench.leaderboard.config import HEADLINES, BoardModel, CalibrationSplit
from veribench.leaderboard.service import Board
from veribench.protocol.model import Gap
from veribench.store import Workspace

DOC = Path(__file__).resolve().parents[2] / "docs" / "leaderboard.md"


def _reference() -> dict[str, list[str]]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## `board.toml` reference", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"^\| `([a-z_.]+)` \| (.+)$", line)
        if m:
            rows[m.group(1)] = [c.strip() for c in m.group(2).rstrip("|").split(" | ")]
    return rows


def _type(ann: object) -> str:
    args = [a for a in typing.get_args(ann) if a is not type(None)]
    if typing.get_origin(ann) in (typing.Union, types.UnionType):
        kinds = {_type(a) for a in args}
        return " or ".join(sorted(kinds)) if len(kinds) > 1 else kinds.pop()
    if typing.get_origin(ann) is typing.Literal or ann is str:
        return "string"
    if typing.get_origin(ann) is list:
        return f"list of {_type(args[0])}s"
    if isinstance(ann, type) and issubclass(ann, CalibrationSplit | Gap):
        return "table"
    return {int: "integer", float: "float", datetime: "date-time"}[ann]  # type: ignore[index]


def _default(field: typing.Any) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "required"
    value = field.default_factory() if field.default_factory is not None else field.default
    return "none" if value is None else f"`{json.dumps(value)}`"


def test_the_board_toml_reference_documents_every_key_its_type_and_default():
    rows = _reference()
    fields = {**BoardModel.model_fields, **{f"calibration.{k}": v for k, v in CalibrationSplit.model_fields.items()}}
    assert set(rows) == set(fields), (set(fields) ^ set(rows))
    for key, f in fields.items():
        typ, default, meaning = rows[key]
        assert typ == _type(f.annotation), (key, typ)
        assert default == _default(f), (key, default)
        assert meaning
    for name in HEADLINES:
        assert f"`{name}`" in rows["headline_metric"][2]
    assert rows["min_cell_size"][1] == "`30`" and rows["submission_limit"][1] == "`10`"


def test_the_documented_command_reproduces_commitment_sha256(tmp_path):
    """The receipt's commitment_sha256 is SHA-256 of canonical JSON (sorted keys, compact,
    UTF-8); the shell command in the docs computes the same from any layout of the file."""
    text = DOC.read_text(encoding="utf-8")
    (cmd,) = [x for x in text.splitlines() if x.startswith("python3 -c ") and "sha256" in x]
    record = {"format": "veribench-board-commitment/1", "n": 3, "board": "détect", "root": "ab" * 32,
              "timestamp": {"tsa_url": None, "token": None, "reason": "no time-stamp: no TSA configured"},
              "notes": ["ü"], "z": 1.5}
    (tmp_path / "commitment.json").write_text(json.dumps(record, indent=3), encoding="utf-8")
    argv = shlex.split(cmd)
    out = subprocess.run([sys.executable, *argv[1:]], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == sha256_bytes(canonical_json(record).encode("utf-8"))


def test_the_documented_raid_path_launches_a_board(tmp_path, monkeypatch):
    """The docs' three commands: RAID's CSV through a workspace, out as documents, into
    ``launch``; attacked texts arrive as side rows (counted apart in the launch's notes)."""
    text = DOC.read_text(encoding="utf-8")
    block = text.split("## The hidden set", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    cmds = [shlex.split(line.split("#", 1)[0]) for line in block.splitlines() if line.strip()]
    assert [c[:3] for c in cmds] == [["veribench", "import", "raid"], ["veribench", "export", "documents"],
                                     ["veribench", "leaderboard", "launch"]]
    raid = Path(__file__).resolve().parents[1] / "data" / "public" / "raid" / "train.csv"
    (tmp_path / "board.toml").write_text('[board]\nname = "raid-test"\nmin_cell_size = 1\n'
                                         'headline_metric = "auroc"\n', encoding="utf-8")
    subs = {"train.csv": str(raid), "board.toml": str(tmp_path / "board.toml")}
    runner = CliRunner()
    monkeypatch.chdir(tmp_path)
    for c in cmds:
        args = [subs.get(a, a) for a in c[1:]]
        res = runner.invoke(app, [*args, *(["--no-progress"] if c[1] == "import" else [])], catch_exceptions=False)
        assert res.exit_code == 0, (c, res.output)
    record = json.loads((tmp_path / "commitment.json").read_text())
    with Workspace(tmp_path / "raid-ws", read_only=True) as ws:
        n_docs = ws.con.execute("select count(*) from documents").fetchone()[0]
    assert record["n"] == n_docs > 0


def test_every_board_address_the_guide_fetches_is_a_get_route_and_the_key_is_saved_at_launch():
    """Each ``curl ... https://board.example.org/PATH`` of the guide names a GET route of the
    app (e.g. ``/public-key``, not a guessed name); the launch-record section tells
    submitters to save the public key with the launch record."""
    text = DOC.read_text(encoding="utf-8")
    routes = {r.path for r in create_app(FakeBoard(texts=[])).routes
              if isinstance(r, APIRoute) and "GET" in r.methods}
    fetched = set(re.findall(r"curl [^\n]*?https://board\.example\.org(/[\w./-]*)", text))
    assert {"/commitment", "/commitment.tsr", "/public-key"} <= fetched and fetched <= routes, fetched - routes
    section = text.split("## Keep the launch record", 1)[1].split("\n## ", 1)[0]
    assert "curl -fsS https://board.example.org/public-key > board.pem" in section


def test_canaries_are_exact_copies_with_the_documented_visible_marker(tmp_path):
    """The guide's canary: an exact copy of a hidden text with ``[ref <32 hex>]`` appended
    (after a blank line), the same label; checked on the texts a launched board serves."""
    assert "[ref <32 hex>]" in DOC.read_text(encoding="utf-8")
    assert "[ref <32 hex>]" in (DOC.parent / "statistics.md").read_text(encoding="utf-8")
    cfg = board_toml(tmp_path / "board", f"sqlite:///{tmp_path / 'b.sqlite'}", canaries=5)
    with Board.open(cfg) as board:
        board.launch(hidden_set(tmp_path / "h.jsonl", n=40), "documents")
        texts = {d["id"]: d["text"] for d in map(json.loads, board.texts_file().decode().splitlines())}
    labels = labels_of(cfg.parent, list(texts))
    marked = {k: re.fullmatch(r"(.*)\n\n\[ref [0-9a-f]{32}\]", v, flags=re.S) for k, v in texts.items()}
    canaries = {k: m.group(1) for k, m in marked.items() if m}
    assert len(canaries) == 5 and len(texts) == 45
    plain = {v: k for k, v in texts.items() if k not in canaries}
    for k, copied in canaries.items():
        assert copied in plain and labels[plain[copied]] == labels[k]
