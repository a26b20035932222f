"""A stand-in for :class:`veribench.leaderboard.service.Board` with the contract's methods,
for the app's request-handling tests (auth, caps, limits, CSRF, paths); the end-to-end
tests use the real board."""

from __future__ import annotations

import hashlib
import json
import math
import secrets
from dataclasses import dataclass, field
from typing import Any

from veribench.errors import InputError


@dataclass(frozen=True)
class Team:
    name: str


@dataclass
class FakeBoard:
    texts: list[dict[str, str]]
    tokens: dict[str, Team] = field(default_factory=dict)
    stored: list[tuple[Team, dict[str, Any]]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)

    def add_team(self, name: str) -> str:
        token = secrets.token_urlsafe(32)
        self.tokens[token] = Team(name)
        return token

    def team_for_token(self, token: str) -> Team | None:
        return self.tokens.get(token)

    def texts_file(self) -> bytes:
        return json.dumps(self.texts).encode()

    def submit(self, team: Team, predictions: bytes, metadata: bytes | None, fmt: str) -> dict[str, Any]:
        self.calls.append("submit")
        rows = json.loads(predictions)
        ids = {t["id"] for t in self.texts}
        for i, r in enumerate(rows):
            if r.get("id") not in ids:
                raise InputError("unknown id", file="predictions.json", record=f"{i} (id {r.get('id')!r})",
                                 field="id")
            if not isinstance(r.get("score"), (int, float)) or not math.isfinite(r["score"]):
                raise InputError("not a finite number", file="predictions.json",
                                 record=f"{i} (id {r['id']!r})", field="score")
        receipt = {"team": team.name, "submission_id": secrets.token_hex(8), "format": fmt,
                   "predictions_sha256": hashlib.sha256(predictions).hexdigest()}
        self.stored.append((team, receipt))
        return receipt

    def public_scores(self) -> list[dict[str, Any]]:
        return [{"team": t.name, "entry": r["submission_id"], "headline": None} for t, r in self.stored]

    def team_submissions(self, team: Team) -> list[dict[str, Any]]:
        return [dict(r) for t, r in self.stored if t == team]

    def results(self) -> dict[str, Any]:
        raise AssertionError("not revealed")

    def revealed(self) -> bool:
        return False

    def commitment(self) -> dict[str, Any]:
        return {"format": "veribench-board-commitment/1", "root": "0" * 64}

    def public_key_pem(self) -> str:
        return "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n"
