"""Vendor humanizer adapters (HTTP); see :mod:`.vendors` and ``docs/vendors.md``."""
