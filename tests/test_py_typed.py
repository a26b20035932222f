"""``py.typed`` (PEP 561): veribench ships its inline types, so a type checker of code that
imports veribench reads them (the marker must be in the package and in its package data,
which is what puts it in the wheel)."""

from __future__ import annotations

import tomllib
from importlib.resources import files
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_py_typed_is_in_the_package_and_in_the_wheels_package_data():
    assert files("veribench").joinpath("py.typed").is_file()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["veribench"]
