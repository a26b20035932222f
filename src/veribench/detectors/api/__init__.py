"""Commercial detector adapters (HTTP), registered in :data:`veribench.registry.BUILTINS`.

Each adapter reads its key only from ``VERIBENCH_<VENDOR>_API_KEY`` and takes a
``base_url`` setting (for fake servers in tests, or a proxy). See ``docs/vendors.md``.
"""
