"""Humanizers: the Humanizer protocol, vendor adapters, the LLM humanizer and manual imports.

``PLUGINS`` is registry data: kind -> name -> "module:attr" of the factory.
"""

PLUGINS: dict = {"humanizer": {
    "undetectable": "veribench.humanizers.api.vendors:Undetectable",
    "stealthgpt": "veribench.humanizers.api.vendors:StealthGPT",
    "writehuman": "veribench.humanizers.api.vendors:WriteHuman",
    "hix": "veribench.humanizers.api.vendors:HIX",
    "humbot": "veribench.humanizers.api.vendors:Humbot",
    "llm-humanizer": "veribench.humanizers.llm:LLMHumanizer",
    "manual": "veribench.humanizers.manual:ManualHumanizer",
}}
