"""``veribench score`` end to end (local engine and Ray Data), with the workspace cache."""

from __future__ import annotations

import json
import re
import time

import pytest
from typer.testing import CliRunner

from veribench.cli.main import app
from veribench.detectors.local import zeroshot as zs
from veribench.detectors.local.engine.memo import MEMO, STATS
from veribench.detectors.local.tolerance import within_fp32
from veribench.store import writes


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_score_cli_local_rows_and_cache(tmp_path, llama_path, texts):
    inp, out, ws = tmp_path / "in.jsonl", tmp_path / "out.jsonl", tmp_path / "ws"
    rows = [{"id": f"t{i}", "text": t} for i, t in enumerate(texts)] + [{"id": "blank", "text": "   "}]
    _write(inp, rows)
    args = ["score", "--detector", "fast-detectgpt", "--set", f"model={llama_path}", "--set", "max_tokens=64",
            "--input", str(inp), "--out", str(out), "--workspace", str(ws), "--no-progress"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 1 and "1 of 8 texts failed (unscorable: 1)" in r.output, r.output  # every row written
    got = _read(out)
    assert [g["id"] for g in got] == [x["id"] for x in rows]
    want = zs.FastDetectGPT(model=llama_path, max_tokens=64).score_batch(texts)
    for g, w in zip(got, want):
        assert g["detector"] == "fast-detectgpt" and g["status"] == "ok"
        assert g["statistic"] == pytest.approx(w.raw, rel=1e-9) and g["ai_probability"] is None
        assert {"n_tokens", "tokens_used", "truncated"} <= set(g["detail"])
    assert got[-1]["status"] == "unscorable" and got[-1]["statistic"] is None
    # second run: everything from the workspace cache, no forward pass
    MEMO.clear()
    STATS.reset()
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 1 and "8 from cache" in r.output, r.output  # unscorable is final: served from the cache
    assert STATS.texts_forwarded == {}


def test_score_cli_bad_input_names_file_record_field(tmp_path):
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "text": "ok"}\n{"id": "b"}\n')
    r = CliRunner().invoke(app, ["score", "--detector", "loglik", "--input", str(inp), "--out",
                                 str(tmp_path / "o.jsonl"), "--workspace", str(tmp_path / "ws")])
    assert r.exit_code == 1
    assert "in.jsonl" in r.output and "record line 2" in r.output and "'text'" in r.output
    inp.write_text('{"id": "a", "text": "ok"}\n')
    r = CliRunner().invoke(app, ["score", "--detector", "logrnak", "--input", str(inp), "--out",
                                 str(tmp_path / "o.jsonl"), "--workspace", str(tmp_path / "ws")])
    assert r.exit_code == 1 and "logrank" in r.output  # did-you-mean


@pytest.mark.slow
def test_ray_engine_same_results_and_cache(tmp_path, llama_path, texts, cases_dir, workspace):
    ray = pytest.importorskip("ray")
    from veribench.detectors.local.ray_engine import RayDetector
    from veribench.detectors.pipeline import RunStats, score_texts

    long_text = (cases_dir / "c11" / "long_text.txt").read_text()
    all_texts = texts + [long_text, ""]
    settings = {"model": llama_path, "max_tokens": 96, "device": "cpu"}
    local = zs.ZeroShotDetector("logrank", **settings).score_batch(all_texts)
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        det = RayDetector("logrank", settings, actor_batch=4)
        assert det.spec.hash == zs.ZeroShotDetector("logrank", **settings).spec.hash
        # one text already cached: the driver sends only the others
        from veribench.hashing import text_sha256

        writes.put_scores(workspace, det.spec, [(text_sha256(all_texts[0]), local[0])])
        st = RunStats()
        res = score_texts(workspace, det, all_texts, stats=st)
        assert st.cached == 1 and st.computed + st.failed == len(all_texts) - 1
        for t, want in zip(all_texts, local):
            got = res[text_sha256(t)]
            assert got.status == want.status
            if want.status == "ok":
                assert within_fp32(got.raw, want.raw, tokens=want.detail["tokens_used"], vocab=333)  # tiny models
                assert got.detail["truncated"] == want.detail["truncated"]
        assert res[text_sha256(long_text)].detail["truncated"] is True  # c11 in the Ray engine
        st2 = RunStats()
        score_texts(workspace, det, all_texts, stats=st2)
        assert st2.cached == len(all_texts) and st2.computed == 0
    finally:
        ray.shutdown()


def test_score_cli_scoring_count_moves_with_the_engine_packs(tmp_path, llama_path, texts, monkeypatch):
    """Issue 25 walk: ``veribench score`` of a model detector printed ``scoring loglik: 0/N
    texts (0%)`` until the whole batch returned, while the engine's own ``forward`` line
    advanced. The scoring count now moves as each pack of the forward pass ends (redirected
    output, one text per pack, each pack slowed so that lines come in between)."""
    from veribench.detectors.local.engine import schedule

    orig = schedule._Progress.advance

    def slow(self, n, tokens):
        time.sleep(0.05)
        orig(self, n, tokens)

    monkeypatch.setattr(schedule._Progress, "advance", slow)
    inp = tmp_path / "in.jsonl"
    _write(inp, [{"id": f"t{i}", "text": t} for i, t in enumerate(texts)])
    args = ["score", "-d", "loglik", "--set", f"model={llama_path}", "--set", "max_tokens=32", "--set", "batch_size=1",
            "--set", "packing=padded", "-i", str(inp), "-o", str(tmp_path / "out.jsonl"), "-w", str(tmp_path / "ws")]
    r = CliRunner().invoke(app, args, env={"VERIBENCH_PROGRESS_INTERVAL": "0.01"})
    assert r.exit_code == 0, r.output
    n = len(texts)
    counts = [int(m.group(1)) for line in r.stderr.splitlines()
              if (m := re.search(rf"scoring loglik\S*: (\d+)/{n} texts", line))]
    assert any(0 < c < n for c in counts), r.stderr
