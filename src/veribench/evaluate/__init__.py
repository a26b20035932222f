"""Evaluation runs: apply a protocol's rules to stored scores and build Tables 1 (one per
group of detectors scored on the same texts) and 2, the side rows, the robustness rows, the
agreement table and the comparisons (rules stated once in ``docs/labels.md``)."""

from veribench.evaluate.core import DetArrays, DocArrays, compute_results, document_rows, split_documents
from veribench.evaluate.design import design_check
from veribench.evaluate.groups import table1_groups
from veribench.evaluate.ranking import ranking_scores
from veribench.evaluate.robustness import robustness_rows
from veribench.evaluate.run import evaluate_workspace, export_run, latest_run

__all__ = ["DetArrays", "DocArrays", "compute_results", "design_check", "document_rows", "evaluate_workspace",
           "export_run", "latest_run", "ranking_scores", "robustness_rows", "split_documents", "table1_groups"]
