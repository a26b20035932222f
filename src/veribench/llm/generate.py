"""Source-text generation from cycle prompts through an OpenAI-compatible endpoint.

Input: HumanizerBench ``prompts.json`` rows (``slug``, ``category``, ``resolved``) or plain
prompt strings. Output: one record per (prompt, sample) with the text and its full
generation record (provider, model asked, model string returned, date, prompt, seed and
every sampling setting), ready to become :class:`veribench.corpus.Document` rows with
``label="ai"`` and ``generation=record``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from veribench.detectors.api.http import VendorError
from veribench.errors import InputError
from veribench.llm.client import make_client, strip_think


def generate_sources(client_or_settings: Any, prompts: Iterable[Any], ws: Any = None, *, samples: int = 1,
                     seed: int | None = 0, system: str | None = None) -> list[dict[str, Any]]:
    """Generate ``samples`` texts per prompt.

    Args:
        client_or_settings: a ChatClient or its settings dict.
        prompts: ``prompts.json`` rows (dicts with ``resolved``, optional ``slug``/``category``)
            or strings.
        ws: workspace for the call cache (a rerun sends nothing already answered).
        samples: texts per prompt; sample ``i`` uses ``seed + i`` (so samples differ and each
            is reproducible on servers that honour ``seed``).
        seed: base seed, or ``None`` to send none (then recorded as ``None``).
        system: optional system message.

    Returns:
        Records ``{"prompt_slug", "category", "prompt", "sample", "status", "text", "generation"}``;
        a failed call gives ``status`` = its reason code and ``text`` = ``None`` (never dropped).
    """
    client = make_client(client_or_settings)
    out = []
    for i, p in enumerate(prompts):
        if isinstance(p, str):
            prompt, slug, cat = p, f"prompt-{i}", None
        elif isinstance(p, dict) and isinstance(p.get("resolved") or p.get("prompt"), str):
            prompt, slug, cat = p.get("resolved") or p.get("prompt"), p.get("slug", f"prompt-{i}"), p.get("category")
        else:

            raise InputError("prompt must be a string or an object with 'resolved'", record=i, field="resolved")
        msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        for k in range(samples):
            s = None if seed is None else seed + k
            rec: dict[str, Any] = {"prompt_slug": slug, "category": cat, "prompt": prompt, "sample": k}
            try:
                res = client.chat(msgs, ws=ws, seed=s)
                text = strip_think(res.text)
                rec.update(status="ok" if text else "bad_response", text=text or None, generation=res.record())
            except VendorError as e:
                rec.update(status=e.status, text=None, generation={"provider": client.provider, "model": client.model,
                                                                   "error": e.reason, "seed": s})
            out.append(rec)
    return out
