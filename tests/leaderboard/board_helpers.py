"""Helpers of the leaderboard tests: a small hidden set, a board folder, RAID-format predictions."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from veribench.corpus.stored import load_documents
from veribench.store import Workspace

DOMAINS = ("news", "books", "reviews")


def hidden_set(path: Path, n: int = 240, seed: int = 7) -> Path:
    """A hidden set of ``n`` documents (half human, half AI), tags ``domain``, as JSONL."""
    rnd = random.Random(seed)
    words = "the a of river light stone paper window garden quiet north market bright".split()
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            text = f"Document {i}. " + " ".join(rnd.choice(words) for _ in range(40)) + "."
            fh.write(json.dumps({"id": f"org-{i:04d}", "text": text, "label": "ai" if i % 2 else "human",
                                 "tags": {"domain": DOMAINS[i % 3]}}) + "\n")
    return path


def board_toml(folder: Path, db_url: str, **extra: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = ['[board]', 'name = "detect-test"', f'database_url = "{db_url}"', 'headline_metric = "auroc"',
             'ladder_eta = 0.01', 'min_cell_size = 45', 'submission_limit = 5', 'canaries = 12',
             'grid = ["domain"]']
    for k, v in extra.items():
        lines = [x for x in lines if not x.startswith(f"{k} =")] + [f"{k} = {json.dumps(v)}"]
    p = folder / "board.toml"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def board_revealing_tomorrow(tmp_path: Path, **extra: object) -> tuple[Path, str]:
    """A board folder ``tmp_path/board`` on SQLite whose ``reveal_at`` is a day from now:
    ``(board.toml, reveal_at as written)``."""
    soon = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    cfg = board_toml(tmp_path / "board", f"sqlite:///{tmp_path / 'b.sqlite'}", **extra)
    cfg.write_text(cfg.read_text() + f"reveal_at = {soon}\n")
    return cfg, soon


def labels_of(board_folder: Path, workspace_ids: list[str]) -> dict[str, str]:
    """The true labels (read from the board's workspace, as only a test may)."""
    with Workspace(board_folder / "workspace", read_only=True) as ws:
        docs = load_documents(ws, workspace_ids)
    return {k: v["label"] for k, v in docs.items()}


def predictions(ids: list[str], labels: dict[str, str], *, skill: float, seed: int) -> bytes:
    """RAID's predictions.json: ``[{"id", "score"}]``, scores in [0, 1] that separate the labels by ``skill``."""
    rnd = random.Random(seed)
    out = []
    for i in ids:
        base = 0.5 + (skill / 2 if labels[i] == "ai" else -skill / 2)
        out.append({"id": i, "score": min(1.0, max(0.0, base + rnd.gauss(0, 0.25)))})
    return json.dumps(out).encode("utf-8")


METADATA = json.dumps({"date_released": "2026-12-01", "detector_name": "Test detector",
                       "contact_info": "team@example.org", "website": None, "paper_link": None,
                       "huggingface_link": None, "github_link": None, "additional_metadata": None}).encode("utf-8")
