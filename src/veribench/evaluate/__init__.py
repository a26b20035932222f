"""Evaluation runs: apply a protocol's rules to stored scores and build Tables 1 and 2."""

from .core import DetArrays, DocArrays, compute_results
from .run import evaluate_workspace, latest_run

__all__ = ["DetArrays", "DocArrays", "compute_results", "evaluate_workspace", "latest_run"]
