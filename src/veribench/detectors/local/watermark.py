"""Watermarks: generating watermarked text with a local causal model, and the ``watermark``
detector that tests a text for it (docs/detectors.md, "watermark").

Two schemes, each a green list of vocabulary ids chosen from a secret key; generation adds
``delta`` to the logits of green tokens, detection counts green tokens:

- ``kgw``: Kirchenbauer et al. 2023, "A Watermark for Large Language Models", ICML,
  arXiv:2301.10226. The green list of each position depends on the preceding token(s)
  (``seeding_scheme`` ``lefthash``, the paper's Algorithm 2, or ``selfhash``, Algorithm 3 of
  the follow-up arXiv:2306.04634). Generation and detection are transformers' own
  (``WatermarkingConfig``, ``WatermarkLogitsProcessor``, ``WatermarkDetector``).
- ``unigram``: Zhao et al. 2023, "Provable Robust Watermarking for AI-Generated Text"
  (Unigram-Watermark), arXiv:2306.17439: one fixed green list, independent of the
  context. transformers has no such processor; :class:`UnigramLogitsProcessor` draws the
  green list exactly as MarkLLM's implementation does (THU-BPM/MarkLLM
  ``watermark/unigram/unigram.py``, commit 0c0ebb4; checked in
  ``tests/detectors_local/test_watermark.py``).

The key is a secret: it is read only from a key file or ``VERIBENCH_WATERMARK_KEY``
(:func:`read_key`); specs and generation records carry its SHA-256 fingerprint
(:func:`key_fingerprint`) and nothing from which the seed follows (:func:`hashing_key` uses
a differently prefixed hash). Errors name the key file, never its content.

Detection statistic (both schemes): with T tokens scored, g of them green and green-list
share gamma, z = (g - gamma T) / sqrt(T gamma (1 - gamma)) (Kirchenbauer et al. 2023 §3,
the one-proportion z-test), one-sided p = 1 - Phi(z). Every occurrence of a token (or
n-gram) counts: transformers' ``WatermarkDetector`` is built with
``ignore_repeated_ngrams=False`` (its default), and MarkLLM's Unigram counts every token.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from veribench.detectors.local.models import load_causal_lm
from veribench.errors import SettingError
from veribench.records import ScoreResult
from veribench.spec import SECRET_SOURCES, Spec

SCHEMES = ("kgw", "unigram")
#: Environment variable read for the key when no key file is named.
KEY_ENV = "VERIBENCH_WATERMARK_KEY"
#: Default decision rule: z above this (Kirchenbauer et al. 2023 §3: "z > 4", a one-sided
#: false-positive rate of 3e-5 under the null).
Z_THRESHOLD = 4.0
#: Per-scheme defaults (gamma = green-list share of the vocabulary, delta = logit bias).
#: kgw: transformers' WatermarkingConfig defaults (gamma 0.25, delta 2.0, lefthash, width 1);
#: unigram: MarkLLM's config/Unigram.json (gamma 0.5, delta 2.0).
DEFAULTS: dict[str, dict[str, Any]] = {
    "kgw": {"gamma": 0.25, "delta": 2.0, "seeding_scheme": "lefthash", "context_width": 1},
    "unigram": {"gamma": 0.5, "delta": 2.0},
}
SEEDING_SCHEMES = ("lefthash", "selfhash")
#: Prefix of the hash the scheme's seed is taken from; the fingerprint hashes the bare key,
#: so the published fingerprint does not give the seed.
SEED_DOMAIN = b"veribench-watermark-seed\x00"
#: The normal approximation of the binomial count is used only when T gamma >= 5 and
#: T (1 - gamma) >= 5 (the usual rule for the one-proportion z-test).
MIN_EXPECTED = 5


def read_key(key_file: str | os.PathLike[str] | None = None) -> bytes:
    """The watermark key: the bytes of ``key_file`` (one trailing newline, ``\\n`` or
    ``\\r\\n``, removed), else the UTF-8 bytes of env ``VERIBENCH_WATERMARK_KEY``.

    Raises:
        SettingError: no key file and no env variable, a key file that cannot be read, or
            an empty key; the message names the file or the variable, never the key.
    """
    if key_file is not None and str(key_file) != "":
        p = Path(key_file)
        try:
            raw = p.read_bytes()
        except OSError as e:
            raise SettingError(f"watermark key file {str(p)!r} cannot be read ({e.strerror or type(e).__name__})",
                               field="key_file") from None
        key = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1] if raw.endswith(b"\n") else raw
        if not key:
            raise SettingError(f"watermark key file {str(p)!r} is empty", field="key_file")
        return key
    env = os.environ.get(KEY_ENV)
    if env:
        return env.encode("utf-8")
    raise SettingError(f"no watermark key: name a key file (setting key_file, or --key-file) or set {KEY_ENV}",
                       field="key_file")


def key_fingerprint(key: bytes) -> str:
    """SHA-256 of the key's bytes, hex (64 characters): what specs and records carry."""
    return hashlib.sha256(key).hexdigest()


def hashing_key(key: bytes) -> int:
    """The scheme's integer seed in [0, 2**63): the first 8 bytes, big-endian, of
    SHA-256(``SEED_DOMAIN`` + key), modulo 2**63 (transformers seeds ``torch.Generator`` with
    it, which takes 64-bit values; MarkLLM's Unigram converts it to ``np.int64``)."""
    return int.from_bytes(hashlib.sha256(SEED_DOMAIN + key).digest()[:8], "big") % 2**63


def unigram_green_mask(vocab_size: int, gamma: float, seed: int) -> Any:
    """The Unigram green list as a boolean numpy array of shape (vocab_size,), with
    ``int(gamma * vocab_size)`` entries True.

    As MarkLLM's ``UnigramUtils`` (commit 0c0ebb4): the first ``int(gamma V)`` entries set,
    then shuffled by ``numpy.random.default_rng(s)``, s = the first 4 bytes, little-endian,
    of SHA-256 of ``seed`` as a little-endian signed 64-bit integer.
    """
    import numpy as np

    n_green = int(gamma * vocab_size)
    s = int.from_bytes(hashlib.sha256(int(seed).to_bytes(8, "little", signed=True)).digest()[:4], "little")
    mask = np.zeros(vocab_size, dtype=bool)
    mask[:n_green] = True
    np.random.default_rng(s).shuffle(mask)
    return mask


def _check(scheme: str, gamma: float, seeding_scheme: str, context_width: int) -> None:
    if scheme not in SCHEMES:
        raise SettingError(f"unknown watermark scheme {scheme!r}; use one of {', '.join(SCHEMES)}", field="scheme")
    if not 0.0 < float(gamma) < 1.0:
        raise SettingError(f"gamma (green-list share) must be strictly between 0 and 1, got {gamma!r}", field="gamma")
    if scheme == "kgw":
        if seeding_scheme not in SEEDING_SCHEMES:
            raise SettingError(f"seeding_scheme must be one of {', '.join(SEEDING_SCHEMES)}, got {seeding_scheme!r}",
                               field="seeding_scheme")
        if int(context_width) < 1:
            raise SettingError(f"context_width must be at least 1, got {context_width!r}", field="context_width")


class UnigramLogitsProcessor:
    """Adds ``delta`` to the logits of the fixed green list (Zhao et al. 2023, Alg. 1).

    ``__call__(input_ids (batch, len), scores (batch, vocab)) -> scores + delta * green``,
    a transformers ``LogitsProcessor`` (duck-typed: transformers calls it the same way).
    Scores wider than ``vocab_size`` (padded embedding rows) get no bias on the extra ids.
    """

    def __init__(self, vocab_size: int, gamma: float, delta: float, seed: int):
        self.green = unigram_green_mask(vocab_size, gamma, seed)
        self.delta = float(delta)
        self._bias: Any = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        if self._bias is None or self._bias.device != scores.device or self._bias.shape[-1] != scores.shape[-1]:
            bias = torch.zeros(scores.shape[-1], dtype=scores.dtype)
            n = min(len(self.green), scores.shape[-1])
            bias[:n] = torch.from_numpy(self.green[:n]).to(scores.dtype) * self.delta
            self._bias = bias.to(scores.device)
        return scores + self._bias


def logits_processor(scheme: str, vocab_size: int, key: bytes, *, gamma: float, delta: float,
                     seeding_scheme: str = "lefthash", context_width: int = 1, device: str = "cpu") -> Any:
    """The generation-side processor of ``scheme`` for ``key``: transformers'
    ``WatermarkLogitsProcessor`` (kgw) or :class:`UnigramLogitsProcessor` (unigram)."""
    _check(scheme, gamma, seeding_scheme, context_width)
    if scheme == "unigram":
        return UnigramLogitsProcessor(vocab_size, gamma, delta, hashing_key(key))
    from transformers import WatermarkingConfig

    cfg = WatermarkingConfig(greenlist_ratio=gamma, bias=delta, hashing_key=hashing_key(key),
                             seeding_scheme=seeding_scheme, context_width=context_width)
    return cfg.construct_processor(vocab_size, device)


def z_score(green: int, scored: int, gamma: float) -> float:
    """z = (g - gamma T) / sqrt(T gamma (1 - gamma)) for g green among T scored tokens
    (Kirchenbauer et al. 2023 §3). ``scored`` must be positive."""
    return (green - gamma * scored) / math.sqrt(scored * gamma * (1 - gamma))


def p_value(z: float) -> float:
    """One-sided p-value of z under the null (no watermark): 1 - Phi(z) = erfc(z / sqrt 2) / 2."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def min_tokens_for(gamma: float) -> int:
    """Fewest scored tokens for the z-test: T gamma >= 5 and T (1 - gamma) >= 5."""
    return math.ceil(MIN_EXPECTED / min(gamma, 1 - gamma) - 1e-9)


class WatermarkDetector:
    """The ``watermark`` detector: z-score (native score) and one-sided p-value of a
    scheme's green-token count in each text.

    Args:
        scheme: ``"kgw"`` or ``"unigram"``.
        key_file: file holding the key (else env ``VERIBENCH_WATERMARK_KEY``); never stored.
        model: the generating model's tokenizer and vocabulary (``"smollm2"`` default; any
            name :func:`veribench.detectors.local.models.load_causal_lm` takes).
        gamma: green-list share (scheme default: :data:`DEFAULTS`).
        seeding_scheme, context_width: kgw only (transformers' settings).
        min_tokens: fewest scored tokens; fewer is ``too_short`` (default
            :func:`min_tokens_for`).
        key_sha256: optional fingerprint the key must match (so a stored spec's settings
            rebuild the detector with the key from ``key_file`` or the env variable).

    Spec: ``detector/watermark``, settings ``{scheme, model, gamma, key_sha256, min_tokens}``
    (+ ``seeding_scheme``, ``context_width`` for kgw). Results: ``raw`` = z (scale
    ``watermark_z``, higher = watermarked), ``verdict`` ``"AI"`` when z > 4 (the default
    rule), ``detail`` ``{p_value, tokens_scored, green_tokens, green_fraction, ...}``.
    Texts are tokenised without special tokens and scored on CPU (the green lists of kgw
    come from ``torch.Generator``, whose streams differ between CPU and CUDA).

    Raises:
        SettingError: unknown scheme, bad gamma, no readable key, or a key that does not
            match ``key_sha256``.
    """

    default_rule = {"rule": f"verdict = AI (watermark detected) when z > {Z_THRESHOLD:g}",
                    "source": "Kirchenbauer et al. 2023, A Watermark for Large Language Models, §3 (z > 4); "
                              "one-sided p-value in detail.p_value"}
    batch_size = 64

    def __init__(self, scheme: str = "kgw", key_file: str | None = None, model: str = "smollm2",
                 gamma: float | None = None, seeding_scheme: str = "lefthash", context_width: int = 1,
                 min_tokens: int | None = None, key_sha256: str | None = None):
        scheme = str(scheme).lower()
        if scheme not in SCHEMES:
            raise SettingError(f"unknown watermark scheme {scheme!r}; use one of {', '.join(SCHEMES)}",
                               field="scheme")
        self.scheme = scheme
        self.gamma = float(DEFAULTS[scheme]["gamma"] if gamma is None else gamma)
        self.seeding_scheme, self.context_width = str(seeding_scheme), int(context_width)
        _check(scheme, self.gamma, self.seeding_scheme, self.context_width)
        self.min_tokens = int(min_tokens) if min_tokens is not None else min_tokens_for(self.gamma)
        if self.min_tokens < 1:
            raise SettingError(f"min_tokens must be at least 1, got {min_tokens!r}", field="min_tokens")
        self._key = read_key(key_file)
        if key_sha256 is not None and str(key_sha256).lower() != key_fingerprint(self._key):
            where = f"key file {str(key_file)!r}" if key_file else KEY_ENV
            raise SettingError(f"the watermark key from {where} does not match key_sha256 {key_sha256!s:.16}...: "
                               "a different key", field="key_sha256")
        self.model = str(model)
        settings: dict[str, Any] = {"scheme": scheme, "model": self.model, "gamma": self.gamma,
                                    "key_sha256": key_fingerprint(self._key), "min_tokens": self.min_tokens}
        if scheme == "kgw":
            settings.update(seeding_scheme=self.seeding_scheme, context_width=self.context_width)
        assert not SECRET_SOURCES & set(settings)  # where the key is read from never enters the spec
        import importlib.metadata as md

        self.spec = Spec(kind="detector", name="watermark", version=f"transformers {md.version('transformers')}",
                         settings=settings)
        self._lm: Any = None
        self._det: Any = None
        self._green: Any = None

    def __repr__(self) -> str:  # never shows the key
        return f"WatermarkDetector({self.spec.label})"

    def _load(self) -> Any:
        if self._lm is None:
            self._lm = load_causal_lm(self.model, device="cpu", dtype="float32")
            vocab = int(self._lm.model.config.get_text_config().vocab_size)
            if self.scheme == "unigram":
                self._green = unigram_green_mask(vocab, self.gamma, hashing_key(self._key))
            else:
                from transformers import WatermarkDetector as HFWatermarkDetector
                from transformers import WatermarkingConfig

                cfg = WatermarkingConfig(greenlist_ratio=self.gamma, bias=DEFAULTS["kgw"]["delta"],
                                         hashing_key=hashing_key(self._key), seeding_scheme=self.seeding_scheme,
                                         context_width=self.context_width)
                self._det = HFWatermarkDetector(model_config=self._lm.model.config, device="cpu",
                                                watermarking_config=cfg, ignore_repeated_ngrams=False)
        return self._lm

    def token_ids(self, text: str) -> list[int]:
        """The ids the test scores: the model's tokenizer, no special tokens added."""
        return list(self._load().tokenizer(text, add_special_tokens=False)["input_ids"])

    def _scored(self, n_ids: int) -> int:
        if self.scheme == "unigram":
            return n_ids
        width = self.context_width + 1 - int(self.seeding_scheme == "selfhash")
        return max(0, n_ids - width + 1)

    def score_text(self, text: str) -> ScoreResult:
        """Score one text; failures come back as results, never as exceptions."""
        try:
            ids = self.token_ids(text)
        except Exception as e:  # a model that cannot load is raised by the pipeline's first batch
            return ScoreResult.failed("bad_response", f"tokenising failed: {type(e).__name__}")
        scored = self._scored(len(ids))
        if scored < self.min_tokens:
            return ScoreResult.failed(
                "too_short", f"{scored} tokens scored; the z-test needs at least {self.min_tokens} "
                f"(T gamma >= {MIN_EXPECTED} and T (1 - gamma) >= {MIN_EXPECTED} at gamma {self.gamma:g})",
                tokens=len(ids), tokens_scored=scored)
        if self.scheme == "unigram":
            green = int(self._green[ids].sum())
            z = z_score(green, scored, self.gamma)
            p = p_value(z)
        else:
            import torch

            out = self._det(torch.tensor([ids], dtype=torch.long), z_threshold=Z_THRESHOLD, return_dict=True)
            scored, green = int(out.num_tokens_scored[0]), int(out.num_green_tokens[0])
            z, p = float(out.z_score[0]), float(out.p_value[0])
        return ScoreResult(status="ok", raw=z, scale="watermark_z", direction="higher_ai", ai_probability=None,
                           verdict="AI" if z > Z_THRESHOLD else "Human", vendor_version=self.spec.version,
                           detail={"z": z, "p_value": p, "tokens_scored": scored, "green_tokens": green,
                                   "green_fraction": green / scored, "gamma": self.gamma, "scheme": self.scheme,
                                   "z_threshold": Z_THRESHOLD})

    def score_batch(self, texts: Sequence[str]) -> list[ScoreResult]:
        """One result per text, in order. Raises ``ModelLoadError`` when the model cannot load."""
        self._load()
        return [self.score_text(t) for t in texts]
