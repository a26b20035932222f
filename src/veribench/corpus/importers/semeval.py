"""Import SemEval-2024 Task 8 (Wang et al., SemEval 2024): subtasks A, B and C.

Source: https://github.com/mbzuai-nlp/SemEval2024-task8 (README "Data Format"; the data on
the Google Drive folders it links). JSON Lines files:

- ``subtaskA_{train,dev}_{monolingual,multilingual}.jsonl``: ``{id, label, text, model,
  source}``, label 0 = human, 1 = machine;
- ``subtaskB_{train,dev}.jsonl``: ``{id, label, text, model, source}``, label 0 human,
  1 chatGPT, 2 cohere, 3 davinci, 4 bloomz, 5 dolly;
- ``subtaskC_{train,dev}.jsonl``: ``{id, label, text}``, label = index of the first machine
  word of ``text.split(" ")`` (human text first, then machine text).

Test files were released without labels and the gold labels separately (``{id, label}``
lines): pass them with ``gold``.

==============  =========================================================================
field           corpus field
==============  =========================================================================
id              ``id`` = ``semeval2024t8:<subtask>:<split>[:<track>]:<id>``;
                ``provenance.semeval_id``
label           A, B: ``label`` (human / ai) and ``tags.class`` (B's class number); C:
                ``label = "mixed"`` with ``segments`` [0, b) human and [b, len) ai, b the
                character where word ``label`` starts (``mixed`` only when both parts are
                non-empty: label 0 is all machine, the word count all human);
                ``tags.boundary_word``
text            ``text``
model           ``generation.model`` and ``tags.model`` (``human`` for human texts)
source          ``tags.source`` (the domain, or for the multilingual track the language);
                ``tags.language``
(file name)     ``tags.subtask``, ``tags.split``, ``tags.track``
==============  =========================================================================

Licence: the task repository is Apache-2.0 (code); the data extends M4, whose repository
states no licence. A label that contradicts the model (a "human" text with label 1) is
reported, and the label kept. An empty released key, a line cut short, a NUL and a file
without lines are refused.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from veribench.corpus.importers._io import check_record, iter_jsonl
from veribench.corpus.importers._stream import BATCH, StreamWriter, check_columns, clean
from veribench.corpus.report import ImportReport
from veribench.errors import InputError
from veribench.metrics.segmentation import boundary_char

SOURCE_URL = "https://github.com/mbzuai-nlp/SemEval2024-task8"
LICENCE = "task repository Apache-2.0 (code); data from M4, no licence stated"
CITATION = ("Wang, Mansurov, Ivanov, Su, Shelmanov, Tsvigun, Mohammed Afzal, Mahmoud, Puccetti, Arnold, Whitehouse, "
            "Aji, Habash, Gurevych, Nakov (2024). SemEval-2024 Task 8: Multidomain, Multimodel and Multilingual "
            "Machine-Generated Text Detection. SemEval-2024, pages 2041-2063. "
            "https://aclanthology.org/2024.semeval2024-1.275")
COLUMNS = {"A": ("id", "label", "text", "model", "source"), "B": ("id", "label", "text", "model", "source"),
           "C": ("id", "label", "text")}
#: Every released key is filled on every line (an empty ``id`` would give a document id
#: without it, an empty ``model`` a guessed generator); an empty one is refused
#: (``_io.check_record``).
REQUIRED = COLUMNS
#: The released splits (file names ``subtask<X>_<split>...``).
SPLITS = ("train", "dev", "test")
#: README, subtask B: label -> generator.
B_CLASSES = {0: "human", 1: "chatGPT", 2: "cohere", 3: "davinci", 4: "bloomz", 5: "dolly"}
#: Subtask A's multilingual ``source`` values that are languages (README).
LANGUAGES = {"arabic": "ar", "russian": "ru", "chinese": "zh", "indonesian": "id", "urdu": "ur", "bulgarian": "bg",
             "german": "de", "italian": "it", "english": "en"}
_NAME = re.compile(r"subtask([ABC])(?:_(train|dev|test))?(?:_(monolingual|multilingual))?", re.I)


def parse_name(name: str) -> tuple[str | None, str | None, str | None]:
    """``(subtask, split, track)`` from a released file name (test files: split ``test``)."""
    m = _NAME.search(name)
    if not m:
        return None, None, None
    sub, split, track = m.group(1).upper(), m.group(2), m.group(3)
    return sub, (split or "test").lower(), track.lower() if track else None


def _label_int(v: Any, *, file: str, record: str) -> int:
    if isinstance(v, bool) or v is None:
        raise InputError("label must be an integer", file=file, record=record, field="label")
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        v = int(v)
    if not isinstance(v, int):
        raise InputError(f"label must be an integer, got {v!r}", file=file, record=record, field="label")
    return v


def _gold(path: str | Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    out = {}
    for rec, row in iter_jsonl(Path(path)):
        check_columns(list(row), ("id", "label"), file=str(path), what="SemEval-2024 Task 8 gold", record=rec)
        out[str(row["id"])] = row["label"]
    return out


def import_semeval(ws: Any, source: str | Path, *, subtask: str | None = None, split: str | None = None,
                   gold: str | Path | None = None, corpus: str = "semeval2024-task8", batch_size: int = BATCH,
                   progress: bool = True) -> ImportReport:
    """Import one SemEval-2024 Task 8 file (or every ``subtask*.jsonl`` in a folder).

    Args:
        subtask: ``A``, ``B`` or ``C``; default from the file name.
        split: ``train``, ``dev`` or ``test``; default from the file name.
        gold: the gold labels (``{id, label}`` lines) of a test file released without labels.

    Raises:
        InputError: an unknown subtask or split; a released key missing or renamed, a label that is not an integer or
            outside the subtask's range, a subtask C label beyond the text's words, a text
            without a label (give ``gold``).
    """
    if subtask is not None and subtask.upper() not in COLUMNS:
        raise InputError(f"unknown subtask {subtask!r}; known: {', '.join(COLUMNS)}", file=str(source),
                         field="subtask")
    if split is not None and split not in SPLITS:
        raise InputError(f"unknown split {split!r}; known: {', '.join(SPLITS)}", file=str(source), field="split")
    p = Path(source)
    if p.is_dir():
        paths = sorted(p.rglob("subtask*.jsonl"))
        paths = [x for x in paths if "gold" not in x.name.lower()]
        if not paths:
            raise InputError("no subtask*.jsonl files here", file=str(p))
    elif p.is_file():
        paths = [p]
    else:
        raise InputError("file or folder not found", file=str(p))
    gold_labels = _gold(gold)
    report = ImportReport(kind="semeval2024-task8", source=str(source), corpus=corpus)
    report.notes.append(f"SemEval-2024 Task 8 ({SOURCE_URL}), licence: {LICENCE}; cite: {CITATION}")
    conflicts = 0
    with StreamWriter(ws, report, batch_size=batch_size, progress=progress) as w:
        for path in paths:
            f = str(path)
            sub0, split0, track = parse_name(path.name)
            sub = (subtask or sub0 or "").upper()
            if sub not in COLUMNS:
                raise InputError("cannot tell the subtask from the file name; pass the subtask (A, B or C)", file=f)
            sp = split or split0 or "train"
            set_name = path.name
            for rec, row in iter_jsonl(path):
                if "label" not in row and str(row.get("id")) in gold_labels:
                    row = {**row, "label": gold_labels[str(row.get("id"))]}
                if "label" not in row and {"id", "text"} <= set(row) and not difflib.get_close_matches(
                        "label", list(row), n=1, cutoff=0.6):
                    raise InputError("no label: this file was released without labels; give its gold file",
                                     file=f, record=rec, field="label")
                check_columns(list(row), COLUMNS[sub], file=f, what=f"SemEval-2024 Task 8 subtask {sub}", record=rec)
                check_record(row, file=f, record=rec, required=REQUIRED[sub], what="SemEval-2024 Task 8")
                text = row["text"]
                if not isinstance(text, str):
                    raise InputError("expected text", file=f, record=rec, field="text")
                lab = _label_int(row["label"], file=f, record=rec)
                sid = str(row["id"])
                doc_id = ":".join(x for x in ("semeval2024t8", sub, sp, track, sid) if x)
                tags: dict[str, Any] = {"subtask": sub, "split": sp, "track": track}
                prov = {"source_url": SOURCE_URL, "licence": LICENCE, "citation": CITATION,
                        "method": f"SemEval-2024 Task 8 release, {path.name}", "semeval_id": sid}
                for k, v in row.items():
                    if k not in ("id", "label", "text", "model", "source") and v is not None:
                        tags[k] = v if isinstance(v, str) else str(v)
                data: dict[str, Any] = {"id": doc_id, "text": text, "tags": tags, "provenance": prov}
                if sub == "C":
                    try:
                        b = boundary_char(text, lab)
                    except ValueError as e:
                        raise InputError(str(e), file=f, record=rec, field="label") from None
                    tags["boundary_word"] = str(lab)
                    tags["language"] = "en"
                    if 0 < b < len(text):
                        data.update(label="mixed", segments=[{"start": 0, "end": b, "label": "human"},
                                                            {"start": b, "end": len(text), "label": "ai"}])
                    else:
                        data.update(label="ai" if b == 0 else "human", arm="C" if b == 0 else "A")
                else:
                    valid = (0, 1) if sub == "A" else tuple(B_CLASSES)
                    if lab not in valid:
                        raise InputError(f"subtask {sub} labels are {list(valid)}, got {lab}", file=f, record=rec,
                                         field="label")
                    human = lab == 0
                    model = clean(row.get("model"))
                    source_ = clean(row.get("source"))
                    tags.update({"class": str(lab), "model": model, "source": source_,
                                 "language": LANGUAGES.get((source_ or "").lower(), "en")})
                    if (model == "human") != human and model is not None:
                        conflicts += 1
                        if conflicts <= 20:
                            report.notes.append(f"label {lab} contradicts model {model!r}: {path.name} {rec} "
                                                "(the label is kept)")
                    data.update(label="human" if human else "ai", arm="A" if human else "C")
                    if not human:
                        data["generation"] = {"model": model or B_CLASSES.get(lab)}
                w.add(data, record=rec, set_name=set_name, file=f)
        if conflicts:
            report.notes.append(f"labels contradicting the model field: {conflicts} records (labels kept)")
    return report
