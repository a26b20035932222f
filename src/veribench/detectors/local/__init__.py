"""Local detectors (run on this machine): ZipPy, the zero-shot LM engine, HF classifiers.

``PLUGINS`` is registry data: kind -> name -> "module:attr" of the factory.
"""

PLUGINS = {
    "detector": {
        "zippy": "veribench.detectors.local.zippy:ZippyDetector",
        "loglik": "veribench.detectors.local.zeroshot:loglik",
        "rank": "veribench.detectors.local.zeroshot:rank",
        "logrank": "veribench.detectors.local.zeroshot:logrank",
        "entropy": "veribench.detectors.local.zeroshot:entropy",
        "gltr": "veribench.detectors.local.zeroshot:gltr",
        "lrr": "veribench.detectors.local.zeroshot:lrr",
        "fast-detectgpt": "veribench.detectors.local.zeroshot:FastDetectGPT",
        "binoculars": "veribench.detectors.local.zeroshot:Binoculars",
        "hf-classifier": "veribench.detectors.local.hf_classifier:HFClassifier",
        "boundary-loglik": "veribench.detectors.local.boundary:BoundaryDetector",
    },
}
