"""Re-deriving a run from rows: the same loading code and ``compute_results`` as ``evaluate``.

Publishing and verifying both build a small in-memory DuckDB holding exactly the rows
a run rests on (:class:`veribench.store.snapshot.Snapshot`), then call the evaluation's
own :func:`veribench.evaluate.run.load_documents` / :func:`load_detector` and
:func:`veribench.evaluate.results.compute_results` on it. There is one way numbers are
derived; a bundle is checked by deriving them again from its published rows.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from veribench import registry
from veribench.bundles.layout import CANONICALIZE_SETTING
from veribench.errors import ProtocolError
from veribench.evaluate.results import compute_results
from veribench.evaluate.rows import document_rows
from veribench.evaluate.run import load_detector, load_documents
from veribench.evaluate.slices import reads_lengths
from veribench.evaluate.split import split_documents
from veribench.protocol.model import load_protocol
from veribench.store.events import CANONICAL
from veribench.store.snapshot import Snapshot


@dataclass
class DetectorPlan:
    """One detector of a run: its spec, label, decision rule and corpus restriction."""

    spec: Any
    label: str
    rule: Any
    corpora: tuple[str, ...] = ()


def protocol_from_bytes(raw: bytes, file_name: str):
    """Parse committed protocol bytes with the one protocol loader (through a private temp file).

    Raises:
        ProtocolError: invalid protocol.
    """

    if Path(file_name).suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:  # events only: an alias is seen before anything is expanded ("billion laughs")
            if any(isinstance(e, yaml.AliasEvent) for e in yaml.parse(raw.decode("utf-8", "replace"))):
                raise ProtocolError(f"protocol {file_name}: YAML aliases are not accepted in a bundle")
        except yaml.YAMLError as e:
            raise ProtocolError(f"protocol {file_name}: syntax error: {e}") from None
    with tempfile.TemporaryDirectory(prefix="veribench-protocol-") as d:
        p = Path(d) / Path(file_name).name
        p.write_bytes(raw)
        proto = load_protocol(p)
    try:
        proto.path = file_name  # no temporary path in anything derived from it
    except (AttributeError, TypeError, ValueError):  # an immutable model keeps its own
        pass
    return proto


def plans(proto: Any, specs_by_label: dict[str, Any]) -> list[DetectorPlan]:
    """The run's detectors in protocol order (``specs_by_label``: label -> Spec)."""
    return [DetectorPlan(specs_by_label[e.display], e.display, e.rule, tuple(e.corpora)) for e in proto.detectors]


def derive(snap: Snapshot, proto: Any, dets: Sequence[DetectorPlan], run_meta: dict[str, Any]):
    """(results, DocArrays, [DetArrays]) re-derived from the snapshot's rows."""

    docs = load_documents(snap, proto)
    arrays = [load_detector(snap, d.spec, d.label, d.rule, len(docs), d.corpora, docs.language) for d in dets]
    return compute_results(docs, arrays, proto, run_meta=run_meta), docs, arrays


def split_sides(docs: Any, proto: Any) -> np.ndarray:
    """``calibration`` / ``test`` per document under the protocol's split rule, or ``all``
    when it declares none: the evaluation's own split (:func:`veribench.evaluate.split.split_documents`)."""
    n = len(docs)
    if proto.split_rule != "hash":
        return np.full(n, "all", dtype=object)
    _, calib, _ = split_documents(docs, proto)
    return np.where(calib, "calibration", "test").astype(object)


def decisions(docs: Any, arrays: Sequence[Any], proto: Any, results: dict[str, Any]) -> dict[str, np.ndarray]:
    """Per detector label, per document: True (flagged), False (passed) or None (not decided)
    under the run's rule - the evaluation's own per-document decisions
    (:func:`veribench.evaluate.rows.document_rows`). ``results`` is accepted for the callers'
    symmetry and not read."""
    n = len(docs)
    out = {a.label: np.full(n, None, dtype=object) for a in arrays}
    rows = document_rows(docs, list(arrays), proto)
    if rows:
        pos = {d: i for i, d in enumerate(docs.doc_id.tolist())}
        for lab, did, f in zip(rows["detector"].tolist(), rows["doc_id"].tolist(), rows["flagged"].tolist()):
            out[lab][pos[did]] = None if f is None else bool(f)
    return out


def hazards_text(detail: Any) -> str | None:
    """The canonical JSON of a score's ``detail["hazards"]`` (None when it records none)."""
    import json


    d = json.loads(detail) if isinstance(detail, str) else (detail or {})
    hz = d.get("hazards") if isinstance(d, dict) else None
    return None if hz is None else json.dumps(hz, **CANONICAL)


def needs_texts(specs: Sequence[Any], proto: Any = None) -> bool:
    """Whether the re-derivation reads the documents' texts: a detector canonicalises its input
    (its hazards then come from each document's text), or declares languages
    (:func:`veribench.registry.declared_languages`: each text's language is identified again,
    :func:`veribench.evaluate.run.load_documents`), or the protocol ``proto`` reads each
    text's length (:func:`veribench.evaluate.slices.reads_lengths`: the ``length`` slice,
    per-length thresholds)."""

    if proto is not None and reads_lengths(proto):
        return True
    return any(str(s.settings.get(CANONICALIZE_SETTING) or "none").lower() not in ("none", "false")
               or registry.declared_languages(s.name, dict(s.settings)) is not None for s in specs)


def run_meta_from(results: dict[str, Any]) -> dict[str, Any]:
    """The ``run`` block to hand to ``compute_results`` again (it recomputes its own keys)."""
    return dict(results.get("run") or {})
