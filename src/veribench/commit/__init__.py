"""Committing protocols before any scan (a service above evaluation): :func:`commit`,
:func:`add_timestamp` and :func:`write_record` in :mod:`veribench.commit.service`, RFC 3161
time-stamps in :mod:`veribench.commit.tsa`. What was committed is read back through
:mod:`veribench.store.commitments`."""

from __future__ import annotations

from veribench.commit.service import add_timestamp, commit, write_record

__all__ = ["add_timestamp", "commit", "write_record"]
