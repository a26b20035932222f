"""Commercial detector adapters (HTTP). ``PLUGINS`` is registry data.

Each adapter reads its key only from ``VERIBENCH_<VENDOR>_API_KEY`` and takes a
``base_url`` setting (for fake servers in tests, or a proxy). See ``docs/vendors.md``.
"""

PLUGINS: dict = {"detector": {
    "gptzero": "veribench.detectors.api.vendors:GPTZero",
    "originality": "veribench.detectors.api.vendors:Originality",
    "copyleaks": "veribench.detectors.api.vendors:Copyleaks",
    "winston": "veribench.detectors.api.vendors:Winston",
    "zerogpt": "veribench.detectors.api.vendors:ZeroGPT",
    "sapling": "veribench.detectors.api.vendors:Sapling",
    "pangram": "veribench.detectors.api.vendors:Pangram",
}}
