"""Import MAGE (Li et al., ACL 2024; formerly DeepfakeTextDetect): the released CSV files,
from disk or the Hub (``yaful/MAGE``).

Source: https://github.com/yafuly/MAGE (README "How to Get the Data") and
https://huggingface.co/datasets/yaful/MAGE: ``train.csv``, ``valid.csv``, ``test.csv``
and the two "wilder" test sets ``test_ood_set_gpt.csv`` (GPT-4, unseen domains) and
``test_ood_set_gpt_para.csv`` (the same, every sentence paraphrased by gpt-3.5-turbo; MAGE
counts every paraphrased text as machine-generated). Columns: ``text``, ``label``
(**0 = machine-generated, 1 = human-written**: MAGE's convention, the reverse of most
corpora) and ``src`` (``<domain>_human`` or ``<domain>_machine_<prompt>_<model>``, e.g.
``roct_machine_continuation_flan_t5_large``).

==============  =========================================================================
column          corpus field
==============  =========================================================================
text            ``text``
label           ``label``: 1 -> human (arm A), 0 -> ai (arm C)
src             ``tags.src``; parsed: ``kind``, ``subgroup`` and ``tags.domain`` (cmv,
                yelp, xsum, tldr, eli5, wp, roct, hswag, squad, sci_gen),
                ``tags.prompt_type`` (continuation, specified, topical),
                ``generation.model`` and ``tags.model``
(file)          ``tags.split`` (train, validation, test, test_ood_gpt, test_ood_gpt_para);
                ``tags.derivation = "paraphrase"`` for the paraphrased set
==============  =========================================================================

Ids are ``mage:<split>:<row>`` (0-based data row). An empty ``label`` or ``src``, a
truncated row, an extra cell, a NUL and a file without rows are refused (the shared
reader, ``_io``); an empty ``text`` is not imported and is counted. Known data faults are reported: texts
repeated within and across splits (the import report's notes give the counts, and groups
whose labels disagree), a ``label`` that contradicts its ``src``. Licence: CC BY 4.0 (the
GitHub README); the Hub card says apache-2.0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from veribench.corpus.importers._io import check_record
from veribench.corpus.importers._stream import BATCH, StreamWriter, clean, csv_records, resolve_sources
from veribench.corpus.report import ImportReport
from veribench.errors import InputError

COLUMNS = ("text", "label", "src")
#: Columns every released row fills; an empty one is refused (``_io.check_record``).
REQUIRED = ("label", "src")
FILES = {"train": "train.csv", "validation": "valid.csv", "test": "test.csv",
         "test_ood_gpt": "test_ood_set_gpt.csv", "test_ood_gpt_para": "test_ood_set_gpt_para.csv"}
HUB = "hf://datasets/yaful/MAGE"
SOURCE_URL = "https://github.com/yafuly/MAGE"
LICENCE = "CC BY 4.0 (GitHub README; the Hugging Face card says apache-2.0)"
CITATION = ("Li, Li, Cui, Bi, Wang, Wang, Yang, Shi, Zhang (2024). MAGE: Machine-generated Text Detection in the "
            "Wild. ACL 2024, pages 36-53. https://aclanthology.org/2024.acl-long.3")
#: ``deployment/prepare_testbeds.py`` ``set_names``.
DOMAINS = ("cmv", "yelp", "xsum", "tldr", "eli5", "wp", "roct", "hswag", "squad", "sci_gen")
PROMPTS = ("continuation", "specified", "topical")


def parse_src(src: str | None) -> dict[str, str | None]:
    """``{"domain", "role", "prompt_type", "model"}`` from a ``src`` value (``None`` parts
    when it does not follow MAGE's pattern)."""
    out: dict[str, str | None] = {"domain": None, "role": None, "prompt_type": None, "model": None}
    if not src:
        return out
    for d in sorted(DOMAINS, key=len, reverse=True):
        if src.startswith(d + "_"):
            out["domain"] = d
            rest = src[len(d) + 1:]
            break
    else:
        return out
    if rest == "human":
        out["role"] = "human"
    elif rest.startswith("machine"):
        out["role"] = "machine"
        tail = rest[len("machine"):].lstrip("_")
        for p in PROMPTS:
            if tail.startswith(p):
                out["prompt_type"] = p
                tail = tail[len(p):].lstrip("_")
                break
        out["model"] = tail or None
    return out


def import_mage(ws: Any, source: str | Path, *, split: str | None = None, corpus: str = "mage",
                batch_size: int = BATCH, progress: bool = True) -> ImportReport:
    """Import MAGE's CSV files (a file, a folder, or ``hf://datasets/yaful/MAGE``) in one
    transaction, streamed.

    Raises:
        InputError: a released column missing or renamed, a label other than 0 or 1.
    """
    sources = resolve_sources(source, FILES, split=split, what="MAGE")
    report = ImportReport(kind="mage", source=str(source), corpus=corpus)
    report.notes.append(f"MAGE ({SOURCE_URL}), licence: {LICENCE}; cite: {CITATION}")
    contradict = 0
    with StreamWriter(ws, report, batch_size=batch_size, progress=progress) as w:
        for src in sources:
            for index, (rec, row) in enumerate(csv_records(src, COLUMNS, what="MAGE")):
                check_record(row, file=src.location, record=rec, required=REQUIRED, what="MAGE", strings=False)
                lab = (row.get("label") or "").strip()
                if lab not in ("0", "1"):
                    raise InputError(f"MAGE labels are 0 (machine) or 1 (human), got {row.get('label')!r}",
                                     file=src.location, record=rec, field="label")
                human = lab == "1"
                s = clean(row.get("src"))
                parts = parse_src(s)
                if parts["role"] is not None and (parts["role"] == "human") != human:
                    contradict += 1
                    if contradict <= 20:
                        report.notes.append(f"label {lab} contradicts src {s!r}: {src.name} {rec} (label kept)")
                tags = {"split": src.split, "src": s, "domain": parts["domain"], "prompt_type": parts["prompt_type"],
                        "model": "human" if human else parts["model"], "language": "en"}
                for k, v in row.items():
                    if k not in COLUMNS and clean(v) is not None:
                        tags[k] = clean(v)
                if src.split == "test_ood_gpt_para":
                    tags["derivation"] = "paraphrase"
                    tags["attack"] = "gpt-3.5-turbo sentence paraphrase"
                data: dict[str, Any] = {
                    "id": f"mage:{src.split}:{index}", "text": row.get("text"),
                    "label": "human" if human else "ai", "arm": "A" if human else "C",
                    "kind": parts["domain"], "subgroup": parts["domain"], "tags": tags,
                    "provenance": {"source_url": SOURCE_URL, "licence": LICENCE, "citation": CITATION,
                                   "method": f"MAGE release, {src.name}"}}
                if not human:
                    data["generation"] = {"model": parts["model"], "settings": {"prompt_type": parts["prompt_type"]}
                                          if parts["prompt_type"] else {}}
                if clean(data["text"]) is None:
                    w.skip("empty text", f"{src.name} {rec}")
                    continue
                w.add(data, record=rec, set_name=src.split, file=src.location)
        if contradict:
            report.notes.append(f"labels contradicting src: {contradict} records (labels kept)")
    return report
