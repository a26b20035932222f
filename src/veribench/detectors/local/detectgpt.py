"""DetectGPT (Mitchell et al. 2023, ICML, arXiv:2301.11305): the perturbation discrepancy.

A text x is perturbed ``n_perturbations`` times by masking word spans and refilling them
with a mask-filling seq2seq model (T5 in the paper: ``<extra_id_N>`` sentinels); each
text is scored by the mean token log-likelihood ll(·) of a causal scoring model (the
quantity ``loglik`` computes, read from the engine's memo, so the base ll of x is never
computed twice). With ll̃_1..ll̃_k the perturbed log-likelihoods (nats per token):

- ``d`` (unnormalised) = ll(x) − mean_i ll̃_i                     (paper eq. 1, §4)
- ``z`` (normalised)   = (ll(x) − mean_i ll̃_i) / std_i ll̃_i        (paper §5, "normalized")

with ``std`` the population standard deviation (ddof = 0, numpy's default, as upstream
``np.std``). Both point the same way: higher means machine-generated (paper §4: model
text sits near a local maximum of the model's log probability, so perturbations lower
it). Each result carries both in ``detail``; ``raw`` is the one the ``variant`` names.

Source of every step: ``eric-mitchell/detect-gpt`` run.py (commit 170a4dc):
``tokenize_and_mask`` (:func:`tokenize_and_mask`), ``replace_masks`` (:func:`replace_masks`),
``extract_fills`` (:func:`extract_fills`), ``apply_extracted_fills``
(:func:`apply_extracted_fills`), ``perturb_texts_`` (retries of texts that got too few
fills), ``get_ll`` (= ``loglik``) and ``run_perturbation_experiment`` (d and z).
Defaults are upstream's argparse defaults (:data:`DEFAULTS`): ``span_length`` 2,
``pct_words_masked`` 0.3 with ``buffer_size`` 1, so the share of words masked is
0.3 · 2 / (2 + 2·1) = 15% (upstream's comment on ``--pct_words_masked``; the paper's
"15%"), ``mask_top_p`` 1.0, fills generated with at most 150 tokens; the paper's
headline runs use 100 perturbations (§5.1), upstream's ``n_perturbation_list`` "1,10".

Deviations from upstream, each because a number must not be invented:
- upstream replaces a zero std (and the std of a single perturbation) by 1; here ``z`` is
  undefined then (``unscorable`` with the reason when ``variant = "z"``; ``detail.z`` is
  null with ``detail.z_reason``), and ``variant = "z"`` needs ``n_perturbations >= 2``;
- a text with too few words for one span (``int(pct · words / (span + 2·buffer)) = 0``,
  under 14 words at the defaults) would be "perturbed" into itself, d = 0 for any text:
  it is ``too_short`` with that reason;
- upstream retries a text whose fills came back short without a bound; here at most
  :data:`MAX_ATTEMPTS` rounds, then the text is ``unscorable`` with the reason.

Randomness: upstream seeds numpy and torch once per run (``np.random.seed(0)``,
``torch.manual_seed(0)``), so a text's perturbations depend on the texts before it. Here
each text gets its own seed, :func:`text_seed` (``seed`` and the text's sha256), which
seeds a ``numpy.random.RandomState`` (the same generator and ``randint`` stream as
upstream's ``np.random``) for the masks and ``torch.manual_seed`` (in a forked RNG state,
nothing global moves) for the mask model's sampling: a text's perturbations are the
same in any batch, any order, any run with the same seed and models (and device: GPU
sampling may differ from CPU).

Cost per text: 1 + ``n_perturbations`` scoring-model passes (the base pass shared with
``loglik``), plus one mask-model ``generate`` of ``n_perturbations`` sequences (more on a
retry); see benchmarks/README.md.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from veribench.detectors.local.engine.passes import single_passes
from veribench.detectors.local.engine.records import SinglePass
from veribench.detectors.local.engine.tokens import model_cap
from veribench.detectors.local.models import load_seq2seq_lm
from veribench.detectors.local.zeroshot import DEFAULT_MODEL, STATISTICS, VERSION, _detail, _LocalLM, _not_ok
from veribench.hashing import text_sha256
from veribench.records import ScoreResult
from veribench.spec import Spec

#: Upstream defaults (eric-mitchell/detect-gpt run.py argparse; the paper §5.1 for 100
#: perturbations and T5-large), and veribench's seed 0 (upstream seeds 0 as well).
DEFAULTS: dict[str, Any] = {
    "mask_model": "t5-large",
    "n_perturbations": 100,
    "span_length": 2,
    "pct_words_masked": 0.3,
    "buffer_size": 1,
    "mask_top_p": 1.0,
    "mask_max_length": 150,
    "seed": 0,
    "variant": "z",
}

#: The two variants: scale name of ``raw`` per variant.
VARIANTS: dict[str, str] = {"z": "detectgpt_z", "d": "detectgpt_d"}

#: Rounds of masking and filling per text before giving up (upstream: unbounded).
MAX_ATTEMPTS = 20

#: Languages DetectGPT is declared for: the paper evaluates English only (§5: XSum,
#: SQuAD, WritingPrompts; §5.2 a German WMT16 check with mT5 is its only other language),
#: and T5 is trained on English C4. A different mask model may declare more.
LANGUAGES: tuple[str, ...] = ("en",)

#: Upstream's regex of T5's sentinels (run.py ``pattern``).
SENTINEL = re.compile(r"<extra_id_\d+>")
MASK = "<<<mask>>>"

DIRECTION = ("higher_ai", "Mitchell et al. 2023 (DetectGPT, arXiv:2301.11305) §4: machine text lies near a local "
                          "maximum of the model's log probability, so the discrepancy is larger for it")


def text_seed(seed: int, text: str) -> int:
    """The per-text seed in [0, 2**32): the first 4 bytes (big-endian) of
    sha256(f"{seed}:{sha256(text)}"). Same text and seed, same perturbations."""
    h = hashlib.sha256(f"{int(seed)}:{text_sha256(text)}".encode()).digest()
    return int.from_bytes(h[:4], "big")


def n_spans(n_words: int, span_length: int, pct: float, buffer_size: int) -> int:
    """Spans to mask in a text of ``n_words`` space-separated words:
    ``int(pct * n_words / (span_length + 2 * buffer_size))`` (run.py tokenize_and_mask,
    ``ceil_pct=False``)."""
    return int(pct * n_words / (span_length + buffer_size * 2))


def tokenize_and_mask(text: str, span_length: int, pct: float, buffer_size: int,
                      rng: np.random.RandomState, max_draws: int = 100_000) -> str:
    """Mask :func:`n_spans` spans of ``span_length`` words, each at least ``buffer_size``
    words from another, and number them ``<extra_id_0>``, ``<extra_id_1>``... left to right
    (run.py tokenize_and_mask; words are split on single spaces, as upstream).

    Raises:
        ValueError: the text has no more words than one span, or the spans could not be
            placed in ``max_draws`` draws (upstream loops for ever).
    """
    tokens = text.split(" ")
    n = n_spans(len(tokens), span_length, pct, buffer_size)
    if n and len(tokens) <= span_length:
        raise ValueError(f"{len(tokens)} words: no room for a span of {span_length}")
    n_masks = draws = 0
    while n_masks < n:
        draws += 1
        if draws > max_draws:
            raise ValueError(f"could not place {n} spans of {span_length} words in {len(tokens)} words")
        start = int(rng.randint(0, len(tokens) - span_length))
        end = start + span_length
        lo, hi = max(0, start - buffer_size), min(len(tokens), end + buffer_size)
        if MASK not in tokens[lo:hi]:
            tokens[start:end] = [MASK]
            n_masks += 1
    k = 0
    for i, t in enumerate(tokens):
        if t == MASK:
            tokens[i] = f"<extra_id_{k}>"
            k += 1
    return " ".join(tokens)


def count_masks(texts: Sequence[str]) -> list[int]:
    """Sentinels per masked text (run.py count_masks: words starting with ``<extra_id_``)."""
    return [len([x for x in t.split() if x.startswith("<extra_id_")]) for t in texts]


def replace_masks(mask_lm: Any, masked: Sequence[str], top_p: float, max_length: int) -> list[str]:
    """The mask model's raw outputs, sampled (run.py replace_masks: ``do_sample``,
    ``top_p``, ``max_length``, stopping at the sentinel after the last mask).
    Decoded with special tokens kept. The caller owns the RNG state."""
    import torch

    tok = mask_lm.tokenizer
    stop_id = tok.encode(f"<extra_id_{max(count_masks(masked))}>")[0]
    enc = tok(list(masked), return_tensors="pt", padding=True).to(mask_lm.device)
    with torch.inference_mode():
        out = mask_lm.model.generate(**enc, max_length=max_length, do_sample=True, top_p=top_p,
                                     num_return_sequences=1, eos_token_id=stop_id)
    return list(tok.batch_decode(out, skip_special_tokens=False))


def extract_fills(raw: Sequence[str]) -> list[list[str]]:
    """The text between consecutive sentinels of each output, stripped (run.py extract_fills)."""
    texts = [x.replace("<pad>", "").replace("</s>", "").strip() for x in raw]
    return [[y.strip() for y in SENTINEL.split(x)[1:-1]] for x in texts]


def apply_extracted_fills(masked: Sequence[str], fills: Sequence[Sequence[str]]) -> list[str]:
    """Each ``<extra_id_i>`` replaced by fill i; ``""`` for a text with fewer fills than
    masks (run.py apply_extracted_fills)."""
    out = []
    for text, f, n in zip(masked, fills, count_masks(masked)):
        words = text.split(" ")
        if len(f) < n:
            out.append("")
            continue
        for i in range(n):
            words[words.index(f"<extra_id_{i}>")] = f[i]
        out.append(" ".join(words))
    return out


def discrepancy(ll_x: float, ll_perturbed: Sequence[float]) -> tuple[float, float, float, float | None]:
    """(d, mean, std, z) of a base log-likelihood and its perturbations (nats per token).

    d = ll_x − mean(ll̃), std = population std (ddof 0), z = d / std, or None when the
    std is 0 or there is one perturbation (run.py run_perturbation_experiment; upstream
    substitutes 1 there, which invents a number).
    """
    a = np.asarray(ll_perturbed, dtype=np.float64)
    mean = float(np.mean(a))
    std = float(np.std(a)) if a.size > 1 else 0.0
    d = float(ll_x) - mean
    return d, mean, std, (d / std if std > 0 else None)


class DetectGPT(_LocalLM):
    """DetectGPT's perturbation discrepancy (module docstring for every formula and source).

    Settings (spec): ``model`` (scoring causal LM; default ``smollm2``), ``mask_model``
    (seq2seq with T5 sentinels; default ``t5-large``), ``n_perturbations`` (>= 1; 100),
    ``span_length`` (words, >= 1; 2), ``pct_words_masked`` (0 < p <= 1; 0.3, i.e. 15% of
    words with span 2 and buffer 1), ``buffer_size`` (words, >= 0; 1), ``mask_top_p``
    (0 < p <= 1; 1.0), ``mask_max_length`` (tokens the mask model may generate per
    masked text, >= 2; upstream's fixed 150), ``seed`` (int; 0), ``variant`` (``z`` or ``d``), ``max_tokens``
    (scoring cap; 1024 as ``loglik``, so the base pass is loglik's), ``dtype``; the
    execution settings of the other zero-shot detectors.

    Raises:
        ValueError: a setting out of range, or ``variant = "z"`` with one perturbation.
    """

    default_rule = {
        "rule": "none: no published threshold for the perturbation discrepancy; declare one in a protocol "
                "(rule = {field = \"raw\", op = \">\", threshold = ...}) or fit it on the calibration split "
                "(rule = {fit = \"best_balanced_accuracy\"})",
        "source": "Mitchell et al. 2023 report AUROC only (§5); metrics rank the raw discrepancy (higher_ai)",
    }
    languages = LANGUAGES

    def __init__(self, model: str = DEFAULT_MODEL, mask_model: str = DEFAULTS["mask_model"],
                 n_perturbations: int = DEFAULTS["n_perturbations"], span_length: int = DEFAULTS["span_length"],
                 pct_words_masked: float = DEFAULTS["pct_words_masked"], buffer_size: int = DEFAULTS["buffer_size"],
                 mask_top_p: float = DEFAULTS["mask_top_p"], mask_max_length: int = DEFAULTS["mask_max_length"],
                 seed: int = DEFAULTS["seed"],
                 variant: str = DEFAULTS["variant"], max_tokens: int | None = None, **kw: Any):
        super().__init__(max_tokens=max_tokens or STATISTICS["loglik"].max_tokens, **kw)
        checks = [
            (variant in VARIANTS, f"variant must be one of {sorted(VARIANTS)}, got {variant!r}"),
            (int(n_perturbations) >= 1, f"n_perturbations must be >= 1, got {n_perturbations}"),
            (int(span_length) >= 1, f"span_length must be >= 1, got {span_length}"),
            (0 < float(pct_words_masked) <= 1, f"pct_words_masked must be in (0, 1], got {pct_words_masked}"),
            (int(buffer_size) >= 0, f"buffer_size must be >= 0, got {buffer_size}"),
            (0 < float(mask_top_p) <= 1, f"mask_top_p must be in (0, 1], got {mask_top_p}"),
            (int(mask_max_length) >= 2, f"mask_max_length must be >= 2, got {mask_max_length}"),
            (not (variant == "z" and int(n_perturbations) < 2),
             "variant z needs n_perturbations >= 2 (the std of one perturbation is undefined)"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ValueError(f"detectgpt: {msg}")
        self.model, self.mask_model = str(model), str(mask_model)
        self.n_perturbations, self.span_length = int(n_perturbations), int(span_length)
        self.pct_words_masked, self.buffer_size = float(pct_words_masked), int(buffer_size)
        self.mask_top_p, self.seed, self.variant = float(mask_top_p), int(seed), variant
        self.mask_max_length = int(mask_max_length)
        self.spec = Spec("detector", "detectgpt", VERSION, {
            "model": self.model, "mask_model": self.mask_model, "n_perturbations": self.n_perturbations,
            "span_length": self.span_length, "pct_words_masked": self.pct_words_masked,
            "buffer_size": self.buffer_size, "mask_top_p": self.mask_top_p, "mask_max_length": self.mask_max_length,
            "seed": self.seed,
            "variant": self.variant, "max_tokens": self.max_tokens, "dtype": self.dtype})

    # ------------------------------------------------------------------ perturbations
    def perturb(self, text: str) -> tuple[list[str], int]:
        """(perturbed texts, rounds used) for one text: ``n_perturbations`` masked copies,
        filled by the mask model, the short ones re-masked and refilled (run.py
        perturb_texts_), from :func:`text_seed`.

        Raises:
            ValueError: spans cannot be placed, or fills still short after :data:`MAX_ATTEMPTS`.
        """
        import torch

        mlm = load_seq2seq_lm(self.mask_model, device=self.device, dtype=self.dtype)
        s = text_seed(self.seed, text)
        rng = np.random.RandomState(s)
        devices = [torch.device(mlm.device).index or 0] if str(mlm.device).startswith("cuda") else []

        def mask(k: int) -> list[str]:
            return [tokenize_and_mask(text, self.span_length, self.pct_words_masked, self.buffer_size, rng)
                    for _ in range(k)]

        def fill(masked: list[str]) -> list[str]:
            raw = replace_masks(mlm, masked, self.mask_top_p, self.mask_max_length)
            return apply_extracted_fills(masked, extract_fills(raw))

        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(s)
            out = fill(mask(self.n_perturbations))
            attempts = 1
            while "" in out:
                if attempts >= MAX_ATTEMPTS:
                    raise ValueError(f"the mask model returned too few fills in {MAX_ATTEMPTS} rounds")
                idx = [i for i, x in enumerate(out) if x == ""]
                for i, x in zip(idx, fill(mask(len(idx)))):
                    out[i] = x
                attempts += 1
        return out, attempts

    # ------------------------------------------------------------------ scoring
    def score_batch(self, texts: Sequence[str]) -> list[ScoreResult]:
        out: list[ScoreResult | None] = [None] * len(texts)
        idx = []
        for i, t in enumerate(texts):
            if not (isinstance(t, str) and t.strip()):
                out[i] = ScoreResult.failed("unscorable", "empty or whitespace-only text")
            elif n_spans(len(t.split(" ")), self.span_length, self.pct_words_masked, self.buffer_size) < 1:
                out[i] = ScoreResult.failed(
                    "too_short", f"{len(t.split(' '))} words: no span to mask at span_length {self.span_length}, "
                    f"pct_words_masked {self.pct_words_masked}, buffer_size {self.buffer_size} (the perturbation "
                    "would be the text itself)", n_words=len(t.split(" ")))
            else:
                idx.append(i)
        perturbed: dict[int, tuple[list[str], int]] = {}
        for i in idx:
            try:
                perturbed[i] = self.perturb(texts[i])
            except ValueError as e:
                out[i] = ScoreResult.failed("unscorable", f"detectgpt perturbation failed: {e}")
        if not perturbed:
            return out  # type: ignore[return-value]
        lm = self._lm(self.model)
        cap = model_cap(lm, self.max_tokens)
        order = list(perturbed)
        flat = [texts[i] for i in order] + [p for i in order for p in perturbed[i][0]]
        passes = single_passes(lm, flat, self.max_tokens, **self._kw(lm))
        rec = self.plan(lm).record()
        k = self.n_perturbations
        for j, i in enumerate(order):
            base = passes[j]
            pert = passes[len(order) + j * k: len(order) + (j + 1) * k]
            if not isinstance(base, SinglePass):
                out[i] = _not_ok(base, cap)
                continue
            if not all(isinstance(p, SinglePass) for p in pert):
                out[i] = ScoreResult.failed("unscorable", "a perturbed text has fewer than 2 tokens", **_detail(base, cap))
                continue
            out[i] = self._result(base, pert, perturbed[i][1], cap, rec)
        return out  # type: ignore[return-value]

    def _result(self, base: SinglePass, pert: Sequence[Any], attempts: int, cap: int, rec: Any) -> ScoreResult:
        ll_x = float(np.mean(base.ll))  # = loglik (run.py get_ll: −loss, the mean over scored tokens)
        lls = [float(np.mean(p.ll)) for p in pert]
        d, mean, std, z = discrepancy(ll_x, lls)
        det = _detail(base, cap)
        det.update(engine=rec, ll=ll_x, perturbed_ll_mean=mean, perturbed_ll_std=std, d=d, z=z,
                   n_perturbations=self.n_perturbations, mask_rounds=attempts, seed=self.seed,
                   mask_model=self.mask_model,
                   forward_passes=1 + self.n_perturbations)
        if z is None:
            det["z_reason"] = ("one perturbation: no std" if len(lls) < 2 else
                               "every perturbation has the same log-likelihood (std 0)")
        raw = d if self.variant == "d" else z
        if raw is None or not math.isfinite(raw):
            return ScoreResult.failed("unscorable", f"detectgpt z undefined: {det['z_reason']}", **det)
        return ScoreResult(status="ok", raw=float(raw), scale=VARIANTS[self.variant], direction=DIRECTION[0],
                           ai_probability=None, vendor_version=f"{self.mask_model}/{self.model}", detail=det)
