"""Detectors: the Detector protocol, built-ins and the one scoring path."""

from .base import Detector, ScoreResult, STATUS_CODES

__all__ = ["Detector", "ScoreResult", "STATUS_CODES"]
