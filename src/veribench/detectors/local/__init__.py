"""Local detectors (run on this machine): ZipPy, the zero-shot LM engine, HF classifiers
(registered in :data:`veribench.registry.BUILTINS`)."""
