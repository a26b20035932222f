"""``veribench demo`` end to end, with the SmolLM2 detectors: what issues 13, 14 and 18 add
to it (attacks with robustness rows, pairwise comparisons, the TOEFL against US-essay gap,
the paper's agreement row), and a second run that scores and derives nothing."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from tests.cli.demo_baseline import baseline, differences
from veribench.cli.demo import DEMO_ATTACK_PER_SET, DEMO_ATTACKS
from veribench.cli.main import app
from veribench.detectors.local import models
from veribench.detectors.local.engine.memo import STATS
from veribench.store import Workspace

LIANG = ["GPTZero", "OriginalityAI", "ZeroGPT", "Crossplag", "HFOpenAI", "Quil", "Sapling"]
SMOL = ["Log-likelihood (SmolLM2-135M)", "Log-rank (SmolLM2-135M)", "Entropy (SmolLM2-135M)", "LRR (SmolLM2-135M)",
        "Fast-DetectGPT (SmolLM2-135M)"]
ZIPPY = "ZipPy (brotli)"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    if models.missing_packages("smollm2"):
        pytest.skip("the SmolLM2 detectors' packages are not installed")
    root = tmp_path_factory.mktemp("demo")
    runner = CliRunner()
    args = ["demo", "--workspace", str(root / "ws"), "--out", str(root / "out")]
    before = sum(v for k, v in STATS.texts_forwarded.items() if k[0] == "smollm2")
    first = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert first.exit_code == 0, first.output[-3000:]
    forwarded = sum(v for k, v in STATS.texts_forwarded.items() if k[0] == "smollm2") - before
    res = json.loads((root / "out" / "results.json").read_text())
    second = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert second.exit_code == 0, second.output[-3000:]
    res2 = json.loads((root / "out" / "results.json").read_text())
    with Workspace(root / "ws") as ws:
        distinct = ws.query("SELECT count(DISTINCT u.submitted_sha256) FROM submissions u JOIN specs s "
                            "ON s.spec_hash = u.spec_hash WHERE s.name = 'loglik'")[0][0]
    return {"first": first.output, "second": second.output, "res": res, "res2": res2, "forwarded": forwarded,
            "distinct": distinct}


@pytest.mark.slow
def test_demo_gives_the_results_of_f6c21e4(demo):
    """Issue 23: results.json as before the write path and layer moves, except event hashes
    and times; the SmolLM2 detectors' numbers (fp32 forward passes, whose last bits differ
    between CPUs) are left to test_smollm2.py, their rows' keys and strings are compared."""
    assert differences(baseline("full"), demo["res"], skip_model_numbers=True) == []


@pytest.mark.slow
def test_demo_attacks_the_ai_texts_and_prints_robustness_rows(demo):
    out, res = demo["first"], demo["res"]
    n = 5 * DEMO_ATTACK_PER_SET  # five fast-detect-gpt sets
    for a in DEMO_ATTACKS:
        assert f"{a}: derived {n} document(s) from {n} source(s)" in out
    rows = res["robustness"]
    assert {(r["detector"], r["attack"]) for r in rows} == {(d, a) for d in [ZIPPY, *SMOL] for a in DEMO_ATTACKS}
    # every attacked source is in the test split, so every derived text pairs
    assert all(r["metric"] == "catch_rate" and r["n_pairs"] == n and r["n_derived"] == n for r in rows)
    assert "Robustness" in out and all(d.split(" (")[0] in out for d in SMOL)
    # derived texts never enter the headline rates: Table 1 counts the corpus's own texts
    fdg = next(g for g in res["table1_groups"] if g["corpora"] == ["fastdetectgpt"])
    t1 = [r for r in res["table1"] if r.get("group") == fdg["id"]]
    assert {r["human_n"] + r["ai_n"] for r in t1} == {94}  # the 120 pairs' test split, duplicates removed


@pytest.mark.slow
def test_demo_compares_detectors_pairwise_on_the_fast_detect_gpt_slice(demo):
    res = demo["res"]
    auroc = [r for r in res["comparisons"] if r["slice"] == "corpus:fastdetectgpt · all" and r["metric"] == "auroc"]
    assert len(auroc) == 15  # 6 detectors: every pair once
    assert all(r["test"] and (r["p_value"] is None or 0 <= r["p_value"] <= 1) for r in auroc)
    assert {r["a"] for r in auroc} | {r["b"] for r in auroc} == {ZIPPY, *SMOL}


@pytest.mark.slow
def test_demo_gap_and_agreement_are_the_papers(demo):
    res = demo["res"]
    gaps = {r["detector"]: r for r in res["gaps"]}
    assert set(gaps) == {*LIANG, ZIPPY}  # detectors of other corpora get no row
    # Liang et al. (2023): every detector flags TOEFL essays far more often than US essays
    assert all(gaps[d]["ci95"][0] > 0 for d in LIANG)
    row = next(a for a in res["agreement"] if a["subgroup"] == "TOEFL_real_91" and a["label"] == "human")
    assert (row["flagged_by_any"], row["flagged_by_all"], row["n_detectors"]) == (89, 18, 7)


@pytest.mark.slow
def test_second_demo_run_scores_and_derives_nothing(demo):
    out = demo["second"]
    assert "already imported" in out and "already committed" in out
    assert not re.search(r"scoring \d+ documents", out)
    for a in DEMO_ATTACKS:
        assert re.search(rf"{a}: derived 0 document", out), out[:2000]
    strip = lambda r: {k: v for k, v in r.items() if k not in ("run", "files", "trends")}  # noqa: E731
    assert strip(demo["res2"]) == strip(demo["res"])
    # the rerun compares itself with the first run: nothing moved, so no interval ("no variation")
    assert "trends" not in demo["res"] and demo["res2"]["trends"]["earlier_run"]["run_id"] == demo["res"]["run"]["run_id"]
    for row in demo["res2"]["trends"]["rows"]:
        for k in ("catch_rate", "fpr"):
            c = row[k]
            assert c["difference"] in (0.0, None) and c["ci"] is None
            assert c["ci_reason"] == "no variation" or c["paired_n"] == 0


@pytest.mark.slow
def test_demo_forwards_each_text_once_while_zippy_scores(demo):
    """The background forward passes (started once the protocol is committed) and the
    scoring step's own request for them never forward a text twice: the five detectors
    share one pass per distinct text."""
    out = demo["first"]
    assert re.search(r"SmolLM2 forward passes of \d+ texts start in the background while ZipPy scores", out)
    assert out.index("2. Commit the protocol") < out.index("start in the background")
    assert demo["forwarded"] == demo["distinct"] == 145


def test_demo_leaves_garbage_collection_on(demo):
    import gc

    assert gc.isenabled()  # the start-up pause ends with the demo (here: after two runs)


def test_startup_gc_pause_resumes_once_and_respects_a_disabled_collector():
    import gc

    from veribench.heap import CollectionPause

    assert gc.isenabled()
    p = CollectionPause()
    assert not gc.isenabled()
    n = gc.get_freeze_count()
    try:
        p.resume()
        assert gc.isenabled() and gc.get_freeze_count() >= n
        p.resume()  # idempotent
        assert gc.isenabled()
        gc.disable()
        try:
            q = CollectionPause()  # collection was off: it stays off
            q.resume()
            assert not gc.isenabled()
        finally:
            gc.enable()
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("models_on", [False, True])
def test_demo_error_leaves_the_collector_as_found_and_no_thread(tmp_path, monkeypatch, models_on):
    """An error before the scoring step: collection back on, nothing left frozen, and the
    background thread (loading the model) ends instead of waiting forever for its job."""
    import gc
    import threading

    import veribench.cli.demo as demo_mod

    if models_on and models.missing_packages("smollm2"):
        pytest.skip("the SmolLM2 detectors' packages are not installed")

    def boom(*a, **k):
        raise OSError("disk gone")

    monkeypatch.setattr(demo_mod, "_attack", boom)
    frozen = gc.get_freeze_count()
    args = ["demo", "--workspace", str(tmp_path / "ws"), "--out", str(tmp_path / "out")]
    r = CliRunner().invoke(app, args + ([] if models_on else ["--no-models"]), env={"COLUMNS": "200"})
    assert r.exit_code != 0 and "disk gone" in (r.output + repr(r.exception))
    assert gc.isenabled()
    for t in [t for t in threading.enumerate() if t.name == "veribench-prefetch"]:
        t.join(timeout=120)
        assert not t.is_alive()
    if frozen == 0:
        assert gc.get_freeze_count() == 0
