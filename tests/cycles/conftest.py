"""Fixtures for the cycles tests: writable copies of the shared HumanizerBench bundles."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def hb_dir(data_dir: Path) -> Path:
    """The read-only HumanizerBench folder (two cycles, names with a space)."""
    return data_dir / "humanizerbench"


def copy_cycle(src: Path, dst: Path) -> Path:
    """Copy a cycle folder and make the copy writable (shared data is read-only)."""
    shutil.copytree(src, dst)
    os.chmod(dst, 0o755)
    for p in dst.iterdir():
        os.chmod(p, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
    return dst


@pytest.fixture()
def july(hb_dir: Path, tmp_path: Path) -> Path:
    return copy_cycle(hb_dir / "July 2026", tmp_path / "July 2026")


@pytest.fixture()
def june(hb_dir: Path, tmp_path: Path) -> Path:
    return copy_cycle(hb_dir / "June 2026", tmp_path / "June 2026")


@pytest.fixture()
def cli():
    """Run the veribench CLI in-process; returns (exit code, combined output)."""
    from typer.testing import CliRunner

    from veribench.cli.main import app

    runner = CliRunner()

    def run(*args: str, env: dict | None = None):
        res = runner.invoke(app, [str(a) for a in args], env=env, catch_exceptions=False)
        return res.exit_code, res.output  # click >= 8.2: stdout and stderr interleaved

    return run
