"""Evaluation runs: apply a protocol's rules to stored scores and build Tables 1 (one per
group of detectors scored on the same texts) and 2, the side rows, the robustness rows, the
agreement table and the comparisons (rules stated once in ``docs/labels.md``).

Computing a run from arrays (pure, no I/O): ``arrays`` (the inputs, :class:`DocArrays` and
:class:`DetArrays`), ``split`` (roles and the calibration split), ``decision`` (decision
rules and flags), ``slices`` (the Table 2 slices), ``blocks`` (the metric block of one row:
rates, AUROC, TPR at FPR), ``agreement``, ``rows`` (per-document rows), ``reasons`` (the
reasons of null values) and ``results`` (:func:`compute_results`, which assembles them into
the results dict). Loading and storing a run: ``run``; printing and writing its tables:
``tables``.
"""

from veribench.evaluate.arrays import DetArrays, DocArrays
from veribench.evaluate.design import design_check
from veribench.evaluate.groups import table1_groups
from veribench.evaluate.ranking import ranking_scores
from veribench.evaluate.results import compute_results
from veribench.evaluate.robustness import robustness_rows
from veribench.evaluate.rows import document_rows
from veribench.evaluate.run import evaluate_workspace, export_run, latest_run
from veribench.evaluate.split import split_documents

__all__ = ["DetArrays", "DocArrays", "compute_results", "design_check", "document_rows", "evaluate_workspace",
           "export_run", "latest_run", "ranking_scores", "robustness_rows", "split_documents", "table1_groups"]
