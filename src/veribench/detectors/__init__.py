"""Detectors: the Detector protocol, built-ins and the one scoring path."""

from veribench.detectors.base import Detector
from veribench.records import STATUS_CODES, ScoreResult

__all__ = ["Detector", "ScoreResult", "STATUS_CODES"]
