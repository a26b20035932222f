"""Static, offline report site for detector runs, humanizer cycles and ratings.

Entry point: :func:`build_report` (``veribench report [-w WS]... [BUNDLE_OR_RESULTS]... --out DIR``).
"""

from __future__ import annotations

from typing import Any

from veribench.report.site import build_report as _build


def build_report(*args: Any, **kwargs: Any):
    """See :func:`veribench.report.site.build_report`."""

    return _build(*args, **kwargs)


__all__ = ["build_report"]
