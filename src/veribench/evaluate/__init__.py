"""Evaluation runs: apply a protocol's rules to stored scores and build Tables 1 and 2,
the side rows and the agreement table (rules stated once in ``docs/labels.md``)."""

from .core import DetArrays, DocArrays, compute_results, document_rows, split_documents
from .ranking import ranking_scores
from .run import evaluate_workspace, export_run, latest_run

__all__ = ["DetArrays", "DocArrays", "compute_results", "document_rows", "evaluate_workspace", "export_run",
           "latest_run", "ranking_scores", "split_documents"]
