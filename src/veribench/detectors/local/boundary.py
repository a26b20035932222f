"""A local baseline for mixed texts: where does human writing turn into machine text?

From one forward pass of a causal LM per text (the zero-shot engine's
:func:`~veribench.detectors.local.engine.passes.single_passes`, shared with every other zero-shot
statistic through its memo) it takes each token's log-likelihood ``ll[t] = log p(x_{t+1} |
x_<=t)`` (nats; machine text is usually more predictable, so higher), and:

1. maps tokens to characters with the tokenizer's offsets, and gives each word of
   ``text.split(" ")`` (SemEval-2024 Task 8's units) the mean log-likelihood of the tokens
   ending in it;
2. smooths the word values with a centred moving average over ``window`` words (the
   windowed log-likelihood);
3. predicts the boundary b (a word index, 1 <= b < words) that maximises the standardised
   difference of means, after minus before: (mean[b:] - mean[:b]) * sqrt(b (n - b) / n),
   the single change-point statistic of a mean shift (Page 1954 / Sen & Srivastava 1975
   two-sample form); a text of one word or with no scored word gets no boundary;
4. scores each sentence (:func:`veribench.metrics.segmentation.sentence_spans`) by the
   mean log-likelihood of its tokens: ``detail["sentences"]`` (``ai_probability`` null:
   the statistic is not calibrated).

Result: ``raw`` = the share of words after the predicted boundary (scale
``share_ai_words``, higher = more AI), ``detail["boundary"] = {"word", "char"}``.
Tokens past ``max_tokens`` are not scored; their words take no value (``detail
["truncated"]``). Needs a fast tokenizer (character offsets).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from veribench.detectors.local.engine.passes import single_passes
from veribench.detectors.local.engine.records import SinglePass
from veribench.detectors.local.models import load_causal_lm, resolve_device, resolve_dtype
from veribench.metrics.segmentation import boundary_char, sentence_spans, word_starts
from veribench.records import ScoreResult
from veribench.spec import Spec

VERSION = "1"
DEFAULT_MODEL = "smollm2"


def token_char_ends(lm: Any, text: str, ids: np.ndarray) -> np.ndarray:
    """Character end offset of each token in ``ids`` (0 for special tokens).

    Raises:
        ValueError: the tokenizer gives no offsets, or its tokens differ from the pass's.
    """
    tok = lm.tokenizer
    if not getattr(tok, "is_fast", False):
        raise ValueError("the boundary baseline needs a fast tokenizer (character offsets)")
    enc = tok(text, add_special_tokens=True, truncation=False, return_offsets_mapping=True, verbose=False)
    got = list(enc["input_ids"])[: len(ids)]
    if got != [int(x) for x in ids]:
        raise ValueError("the tokenizer's offsets do not match the engine's tokens")
    return np.array([e for _, e in enc["offset_mapping"][: len(ids)]], dtype=np.int64)


def word_values(text: str, char_ends: np.ndarray, ll: np.ndarray) -> np.ndarray:
    """Mean log-likelihood per word of ``text.split(" ")`` of the scored tokens ending in it
    (token t+1 carries ``ll[t]``); NaN for a word with none."""
    starts = word_starts(text)
    n = starts.size
    ends = char_ends[1: 1 + ll.size]
    ok = ends > 0
    w = np.searchsorted(starts, ends[ok] - 1, side="right") - 1
    s = np.bincount(w, weights=ll[: ends.size][ok], minlength=n)
    c = np.bincount(w, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(c > 0, s / np.maximum(c, 1), np.nan)


def windowed(values: np.ndarray, window: int) -> np.ndarray:
    """Centred moving average over ``window`` values, skipping NaN (NaN where none)."""
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(v)
    half = window // 2
    cs = np.concatenate([[0.0], np.cumsum(np.where(ok, v, 0.0))])
    cc = np.concatenate([[0], np.cumsum(ok)])
    i = np.arange(v.size)
    lo, hi = np.maximum(0, i - half), np.minimum(v.size, i - half + window)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cc[hi] - cc[lo] > 0, (cs[hi] - cs[lo]) / (cc[hi] - cc[lo]), np.nan)


def best_boundary(values: np.ndarray) -> tuple[int | None, float | None]:
    """The change point b (1 <= b < n, over the finite values in order) maximising
    (mean after - mean before) * sqrt(b (n - b) / n); ``(None, None)`` with fewer than 2 values.
    Returns b as an index into ``values`` (the first value after the change) and the statistic."""
    v = np.asarray(values, dtype=np.float64)
    idx = np.flatnonzero(np.isfinite(v))
    n = idx.size
    if n < 2:
        return None, None
    x = v[idx]
    cs = np.cumsum(x)
    b = np.arange(1, n)
    before = cs[:-1] / b
    after = (cs[-1] - cs[:-1]) / (n - b)
    stat = (after - before) * np.sqrt(b * (n - b) / n)
    k = int(np.argmax(stat))
    return int(idx[k + 1]), float(stat[k])


class BoundaryDetector:
    """Mixed-text baseline (see the module docstring).

    Settings: ``model`` (hub id, local path or ``smollm2``), ``max_tokens`` (default 1024),
    ``window`` (words, default 5), ``device``, ``dtype``, ``batch_size``.
    Spec settings: model, max_tokens, window, dtype.
    """

    batch_size = 64

    def __init__(self, model: str = DEFAULT_MODEL, max_tokens: int = 1024, window: int = 5, device: str = "auto",
                 dtype: str = "auto", batch_size: int = 16):
        if int(window) < 1:
            raise ValueError("window must be at least 1 word")
        if int(max_tokens) < 2:
            raise ValueError("max_tokens must be at least 2")
        self.model, self.max_tokens, self.window = str(model), int(max_tokens), int(window)
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.forward_batch = int(batch_size)
        self.spec = Spec("detector", "boundary-loglik", VERSION,
                         {"model": self.model, "max_tokens": self.max_tokens, "window": self.window,
                          "dtype": self.dtype})

    def score_batch(self, texts: Sequence[str]) -> list[ScoreResult]:
        usable = [isinstance(t, str) and bool(t.strip()) for t in texts]
        todo = [t for t, u in zip(texts, usable) if u]
        lm = load_causal_lm(self.model, device=self.device, dtype=self.dtype) if todo else None
        passes = iter(single_passes(lm, todo, self.max_tokens, batch_size=self.forward_batch) if todo else ())
        return [self._one(lm, t, next(passes)) if u else ScoreResult.failed("unscorable", "empty or whitespace-only text")
                for t, u in zip(texts, usable)]

    def _one(self, lm: Any, text: str, sp: Any) -> ScoreResult:
        if not isinstance(sp, SinglePass):
            return ScoreResult.failed("too_short", "fewer than 2 tokens: no position to score")
        try:
            ends = token_char_ends(lm, text, sp.ids)
        except ValueError as e:
            return ScoreResult.failed("unscorable", str(e))
        wv = word_values(text, ends, np.asarray(sp.ll, dtype=np.float64))
        sm = windowed(wv, self.window)
        b, stat = best_boundary(sm)
        detail: dict[str, Any] = {"window": self.window, "tokens_used": sp.tokens_used,
                                  "truncated": sp.n_total > sp.tokens_used,
                                  "words": int(wv.size), "words_scored": int(np.isfinite(wv).sum()),
                                  "sentences": self.sentences(text, ends, np.asarray(sp.ll, dtype=np.float64))}
        if b is None:
            return ScoreResult.failed("too_short", "fewer than 2 scored words: no boundary", **detail)
        detail["boundary"] = {"word": b, "char": boundary_char(text, b), "statistic": stat}
        share = (wv.size - b) / wv.size
        return ScoreResult(status="ok", raw=share, scale="share_ai_words", direction="higher_ai",
                           ai_probability=None, vendor_version=self.model, detail=detail)

    @staticmethod
    def sentences(text: str, char_ends: np.ndarray, ll: np.ndarray) -> list[dict[str, Any]]:
        """``[{start, end, ai_probability: None, raw}]``: each sentence's mean token log-likelihood."""
        ends = char_ends[1: 1 + ll.size]
        out = []
        for a, e in sentence_spans(text):
            m = (ends > a) & (ends <= e)
            v = float(ll[: ends.size][m].mean()) if m.any() else None
            out.append({"start": a, "end": e, "ai_probability": None,
                        "raw": v if v is not None and math.isfinite(v) else None})
        return out
