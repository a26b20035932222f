"""Import RAID (Dugan et al., ACL 2024): the released CSV files, from disk or the Hub.

Source: https://github.com/liamdugan/raid (README "Download RAID"; data at
https://dataset.raid-bench.xyz/{train,test,extra}[_none].csv) and the Hugging Face dataset
``liamdugan/raid`` (configs ``raid``: ``train.csv``, ``extra.csv``; ``raid_test``:
``test.csv``), MIT licence.

Released columns and where they go
----------------------------------
==================  =====================================================================
column              corpus field
==================  =====================================================================
id                  ``id`` (as is, so RAID's predictions file ``[{"id", "score"}]``
                    imports with ``veribench import scores``)
adv_source_id       ``provenance.adv_source_id``; for an attacked text also
                    ``provenance.source_id`` (the unattacked text it was derived from)
source_id           ``provenance.raid_source_id`` and ``group_key`` (the human source
                    text: every text written from it shares the calibration group)
model               ``label`` (``human`` -> human, arm A; a model of :data:`MODELS` -> ai,
                    arm C; any other value is refused),
                    ``generation.model``, ``tags.model``
decoding            ``generation.settings.decoding``, ``generation.temperature``
                    (greedy 0, sampling 1, RAID's README), ``tags.decoding``
repetition_penalty  ``generation.settings.repetition_penalty`` (``yes`` = 1.2, RAID's
                    README), ``tags.repetition_penalty``
attack              ``tags.attack`` (``none`` = unattacked); an attacked text also gets
                    ``tags.derivation = "attack"`` (derived-document contract)
domain              ``kind``, ``subgroup``, ``tags.domain``; ``tags.language`` from the
                    domain (``czech`` cs, ``german`` de, else en)
title               ``provenance.title``
prompt              ``generation.prompt``
generation          ``text``
==================  =====================================================================

The file's split (train, extra, test) is ``tags.split``. Any further column becomes a tag.
A record with an empty ``generation`` is not imported and is counted in the report (a
known fault of the release). An empty ``id``, ``adv_source_id``, ``source_id``, ``model``,
``attack`` or ``domain`` is refused (:data:`REQUIRED`), as are a truncated row, an extra
cell, a NUL and a file without rows (the shared reader, ``_io``). RAID's
test split is released without labels; it cannot be imported as a corpus.
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
    csv_header,
    csv_records,
    resolve_sources,
)
from veribench.corpus.report import ImportReport
from veribench.errors import InputError
from veribench.text.hazards import is_blank

COLUMNS = ("id", "adv_source_id", "source_id", "model", "decoding", "repetition_penalty", "attack", "domain",
           "title", "prompt", "generation")
#: Columns every released row fills: the id, the label (``model``) and the fields the
#: mapping reads as facts (an empty ``model`` would otherwise become an AI document, an
#: empty ``attack`` an unattacked one). An empty one is refused (``_io.check_record``).
REQUIRED = ("id", "adv_source_id", "source_id", "model", "attack", "domain")
FILES = {"train": "train.csv", "extra": "extra.csv", "test": "test.csv", "train_none": "train_none.csv",
         "extra_none": "extra_none.csv", "test_none": "test_none.csv"}
HUB = "hf://datasets/liamdugan/raid"
LICENCE = "MIT"
SOURCE_URL = "https://github.com/liamdugan/raid"
CITATION = ("Dugan, Hwang, Trhlik, Zhu, Ludan, Xu, Ippolito, Callison-Burch (2024). RAID: A Shared Benchmark for "
            "Robust Evaluation of Machine-Generated Text Detectors. ACL 2024, pages 12463-12492. "
            "https://aclanthology.org/2024.acl-long.674")
#: README "Dataset Overview": the models behind each ``model`` value.
MODELS = {"chatgpt": "ChatGPT", "gpt4": "GPT-4", "gpt3": "GPT-3 (text-davinci-003)", "gpt2": "GPT-2 XL",
          "llama-chat": "Llama 2 70B (Chat)", "cohere": "Cohere", "cohere-chat": "Cohere (Chat)", "mpt": "MPT-30B",
          "mpt-chat": "MPT-30B (Chat)", "mistral": "Mistral 7B", "mistral-chat": "Mistral 7B (Chat)"}
#: README: Greedy (T=0), Sampling (T=1); repetition penalty theta = 1.2.
TEMPERATURE = {"greedy": 0.0, "sampling": 1.0}
REPETITION_PENALTY = {"yes": 1.2, "no": None}
LANGUAGE = {"czech": "cs", "german": "de"}


def raid_record(row: dict[str, Any], split: str, *, file: str = "", record: Any = None) -> dict[str, Any] | None:
    """One CSV row as a document mapping (``None`` when the text is empty).

    Raises:
        InputError: a ``model`` that is neither ``human`` nor one of RAID's generators
            (:data:`MODELS`): the label cannot be read from it (``Human`` or `` human``
            would otherwise become an AI document).
    """
    text = row.get("generation")
    if text is None or is_blank(str(text)):
        return None
    model = clean(row.get("model"))
    if model != "human" and model not in MODELS:
        raise InputError(f"unknown RAID model {model!r}: neither 'human' nor one of RAID's generators "
                         f"({', '.join(sorted(MODELS))}), so the label cannot be read from it", file=file,
                         record=record, field="model")
    human = model == "human"
    domain = clean(row.get("domain"))
    attack = clean(row.get("attack"))
    dec, rep = clean(row.get("decoding")), clean(row.get("repetition_penalty"))
    tags = {"split": split, "domain": domain, "model": model, "decoding": dec, "repetition_penalty": rep,
            "attack": attack, "language": LANGUAGE.get(domain or "", "en")}
    for k, v in row.items():
        if k not in COLUMNS and clean(v) is not None:
            tags[k] = clean(v)
    prov = {"source_url": SOURCE_URL, "licence": LICENCE, "citation": CITATION,
            "method": f"RAID release, {split} split", "title": clean(row.get("title")),
            "raid_source_id": clean(row.get("source_id")), "adv_source_id": clean(row.get("adv_source_id"))}
    if attack not in (None, "none"):
        tags["derivation"] = "attack"
        prov["source_id"] = clean(row.get("adv_source_id"))
    data: dict[str, Any] = {
        "id": clean(row.get("id")), "text": text, "label": "human" if human else "ai", "arm": "A" if human else "C",
        "kind": domain, "subgroup": domain, "tags": tags, "group_key": clean(row.get("source_id")),
        "provenance": {k: v for k, v in prov.items() if v is not None},
    }
    if not human:
        settings = {"decoding": dec, "repetition_penalty": REPETITION_PENALTY.get(rep or "", rep),
                    "raid_repetition_penalty": rep}
        data["generation"] = {"model": model, "version": MODELS.get(model or ""), "prompt": clean(row.get("prompt")),
                              "temperature": TEMPERATURE.get(dec or ""),
                              "settings": {k: v for k, v in settings.items() if v is not None}}
    return data


def import_raid(ws: Any, source: str | Path, *, split: str | None = None, corpus: str = "raid",
                batch_size: int = BATCH, progress: bool = True) -> ImportReport:
    """Import RAID's released CSV files into ``ws`` in one transaction, streamed in batches.

    Args:
        source: a CSV file (``train.csv`` ...), a folder holding the release's files, or the
            Hub repository ``hf://datasets/liamdugan/raid`` (or one of its files).
        split: only this split (``train``, ``extra``, ``test``, ``train_none`` ...); default
            ``train`` and ``extra`` (a folder or the Hub; the ``*_none`` files are subsets of
            them, and ``test`` has no labels).

    Raises:
        InputError: a column of the released layout missing or renamed, a malformed file
            (a truncated row, an extra cell, a NUL, no rows), an empty required field
            (:data:`REQUIRED`), an id stored with another text, RAID's label-less test split.
    """
    single = Path(str(source)).is_file() or str(source).endswith(".csv")
    files = FILES if split or single else {"train": FILES["train"], "extra": FILES["extra"]}
    sources = resolve_sources(source, files, split=split, what="RAID")
    report = ImportReport(kind="raid", source=str(source), corpus=corpus)
    report.notes.append(f"RAID ({SOURCE_URL}), licence {LICENCE}; cite: {CITATION}")
    with StreamWriter(ws, report, batch_size=batch_size, progress=progress) as w:
        for src in sources:
            header = csv_header(src)
            if src.split.startswith("test") and "model" not in header:
                raise InputError("RAID's test split is released without labels (no 'model' column); score it and "
                                 "submit to RAID's leaderboard, or import the train or extra split", file=src.location)
            check_columns(header, COLUMNS, file=src.location, what="RAID")
            for rec, row in csv_records(src, COLUMNS, what="RAID"):
                check_record(row, file=src.location, record=rec, required=REQUIRED, what="RAID", strings=False)
                data = raid_record(row, src.split, file=src.location, record=rec)
                if data is None:
                    w.skip("empty generation", f"{src.name} {rec} (id {row.get('id')!r})")
                    continue
                w.add(data, record=rec, set_name=src.split, file=src.location)
    return report
