"""A model's inputs: token ids with the tokenizer's special tokens (:func:`tokenize`) and the
effective truncation cap (:func:`model_cap`, bounded by the model's position limit).
"""

from __future__ import annotations

from collections.abc import Sequence

from veribench.detectors.local.models import LoadedModel


def _position_limit(lm: LoadedModel) -> int | None:
    cfg = lm.model.config
    for attr in ("max_position_embeddings", "n_positions"):
        v = getattr(cfg, attr, None)
        if isinstance(v, int) and v > 0:
            return v
    return None


def model_cap(lm: LoadedModel, max_tokens: int) -> int:
    """The effective truncation cap: ``max_tokens``, bounded by the model's positions."""
    limit = _position_limit(lm)
    return int(min(max_tokens, limit)) if limit else int(max_tokens)


def tokenize(lm: LoadedModel, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of each text with the tokenizer's special tokens, not truncated."""
    enc = lm.tokenizer(list(texts), add_special_tokens=True, truncation=False, verbose=False)
    return [list(x) for x in enc["input_ids"]]
