"""Vendor humanizer adapters: Undetectable.ai, StealthGPT, WriteHuman, HIX Bypass, Humbot.

Facts from ``shared/reference/vendor-apis.md`` (gathered 2026-11 from public docs and
public client code); items marked *(unconfirmed)* are listed in each class's
``unconfirmed`` and in ``docs/vendors.md``. Defaults follow HumanizerBench's policy of
the vendor's "most undetectable" setting where one is documented.
"""

from __future__ import annotations

from typing import Any

from veribench.detectors.api.base import as_float, dig, want_bool
from veribench.detectors.api.http import CREDIT_WORDS, VendorError
from veribench.detectors.api.journal import JournalMixin
from veribench.detectors.api.vendors import poll
from veribench.humanizers.base import ApiHumanizer


def _str(v: Any) -> str | None:
    return None if v is None else str(v)


class Undetectable(JournalMixin, ApiHumanizer):
    """Undetectable.ai: ``POST /submit`` then poll ``POST /document {id}`` until ``status == "done"``."""

    name = "undetectable"
    default_base_url = "https://humanize.undetectable.ai"
    vendor_settings = {"readability": "University", "purpose": "General Writing", "strength": "More Human",
                       "model": "v11"}
    min_chars = 50
    source = "https://undetectable.ai/develop/humanization ; vendor-apis.md"
    unconfirmed = ("model 'v11' as the most undetectable model", "a failed document reports status 'failed'/'error'",
                   "'400 Payment Required' is classified as no_credits by its wording")

    def request_for(self, text):
        return "POST", "/submit", {"content": text, **{k: self.options[k] for k in
                                                        ("readability", "purpose", "strength", "model")}}

    def call(self, text, info):
        headers = {"apikey": self.key()}
        _, path, body = self.request_for(text)

        def submit():
            sub = self.http.request("POST", path, json_body=body, headers=headers, info=info)
            doc_id = sub.get("id") if isinstance(sub, dict) else None
            if not doc_id:
                raise VendorError("bad_response", "submit response without id", body=sub)
            return str(doc_id)

        done = self.submit_and_poll(text, info, submit, lambda doc_id: poll(
            lambda: self.http.request("POST", "/document", json_body={"id": doc_id}, headers=headers, info=info),
            lambda b: b.get("status") == "done",
            lambda b: str(b.get("status", "")).lower() in ("failed", "error"), self.ops, doc_id))
        return done.get("output"), _str(done.get("model") or self.options["model"]), done


class StealthGPT(ApiHumanizer):
    """StealthGPT synchronous ``POST /api/stealthify`` (``mode: "High"`` by default)."""

    name = "stealthgpt"
    default_base_url = "https://stealthgpt.ai"
    vendor_settings = {"rephrase": True, "tone": "Standard", "mode": "High", "detector": "gptzero"}
    source = "https://stealthgpt.ai/stealthapi ; vendor-apis.md"
    unconfirmed = ("tone 'Standard' and detector 'gptzero' defaults",)

    def validate_options(self) -> None:
        want_bool("rephrase", self.options["rephrase"])

    def request_for(self, text):
        # JSON types kept: rephrase is a boolean, never the string "true".
        return "POST", "/api/stealthify", {"prompt": text, "rephrase": self.options["rephrase"],
                                           "tone": self.options["tone"], "mode": self.options["mode"],
                                           "detector": self.options["detector"]}

    def call(self, text, info):
        m, path, body = self.request_for(text)
        out = self.http.request(m, path, json_body=body, headers={"api-token": self.key()}, info=info)
        if not isinstance(out, dict):
            raise VendorError("bad_response", "response is not a JSON object")
        return out.get("result"), _str(out.get("version") or self.options["mode"]), out


class WriteHuman(ApiHumanizer):
    """WriteHuman ``POST /v1/humanize`` (bearer token); output is the first of ``results[]``."""

    name = "writehuman"
    default_base_url = "https://api.writehuman.ai"
    vendor_settings: dict[str, Any] = {}
    source = "https://writehuman.ai/api ; vendor-apis.md"
    unconfirmed = ("items of results[] are strings or objects with a 'text' field",)

    def request_for(self, text):
        return "POST", "/v1/humanize", {"text": text}

    def call(self, text, info):
        m, path, body = self.request_for(text)
        out = self.http.request(m, path, json_body=body, headers={"Authorization": f"Bearer {self.key()}"}, info=info)
        res = dig(out, "results", 0)
        if isinstance(res, dict):
            res = res.get("text") or res.get("output")
        return res, _str(dig(out, "version") or dig(out, "model")), out


class _ErrCodeAPI(JournalMixin, ApiHumanizer):
    """HIX Bypass and Humbot: errors come as HTTP 200 with ``err_code != 0``; submit then poll."""

    submit_path = ""
    poll_path = ""

    def check(self, body: Any) -> None:
        if not isinstance(body, dict):
            raise VendorError("bad_response", "response is not a JSON object")
        code = body.get("err_code", 0)
        try:
            code = int(as_float(code, "err_code"))
        except VendorError:
            raise VendorError("bad_response", "err_code is not a number", body=body) from None
        if code != 0:
            msg = str(body.get("err_msg") or body.get("message") or "")[:200]
            st = "no_credits" if CREDIT_WORDS.search(msg) else "refused"
            raise VendorError(st, f"HTTP 200 but err_code {code}: {msg}", http_status=200, body=body)

    def submit_body(self, text: str) -> dict[str, Any]:
        raise NotImplementedError

    def request_for(self, text):
        return "POST", self.submit_path, self.submit_body(text)

    def call(self, text, info):
        headers = {"api-key": self.key()}

        def submit():
            sub = self.http.request("POST", self.submit_path, json_body=self.submit_body(text), headers=headers,
                                    info=info, check=self.check)
            task_id = dig(sub, "data", "task_id")
            if not task_id:
                raise VendorError("bad_response", "submit response without data.task_id", body=sub)
            return str(task_id)

        done = self.submit_and_poll(text, info, submit, lambda task_id: poll(
            lambda: self.http.request("GET", self.poll_path, params={"task_id": task_id}, headers=headers,
                                      info=info, check=self.check),
            lambda b: bool(dig(b, "data", "output")),
            lambda b: str(dig(b, "data", "task_status") or "").lower() in ("failed", "error"),
            self.ops, task_id))
        return dig(done, "data", "output"), _str(dig(done, "data", "mode") or dig(done, "data", "model_type")), done


class HIX(_ErrCodeAPI):
    """HIX Bypass: ``POST /api/hixbypass/v1/submit {input, mode}``, poll ``GET /api/hixbypass/v1/obtain?task_id=``."""

    name = "hix"
    default_base_url = "https://bypass.hix.ai"
    vendor_settings = {"mode": "Aggressive"}
    submit_path = "/api/hixbypass/v1/submit"
    poll_path = "/api/hixbypass/v1/obtain"
    source = "https://bypass.hix.ai/api ; vendor-apis.md"
    unconfirmed = ("mode 'Aggressive' as the most undetectable mode", "poll response fields data.output / "
                   "data.task_status", "obtain lives beside submit under /api/hixbypass/v1/")

    def submit_body(self, text):
        return {"input": text, "mode": self.options["mode"]}


class Humbot(_ErrCodeAPI):
    """Humbot: ``POST /api/humbot/v1/create {input, model_type}``, poll ``GET /api/humbot/v1/retrieve?task_id=``."""

    name = "humbot"
    default_base_url = "https://humbot.ai"
    vendor_settings = {"model_type": "Advanced"}
    submit_path = "/api/humbot/v1/create"
    poll_path = "/api/humbot/v1/retrieve"
    source = "https://humbot.ai/api ; vendor-apis.md"
    unconfirmed = ("model_type 'Advanced' as the most undetectable setting", "err_code convention shared with HIX",
                   "poll response fields data.output / data.task_status")

    def submit_body(self, text):
        return {"input": text, "model_type": self.options["model_type"]}


ADAPTERS = {c.name: c for c in (Undetectable, StealthGPT, WriteHuman, HIX, Humbot)}
