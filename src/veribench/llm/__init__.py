"""One OpenAI-compatible chat client (:mod:`.client`) for generation, the LLM humanizer and the
readability judge (:mod:`.judge`). ``PLUGINS`` is registry data: kind -> name -> "module:attr"."""

PLUGINS: dict = {
    "generator": {"openai-chat": "veribench.llm.client:ChatClient"},
    "judge": {"llm-readability": "veribench.llm.judge:ReadabilityJudge"},
}
