"""Import M4 (Wang et al., EACL 2024): the released JSON Lines files of mbzuai-nlp/M4.

Source: https://github.com/mbzuai-nlp/M4 (``data/README.md``): one file per domain and
generator, ``<DOMAIN>_<MODEL>.jsonl`` (``test_<DOMAIN>_<MODEL>.jsonl`` for the Llama 2 test
files), each line ``{prompt, human_text, machine_text, model, source, source_ID}`` (several
released files spell it ``source_id``; both are read). The repository states no licence.

Each line gives two documents:

==============  =========================================================================
field           corpus field
==============  =========================================================================
human_text      a ``human`` document (arm A), stored once per domain and text: the same
                human text recurs in every generator's file (reported, not duplicated)
machine_text    an ``ai`` document (arm C), ``generation.model`` = ``model``
prompt          ``generation.prompt``
model           ``generation.model``, ``tags.model`` (``human`` on the human document)
source          ``tags.source`` (the source corpus, e.g. ``eli5``, ``wikipedia-20220301.en``)
source_ID       ``provenance.m4_source_id``
(file name)     ``kind``, ``subgroup``, ``tags.domain``; ``tags.generator_file``;
                ``tags.language`` (arabic ar, bulgarian bg, germanwikipedia de,
                id-newspaper id, qazh zh, russian ru, urdu ur, else en);
                ``tags.split`` = ``test`` for ``test_`` files
==============  =========================================================================

Both documents of a line share ``group_key`` (the human document's id). Other keys become
tags, except pandas index columns (``Unnamed: 0``), which are dropped and noted. A line with
an empty ``machine_text`` gives only its human document (counted in the report), and one
with an empty ``human_text`` only its machine document (counted too). An empty ``model``, a
line cut short, a NUL and a file without lines are refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from veribench.corpus.importers._io import check_record, iter_jsonl
from veribench.corpus.importers._stream import BATCH, StreamWriter, check_columns, clean
from veribench.corpus.report import ImportReport
from veribench.errors import InputError
from veribench.hashing import text_sha256

COLUMNS = ("prompt", "human_text", "machine_text", "model", "source")
SOURCE_ID = ("source_ID", "source_id")
#: Keys every released line fills: ``model`` names the generator of the machine text (the
#: file name is not used in its place). An empty one is refused (``_io.check_record``).
REQUIRED = ("model",)
SOURCE_URL = "https://github.com/mbzuai-nlp/M4"
LICENCE = "not stated (no licence file in mbzuai-nlp/M4)"
CITATION = ("Wang, Mansurov, Ivanov, Su, Shelmanov, Tsvigun, Whitehouse, Mohammed Afzal, Mahmoud, Sasaki, Arnold, "
            "Aji, Habash, Gurevych, Nakov (2024). M4: Multi-generator, Multi-domain, and Multi-lingual Black-Box "
            "Machine-Generated Text Detection. EACL 2024, pages 1369-1407. https://aclanthology.org/2024.eacl-long.83")
#: Language of each M4 domain (data/README.md and the paper's Table 1).
LANGUAGE = {"arabic": "ar", "bulgarian_true_and_fake_news": "bg", "germanwikipedia": "de", "id-newspaper": "id",
            "qazh": "zh", "baike": "zh", "russian": "ru", "ruatd": "ru", "urdu": "ur", "urdu-news": "ur"}


def parse_name(name: str) -> tuple[str, str, str | None]:
    """``(domain, generator, split)`` from ``<DOMAIN>_<MODEL>.jsonl`` (the domain may hold
    underscores; the generator is the last part), ``split`` = ``test`` for ``test_`` files."""
    stem = name[:-6] if name.endswith(".jsonl") else Path(name).stem
    split = None
    if stem.startswith("test_"):
        split, stem = "test", stem[5:]
    domain, _, gen = stem.rpartition("_")
    if not domain:
        raise InputError("M4 file names are <DOMAIN>_<MODEL>.jsonl", file=name)
    return domain, gen, split


def m4_files(source: str | Path) -> list[Path]:
    p = Path(source)
    if p.is_file():
        return [p]
    if p.is_dir():
        found = sorted(x for x in (p.glob("*.jsonl") if not (p / "data").is_dir() else (p / "data").glob("*.jsonl")))
        if not found:
            raise InputError("no M4 .jsonl files here", file=str(p))
        return found
    raise InputError("file or folder not found", file=str(p))


def import_m4(ws: Any, source: str | Path | Iterable[str | Path], *, corpus: str = "m4", batch_size: int = BATCH,
              progress: bool = True) -> ImportReport:
    """Import M4's JSON Lines files (a file, several, or the ``data/`` folder) in one transaction.

    Raises:
        InputError: a released key missing or renamed, malformed JSON, a non-text value.
    """
    paths = [f for s in ([source] if isinstance(source, (str, Path)) else source) for f in m4_files(s)]
    report = ImportReport(kind="m4", source=", ".join(str(p) for p in paths) if len(paths) < 4 else str(source),
                          corpus=corpus)
    report.notes.append(f"M4 ({SOURCE_URL}), licence: {LICENCE}; cite: {CITATION}")
    humans: dict[tuple[str, str], str] = {}
    shared = 0
    dropped: set[str] = set()
    with StreamWriter(ws, report, batch_size=batch_size, progress=progress) as w:
        for path in paths:
            f = str(path)
            domain, gen_file, split = parse_name(path.name)
            lang = LANGUAGE.get(domain.lower(), "en")
            for rec, row in iter_jsonl(path):
                check_columns(list(row), COLUMNS, file=f, what="M4", record=rec)
                check_record(row, file=f, record=rec, required=REQUIRED, what="M4")
                for k in ("human_text", "machine_text", "prompt", "model", "source"):
                    if row.get(k) is not None and not isinstance(row[k], str):
                        raise InputError(f"expected text, got {type(row[k]).__name__}", file=f, record=rec, field=k)
                sid = next((row[k] for k in SOURCE_ID if row.get(k) is not None), None)
                extra = {}
                for k, v in row.items():
                    if k in COLUMNS or k in SOURCE_ID or v is None:
                        continue
                    if k.startswith("Unnamed:"):
                        dropped.add(f"{path.name}: {k}")
                        continue
                    extra[k] = v if isinstance(v, str) else str(v)
                base = {"domain": domain, "language": lang, "generator_file": gen_file, "split": split,
                        "source": clean(row.get("source")), **extra}
                prov = {"source_url": SOURCE_URL, "licence": LICENCE, "citation": CITATION,
                        "method": f"M4 release, {path.name}", "m4_source_id": None if sid is None else str(sid)}
                prov = {k: v for k, v in prov.items() if v is not None}
                ht = row.get("human_text")
                hid = None
                if clean(ht) is not None:
                    key = (domain, text_sha256(ht))
                    hid = humans.get(key)
                    if hid is None:
                        hid = f"m4:{domain}:human:{key[1][:20]}"
                        humans[key] = hid
                        w.add({"id": hid, "text": ht, "label": "human", "arm": "A", "kind": domain,
                               "subgroup": domain, "tags": {**base, "model": "human"}, "group_key": hid,
                               "provenance": prov}, record=rec, set_name=path.name, file=f)
                    else:
                        shared += 1
                else:
                    w.skip("empty human_text (the machine text is imported)", f"{path.name} {rec}")
                mt = row.get("machine_text")
                if clean(mt) is None:
                    w.skip("empty machine_text (the human text is imported)", f"{path.name} {rec}")
                    continue
                model = clean(row.get("model"))
                w.add({"id": f"m4:{path.stem}:{rec.split()[-1]}", "text": mt, "label": "ai", "arm": "C",
                       "kind": domain, "subgroup": domain, "tags": {**base, "model": model},
                       "group_key": hid, "provenance": prov,
                       "generation": {"model": model, "prompt": clean(row.get("prompt"))}},
                      record=rec, set_name=path.name, file=f)
        if shared:
            report.notes.append(f"human texts repeated across generator files (same domain and text): {shared} "
                                "records, each stored once and shared as the group key of its machine texts")
        if dropped:
            report.notes.append(f"pandas index columns dropped: {sorted(dropped)}")
    return report
