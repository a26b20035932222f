"""Fake vendor servers: one real HTTP server on 127.0.0.1 (stdlib ``http.server`` in a thread)
that speaks every adapter's documented request and response (see docs/vendors.md).

- Each vendor's key is checked on every call; a wrong key gets 401 with the received key
  echoed in the body (so tests prove the adapters redact what servers echo).
- ``script[text]`` is a list of events consumed in request order for that text:
  ``{"http": code, "body": obj}``, ``{"reset": True}`` (connection closed without a
  response), ``{"raw": "not json"}`` (a 200 with a malformed body), ``{"task_fail": True}``
  (an async task that fails), ``{"value": x}`` (the success value to report).
- Without events, a text gets a deterministic success value ``value_for(text)``.
- ``credits`` (words): when set, a call whose text has more words than remain gets the
  vendor's own "out of credits" answer.
- ``counter[(vendor, sha)]`` counts the calls that reached a vendor's scoring/humanizing
  route for a text; ``calls`` lists every request (vendor, method, path, JSON body).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

VENDOR_KEYS = {v: f"test-key-{v}" for v in (
    "gptzero", "originality", "copyleaks", "winston", "zerogpt", "sapling", "pangram",
    "undetectable", "stealthgpt", "writehuman", "hix", "humbot", "openai")}
COPYLEAKS_EMAIL = "tester@example.org"
#: Operational settings that make retries and polling fast in tests (not part of any spec).
FAST = {"backoff": 0.01, "backoff_max": 0.05, "poll_interval": 0.01, "poll_timeout": 5.0, "rate_per_minute": 0,
        "timeout": 5.0}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def value_for(text: str) -> float:
    """A deterministic P(AI) in [0, 1] with two decimals, from the text's hash."""
    return int(sha(text)[:8], 16) % 101 / 100.0


def humanized(text: str) -> str:
    return "Humanized: " + " ".join(reversed(text.split()))


class FakeVendors:
    def __init__(self, keys: dict[str, str] | None = None, script: dict[str, list] | None = None,
                 credits: int | None = None, delay: float = 0.0, polls_before_done: int = 1):
        self.keys = dict(VENDOR_KEYS, **(keys or {}))
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.credits = credits
        self.delay = delay
        self.polls_before_done = polls_before_done
        self.counter: Counter = Counter()
        self.calls: list[dict[str, Any]] = []
        self.tasks: dict[str, dict[str, Any]] = {}
        self.tokens: dict[str, int] = {}
        self.expire_tokens_after: int | None = None
        self.logins = 0
        self.lock = threading.Lock()
        self._ids = itertools.count(1)
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True
            wbufsize = 1 << 16

            def log_message(self, *a):  # quiet
                pass

            def _handle(self, method):
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                u = urlsplit(self.path)
                res = outer.dispatch(method, u.path, parse_qs(u.query), {k.lower(): v for k, v in self.headers.items()},
                                     body)
                if res == "reset":
                    self.close_connection = True
                    try:
                        self.connection.shutdown(2)
                    except OSError:
                        pass
                    return
                code, payload = res
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                if code == 429:
                    self.send_header("retry-after", "0")
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

            def do_POST(self):
                self._handle("POST")

            def do_GET(self):
                self._handle("GET")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- helpers ------------------------------------------------------------------------
    def count(self, vendor: str, text: str) -> int:
        return self.counter[(vendor, sha(text))]

    def _event(self, text: str) -> dict[str, Any] | None:
        with self.lock:
            q = self.script.get(text)
            return q.pop(0) if q else None

    def _spend(self, text: str) -> bool:
        with self.lock:
            if self.credits is None:
                return True
            w = len(text.split())
            if w > self.credits:
                return False
            self.credits -= w
            return True

    # -- routing ------------------------------------------------------------------------
    ROUTES = [
        ("POST", r"/v2/predict/text", "gptzero"),
        ("POST", r"/api/v3/scan", "originality"),
        ("POST", r"/api/v1/scan/ai", "originality"),
        ("POST", r"/v3/account/login/api", "copyleaks-login"),
        ("POST", r"/v2/writer-detector/[^/]+/check", "copyleaks"),
        ("POST", r"/v2/ai-content-detection", "winston"),
        ("POST", r"/api/detect/detectText", "zerogpt"),
        ("POST", r"/api/v1/aidetect", "sapling"),
        ("POST", r"/task", "pangram"),
        ("GET", r"/task/[^/]+", "pangram-poll"),
        ("POST", r"/submit", "undetectable"),
        ("POST", r"/document", "undetectable-poll"),
        ("POST", r"/api/stealthify", "stealthgpt"),
        ("POST", r"/v1/humanize", "writehuman"),
        ("POST", r"/api/hixbypass/v1/submit", "hix"),
        ("GET", r"/api/hixbypass/v1/obtain", "hix-poll"),
        ("POST", r"/api/humbot/v1/create", "humbot"),
        ("GET", r"/api/humbot/v1/retrieve", "humbot-poll"),
        ("POST", r"/v1/chat/completions", "openai"),
    ]

    def dispatch(self, method, path, query, headers, body):
        if self.delay:
            time.sleep(self.delay)
        for m, pat, name in self.ROUTES:  # noqa: B007 - the matched route is used after the loop
            if m == method and re.fullmatch(pat, path):
                break
        else:
            return 404, {"error": "no such route"}
        with self.lock:
            self.calls.append({"vendor": name, "method": method, "path": path, "json": body,
                               "headers": dict(headers)})
        vendor = name.split("-")[0]
        got = self._key(name, headers, body)
        if got != self.keys.get(vendor) and not (name == "openai" and got is None):  # local LLM servers: no key
            return 401, {"error": f"invalid API key {got!r}", "message": f"key {got} rejected"}
        return getattr(self, "r_" + name.replace("-", "_"))(path, query, body or {})

    def _key(self, name, h, body):
        v = name.split("-")[0]
        if name == "copyleaks-login":
            return body.get("key") if isinstance(body, dict) and body.get("email") == COPYLEAKS_EMAIL else None
        if name == "copyleaks":
            tok = h.get("authorization", "").removeprefix("Bearer ")
            with self.lock:
                if tok not in self.tokens:
                    return None
                self.tokens[tok] += 1
                if self.expire_tokens_after is not None and self.tokens[tok] > self.expire_tokens_after:
                    return None
            return self.keys["copyleaks"]
        hdr = {"gptzero": "x-api-key", "originality": "x-oai-api-key", "zerogpt": "apikey", "pangram": "x-api-key",
               "undetectable": "apikey", "stealthgpt": "api-token", "hix": "api-key", "humbot": "api-key"}
        if v in hdr:
            return h.get(hdr[v])
        if v in ("winston", "writehuman", "openai"):
            a = h.get("authorization")
            return a.removeprefix("Bearer ") if a else None
        if v == "sapling":
            return body.get("key") if isinstance(body, dict) else None
        return None

    def _scored(self, vendor, text, success, no_credits):
        """Common path: count, scripted event, credits, then the vendor's success body."""
        with self.lock:
            self.counter[(vendor, sha(text))] += 1
        ev = self._event(text)
        value = value_for(text)
        if ev is not None:
            if ev.get("reset"):
                return "reset"
            if "raw" in ev:
                return ev.get("http", 200), ev["raw"]
            if "http" in ev:
                return ev["http"], ev.get("body", {})
            if "value" in ev:
                value = ev["value"]
            if ev.get("task_fail"):
                return success(value, fail=True)
        if not self._spend(text):
            return no_credits()
        return success(value)

    # -- detectors ------------------------------------------------------------------------
    def r_gptzero(self, path, q, b):
        def ok(v, fail=False):
            mixed = round(v * 0.25, 6)
            return 200, {"version": "fake-gptzero-2026-11", "documents": [{
                "class_probabilities": {"ai": round(v - mixed, 6), "mixed": mixed, "human": round(1 - v, 6)},
                "predicted_class": "ai" if v >= 0.5 else "human",
                "document_classification": "AI_ONLY" if v >= 0.5 else "HUMAN_ONLY",
                "completely_generated_prob": round(v - mixed, 6)}]}
        return self._scored("gptzero", b.get("document", ""), ok,
                            lambda: (429, {"error": "You have exceeded your monthly word limit"}))

    def r_originality(self, path, q, b):
        v3 = "/v3/" in path

        def ok(v, fail=False):
            if v3:
                return 200, {"success": True, "results": {"ai": {"confidence": {"AI": v, "Original": round(1 - v, 6)},
                                                                  "aiModel": "fake-lite-1.0.1"}}}
            return 200, {"success": True, "score": {"ai": v, "original": round(1 - v, 6)},
                         "aiModelVersion": "fake-1"}
        return self._scored("originality", b.get("content", ""), ok,
                            lambda: (402, {"error": "Not enough credits"}))

    def r_copyleaks_login(self, path, q, b):
        tok = f"tok-{next(self._ids)}-{'x' * 8}"
        with self.lock:
            self.tokens[tok] = 0
            self.logins += 1
        return 200, {"access_token": tok, ".issued": "2026-11-30T00:00:00Z", ".expires": "2099-12-01T00:00:00Z"}

    def r_copyleaks(self, path, q, b):
        def ok(v, fail=False):
            return 200, {"modelVersion": "fake-v8", "summary": {"ai": v, "human": round(1 - v, 6)}, "results": []}
        return self._scored("copyleaks", b.get("text", ""), ok, lambda: (402, {"error": "insufficient credits"}))

    def r_winston(self, path, q, b):
        def ok(v, fail=False):
            return 200, {"status": 200, "score": round(100 * (1 - v)), "version": "fake-4.11", "sentences": [],
                         "credits_used": len(b.get("text", "").split())}
        return self._scored("winston", b.get("text", ""), ok, lambda: (402, {"error": "Not enough credits"}))

    def r_zerogpt(self, path, q, b):
        def ok(v, fail=False):
            return 200, {"success": True, "code": 200, "message": "detection complete",
                         "data": {"fakePercentage": f"{v * 100:.2f}", "isHuman": round(100 - v * 100, 2),
                                  "feedback": "Your Text is AI/GPT Generated" if v >= 0.5 else "Your Text is Human written"}}
        return self._scored("zerogpt", b.get("input_text", ""), ok,
                            lambda: (200, {"success": False, "code": 402, "message": "Insufficient credits",
                                           "data": None}))

    def r_sapling(self, path, q, b):
        def ok(v, fail=False):
            return 200, {"score": v, "sentence_scores": [{"sentence": "x", "score": v}], "text": b.get("text")}
        return self._scored("sapling", b.get("text", ""), ok, lambda: (402, {"msg": "Out of credits"}))

    def r_pangram(self, path, q, b):
        text = b.get("text", "")

        def ok(v, fail=False):
            tid = f"task-{next(self._ids)}"
            with self.lock:
                self.tasks[tid] = {"text": text, "v": v, "fail": fail, "polls": 0}
            return 200, {"task_id": tid}
        return self._scored("pangram", text, ok, lambda: (402, {"detail": "insufficient credits"}))

    def _poll(self, tid):
        with self.lock:
            t = self.tasks.get(tid)
            if t is None:
                return None
            t["polls"] += 1
            return t, t["polls"] > self.polls_before_done

    def r_pangram_poll(self, path, q, b):
        tid = path.rsplit("/", 1)[1]
        got = self._poll(tid)
        if got is None:
            return 404, {"detail": "unknown task"}
        t, ready = got
        if not ready:
            return 200, {"task_id": tid, "stage": "STAGE_RUNNING"}
        if t["fail"]:
            return 200, {"task_id": tid, "stage": "STAGE_FAILED", "error": "model error"}
        v = t["v"]
        return 200, {"task_id": tid, "stage": "STAGE_SUCCESS", "fraction_ai": round(v * 0.8, 6),
                     "fraction_ai_assisted": round(v * 0.2, 6), "fraction_human": round(1 - v, 6),
                     "prediction_short": "AI" if v >= 0.5 else "Human", "version": "fake-pangram-3"}

    # -- humanizers -----------------------------------------------------------------------
    def _task(self, text, v, fail):
        tid = f"h-{next(self._ids)}"
        with self.lock:
            self.tasks[tid] = {"text": text, "v": v, "fail": fail, "polls": 0}
        return tid

    def r_undetectable(self, path, q, b):
        text = b.get("content", "")

        def ok(v, fail=False):
            return 200, {"id": self._task(text, v, fail), "status": "queued"}
        return self._scored("undetectable", text, ok, lambda: (400, {"error": "Payment Required"}))

    def r_undetectable_poll(self, path, q, b):
        got = self._poll(b.get("id"))
        if got is None:
            return 404, {"error": "unknown document"}
        t, ready = got
        if not ready:
            return 200, {"id": b.get("id"), "status": "processing"}
        if t["fail"]:
            return 200, {"id": b.get("id"), "status": "failed"}
        return 200, {"id": b.get("id"), "status": "done", "output": humanized(t["text"]), "model": "fake-v11"}

    def r_stealthgpt(self, path, q, b):
        def ok(v, fail=False):
            return 200, {"result": humanized(b.get("prompt", "")), "howLikelyToBeDetected": 10}
        return self._scored("stealthgpt", b.get("prompt", ""), ok, lambda: (402, {"error": "no tokens left"}))

    def r_writehuman(self, path, q, b):
        def ok(v, fail=False):
            return 200, {"results": [{"text": humanized(b.get("text", ""))}], "model": "fake-enhanced"}
        return self._scored("writehuman", b.get("text", ""), ok, lambda: (402, {"error": "out of credits"}))

    def _errcode_submit(self, vendor, text):
        def ok(v, fail=False):
            return 200, {"err_code": 0, "err_msg": "Success", "data": {"task_id": self._task(text, v, fail)}}
        return self._scored(vendor, text, ok, lambda: (200, {"err_code": 1002, "err_msg": "insufficient credits",
                                                             "data": None}))

    def _errcode_poll(self, q):
        tid = (q.get("task_id") or [""])[0]
        got = self._poll(tid)
        if got is None:
            return 200, {"err_code": 1001, "err_msg": "task not found", "data": None}
        t, ready = got
        if not ready:
            return 200, {"err_code": 0, "data": {"task_id": tid, "output": "", "task_status": "processing"}}
        if t["fail"]:
            return 200, {"err_code": 0, "data": {"task_id": tid, "output": "", "task_status": "failed"}}
        return 200, {"err_code": 0, "data": {"task_id": tid, "input": t["text"], "output": humanized(t["text"]),
                                             "task_status": "done", "mode": "fake-mode"}}

    def r_hix(self, path, q, b):
        return self._errcode_submit("hix", b.get("input", ""))

    def r_hix_poll(self, path, q, b):
        return self._errcode_poll(q)

    def r_humbot(self, path, q, b):
        return self._errcode_submit("humbot", b.get("input", ""))

    def r_humbot_poll(self, path, q, b):
        return self._errcode_poll(q)

    # -- OpenAI-compatible chat ------------------------------------------------------------
    def r_openai(self, path, q, b):
        msgs = b.get("messages") or []
        system = next((m["content"] for m in msgs if m.get("role") == "system"), "")
        user = next((m["content"] for m in reversed(msgs) if m.get("role") == "user"), "")

        def ok(v, fail=False):
            if "rate the writing quality" in system:
                inner = user.split("<<<\n", 1)[-1].rsplit("\n>>>", 1)[0]
                content = json.dumps({"readability": value_for(inner)})
            elif system:
                content = "<think>plan</think>" + humanized(user)
            else:
                content = f"Generated for [{user}] with seed {b.get('seed')}"
            return 200, {"id": "chatcmpl-1", "object": "chat.completion", "model": "fake-served/" + b.get("model", ""),
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                      "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
        return self._scored("openai", user, ok, lambda: (429, {"error": {"message": "insufficient_quota"}}))
