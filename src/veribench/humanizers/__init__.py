"""Humanizers: the Humanizer protocol, vendor adapters, the LLM humanizer and manual imports
(registered in :data:`veribench.registry.BUILTINS`)."""
