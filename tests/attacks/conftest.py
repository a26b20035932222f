"""Fixtures for the attack tests: 1,000 real texts, tiny models built offline, workspaces.

The texts are the human and machine texts of the fast-detect-gpt sets kept in
``tests/data/fastdetectgpt`` (see ``tests/data/ATTRIBUTION.md``): the first 1,000
distinct texts, humans and machines alternating. The tiny models are randomly
initialised, built here from tokenizers trained on those texts, saved to disk and
loaded back through the attacks' real loading paths (a local folder).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

N_TEXTS = 1000
SETS = ("xsum_gpt2-xl", "writing_gpt2-xl", "xsum_gpt-j-6B", "pubmed_davinci", "xsum_gpt-3.5-turbo")


@pytest.fixture(scope="session")
def texts(data_dir) -> list[str]:
    """1,000 distinct real texts (human and AI alternating, from five fast-detect-gpt sets)."""
    out, seen = [], set()
    for s in SETS:
        d = json.loads((data_dir / "fastdetectgpt" / f"{s}.raw_data.json").read_text(encoding="utf-8"))
        for h, a in zip(d["original"], d["sampled"]):
            for t in (h, a):
                if t.strip() and t not in seen:
                    seen.add(t)
                    out.append(t)
    assert len(out) >= N_TEXTS
    return out[:N_TEXTS]


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("attack_models")


@pytest.fixture(scope="session")
def causal_path(tiny_dir, texts) -> str:
    """A tiny Llama (random weights, sharp output distributions) with a byte-level BPE
    tokenizer trained on the test texts (no BOS, as SmolLM2)."""
    torch = pytest.importorskip("torch")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1500, special_tokens=["<s>", "</s>", "<pad>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts[:400], trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                      tie_word_embeddings=False, bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id)
    m = LlamaForCausalLM(cfg)
    with torch.no_grad():
        m.lm_head.weight.normal_(0, 0.6)
    folder = tiny_dir / "llama"
    m.save_pretrained(folder)
    fast.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def masked_path(tiny_dir, texts) -> str:
    """A tiny BERT masked LM (random weights) with a WordPiece tokenizer trained on the texts."""
    torch = pytest.importorskip("torch")
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(texts[:400], trainer=trainers.WordPieceTrainer(vocab_size=2000, special_tokens=special,
                                                                           show_progress=False))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", cls),
                                                                                                 ("[SEP]", sep)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")
    torch.manual_seed(1)
    cfg = BertConfig(vocab_size=len(fast), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=512, pad_token_id=fast.pad_token_id)
    m = BertForMaskedLM(cfg)
    with torch.no_grad():
        m.cls.predictions.decoder.weight.normal_(0, 0.6)
    folder = tiny_dir / "bert"
    m.save_pretrained(folder)
    fast.save_pretrained(folder)
    return str(folder)


@pytest.fixture()
def fdg_workspace(workspace, data_dir):
    """A workspace holding 20 human/AI pairs of xsum_gpt2-xl (corpus ``fastdetectgpt``)."""
    from veribench.corpus.importers import import_fastdetectgpt

    import_fastdetectgpt(workspace, data_dir / "fastdetectgpt", ["xsum_gpt2-xl"], 20)
    return workspace
