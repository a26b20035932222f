"""Protocols: pre-committed evaluation rules, their hash, amendments and the calibration split."""

from veribench.protocol.model import DecisionRule, DetectorEntry, Protocol, load_protocol
from veribench.protocol.split import calibration_mask

__all__ = ["DecisionRule", "DetectorEntry", "Protocol", "load_protocol", "calibration_mask"]
