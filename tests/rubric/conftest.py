"""Fixtures for the editors' rubric tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

JULY = "July 2026"
JUNE = "June 2026"


@pytest.fixture(scope="session")
def july_dir(data_dir: Path) -> Path:
    return data_dir / "humanizerbench" / JULY


@pytest.fixture(scope="session")
def june_dir(data_dir: Path) -> Path:
    return data_dir / "humanizerbench" / JUNE


@pytest.fixture(scope="session")
def july_tests(july_dir: Path) -> list[dict]:
    return json.loads((july_dir / "tests.json").read_text(encoding="utf-8"))


