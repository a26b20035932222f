"""Humanizer benchmark cycles: verify HumanizerBench bundles natively, create commit-reveal cycles,
and score humanizer outputs with veribench's own detectors and embedders.

``PLUGINS`` is registry data: kind -> name -> "module:attr" of the factory (import-light).
"""

PLUGINS = {
    "embedder": {
        "minilm": "veribench.cycles.embedders:MiniLMEmbedder",
        "openai-3-large": "veribench.cycles.embedders:OpenAIEmbedder",
    },
}
