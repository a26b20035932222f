"""Corpus: documents of known origin, with provenance, arms and importers."""

from veribench.corpus.document import LABELS, Document, Generation, Provenance

__all__ = ["LABELS", "Document", "Generation", "Provenance"]
