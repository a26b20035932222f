"""The reasons given with null values, in one place (``docs/labels.md`` lists them)."""

from __future__ import annotations

NO_RULE = "no decision rule"
NO_HUMAN = "no human texts"
NO_AI = "no AI texts"
NO_SPLIT_FIT = "threshold not fitted: the protocol has no calibration split"
IN_SAMPLE = "in-sample oracle operating point"
FROM_CALIBRATION = "calibration split"
#: Why a text is excluded for a detector (one reason per language, counted per detector).
OUTSIDE_LANGUAGES = "language {language} is outside the detector's declared languages"
#: The exclusion reason of a text outside the declared languages that has no valid score: the
#: language reason (it is out of scope whatever its scoring) and its own scoring status
#: (``unsupported``, ``not scored`` ...), so one counted reason names both.
OUTSIDE_WITH_STATUS = "{reason} (scoring status: {status})"
#: Why a per-length rule's single ``threshold`` is null (its thresholds are in ``per_length``).
PER_LENGTH = "one threshold per length bin ([thresholds] per_length): see per_length"
#: Why a detector without declared languages has no out-of-scope count (report site).
NONE_OUT_OF_SCOPE = "{why}: no text is excluded for its language"
NO_COMPARISONS = "the protocol declares no [comparisons] and no [[gaps]]"

#: Count keys whose null value takes the reason of the rate they count.
COUNT_OF = {"false_positives": "fpr", "detections": "catch_rate", "edited_flagged": "edited_rate",
            "mixed_flagged": "mixed_rate"}


def reason_keys(key: str) -> tuple[str, ...]:
    """The keys, beside ``key`` in the same row or block, that may hold the reason why the
    value at ``key`` is null, most specific first: ``<key>_reason``; for an interval
    (``<name>_ci95`` or ``ci95``) the reason of its estimate (``<name>_reason``); for a count
    the reason of its rate (:data:`COUNT_OF`); last the row's or block's own ``reason``.

    The one reading of "where is the reason" for every output (terminal, Markdown, HTML,
    report site); a new reason field named ``<key>_reason`` is found with no change here.
    """
    out = [f"{key}_reason"]
    if key.endswith("ci95"):
        out.append(key[: -len("ci95")] + "reason")
    if key in COUNT_OF:
        out.append(COUNT_OF[key] + "_reason")
    if "reason" not in out:
        out.append("reason")
    return tuple(out)


def null_reason(block: object, key: str) -> str | None:
    """The first reason :func:`reason_keys` finds for ``block[key]`` (a dict; anything else:
    None). A non-empty value, as text; None when the block holds no reason."""
    if not isinstance(block, dict):
        return None
    for k in reason_keys(key):
        if block.get(k):
            return str(block[k])
    return None


def outside_language(reason: object) -> str | None:
    """The language code of an exclusion reason made from :data:`OUTSIDE_LANGUAGES` or
    :data:`OUTSIDE_WITH_STATUS` (``"language de is outside ..."`` -> ``"de"``), else ``None``: the one reading of the
    template, for outputs that count out-of-scope texts per language."""
    head, _, tail = OUTSIDE_LANGUAGES.partition("{language}")
    text = str(reason)
    pos = text.find(tail, len(head) + 1)
    if not text.startswith(head) or pos < 0:
        return None
    rest = text[pos + len(tail):]
    status_head = OUTSIDE_WITH_STATUS.partition("{status}")[0].partition("{reason}")[2]
    return text[len(head):pos] if not rest or rest.startswith(status_head) else None


def out_of_scope_reason(reason: str, status: str) -> str:
    """The one exclusion reason of a text whose language is outside a detector's declared
    languages, given its language's ``reason`` (:data:`OUTSIDE_LANGUAGES`) and its scoring
    ``status``: ``reason`` when it was scored ok, else :data:`OUTSIDE_WITH_STATUS` with the
    status kept (``"language ru is outside the detector's declared languages (scoring status:
    unsupported)"``). :func:`outside_language` reads the language back from either."""
    return reason if status == "ok" else OUTSIDE_WITH_STATUS.format(reason=reason, status=status)
