"""One client for OpenAI-compatible ``/v1/chat/completions`` endpoints.

Served by vLLM, llama.cpp's ``llama-server``, Ollama (``/v1``) and OpenAI itself. It is
used for source-text generation from cycle prompts (:mod:`veribench.llm.generate`), the
``llm-humanizer`` (:mod:`veribench.humanizers.llm`) and the readability judge
(:mod:`veribench.llm.judge`).

Every call is recorded: provider, model id asked for, model string the server returned,
date (UTC), the full request (messages and every sampling setting, including ``seed``)
and the raw response. Completed calls are cached in the workspace table ``llm_calls``
keyed by (client spec hash, request hash): the same request is never sent twice.

Keys: optional (local servers need none); read only from ``VERIBENCH_<PROVIDER>_API_KEY``
(for example ``VERIBENCH_OPENAI_API_KEY``). Structured-output options differ between
servers, so the client sends ``response_format`` only when asked and the judge parses
plain text robustly.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from veribench.detectors.api.http import (
    CallInfo,
    ConfigError,
    VendorError,
    VendorHTTP,
    check_base_url,
    env_key,
    redact,
    refuse_key_settings,
)
from veribench.errors import unknown_key
from veribench.hashing import canonical_json, sha256_bytes
from veribench.spec import OPERATIONAL, Spec
from veribench.store import writes
from veribench.store.workspace import now_utc
from veribench.store.writes import json_text as _json

#: Sampling settings passed through to the server when set (OpenAI chat-completions names).
SAMPLING = ("temperature", "top_p", "max_tokens", "seed", "stop", "presence_penalty", "frequency_penalty",
            "response_format", "n")
CLIENT_VERSION = "openai-chat-1"


@dataclass
class ChatResult:
    """One chat completion.

    Attributes:
        text: ``choices[0].message.content``.
        server_model: the ``model`` string the server returned (may differ from the id asked).
        finish_reason: ``choices[0].finish_reason``.
        request: the exact JSON body sent (no key).
        response: the raw JSON response.
        created_at: ISO-8601 UTC time the call completed.
        cached: True when read from the workspace instead of sent.
    """

    text: str
    server_model: str | None
    finish_reason: str | None
    request: dict[str, Any]
    response: Any
    created_at: str
    provider: str
    model: str
    request_sha256: str
    spec_hash: str
    cached: bool = False
    usage: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """Provenance of this call: provider, model asked for, ``version`` (the model string the
        server returned, e.g. ``gpt-4o-2024-08-06`` for ``gpt-4o``), date, prompt, seed, sampling."""
        req = self.request
        return {"provider": self.provider, "model": self.model, "version": self.server_model,
                "server_model": self.server_model,
                "date": self.created_at, "messages": req.get("messages"), "seed": req.get("seed"),
                "sampling": {k: req[k] for k in SAMPLING if k in req}, "finish_reason": self.finish_reason,
                "request_sha256": self.request_sha256, "client_spec_hash": self.spec_hash}


class ChatClient:
    """OpenAI-compatible chat client.

    Args:
        base_url: server URL up to and including ``/v1`` (OpenAI SDK convention), e.g.
            ``http://127.0.0.1:8000/v1`` (vLLM), ``http://127.0.0.1:8080/v1`` (llama.cpp),
            ``http://127.0.0.1:11434/v1`` (Ollama), ``https://api.openai.com/v1``.
        model: model id to ask for.
        provider: a label recorded with every call and used for the key's environment
            variable (``VERIBENCH_<PROVIDER>_API_KEY``); e.g. ``vllm``, ``llamacpp``, ``ollama``, ``openai``.
        temperature, top_p, max_tokens, seed, stop, presence_penalty, frequency_penalty,
        response_format, n: sampling settings sent when not ``None``.
        extra_body: extra JSON fields for server-specific options (recorded and hashed).
        timeout, max_attempts, backoff, backoff_max, rate_per_minute, max_concurrency:
            operational; not part of the spec.
    """

    def __init__(self, base_url: str = "http://127.0.0.1:8000/v1", model: str = "default",
                 provider: str = "openai-compatible", temperature: float | None = 0.0, top_p: float | None = None,
                 max_tokens: int | None = None, seed: int | None = None, stop: Any = None,
                 presence_penalty: float | None = None, frequency_penalty: float | None = None,
                 response_format: Any = None, n: int | None = None, extra_body: dict[str, Any] | None = None,
                 **ops: Any):
        refuse_key_settings(ops, provider)
        unknown = set(ops) - set(OPERATIONAL)
        if unknown:
            known = set(inspect.signature(type(self).__init__).parameters) - {"self", "ops"} | set(OPERATIONAL)
            raise ConfigError("; ".join(unknown_key("setting", k, known, "the chat client") for k in sorted(unknown)))
        self.base_url = check_base_url(base_url)
        self.model, self.provider = str(model), str(provider)
        self.sampling = {k: v for k, v in {
            "temperature": temperature, "top_p": top_p, "max_tokens": max_tokens, "seed": seed, "stop": stop,
            "presence_penalty": presence_penalty, "frequency_penalty": frequency_penalty,
            "response_format": response_format, "n": n}.items() if v is not None}
        self.extra_body = dict(extra_body or {})
        o = {k: ops.get(k, v) for k, v in OPERATIONAL.items()}
        self.max_concurrency = int(o["max_concurrency"] or 4)
        self._secrets: list[str] = []
        self.http = VendorHTTP(self.provider, self.base_url, timeout=o["timeout"] if "timeout" in ops else 300.0,
                               max_attempts=o["max_attempts"], backoff=o["backoff"], backoff_max=o["backoff_max"],
                               rate_per_minute=o["rate_per_minute"], max_concurrency=self.max_concurrency,
                               secrets=lambda: self._secrets)
        self.spec = Spec("generator", "openai-chat", CLIENT_VERSION,
                         {"base_url": self.base_url, "model": self.model, "provider": self.provider,
                          **self.sampling, **({"extra_body": self.extra_body} if self.extra_body else {})})

    def settings(self) -> dict[str, Any]:
        """Settings that rebuild an equal client (no key, no operational settings)."""
        return dict(self.spec.settings)

    def body(self, messages: Sequence[dict[str, str]], **overrides: Any) -> dict[str, Any]:
        """The JSON request for ``messages`` with the client's sampling plus ``overrides`` (None drops a key)."""
        samp = {**self.sampling, **overrides}
        samp = {k: v for k, v in samp.items() if v is not None}
        bad = set(samp) - set(SAMPLING)
        if bad:
            raise ConfigError(f"llm client: unknown sampling setting(s) {sorted(bad)}")
        return {"model": self.model, "messages": [dict(m) for m in messages], **samp, **self.extra_body}

    def _headers(self) -> dict[str, str]:
        k = env_key(self.provider, required=False)
        if k is None:
            return {}
        if k not in self._secrets:
            self._secrets.append(k)
        return {"Authorization": f"Bearer {k}"}

    def chat(self, messages: Sequence[dict[str, str]], ws: Any = None, **overrides: Any) -> ChatResult:
        """Send one chat completion (or read it from the workspace cache).

        Args:
            messages: ``[{"role": "system"|"user"|"assistant", "content": str}, ...]``.
            ws: a :class:`veribench.store.Workspace` for the cache, or ``None``.
            overrides: per-call sampling settings (e.g. ``seed=3``).

        Raises:
            VendorError: a classified failure (``auth``, ``no_credits``, ``rate_limited``,
                ``site_down``, ``timeout``, ``refused``, ``bad_response``) after retries.
        """

        req = self.body(messages, **overrides)
        rsha = sha256_bytes(canonical_json(req).encode("utf-8"))
        if ws is not None:
            rows = ws.query("SELECT response, created_at FROM llm_calls WHERE spec_hash = ? AND request_sha256 = ?",
                            [self.spec.hash, rsha])
            if rows:
                resp = json.loads(rows[0][0])
                return self._result(req, resp, rows[0][1].isoformat(), rsha, cached=True)
        info = CallInfo()
        resp = self.http.request("POST", "/chat/completions", json_body=req, headers=self._headers(), info=info)
        resp = redact(resp, self._secrets)
        created = now_utc()
        res = self._result(req, resp, created.isoformat(), rsha)
        if ws is not None:
            with ws.transaction() as c:
                writes.put_spec(c, self.spec)
                c.execute("INSERT OR IGNORE INTO llm_calls VALUES (?,?,?,?,?,?,?,?,?,?)",
                          [self.spec.hash, rsha, self.provider, self.model, res.server_model, _json(req), _json(resp),
                           res.text, res.finish_reason, created])
        return res

    def _result(self, req: dict[str, Any], resp: Any, created: str, rsha: str, cached: bool = False) -> ChatResult:
        content = None
        choice = resp.get("choices", [None])[0] if isinstance(resp, dict) and resp.get("choices") else None
        if isinstance(choice, dict):
            msg = choice.get("message") or {}
            content = msg.get("content") if isinstance(msg, dict) else None
        if not isinstance(content, str):
            raise VendorError("bad_response", "chat response without choices[0].message.content", body=resp)
        return ChatResult(text=content, server_model=resp.get("model"), finish_reason=choice.get("finish_reason"),
                          request=req, response=resp, created_at=created, provider=self.provider, model=self.model,
                          request_sha256=rsha, spec_hash=self.spec.hash, cached=cached,
                          usage=resp.get("usage") or {})

    def close(self) -> None:
        self.http.close()


def make_client(client_or_settings: Any) -> ChatClient:
    """A :class:`ChatClient` from a client, or from a settings dict (``ChatClient(**settings)``)."""
    if isinstance(client_or_settings, ChatClient):
        return client_or_settings
    if isinstance(client_or_settings, dict):
        return ChatClient(**client_or_settings)
    raise TypeError("expected a ChatClient or a settings dict")


def strip_think(text: str) -> str:
    """Remove ``<think>...</think>`` reasoning blocks some servers return, then strip whitespace."""
    import re

    return re.sub(r"<think>.*?</think>", "", text, flags=re.S).strip()
