"""ZipPy: compression-based AI-text detection (package ``thinkst-zippy``, MIT, Thinkst).

Upstream: https://github.com/thinkst/zippy, file ``zippy/zippy.py``. For each chunk of
the cleaned text ZipPy computes ``delta = ratio(prelude) - ratio(prelude + chunk)``, where
``ratio`` is compressed size over original size and the prelude is the package's own
~80 KB of ChatGPT text; it returns ``(verdict, abs(delta) * 100)`` and combines chunks by
a length-weighted sum (``Zippy.run_on_text_chunked``).

What veribench stores (one :class:`ScoreResult` per text):

- ``raw``: the *signed* combined delta, in points of compression ratio: ``+confidence``
  when ZipPy's verdict is AI, ``-confidence`` when it is Human (higher = more AI-like).
  The unsigned confidence alone cannot rank texts (case c09);
- ``scale`` ``zippy_signed_delta``, ``direction`` ``higher_ai``;
- ``ai_probability``: ``None``. ZipPy has no calibrated mapping to a probability, so
  none is invented; metrics rank ``raw`` and the decision rule is ZipPy's own verdict
  (``raw > 0``) or a threshold fitted on the calibration split;
- ``verdict``: ``"AI"`` or ``"Human"`` exactly as ZipPy's combination rule gives it.

Texts ZipPy cannot judge get no label:

- ``unscorable`` ("nothing left after the detector's normalisation") when ZipPy's
  ``clean_text`` (which keeps only ``[0-9A-Za-z,.() \\n]``) leaves nothing but whitespace:
  empty, whitespace-only and CJK-only texts;
- ``unsupported`` when something is left but ``clean_text`` deleted more than
  :data:`MAX_DELETED_LETTER_FRACTION` of the text's letters (Unicode category L*): a
  Russian text keeps its spaces and full stops and loses every Cyrillic letter.

ZipPy scores texts longer than two chunks in a ``multiprocessing.Pool(cpu_count())``.
This detector never does: it runs ZipPy's own chunking and combination in-process,
calling the package's per-chunk scorer, so it is safe in servers, threads and tests.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from veribench.records import ScoreResult
from veribench.spec import Spec

#: Above this fraction of letters deleted by clean_text, a text is "unsupported".
MAX_DELETED_LETTER_FRACTION = 0.5
ENGINES = ("lzma", "zlib", "brotli")
UNSCORABLE_REASON = "nothing left after the detector's normalisation"
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_ASCII_LETTER = re.compile(r"[A-Za-z]")
_CONTENT = re.compile(r"[0-9A-Za-z,.()]")


def _zippy_version() -> str:
    try:
        from importlib.metadata import version

        return version("thinkst-zippy")
    except Exception:  # pragma: no cover - metadata missing
        import zippy

        return str(getattr(zippy, "__version__", "unknown"))


class ZippyDetector:
    """ZipPy as a veribench detector.

    Args:
        engine: ``"lzma"`` (default, ZipPy's default), ``"zlib"`` or ``"brotli"``.
        chunk_size: characters per chunk of the cleaned text (ZipPy's default 1500).

    Spec: ``detector/zippy``, version = the installed ``thinkst-zippy`` version,
    settings ``{engine, chunk_size}``. ``score_batch`` never raises for one text.
    """

    # Compression releases the GIL: the scoring path runs batches on threads, one per core.
    # Each batch is one workspace transaction (~20 ms of CPU: the scores, their links and
    # the scan event); 128 texts (~0.4 s of compression at ~3 ms a text) keep that under
    # 5%, where batches of 16 spent ~40% of ZipPy's time committing (benchmarks/README.md).
    batch_size = 128
    max_concurrency = max(1, min(4, os.cpu_count() or 1))

    def __init__(self, engine: str = "lzma", chunk_size: int = 1500):
        engine = str(engine).lower()
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
        chunk_size = int(chunk_size)
        if chunk_size < 1:
            raise ValueError("chunk_size must be a positive number of characters")
        self.engine, self.chunk_size = engine, chunk_size
        self.version = _zippy_version()
        self.spec = Spec(kind="detector", name="zippy", version=self.version,
                         settings={"engine": engine, "chunk_size": chunk_size})
        self._zippy: Any = None

    # -- upstream objects (built once; the LZMA prelude ratio costs ~0.1 s) --------------
    def _model(self) -> Any:
        if self._zippy is None:
            from zippy.zippy import CompressionEngine, Zippy

            self._zippy = Zippy(engine=getattr(CompressionEngine, self.engine.upper()))
        return self._zippy

    def preflight(self, text: str) -> ScoreResult | None:
        """``unscorable``/``unsupported`` results known before any compression."""
        from zippy.zippy import clean_text

        cleaned = clean_text(text)
        letters = len(_LETTER.findall(text))
        kept = len(_ASCII_LETTER.findall(cleaned))
        deleted = (letters - kept) / letters if letters else 0.0
        detail = {"chars": len(text), "cleaned_chars": len(cleaned), "letters": letters,
                  "deleted_letter_fraction": round(deleted, 6)}
        if not cleaned.strip():
            return ScoreResult.failed("unscorable", UNSCORABLE_REASON, **detail)
        if deleted > MAX_DELETED_LETTER_FRACTION:
            return ScoreResult.failed(
                "unsupported",
                f"ZipPy's normalisation (clean_text keeps only [0-9A-Za-z,.() \\n]) deleted "
                f"{deleted:.0%} of the text's letters", **detail)
        if not _CONTENT.search(cleaned):
            return ScoreResult.failed("unscorable", UNSCORABLE_REASON, **detail)
        return None

    def chunks(self, cleaned: str) -> list[str]:
        """ZipPy's chunking of a cleaned text (``Zippy.run_on_text_chunked``, verbatim rule)."""
        chunk_size = self.chunk_size
        start, end, out = 0, 0, []
        while start + chunk_size < len(cleaned) and end != -1:
            end = cleaned.rfind(" ", start, start + chunk_size + 1)
            out.append(cleaned[start:end])
            start = end + 1
        out.append(cleaned[start:])
        return out

    def score_text(self, text: str) -> ScoreResult:
        """Score one text; failures come back as results, never as exceptions."""
        pre = self.preflight(text)
        if pre is not None:
            return pre
        try:
            from zippy.zippy import clean_text

            z = self._model()
            cleaned = clean_text(text)
            parts = self.chunks(cleaned)
            ssum = 0.0
            for c in parts:  # ZipPy's combination: AI chunks subtract, Human chunks add
                verdict, conf = z.detector.score_text(c)
                w = conf * (len(c) / len(cleaned))
                ssum += -w if verdict == "AI" else w
            verdict = "AI" if ssum < 0 else "Human"
            conf = abs(ssum)
            raw = conf if verdict == "AI" else -conf
            return ScoreResult(status="ok", raw=raw, scale="zippy_signed_delta", direction="higher_ai",
                               ai_probability=None, verdict=verdict, vendor_version=self.version,
                               detail={"confidence": conf, "chunks": len(parts), "cleaned_chars": len(cleaned)})
        except Exception as e:  # one bad text never breaks a batch
            return ScoreResult.failed("bad_response", f"ZipPy failed: {type(e).__name__}: {e}")

    def score_batch(self, texts: Sequence[str]) -> list[ScoreResult]:
        return [self.score_text(t) for t in texts]
