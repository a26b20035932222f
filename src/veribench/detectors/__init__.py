"""Detectors: the Detector protocol, built-ins and the one scoring path."""

from veribench.detectors.base import Detector
from veribench.records import ScoreResult, STATUS_CODES

__all__ = ["Detector", "ScoreResult", "STATUS_CODES"]
