"""hf-classifier: case c17 (which head output means AI), fresh-weight refusal, special tokens."""

from __future__ import annotations

import json
import math

import pytest
import torch

from veribench.detectors.local import hf_classifier as hc
from veribench.detectors.local.models import ModelLoadError


def _softmax(xs, i):
    e = [math.exp(x) for x in xs]
    return e[i] / sum(e)


def test_c17_heads(cases_dir):
    heads = json.loads((cases_dir / "c17" / "heads.json").read_text())
    want = {"openai-community/roberta-base-openai-detector": 0.952574,
            "Hello-SimpleAI/chatgpt-detector-roberta": 0.047426,
            "MohammadKarami/roberta-human-detector": 0.952574,
            "desklib/ai-text-detector-v1.01": 0.880797}
    for h in heads:
        if h["id2label"] is None:
            idx = None
        else:
            row = hc.KNOWN_CLASSIFIERS.get(h["model"], {})
            idx = hc.ai_label_index(h["id2label"], row.get("ai_labels"), h["model"])
            assert h["id2label"][str(idx)] in h["ai_labels"]  # by name, from id2label
        p = hc.head_probability(h["logits"], idx)
        assert p == pytest.approx(want[h["model"]], abs=1e-6)
        if idx is not None:
            assert p == pytest.approx(_softmax(h["logits"], idx), rel=1e-12)
        else:
            assert p == pytest.approx(1 / (1 + math.exp(-h["logits"][0])), rel=1e-12)


def test_ambiguous_labels_need_ai_label():
    with pytest.raises(ModelLoadError, match="ai_label"):
        hc.ai_label_index({0: "LABEL_0", 1: "LABEL_1"}, None, "some/model")
    assert hc.ai_label_index({0: "LABEL_0", 1: "LABEL_1"}, ["LABEL_1"], "some/model") == 1


def _tok(tmp):
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    t = Tokenizer(models.WordLevel(unk_token="<unk>"))
    t.pre_tokenizer = pre_tokenizers.Whitespace()
    t.train_from_iterator(["the model wrote this text and a person wrote that one " * 3],
                          trainer=trainers.WordLevelTrainer(special_tokens=["<s>", "</s>", "<pad>", "<unk>"]))
    t.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=t, bos_token="<s>", eos_token="</s>", cls_token="<s>",
                                   sep_token="</s>", pad_token="<pad>", unk_token="<unk>")


@pytest.fixture(scope="module")
def roberta_dirs(tmp_path_factory):
    from transformers import RobertaConfig, RobertaForSequenceClassification, RobertaModel

    root = tmp_path_factory.mktemp("clf")
    tok = _tok(root)
    cfg = RobertaConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=40, pad_token_id=tok.pad_token_id,
                        bos_token_id=0, eos_token_id=1, id2label={0: "Fake", 1: "Real"},
                        label2id={"Fake": 0, "Real": 1})
    torch.manual_seed(0)
    m = RobertaForSequenceClassification(cfg)
    good = root / "good"
    m.save_pretrained(good)
    tok.save_pretrained(good)
    bare = root / "bare"  # encoder only: a classification head would be freshly initialised
    RobertaModel(cfg).save_pretrained(bare)
    tok.save_pretrained(bare)
    return str(good), str(bare), m.eval(), tok


def test_classifier_probability_chunks_and_special_tokens(roberta_dirs):
    good, _, ref, tok = roberta_dirs
    det = hc.HFClassifier(model=good, max_tokens=12, device="cpu")
    texts = ["the model wrote this text", "a person wrote that one and the model wrote this text too", " "]
    res = det.score_batch(texts)
    assert res[2].status == "unscorable"
    for t, r in zip(texts[:2], res):
        ids = tok(t, truncation=True, max_length=12, return_tensors="pt").input_ids
        with torch.no_grad():
            logits = ref(ids).logits[0].tolist()
        assert r.ai_probability == pytest.approx(_softmax(logits, 0), rel=1e-5)  # "Fake" is index 0
        assert r.verdict == ("AI" if r.ai_probability >= 0.5 else "Human")
    assert res[1].detail["truncated"] is True and res[1].detail["tokens_used"] == 12
    for chunks in (det.encode(texts[1]), hc.HFClassifier(model=good, max_tokens=6, chunk="mean").encode(texts[1])):
        for c in chunks:
            assert c.count(tok.cls_token_id) == 1 and c[0] == tok.cls_token_id
            assert c.count(tok.sep_token_id) == 1 and c[-1] == tok.sep_token_id
    assert len(hc.HFClassifier(model=good, max_tokens=6, chunk="mean").encode(texts[1])) > 1


def test_fresh_classifier_weights_refuse_to_load(roberta_dirs):
    _, bare, _, _ = roberta_dirs
    with pytest.raises(ModelLoadError, match="freshly initialised.*classifier"):
        hc.HFClassifier(model=bare, device="cpu").load()


def test_custom_heads_are_refused_clearly():
    with pytest.raises(ModelLoadError, match="custom model class"):
        hc.HFClassifier(model="desklib/ai-text-detector-v1.01")


def test_cap_is_bounded_by_the_models_positions(roberta_dirs, cases_dir):
    """Issue 10: a classifier with fewer positions than the cap crashed (index out of
    bounds). The fixture has 40 position rows numbered from padding_idx + 1 = 3, so 37
    tokens fit; the default cap (512) is bounded by that, for both chunking rules."""
    good, _, ref, tok = roberta_dirs
    assert hc.usable_positions(ref) == 40 - tok.pad_token_id - 1 == 37
    text = (cases_dir / "c11" / "long_text.txt").read_text()
    det = hc.HFClassifier(model=good, device="cpu")
    assert det.max_tokens == 512
    r = det.score_batch([text])[0]
    assert r.status == "ok" and r.detail["tokens_used"] == 37 and r.detail["truncated"] is True
    assert r.detail["max_tokens"] == 37
    ids = tok(text, truncation=True, max_length=37, return_tensors="pt").input_ids
    with torch.no_grad():
        want = _softmax(ref(ids).logits[0].tolist(), 0)
    assert r.ai_probability == pytest.approx(want, rel=1e-5)
    mean = hc.HFClassifier(model=good, chunk="mean", device="cpu")
    r = mean.score_batch([text])[0]
    assert r.status == "ok" and r.detail["chunks"] > 1
    assert all(len(c) <= 37 for c in mean.encode(text))
