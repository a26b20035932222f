"""veribench: benchmark AI-text detectors and humanizers reproducibly."""

__version__ = "0.1.0"
