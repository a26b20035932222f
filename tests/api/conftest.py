"""Fixtures for the API adapter tests: the fake vendor server, keys in the environment,
fast retry/poll settings, and real texts from the HumanizerBench bundle."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from vendor_fakes import COPYLEAKS_EMAIL, VENDOR_KEYS, FakeVendors


@pytest.fixture()
def fake():
    srv = FakeVendors()
    yield srv
    srv.close()


@pytest.fixture()
def keys(monkeypatch):
    for v, k in VENDOR_KEYS.items():
        monkeypatch.setenv(f"VERIBENCH_{v.upper()}_API_KEY", k)
    monkeypatch.setenv("VERIBENCH_COPYLEAKS_EMAIL", COPYLEAKS_EMAIL)
    return VENDOR_KEYS


@pytest.fixture(scope="session")
def real_texts(data_dir):
    """Distinct real source texts (HumanizerBench July 2026 samples), each > 300 characters and > 50 words."""
    rows = json.loads((data_dir / "humanizerbench" / "July 2026" / "samples.json").read_text())
    texts = [r["input_text"] for r in rows if len(r["input_text"]) > 400 and len(r["input_text"].split()) > 60]
    assert len(texts) >= 25
    return texts
