"""ZipPy detector: upstream equivalence, no process pool, c07 (no label for what ZipPy cannot read), c09 sign."""

from __future__ import annotations

import json
from importlib.metadata import version

import pytest
from sklearn.metrics import roc_auc_score

from veribench import registry
from veribench.detectors.local.zippy import UNSCORABLE_REASON, ZippyDetector
from veribench.detectors.pipeline import score_texts

zz = pytest.importorskip("zippy.zippy")


class _SerialPool:
    """Stands in for multiprocessing.Pool so upstream's long-text path runs in-process."""

    def __init__(self, *a, **k):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    def starmap(self, fn, it):
        return [fn(*args) for args in it]


@pytest.fixture(scope="module")
def texts(data_dir):
    d = json.loads((data_dir / "fastdetectgpt/xsum_gpt-3.5-turbo.raw_data.json").read_text())
    return d["original"][:6] + d["sampled"][:6]


@pytest.fixture(autouse=True)
def no_pool(monkeypatch):
    """Any attempt to start a process pool fails the test."""
    import multiprocessing

    def boom(*a, **k):
        raise AssertionError("a process pool was started")

    monkeypatch.setattr(multiprocessing, "Pool", boom)
    monkeypatch.setattr(zz, "Pool", boom)


@pytest.mark.parametrize("engine", ["lzma", "zlib", "brotli"])
def test_same_as_upstream_on_short_texts(engine, texts):
    det = ZippyDetector(engine=engine)
    up = zz.Zippy(engine=getattr(zz.CompressionEngine, engine.upper()))
    for t in texts:
        verdict, conf = up.run_on_text_chunked(t, chunk_size=1500)  # <= 2 chunks: no pool upstream either
        r = det.score_text(t)
        assert r.status == "ok" and r.verdict == verdict
        assert r.raw == pytest.approx(conf if verdict == "AI" else -conf, abs=1e-12)
        assert r.ai_probability is None and r.scale == "zippy_signed_delta" and r.direction == "higher_ai"


def test_long_text_in_process_matches_upstream_pool_path(texts, monkeypatch):
    long_text = " ".join(texts) * 2  # ~ 25,000 characters -> many chunks
    det = ZippyDetector(engine="zlib", chunk_size=1500)
    r = det.score_text(long_text)
    assert r.status == "ok" and r.detail["chunks"] > 2
    monkeypatch.setattr(zz, "Pool", _SerialPool)  # run upstream's pool branch serially as the reference
    verdict, conf = zz.Zippy(engine=zz.CompressionEngine.ZLIB).run_on_text_chunked(long_text, chunk_size=1500)
    assert r.verdict == verdict and abs(r.raw) == pytest.approx(conf, abs=1e-12)


def test_c07_no_label_for_text_zippy_cannot_read(cases_dir):
    det = ZippyDetector()
    got = {p.stem: det.score_text(p.read_text(encoding="utf-8")) for p in (cases_dir / "c07").iterdir()}
    for name in ("empty", "whitespace_only", "cjk_only"):
        assert got[name].status == "unscorable", name
        assert got[name].detail["reason"] == UNSCORABLE_REASON
    assert got["russian"].status == "unsupported"
    assert got["russian"].detail["deleted_letter_fraction"] == 1.0
    for r in got.values():
        assert r.raw is None and r.verdict is None and r.ai_probability is None and r.oriented is None


def test_mostly_foreign_text_unsupported_but_accents_fine():
    det = ZippyDetector(engine="brotli")
    assert det.score_text("Le café était fermé, donc nous sommes allés à la plage.").status == "ok"
    mixed = "Это очень длинное предложение на русском языке. " * 4 + "Hello there."
    assert det.score_text(mixed).status == "unsupported"


def test_c09_signed_score_ranks(cases_dir):
    recs = [json.loads(x) for x in (cases_dir / "c09/zippy_outputs.jsonl").read_text().splitlines() if x]
    from veribench.scales import normalise

    y = [r["truth"] == "ai" for r in recs]
    signed = [normalise(r["zippy"][1], "zippy_confidence", verdict=r["zippy"][0]).raw for r in recs]
    assert roc_auc_score(y, signed) == pytest.approx(0.75)


def test_spec_registry_and_pipeline(workspace, texts):
    det = registry.create("detector", "zippy", {"engine": "brotli", "chunk_size": 1000})
    assert det.spec.name == "zippy" and det.spec.version == version("thinkst-zippy")
    assert det.spec.settings == {"engine": "brotli", "chunk_size": 1000}
    out = score_texts(workspace, det, texts + ["", "你好世界"])
    assert len(out) == len(texts) + 2
    assert sum(r.status == "ok" for r in out.values()) == len(texts)
    again = score_texts(workspace, det, texts)  # from the workspace cache
    assert {k: v.raw for k, v in again.items()} == {k: out[k].raw for k in again}
    with pytest.raises(ValueError):
        ZippyDetector(engine="gzip")
