"""The embedded DuckDB workspace: corpus, score cache, submissions, protocols and runs."""

from veribench.store.workspace import Workspace, DEFAULT_WORKSPACE

__all__ = ["Workspace", "DEFAULT_WORKSPACE"]
