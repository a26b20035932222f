"""``llm-humanizer``: an OpenAI-compatible chat model with a user-chosen system-prompt file.

The prompt file is Markdown, optionally with YAML frontmatter (as in the MIT-licensed
blader/humanizer skill). Before use:

1. the frontmatter is stripped (its ``name`` and ``version`` are recorded);
2. the file's own output instructions are overridden: a section headed "Output" (any
   level) is replaced, or else an override is appended, so that only the final rewrite
   comes back (:data:`OUTPUT_OVERRIDE`);
3. the SHA-256 of the file bytes and of the final system prompt are recorded in the
   spec, with the ``prompt_commit`` the user gives (the upstream commit it came from).

The file path itself is not part of the spec: the same prompt from another folder is the
same humanizer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from veribench.detectors.api.base import word_count
from veribench.detectors.api.http import ConfigError, VendorError
from veribench.errors import InputError
from veribench.hashing import sha256_bytes
from veribench.humanizers.base import HumanizeResult
from veribench.llm.client import ChatClient, strip_think
from veribench.spec import Spec

OUTPUT_OVERRIDE = (
    "## Output\n\nReturn only the final rewritten text. Do not include drafts, analysis, lists of changes, "
    "headings, quotation marks or any commentary before or after it."
)
ADAPTER_VERSION = "1"
_FM = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)


def load_prompt(path: str | Path) -> dict[str, Any]:
    """Read a system-prompt file: ``{"prompt", "file_sha256", "prompt_sha256", "name", "version", "frontmatter"}``.

    Raises:
        InputError: file missing, not UTF-8, bad YAML frontmatter, or empty after stripping.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise InputError("no such file or folder (the system-prompt file)", file=str(p), field="prompt_file") from None
    except UnicodeDecodeError:
        raise InputError("system-prompt file is not UTF-8", file=str(p)) from None
    fm: dict[str, Any] = {}
    m = _FM.match(text)
    if m:
        try:
            loaded = yaml.safe_load(m.group(1))
        except yaml.YAMLError as e:
            raise InputError(f"bad YAML frontmatter: {e}", file=str(p), field="frontmatter") from None
        fm = loaded if isinstance(loaded, dict) else {}
        text = text[m.end():]
    body = override_output(text.strip())
    if not body.replace(OUTPUT_OVERRIDE, "").strip():
        raise InputError("system prompt is empty after stripping the frontmatter", file=str(p))
    return {"prompt": body, "file_sha256": sha256_bytes(raw), "prompt_sha256": sha256_bytes(body.encode("utf-8")),
            "name": fm.get("name"), "version": None if fm.get("version") is None else str(fm.get("version")),
            "frontmatter": fm}


def override_output(md: str) -> str:
    """Replace a Markdown section headed "Output" (up to the next heading of the same or a
    higher level) with :data:`OUTPUT_OVERRIDE`; append the override when there is none."""
    lines = md.splitlines()
    for i, line in enumerate(lines):
        h = re.match(r"^(#{1,6})\s+(?:\S+\s+)?output(?:\s+format)?\s*$", line.strip(), re.I)
        if h:
            level = len(h.group(1))
            j = i + 1
            while j < len(lines):
                h2 = re.match(r"^(#{1,6})\s", lines[j])
                if h2 and len(h2.group(1)) <= level:
                    break
                j += 1
            return "\n".join(lines[:i] + [OUTPUT_OVERRIDE, ""] + lines[j:]).strip()
    return md.rstrip() + "\n\n" + OUTPUT_OVERRIDE


class LLMHumanizer:
    """Humanizer that asks a chat model to rewrite each text under a system-prompt file.

    Args:
        prompt_file: Markdown system prompt (frontmatter stripped, output section overridden).
        prompt_commit: upstream commit or tag the file came from (recorded in the spec).
        user_template: user message; ``{text}`` is replaced by the input.
        base_url, model, provider, temperature, top_p, max_tokens, seed, stop, ...: passed to
            :class:`~veribench.llm.client.ChatClient`.
    """

    cost_unit = "words"
    batch_size = 1

    def __init__(self, prompt_file: str, prompt_commit: str | None = None, user_template: str = "{text}",
                 ws: Any = None, **client_settings: Any):
        if "{text}" not in user_template:
            raise ConfigError("llm-humanizer: user_template must contain {text}")
        self.prompt = load_prompt(prompt_file)
        self.user_template = user_template
        self.client = ChatClient(**client_settings)
        self.max_concurrency = self.client.max_concurrency
        self.ws = ws
        settings = {**self.client.settings(), "prompt_sha256": self.prompt["prompt_sha256"],
                    "prompt_file_sha256": self.prompt["file_sha256"], "prompt_name": self.prompt["name"],
                    "prompt_version": self.prompt["version"], "prompt_commit": prompt_commit,
                    "user_template": user_template}
        self.spec = Spec("humanizer", "llm-humanizer", ADAPTER_VERSION, settings)

    def attach_workspace(self, ws: Any) -> None:
        """Also cache the chat calls themselves (``llm_calls``); called by ``humanize_texts``."""
        self.ws = ws

    def cost(self, text: str) -> float:
        return float(word_count(text))

    def preflight(self, text: str) -> HumanizeResult | None:
        if not text.strip():
            return HumanizeResult.failed("too_short", "empty input; no request sent", sent=False)
        return None

    def messages(self, text: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.prompt["prompt"]},
                {"role": "user", "content": self.user_template.replace("{text}", text)}]

    def describe_request(self, text: str) -> dict[str, Any]:
        body = self.client.body(self.messages(text))
        body["messages"] = [{"role": m["role"], "content": f"<{len(m['content'])} chars>"} for m in body["messages"]]
        return {"url": self.client.base_url + "/chat/completions", "json": body, "cost": self.cost(text),
                "cost_unit": self.cost_unit}

    def humanize_one(self, text: str) -> HumanizeResult:
        pre = self.preflight(text)
        if pre is not None:
            return pre
        try:
            res = self.client.chat(self.messages(text), ws=self.ws)
        except VendorError as e:
            return HumanizeResult.failed(e.status, e.reason, **e.detail())
        out = strip_think(res.text)
        detail = {"call": res.record(), "response": res.response}
        if not out:
            return HumanizeResult.failed("bad_response", "model returned no text", **detail)
        if res.finish_reason == "length":
            detail["truncated"] = True
        return HumanizeResult(status="ok", output=out, vendor_version=res.server_model, detail=detail)

    def humanize_batch(self, texts: Sequence[str]) -> list[HumanizeResult]:
        return [self.humanize_one(t) for t in texts]

