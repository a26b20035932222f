"""The editors' rubric: blind meaning/error readings of humanized text (rubric 001).

Modules: :mod:`~veribench.rubric.rules` (the scale, the 12 classes and the settlement rules
as data), :mod:`~veribench.text.words` (sentences, words, readability),
:mod:`~veribench.rubric.loaders` (pairs from a cycle bundle or the workspace),
:mod:`~veribench.rubric.store` (editors, assignment, storing a reading),
:mod:`~veribench.rubric.db` (the app's own SQLite store, ``rubric.sqlite``),
:mod:`~veribench.rubric.schema` and :mod:`~veribench.rubric.migrations` (its tables, version
and migrations; :mod:`~veribench.rubric.sqlite_store` is the runner shared with the writing
app's store, :mod:`~veribench.rubric.stores` migrates both),
:mod:`~veribench.rubric.results` (per-output and per-tool results, Krippendorff's alpha,
ratings.csv) and :mod:`~veribench.rubric.app` (the FastAPI app). Schemas:
``docs/ratings-schema.md``. For the report and the leaderboard:
``veribench.rubric.results.tool_results(ws) -> list[dict]``.
"""
