"""Import DetectRL (Wu et al., NeurIPS 2024 Datasets & Benchmarks): the released benchmark
JSON files of NLP2CT/DetectRL.

Source: https://github.com/NLP2CT/DetectRL, ``Benchmark/Benchmark_Data/<Task>/<setting>_
{train,test}.json`` (e.g. ``Multi_Domain/multi_domains_arxiv_test.json``,
``Paraphrase_Attacks/paraphrase_polish_llm_train.json``,
``Varying_Length/cross_length_100_test.json``): a JSON array of
``{text, label, data_type, llm_type}`` (``text_length`` in the varying-length sets),
``label`` ``human`` or ``llm``.

==============  =========================================================================
field           corpus field
==============  =========================================================================
text            ``text``
label           ``label``: human (arm A) / llm -> ai (arm C)
data_type       ``tags.data_type``. For human texts the domain (abstract = arXiv
                abstracts, document = XSum news, story = Writing Prompts, content = Yelp
                reviews) -> ``kind``, ``subgroup``, ``tags.domain``; for LLM texts how
                it was made: ``direct_prompt``, prompt attacks (``prompt_few_shot``,
                ``prompt_SICO``; ``tags.attack``), paraphrase attacks (``paraphrase_*``)
                and perturbation attacks (``adversarial_*``), both ``tags.attack`` and
                ``tags.derivation`` (``paraphrase`` / ``attack``). Human texts attacked
                the same way (``*_human`` sets) keep the ``human`` label, as DetectRL does
llm_type        ``tags.llm_type``; ``generation.model`` for LLM texts
text_length     ``tags.text_length``
(file)          ``tags.task`` (the folder), ``tags.setting`` (the file stem without the
                split), ``tags.split``; for ``multi_domains_<domain>`` files also
                ``tags.domain`` of the LLM texts
==============  =========================================================================

Ids: ``detectrl:<setting>:<split>:<index>``; ``subgroup`` is the setting. The same text
recurs across settings (each file is one setting, evaluated on its own: select it with the
protocol's ``subgroups``); the import report counts repeated texts within and across files.
The repository states no licence. An empty ``label`` or ``data_type``, a file
cut short (malformed JSON), a NUL and an empty array are refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from veribench.corpus.importers._io import check_record, load_json, no_records
from veribench.corpus.importers._stream import BATCH, StreamWriter, check_columns, clean
from veribench.corpus.report import ImportReport
from veribench.errors import InputError

COLUMNS = ("text", "label", "data_type")
#: Keys every released record fills (an empty ``data_type`` would drop the domain and the
#: attack); an empty one is refused (``_io.check_record``). An empty ``text`` is not
#: imported and is counted; ``llm_type`` is absent from the varying-length sets.
REQUIRED = ("label", "data_type")
SOURCE_URL = "https://github.com/NLP2CT/DetectRL"
LICENCE = "not stated (no licence file in NLP2CT/DetectRL)"
CITATION = ("Wu, Zhan, Wong, Yang, Yang, Yuan, Chao (2024). DetectRL: Benchmarking LLM-Generated Text Detection in "
            "Real-World Scenarios. NeurIPS 2024 Datasets and Benchmarks. arXiv:2410.23746")
#: Human ``data_type`` -> source domain (DetectRL, Section 3.1 and Benchmark/Original_Dataset/get_*_data.py).
HUMAN_DOMAINS = {"abstract": "arxiv", "document": "xsum", "story": "writing_prompt", "content": "yelp_review"}
FILE_DOMAINS = {"arxiv": "arxiv", "xsum": "xsum", "writing_prompt": "writing_prompt", "yelp_review": "yelp_review"}


def attack_of(data_type: str | None) -> tuple[str | None, str | None]:
    """``(attack, derivation)`` of a ``data_type``: prompt attacks act at generation time
    (no derivation); paraphrase and perturbation attacks rewrite a finished text."""
    if not data_type:
        return None, None
    if data_type.startswith("prompt_"):
        return data_type, None
    if data_type.startswith("paraphrase_"):
        return data_type, "paraphrase"
    if data_type.startswith(("adversarial_", "perturbation_")):
        return data_type, "attack"
    return None, None


def detectrl_files(source: str | Path) -> list[Path]:
    p = Path(source)
    if p.is_file():
        return [p]
    if p.is_dir():
        found = sorted(x for x in p.rglob("*.json") if x.stem.endswith(("_train", "_test")))
        if not found:
            raise InputError("no DetectRL <setting>_{train,test}.json files here", file=str(p))
        return found
    raise InputError("file or folder not found", file=str(p))


def import_detectrl(ws: Any, source: str | Path, *, corpus: str = "detectrl", batch_size: int = BATCH,
                    progress: bool = True) -> ImportReport:
    """Import DetectRL benchmark files (a file, or a folder searched recursively).

    Raises:
        InputError: not a JSON array of objects, a released key missing or renamed, a
            label other than ``human`` / ``llm``.
    """
    paths = detectrl_files(source)
    report = ImportReport(kind="detectrl", source=str(source), corpus=corpus)
    report.notes.append(f"DetectRL ({SOURCE_URL}), licence: {LICENCE}; cite: {CITATION}")
    with StreamWriter(ws, report, batch_size=batch_size, progress=progress) as w:
        for path in paths:
            f = str(path)
            setting, _, split = path.stem.rpartition("_")
            task = path.parent.name
            file_domain = next((d for k, d in FILE_DOMAINS.items() if setting == f"multi_domains_{k}"), None)
            data = load_json(path)
            if not isinstance(data, list):
                raise InputError("expected a JSON array of records", file=f)
            if not data:
                raise no_records(f, 0)
            for i, row in enumerate(data):
                if not isinstance(row, dict):
                    raise InputError(f"expected a JSON object, got {type(row).__name__}", file=f, record=i)
                check_columns(list(row), COLUMNS, file=f, what="DetectRL", record=i)
                check_record(row, file=f, record=i, required=REQUIRED, what="DetectRL", strings=False)
                lab = row.get("label")
                if lab not in ("human", "llm"):
                    raise InputError(f"DetectRL labels are 'human' or 'llm', got {lab!r}", file=f, record=i,
                                     field="label")
                human = lab == "human"
                dt = clean(row.get("data_type"))
                attack, derivation = attack_of(dt)
                domain = HUMAN_DOMAINS.get(dt or "") if human else file_domain
                if human and domain is None:
                    domain = file_domain
                llm = clean(row.get("llm_type"))
                tags = {"task": task, "setting": setting, "split": split, "data_type": dt, "llm_type": llm,
                        "domain": domain, "attack": attack, "derivation": derivation,
                        "model": "human" if human else llm, "language": "en"}
                for k, v in row.items():
                    if k not in ("text", "label", "data_type", "llm_type") and v is not None:
                        tags[k] = v if isinstance(v, str) else json.dumps(v)
                text = row.get("text")
                if not isinstance(text, str) or clean(text) is None:
                    if text is not None and not isinstance(text, str):
                        raise InputError("expected text", file=f, record=i, field="text")
                    w.skip("empty text", f"{path.name} record {i}")
                    continue
                doc: dict[str, Any] = {
                    "id": f"detectrl:{setting}:{split}:{i}", "text": text, "label": "human" if human else "ai",
                    "arm": "A" if human else "C", "kind": domain, "subgroup": setting, "tags": tags,
                    "provenance": {"source_url": SOURCE_URL, "licence": LICENCE, "citation": CITATION,
                                   "method": f"DetectRL release, {task}/{path.name}"}}
                if not human:
                    doc["generation"] = {"model": llm, "settings": {"data_type": dt} if dt else {}}
                w.add(doc, record=i, set_name=path.name, file=f)
    return report
