"""Packed variable-length batches (issue 17, CPU part).

Texts are concatenated without padding, with per-text position ids and block-diagonal
causal attention. Every statistic of the packed path equals the plain per-text fp32
reference (one text per forward pass, direct formulas; ``test_zeroshot_reference``)
within 1e-5, on the tiny GPT-2 and Llama fixtures, for texts of very different lengths in
one pack and for a pack boundary that would fall inside a long text.
"""

from __future__ import annotations

import os

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.detectors_local.test_zeroshot_reference import (
    close,
    ref_binoculars,
    ref_fast_detectgpt_pair,
    ref_model,
    ref_single,
)
from veribench.detectors.local import zeroshot as zs
from veribench.detectors.local.engine import attention as attention_mod
from veribench.detectors.local.engine import layout as layout_mod
from veribench.detectors.local.engine import passes as passes_mod
from veribench.detectors.local.engine.layout import _groups, layout_packed, packs, shared_prefixes
from veribench.detectors.local.engine.memo import MEMO, PassMemo
from veribench.detectors.local.engine.passes import single_passes
from veribench.detectors.local.engine.plan import Plan, plan_workers, resolve_plan
from veribench.detectors.local.engine.records import SinglePass
from veribench.detectors.local.engine.schedule import PassesCancelled, _Threads, cancelled_by, report_progress
from veribench.detectors.local.engine.tokens import tokenize
from veribench.detectors.local.tolerance import within_fp32

WORDS = ("the model wrote this text and a person wrote that one while detectors rank tokens by "
         "probability under a language model before the rain started").split()
SINGLE = ["loglik", "rank", "logrank", "entropy", "gltr", "lrr"]


def _mixed_texts(longest_words: int) -> list[str]:
    """Very different lengths: a two-word text up to a text of ``longest_words`` words,
    each starting at another word (no two share a first token)."""
    out = []
    for j, n in enumerate((2, 5, longest_words, 9, 3, longest_words // 2, 14)):
        out.append(" ".join(WORDS[(3 * j + i) % len(WORDS)] for i in range(n)).capitalize() + ".")
    return out


@pytest.fixture()
def pack_log(monkeypatch):
    """Records the token lengths of the texts in every pack the engine builds."""
    seen: list[list[int]] = []
    real = layout_mod.layout_packed

    def spy(seqs, device, **kw):
        seen.append([len(s) for s in seqs])
        return real(seqs, device, **kw)

    monkeypatch.setattr(layout_mod, "layout_packed", spy)
    return seen


def _check_single(path, texts, cap, **exec_kw):
    good = [t for t in texts if len(ref_model(path)[1](t).input_ids) >= 2]
    refs = [ref_single(path, t, cap) for t in good]
    for stat in SINGLE:
        res = zs.ZeroShotDetector(stat, model=path, max_tokens=cap, device="cpu", **exec_kw).score_batch(good)
        for t, r, ref in zip(good, res, refs):
            assert r.status == "ok", (stat, t, r)
            assert close(r.raw, ref[stat]), (path, exec_kw, stat, t, r.raw, ref[stat])
            assert r.detail["engine"]["packing"] == exec_kw.get("packing", "packed")
    fdg = zs.FastDetectGPT(model=path, max_tokens=cap, device="cpu", **exec_kw).score_batch(good)
    for r, ref in zip(fdg, refs):
        assert close(r.raw, ref["fast-detectgpt"])
    return good


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize("attention", ["segments", "sdpa_mask"])
def test_one_pack_of_very_different_lengths_equals_reference(arch, attention, gpt2_path, llama_path, pack_log,
                                                              monkeypatch):
    path, cap = (gpt2_path, 64) if arch == "gpt2" else (llama_path, 200)
    calls = {"n": 0}
    real = attention_mod.segments_attention

    def counting(*a, **k):
        calls["n"] += 1
        return real(*a, **k)

    monkeypatch.setattr(attention_mod, "segments_attention", counting)
    attention_mod._REGISTERED = False  # re-register the counting kernel
    texts = _mixed_texts(120)
    good = _check_single(path, texts, cap, packing="packed", attention=attention, pack_tokens=4096)
    assert len(pack_log) == 1 and len(pack_log[0]) == len(good)  # every text in one pack
    assert max(pack_log[0]) >= 10 * min(pack_log[0])  # of very different lengths
    if attention == "segments":
        assert calls["n"] > 0  # the block-diagonal kernel ran
    attention_mod._REGISTERED = False


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_pack_boundary_inside_a_long_text(arch, gpt2_path, llama_path, pack_log):
    """Packs of 24 tokens: running totals cross 24 inside the long text; the text is never
    split (it gets a pack of its own) and every statistic still equals the reference."""
    path, cap = (gpt2_path, 64) if arch == "gpt2" else (llama_path, 200)
    texts = _mixed_texts(120)
    _check_single(path, texts, cap, packing="packed", pack_tokens=24)
    long = max(max(p) for p in pack_log)
    assert long > 24 and [long] in pack_log  # the long text alone in its pack
    assert any(len(p) > 1 for p in pack_log)  # and short texts share packs
    assert all(sum(p) <= 24 for p in pack_log if len(p) > 1)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_padded_layout_equals_reference(arch, gpt2_path, llama_path):
    path, cap = (gpt2_path, 64) if arch == "gpt2" else (llama_path, 200)
    _check_single(path, _mixed_texts(120), cap, packing="padded", batch_size=3)


def test_pair_passes_share_the_packing(gpt2_path, pair_paths, texts, pack_log):
    """Binoculars and Fast-DetectGPT on two models: both run on the same packs (one layout
    per pack, not one per model) and equal the upstream formulas."""
    observer, performer = gpt2_path, pair_paths[0]
    good = [t for t in texts + _mixed_texts(40) if len(ref_model(observer)[1](t).input_ids) >= 2]
    det = zs.Binoculars(observer=observer, performer=performer, max_tokens=48, device="cpu", pack_tokens=40)
    res = det.score_batch(good)
    for t, r in zip(good, res):
        assert close(r.raw, ref_binoculars(observer, performer, t, 48)), t
        assert r.detail["engine"]["packing"] == "packed"
    assert sum(len(p) for p in pack_log) == len(good)  # each text packed once for both models
    sampling, scoring = pair_paths  # different vocabulary sizes
    MEMO.clear()
    fdg = zs.FastDetectGPT(sampling_model=sampling, scoring_model=scoring, max_tokens=60, device="cpu",
                           pack_tokens=40).score_batch(good)
    for t, r in zip(good, fdg):
        assert close(r.raw, ref_fast_detectgpt_pair(sampling, scoring, t, 60)), t


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=2, max_value=300), min_size=1, max_size=60), st.integers(8, 400))
def test_packs_partition_and_respect_capacity(lengths, cap):
    got = packs(lengths, cap)
    flat = sorted(i for p in got for i in p)
    assert flat == list(range(len(lengths)))  # every text exactly once, never split
    for p in got:
        assert len(p) == 1 or sum(lengths[i] for i in p) <= cap


def test_packed_layout_positions_and_boundaries():
    lay = layout_packed([[5, 6, 7], [8, 9], [1, 2, 3, 4]], "cpu")
    assert lay.ids.tolist() == [[5, 6, 7, 8, 9, 1, 2, 3, 4]]
    assert lay.position_ids.tolist() == [[0, 1, 2, 0, 1, 0, 1, 2, 3]]
    assert lay.attn_kwargs["cu_seq_lens_q"].tolist() == [0, 3, 5, 9] and lay.attn_kwargs["max_length_q"] == 4
    assert lay.starts == [0, 3, 5] and lay.lengths == [3, 2, 4]
    b = layout_packed([[5, 6, 7], [8, 9]], "cpu", bucket=8, max_segment=2, max_length=16)
    assert b.ids.shape == (1, 8) and b.attn_kwargs["cu_seq_lens_q"].tolist() == [0, 3, 5, 7, 8]
    assert b.position_ids.tolist() == [[0, 1, 2, 0, 1, 0, 1, 0]] and b.attn_kwargs["max_length_q"] == 16
    assert b.starts == [0, 3] and b.lengths == [3, 2]  # dummy segments are never read


def test_plan_by_device_and_forced_choices(gpt2_path):
    from veribench.detectors.local.models import load_causal_lm

    lm = load_causal_lm(gpt2_path, device="cpu", dtype="float32")
    p = resolve_plan(lm)
    assert (p.packing, p.attention, p.compile) == ("packed", "segments", False)
    assert resolve_plan(lm, packing="padded").attention == "model"
    assert resolve_plan(lm, attention="sdpa_mask", compile="on").compile is True
    with pytest.raises(ValueError, match="varlen.*CUDA"):
        resolve_plan(lm, attention="varlen")
    with pytest.raises(ValueError, match="recompile"):
        resolve_plan(lm, compile="on")
    with pytest.raises(ValueError, match="packed batches only"):
        resolve_plan(lm, packing="padded", attention="segments")
    with pytest.raises(ValueError, match="packing must be"):
        zs.ZeroShotDetector("loglik", model=gpt2_path, packing="nested")
    rec = p.record()
    assert rec["packing"] == "packed" and rec["attention"] == "segments" and rec["device"] == "cpu"
    assert rec["torch"] == torch.__version__
    # the spec holds what changes a score; execution settings do not change it
    a = zs.ZeroShotDetector("loglik", model=gpt2_path, packing="padded").spec
    assert a == zs.ZeroShotDetector("loglik", model=gpt2_path).spec


def test_adaptive_threads_keep_the_faster_option(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    plan = Plan("cpu", "float32", "packed", "segments", False, 1024, 256)
    n0 = torch.get_num_threads()
    torch.set_num_threads(2)
    th = _Threads(plan, n_groups=20, every=4)
    used = []
    rates = {2: 100.0, 1: 600.0}  # two threads that wait on each other are slower here
    for _ in range(12):
        th.before()
        used.append(th.current)
        th.after(int(rates[th.current]), 1.0)
    th.close()
    assert used[:2] == [2, 1] and used.count(1) > used.count(2) and 2 in used[2:]  # re-checked
    assert torch.get_num_threads() == 2
    torch.set_num_threads(1)  # e.g. a Ray actor given one CPU: never raised above that
    one = _Threads(plan, n_groups=20)
    assert one.options == [1]
    torch.set_num_threads(n0)
    fixed = _Threads(Plan("cpu", "float32", "packed", "segments", False, 1024, 256, threads=1), 20)
    fixed.before()
    assert fixed.current == 1
    fixed.close()


def test_progress_lines_when_output_is_not_a_terminal(llama_path):
    lines: list[str] = []
    texts = [f"{t} Copy {i}." for i in range(3) for t in _mixed_texts(60)]
    with report_progress(lines.append, interval=0.0):
        zs.ZeroShotDetector("loglik", model=llama_path, pack_tokens=32, device="cpu").score_batch(texts)
    assert len(lines) >= 3
    assert all("texts" in m and "tokens/s" in m for m in lines)
    assert lines[-1].startswith(f"forward {llama_path}: {len(texts)}/{len(texts)} texts")


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_shared_prefixes_are_computed_once_and_equal_reference(arch, gpt2_path, llama_path, monkeypatch):
    """fast-detect-gpt's layout: AI texts continue the first words of a human text. The
    shared tokens are fed once (a tree-shaped mask lets each continuation attend to them),
    a text that is a prefix of another is read off it, and every statistic still equals
    the per-text reference; a family longer than a pack keeps its members together."""
    path, cap = (gpt2_path, 64) if arch == "gpt2" else (llama_path, 200)
    stem = " ".join(WORDS[:12])
    texts = [stem + " and then the rain started before the model wrote this text.",
             stem + " while a person wrote that one.",
             stem + " while a person wrote that one and the model ranked tokens.",
             stem,  # a prefix of the three above
             "Detectors rank tokens by probability.", "Before the rain started."]
    fed: list[int] = []
    real = layout_mod.layout_packed

    def spy(seqs, device, **kw):
        lay = real(seqs, device, **kw)
        fed.append(int(lay.ids.shape[1]))
        return lay

    monkeypatch.setattr(layout_mod, "layout_packed", spy)
    _check_single(path, texts, cap, packing="packed")
    tok = ref_model(path)[1]
    lens = [min(len(tok(t).input_ids), cap) for t in texts]
    assert sum(fed) < sum(lens)  # fewer tokens fed than the texts hold
    lm = engine_lm(path)
    parent = shared_prefixes([tok(t).input_ids[:cap] for t in texts], 8)
    assert [p is not None for p in parent[:4]].count(True) == 3 and parent[4] is None and parent[5] is None
    fed.clear()
    MEMO.clear()
    out = single_passes(lm, texts, cap, memo=None, plan=resolve_plan(lm, pack_tokens=16))
    assert all(o.tokens_used == n for o, n in zip(out, lens))
    plain = single_passes(lm, texts, cap, memo=None, plan=resolve_plan(lm, share_prefixes=False))
    for a, b in zip(out, plain):
        assert (a.rank == b.rank).all()
        for f in ("ll", "ent", "m2"):  # per token: one reduction over the vocabulary (docs/statistics.md)
            assert all(within_fp32(float(x), float(y), tokens=1, vocab=len(tok))
                       for x, y in zip(getattr(a, f).tolist(), getattr(b, f).tolist())), f


def engine_lm(path):
    from veribench.detectors.local.models import load_causal_lm

    return load_causal_lm(path, device="cpu", dtype="float32")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=12), min_size=1, max_size=30), st.integers(1, 6))
def test_shared_prefix_links_are_true_prefixes(seqs, min_shared):
    got = shared_prefixes(seqs, min_shared)
    for i, p in enumerate(got):
        if p is None:
            continue
        j, k = p
        assert got[j] is None and j != i  # roots only, depth one
        assert k >= min_shared and seqs[i][:k] == seqs[j][:k]


# --------------------------------------------------------------------------- packs side by side
def _outputs(out):
    return [(o.ll.tolist(), o.rank.tolist(), o.ent.tolist(), o.m2.tolist()) for o in out]


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_packs_side_by_side_equal_one_pack_at_a_time(arch, gpt2_path, llama_path, pack_log):
    """Packs run on several workers give bit-identical per-position outputs to the same
    packs run one after the other single-threaded, and the result records the workers;
    both equal the per-text reference."""
    path, cap = (gpt2_path, 64) if arch == "gpt2" else (llama_path, 200)
    lm = engine_lm(path)
    texts = [f"{t} Copy {i}." for i in range(3) for t in _mixed_texts(60)]
    one = single_passes(lm, texts, cap, memo=None,
                               plan=resolve_plan(lm, pack_tokens=48, threads=1))
    n_packs = len(pack_log)
    assert n_packs >= 6
    pack_log.clear()
    many = single_passes(lm, texts, cap, memo=None,
                                plan=resolve_plan(lm, pack_tokens=48, workers=3))
    assert len(pack_log) == n_packs
    assert _outputs(many) == _outputs(one)
    MEMO.clear()
    good = _check_single(path, texts[:7], cap, packing="packed", pack_tokens=48, workers=3)
    r = zs.ZeroShotDetector("loglik", model=path, max_tokens=cap, device="cpu", pack_tokens=48,
                            workers=3).score_batch(good)
    assert all(x.detail["engine"]["workers"] == 3 for x in r)


def test_pair_passes_side_by_side_equal_one_at_a_time(gpt2_path, pair_paths, texts):
    observer, performer = gpt2_path, pair_paths[0]
    good = [t for t in texts + _mixed_texts(40) if len(ref_model(observer)[1](t).input_ids) >= 2]
    runs = []
    for kw in ({"threads": 1}, {"workers": 2}):
        MEMO.clear()
        runs.append([r.raw for r in zs.Binoculars(observer=observer, performer=performer, max_tokens=48,
                                                  device="cpu", pack_tokens=40, **kw).score_batch(good)])
    assert runs[0] == runs[1]
    for t, raw in zip(good, runs[1]):
        assert close(raw, ref_binoculars(observer, performer, t, 48)), t


def test_a_failing_pack_stops_the_run_restores_threads_and_attention(llama_path, monkeypatch):
    lm = engine_lm(llama_path)
    texts = [f"{t} Copy {i}." for i in range(4) for t in _mixed_texts(60)]
    calls: list[int] = []
    real = passes_mod._forward_single

    def flaky(lm_, lay, plan, chunk_bytes):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("pack 2 failed")
        return real(lm_, lay, plan, chunk_bytes)

    monkeypatch.setattr(passes_mod, "_forward_single", flaky)
    n0, attn0 = torch.get_num_threads(), lm.model.config._attn_implementation
    plan = resolve_plan(lm, pack_tokens=32, workers=2)
    n_packs = len(_groups(plan, [min(len(x), 200) for x in tokenize(lm, texts)]))
    with pytest.raises(RuntimeError, match="pack 2 failed"):
        single_passes(lm, texts, 200, memo=None, plan=plan)
    assert torch.get_num_threads() == n0
    assert lm.model.config._attn_implementation == attn0
    assert len(calls) < n_packs  # the packs not yet started were cancelled


def test_how_many_workers(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    n0 = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        P = lambda **k: Plan("cpu", "float32", "packed", "segments", False, 1024, 256, **k)  # noqa: E731
        assert plan_workers(P(), 10) == 2  # torch's threads, one pack each
        assert plan_workers(P(), 1) == 1  # never more workers than packs
        assert plan_workers(P(threads=2), 10) == 1  # a fixed thread count runs packs in turn
        assert plan_workers(P(workers=3), 10) == 3 and plan_workers(P(workers=3), 2) == 2
        torch.set_num_threads(1)  # a Ray actor given one CPU
        assert plan_workers(P(), 10) == 1
        cuda = Plan("cuda", "bfloat16", "packed", "varlen", True, 32768, 2048, workers=4)
        assert plan_workers(cuda, 10) == 1
    finally:
        torch.set_num_threads(n0)


def test_workers_setting_is_checked(gpt2_path):
    lm = engine_lm(gpt2_path)
    for bad in ("many", 0, "-1"):
        with pytest.raises(ValueError, match="workers must be"):
            resolve_plan(lm, workers=bad)


@pytest.mark.parametrize("workers", [1, 2])
def test_cancelled_passes_stop_at_the_next_pack(llama_path, monkeypatch, workers):
    """A background forward whose cancel event is set (the demo after Ctrl-C) skips the
    packs not yet started and raises; the packs already done stay in the memo."""
    import threading

    lm = engine_lm(llama_path)
    texts = [f"{t} Copy {i}." for i in range(4) for t in _mixed_texts(60)]
    stop = threading.Event()
    ran: list[int] = []
    real = passes_mod._forward_single

    def counting(lm_, lay, plan, chunk_bytes):
        ran.append(1)
        stop.set()  # cancelled while the first packs run
        return real(lm_, lay, plan, chunk_bytes)

    monkeypatch.setattr(passes_mod, "_forward_single", counting)
    plan = resolve_plan(lm, pack_tokens=32, workers=workers, threads="auto" if workers > 1 else 1)
    n_packs = len(_groups(plan, [min(len(x), 200) for x in tokenize(lm, texts)]))
    memo = PassMemo()
    with cancelled_by(stop), pytest.raises(PassesCancelled):
        single_passes(lm, texts, 200, memo=memo, plan=plan)
    assert 1 <= len(ran) <= workers < n_packs
    assert 0 < len(memo) < len(texts)  # what finished is kept
    stop.clear()
    again = single_passes(lm, texts, 200, memo=memo, plan=plan)  # outside the block: runs to the end
    assert all(isinstance(o, SinglePass) for o in again)


def test_progress_advances_pack_by_pack_side_by_side(llama_path, monkeypatch):
    """With packs side by side, a progress line follows each finished pack, while later
    packs still run (not every line at the end)."""
    finished: list[int] = []
    real = passes_mod._forward_single

    def counting(lm_, lay, plan, chunk_bytes):
        out = real(lm_, lay, plan, chunk_bytes)
        finished.append(1)
        return out

    monkeypatch.setattr(passes_mod, "_forward_single", counting)
    seen: list[tuple[str, int]] = []
    texts = [f"{t} Copy {i}." for i in range(3) for t in _mixed_texts(60)]
    with report_progress(lambda m: seen.append((m, len(finished))), interval=0.0):
        zs.ZeroShotDetector("loglik", model=llama_path, pack_tokens=32, device="cpu", workers=2).score_batch(texts)
    counts = [int(m.split(": ")[1].split("/")[0]) for m, _ in seen]
    assert len(seen) >= 3 and counts == sorted(counts) and counts[-1] == len(texts)
    assert seen[0][1] < len(finished)  # the first line came while packs were still running
