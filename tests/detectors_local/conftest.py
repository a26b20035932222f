"""Tiny randomly initialised models and tokenizers, built offline (no hub), saved to disk
and loaded back through veribench's real loading path (a local folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

CORPUS = [
    "The school librarian misplaced three umbrellas before the rain started.",
    "A retired violinist repainted the broken weather vane before the rain started.",
    "Large language models generate fluent text that can be hard to tell apart from human writing.",
    "Detectors score each token by its rank and its probability under a language model.",
    "def f(x):\n    return x * 2  # numbers 0123456789, punctuation !?;:'\"()[]{}",
    "Zürich, naïve café — 東京 and Москва: unicode bytes still tokenise.",
]

TEXTS = [
    "The night baker counted forty jars of plum jam because the mayor was visiting.",
    "Two cousins from Lenby repainted the bell above the chapel door.",
    "A model predicts the next token.",
    "Short one.",
    "Detectors differ: some use ranks, some use probabilities, and some compare two models on the same tokens "
    "to see how surprising the text is relative to what the model itself would have sampled.",
    "Москва and 東京 both appear here, with numbers 42 and 1999.",
    "x",
]


def _bpe(tmp: Path, add_bos: bool):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=["<s>", "</s>", "<pad>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS * 3, trainer=trainer)
    if add_bos:
        bos = tok.token_to_id("<s>")
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", bos)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    return fast


def _save(folder: Path, model, tok) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def build_tiny_t5(folder: Path, texts: list[str], n_sentinels: int = 20, seed: int = 4) -> str:
    """A tiny random T5 (span infilling with ``<extra_id_N>`` sentinels, as DetectGPT's
    mask filler) and a word-level tokenizer over the words of ``texts``, saved to ``folder``.
    Plain function: also used by benchmarks/bench_detectgpt.py."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    words = sorted({w for t in texts for w in t.split()})
    sentinels = [f"<extra_id_{i}>" for i in range(n_sentinels)]
    vocab = {w: i for i, w in enumerate(["<pad>", "</s>", "<unk>"] + words + sentinels)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
                                   additional_special_tokens=sentinels)
    torch.manual_seed(seed)
    cfg = T5Config(vocab_size=len(vocab), d_model=16, d_ff=32, d_kv=8, num_layers=1, num_heads=2,
                   pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    return _save(folder, T5ForConditionalGeneration(cfg), fast)


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("tiny_models")


@pytest.fixture(scope="session")
def gpt2_path(tiny_dir) -> str:
    """GPT-2 architecture, no BOS added, vocab = tokenizer size, 64 positions."""
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = _bpe(tiny_dir, add_bos=False)
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=2, n_head=2,
                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    m = GPT2LMHeadModel(cfg)
    with torch.no_grad():  # tied to wte: a spread of sharp and flat distributions
        m.lm_head.weight.normal_(0, 0.15)
    return _save(tiny_dir / "gpt2", m, tok)


@pytest.fixture(scope="session")
def llama_path(tiny_dir) -> str:
    """Llama architecture with a tokenizer that adds BOS; untied head."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = _bpe(tiny_dir, add_bos=True)
    assert tok("hi").input_ids[0] == tok.bos_token_id
    torch.manual_seed(1)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      tie_word_embeddings=False, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    m = LlamaForCausalLM(cfg)
    with torch.no_grad():
        m.lm_head.weight.normal_(0, 0.3)
    return _save(tiny_dir / "llama", m, tok)


@pytest.fixture(scope="session")
def pair_paths(tiny_dir) -> tuple[str, str]:
    """(sampling, scoring): two GPT-2 models with the same tokenizer and different vocab
    sizes (the scoring model has 13 extra embedding rows, as gpt-j-6B has beside gpt-neo)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = _bpe(tiny_dir, add_bos=False)
    out = []
    for seed, extra in ((2, 0), (3, 13)):
        torch.manual_seed(seed)
        cfg = GPT2Config(vocab_size=len(tok) + extra, n_positions=128, n_embd=32, n_layer=2, n_head=2,
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
        m = GPT2LMHeadModel(cfg)
        with torch.no_grad():
            m.lm_head.weight.normal_(0, 0.15)
        out.append(_save(tiny_dir / f"pair{seed}", m, tok))
    return out[0], out[1]


@pytest.fixture(scope="session")
def texts() -> list[str]:
    return list(TEXTS)


@pytest.fixture(autouse=True)
def _fresh_memo():
    """Each test starts with an empty pass memo and zeroed engine counters."""
    from veribench.detectors.local.engine.memo import MEMO, STATS

    MEMO.clear()
    STATS.reset()
    yield
