"""The converted-GGUF cache: keyed by the GGUF file's SHA-256 and the converter version,
written to a temporary folder and renamed into place, so a crash or a concurrent
conversion never leaves a partial checkpoint under the final name.

transformers' GGUF reader is replaced here by a tiny GPT-2 (the conversion logic around
it is what is tested, in milliseconds); the real reader runs on SmolLM2's GGUF file in
``test_smollm2.py`` and in the demo.
"""

from __future__ import annotations

import json
import re
import threading
import time

import pytest
import torch
from typer.testing import CliRunner

from veribench.cli.main import app
from veribench.detectors.local import models


@pytest.fixture()
def fake_gguf(tmp_path, monkeypatch, gpt2_path):
    """A .gguf file (arbitrary bytes) whose "reader" returns the tiny GPT-2 fixture."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    monkeypatch.setenv("VERIBENCH_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "models" / "tiny.Q4_1.gguf"
    src.parent.mkdir()
    src.write_bytes(b"GGUF" + bytes(range(256)) * 64)
    real_model, real_tok = AutoModelForCausalLM.from_pretrained, AutoTokenizer.from_pretrained
    reads = {"n": 0}

    def read_model(where, *a, gguf_file=None, **kw):
        if gguf_file is None:
            return real_model(where, *a, **kw)
        reads["n"] += 1
        return real_model(gpt2_path, *a, **kw)

    def read_tok(where, *a, gguf_file=None, **kw):
        return real_tok(gpt2_path if gguf_file else where, *a, **kw)

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", read_model)
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", read_tok)
    models.clear_cache()
    yield src, reads
    models.clear_cache()


def _entries(root):
    return sorted(p.name for p in (root / "models").iterdir()) if (root / "models").exists() else []


def test_conversion_is_keyed_by_file_hash_and_converter_version(fake_gguf, tmp_path, gpt2_path):
    src, reads = fake_gguf
    sha = models.file_sha256(src)
    d = models.convert_gguf(src)
    assert d.name == f"tiny.Q4_1-{sha[:16]}-c{models.CONVERTER_VERSION}"
    man = json.loads((d / models.MANIFEST).read_text())
    assert man["gguf_sha256"] == sha and man["converter_version"] == models.CONVERTER_VERSION
    assert "quantization_config" not in json.loads((d / "config.json").read_text())
    assert man["files"]["model.safetensors"] == (d / "model.safetensors").stat().st_size
    assert _entries(tmp_path / "cache") == [d.name]  # no temporary folder left
    # loading the .gguf path now reads the checkpoint: no second conversion, same logits
    lm = models.load_causal_lm(str(src), device="cpu", dtype="float32")
    assert reads["n"] == 1
    ref = models.load_causal_lm(gpt2_path, device="cpu", dtype="float32")
    ids = torch.tensor([[1, 5, 9, 2]])
    with torch.no_grad():
        assert torch.equal(lm.model(ids).logits, ref.model(ids).logits)
    # new bytes, new key: the old checkpoint is never reused for a changed file
    src.write_bytes(src.read_bytes() + b"x")
    assert models._cached_conversion(src) is None
    assert models.conversion_dir(src).name != d.name


def test_a_crash_mid_write_leaves_no_checkpoint(fake_gguf, tmp_path, monkeypatch):
    src, _ = fake_gguf
    import safetensors.torch

    def crash(model, filename, **kw):
        with open(filename, "wb") as f:
            f.write(b"partial")
        raise RuntimeError("disk full")

    monkeypatch.setattr(safetensors.torch, "save_model", crash)
    with pytest.raises(RuntimeError, match="disk full"):
        models.convert_gguf(src)
    assert models._cached_conversion(src) is None
    assert _entries(tmp_path / "cache") == []


def test_a_damaged_checkpoint_is_converted_again(fake_gguf):
    src, reads = fake_gguf
    d = models.convert_gguf(src)
    with open(d / "model.safetensors", "r+b") as f:
        f.truncate(100)
    assert models._cached_conversion(src) is None
    where, _ = models._source(str(src))  # converts again, into the same key
    assert where == str(d) and reads["n"] == 2 and models._cached_conversion(src) == d


def test_concurrent_conversions_agree_on_one_checkpoint(fake_gguf, tmp_path):
    src, _ = fake_gguf
    first = models.convert_gguf(src)
    again = models.convert_gguf(src)  # finishes second: its rename finds a complete checkpoint
    assert again == first and _entries(tmp_path / "cache") == [first.name]
    models.clear_cache()
    got, errs = [], []

    def load():
        try:
            got.append(models.load_causal_lm(str(src), device="cpu", dtype="float32"))
        except Exception as e:  # pragma: no cover - reported below
            errs.append(e)

    ts = [threading.Thread(target=load) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errs and len({id(x) for x in got}) == 1  # one load, shared


def test_unwritable_cache_falls_back_to_reading_the_gguf(fake_gguf, tmp_path, monkeypatch):
    src, reads = fake_gguf
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("VERIBENCH_CACHE_DIR", str(blocker))
    notes: list[str] = []
    models.LOAD_LOG.append(notes.append)
    try:
        where, extra = models._source(str(src))
    finally:
        models.LOAD_LOG.remove(notes.append)
    assert extra == {"gguf_file": src.name} and where == str(src.parent)
    assert any("cannot write the model cache" in n for n in notes) and reads["n"] == 0


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("VERIBENCH_CACHE_DIR", str(tmp_path / "x"))
    assert models.cache_root() == tmp_path / "x"
    monkeypatch.delenv("VERIBENCH_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert models.cache_root() == tmp_path / "xdg" / "veribench"


@pytest.fixture()
def slow_conversion(monkeypatch):
    """The conversion takes 0.2 s longer (long enough for progress lines to come)."""
    real = models._write_conversion

    def slow(*a):
        time.sleep(0.2)
        return real(*a)

    monkeypatch.setattr(models, "_write_conversion", slow)


def test_conversion_reports_progress_lines(fake_gguf, slow_conversion, monkeypatch):
    """A long conversion prints a line every few seconds (here every 10 ms), terminal or not."""
    src, _ = fake_gguf
    monkeypatch.setattr(models, "HEARTBEAT_S", 0.01)
    lines: list[str] = []
    models.convert_gguf(src, log=lines.append)
    assert lines[0].startswith("converting tiny.Q4_1.gguf") and lines[-1].startswith("converted in")
    assert any(m.startswith("  converting tiny.Q4_1.gguf: ") for m in lines[1:-1])


def test_score_says_each_loading_stage_before_the_first_scored_text(fake_gguf, slow_conversion, tmp_path, monkeypatch):
    """Issue 25: the first SmolLM2 run printed nothing to a redirected log for 191 s (the GGUF
    conversion, the model and tokenizer loads). Each stage now prints a line at once on
    standard error, not a terminal here, before any text is counted as scored; none with
    --no-progress."""
    src, _ = fake_gguf
    monkeypatch.setenv("VERIBENCH_PROGRESS_INTERVAL", "0.05")
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"id": f"t{i}", "text": f"A short text number {i} for the model."}) + "\n"
                           for i in range(3)))
    args = ["score", "-d", "loglik", "--set", f"model={src}", "--set", "max_tokens=32", "-i", str(inp),
            "-o", str(tmp_path / "out.jsonl"), "-w", str(tmp_path / "ws")]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    lines = r.stderr.splitlines()

    def first(pattern: str) -> int:
        return next(i for i, line in enumerate(lines) if re.search(pattern, line))

    scored = next((i for i, line in enumerate(lines) if re.search(r": [1-9][\d,]*/3 texts", line)), len(lines))
    stages = [first(r"^score > scoring loglik\S*: converting tiny\.Q4_1\.gguf to an fp32 checkpoint"),
              first(r"^score > scoring loglik\S*: loading the tokenizer of .*tiny\.Q4_1\.gguf$"),
              first(r"^score > scoring loglik\S*: loading model .*tiny\.Q4_1\.gguf \(cpu, float32\)$"),
              first(r"^score > scoring loglik\S*: loaded model .*tiny\.Q4_1\.gguf in \d+\.\d s$")]
    assert stages == sorted(stages) and stages[-1] < scored, lines
    models.clear_cache()
    r = CliRunner().invoke(app, [*args[:-1], str(tmp_path / "ws2"), "--no-progress"])
    assert r.exit_code == 0 and "loading" not in r.stderr and "converting" not in r.stderr, r.stderr
