"""Frozen, verifiable bundles: detector-run bundles (``veribench publish``) and the
hardened reader under both verifiers (detector runs and humanizer cycles).

- :mod:`.reader` - reads a bundle folder safely (no symlinks, caps, strict JSON).
- :mod:`.publish` - writes a detector-run bundle from a workspace run.
- :mod:`.verify` - re-derives a detector-run bundle.
- :mod:`.tsa` - RFC 3161 timestamp tokens.
- :mod:`.honesty` - the integrity facts every output shows prominently.
"""
