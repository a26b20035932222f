"""Process evidence of one draft, from its saved revisions (pure functions, no I/O).

Recorded and shown, never used to accuse: the numbers describe how a text arrived in the
editor (typed in many small steps, or in a few large blocks), which a reviewer can read
beside the writer's attestation. A large block can be the writer's own notes pasted in,
or typing while saving was interrupted; the evidence does not say which.

Units and definitions (the thresholds live in :mod:`.rules`):

- *words*: tokens holding a letter or digit, tokens being separated by white space or
  by an invisible or blank-looking character (U+200B, U+2800, U+3164, ...;
  :func:`veribench.text.words.word_count`, the rubric's one word rule).
- *step*: one saved revision against the one before it (the first against an empty
  draft). The change is found on the word rule's tokens (:func:`veribench.text.words.tokens`): the common prefix and suffix are set
  aside and the middle is aligned with :class:`difflib.SequenceMatcher` (no junk
  heuristic); ``inserted_words`` / ``deleted_words`` count word tokens on the new / old
  side of its insert, replace and delete blocks, so over any history
  ``sum(inserted) - sum(deleted) == words of the last revision``. A pure insertion of k
  words anywhere is one block of k words.
- *large insertion*: a step whose largest contiguous inserted block has at least
  ``LARGE_INSERTION_WORDS`` words; listed with its size and the seconds since the save
  before it.
- *fast insertion* (sustained insertion faster than human typing): the words of save ``k``
  were typed after the save before it; so the saves ``j+1..k`` inserted their words within
  ``(t_j, t_k]``, where ``t_0`` is the opening of the editor (when known). For every save
  ``k``, ``j`` is the latest save (or the opening) at least ``FAST_INSERTION_WINDOW_SECONDS``
  before it (the earliest known time when none is), so the stretch ``(t_j, t_k]`` is never
  shorter than the window; the words inserted by saves ``j+1..k`` are compared with
  ``FAST_INSERTION_WORDS_PER_SECOND x max(t_k - t_j, FAST_INSERTION_WINDOW_SECONDS)``:
  above it, words arrived faster than a typist enters them, sustained over at least one
  window, whether in one block or in many small ones. (Measured over the saves *within*
  the window instead, a steady 3.2 words a second in 24-word saves every 7.6 s stayed under
  the cap: the window then spans only 22.8 s.) Consecutive flagged saves form one
  *stretch*, listed with its first and last revision, the words its saves inserted and its
  seconds (from the save before its first revision). A save after a gap longer than the
  window is measured over that gap (its words may have been typed over the whole of it);
  a single large block is listed as a large insertion instead. A save ``k`` is also flagged
  when the saves ``i+1..k`` within one window before it (``i`` the earliest save at most a
  window before) inserted more than a window's words (``FAST_INSERTION_WORDS_PER_SECOND x
  FAST_INSERTION_WINDOW_SECONDS``): a burst after a long pause, which the first reading
  measures over the pause. Time linear in the revisions (two pointers each).
- *writing time*: the sum of the gaps between consecutive saves (and from opening the
  editor to the first save) that are at most ``IDLE_GAP_SECONDS``; longer gaps are breaks.
- *span*: seconds from the first save to the last.
"""

from __future__ import annotations

import difflib
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from veribench.rubric.write import rules
from veribench.text.words import tokens, word_count

#: Above this many token pairs the middle of a step is taken as one replaced block
#: (SequenceMatcher is quadratic in the worst case; a whole-text rewrite is one block anyway).
MAX_ALIGN_PAIRS = 4_000_000


@dataclass(frozen=True)
class Step:
    """What one saved revision changed.

    Attributes:
        words: words in the revision (>= 0).
        inserted_words, deleted_words: word tokens added / removed by the step (>= 0).
        largest_insertion_words: words in the largest contiguous inserted block (>= 0).
    """

    words: int
    inserted_words: int
    deleted_words: int
    largest_insertion_words: int


def _is_word(tok: str) -> bool:
    return word_count(tok) > 0


def diff_step(old: str, new: str) -> Step:
    """The :class:`Step` from text ``old`` to text ``new`` (see the module docstring).

    Both texts are cut by the one word rule (:func:`veribench.text.words.tokens`), so an
    invisible joiner (U+200B, U+2800, U+3164, ...) splits words here as a space does."""
    a, b = tokens(old), tokens(new)
    lo = 0
    while lo < len(a) and lo < len(b) and a[lo] == b[lo]:
        lo += 1
    hi_a, hi_b = len(a), len(b)
    while hi_a > lo and hi_b > lo and a[hi_a - 1] == b[hi_b - 1]:
        hi_a -= 1
        hi_b -= 1
    ma, mb = a[lo:hi_a], b[lo:hi_b]
    if not ma or not mb or len(ma) * len(mb) > MAX_ALIGN_PAIRS:
        ops = [("replace", 0, len(ma), 0, len(mb))] if (ma or mb) else []
    else:
        ops = difflib.SequenceMatcher(None, ma, mb, autojunk=False).get_opcodes()
    ins = dele = largest = 0
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            continue
        w_new = sum(1 for t in mb[j1:j2] if _is_word(t))
        w_old = sum(1 for t in ma[i1:i2] if _is_word(t))
        ins += w_new
        dele += w_old
        largest = max(largest, w_new)
    return Step(words=word_count(new), inserted_words=ins, deleted_words=dele, largest_insertion_words=largest)


def summarise(steps: Sequence[Step], saved_at: Sequence[datetime], opened_at: datetime | None = None,
              *, history: bool = True) -> dict[str, Any]:
    """The evidence summary of a draft.

    Args:
        steps: one :class:`Step` per saved revision, in order.
        saved_at: the server time of each save (timezone-aware, non-decreasing).
        opened_at: when the writer first opened the editor (None: unknown).
        history: include the per-revision series.

    Returns:
        ``{"revisions", "first_saved_at", "last_saved_at", "span_seconds", "writing_seconds",
        "breaks", "words", "words_per_revision": {"mean", "median", "max"},
        "large_insertions": [{"revision", "words", "seconds_since_previous", "saved_at"}],
        "large_insertion_words", "large_insertion_share", "large_insertion_share_reason",
        "fast_insertions": [{"from_revision", "to_revision", "words", "seconds"}],
        "fast_insertion_words", "rules": {...}, "history": [[seconds since first save, words, inserted, deleted], ...]}``.
        Seconds are floats rounded to 0.1 s; revisions are numbered from 1. Undefined
        values are ``None`` (no revisions; a share of an empty text), never 0.

    Raises:
        ValueError: ``steps`` and ``saved_at`` differ in length.
    """
    if len(steps) != len(saved_at):
        raise ValueError(f"{len(steps)} steps but {len(saved_at)} save times")
    n = len(steps)
    out: dict[str, Any] = {
        "revisions": n, "rules": {"large_insertion_words": rules.LARGE_INSERTION_WORDS,
                                  "idle_gap_seconds": rules.IDLE_GAP_SECONDS,
                                  "fast_insertion_words_per_second": rules.FAST_INSERTION_WORDS_PER_SECOND,
                                  "fast_insertion_window_seconds": rules.FAST_INSERTION_WINDOW_SECONDS},
    }
    if n == 0:
        out.update({"first_saved_at": None, "last_saved_at": None, "span_seconds": None, "writing_seconds": None,
                    "breaks": None, "words": 0, "words_per_revision": None, "large_insertions": [],
                    "large_insertion_words": 0, "large_insertion_share": None,
                    "large_insertion_share_reason": "no revision saved", "fast_insertions": [],
                    "fast_insertion_words": 0})
        if history:
            out["history"] = []
        return out
    gaps: list[float | None] = [None if opened_at is None else max(0.0, (saved_at[0] - opened_at).total_seconds())]
    gaps += [max(0.0, (saved_at[i] - saved_at[i - 1]).total_seconds()) for i in range(1, n)]
    writing = sum(g for g in gaps if g is not None and g <= rules.IDLE_GAP_SECONDS)
    breaks = sum(1 for g in gaps if g is not None and g > rules.IDLE_GAP_SECONDS)
    ins = [s.inserted_words for s in steps]
    large = [{"revision": i + 1, "words": s.largest_insertion_words,
              "seconds_since_previous": None if gaps[i] is None else round(gaps[i], 1),
              "saved_at": saved_at[i].isoformat()}
             for i, s in enumerate(steps) if s.largest_insertion_words >= rules.LARGE_INSERTION_WORDS]
    large_words = sum(x["words"] for x in large)
    fast = fast_insertions(steps, saved_at, opened_at)
    final = steps[-1].words
    out.update({
        "first_saved_at": saved_at[0].isoformat(), "last_saved_at": saved_at[-1].isoformat(),
        "span_seconds": round((saved_at[-1] - saved_at[0]).total_seconds(), 1),
        "writing_seconds": round(writing, 1), "breaks": breaks, "words": final,
        "words_per_revision": {"mean": round(statistics.fmean(ins), 2), "median": float(statistics.median(ins)),
                               "max": max(ins)},
        "large_insertions": large, "large_insertion_words": large_words,
        "large_insertion_share": round(large_words / final, 4) if final else None,
        "large_insertion_share_reason": None if final else "the last revision has no words",
        "fast_insertions": fast, "fast_insertion_words": sum(x["words"] for x in fast),
    })
    if history:
        t0 = saved_at[0]
        out["history"] = [[round((t - t0).total_seconds(), 1), s.words, s.inserted_words, s.deleted_words]
                          for s, t in zip(steps, saved_at)]
    return out


def fast_insertions(steps: Sequence[Step], saved_at: Sequence[datetime],
                    opened_at: datetime | None = None) -> list[dict[str, Any]]:
    """The stretches of sustained insertion faster than human typing (module docstring).

    Returns:
        ``[{"from_revision", "to_revision", "words", "seconds"}]`` in order; revisions from 1,
        ``words`` inserted by the stretch's saves, ``seconds`` from the save before its first
        revision (or the editor's opening) to its last save, rounded to 0.1 s.
    """
    window = float(rules.FAST_INSERTION_WINDOW_SECONDS)
    rate = float(rules.FAST_INSERTION_WORDS_PER_SECOND)
    # times[i] is when save i happened (i = 0: the editor's opening, None when unknown)
    times: list[datetime | None] = [opened_at, *saved_at]
    words = [0] + [s.inserted_words for s in steps]
    total = [0]  # total[i] = words of saves 1..i
    for w in words[1:]:
        total.append(total[-1] + w)
    out: list[dict[str, Any]] = []
    first = 0 if opened_at is not None else 1
    j = first  # (a) the latest save at least one window before save k (else the first known)
    i = first  # (b) the earliest save at most one window before save k
    for k in range(first + 1, len(times)):
        tk = saved_at[k - 1]
        while j + 1 < k and (tk - times[j + 1]).total_seconds() >= window:  # type: ignore[operator]
            j += 1
        while i < k and (tk - times[i]).total_seconds() > window:  # type: ignore[operator]
            i += 1
        span = (tk - times[j]).total_seconds()  # type: ignore[operator]
        fast = total[k] - total[j] > rate * max(span, window)  # sustained over at least a window
        burst = i < k and total[k] - total[i] > rate * window  # more than a window's words within one
        if not (fast or burst):
            continue
        start = j if fast else i
        if out and out[-1]["to_revision"] >= start:  # overlaps or touches the stretch before: extend it
            out[-1]["to_revision"] = k
        else:
            out.append({"from_revision": start + 1, "to_revision": k})
    for x in out:
        a, b = x["from_revision"], x["to_revision"]
        x["words"] = sum(words[a:b + 1])
        start = times[a - 1]
        x["seconds"] = round((times[b] - start).total_seconds(), 1)  # type: ignore[operator]
    return out


def describe(ev: dict[str, Any]) -> str:
    """One line for people: ``12 revisions over 41 min (35 min writing); 2 large insertions (500, 40 words)``."""
    n = ev.get("revisions") or 0
    if not n:
        return "no revision saved"

    def dur(s: float | None) -> str:
        if s is None:
            return "unknown"
        if s < 90:
            return f"{s:.0f} s"
        if s < 5400:
            return f"{s / 60:.0f} min"
        return f"{s / 3600:.1f} h"

    line = f"{n} revision{'s' if n != 1 else ''} over {dur(ev['span_seconds'])} ({dur(ev['writing_seconds'])} writing)"
    big = ev.get("large_insertions") or []
    if big:
        sizes = ", ".join(str(x["words"]) for x in big[:6]) + (", ..." if len(big) > 6 else "")
        line += f"; {len(big)} large insertion{'s' if len(big) != 1 else ''} ({sizes} words)"
    else:
        line += "; no large insertion"
    fast = ev.get("fast_insertions") or []
    if fast:
        line += (f"; {sum(x['words'] for x in fast)} words inserted faster than typing "
                 f"({len(fast)} stretch{'es' if len(fast) != 1 else ''})")
    return line
