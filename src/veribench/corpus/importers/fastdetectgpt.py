"""Importer for the fast-detect-gpt human/AI pairs (baoguangsheng/fast-detect-gpt, MIT).

Source: Bao, Zhao, Teng, Yang, Zhang, "Fast-DetectGPT: Efficient Zero-Shot Detection of
Machine-Generated Text via Conditional Probability Curvature", ICLR 2024; data from
https://github.com/baoguangsheng/fast-detect-gpt (``exp_main/data``, ``exp_gpt3to4/data``).

Layout: ``<set>.raw_data.json`` = ``{"original": [str], "sampled": [str]}`` and
``<set>.args.json`` = the generation arguments of ``scripts/data_builder.py``; a set is
``<dataset>_<generator>`` (``xsum_gpt-3.5-turbo``).

Mapping:

- ``original[i]`` -> label ``human``, arm ``A`` (text published before 2020), provenance
  naming the dataset (:data:`DATASETS`) and the licence;
- ``sampled[i]`` -> label ``ai``, arm ``C``, with the generation spec rebuilt from the
  args file following ``data_builder.py`` (:func:`generation_from_args`);
- ids ``fastdetectgpt/<set>/<i>/original`` and ``.../sampled``; subgroup = the set name;
  tags ``dataset``, ``generator``, ``pair`` (``<set>/<i>``);
- group key (calibration split): the dataset plus a hash of the first 20 words of the
  human text. The AI text continues the first ~30 tokens of the human text, so this
  keeps a pair together and also keeps together the pairs that different generator sets
  built from the same source article (their human texts differ only in where they were
  trimmed), so one article never straddles the split.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from veribench.corpus.document import Document, Generation, Provenance
from veribench.corpus.importers._io import load_json, refuse_nonfinite
from veribench.corpus.importers._store import store_import
from veribench.corpus.report import ImportReport, text_quirks
from veribench.errors import InputError
from veribench.hashing import text_sha256
from veribench.text.hazards import is_blank

CORPUS = "fastdetectgpt"
SOURCE_URL = "https://github.com/baoguangsheng/fast-detect-gpt"
LICENCE = "MIT (fast-detect-gpt repository); the source dataset's own terms also apply"
CITATION = ("Bao, Zhao, Teng, Yang, Zhang, \"Fast-DetectGPT: Efficient Zero-Shot Detection of Machine-Generated "
            "Text via Conditional Probability Curvature\", ICLR 2024")
GROUP_WORDS = 20

#: The human source datasets (all published before 2020).
DATASETS: dict[str, dict[str, str]] = {
    "xsum": {"name": "XSum", "kind": "news", "published": "2018",
             "citation": "Narayan, Cohen, Lapata, \"Don't Give Me the Details, Just the Summary!\", EMNLP 2018",
             "method": "BBC news articles (XSum), whitespace-normalised and trimmed by data_builder.py"},
    "writing": {"name": "WritingPrompts", "kind": "story", "published": "2018",
                "citation": "Fan, Lewis, Dauphin, \"Hierarchical Neural Story Generation\", ACL 2018",
                "method": "stories from Reddit r/WritingPrompts, whitespace-normalised and trimmed by data_builder.py"},
    "squad": {"name": "SQuAD", "kind": "encyclopedia", "published": "2016",
              "citation": "Rajpurkar, Zhang, Lopyrev, Liang, \"SQuAD: 100,000+ Questions for Machine Comprehension "
                          "of Text\", EMNLP 2016",
              "method": "Wikipedia paragraphs (SQuAD contexts), whitespace-normalised and trimmed by data_builder.py"},
    "pubmed": {"name": "PubMedQA", "kind": "biomedical-qa", "published": "2019",
               "citation": "Jin, Dhingra, Liu, Cohen, Lu, \"PubMedQA: A Dataset for Biomedical Research Question "
                           "Answering\", EMNLP 2019",
               "method": "PubMedQA question with its long answer (\"Question: ... Answer: ...\")"},
}
#: data_builder.py: the chat models get a role per dataset and this instruction.
CHAT_ROLES = {"xsum": "You are a News writer.", "writing": "You are a Fiction writer.",
              "pubmed": "You are a Technical writer."}
CHAT_PROMPT = "Please write an article with about 100 words starting exactly with: {prefix}"
CHAT_MODELS = ("gpt-3.5-turbo", "gpt-4")
_SECRET = re.compile(r"key|token|secret|password", re.I)


def generation_from_args(args: dict[str, Any], dataset: str) -> Generation:
    """The generation spec of a set's AI texts, following ``scripts/data_builder.py``.

    Sampling: only the first of ``do_top_p`` / ``do_top_k`` / ``do_temperature`` that is
    set applies (an ``elif`` chain upstream); with none set, the model's default sampling
    is used. OpenAI models get ``max_tokens=200``; local models ``generate(do_sample=True,
    min_length=150 (50 for pubmed), max_length=200)``. Secrets (``openai_key``) are dropped.
    """
    settings = {k: v for k, v in args.items() if not _SECRET.search(k)}
    openai_model = args.get("openai_model")
    sampling: dict[str, Any] = {}
    if args.get("do_top_p"):
        sampling["top_p"] = args.get("top_p")
    elif args.get("do_top_k"):
        sampling["top_k"] = args.get("top_k")
    elif args.get("do_temperature"):
        sampling["temperature"] = args.get("temperature")
    settings["sampling"] = next(iter(sampling), "default")
    if openai_model:
        provider, model = "openai", str(openai_model)
        settings["max_tokens"] = 200
        if model in CHAT_MODELS:
            prompt = f"[system] {CHAT_ROLES.get(dataset, '')} [user] {CHAT_PROMPT}"
            settings["api"] = "ChatCompletion"
        else:
            prompt = "{prefix}"
            settings["api"] = "Completion"
    else:
        provider, model = "huggingface", str(args.get("base_model_name"))
        settings.update({"do_sample": True, "max_length": 200, "min_length": 50 if dataset == "pubmed" else 150})
        prompt = "{prefix}"
    settings["prefix"] = ("the question of the paired human text" if dataset == "pubmed" else
                          "the first 30 tokens of the paired human text (base tokenizer)"
                          + (", last word dropped" if openai_model else ""))
    post = "trimmed to the word count of the shorter text of the pair (data_builder._trim_to_shorter_length)"
    if dataset == "pubmed":
        post = "cut before a second 'Question:'; " + post
    return Generation(provider=provider, model=model, prompt=prompt, temperature=sampling.get("temperature"),
                      top_p=sampling.get("top_p"), seed=args.get("seed"), settings=settings, post_editing=post)


def available_sets(directory: str | Path) -> list[str]:
    """Set names (``<dataset>_<generator>``) with a ``.raw_data.json`` file in ``directory``."""
    d = Path(directory)
    return sorted(p.name[: -len(".raw_data.json")] for p in d.glob("*.raw_data.json"))


def read_fastdetectgpt(directory: str | Path, sets: list[str] | None = None,
                       pairs: int | None = None) -> tuple[ImportReport, list[Document]]:
    """Read and validate sets of pairs; nothing is written.

    Args:
        directory: folder with ``<set>.raw_data.json`` and ``<set>.args.json`` files.
        sets: set names to import (default: all found).
        pairs: import only the first ``pairs`` pairs of each set.

    Raises:
        InputError: unknown set, missing args file, malformed JSON, ``original`` and
            ``sampled`` of different lengths, or a missing, non-text or empty entry.
    """
    d = Path(directory)
    if not d.is_dir():
        raise InputError("folder not found", file=str(d))
    found = available_sets(d)
    if not found:
        raise InputError("no *.raw_data.json files found (is this the fast-detect-gpt data?)", file=str(d))
    chosen = sets or found
    for s in chosen:
        if s not in found:
            raise InputError(f"unknown set {s!r}; available: {', '.join(found)}", file=str(d))
    if pairs is not None and pairs < 1:
        raise InputError("--pairs must be at least 1", field="pairs")
    report = ImportReport(kind="fastdetectgpt", source=str(d), corpus=CORPUS)
    docs: list[Document] = []
    by_sha: dict[str, list[str]] = {}
    for s in chosen:
        raw_f, args_f = d / f"{s}.raw_data.json", d / f"{s}.args.json"
        if not args_f.is_file():
            raise InputError("missing generation settings file (the AI texts would be unspecified)",
                             file=str(args_f))
        args = load_json(args_f)
        if not isinstance(args, dict):
            raise InputError("expected a JSON object", file=str(args_f))
        refuse_nonfinite(args, file=str(args_f), record=None)
        data = load_json(raw_f)
        if not isinstance(data, dict):
            raise InputError("expected an object {\"original\": [...], \"sampled\": [...]}", file=str(raw_f))
        for k in ("original", "sampled"):
            if not isinstance(data.get(k), list):
                raise InputError("required list is missing", file=str(raw_f), field=k)
        orig, samp = data["original"], data["sampled"]
        if len(orig) != len(samp):
            raise InputError(f"{len(orig)} original texts but {len(samp)} sampled; they must pair up",
                             file=str(raw_f), field="sampled")
        dataset = str(args.get("dataset") or s.split("_", 1)[0])
        generator = str(args.get("openai_model") or args.get("base_model_name") or s.split("_", 1)[-1])
        info = DATASETS.get(dataset, {"name": dataset, "kind": None, "published": None, "citation": None,
                                      "method": f"human texts of dataset {dataset}"})
        gen = generation_from_args(args, dataset)
        gen = gen.model_copy(update={"settings": {**gen.settings, "args_file": args_f.name}})
        n = len(orig) if pairs is None else min(pairs, len(orig))
        entry = report.set_entry(s)
        entry.update({"records": 2 * n, "documents": 2 * n, "labels": {"human": n, "ai": n},
                      "pairs_in_file": len(orig)})
        for i in range(n):
            for role, text, _label in (("original", orig[i], "human"), ("sampled", samp[i], "ai")):
                if not isinstance(text, str):
                    raise InputError(f"expected a string, got {type(text).__name__}", file=str(raw_f), record=i,
                                     field=role)
                if is_blank(text):
                    raise InputError("text is empty or whitespace only", file=str(raw_f), record=i, field=role)
            words = " ".join(orig[i].split()[:GROUP_WORDS])
            group = f"{CORPUS}/{dataset}/{text_sha256(words)[:16]}"
            tags = {"dataset": dataset, "generator": generator, "pair": f"{s}/{i}"}
            for role, text, label in (("original", orig[i], "human"), ("sampled", samp[i], "ai")):
                doc_id = f"{CORPUS}/{s}/{i}/{role}"
                if label == "human":
                    prov = Provenance(source_url=SOURCE_URL, published=info.get("published"), licence=LICENCE,
                                      citation=info.get("citation"), method=info.get("method"), dataset=info["name"],
                                      collection=CITATION, file=raw_f.name, record=i)
                    docs.append(Document(id=doc_id, text=text, label="human", arm="A", kind=info.get("kind"),
                                         subgroup=s, tags={**tags, "role": role}, group_key=group, provenance=prov))
                else:
                    prov = Provenance(source_url=SOURCE_URL, licence=LICENCE, citation=CITATION,
                                      method=f"generated by {generator} for fast-detect-gpt's {s} set",
                                      dataset=info["name"], file=raw_f.name, record=i)
                    docs.append(Document(id=doc_id, text=text, label="ai", arm="C", kind=info.get("kind"),
                                         subgroup=s, tags={**tags, "role": role}, group_key=group, provenance=prov,
                                         generation=gen))
                by_sha.setdefault(docs[-1].text_sha256, []).append(doc_id)
                q = text_quirks(text)
                if q:
                    report.suspicious_text.append({"set": s, "doc_id": doc_id, "record": i, **q})
    for sha, ids in by_sha.items():
        if len(ids) > 1:
            report.duplicates.append({"text_sha256": sha, "doc_ids": ids, "kept": "all"})
    report.notes.append("group_key = dataset + sha256 of the first 20 words of the human text (keeps each pair, and "
                        "pairs built from the same article in other sets, on one side of the calibration split)")
    return report, docs


def import_fastdetectgpt(ws: Any, directory: str | Path, sets: list[str] | None = None,
                         pairs: int | None = None) -> ImportReport:
    """Import fast-detect-gpt sets into ``ws`` (all or nothing)."""
    report, docs = read_fastdetectgpt(directory, sets, pairs)
    return store_import(ws, report, docs)
