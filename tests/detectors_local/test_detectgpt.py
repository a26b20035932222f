"""DetectGPT against a plain transcription of the authors' code (eric-mitchell/detect-gpt
run.py: tokenize_and_mask, apply_extracted_fills, get_ll, run_perturbation_experiment),
on a tiny T5 mask filler and a tiny Llama scoring model built offline."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from veribench.cli.main import app
from veribench.detectors.local import detectgpt as dg
from veribench.detectors.local.engine.memo import STATS
from veribench.detectors.local.models import load_causal_lm
from veribench.detectors.local.tolerance import discrepancy_tolerance
from veribench.detectors.local.zeroshot import ZeroShotDetector

torch = pytest.importorskip("torch")
from tests.detectors_local.conftest import build_tiny_t5  # noqa: E402

DG_TEXTS = [
    "the night baker counted forty jars of plum jam because the mayor was visiting the town on a cold "
    "morning and every shop on the square had to look its best before noon",
    "two cousins from the valley repainted the old bell above the chapel door while their uncle told "
    "stories about the river and the mill that burned down many years ago",
    "a model predicts the next token from the tokens before it and a detector compares how likely the "
    "text is with how likely small changes of the same text would be",
]
SHORT = "too few words here to mask one span"


@pytest.fixture(scope="session")
def t5_path(tiny_dir) -> str:
    """A tiny T5 (span infilling, ``<extra_id_N>`` sentinels) with a word-level tokenizer."""
    return build_tiny_t5(tiny_dir / "t5", DG_TEXTS + [SHORT])


def _det(llama_path, t5_path, **kw):
    return dg.DetectGPT(model=llama_path, mask_model=t5_path, device="cpu", **{"n_perturbations": 6, "mask_max_length": 24, **kw})


# ---------------------------------------------------------------- plain transcriptions of run.py
def ref_tokenize_and_mask(text, span_length, pct, buffer_size):
    """run.py tokenize_and_mask, with the global np.random as upstream (args.buffer_size inlined)."""
    tokens = text.split(" ")
    mask_string = "<<<mask>>>"
    n_spans = int(pct * len(tokens) / (span_length + buffer_size * 2))
    n_masks = 0
    while n_masks < n_spans:
        start = np.random.randint(0, len(tokens) - span_length)
        end = start + span_length
        search_start = max(0, start - buffer_size)
        search_end = min(len(tokens), end + buffer_size)
        if mask_string not in tokens[search_start:search_end]:
            tokens[start:end] = [mask_string]
            n_masks += 1
    num_filled = 0
    for idx, token in enumerate(tokens):
        if token == mask_string:
            tokens[idx] = f"<extra_id_{num_filled}>"
            num_filled += 1
    assert num_filled == n_masks
    return " ".join(tokens)


def ref_apply_extracted_fills(masked_texts, extracted_fills):
    """run.py apply_extracted_fills."""
    tokens = [x.split(" ") for x in masked_texts]
    n_expected = [len([x for x in t.split() if x.startswith("<extra_id_")]) for t in masked_texts]
    for idx, (text, fills, n) in enumerate(zip(tokens, extracted_fills, n_expected)):
        if len(fills) < n:
            tokens[idx] = []
        else:
            for fill_idx in range(n):
                text[text.index(f"<extra_id_{fill_idx}>")] = fills[fill_idx]
    return [" ".join(x) for x in tokens]


def ref_get_ll(model, tokenizer, text):
    """run.py get_ll: minus the model's mean token loss."""
    with torch.no_grad():
        tokenized = tokenizer(text, return_tensors="pt")
        labels = tokenized.input_ids
        return -model(**tokenized, labels=labels).loss.item()


# ---------------------------------------------------------------- (2) mask and fill pipeline
@pytest.mark.parametrize("text", DG_TEXTS)
def test_masking_matches_reference_format_and_count(text):
    s = dg.text_seed(0, text)
    for span, pct, buf in ((2, 0.3, 1), (3, 0.5, 1), (1, 0.2, 0)):
        rng = np.random.RandomState(s)
        ours = [dg.tokenize_and_mask(text, span, pct, buf, rng) for _ in range(5)]
        np.random.seed(s)
        ref = [ref_tokenize_and_mask(text, span, pct, buf) for _ in range(5)]
        assert ours == ref
        n = int(pct * len(text.split(" ")) / (span + 2 * buf))
        for m in ours:
            ids = re.findall(r"<extra_id_(\d+)>", m)
            assert ids == [str(i) for i in range(n)] and n >= 1


def test_fills_applied_as_reference():
    masked = ["a <extra_id_0> b c <extra_id_1> d", "x <extra_id_0> y", "p <extra_id_0> q <extra_id_1>"]
    raw = ["<pad> <extra_id_0> one two <extra_id_1> three <extra_id_2> </s>",
           "<pad> <extra_id_0> <extra_id_1>", "<pad> <extra_id_0> only <extra_id_1>"]
    fills = dg.extract_fills(raw)
    assert fills == [["one two", "three"], [""], ["only"]]
    assert dg.apply_extracted_fills(masked, fills) == ref_apply_extracted_fills(masked, fills)
    assert dg.apply_extracted_fills(masked, fills) == ["a one two b c three d", "x  y", ""]


def test_perturbations_seeded_and_deterministic(llama_path, t5_path):
    a = _det(llama_path, t5_path)
    p1, _ = a.perturb(DG_TEXTS[0])
    p2, _ = a.perturb(DG_TEXTS[0])
    p3, _ = _det(llama_path, t5_path, seed=7).perturb(DG_TEXTS[0])
    assert p1 == p2 and p1 != p3 and len(p1) == 6
    assert all("<extra_id_" not in p and p != DG_TEXTS[0] for p in p1)
    assert a.spec.settings["seed"] == 0 and _det(llama_path, t5_path, seed=7).spec.settings["seed"] == 7


# ---------------------------------------------------------------- (1) discrepancy = reference formula
def test_discrepancy_equals_reference_transcription(llama_path, t5_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    det = _det(llama_path, t5_path)  # variant z; detail holds d as well
    res = det.score_batch(DG_TEXTS)
    model = AutoModelForCausalLM.from_pretrained(llama_path, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(llama_path)
    vocab = int(model.get_output_embeddings().weight.shape[0])
    for text, r in zip(DG_TEXTS, res):
        assert r.status == "ok" and r.scale == "detectgpt_z" and r.direction == "higher_ai"
        perturbed, _ = det.perturb(text)  # the same perturbations (seeded per text)
        original_ll = ref_get_ll(model, tok, text)
        p_lls = [ref_get_ll(model, tok, p) for p in perturbed]
        # run.py run_perturbation_experiment (the std of > 1 perturbation is nonzero here)
        ref_d = original_ll - np.mean(p_lls)
        ref_z = (original_ll - np.mean(p_lls)) / np.std(p_lls)
        tokens = max(len(tok(t).input_ids) for t in [text, *perturbed])
        td, tz = discrepancy_tolerance(original_ll, p_lls, tokens=tokens, vocab=vocab)
        assert abs(r.detail["d"] - ref_d) <= td
        assert abs(r.detail["z"] - ref_z) <= tz
        assert r.raw == r.detail["z"]
        assert r.detail["n_perturbations"] == 6 and r.detail["forward_passes"] == 7


def test_short_and_empty_texts_fail_with_reason(llama_path, t5_path):
    res = _det(llama_path, t5_path).score_batch([SHORT, "  "])
    assert res[0].status == "too_short" and "no span to mask" in res[0].detail["reason"] and res[0].raw is None
    assert res[1].status == "unscorable" and res[1].raw is None


def test_z_undefined_is_null_with_reason():
    d, mean, std, z = dg.discrepancy(-3.0, [-4.0, -4.0, -4.0])
    assert (d, mean, std, z) == (1.0, -4.0, 0.0, None)
    with pytest.raises(ValueError, match="n_perturbations >= 2"):
        dg.DetectGPT(n_perturbations=1, variant="z")


# ---------------------------------------------------------------- (3) base ll from the engine memo
def test_base_ll_forwarded_once_with_loglik(llama_path, t5_path):
    ll = ZeroShotDetector("loglik", model=llama_path, device="cpu").score_batch(DG_TEXTS)
    key = load_causal_lm(llama_path, device="cpu").key
    assert STATS.texts_forwarded[key] == len(DG_TEXTS)
    res = _det(llama_path, t5_path).score_batch(DG_TEXTS)
    # the base texts came from the memo: only the 6 perturbations of each text were forwarded
    assert STATS.texts_forwarded[key] == len(DG_TEXTS) * (1 + 6)
    for a, b in zip(ll, res):
        assert b.detail["ll"] == a.raw


# ---------------------------------------------------------------- (4) CLI end to end
def test_score_cli_detectgpt(tmp_path, llama_path, t5_path):
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_text("".join(json.dumps({"id": f"t{i}", "text": t}) + "\n" for i, t in enumerate(DG_TEXTS)))
    args = ["score", "--detector", "detectgpt", "--set", f"model={llama_path}", "--set", f"mask_model={t5_path}",
            "--set", "n_perturbations=4", "--set", "variant=d", "--set", "mask_max_length=24", "--set", "device=cpu", "--input", str(inp),
            "--out", str(out), "--workspace", str(tmp_path / "ws"), "--no-progress"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    got = [json.loads(line) for line in out.read_text().splitlines()]
    want = _det(llama_path, t5_path, n_perturbations=4, variant="d").score_batch(DG_TEXTS)
    assert [g["id"] for g in got] == ["t0", "t1", "t2"]
    for g, w in zip(got, want):
        assert g["detector"] == "detectgpt" and g["status"] == "ok"
        assert g["statistic"] == pytest.approx(w.raw, rel=1e-9) and w.raw == w.detail["d"]
        assert g["detail"]["seed"] == 0 and g["detail"]["n_perturbations"] == 4
