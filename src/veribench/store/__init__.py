"""The embedded DuckDB workspace: corpus, score cache, submissions, protocols and runs."""

from veribench.store.workspace import DEFAULT_WORKSPACE, Workspace

__all__ = ["Workspace", "DEFAULT_WORKSPACE"]
