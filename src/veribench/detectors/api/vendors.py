"""The seven commercial detector adapters: vendor facts as data, plus request/response code.

Sources: ``shared/reference/vendor-apis.md`` (gathered 2026-11 from the vendors' public
docs and public client code), the vendors' API pages named in each ``source``, and
the cases ``c14``/``c15``. Everything marked *(unconfirmed)* comes from client code,
conflicting docs or inference; ``docs/vendors.md`` lists the same items.

Normalisation to P(AI) in [0, 1] (higher = more likely AI), one rule per vendor:

========== ============================== ==========================================
vendor     native score                   P(AI)
========== ============================== ==========================================
gptzero    class_probabilities (0-1)      ``ai`` (p_ai_rule=ai, default) or
                                          ``ai + mixed`` (p_ai_rule=ai_plus_mixed);
                                          deprecated ``completely_generated_prob``
                                          is read as ``ai`` when class_probabilities
                                          is absent (rule ``ai`` only)
originality v3 results.ai.confidence.AI (0-1) as is; v1 ``score.ai`` as is
copyleaks  summary.ai (0-1)               as is
winston    score, 0-100 HUMAN score       1 - score/100
zerogpt    data.fakePercentage 0-100 AI   fakePercentage/100; when absent,
           (data.isHuman 0-100 human)     1 - isHuman/100
sapling    score (0-1, AI)                as is
pangram    fraction_ai (0-1)              ``fraction_ai`` (p_ai_rule=ai, default) or
                                          ``fraction_ai + fraction_ai_assisted``
========== ============================== ==========================================
"""

from __future__ import annotations

import math
import os
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from veribench.detectors.api.base import ApiDetector, VendorInfo, as_float, dig, in_range, want_bool, word_count
from veribench.detectors.api.http import CREDIT_WORDS, ConfigError, VendorError, VendorHTTP, check_base_url
from veribench.detectors.api.journal import JournalMixin
from veribench.metrics.segmentation import locate_sentences
from veribench.records import ScoreResult

# -- GPTZero -------------------------------------------------------------------------

GPTZERO = VendorInfo(
    name="gptzero", base_url="https://api.gptzero.me", endpoint="POST /v2/predict/text",
    scale="p_ai", direction="higher_ai",
    rule="documents[0].class_probabilities.ai (or ai+mixed); completely_generated_prob when absent",
    min_chars=250, max_chars=None, rate_per_minute=60, max_concurrency=2,
    source="https://gptzero.stoplight.io/docs/gptzero-api (predict/text); vendor-apis.md; case c15",
    unconfirmed=("minimum 250 characters is the dashboard's limit, not documented for the API",
                 "documents longer than 50,000 characters are truncated by the vendor (case c15); "
                 "veribench cuts them itself and records truncated=true"),
)
GPTZERO_MAX_DOC = 50_000
GPTZERO_RULES = {"ai": ("ai",), "ai_plus_mixed": ("ai", "mixed")}


class SentenceSpans:
    """Keeps a vendor's sentence-level scores: ``parse`` puts the sentences it read in
    ``detail["sentences"]`` as ``{text, ai_probability, raw}``; here they become character
    spans of the submitted text (``veribench.metrics.segmentation.locate_sentences``),
    ``[{start, end, ai_probability, raw}]``; sentences not found are counted in
    ``detail["sentences_unlocated"]``."""

    def score_one(self, text: str) -> ScoreResult:
        r = super().score_one(text)  # type: ignore[misc]
        items = r.detail.get("sentences") if r.status == "ok" else None
        if items:

            spans, missing = locate_sentences(self.submitted_text(text), items)  # type: ignore[attr-defined]
            r.detail["sentences"] = spans
            if missing:
                r.detail["sentences_unlocated"] = missing
        return r


def _sentences(items: Any, text_key: str, score_key: str, to_p) -> list[dict[str, Any]] | None:
    """Sentence items of a response: ``{text, ai_probability, raw}`` (``None`` when absent)."""
    if not isinstance(items, list):
        return None
    out = []
    for it in items:
        if not isinstance(it, dict):
            continue
        raw = it.get(score_key)
        try:
            raw = float(raw) if raw is not None else None
        except (TypeError, ValueError):
            raw = None
        p = to_p(raw) if raw is not None and math.isfinite(raw) else None
        out.append({"text": it.get(text_key), "ai_probability": p if p is not None and 0.0 <= p <= 1.0 else None,
                    "raw": raw if raw is not None and math.isfinite(raw) else None})
    return out or None


class GPTZero(SentenceSpans, ApiDetector):
    """GPTZero ``/v2/predict/text``. P(AI) by ``p_ai_rule``: ``ai`` (default) or ``ai_plus_mixed``."""

    info = GPTZERO
    vendor_settings = {"model_version": None, "p_ai_rule": "ai", "multilingual": None}

    def validate_options(self) -> None:
        if self.options["p_ai_rule"] not in GPTZERO_RULES:
            raise ConfigError(f"gptzero: p_ai_rule must be one of {sorted(GPTZERO_RULES)}")
        if self.options["multilingual"] is not None:
            want_bool("multilingual", self.options["multilingual"])

    def submitted_text(self, text: str) -> str:
        return text[:GPTZERO_MAX_DOC]

    def request_for(self, text):
        body: dict[str, Any] = {"document": self.submitted_text(text)}
        if self.options["model_version"] is not None:
            body["modelVersion"] = str(self.options["model_version"])
        if self.options["multilingual"] is not None:
            body["multilingual"] = self.options["multilingual"]
        return "POST", "/v2/predict/text", body, {}

    def auth(self, headers, body):
        headers["x-api-key"] = self.key()

    def parse(self, body):
        doc = dig(body, "documents", 0)
        if not isinstance(doc, dict):
            raise VendorError("bad_response", "no documents[0] in the response")
        rule = self.options["p_ai_rule"]
        cp = doc.get("class_probabilities")
        if isinstance(cp, dict):
            p = sum(as_float(cp.get(k), f"class_probabilities.{k}") for k in GPTZERO_RULES[rule])
            src = "class_probabilities." + "+".join(GPTZERO_RULES[rule])
        elif rule == "ai" and "completely_generated_prob" in doc:
            p = as_float(doc["completely_generated_prob"], "completely_generated_prob")
            src = "completely_generated_prob"
        else:
            raise VendorError("bad_response", f"response lacks class_probabilities needed by p_ai_rule={rule}")
        p = in_range(round(p, 12), 0.0, 1.0, "P(AI)")
        verdict = doc.get("document_classification") or doc.get("predicted_class")
        detail: dict[str, Any] = {"p_ai_source": src, "p_ai_rule": rule}
        sent = _sentences(doc.get("sentences"), "sentence", "generated_prob", lambda x: x)
        if sent:
            detail["sentences"] = sent
        return ScoreResult(status="ok", raw=p, scale="p_ai", direction="higher_ai", ai_probability=p,
                           verdict=verdict, vendor_version=_s(body.get("version") or doc.get("version")),
                           detail=detail)


# -- Originality.ai ------------------------------------------------------------------

ORIGINALITY = VendorInfo(
    name="originality", base_url="https://api.originality.ai", endpoint="POST /api/v3/scan (v1: /api/v1/scan/ai)",
    scale="p_ai", direction="higher_ai", rule="v3 results.ai.confidence.AI; v1 score.ai",
    min_chars=None, max_chars=None, rate_per_minute=60, max_concurrency=2,
    source="https://docs.originality.ai/api-v1-0-reference/scan/ai-scan ; vendor-apis.md; case c15",
    unconfirmed=("minimum about 50 words", "v3 field names results.ai.confidence.AI / results.ai.aiModel",
                 "verdict is derived with the 0.5 boundary the app shows, not returned by the API"),
)
ORIGINALITY_MIN_WORDS = 50
ORIGINALITY_VERDICT_BOUNDARY = 0.5


class Originality(ApiDetector):
    """Originality.ai scan, ``api_version`` ``v3`` (default) or legacy ``v1``."""

    info = ORIGINALITY
    vendor_settings = {"api_version": "v3", "model_version": None, "min_words": ORIGINALITY_MIN_WORDS}

    def validate_options(self) -> None:
        if self.options["api_version"] not in ("v3", "v1"):
            raise ConfigError("originality: api_version must be 'v3' or 'v1'")

    def preflight(self, text):
        r = super().preflight(text)
        if r is None and word_count(text) < int(self.options["min_words"] or 0):
            return ScoreResult.failed("too_short", f"{word_count(text)} words < originality minimum "
                                      f"{self.options['min_words']} words; no request sent", words=word_count(text),
                                      sent=False)
        return r

    def request_for(self, text):
        # storeScan is a JSON boolean false (case c15: a string "false" is truthy).
        body: dict[str, Any] = {"content": text, "storeScan": False}
        if self.options["model_version"] is not None:
            body["aiModelVersion"] = str(self.options["model_version"])
        path = "/api/v3/scan" if self.options["api_version"] == "v3" else "/api/v1/scan/ai"
        return "POST", path, body, {}

    def auth(self, headers, body):
        headers["X-OAI-API-KEY"] = self.key()

    def parse(self, body):
        if self.options["api_version"] == "v3":
            p = as_float(dig(body, "results", "ai", "confidence", "AI"), "results.ai.confidence.AI")
            version = dig(body, "results", "ai", "aiModel")
        else:
            p = as_float(dig(body, "score", "ai"), "score.ai")
            version = body.get("aiModelVersion") if isinstance(body, dict) else None
        p = in_range(p, 0.0, 1.0, "AI confidence")
        verdict = "AI" if p >= ORIGINALITY_VERDICT_BOUNDARY else "Original"
        return ScoreResult(status="ok", raw=p, scale="p_ai", direction="higher_ai", ai_probability=p,
                           verdict=verdict, vendor_version=_s(version),
                           detail={"verdict_source": f"derived: AI when confidence >= {ORIGINALITY_VERDICT_BOUNDARY}"})


# -- Copyleaks -----------------------------------------------------------------------

COPYLEAKS = VendorInfo(
    name="copyleaks", base_url="https://api.copyleaks.com", endpoint="POST /v2/writer-detector/{scanId}/check",
    scale="p_ai", direction="higher_ai", rule="summary.ai as is",
    min_chars=255, max_chars=25_000, rate_per_minute=60, max_concurrency=2,
    source="https://docs.copyleaks.com/reference/actions/writer-detector/check/ ; login "
           "https://docs.copyleaks.com/reference/actions/account/login/ ; vendor-apis.md",
    unconfirmed=("summary.ai is described both as a share of the text and as a confidence",
                 "sensitivity 2 is the default", "maximum 25,000 characters",
                 "login response field names access_token / .expires"),
)
COPYLEAKS_ID_URL = "https://id.copyleaks.com"
COPYLEAKS_TOKEN_HOURS = 48
COPYLEAKS_EMAIL_VAR = "VERIBENCH_COPYLEAKS_EMAIL"


class Copyleaks(ApiDetector):
    """Copyleaks AI detector; logs in with ``VERIBENCH_COPYLEAKS_EMAIL`` + key, refreshes the token."""

    info = COPYLEAKS
    vendor_settings = {"sensitivity": 2, "sandbox": False}

    def __init__(self, id_base_url: str | None = None, **settings: Any):
        super().__init__(**settings)
        # A proxy or fake server given as base_url serves the login too unless id_base_url says otherwise.
        if id_base_url is None:
            id_base_url = settings["base_url"] if settings.get("base_url") else COPYLEAKS_ID_URL
        self.id_http = VendorHTTP("copyleaks-login", check_base_url(id_base_url, "id_base_url"),
                                  timeout=self.ops["timeout"], max_attempts=self.ops["max_attempts"],
                                  backoff=self.ops["backoff"], backoff_max=self.ops["backoff_max"],
                                  max_concurrency=1, secrets=lambda: self._secrets)
        self._token: str | None = None
        self._expires = 0.0
        self._tlock = threading.Lock()
        self.logins = 0

    def validate_options(self) -> None:
        sens = self.options["sensitivity"]
        if isinstance(sens, bool) or sens not in (1, 2, 3):
            raise ConfigError("copyleaks: sensitivity must be 1, 2 or 3")
        want_bool("sandbox", self.options["sandbox"])

    def token(self, force: bool = False) -> str:
        with self._tlock:
            if force or self._token is None or time.time() > self._expires - 600:
                email = os.environ.get(COPYLEAKS_EMAIL_VAR, "").strip()
                if not email:
                    raise VendorError("auth", f"no account email: set the environment variable {COPYLEAKS_EMAIL_VAR}")
                body = self.id_http.request("POST", "/v3/account/login/api", json_body={"email": email, "key": self.key()})
                tok = body.get("access_token") if isinstance(body, dict) else None
                if not tok:
                    raise VendorError("bad_response", "login response without access_token")
                self._secrets.append(tok)
                self._token = tok
                self._expires = _parse_expiry(body.get(".expires")) or time.time() + COPYLEAKS_TOKEN_HOURS * 3600
                self.logins += 1
            return self._token

    def request_for(self, text):
        body = {"text": text, "sandbox": self.options["sandbox"], "sensitivity": self.options["sensitivity"]}
        return "POST", "/v2/writer-detector/{scanId}/check", body, {}

    def call(self, text, info):
        _, _, body, _ = self.request_for(text)
        scan_id = "vb" + uuid.uuid4().hex[:20]
        for attempt in (1, 2):
            headers = {"Authorization": f"Bearer {self.token(force=attempt == 2)}"}
            try:
                return self.http.request("POST", f"/v2/writer-detector/{scan_id}/check", json_body=body,
                                         headers=headers, info=info)
            except VendorError as e:  # an expired token: log in again once
                if e.status == "auth" and e.http_status == 401 and attempt == 1:
                    continue
                raise
        raise AssertionError("unreachable")

    def parse(self, body):
        p = in_range(as_float(dig(body, "summary", "ai"), "summary.ai"), 0.0, 1.0, "summary.ai")
        return ScoreResult(status="ok", raw=p, scale="p_ai", direction="higher_ai", ai_probability=p, verdict=None,
                           vendor_version=_s(dig(body, "modelVersion")),
                           detail={"human": dig(body, "summary", "human")})


def _parse_expiry(v: Any) -> float | None:
    if not isinstance(v, str):
        return None
    try:
        dt = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


# -- Winston AI ----------------------------------------------------------------------

WINSTON = VendorInfo(
    name="winston", base_url="https://api.gowinston.ai", endpoint="POST /v2/ai-content-detection",
    scale="human_0_100", direction="higher_human", rule="P(AI) = 1 - score/100 (score is a 0-100 HUMAN score)",
    min_chars=300, max_chars=100_000, rate_per_minute=60, max_concurrency=2,
    source="https://docs.gowinston.ai/api-reference/predict/post ; vendor-apis.md; cases c14, c15",
    unconfirmed=("maximum length: 100,000 characters per the API reference's text field, 300,000 in other docs; "
                 "veribench refuses above 100,000 unless max_chars is set",
                 "without a language setting the field is omitted and the vendor's default applies"),
)
#: Winston's bands on its human score (lower bound inclusive), as the app shows them.
WINSTON_BANDS = [(0, 20, "AI"), (20, 40, "likely AI"), (40, 60, "uncertain"), (60, 80, "mostly human"),
                 (80, 100.000001, "human")]


def winston_band(score: float) -> str:
    """Winston's verdict band for a 0-100 human score."""
    for lo, hi, name in WINSTON_BANDS:
        if lo <= score < hi:
            return name
    raise VendorError("bad_response", f"score {score} outside 0-100")


class Winston(SentenceSpans, ApiDetector):
    """Winston AI; ``score`` is a HUMAN score on 0-100, so P(AI) = 1 - score/100 (25 -> 0.75).

    ``language`` (2-letter code) is sent only when set: set it to the corpus's language
    (``--set language=de`` for German items); it is never hard-coded.
    """

    info = WINSTON
    vendor_settings = {"version": None, "language": None}

    def validate_options(self) -> None:
        lang = self.options["language"]
        if lang is not None and (not isinstance(lang, str) or len(lang) != 2 or not lang.isalpha()):
            raise ConfigError("winston: language must be a 2-letter code such as 'en' or 'de'")

    def request_for(self, text):
        body: dict[str, Any] = {"text": text, "sentences": False}
        if self.options["version"] is not None:
            body["version"] = str(self.options["version"])
        if self.options["language"] is not None:
            body["language"] = self.options["language"].lower()
        return "POST", "/v2/ai-content-detection", body, {}

    def auth(self, headers, body):
        headers["Authorization"] = f"Bearer {self.key()}"

    def parse(self, body):
        s = in_range(as_float(dig(body, "score"), "score"), 0.0, 100.0, "score")
        p = round(1.0 - s / 100.0, 12)
        detail: dict[str, Any] = {"verdict_source": "Winston bands on the human score"}
        sent = _sentences(dig(body, "sentences"), "text", "score", lambda x: 1.0 - x / 100.0)
        if sent:
            detail["sentences"] = sent
        return ScoreResult(status="ok", raw=s, scale="human_0_100", direction="higher_human", ai_probability=p,
                           verdict=winston_band(s), vendor_version=_s(dig(body, "version")),
                           detail=detail)


# -- ZeroGPT -------------------------------------------------------------------------

ZEROGPT = VendorInfo(
    name="zerogpt", base_url="https://api.zerogpt.com", endpoint="POST /api/detect/detectText",
    scale="ai_percent_0_100", direction="higher_ai",
    rule="fakePercentage/100; when absent 1 - isHuman/100",
    min_chars=None, max_chars=None, rate_per_minute=30, max_concurrency=1,
    source="https://api.zerogpt.com/docs ; vendor-apis.md; case c15",
    unconfirmed=("HTTP 200 can carry code != 200 in the body (treated as an error)",
                 "isHuman is a 0-100 human percentage (case c15), not a boolean"),
)


class ZeroGPT(ApiDetector):
    """ZeroGPT. Numbers may arrive as strings; an HTTP 200 body with ``code != 200`` is an error."""

    info = ZEROGPT
    vendor_settings: dict[str, Any] = {}

    def request_for(self, text):
        return "POST", "/api/detect/detectText", {"input_text": text}, {}

    def auth(self, headers, body):
        headers["ApiKey"] = self.key()

    def check_body(self, body):
        if not isinstance(body, dict):
            raise VendorError("bad_response", "response is not a JSON object")
        code = body.get("code")
        if code is None:
            return
        try:
            ok = int(code) == 200
        except (TypeError, ValueError):
            ok = False
        if not ok:
            msg = str(body.get("message") or "")[:200]
            st = "no_credits" if CREDIT_WORDS.search(msg) else ("auth" if str(code) in ("401", "403") else "refused")
            raise VendorError(st, f"HTTP 200 but body code {code}: {msg}", http_status=200, body=body)

    def parse(self, body):
        data = dig(body, "data")
        if not isinstance(data, dict):
            raise VendorError("bad_response", "no data object in the response")
        if data.get("fakePercentage") is not None:
            raw = in_range(as_float(data["fakePercentage"], "data.fakePercentage"), 0.0, 100.0, "fakePercentage")
            p, src = raw / 100.0, "fakePercentage"
            scale, direction = "ai_percent_0_100", "higher_ai"
        else:
            raw = in_range(as_float(data.get("isHuman"), "data.isHuman"), 0.0, 100.0, "isHuman")
            p, src = 1.0 - raw / 100.0, "isHuman"
            scale, direction = "human_percent_0_100", "higher_human"
        return ScoreResult(status="ok", raw=raw, scale=scale, direction=direction, ai_probability=round(p, 12),
                           verdict=_s(data.get("feedback")), vendor_version=_s(data.get("version")),
                           detail={"p_ai_source": src})


# -- Sapling -------------------------------------------------------------------------

SAPLING = VendorInfo(
    name="sapling", base_url="https://api.sapling.ai", endpoint="POST /api/v1/aidetect",
    scale="p_ai", direction="higher_ai", rule="score as is",
    min_chars=None, max_chars=50_000, rate_per_minute=60, max_concurrency=2,
    source="https://sapling.ai/docs/api/detector ; vendor-apis.md; case c15",
    unconfirmed=("no official decision boundary; no verdict is recorded",),
)


class Sapling(SentenceSpans, ApiDetector):
    """Sapling AI detector; the key travels in the JSON body (``key``), never stored."""

    info = SAPLING
    vendor_settings: dict[str, Any] = {}

    def request_for(self, text):
        return "POST", "/api/v1/aidetect", {"text": text}, {}

    def auth(self, headers, body):
        body["key"] = self.key()

    def parse(self, body):
        p = in_range(as_float(dig(body, "score"), "score"), 0.0, 1.0, "score")
        sent = _sentences(dig(body, "sentence_scores"), "sentence", "score", lambda x: x)
        return ScoreResult(status="ok", raw=p, scale="p_ai", direction="higher_ai", ai_probability=p, verdict=None,
                           vendor_version=_s(dig(body, "version")), detail={"sentences": sent} if sent else {})


# -- Pangram -------------------------------------------------------------------------

PANGRAM = VendorInfo(
    name="pangram", base_url="https://text.external-api.pangram.com", endpoint="POST /task; GET /task/{task_id}",
    scale="fraction_ai", direction="higher_ai", rule="fraction_ai (or fraction_ai + fraction_ai_assisted)",
    min_chars=None, max_chars=None, rate_per_minute=60, max_concurrency=2,
    source="https://pangram.readthedocs.io (task API); vendor-apis.md",
    unconfirmed=("result fields may sit at the top level or under 'result' of the poll response",),
)
PANGRAM_RULES = {"ai": ("fraction_ai",), "ai_plus_assisted": ("fraction_ai", "fraction_ai_assisted")}


class Pangram(JournalMixin, ApiDetector):
    """Pangram: asynchronous submit (``POST /task``) then poll (``GET /task/{task_id}``)."""

    info = PANGRAM
    vendor_settings = {"p_ai_rule": "ai"}

    def validate_options(self) -> None:
        if self.options["p_ai_rule"] not in PANGRAM_RULES:
            raise ConfigError(f"pangram: p_ai_rule must be one of {sorted(PANGRAM_RULES)}")

    def request_for(self, text):
        return "POST", "/task", {"text": text}, {}

    def call(self, text, info):
        headers = {"x-api-key": self.key()}

        def submit():
            sub = self.http.request("POST", "/task", json_body={"text": text}, headers=headers, info=info)
            task_id = sub.get("task_id") if isinstance(sub, dict) else None
            if not task_id:
                raise VendorError("bad_response", "submit response without task_id", body=sub)
            return str(task_id)

        return self.submit_and_poll(text, info, submit, lambda task_id: poll(
            lambda: self.http.request("GET", f"/task/{task_id}", headers=headers, info=info),
            lambda b: b.get("stage") == "STAGE_SUCCESS", lambda b: b.get("stage") == "STAGE_FAILED",
            self.ops, task_id))

    def parse(self, body):
        res = body.get("result") if isinstance(body.get("result"), dict) else body
        p = sum(as_float(res.get(k), k) for k in PANGRAM_RULES[self.options["p_ai_rule"]])
        p = in_range(round(p, 12), 0.0, 1.0, "P(AI)")
        return ScoreResult(status="ok", raw=p, scale="fraction_ai", direction="higher_ai", ai_probability=p,
                           verdict=_s(res.get("prediction_short")), vendor_version=_s(res.get("version")),
                           detail={"task_id": body.get("task_id"), "fraction_human": res.get("fraction_human"),
                                   "fraction_ai_assisted": res.get("fraction_ai_assisted")})


def poll(get, done, failed, ops: dict[str, Any], task_id: Any) -> Any:
    """Poll ``get()`` every ``ops['poll_interval']`` s until ``done(body)``; shared by async vendors.

    Raises:
        VendorError: ``site_down`` when ``failed(body)`` (the vendor reports the task failed:
            no output was produced), ``timeout`` after ``ops['poll_timeout']`` s,
            ``bad_response`` for a non-object body.
    """
    deadline = time.monotonic() + float(ops["poll_timeout"])
    interval = float(ops["poll_interval"])
    polls = 0
    while True:
        body = get()
        polls += 1
        if not isinstance(body, dict):
            raise VendorError("bad_response", "poll response is not a JSON object")
        if done(body):
            return body
        if failed(body):
            err = VendorError("site_down", f"vendor reports task {task_id} failed (no output)", body=body)
            err.task_failed = True  # type: ignore[attr-defined]
            raise err
        if time.monotonic() + interval > deadline:
            raise VendorError("timeout", f"task {task_id} not finished after {ops['poll_timeout']} s of polling",
                              body={"task_id": task_id, "polls": polls})
        time.sleep(interval)


def _s(v: Any) -> str | None:
    return None if v is None else str(v)


ADAPTERS = {"gptzero": GPTZero, "originality": Originality, "copyleaks": Copyleaks, "winston": Winston,
            "zerogpt": ZeroGPT, "sapling": Sapling, "pangram": Pangram}
