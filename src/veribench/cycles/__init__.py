"""Humanizer benchmark cycles: verify HumanizerBench bundles natively, create commit-reveal cycles,
and score humanizer outputs with veribench's own detectors and embedders."""
