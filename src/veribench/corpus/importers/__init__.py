"""Corpus importers: documents (JSONL/CSV/Parquet), the liang2023 and fast-detect-gpt
folders, and detector scores recorded elsewhere. Each reads and validates everything
first, then writes in one transaction (a failed import leaves the workspace as it was)
and returns an :class:`veribench.corpus.report.ImportReport`, also stored in ``imports``.
"""

from veribench.corpus.importers._store import ScoreBatch, store_import
from veribench.corpus.importers.fastdetectgpt import import_fastdetectgpt, read_fastdetectgpt
from veribench.corpus.importers.generic import import_documents, read_documents
from veribench.corpus.importers.liang2023 import import_liang2023, read_liang2023
from veribench.corpus.importers.scores import import_scores, read_scores

__all__ = [
    "ScoreBatch", "store_import", "import_documents", "read_documents", "import_liang2023", "read_liang2023",
    "import_fastdetectgpt", "read_fastdetectgpt", "import_scores", "read_scores",
]
