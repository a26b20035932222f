"""A stand-in for :class:`veribench.leaderboard.service.Board` with the contract's methods,
for the app's request-handling tests (auth, caps, limits, CSRF, paths); the end-to-end
tests use the real board."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from veribench.errors import VeribenchError
from veribench.hashing import sha256_bytes
from veribench.leaderboard import raid_format, receipts


@dataclass(frozen=True)
class Team:
    name: str


@dataclass
class FakeBoard:
    texts: list[dict[str, str]]
    tokens: dict[str, Team] = field(default_factory=dict)
    stored: list[tuple[Team, dict[str, Any]]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    key: Ed25519PrivateKey = field(default_factory=Ed25519PrivateKey.generate)

    def add_team(self, name: str) -> str:
        token = secrets.token_urlsafe(32)
        self.tokens[token] = Team(name)
        return token

    def team_for_token(self, token: str) -> Team | None:
        return self.tokens.get(token)

    def texts_file(self) -> bytes:
        return "".join(json.dumps(t) + "\n" for t in self.texts).encode()

    def submit(self, team: Team, predictions: bytes, metadata: bytes | None, fmt: str) -> dict[str, Any]:
        """RAID's formats read by the real reader; a real signed receipt."""
        self.calls.append("submit")
        raid_format.read_predictions(predictions, source="predictions.json", ids=[t["id"] for t in self.texts])
        if metadata is not None:
            raid_format.read_metadata(metadata, source="metadata.json")
        receipt = receipts.sign_receipt(self.key, board="fake", commitment_sha256="0" * 64, team=team.name,
                                        predictions_sha256=sha256_bytes(predictions),
                                        received_at="2026-12-05T14:00:00Z", submission_id=secrets.token_hex(8),
                                        submission_n=len(self.stored) + 1, released=None)
        self.stored.append((team, receipt))
        return receipt

    def public_scores(self) -> list[dict[str, Any]]:
        """The service's row shape; no score is ever released here."""
        teams = sorted({t.name for t in self.tokens.values()})
        return [{"team": name, "metric": "tpr_at_fpr_5", "metric_description": "TPR at 5% FPR on the whole set",
                 "released": None, "released_reason": "no score released yet",
                 "submissions": sum(t.name == name for t, _ in self.stored), "rule": "a stand-in rule", "eta": 0.01}
                for name in teams]

    def team_submissions(self, team: Team) -> list[dict[str, Any]]:
        return [dict(r) for t, r in self.stored if t == team]

    def results(self) -> dict[str, Any]:
        raise VeribenchError("board fake is not revealed yet")

    def commitment(self) -> dict[str, Any]:
        return {"format": "veribench-board-commitment/1", "root": "0" * 64}

    def commitment_token(self) -> bytes | None:
        return None

    @property
    def public_key_pem(self) -> str:
        return receipts.public_key_pem(self.key)
