"""ImportReport: what an import found, kept and flagged. Nothing is dropped silently.

Every importer fills one :class:`ImportReport`. It is stored as JSON in the workspace's
``imports`` table (one row per import) and printed with rich after the import.

Counts follow the *source records*: a set of 91 records with two identical essays
reports 91 records, 91 documents and one duplicate group of 2 records; a detector
record whose submitted text differs from the corpus text is listed once per
(record, detector).

Flag kinds (keys of :meth:`ImportReport.issue_counts`):

==========================  ============================================================
duplicates                  records whose text repeats another record of the same set
                            (all kept as documents; each group lists its ids)
text_differs                detector records whose submitted text differs from the
                            corpus text (how: doubled, truncated, extended, whitespace,
                            substituted); the score is stored under the hash of the text
                            the detector saw, so it is flagged downstream too
nested_nonfinite            bare ``NaN``/``Infinity`` inside nested fields (kept out of
                            the stored detail; the record's own score is unaffected)
nonfinite_scores            records whose score itself is NaN or infinite: not imported,
                            never coerced to 0; ids named
missing_detector_files      expected detector files absent from a set
integer_scores              scores written as JSON integers (0 or 1); imported as floats
suspicious_text             texts holding control characters (C0/C1), U+FFFD or
                            mojibake sequences (UTF-8 read as cp1252/latin-1)
score_conflicts             the same detector gave different scores to the same text in
                            two records; the first is stored, both are named
document_conflicts          a re-imported document (same id and text) whose label, arm,
                            kind, subgroup, tags, group key, provenance or generation
                            differs from the stored one: one entry per field (doc_id,
                            field, old, new); the stored value is kept
document_updates            the same differences, applied because of ``--update``
unused_fields               columns of a score file that no rule reads (for example a
                            ground-truth ``label``): named, counted and never used by alias
==========================  ============================================================
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

#: Mojibake signatures: UTF-8 bytes of common punctuation/letters decoded as cp1252 or
#: latin-1 (e.g. "’" -> "â€™", "é" -> "Ã©"). Source: the byte patterns of UTF-8 lead
#: bytes 0xC2/0xC3/0xE2 shown in cp1252 (see ftfy's "badness" heuristics).
MOJIBAKE_PATTERNS = {
    "utf8_as_cp1252_punctuation": re.compile("â€[\u0080-\u00bf\u2018-\u203a\u0152-\u0178\u02c6\u02dc\u2122]"),
    "utf8_as_latin1_letter": re.compile("Ã[\u0080-\u00bf\u2018-\u203a\u0152-\u0178]"),
    "utf8_as_latin1_nbsp": re.compile("Â[\u00a0-\u00bf]"),
}
#: Unicode category Cc (C0 controls, DEL, C1 controls) except tab, LF and CR.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

#: How a submitted text can differ from the corpus text (checked in this order).
DIFFERENCE_KINDS = ("whitespace", "doubled", "extended", "truncated", "substituted")


def text_quirks(text: str) -> dict[str, Any]:
    """Suspicious characters in ``text``.

    Returns:
        ``{}`` when clean, else a dict with any of ``control`` (sorted list of
        ``"U+XXXX"`` code points of C0/C1 control characters other than tab, LF and CR),
        ``replacement_char`` (count of U+FFFD) and ``mojibake`` (names of the matched
        :data:`MOJIBAKE_PATTERNS`).
    """
    out: dict[str, Any] = {}
    ctrl = sorted({f"U+{ord(c):04X}" for c in _CONTROL.findall(text)})
    if ctrl:
        out["control"] = ctrl
    n = text.count("\ufffd")
    if n:
        out["replacement_char"] = n
    moj = [name for name, rx in MOJIBAKE_PATTERNS.items() if rx.search(text)]
    if moj:
        out["mojibake"] = moj
    return out


def classify_difference(corpus_text: str, submitted: str) -> str | None:
    """How ``submitted`` differs from ``corpus_text``; ``None`` when identical.

    One of :data:`DIFFERENCE_KINDS`: ``whitespace`` (same words, other spacing),
    ``doubled`` (the text twice), ``extended`` (the text followed by other text),
    ``truncated`` (a prefix of the text), ``substituted`` (anything else).
    """
    if corpus_text == submitted:
        return None
    if corpus_text.split() == submitted.split():
        return "whitespace"
    a, s = corpus_text.strip(), submitted.strip()
    if a and s.startswith(a) and s[len(a):].strip() == a:
        return "doubled"
    if a and s.startswith(a):
        return "extended"
    if s and a.startswith(s):
        return "truncated"
    if s and " ".join(a.split()).startswith(" ".join(s.split())):
        return "truncated"
    return "substituted"


@dataclass
class ImportReport:
    """What one import read, stored and flagged.

    Attributes:
        kind: importer name (``liang2023``, ``fastdetectgpt``, ``jsonl``, ``csv``,
            ``parquet``, ``scores``).
        source: the file or folder imported.
        corpus: corpus name given to the documents (``None`` for a scores import).
        import_id: id of the row in the ``imports`` table (set when stored).
        sets: per set (or file): ``{"records": n, "documents": n, "labels": {label: n},
            "scores": {detector: n}}``.
        documents: documents newly stored.
        already_present: documents already in the workspace with the same id and text (any
            other difference is a ``document_conflicts`` or ``document_updates`` entry).
        scores: detector label -> scores stored (``ok`` or failure rows).
        the flag lists: see the module docstring.
        process_evidence: per written text (arm B, ``veribench write import``): how it was
            written (revisions, span, writing time, large insertions with their sizes), so a
            reviewer can see which texts were typed and which arrived in large blocks.
            Recorded and shown, never a flag.
        notes: free-text notes (decisions the importer took).
    """

    kind: str
    source: str
    corpus: str | None = None
    import_id: str | None = None
    sets: dict[str, dict[str, Any]] = field(default_factory=dict)
    documents: int = 0
    already_present: int = 0
    scores: dict[str, int] = field(default_factory=dict)
    duplicates: list[dict[str, Any]] = field(default_factory=list)
    text_differs: list[dict[str, Any]] = field(default_factory=list)
    nested_nonfinite: list[dict[str, Any]] = field(default_factory=list)
    nonfinite_scores: list[dict[str, Any]] = field(default_factory=list)
    missing_detector_files: list[dict[str, Any]] = field(default_factory=list)
    integer_scores: list[dict[str, Any]] = field(default_factory=list)
    suspicious_text: list[dict[str, Any]] = field(default_factory=list)
    score_conflicts: list[dict[str, Any]] = field(default_factory=list)
    document_conflicts: list[dict[str, Any]] = field(default_factory=list)
    document_updates: list[dict[str, Any]] = field(default_factory=list)
    unused_fields: list[dict[str, Any]] = field(default_factory=list)
    process_evidence: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    FLAGS = ("duplicates", "text_differs", "nested_nonfinite", "nonfinite_scores", "missing_detector_files",
             "integer_scores", "suspicious_text", "score_conflicts", "document_conflicts", "document_updates",
             "unused_fields")

    # -- building --------------------------------------------------------------------
    def set_entry(self, name: str) -> dict[str, Any]:
        return self.sets.setdefault(name, {"records": 0, "documents": 0, "labels": {}, "scores": {}})

    def count_score(self, set_name: str | None, detector: str, n: int = 1) -> None:
        self.scores[detector] = self.scores.get(detector, 0) + n
        if set_name is not None:
            sc = self.set_entry(set_name)["scores"]
            sc[detector] = sc.get(detector, 0) + n

    # -- reading ---------------------------------------------------------------------
    def issue_counts(self) -> dict[str, int]:
        """Records involved per flag kind (duplicates: records in duplicate groups;
        integer_scores: records with an integer score)."""
        return {
            "duplicates": sum(len(g["doc_ids"]) for g in self.duplicates),
            "text_differs": len(self.text_differs),
            "nested_nonfinite": len(self.nested_nonfinite),
            "nonfinite_scores": len(self.nonfinite_scores),
            "missing_detector_files": len(self.missing_detector_files),
            "integer_scores": sum(int(x.get("count", 1)) for x in self.integer_scores),
            "suspicious_text": len(self.suspicious_text),
            "score_conflicts": len(self.score_conflicts),
            "document_conflicts": len(self.document_conflicts),
            "document_updates": len(self.document_updates),
            "unused_fields": len(self.unused_fields),
        }

    @property
    def records(self) -> int:
        return sum(int(s.get("records", 0)) for s in self.sets.values())

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["records"] = self.records
        d["issue_counts"] = self.issue_counts()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ImportReport:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in names})

    # -- printing --------------------------------------------------------------------
    def print(self, console: Any = None, *, max_rows: int = 8) -> None:
        """Print the report with rich: a per-set table, then each flag kind with examples."""
        from rich.console import Console
        from rich.table import Table

        con = console or Console()
        title = f"import {self.kind}: {self.source}"
        if self.corpus:
            title += f"  (corpus {self.corpus})"
        t = Table(title=title, show_lines=False)
        t.add_column("set")
        t.add_column("records", justify="right")
        t.add_column("documents", justify="right")
        t.add_column("labels")
        t.add_column("scores", justify="right")
        for name, s in self.sets.items():
            labels = ", ".join(f"{k} {v}" for k, v in sorted(s.get("labels", {}).items()))
            t.add_row(name, str(s.get("records", 0)), str(s.get("documents", 0)), labels,
                      str(sum(s.get("scores", {}).values())))
        con.print(t)
        con.print(f"documents stored: {self.documents}   already present: {self.already_present}   "
                  f"scores stored: {sum(self.scores.values())} ({len(self.scores)} detectors)")
        counts = self.issue_counts()
        for kind in self.FLAGS:
            items = getattr(self, kind)
            if not items:
                continue
            con.print(f"[yellow]{kind.replace('_', ' ')}[/yellow]: {counts[kind]}")
            if kind == "text_differs":
                by: dict[tuple[str, str], int] = {}
                for it in items:
                    k = (str(it.get("detector")), str(it.get("how")))
                    by[k] = by.get(k, 0) + 1
                for (det, how), n in sorted(by.items()):
                    con.print(f"   {det}: {n} {how}", markup=False)
                continue
            if kind in ("document_conflicts", "document_updates"):
                shown = items if kind == "document_updates" else items[:max_rows]
                for it in shown:  # one line per field: doc id, field, old -> new
                    for fld, old, new in _changed(it["field"], it["old"], it["new"]):
                        con.print(f"   {it['doc_id']}: {fld} {_short(old)} → {_short(new)}", markup=False)
                if len(items) > len(shown):
                    con.print(f"   ... {len(items) - len(shown)} more (full list in the imports table)")
                if kind == "document_conflicts":
                    con.print("   stored values kept; re-run with --update to apply these changes", markup=False)
                continue
            for it in items[:max_rows]:
                con.print("   " + ", ".join(f"{k}={_short(v)}" for k, v in it.items()), markup=False)
            if len(items) > max_rows:
                con.print(f"   ... {len(items) - max_rows} more (full list in the imports table)")
        if self.process_evidence:
            _print_evidence(con, self.process_evidence)
        for n in self.notes:
            con.print(f"note: {n}", markup=False)


def _print_evidence(con: Any, rows: list[dict[str, Any]]) -> None:
    """The per-text process evidence table (arm B)."""
    from rich.table import Table

    t = Table(title="process evidence per text (recorded, never used to accuse)")
    for h in ("document", "publication", "words", "revisions", "span", "writing", "large insertions (words)",
              "in large blocks"):
        t.add_column(h, overflow="fold")

    def mins(s: Any) -> str:
        return "—" if s is None else f"{s / 60:.1f} min"

    for r in rows:
        share = r.get("large_insertion_share")
        t.add_row(str(r.get("doc_id")), str(r.get("publication")), str(r.get("words")), str(r.get("revisions")), mins(r.get("span_seconds")),
                  mins(r.get("writing_seconds")), ", ".join(str(x) for x in r.get("large_insertions") or []) or "none",
                  "—" if share is None else f"{100 * share:.0f}%")
    con.print(t)


def _short(v: Any, n: int = 60) -> str:
    s = v if isinstance(v, str) else repr(v)
    return s if len(s) <= n else s[: n - 3] + "..."


def _changed(name: str, old: Any, new: Any) -> list[tuple[str, Any, Any]]:
    """``(field, old, new)`` for display: nested objects (tags, provenance, generation) by sub-key."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[tuple[str, Any, Any]] = []
        for k in sorted(set(old) | set(new), key=str):
            if old.get(k) != new.get(k):
                out.extend(_changed(f"{name}.{k}", old.get(k), new.get(k)))
        return out
    return [(name, old, new)]
