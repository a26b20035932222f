"""Commercial detector adapters (HTTP). ``PLUGINS`` is registry data."""

PLUGINS: dict = {"detector": {}}
