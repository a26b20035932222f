"""Mixed-text metrics (pure): where a text changes from human to machine, and how well a
detector finds it.

Units. SemEval-2024 Task 8 subtask C counts **words** as the pieces of ``text.split(" ")``
(split on the space character only, not ``str.split()``: the task's FAQ, "Note that using
split(" ") with whitespace as the argument, rather than split()"); its label is the index
of the first machine word, i.e. ``len(human_segment.split(" "))``. Segments in the corpus
model are **character** offsets (:class:`veribench.corpus.document.Segment`);
:func:`boundary_char` and :func:`boundary_word` convert between the two.

Metrics
-------
- :func:`boundary_mae`: mean absolute error in words between gold and predicted boundary
  indices, the official subtask C metric (``subtaskC/scorer/scorer.py``: ids joined, mean of
  ``abs(gold - pred)``); lower is better, 0 perfect.
- :func:`sentence_scores_metrics`: sentence-level AUROC (:func:`veribench.metrics.roc.auroc`,
  higher score = more likely AI) and F1 of the flag rule ``score > threshold``
  (scikit-learn ``f1_score``, AI positive), over sentences labelled by the segment holding
  most of their characters.
- :func:`windowdiff` and :func:`pk`: segmentation errors for texts with several boundaries,
  from NLTK's kept implementation (``nltk.metrics.segmentation``; Pevzner & Hearst 2002,
  Computational Linguistics 28(1); Beeferman, Berger & Lafferty 1999), over word units;
  0 is perfect, 1 the worst.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from veribench.metrics._base import warn_undefined
from veribench.metrics.roc import auroc

#: A sentence: text up to ., !, ? (with closing quotes/brackets) followed by whitespace, or
#: a line break, or the end. Simple and language-agnostic; spans keep their characters.
_SENTENCE = re.compile(r"[^\n]*?(?:[.!?][\"')\]]*(?=\s)|\n|$)", re.S)


def word_starts(text: str) -> np.ndarray:
    """Character offset of each word of ``text.split(" ")`` (int64, one per piece)."""
    pieces = text.split(" ")
    lens = np.fromiter((len(p) + 1 for p in pieces), dtype=np.int64, count=len(pieces))
    return np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)


def boundary_char(text: str, word_index: int) -> int:
    """Character offset where word ``word_index`` of ``text.split(" ")`` starts; the text's
    length when ``word_index`` is the number of words (no machine part).

    Raises:
        ValueError: ``word_index`` negative or beyond the number of words.
    """
    n = text.count(" ") + 1
    if not 0 <= int(word_index) <= n:
        raise ValueError(f"word index {word_index} outside 0..{n} (the text has {n} space-separated words)")
    if word_index == n:
        return len(text)
    return int(word_starts(text)[int(word_index)])


def boundary_word(text: str, char: int) -> int:
    """Index in ``text.split(" ")`` of the first word at or after character ``char``: the
    subtask C label of a boundary at ``char`` (a boundary inside a word moves to the next
    word, so that word counts as human).

    Raises:
        ValueError: ``char`` outside 0..len(text).
    """
    if not 0 <= int(char) <= len(text):
        raise ValueError(f"character offset {char} outside 0..{len(text)}")
    if char == 0:
        return 0
    return text.count(" ", 0, char) + (0 if text[char - 1] == " " else 1)


def boundary_mae(gold: Any, pred: Any) -> float:
    """Mean absolute error between gold and predicted boundary word indices (SemEval-2024
    Task 8 subtask C's official metric).

    Args:
        gold, pred: equal-length sequences of integer word indices (pair them by id first,
            as the official scorer's merge on ``id`` does).

    Returns:
        The mean of ``|gold - pred|`` in words; NaN with an ``UndefinedMetricWarning`` when empty.

    Raises:
        ValueError: different lengths or non-integer values.
    """
    g = np.asarray(gold)
    p = np.asarray(pred)
    if g.shape != p.shape or g.ndim != 1:
        raise ValueError(f"gold and pred must be 1-D of equal length, got {g.shape} and {p.shape}")
    if g.size == 0:
        warn_undefined("boundary MAE of no texts is undefined")
        return float("nan")
    for name, a in (("gold", g), ("pred", p)):
        if a.dtype.kind not in "iu":
            if a.dtype.kind == "f" and np.all(np.isfinite(a)) and np.all(a == np.round(a)):
                continue
            raise ValueError(f"{name} boundaries must be integer word indices")
    return float(np.mean(np.abs(g.astype(np.int64) - p.astype(np.int64))))


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``(start, end)`` covering the text's non-space characters, in order
    (leading whitespace of a sentence excluded)."""
    out = []
    for m in _SENTENCE.finditer(text):
        a, b = m.start(), m.end()
        while a < b and text[a].isspace():
            a += 1
        e = b
        while e > a and text[e - 1].isspace():
            e -= 1
        if e > a:
            out.append((a, e))
    return out


def span_labels(spans: Sequence[tuple[int, int]], segments: Sequence[Any]) -> np.ndarray:
    """1 (AI) / 0 (human) per span: the label of the segment holding most of its characters
    (ties go to AI). ``segments``: objects or dicts with ``start``, ``end``, ``label``."""
    segs = [(s["start"], s["end"], s["label"]) if isinstance(s, dict) else (s.start, s.end, s.label)
            for s in segments]
    out = np.zeros(len(spans), dtype=np.int8)
    for i, (a, b) in enumerate(spans):
        ai = sum(max(0, min(b, e) - max(a, s)) for s, e, lab in segs if lab == "ai")
        hu = sum(max(0, min(b, e) - max(a, s)) for s, e, lab in segs if lab != "ai")
        out[i] = 1 if ai >= hu and ai > 0 else 0
    return out


def sentence_scores_metrics(y_true: Any, y_score: Any, threshold: float | None = None) -> dict[str, Any]:
    """Sentence-level AUROC and F1 (AI positive) over sentences pooled from many texts.

    Args:
        y_true: 1 = AI sentence, 0 = human sentence.
        y_score: finite scores, higher = more likely AI.
        threshold: flag rule ``score > threshold`` for F1; ``None``: F1 is not computed.

    Returns:
        ``{"n", "n_ai", "n_human", "auroc", "f1", "reason"}``; ``auroc`` is ``None`` with a
        reason when a class is missing, ``f1`` ``None`` without a threshold or AI sentences.
    """
    from sklearn.metrics import f1_score


    y = np.asarray(y_true, dtype=np.int8)
    s = np.asarray(y_score, dtype=np.float64)
    n_ai = int(y.sum())
    out: dict[str, Any] = {"n": int(y.size), "n_ai": n_ai, "n_human": int(y.size - n_ai), "auroc": None, "f1": None,
                           "reason": None}
    if n_ai == 0 or n_ai == y.size:
        out["reason"] = "no human sentences" if n_ai else "no AI sentences"
    else:
        out["auroc"] = float(auroc(y, s))
    if threshold is not None and n_ai:
        out["f1"] = float(f1_score(y, s > threshold, zero_division=0.0))
    return out


def locate_sentences(text: str, items: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """Character spans of sentences a detector returned as strings, found in order in ``text``.

    Args:
        text: the text as submitted.
        items: ``{"text": sentence, "ai_probability": p | None, "raw": value | None}`` in the
            detector's order.

    Returns:
        ``([{start, end, ai_probability, raw}], unlocated)``: a sentence is found at or after
        the end of the previous one, exactly or with any run of whitespace matching any
        other; one that cannot be found is left out and counted (never placed by guess).
    """
    out, cur, missing = [], 0, 0
    for it in items:
        s = str(it.get("text") or "").strip()
        if not s:
            missing += 1
            continue
        pos = text.find(s, cur)
        end = pos + len(s)
        if pos < 0:
            m = re.compile(r"\s+".join(re.escape(w) for w in s.split())).search(text, cur)
            pos, end = (m.start(), m.end()) if m else (-1, -1)
        if pos < 0:
            missing += 1
            continue
        out.append({"start": pos, "end": end, "ai_probability": it.get("ai_probability"), "raw": it.get("raw")})
        cur = end
    return out, missing


def boundary_string(n_units: int, boundaries: Sequence[int]) -> str:
    """NLTK's segmentation string over ``n_units`` units: ``"1"`` at unit ``b - 1`` for each
    boundary before unit ``b`` (0 < b < n_units), else ``"0"``."""
    s = ["0"] * n_units
    for b in boundaries:
        if 0 < b < n_units:
            s[b - 1] = "1"
    return "".join(s)


def default_window(n_units: int, n_boundaries: int) -> int:
    """Half the mean reference segment length, at least 1 (Pevzner & Hearst 2002)."""
    return max(1, int(round(n_units / (2.0 * (n_boundaries + 1)))))


def windowdiff(gold: Sequence[int], pred: Sequence[int], n_units: int, k: int | None = None) -> float:
    """WindowDiff between gold and predicted boundaries (unit indices where a new segment
    starts) over ``n_units`` units, by ``nltk.metrics.segmentation.windowdiff``; ``k``
    defaults to :func:`default_window` of the gold segmentation.

    Raises:
        ValueError: fewer than 2 units, or k not below the number of units.
    """
    from nltk.metrics.segmentation import windowdiff as _wd

    if n_units < 2:
        raise ValueError("WindowDiff needs at least 2 units")
    k = k or default_window(n_units, len(gold))
    k = min(k, n_units - 1)
    return float(_wd(boundary_string(n_units, gold), boundary_string(n_units, pred), k))


def pk(gold: Sequence[int], pred: Sequence[int], n_units: int, k: int | None = None) -> float:
    """Pk (Beeferman et al. 1999) by ``nltk.metrics.segmentation.pk``; ``k`` defaults to
    :func:`default_window` of the gold segmentation."""
    from nltk.metrics.segmentation import pk as _pk

    if n_units < 2:
        raise ValueError("Pk needs at least 2 units")
    k = k or default_window(n_units, len(gold))
    k = min(k, n_units - 1)
    return float(_pk(boundary_string(n_units, gold), boundary_string(n_units, pred), k))
