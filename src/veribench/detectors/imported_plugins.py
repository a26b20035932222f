"""Registry data for imported scores (scores gathered by hand or by other tools)."""

PLUGINS = {"detector": {"imported": "veribench.detectors.imported:ImportedDetector"}}
