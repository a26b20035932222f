"""Import Beemo, the Benchmark of Expert-edited Machine-generated Outputs (Artemova et al.,
NAACL 2025), from the Hub (``toloka/beemo``) or its Parquet file.

Source: https://huggingface.co/datasets/toloka/beemo (one split, ``train``) and
https://github.com/Toloka/beemo (``dataset.parquet``). Columns: ``id``, ``category``,
``model``, ``prompt_id``, ``prompt``, ``model_output``, ``human_output``, ``human_edits``,
``llama-3.1-70b_edits``, ``gpt-4o_edits``; the last two hold a Python-literal list of
one-key dicts, ``[{'P1': '...'}, {'P2': '...'}, {'P3': '...'}]``, one rewrite per editing
prompt (README "LLM-based Editing"), read with ``ast.literal_eval`` (literals only; nothing
is executed).

Each row gives up to 2 + 1 + 6 documents, all with ``group_key`` = ``prompt_id`` and
``kind`` / ``subgroup`` / ``tags.category`` = ``category``:

=====================  ==================================================================
column                 document
=====================  ==================================================================
human_output           ``human`` (arm A): the No Robots human answer to the prompt
model_output           ``ai`` (arm C), ``generation.model`` = ``model``,
                       ``generation.prompt`` = ``prompt``
human_edits            ``ai-edited-human`` (arm C2): the model output edited by an expert
                       annotator; ``tags.derivation = "edit"``, ``tags.editor = "expert"``
llama-3.1-70b_edits,   ``ai`` (arm C) per prompt P1..P3: the model output rewritten by that
gpt-4o_edits           LLM to sound human; ``tags.derivation = "humanize"``,
                       ``tags.attack = "<editor>/<P>"``, ``tags.editor``, ``tags.edit_prompt``
=====================  ==================================================================

Derived documents name the model output in ``provenance.source_id``. Ids:
``beemo:<id>:human|model|expert|<editor>:<P>``. Licences (README): prompts and human texts
CC-BY-NC-4.0 (No Robots); machine texts under their generating model's terms; expert edits
MIT.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from veribench.corpus.importers._io import check_record
from veribench.corpus.importers._stream import BATCH, Source, StreamWriter, check_columns, clean, hub_batches
from veribench.corpus.report import ImportReport
from veribench.errors import InputError

COLUMNS = ("id", "category", "model", "prompt_id", "prompt", "model_output", "human_output", "human_edits",
           "llama-3.1-70b_edits", "gpt-4o_edits")
#: Columns every released row fills (``model`` names the generator of every machine text
#: of the row); an empty one is refused (``_io.check_record``).
REQUIRED = ("id", "model")
EDITORS = {"llama-3.1-70b_edits": "llama-3.1-70b", "gpt-4o_edits": "gpt-4o"}
HUB = "hf://datasets/toloka/beemo"
SOURCE_URL = "https://github.com/Toloka/beemo"
LICENCES = {"human": "CC-BY-NC-4.0 (No Robots)", "ai": "the generating model's licence terms (Beemo README Table 1)",
            "ai-edited-human": "MIT (unless the generating model's terms say otherwise)"}
CITATION = ("Artemova, Lucas, Venkatraman, Lee, Tilga, Uchendu, Mikhailov (2025). Beemo: Benchmark of "
            "Expert-edited Machine-generated Outputs. NAACL 2025. arXiv:2411.04032")


def parse_edits(raw: Any, *, file: str, record: str, field: str) -> list[tuple[str, str]]:
    """``[(prompt name, text)]`` from a ``*_edits`` cell (a literal list of one-key dicts, or
    already a list / dict)."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return []
    val = raw
    if isinstance(raw, str):
        try:
            val = ast.literal_eval(raw)
        except (ValueError, SyntaxError, MemoryError, RecursionError) as e:
            raise InputError(f"not a literal list of {{prompt: text}} ({type(e).__name__})", file=file,
                             record=record, field=field) from None
    if isinstance(val, dict):
        val = [val]
    if not isinstance(val, list) or not all(isinstance(d, dict) for d in val):
        raise InputError("expected a list of {prompt: text} objects", file=file, record=record, field=field)
    out = []
    for d in val:
        for k, v in d.items():
            if not isinstance(v, str):
                raise InputError(f"edit {k!r} is not text", file=file, record=record, field=field)
            out.append((str(k), v))
    return out


def import_beemo(ws: Any, source: str | Path = HUB, *, corpus: str = "beemo", batch_size: int = BATCH,
                 progress: bool = True) -> ImportReport:
    """Import Beemo (``hf://datasets/toloka/beemo`` or a local copy of that repository, read
    as ``load_dataset(location, split="train")``; or a ``.parquet`` file).

    Raises:
        InputError: a released column missing or renamed, an edits cell that is not a literal
            list of ``{prompt: text}``.
    """
    s = str(source)
    if s.endswith(".parquet"):
        if not s.startswith("hf://") and not Path(s).is_file():
            raise InputError("file not found", file=s)
        src, builder = Source("train", s), "parquet"
    else:
        if not s.startswith("hf://") and not Path(s).is_dir():
            raise InputError("file or folder not found", file=s)
        loc = s[len("hf://datasets/"):] if s.startswith("hf://datasets/") else s
        src, builder = Source("train", loc), None
    report = ImportReport(kind="beemo", source=s, corpus=corpus)
    report.notes.append(f"Beemo ({SOURCE_URL}); licences: {LICENCES}; cite: {CITATION}")
    humans: dict[str, str] = {}
    shared = 0
    with StreamWriter(ws, report, batch_size=batch_size, progress=progress) as w:
        for start, batch in hub_batches(src, builder=builder, batch_size=batch_size):
            cols = list(batch)
            check_columns(cols, COLUMNS, file=s, what="Beemo")
            for j, vals in enumerate(zip(*(batch[c] for c in cols))):
                row = dict(zip(cols, vals))
                rec = f"row {start + j}"
                check_record(row, file=s, record=rec, required=REQUIRED, what="Beemo")
                rid = clean(row.get("id"))
                cat = clean(row.get("category"))
                gk = f"beemo:prompt:{clean(row.get('prompt_id'))}"
                base = {"category": cat, "language": "en", "split": "train", "prompt_id": clean(row.get("prompt_id"))}
                for k, v in row.items():
                    if k not in COLUMNS and clean(v) is not None:
                        base[k] = str(v)
                model = clean(row.get("model"))
                prompt = clean(row.get("prompt"))

                def prov(label: str, **extra: Any) -> dict[str, Any]:
                    return {"source_url": SOURCE_URL, "licence": LICENCES[label], "citation": CITATION,
                            "method": "Beemo release", "beemo_id": rid, **extra}

                def add(suffix: str, text: Any, label: str, arm: str, field: str, tags: dict[str, Any],
                        **more: Any) -> str | None:
                    if not isinstance(text, str) or clean(text) is None:
                        if text is not None and not isinstance(text, str):
                            raise InputError("expected text", file=s, record=rec, field=field)
                        w.skip(f"empty {field}", f"{rec} (id {rid})")
                        return None
                    did = f"beemo:{rid}:{suffix}"
                    w.add({"id": did, "text": text, "label": label, "arm": arm, "kind": cat, "subgroup": cat,
                           "tags": {**base, **tags}, "group_key": gk, **more}, record=f"{rec} {field}",
                          set_name="train", file=s)
                    return did

                ht = row.get("human_output")
                if isinstance(ht, str) and ht in humans:
                    shared += 1
                else:
                    hid = add("human", ht, "human", "A", "human_output", {"model": "human"}, provenance=prov("human"))
                    if hid and isinstance(ht, str):
                        humans[ht] = hid
                mid = add("model", row.get("model_output"), "ai", "C", "model_output", {"model": model},
                          provenance=prov("ai"), generation={"model": model, "prompt": prompt})
                if mid is None:
                    continue
                add("expert", row.get("human_edits"), "ai-edited-human", "C2", "human_edits",
                    {"model": model, "derivation": "edit", "editor": "expert"},
                    provenance=prov("ai-edited-human", source_id=mid),
                    generation={"model": model, "prompt": prompt, "post_editing": "expert annotator (Beemo)"})
                for col, editor in EDITORS.items():
                    for pname, text in parse_edits(row.get(col), file=s, record=rec, field=col):
                        add(f"{editor}:{pname}", text, "ai", "C", col,
                            {"model": model, "derivation": "humanize", "editor": editor, "edit_prompt": pname,
                             "attack": f"{editor}/{pname}"},
                            provenance=prov("ai", source_id=mid),
                            generation={"model": editor, "prompt": f"Beemo editing prompt {pname} (README)",
                                        "settings": {"source_model": model}})
        if shared:
            report.notes.append(f"human outputs repeated across rows: {shared} (stored once)")
    return report
