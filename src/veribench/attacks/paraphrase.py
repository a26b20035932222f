"""RAID's paraphrase attack through an OpenAI-compatible chat model or any humanizer.

RAID (``attackers/paraphrase.py``) rewrites a text with DIPPER (``dipper-paraphraser-xxl``,
11B parameters, GPU): the whitespace-normalised text is cut into sentences and
paraphrased ``sent_interval = 3`` sentences at a time, each window given the output so
far as context (``include_prefix``), with ``lex_diversity = 60``, ``order_diversity = 0``
and nucleus sampling ``top_p = 0.75``. :class:`LLMParaphraser` does the same with any
OpenAI-compatible chat endpoint (vLLM, llama.cpp, Ollama, OpenAI) through
:class:`veribench.llm.client.ChatClient`: the DIPPER control codes become an instruction
(:data:`SYSTEM_PROMPT`), every window is one recorded, cached chat call.

:class:`LLMParaphraser` is a humanizer (spec kind ``humanizer``, ``humanize_batch``), so a
paraphrase runs through :func:`veribench.humanizers.pipeline.humanize_texts`: the shared
cached, budgeted, resumable execution layer (``run_cached``). The ``paraphrase`` attack
can also use any registered humanizer (``--set humanizer=NAME``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ConfigDict, Field, field_validator

from veribench import registry
from veribench.attacks.base import Attack, AttackError, AttackResult, Params
from veribench.corpus.edits import diff_edits, sentence_spans
from veribench.detectors.api.base import word_count
from veribench.detectors.api.http import ConfigError, VendorError, refuse_key_settings
from veribench.errors import VeribenchError
from veribench.hashing import sha256_bytes, text_sha256
from veribench.humanizers.base import HumanizeResult
from veribench.humanizers.pipeline import humanize_texts
from veribench.llm.client import ChatClient, strip_think
from veribench.spec import Spec

VERSION = "1"
SYSTEM_PROMPT = (
    "You are a paraphraser. Rewrite the sentences between <sent> and </sent> so that they keep their meaning "
    "and every fact. Lexical diversity: {lex}/100 (how much of the wording to change). Order diversity: "
    "{order}/100 (how much to reorder the content). Text before <sent>, if any, is context only: do not "
    "repeat or rewrite it. Return only the paraphrase of the marked sentences, with no quotes, labels or comments."
)


class LLMParaphraser:
    """DIPPER-style windowed paraphrasing with an OpenAI-compatible chat model.

    Args:
        sent_interval: sentences paraphrased per call (RAID: 3).
        lex_diversity, order_diversity: 0-100 in steps of 20, as DIPPER (RAID: 60, 0).
        include_prefix: give the output so far as context (RAID: True).
        temperature, top_p: sampling (RAID: DIPPER sampled with top_p=0.75).
        base_url, model, provider, seed, max_tokens, ...: :class:`~veribench.llm.client.ChatClient` settings.

    Raises:
        ConfigError: a bad setting (from the client), or a diversity not in 0, 20, ..., 100.
    """

    cost_unit = "words"
    batch_size = 1

    def __init__(self, sent_interval: int = 3, lex_diversity: int = 60, order_diversity: int = 0,
                 include_prefix: bool = True, temperature: float = 1.0, top_p: float = 0.75, ws: Any = None,
                 **client_settings: Any):

        for name, v in (("lex_diversity", lex_diversity), ("order_diversity", order_diversity)):
            if v not in (0, 20, 40, 60, 80, 100):
                raise ConfigError(f"llm-paraphraser: {name} must be one of 0, 20, 40, 60, 80, 100 (DIPPER's codes)")
        if int(sent_interval) < 1:
            raise ConfigError("llm-paraphraser: sent_interval must be at least 1")
        self.sent_interval, self.include_prefix = int(sent_interval), bool(include_prefix)
        self.system = SYSTEM_PROMPT.format(lex=lex_diversity, order=order_diversity)
        self.client = ChatClient(temperature=temperature, top_p=top_p, **client_settings)
        self.max_concurrency = self.client.max_concurrency
        self.ws = ws
        self.spec = Spec("humanizer", "llm-paraphraser", VERSION, {
            **self.client.settings(), "sent_interval": self.sent_interval, "lex_diversity": lex_diversity,
            "order_diversity": order_diversity, "include_prefix": self.include_prefix,
            "prompt_sha256": sha256_bytes(self.system.encode("utf-8"))})

    def attach_workspace(self, ws: Any) -> None:
        """Also cache each window's chat call (``llm_calls``); called by ``humanize_texts``."""
        self.ws = ws

    def cost(self, text: str) -> float:

        return float(word_count(text))

    def preflight(self, text: str):

        if not text.strip():
            return HumanizeResult.failed("too_short", "empty input; no request sent", sent=False)
        return None

    def windows(self, text: str) -> list[str]:
        """The sentence windows sent, in order (RAID: whitespace normalised, then split)."""

        flat = " ".join(text.split())
        sents = [flat[s:e] for s, e in sentence_spans(flat)] or [flat]
        k = self.sent_interval
        return [" ".join(sents[i:i + k]) for i in range(0, len(sents), k)]

    def messages(self, context: str, window: str) -> list[dict[str, str]]:
        user = f"{context} <sent> {window} </sent>" if (self.include_prefix and context) else f"<sent> {window} </sent>"
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]

    def describe_request(self, text: str) -> dict[str, Any]:
        w = self.windows(text)
        body = self.client.body(self.messages("", w[0]))
        body["messages"] = [{"role": m["role"], "content": f"<{len(m['content'])} chars>"} for m in body["messages"]]
        return {"url": self.client.base_url + "/chat/completions", "json": body, "calls": len(w),
                "cost": self.cost(text), "cost_unit": self.cost_unit}

    def humanize_one(self, text: str):

        pre = self.preflight(text)
        if pre is not None:
            return pre
        out: list[str] = []
        calls = []
        for w in self.windows(text):
            try:
                res = self.client.chat(self.messages(" ".join(out), w), ws=self.ws)
            except VendorError as e:
                return HumanizeResult.failed(e.status, e.reason, windows_done=len(out), **e.detail())
            piece = strip_think(res.text)
            if not piece:
                return HumanizeResult.failed("bad_response", "model returned no text", windows_done=len(out))
            out.append(piece)
            calls.append(res.record())
        version = calls[-1].get("server_model") if calls else None
        return HumanizeResult(status="ok", output=" ".join(out), vendor_version=version,
                              detail={"windows": len(out), "calls": calls})

    def humanize_batch(self, texts: Sequence[str]) -> list[Any]:
        return [self.humanize_one(t) for t in texts]


class ParaphraseParams(Params):
    """``humanizer`` names the rewriter; every other key is that humanizer's setting."""

    model_config = ConfigDict(extra="allow")
    N: float = Field(1.0, ge=1.0, le=1.0, description="RAID rewrites whole texts (N = 1.0 only)")
    humanizer: str = "llm-paraphraser"

    @field_validator("humanizer")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("humanizer name is empty")
        return v


def build_humanizer(name: str, settings: dict[str, Any]) -> Any:
    """The humanizer ``name`` (``llm-paraphraser`` or any registered one) with ``settings``."""

    try:
        if name == "llm-paraphraser":
            return LLMParaphraser(**settings)
        return registry.create("humanizer", name, settings)
    except VeribenchError:
        raise
    except (ConfigError, TypeError, ValueError) as e:
        raise AttackError(f"humanizer {name!r}: {e}") from None


class Paraphrase(Attack):
    """Rewrite each whole text with an LLM paraphraser (default) or any humanizer, through
    the cached, budgeted, resumable humanizing layer; edits are the token-level diff."""

    name = "paraphrase"
    Settings = ParaphraseParams
    #: Passed to the humanizer, never recorded (they change how, not what, is computed).
    operational = ("timeout", "max_attempts", "backoff", "backoff_max", "rate_per_minute", "max_concurrency",
                   "poll_interval", "poll_timeout")
    deviations = ("The rewriter is an OpenAI-compatible chat model instructed with DIPPER's control codes "
                  "(lexical 60, order 0, 3-sentence windows with the output so far as context, top_p 0.75), or "
                  "any humanizer adapter, instead of DIPPER-XXL; its full spec is recorded.",
                  "Edits are the token-level diff of source and output (RAID records one span over the "
                  "whole output): the fewest changed tokens when the two token counts multiply to at most 2^31; "
                  "longer pairs are first cut at tokens that occur once in each text (patience diff) and each "
                  "piece is aligned optimally, so the edits are exact but may change more tokens than the minimum.",
                  "The attack seed is sent as the chat request's seed (servers that honour it reproduce the "
                  "sampling; every call is cached, so a rerun never resamples).")

    def setup(self) -> None:

        extra = dict(self.params.model_extra or {})
        try:  # before anything is recorded: keys come only from the environment
            refuse_key_settings({**extra, **self.ops}, self.params.humanizer)
        except ConfigError as e:
            raise AttackError(str(e), field="--set") from None
        self.settings = extra
        self._h: Any = None

    def humanizer(self, seed: int | None = None) -> Any:
        s = {**self.settings, **self.ops}
        if self.params.humanizer == "llm-paraphraser" and seed is not None:
            s.setdefault("seed", int(seed))
        h = build_humanizer(self.params.humanizer, s)
        return h

    def run(self, texts: Sequence[str], seeds: Sequence[int], *, ws: Any = None, seed: int | None = None,
            max_spend: float | None = None, dry_run: bool = False, stats: Any = None, progress: bool = False,
            **ctx: Any) -> list[AttackResult]:

        h = self._h = self.humanizer(seed)
        res = humanize_texts(ws, h, list(texts), max_spend=max_spend, dry_run=dry_run, stats=stats,
                             progress=progress)
        info = {"humanizer": h.spec.to_dict(), "humanizer_spec_hash": h.spec.hash}
        out = []
        for t in texts:
            r = res.get(text_sha256(t))
            if r is None:
                out.append(AttackResult(status="not_run", reason="stopped by --max-spend or --dry-run", detail=info))
            elif r.status != "ok":
                out.append(AttackResult(status=r.status, reason=str(r.detail.get("reason") or r.status), detail=info))
            else:
                out.append(self.finish(t, AttackResult(
                    edits=diff_edits(t, r.output),
                    stats={"eligible": 1, "selected": 1, "windows": r.detail.get("windows")},
                    detail={**info, "vendor_version": r.vendor_version})))
        return out

    @property
    def used_spec(self) -> Spec | None:
        """The humanizer spec of the last run."""
        return self._h.spec if self._h is not None else None
