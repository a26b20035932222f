"""Watermarked (and plain) AI text from a local causal model, imported into arm C.

:func:`generate_watermarked` samples one text per prompt from a local causal LM (SmolLM2
offline by default, loaded as the zero-shot detectors load it) with a watermark's logits
processor (:mod:`veribench.detectors.local.watermark`: kgw through transformers'
``WatermarkingConfig``, unigram through its own processor), or with none (scheme ``none``:
the plain control texts of the same prompts and seeds), and imports the texts through the
normal import path (:func:`veribench.corpus.importers._store.store_import`, one logged
transaction): label ``ai``, arm ``C`` (no new arm), ``tags = {"watermark": scheme,
"prompt": slug}`` so the watermarked texts form a tag slice, ``group_key`` per prompt (a
watermarked text and the plain text of its prompt fall in the same calibration-split
group). The generation record names every setting and the key's SHA-256 fingerprint,
never the key.

Generation runs on CPU (kgw's green lists come from ``torch.Generator``, whose streams
differ between CPU and CUDA; the detector scores on CPU), in batches of ``batch_size``
prompts, left-padded; the sampling seed of batch b is ``seed + b``, so a text is
reproduced by the same prompts, n, batch size and seed.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from veribench.corpus.document import Document
from veribench.corpus.importers._io import load_json
from veribench.corpus.importers._store import store_import
from veribench.corpus.report import ImportReport
from veribench.detectors.local.models import load_causal_lm
from veribench.detectors.local.watermark import DEFAULTS, SCHEMES, key_fingerprint, logits_processor
from veribench.errors import InputError, SettingError
from veribench.progress import notice
from veribench.text.hazards import is_blank

#: ``none`` generates the same prompts without a watermark (the control texts).
GENERATE_SCHEMES = (*SCHEMES, "none")
#: Default prompts: short expository paragraphs on everyday topics (veribench's own list).
TOPICS = tuple("""
how bees make honey
why the sky is blue
how bicycles stay upright
the history of the printing press
how vaccines train the immune system
why cats purr
how rainbows form
the water cycle
how a refrigerator works
why leaves change colour in autumn
how airplanes fly
the life of a star
how bread rises
why we sleep
how volcanoes erupt
the invention of the telephone
how coral reefs grow
why the moon has phases
how compost works
the rules of chess
how a library is organised
why exercise is healthy
how tides work
the first moon landing
how solar panels make electricity
why birds migrate
how coffee is grown
the Roman aqueducts
how earthquakes are measured
why oceans are salty
how a bill becomes law
the history of money
how glass is made
why onions make people cry
how a compass works
the Great Wall of China
how recycling plants sort waste
why we have seasons
how spiders spin webs
the origins of the Olympics
how a camera captures light
why ice floats
how trains run on electricity
the discovery of penicillin
how maps are drawn
why dogs wag their tails
how wind turbines work
the history of tea
how the heart pumps blood
why deserts are cold at night
""".strip().splitlines())


def default_prompts(n: int) -> list[dict[str, str]]:
    """``n`` prompts (slug, prompt) from :data:`TOPICS`, cycling when n exceeds them."""
    out = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        out.append({"slug": f"topic-{i:03d}", "prompt": f"Write a short paragraph explaining {topic}."})
    return out


def read_prompts(path: str | Path) -> list[dict[str, str]]:
    """Prompts from a JSON file: a list of strings, or of objects with ``prompt`` or
    ``resolved`` (HumanizerBench ``prompts.json``) and optional ``slug``.

    Raises:
        InputError: not a list, or a record without a prompt string (file, record, field).
    """
    f = str(path)
    data = load_json(Path(path))
    if not isinstance(data, list) or not data:
        raise InputError("expected a non-empty JSON list of prompts", file=f)
    out = []
    for i, p in enumerate(data):
        if isinstance(p, str) and not is_blank(p):
            out.append({"slug": f"prompt-{i:03d}", "prompt": p})
        elif isinstance(p, dict) and isinstance(p.get("prompt") or p.get("resolved"), str):
            out.append({"slug": str(p.get("slug") or f"prompt-{i:03d}"), "prompt": p.get("prompt") or p["resolved"]})
        else:
            raise InputError("a prompt must be a string or an object with 'prompt' or 'resolved'", file=f,
                             record=i, field="prompt")
    return out


def _encode(tok: Any, prompt: str) -> str:
    if getattr(tok, "chat_template", None):
        return str(tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                           add_generation_prompt=True))
    return prompt


def sample_texts(lm: Any, prompts: Sequence[str], processor: Any, *, max_new_tokens: int, temperature: float,
                 top_p: float, seed: int, batch_size: int, watermarking_config: Any = None) -> list[str]:
    """Sample one continuation per prompt (shape: one string per prompt, in order).

    ``processor`` is added to the logits processors (unigram), ``watermarking_config`` is
    passed to ``generate`` (kgw, transformers' own path); both ``None`` for plain text."""
    import torch
    from transformers import LogitsProcessorList

    tok = lm.tokenizer
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    out: list[str] = []
    for b in range(0, len(prompts), batch_size):
        chunk = [_encode(tok, p) for p in prompts[b:b + batch_size]]
        enc = tok(chunk, return_tensors="pt", padding=True, add_special_tokens=False)
        torch.manual_seed(seed + b // batch_size)
        kw: dict[str, Any] = {"max_new_tokens": max_new_tokens, "do_sample": True, "temperature": temperature,
                              "top_p": top_p, "top_k": 0, "pad_token_id": tok.pad_token_id}
        if processor is not None:
            kw["logits_processor"] = LogitsProcessorList([processor])
        if watermarking_config is not None:
            kw["watermarking_config"] = watermarking_config
        with torch.no_grad():
            ids = lm.model.generate(**enc, **kw)
        new = ids[:, enc["input_ids"].shape[1]:]
        out += [t.strip() for t in tok.batch_decode(new, skip_special_tokens=True)]
        notice(f"watermark generate: {min(b + batch_size, len(prompts))}/{len(prompts)} texts")
    return out


def generate_watermarked(ws: Any, *, scheme: str, key: bytes | None, model: str = "smollm2", n: int = 50,
                         prompts: Sequence[dict[str, str]] | None = None, max_new_tokens: int = 200,
                         temperature: float = 0.8, top_p: float = 1.0, seed: int = 0, batch_size: int = 10,
                         gamma: float | None = None, delta: float | None = None, seeding_scheme: str = "lefthash",
                         context_width: int = 1, corpus: str = "watermark", arm: str = "C") -> ImportReport:
    """Generate ``n`` texts (the first n prompts) with watermark ``scheme`` and import them.

    Args:
        ws: an open workspace (read-write).
        scheme: ``kgw``, ``unigram`` or ``none`` (plain control texts; ``key`` unused).
        key: the key's bytes (:func:`veribench.detectors.local.watermark.read_key`).
        model: a causal LM name for :func:`~veribench.detectors.local.models.load_causal_lm`.
        n: texts to generate, at most ``len(prompts)`` (default prompts: :func:`default_prompts`).
        max_new_tokens, temperature, top_p, seed, batch_size: sampling (``top_k`` 0: pure
            multinomial sampling, as in Kirchenbauer et al. 2023's sampling experiments).
        gamma, delta: green-list share and logit bias (scheme defaults:
            :data:`~veribench.detectors.local.watermark.DEFAULTS`).
        seeding_scheme, context_width: kgw only.
        corpus, arm: where the documents go; ids ``<corpus>/<scheme>/<slug>``.

    Returns:
        The import report (documents stored; texts that came back blank are named in its
        notes and not stored).

    Raises:
        SettingError: unknown scheme, no key for a watermark, n out of range, bad gamma.
        ModelLoadError: the model cannot be loaded (names what is missing).
    """
    if scheme not in GENERATE_SCHEMES:
        raise SettingError(f"unknown scheme {scheme!r}; use one of {', '.join(GENERATE_SCHEMES)}", field="scheme")
    rows = list(prompts) if prompts is not None else default_prompts(n)
    if not 1 <= n <= len(rows):
        raise SettingError(f"--n must be between 1 and the number of prompts ({len(rows)}), got {n}", field="n")
    rows = rows[:n]
    lm = load_causal_lm(model, device="cpu", dtype="float32")
    vocab = int(lm.model.config.get_text_config().vocab_size)
    wm: dict[str, Any] = {"scheme": scheme}
    processor, wcfg = None, None
    if scheme != "none":
        if not key:
            raise SettingError("a watermark needs a key (--key-file or VERIBENCH_WATERMARK_KEY)", field="key_file")
        g = float(DEFAULTS[scheme]["gamma"] if gamma is None else gamma)
        d = float(DEFAULTS[scheme]["delta"] if delta is None else delta)
        proc = logits_processor(scheme, vocab, key, gamma=g, delta=d, seeding_scheme=seeding_scheme,
                                context_width=context_width)
        wm.update(gamma=g, delta=d, key_sha256=key_fingerprint(key), vocab_size=vocab)
        if scheme == "kgw":
            from transformers import WatermarkingConfig

            wm.update(seeding_scheme=seeding_scheme, context_width=context_width)
            wcfg = WatermarkingConfig(greenlist_ratio=g, bias=d, hashing_key=proc.hash_key,
                                      seeding_scheme=seeding_scheme, context_width=context_width)
        else:
            processor = proc
    texts = sample_texts(lm, [r["prompt"] for r in rows], processor, max_new_tokens=max_new_tokens,
                         temperature=temperature, top_p=top_p, seed=seed, batch_size=batch_size,
                         watermarking_config=wcfg)
    import transformers

    today = _dt.date.today().isoformat()
    source = f"veribench watermark generate --scheme {scheme} --model {model} --n {n} --seed {seed}"
    report = ImportReport(kind="watermark", source=source, corpus=corpus)
    docs, blank = [], []
    for i, (r, text) in enumerate(zip(rows, texts)):
        if is_blank(text):
            blank.append(r["slug"])
            continue
        docs.append(Document.model_validate({
            "id": f"{corpus}/{scheme}/{r['slug']}", "text": text, "label": "ai", "arm": arm,
            "tags": {"watermark": scheme, "prompt": r["slug"]}, "group_key": f"{corpus}/prompt/{r['slug']}",
            "provenance": {"method": f"generated by {source} (prompt {r['slug']})"},
            "generation": {"provider": "transformers (local)", "model": model,
                           "version": f"transformers {transformers.__version__}", "date": today,
                           "prompt": r["prompt"], "temperature": temperature, "top_p": top_p,
                           "max_tokens": max_new_tokens, "seed": seed + i // batch_size,
                           "settings": {"watermark": wm, "top_k": 0, "batch_size": batch_size,
                                        "batch": i // batch_size, "device": "cpu", "dtype": "float32"}},
        }))
    if blank:
        report.notes.append(f"{len(blank)} generation(s) came back blank and were not imported: "
                            + ", ".join(blank[:20]))
    if not docs:
        raise InputError("every generation came back blank; nothing imported", file=source)
    entry = report.set_entry(f"watermark-{scheme}")
    entry["records"] = len(rows)
    entry["documents"] = len(docs)
    entry["labels"] = {"ai": len(docs)}
    report.notes.append("watermark: " + json.dumps(wm, sort_keys=True))
    return store_import(ws, report, docs)
