"""``hf-classifier``: Hugging Face sequence classifiers as detectors.

Which output means AI, the decision threshold, the truncation cap and the chunking rule
of each known model are data (:data:`KNOWN_CLASSIFIERS`, from
``shared/reference/detectors.md`` and each model's card); adding a model means adding
a row. The AI output is found by *label name* in the model's own ``config.id2label``,
never by a fixed index (case c17): label-name conventions differ ("Fake" at index 0 in
OpenAI's detector, "ChatGPT" at index 1 in HC3's, "AI" at index 0 elsewhere). Models
outside the table are accepted when exactly one of their labels is a known AI label
name (:data:`AI_LABEL_NAMES`), or with ``--set ai_label=NAME``.

P(AI) in [0, 1] (higher = more likely AI) is the softmax probability of the AI label,
or the sigmoid of a single logit. Loading fails if any classifier weight was freshly
initialised (a head missing from the checkpoint would give random scores).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from veribench.detectors.local.models import (
    ModelLoadError,
    _explain,
    _torch,
    _where,
    quiet_loading,
    resolve_device,
    resolve_dtype,
)
from veribench.records import ScoreResult
from veribench.spec import Spec

VERSION = "1"

#: Known classifiers. ai_labels: names in id2label meaning AI (None: single sigmoid logit);
#: threshold on P(AI) for the verdict; max_tokens including special tokens; chunk: "first"
#: (truncate) or "mean" (score max_tokens chunks, average P(AI)); source of each fact.
KNOWN_CLASSIFIERS: dict[str, dict[str, Any]] = {
    "openai-community/roberta-base-openai-detector": {
        "ai_labels": ["Fake"], "threshold": 0.5, "max_tokens": 512, "chunk": "first",
        "source": "model card; id2label {0: Fake, 1: Real}"},
    "openai-community/roberta-large-openai-detector": {
        "ai_labels": ["Fake"], "threshold": 0.5, "max_tokens": 512, "chunk": "first",
        "source": "model card; id2label {0: Fake, 1: Real}"},
    "Hello-SimpleAI/chatgpt-detector-roberta": {
        "ai_labels": ["ChatGPT"], "threshold": 0.5, "max_tokens": 512, "chunk": "first",
        "source": "HC3 model card; id2label {0: Human, 1: ChatGPT}"},
    "fakespot-ai/roberta-base-ai-text-detection-v1": {
        "ai_labels": ["AI"], "threshold": 0.5, "max_tokens": 512, "chunk": "first",
        "source": "model card; index 1 = AI"},
    "MayZhou/e5-small-lora-ai-generated-detector": {
        "ai_labels": ["LABEL_1", "AI"], "threshold": 0.85, "max_tokens": 512, "chunk": "first",
        "source": "model README: label 1 = AI, threshold 0.85"},
    "SuperAnnotate/ai-detector": {
        "ai_labels": None, "threshold": 0.5, "max_tokens": 512, "chunk": "mean",
        "bands": [0.9, 0.7, 0.3, 0.1], "custom_head": True,
        "source": "model card: single sigmoid logit (RoBERTa-large, CLS), confidence bands"},
    "desklib/ai-text-detector-v1.01": {
        "ai_labels": None, "threshold": 0.5, "max_tokens": 768, "chunk": "first", "custom_head": True,
        "source": "model card: single sigmoid logit, DeBERTa-v3-large with mean pooling (custom class)"},
    "TrustSafeAI/RADAR-Vicuna-7B": {
        "ai_labels": None, "ai_index_fallback": 0, "threshold": 0.5, "max_tokens": 512, "chunk": "first",
        "source": "RADAR README: output index 0 = AI"},
}

#: Label names (case-insensitive) read as "AI" for models outside the table.
AI_LABEL_NAMES = ("ai", "fake", "chatgpt", "gpt", "machine", "machine-generated", "machine_generated",
                  "generated", "ai-generated", "ai_generated", "llm")


def ai_label_index(id2label: dict[Any, str] | None, ai_labels: Sequence[str] | None, model: str) -> int:
    """Index of the AI output in ``id2label`` by name.

    Args:
        id2label: the model's ``config.id2label`` (keys int or str).
        ai_labels: names that mean AI for this model (table or ``ai_label``), or None to
            use :data:`AI_LABEL_NAMES`.

    Raises:
        ModelLoadError: no label, or more than one, matches.
    """
    if not id2label:
        raise ModelLoadError(f"classifier {model!r} has no id2label; set ai_label=NAME or use a single-logit head")
    labels = {int(k): str(v) for k, v in id2label.items()}
    wanted = [a.lower() for a in (ai_labels or AI_LABEL_NAMES)]
    hits = [i for i, name in labels.items() if name.lower() in wanted]
    if len(hits) != 1:
        raise ModelLoadError(
            f"classifier {model!r}: cannot tell which output means AI from id2label {labels} "
            f"(looked for {list(ai_labels or AI_LABEL_NAMES)}); pass --set ai_label=NAME")
    return hits[0]


def head_probability(logits: Sequence[float], ai_index: int | None) -> float:
    """P(AI) from one text's logits: softmax at ``ai_index``, or sigmoid of a single logit."""
    if len(logits) == 1:
        x = float(logits[0])
        return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))
    if ai_index is None:
        raise ValueError("a multi-logit head needs the AI label index")
    m = max(float(v) for v in logits)
    e = [math.exp(float(v) - m) for v in logits]
    return e[ai_index] / sum(e)


def usable_positions(model: Any) -> int | None:
    """How many tokens ``model`` can embed, or None when it has no absolute position table.

    The learned position table (``*.position_embeddings`` or ``wpe``) has
    ``num_embeddings`` rows; models of the RoBERTa family number positions from
    ``padding_idx + 1`` (transformers' ``create_position_ids_from_input_ids``), so their
    last usable length is ``num_embeddings - padding_idx - 1`` (514 → 512 for
    roberta-base). A cap above this crashes in the embedding lookup (``index out of
    bounds``), so every cap is bounded by it.
    """
    import torch

    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Embedding) and (name.endswith(("position_embeddings", "wpe"))):
            off = mod.padding_idx + 1 if mod.padding_idx is not None else 0
            return int(mod.num_embeddings - off)
    return None


class HFClassifier:
    """A sequence classifier as a detector.

    Settings: ``model`` (hub id or local folder), ``ai_label`` (label name meaning AI;
    default from :data:`KNOWN_CLASSIFIERS` or :data:`AI_LABEL_NAMES`), ``threshold``,
    ``max_tokens``, ``chunk`` (``first`` or ``mean``), ``batch_size``, ``device``, ``dtype``.
    Each input carries exactly one start and one end token (per chunk). The cap actually
    used (``detail["max_tokens"]``) is ``max_tokens`` bounded by the model's positions
    (:func:`usable_positions`).
    """

    def __init__(self, model: str, ai_label: str | None = None, threshold: float | None = None,
                 max_tokens: int | None = None, chunk: str | None = None, batch_size: int = 16,
                 device: str = "auto", dtype: str = "auto"):
        self.model_name = str(model)
        row = KNOWN_CLASSIFIERS.get(self.model_name, {})
        if row.get("custom_head"):
            raise ModelLoadError(
                f"classifier {self.model_name!r} uses a custom model class ({row['source']}); "
                "it cannot be loaded as a transformers sequence classifier")
        self.ai_labels = [ai_label] if ai_label else row.get("ai_labels")
        self.threshold = float(threshold if threshold is not None else row.get("threshold", 0.5))
        self.max_tokens = int(max_tokens or row.get("max_tokens", 512))
        self.chunk = chunk or row.get("chunk", "first")
        if self.chunk not in ("first", "mean"):
            raise ValueError("chunk must be 'first' or 'mean'")
        self.batch_size = int(batch_size)
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self._loaded: tuple[Any, Any, int | None] | None = None
        self.cap = self.max_tokens
        self.spec = Spec("detector", "hf-classifier", VERSION, {
            "model": self.model_name, "ai_label": ai_label, "threshold": self.threshold,
            "max_tokens": self.max_tokens, "chunk": self.chunk, "dtype": self.dtype})

    # -- loading
    def load(self) -> tuple[Any, Any, int | None]:
        """(model, tokenizer, AI index); raises :class:`ModelLoadError` on any fresh weight."""
        if self._loaded is not None:
            return self._loaded
        torch = _torch()
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        where, extra = _where(self.model_name)
        try:
            with quiet_loading():
                tok = AutoTokenizer.from_pretrained(where, **extra)
        except Exception as e:
            raise _explain(self.model_name, "tokenizer", e) from e
        try:
            with quiet_loading():
                model, info = AutoModelForSequenceClassification.from_pretrained(
                    where, dtype=getattr(torch, self.dtype), output_loading_info=True, **extra)
        except Exception as e:
            raise _explain(self.model_name, "weights", e) from e
        missing = list(info.get("missing_keys") or [])
        mismatched = [k[0] if isinstance(k, tuple) else k for k in (info.get("mismatched_keys") or [])]
        if missing or mismatched:
            raise ModelLoadError(
                f"classifier {self.model_name!r}: these weights are not in the checkpoint and would be "
                f"freshly initialised: {sorted(set(missing + mismatched))}; it is not a trained classifier")
        model.to(self.device).eval()
        limit = usable_positions(model)
        self.cap = min(self.max_tokens, limit) if limit else self.max_tokens
        n_out = int(model.config.num_labels)
        idx = None if n_out == 1 else ai_label_index(model.config.id2label, self.ai_labels, self.model_name)
        self._loaded = (model, tok, idx)
        return self._loaded

    def encode(self, text: str) -> list[list[int]]:
        """Token ids of each chunk, each with exactly one start and one end token."""
        _, tok, _ = self.load()
        enc = tok(text, truncation=True, max_length=self.cap,
                  return_overflowing_tokens=(self.chunk == "mean"), stride=0)
        ids = enc["input_ids"]
        chunks = ids if ids and isinstance(ids[0], list) else [ids]
        return chunks if self.chunk == "mean" else chunks[:1]

    def score_batch(self, texts: Sequence[str]) -> list[ScoreResult]:
        torch = _torch()
        model, tok, idx = self.load()
        out: list[ScoreResult | None] = [None] * len(texts)
        flat: list[tuple[int, list[int]]] = []
        n_tok: dict[int, int] = {}
        for i, t in enumerate(texts):
            if not isinstance(t, str) or not t.strip():
                out[i] = ScoreResult.failed("unscorable", "empty or whitespace-only text")
                continue
            full = len(tok(t, truncation=False, verbose=False)["input_ids"])
            n_tok[i] = full
            for c in self.encode(t):
                flat.append((i, c))
        probs: dict[int, list[float]] = {}
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        order = sorted(range(len(flat)), key=lambda k: -len(flat[k][1]))
        with torch.inference_mode():
            for a in range(0, len(order), self.batch_size):
                grp = [flat[k] for k in order[a:a + self.batch_size]]
                L = max(len(c) for _, c in grp)
                ids = torch.full((len(grp), L), pad, dtype=torch.long)
                mask = torch.zeros((len(grp), L), dtype=torch.long)
                for b, (_, c) in enumerate(grp):
                    ids[b, :len(c)] = torch.tensor(c)
                    mask[b, :len(c)] = 1
                logits = model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits.float().cpu()
                for (i, _), row in zip(grp, logits.tolist()):
                    probs.setdefault(i, []).append(head_probability(row, idx))
        for i, ps in probs.items():
            p = sum(ps) / len(ps)
            used = sum(len(c) for j, c in flat if j == i)
            out[i] = ScoreResult(status="ok", raw=p, scale="p_ai", direction="higher_ai", ai_probability=p,
                                 verdict="AI" if p >= self.threshold else "Human", vendor_version=self.model_name,
                                 detail={"n_tokens": n_tok[i], "tokens_used": used, "chunks": len(ps),
                                         "truncated": self.chunk == "first" and n_tok[i] > self.cap,
                                         "max_tokens": self.cap, "threshold": self.threshold})
        return out  # type: ignore[return-value]
