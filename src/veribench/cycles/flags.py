"""Flags on a humanizer output: identical to input, refusal, truncation, access failure.

HumanizerBench methodology (``shared/spec/000_*.txt``, "Penalties"): output-quality
failures (identical-to-input, refusal, truncation) keep their per-occurrence
penalties; access failures (site down, paywall, captcha, no output generated, ToS
block) count towards "unavailable" (at least half of the attempts). A flagged test is
left out of every sub-score and feeds only the penalty rules.

The rules are data (:data:`REFUSAL_PATTERNS`, :data:`TRUNCATION_RULE`); each decision
returns the status and reason code written to ``tests.json``.
"""

from __future__ import annotations

import re

from veribench.bundles.jscompat import js_trim, js_word_count

#: Phrases that open (within the first 300 characters) a refusal instead of a rewrite.
#: Source: common refusal openers of chat models and humanizer front ends; lower-cased.
REFUSAL_PATTERNS = (
    r"\bi(?:'|’)?m sorry,? but\b", r"\bi cannot (?:help|assist|comply|rewrite|fulfil|fulfill)\b",
    r"\bi can(?:'|’)?t (?:help|assist|comply|rewrite|fulfil|fulfill)\b", r"\bas an ai (?:language )?model\b",
    r"\bi(?:'|’)?m unable to (?:help|assist|rewrite|process)\b", r"\bthis content (?:violates|may violate)\b",
    r"\bunable to process (?:your|this) (?:request|text)\b",
)
_REFUSAL = re.compile("|".join(REFUSAL_PATTERNS), re.I)
#: Truncation: the output stops mid-sentence (no closing punctuation) while the input
#: ends a sentence, and it keeps under ``max_ratio`` of the input's words.
TRUNCATION_RULE = {"max_ratio": 0.6, "sentence_end": ".!?\"'”’)]…"}
#: Status codes veribench's humanizer adapters report for failed calls -> access failure codes.
ACCESS_CODES = ("site_down", "paywall", "captcha", "no_output", "tos_block", "auth", "no_credits", "rate_limited",
                "timeout")


def _norm(s: str) -> str:
    return " ".join(js_trim(s).split())


def classify_output(input_text: str, output_text: str | None, failure: str | None = None) -> tuple[str, str | None]:
    """(status, failure_reason_code) for one humanizer attempt.

    ``status`` is ``complete``, ``flagged`` (identical_to_input, refusal_in_output,
    truncated_output) or ``failed`` (an access failure: the given ``failure`` code, or
    ``no_output`` when the output is empty).
    """
    if failure:
        return "failed", failure
    if output_text is None or not js_trim(output_text):
        return "failed", "no_output"
    if _norm(output_text) == _norm(input_text):
        return "flagged", "identical_to_input"
    if _REFUSAL.search(output_text[:300]):
        return "flagged", "refusal_in_output"
    out_s, in_s = js_trim(output_text), js_trim(input_text)
    ends = TRUNCATION_RULE["sentence_end"]
    in_w = js_word_count(input_text)
    if (in_w and js_word_count(output_text) / in_w < TRUNCATION_RULE["max_ratio"]
            and in_s[-1:] in ends and out_s[-1:] not in ends):
        return "flagged", "truncated_output"
    return "complete", None
