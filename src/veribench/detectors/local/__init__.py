"""Local detectors (run on this machine): ZipPy, the zero-shot LM engine, HF classifiers.

``PLUGINS`` is registry data: kind -> name -> "module:attr" of the factory.
"""

PLUGINS = {
    "detector": {
        "zippy": "veribench.detectors.local.zippy:ZippyDetector",
    },
}
