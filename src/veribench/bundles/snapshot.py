"""Re-deriving a run from rows: the same loading code and ``compute_results`` as ``evaluate``.

Publishing and verifying both build a small in-memory DuckDB holding exactly the rows
a run rests on (``documents``, ``submissions``, ``scores``), then call the evaluation's
own :func:`veribench.evaluate.run.load_documents` / :func:`load_detector` and
:func:`veribench.evaluate.core.compute_results` on it. There is one way numbers are
derived; a bundle is checked by deriving them again from its published rows.
"""

from __future__ import annotations

import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..store.workspace import DuckSqlAccess, insert_arrow

#: No keys or indexes: the rows come de-duplicated, and an index would only cost time.
SNAPSHOT_SCHEMA = """
CREATE TABLE documents (doc_id VARCHAR, corpus VARCHAR, text VARCHAR, text_sha256 VARCHAR, label VARCHAR,
    arm VARCHAR, kind VARCHAR, subgroup VARCHAR, tags JSON, group_key VARCHAR, provenance JSON);
CREATE TABLE submissions (doc_id VARCHAR, spec_hash VARCHAR, submitted_sha256 VARCHAR);
CREATE TABLE scores (spec_hash VARCHAR, text_sha256 VARCHAR, status VARCHAR, raw DOUBLE, scale VARCHAR,
    direction VARCHAR, ai_probability DOUBLE, verdict VARCHAR, vendor_version VARCHAR, detail JSON,
    scanned_at TIMESTAMPTZ);
"""


class Snapshot(DuckSqlAccess):
    """An in-memory workspace stand-in (``con``, ``lock``, ``query``, ``arrow``) holding only
    a run's rows."""

    def __init__(self) -> None:
        import duckdb

        self.con = duckdb.connect(":memory:")
        self.con.execute("SET TimeZone = 'UTC'")
        self.con.execute("SET enable_progress_bar = false")
        self.con.execute(SNAPSHOT_SCHEMA)
        self.lock = threading.RLock()
        self.path = Path("<snapshot>")

    def load(self, table: str, arrow_table: Any) -> None:
        """Insert an Arrow table's columns (by name) into ``table``."""
        insert_arrow(self.con, table, arrow_table)




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
    from ..errors import ProtocolError
    from ..protocol.model import load_protocol

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
    from ..evaluate.core import compute_results
    from ..evaluate.run import load_detector, load_documents

    docs = load_documents(snap, proto)
    arrays = [load_detector(snap, d.spec, d.label, d.rule, len(docs), d.corpora) for d in dets]
    return compute_results(docs, arrays, proto, run_meta=run_meta), docs, arrays


def split_sides(docs: Any, proto: Any) -> np.ndarray:
    """``calibration`` / ``test`` per document under the protocol's split rule, or ``all``
    when it declares none: the evaluation's own split (``evaluate.core.split_documents``
    where it exists, else :func:`veribench.protocol.split.calibration_mask` as
    ``compute_results`` applies it)."""
    n = len(docs)
    if proto.split_rule != "hash":
        return np.full(n, "all", dtype=object)
    try:
        from ..evaluate.core import split_documents  # type: ignore[attr-defined]
    except ImportError:
        split_documents = None
    if split_documents is not None:
        _, calib, _ = split_documents(docs, proto)
    else:
        from ..protocol.split import calibration_mask

        is_human = np.array([x == "human" for x in docs.label], dtype=bool)
        elig = np.isin(docs.corpus, list(proto.split_corpora)) if proto.split_corpora else None
        calib = calibration_mask(list(docs.doc_id), is_human, list(docs.group_key), every=proto.split_every,
                                 salt=proto.split_salt, eligible=elig)
    return np.where(calib, "calibration", "test").astype(object)


def decisions(docs: Any, arrays: Sequence[Any], proto: Any, results: dict[str, Any]) -> dict[str, np.ndarray]:
    """Per detector label, per document: True (flagged), False (passed) or None (not decided)
    under the run's rule - the evaluation's own per-document decisions
    (``evaluate.core.document_rows`` where it exists, else ``flags_for`` with the run's
    fitted thresholds)."""
    n = len(docs)
    out = {a.label: np.full(n, None, dtype=object) for a in arrays}
    try:
        from ..evaluate.core import document_rows  # type: ignore[attr-defined]
    except ImportError:
        document_rows = None
    if document_rows is not None:
        rows = document_rows(docs, list(arrays), proto)
        if rows:
            pos = {d: i for i, d in enumerate(docs.doc_id.tolist())}
            for lab, did, f in zip(rows["detector"].tolist(), rows["doc_id"].tolist(), rows["flagged"].tolist()):
                out[lab][pos[did]] = None if f is None else bool(f)
        return out
    from ..evaluate.core import flags_for  # type: ignore[attr-defined]

    det_rows = {d["detector"]: d for d in results["detectors"]}
    for a in arrays:
        thr = det_rows[a.label]["rule"].get("threshold") if a.rule is not None and a.rule.fit else None
        valid, flagged = flags_for(a, thr)
        o = out[a.label]
        o[valid] = [bool(x) for x in flagged[valid]]
    return out


def hazards_text(detail: Any) -> str | None:
    """The canonical JSON of a score's ``detail["hazards"]`` (None when it records none)."""
    import json

    from ..store.events import CANONICAL

    d = json.loads(detail) if isinstance(detail, str) else (detail or {})
    hz = d.get("hazards") if isinstance(d, dict) else None
    return None if hz is None else json.dumps(hz, **CANONICAL)


def needs_texts(specs: Sequence[Any]) -> bool:
    """Whether a detector canonicalises its input (its hazards then come from each document's text)."""
    from .layout import CANONICALIZE_SETTING

    return any(str(s.settings.get(CANONICALIZE_SETTING) or "none").lower() not in ("none", "false")
               for s in specs)


def run_meta_from(results: dict[str, Any]) -> dict[str, Any]:
    """The ``run`` block to hand to ``compute_results`` again (it recomputes its own keys)."""
    return dict(results.get("run") or {})
