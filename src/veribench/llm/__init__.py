"""One OpenAI-compatible chat client (:mod:`.client`) for generation, the LLM humanizer and the
readability judge (:mod:`.judge`), and the embedders (:mod:`.embedders`); all registered in
:data:`veribench.registry.BUILTINS`."""
