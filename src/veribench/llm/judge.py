"""The readability judge: a language model rates each text's writing quality on [0, 1].

HumanizerBench methodology 1.2.0 (``shared/spec/000_*.txt``, "readability"): "A language
model reads each output and rates its writing quality — clarity, fluency, and
naturalness — returning a value in [0, 1] where higher is better. Each output is rated
once (the rating is cached by text hash ...)". The bundle publishes the per-test value as
``tests[i].readability``; the humanizer aggregate is the mean.

Here the judge is any OpenAI-compatible chat model, called with ``temperature: 0`` and a
fixed ``seed``; the prompt below is versioned data (``JUDGE_VERSION``) and its hash enters
the cache key, so a changed prompt never reuses old ratings. Calls are cached in the
workspace by (client spec, request), and the request holds the text, so each text is rated
once per judge configuration. Which model HumanizerBench uses is not published: ratings
from another model are comparable in scale, not in value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from veribench.detectors.api.http import VendorError
from veribench.hashing import sha256_bytes
from veribench.llm.client import ChatClient, make_client, strip_think
from veribench.spec import Spec

JUDGE_VERSION = "readability-1"
JUDGE_SEED = 0
SYSTEM_PROMPT = (
    "You rate the writing quality of a text: clarity, fluency and naturalness. Ignore the topic, "
    "factual accuracy and whether you agree with it. Reply with a JSON object only, of the form "
    '{"readability": X}, where X is a number from 0 to 1: 1 means clear, fluent, natural writing '
    "with no errors; 0.5 means understandable but clumsy or error-prone; 0 means unreadable."
)
USER_TEMPLATE = "Text to rate:\n<<<\n{text}\n>>>"
PROMPT_SHA256 = sha256_bytes((SYSTEM_PROMPT + "\x00" + USER_TEMPLATE).encode("utf-8"))

_NUM = re.compile(r"-?\d+(?:\.\d+)?")


def parse_rating(reply: str) -> float | None:
    """The rating in a judge reply: ``{"readability": x}`` or, failing that, the first number.

    Returns ``None`` when there is no number or it lies outside [0, 1] (never clamped:
    an out-of-scale reply is a failed rating, not an extreme one).
    """
    s = strip_think(reply)
    m = re.search(r"\{.*\}", s, re.S)
    val: Any = None
    if m:
        try:
            obj = json.loads(m.group(0))
            if isinstance(obj, dict):
                val = obj.get("readability", obj.get("score"))
        except ValueError:
            val = None
    if val is None:
        n = _NUM.search(s)
        val = n.group(0) if n else None
    try:
        f = float(val) if val is not None and not isinstance(val, bool) else None
    except (TypeError, ValueError):
        return None
    if f is None or not (0.0 <= f <= 1.0):
        return None
    return f


def readability_records(client_or_settings: Any, texts: Sequence[str], ws: Any = None,
                        seed: int = JUDGE_SEED) -> list[dict[str, Any]]:
    """One record per text: ``readability`` (float in [0, 1] or ``None``), ``status``, ``reason``, ``call``.

    ``call`` is the client's provenance record (provider, model, server model, date, prompt,
    seed, sampling). A failed call or an unusable reply gives ``readability: None`` with a
    reason code; it never raises for one text.
    """
    client = make_client(client_or_settings)
    out = []
    for t in texts:
        msgs = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": USER_TEMPLATE.format(text=t)}]
        try:
            res = client.chat(msgs, ws=ws, temperature=0.0, seed=seed)
        except VendorError as e:
            out.append({"readability": None, "status": e.status, "reason": e.reason, "call": None})
            continue
        r = parse_rating(res.text)
        out.append({"readability": r, "status": "ok" if r is not None else "bad_response",
                    "reason": None if r is not None else "reply holds no rating in [0, 1]", "reply": res.text,
                    "call": res.record()})
    return out


def readability(client_or_settings: Any, texts: Sequence[str], ws: Any = None, seed: int = JUDGE_SEED
                ) -> list[float | None]:
    """Readability of each text on HumanizerBench's scale: [0, 1], higher = better writing.

    Args:
        client_or_settings: a :class:`~veribench.llm.client.ChatClient` or its settings dict
            (``{"base_url": ..., "model": ..., "provider": ...}``); temperature 0 and
            ``seed`` are always sent.
        texts: texts to rate.
        ws: workspace for the cache (each text rated once per judge configuration), or ``None``.

    Returns:
        One float in [0, 1] or ``None`` (failed call or unusable reply) per text, in order.
    """
    return [r["readability"] for r in readability_records(client_or_settings, texts, ws, seed)]


class ReadabilityJudge:
    """Registry plug-in (kind ``judge``, name ``llm-readability``) wrapping :func:`readability`."""

    def __init__(self, seed: int = JUDGE_SEED, **client_settings: Any):
        self.client = ChatClient(**{**client_settings, "temperature": 0.0, "seed": seed})
        self.seed = seed
        self.spec = Spec("judge", "llm-readability", JUDGE_VERSION,
                         {**self.client.settings(), "prompt_sha256": PROMPT_SHA256})

    def rate(self, texts: Sequence[str], ws: Any = None) -> list[float | None]:
        return readability(self.client, texts, ws, self.seed)
