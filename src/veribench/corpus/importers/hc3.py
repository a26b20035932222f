"""Import HC3, the Human ChatGPT Comparison Corpus (Guo et al. 2023), English or Chinese.

Source: https://huggingface.co/datasets/Hello-SimpleAI/HC3 and ``.../HC3-Chinese`` (one
JSON Lines file per source: English ``reddit_eli5``, ``finance``, ``medicine``,
``open_qa``, ``wiki_csai``; Chinese ``baike``, ``open_qa``, ``nlpcc_dbqa``, ``medicine``,
``finance``, ``psychology``, ``law``; ``all.jsonl`` is their union and is not read by
default), and https://github.com/Hello-SimpleAI/chatgpt-comparison-detection. Each line
``{question, human_answers: [...], chatgpt_answers: [...], source}`` (``id`` or ``index``
when present). Read one line at a time by the shared reader (``_io.jsonl_records``) from a
local copy or the Hub; an empty or ``null`` question or answer list, a line cut short, a
NUL and a file without lines are refused.

==================  =====================================================================
field               corpus field
==================  =====================================================================
human_answers[k]    a ``human`` document (arm A) each
chatgpt_answers[k]  an ``ai`` document (arm C) each, ``generation.model = "chatgpt"``
                    (the ChatGPT of Dec 2022 - Jan 2023, the paper's collection period)
question            ``generation.prompt``; ``group_key`` = the question's id
source              ``kind``, ``subgroup``, ``tags.source``
id / index          ``provenance.hc3_id`` / ``provenance.hc3_index``
(file)              ``tags.config``; ``tags.language`` (en / zh)
==================  =====================================================================

Ids: ``hc3:<lang>:<config>:<row>:h<k>`` / ``:c<k>``. Empty answers are not imported and are
counted. Licence: CC-BY-SA, or the stricter licence of the source dataset (HC3 README).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from veribench.corpus.importers._io import check_record
from veribench.corpus.importers._stream import (
    BATCH,
    StreamWriter,
    check_columns,
    clean,
    jsonl_source_records,
    resolve_sources,
)
from veribench.corpus.report import ImportReport
from veribench.errors import InputError

COLUMNS = ("question", "human_answers", "chatgpt_answers")
#: Keys every released line fills (a ``null`` answer list would otherwise read as no
#: answers); an empty one is refused (``_io.check_record``).
REQUIRED = COLUMNS
FILES = {"en": {c: f"{c}.jsonl" for c in ("reddit_eli5", "finance", "medicine", "open_qa", "wiki_csai", "all")},
         "zh": {c: f"{c}.jsonl" for c in ("baike", "open_qa", "nlpcc_dbqa", "medicine", "finance", "psychology",
                                          "law", "all")}}
HUB = {"en": "hf://datasets/Hello-SimpleAI/HC3", "zh": "hf://datasets/Hello-SimpleAI/HC3-Chinese"}
SOURCE_URL = "https://github.com/Hello-SimpleAI/chatgpt-comparison-detection"
LICENCE = "CC-BY-SA-4.0, or the source dataset's licence where stricter (ELI5 BSD; WikiQA PWC custom; ...)"
CITATION = ("Guo, Zhang, Wang, Jiang, Nie, Ding, Yue, Wu (2023). How Close is ChatGPT to Human Experts? Comparison "
            "Corpus, Evaluation, and Detection. arXiv:2301.07597")


def language_of(source: str | Path, language: str | None = None) -> str:
    """HC3's language for ``source``: ``language`` when given, else ``zh`` for a source whose
    name says ``chinese`` (``HC3-Chinese``), else ``en``."""
    return language or ("zh" if "chinese" in str(source).lower() else "en")


def import_hc3(ws: Any, source: str | Path, *, config: str | None = None, language: str | None = None,
               corpus: str = "hc3", batch_size: int = BATCH, progress: bool = True) -> ImportReport:
    """Import HC3 (a ``<config>.jsonl`` file, a folder of them, or the Hub repository).

    Args:
        config: one source file (``finance`` ...; ``all`` for the union); default every
            source file except ``all``.
        language: ``en`` or ``zh``; default from the source (``HC3-Chinese`` -> zh).

    Raises:
        InputError: an unknown language, or a config that is not one of the language's
            files; a released key missing or renamed, answers that are not lists of text.
    """
    s = str(source)
    lang = language_of(source, language)
    if lang not in FILES:
        raise InputError(f"unknown HC3 language {lang!r}; known: {', '.join(sorted(FILES))}", file=s,
                         field="language")
    if config is not None and config not in FILES[lang]:
        raise InputError(f"unknown HC3 config {config!r} for language {lang!r}; known: "
                         f"{', '.join(sorted(FILES[lang]))}", file=s, field="config")
    files = FILES[lang] if config or Path(s).is_file() or s.endswith(".jsonl") else \
        {k: v for k, v in FILES[lang].items() if k != "all"}
    sources = resolve_sources(source, files, split=config, what="HC3")
    report = ImportReport(kind="hc3", source=s, corpus=corpus)
    report.notes.append(f"HC3 ({SOURCE_URL}), licence: {LICENCE}; cite: {CITATION}")
    with StreamWriter(ws, report, batch_size=batch_size, progress=progress) as w:
        for src in sources:
            cfg = src.split
            for r, rec, row in jsonl_source_records(src):
                check_columns(list(row), COLUMNS, file=src.location, what="HC3", record=rec)
                check_record(row, file=src.location, record=rec, required=REQUIRED, what="HC3")
                qid = f"hc3:{lang}:{cfg}:{r}"
                source_ = clean(row.get("source")) or cfg
                tags = {"config": cfg, "language": lang, "source": source_}
                for k, v in row.items():
                    if k not in COLUMNS + ("source", "id", "index") and v is not None:
                        tags[k] = v if isinstance(v, str) else str(v)
                prov = {"source_url": SOURCE_URL, "licence": LICENCE, "citation": CITATION,
                        "method": f"HC3 release, {src.name}", "hc3_id": clean(row.get("id")),
                        "hc3_index": clean(row.get("index"))}
                prov = {k: v for k, v in prov.items() if v is not None}
                for key, label, letter in (("human_answers", "human", "h"), ("chatgpt_answers", "ai", "c")):
                    answers = row[key]
                    if not isinstance(answers, list):
                        raise InputError(f"expected a list of answers, got {type(answers).__name__}",
                                         file=src.location, record=rec, field=key)
                    for k, text in enumerate(answers):
                        where = f"{src.name} {rec} {key}[{k}]"
                        if not isinstance(text, str):
                            raise InputError(f"expected text, got {type(text).__name__}", file=src.location,
                                             record=rec, field=f"{key}[{k}]")
                        if clean(text) is None:
                            w.skip(f"empty {key}", where)
                            continue
                        data: dict[str, Any] = {
                            "id": f"{qid}:{letter}{k}", "text": text, "label": label,
                            "arm": "A" if label == "human" else "C", "kind": source_, "subgroup": source_,
                            "tags": {**tags, "model": "human" if label == "human" else "chatgpt"},
                            "group_key": qid, "provenance": prov}
                        if label == "ai":
                            data["generation"] = {"model": "chatgpt", "prompt": clean(row.get("question")),
                                                  "settings": {"collected": "2022-12 to 2023-01 (HC3 paper)"}}
                        w.add(data, record=f"{rec} {key}[{k}]", set_name=cfg, file=src.location)
    return report
