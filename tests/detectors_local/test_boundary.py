"""The mixed-text baseline (``detectors/local/boundary.py``): its pieces against plain
loops written here, and the detector on a tiny model built in the fixtures."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veribench import registry
from veribench.detectors.local import boundary as bd
from veribench.detectors.local.engine.passes import single_passes
from veribench.metrics.segmentation import boundary_char, sentence_spans


def plain_stats(values):
    """{boundary index: statistic} for every split of the finite values."""
    v = [(i, x) for i, x in enumerate(values) if np.isfinite(x)]
    n = len(v)
    return {v[k][0]: (np.mean([x for _, x in v[k:]]) - np.mean([x for _, x in v[:k]])) * np.sqrt(k * (n - k) / n)
            for k in range(1, n)}


def plain_best(values):
    st_ = plain_stats(values)
    if not st_:
        return None
    top = max(st_.values())
    return min(i for i, x in st_.items() if x >= top - 1e-9), top


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.floats(-8, 0), st.just(float("nan"))), min_size=0, max_size=30))
def test_best_boundary_equals_the_plain_search(values):
    got = bd.best_boundary(np.array(values, dtype=float))
    want = plain_best(values)
    if want is None:
        assert got == (None, None)
    else:  # the maximum (equal statistics, up to rounding, may pick either split)
        assert got[1] == pytest.approx(want[1], abs=1e-9)
        assert plain_stats(values)[got[0]] == pytest.approx(want[1], abs=1e-9)


def test_best_boundary_finds_a_step():
    v = np.r_[np.full(12, -5.0), np.full(7, -1.0)]
    assert bd.best_boundary(v)[0] == 12


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.floats(-5, 0), st.just(float("nan"))), min_size=1, max_size=25), st.integers(1, 7))
def test_windowed_mean_equals_the_plain_loop(values, w):
    v = np.array(values, dtype=float)
    got = bd.windowed(v, w)
    for i in range(v.size):
        lo, hi = max(0, i - w // 2), min(v.size, i - w // 2 + w)
        part = [x for x in v[lo:hi] if np.isfinite(x)]
        assert (np.isnan(got[i]) if not part else got[i] == pytest.approx(np.mean(part)))


MIXED = ("The night baker counted forty jars of plum jam because the mayor was visiting. Two cousins from Lenby "
         "repainted the bell above the chapel door. Detectors score each token by its rank and its probability "
         "under a language model. A model predicts the next token.")


def test_detector_on_a_tiny_model(gpt2_path):
    det = registry.create("detector", "boundary-loglik", {"model": gpt2_path, "max_tokens": 64, "window": 3})
    r, empty = det.score_batch([MIXED, "   "])
    assert empty.status == "unscorable"
    assert r.status == "ok", r.detail
    # recompute from the engine's public pass and the tokenizer's offsets, plainly
    lm = bd.load_causal_lm(gpt2_path, device="cpu", dtype="float32")
    sp = single_passes(lm, [MIXED], 64)[0]
    enc = lm.tokenizer(MIXED, return_offsets_mapping=True)
    ends = [e for _, e in enc["offset_mapping"]][: sp.tokens_used]
    words = MIXED.split(" ")
    starts = [sum(len(w) + 1 for w in words[:i]) for i in range(len(words))]
    per_word = [[] for _ in words]
    for t in range(sp.ll.size):
        e = ends[t + 1]
        wi = max(i for i, s0 in enumerate(starts) if s0 <= e - 1)
        per_word[wi].append(sp.ll[t])
    wv = np.array([np.mean(x) if x else np.nan for x in per_word])
    b = plain_best(bd.windowed(wv, 3))[0]
    assert r.detail["boundary"]["word"] == b
    assert r.detail["boundary"]["char"] == boundary_char(MIXED, b)
    assert r.raw == pytest.approx((len(words) - b) / len(words))
    assert r.detail["truncated"] is True  # the text is longer than 64 tokens
    sents = r.detail["sentences"]
    assert [(s["start"], s["end"]) for s in sents] == sentence_spans(MIXED)
    for s in sents:
        inside = [sp.ll[t] for t in range(sp.ll.size) if s["start"] < ends[t + 1] <= s["end"]]
        assert (s["raw"] is None) if not inside else s["raw"] == pytest.approx(np.mean(inside))
        assert s["ai_probability"] is None
    assert det.spec.settings == {"model": gpt2_path, "max_tokens": 64, "window": 3, "dtype": "float32"}
