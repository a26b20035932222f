"""Write the format fixtures of the public corpora (run once; the output is committed).

Every file is in the exact released layout of its dataset (file names, column or key names
and order, value conventions, quoting), with invented text: no text is copied from the
datasets. Known faults of each release are planted on purpose (repeated texts, an empty
generation, inconsistent key spellings, a label that contradicts its source ...), so the
importers' reports can be checked. Layouts: see each importer's module docstring
(``veribench.corpus.importers.<name>``).

    python tests/data/public/make_fixtures.py
"""

from __future__ import annotations

import csv
import json
import random
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
RNG = random.Random(16)


def uid() -> str:
    return str(uuid.UUID(int=RNG.getrandbits(128), version=4))


WORDS = ("river harbour lantern quiet ledger marble orchard signal copper meadow thunder velvet archive compass "
         "glacier cinder ribbon pepper willow saddle beacon canyon ember falcon garnet hollow island juniper kettle "
         "lagoon").split()


def sentence(k: int, n: int = 9) -> str:
    r = random.Random(k)
    return " ".join(r.choice(WORDS) for _ in range(n)).capitalize() + "."


def para(k: int, s: int = 3) -> str:
    return " ".join(sentence(k * 31 + i) for i in range(s))


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")  # pandas' to_csv layout: minimal quoting, LF
        w.writerow(header)
        w.writerows(rows)


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


# -- RAID: train.csv / extra.csv, the Hub card's configs, a predictions file -----------------
RAID_COLS = ["id", "adv_source_id", "source_id", "model", "decoding", "repetition_penalty", "attack", "domain",
             "title", "prompt", "generation"]


def homoglyph(t: str) -> str:
    return t.replace("a", "\u0430").replace("e", "\u0435")


def raid_rows(domains: list[str], sources: int, seed: int) -> list[list[str]]:
    rows = []
    k = seed
    for d in domains:
        for s in range(sources):
            src = uid()
            title = f"{d.title()} story {s}"
            human = para(k, 3) + "\n\nA second paragraph, with a comma, and \"quotes\"."
            k += 1
            gens = []
            for m, decs, reps in (("gpt4", ("greedy", "sampling"), ("no",)),
                                  ("mistral", ("greedy", "sampling"), ("yes", "no"))):
                for dec in decs:
                    for rp in reps:
                        gens.append((uid(), m, dec, rp, para(k, 2)))
                        k += 1
            rows.append([src, src, src, "human", "", "", "none", d, title, "", human])
            for gid, m, dec, rp, text in gens:
                prompt = f"Write the abstract for the article titled \"{title}\":"
                rows.append([gid, gid, src, m, dec, rp, "none", d, title, prompt, text])
            # the homoglyph variant of every text (RAID attacks human texts too)
            rows.append([uid(), src, src, "human", "", "", "homoglyph", d, title, "", homoglyph(human)])
            for gid, m, dec, rp, text in gens:
                rows.append([uid(), gid, src, m, dec, rp, "homoglyph", d, title, prompt, homoglyph(text)])
    return rows


def make_raid() -> None:
    out = HERE / "raid"
    train = raid_rows(["abstracts", "news"], 8, 100)
    # planted faults: an empty generation; an attack that changed nothing (the same text twice)
    train[3][10] = ""
    train[-1][10] = train[-8][10]
    write_csv(out / "train.csv", RAID_COLS, train)
    write_csv(out / "extra.csv", RAID_COLS, raid_rows(["czech"], 3, 900))
    (out / "README.md").write_text(
        "---\nconfigs:\n- config_name: raid\n  default: true\n  data_files:\n  - split: train\n    path: train.csv\n"
        "  - split: extra\n    path: extra.csv\n- config_name: raid_test\n  data_files:\n  - split: test\n"
        "    path: test.csv\nlicense: mit\n---\n\n# RAID format fixture (invented texts)\n", encoding="utf-8")
    r = random.Random(5)
    by_text: dict[str, float] = {}  # a deterministic detector: the same text, the same score
    preds = [{"id": row[0], "score": by_text.setdefault(row[10], round(r.random() * (1.4 if row[3] != "human" else 1.0),
                                                                         6))}
             for row in train if row[10]]
    (out / "predictions.json").write_text(json.dumps(preds), encoding="utf-8")


# -- M4: data/<DOMAIN>_<MODEL>.jsonl ------------------------------------------------------
def make_m4() -> None:
    out = HERE / "m4" / "data"
    humans = [para(200 + i) for i in range(3)]
    rows = [{"prompt": f"Generate a 150-220-word abstract for work with title: Paper {i}", "human_text": h,
             "machine_text": para(300 + i), "model": "gpt-3.5-turbo", "source": "arxiv", "source_ID": 704.0001 + i}
            for i, h in enumerate(humans)]
    write_jsonl(out / "arxiv_chatGPT.jsonl", rows)
    rows = [{"prompt": f"Generate a 150-220-word abstract for work with title: Paper {i}", "human_text": h,
             "machine_text": para(400 + i) if i else "", "model": "text-davinci-003", "source": "arxiv",
             "source_id": 704.0001 + i} for i, h in enumerate(humans)]  # source_id spelling; an empty machine text
    write_jsonl(out / "arxiv_davinci.jsonl", rows)
    rows = [{"Unnamed: 0": i, "prompt": f"关于问题{i}的回答", "human_text": f"这是人写的第{i}个回答，内容很长。",
             "machine_text": f"这是模型生成的第{i}个回答。", "model": "llama-2-70b-chat", "source": "baike",
             "source_ID": f"qid_{8546502328027689775 + i}"} for i in range(2)]
    write_jsonl(out / "test_qazh_llama2.jsonl", rows)


# -- SemEval-2024 Task 8 --------------------------------------------------------------------
def make_semeval() -> None:
    out = HERE / "semeval"
    rows = [{"text": para(500 + i), "label": i % 2, "model": "human" if i % 2 == 0 else "chatGPT",
             "source": ["wikihow", "reddit", "arxiv"][i % 3], "id": i} for i in range(6)]
    rows[4]["model"] = "davinci"  # planted: label 0 with a model name (reported, label kept)
    write_jsonl(out / "subtaskA" / "subtaskA_train_monolingual.jsonl", rows)
    rows = [{"text": para(600 + i), "label": i, "model": ["human", "chatGPT", "cohere", "davinci", "bloomz",
                                                            "dolly"][i], "source": "wikipedia", "id": i}
            for i in range(6)]
    write_jsonl(out / "subtaskB" / "subtaskB_dev.jsonl", rows)
    c_rows, gold, test, preds = [], [], [], []
    for i in range(8):
        human = " ".join(sentence(700 + i * 3 + j, 7 + j) for j in range(1 + i % 3))
        machine = " ".join(sentence(800 + i * 3 + j, 8) for j in range(2))
        text = human + " " + machine
        label = len(human.split(" "))
        c_rows.append({"id": uid(), "label": label, "text": text})
    c_rows.append({"id": uid(), "label": 0, "text": para(901)})  # all machine
    write_jsonl(out / "subtaskC" / "subtaskC_train.jsonl", c_rows)
    for i in range(4):
        human = sentence(950 + i, 10 + i)
        text = human + " " + sentence(960 + i, 12) + "  Double  spaces  keep  empty  words."
        tid = uid()
        test.append({"id": tid, "text": text})
        gold.append({"id": tid, "label": len(human.split(" "))})
        preds.append({"id": tid, "label": len(human.split(" ")) + (i - 1) * 2})
    write_jsonl(out / "subtaskC" / "subtaskC_test.jsonl", test)
    write_jsonl(out / "subtaskC" / "subtaskC_test_gold.jsonl", gold)
    write_jsonl(out / "subtaskC" / "predictions.jsonl", preds)


# -- MAGE: train.csv, valid.csv, test.csv, the two wilder sets ---------------------------------
def make_mage() -> None:
    out = HERE / "mage"
    train = [[para(1000 + i), "1", f"{d}_human"] for i, d in enumerate(["cmv", "yelp", "sci_gen", "xsum"])]
    train += [[para(1100 + i), "0", s] for i, s in enumerate(
        ["cmv_machine_specified_gpt-3.5-trubo", "roct_machine_continuation_flan_t5_large",
         "sci_gen_machine_topical_opt_13b", "xsum_machine_continuation_gpt_j"])]
    train.append([train[0][0], "1", "cmv_human"])  # planted: repeated within the split
    train.append([para(1190), "1", "eli5_machine_continuation_t0_3b"])  # planted: label contradicts src
    write_csv(out / "train.csv", ["text", "label", "src"], train)
    write_csv(out / "valid.csv", ["text", "label", "src"], [[para(1200), "1", "tldr_human"],
                                                             [para(1201), "0", "tldr_machine_specified_GLM130B"]])
    test = [[train[4][0], "0", "cmv_machine_specified_gpt-3.5-trubo"],  # planted: repeated across splits
            [train[1][0], "0", "yelp_machine_continuation_opt_350m"],  # planted: across splits, other label
            [para(1300), "1", "wp_human"]]
    write_csv(out / "test.csv", ["text", "label", "src"], test)
    write_csv(out / "test_ood_set_gpt.csv", ["text", "label", "src"],
              [[para(1400), "1", "cnn_human"], [para(1401), "0", "cnn_machine_gpt4"]])
    write_csv(out / "test_ood_set_gpt_para.csv", ["text", "label", "src"],
              [[para(1500), "0", "cnn_human_para"], [para(1501), "0", "cnn_machine_gpt4_para"]])


# -- HC3: <config>.jsonl ------------------------------------------------------------------------
def make_hc3() -> None:
    out = HERE / "hc3"
    fin = [{"question": f"Why would a bank {sentence(1600 + i, 6).lower()}", "human_answers": [para(1610 + i)],
            "chatgpt_answers": [para(1620 + i), para(1630 + i)], "index": None, "source": "finance"}
           for i in range(2)]
    fin[1]["human_answers"].append("")  # planted: an empty answer
    write_jsonl(out / "finance.jsonl", fin)
    qa = [{"id": str(i), "question": f"What is {WORDS[i]}?", "human_answers": [para(1700 + i)],
           "chatgpt_answers": [para(1710 + i)], "source": "open_qa"} for i in range(2)]
    write_jsonl(out / "open_qa.jsonl", qa)
    write_jsonl(out / "all.jsonl", fin + qa)


# -- DetectRL: Benchmark/Benchmark_Data/<Task>/<setting>_<split>.json ---------------------------
def make_detectrl() -> None:
    out = HERE / "detectrl" / "Benchmark" / "Benchmark_Data"
    md = [{"text": para(1800 + i), "label": "human", "data_type": "abstract", "llm_type": "ChatGPT"} for i in range(2)]
    md += [{"text": para(1810 + i), "label": "llm", "data_type": dt, "llm_type": llm} for i, (dt, llm) in enumerate(
        [("direct_prompt", "ChatGPT"), ("prompt_SICO", "Google-PaLM"), ("paraphrase_dipper_llm", "Claude-instant"),
         ("adversarial_character_llm", "Llama-2-70b")])]
    (out / "Multi_Domain").mkdir(parents=True, exist_ok=True)
    (out / "Multi_Domain" / "multi_domains_arxiv_test.json").write_text(json.dumps(md, indent=4), encoding="utf-8")
    ph = [{"text": para(1900), "label": "human", "data_type": "paraphrase_polish_human", "llm_type": "ChatGPT"},
          {"text": para(1901), "label": "llm", "data_type": "direct_prompt", "llm_type": "ChatGPT"}]
    (out / "Paraphrase_Attacks_Human").mkdir(parents=True, exist_ok=True)
    (out / "Paraphrase_Attacks_Human" / "paraphrase_polish_human_test.json").write_text(json.dumps(ph, indent=4),
                                                                                          encoding="utf-8")
    vl = [{"text": sentence(2000, 12), "data_type": "story", "label": "human", "text_length": 12},
          {"text": sentence(2001, 12), "data_type": "direct_prompt", "label": "llm", "text_length": 12}]
    (out / "Varying_Length").mkdir(parents=True, exist_ok=True)
    (out / "Varying_Length" / "cross_length_20_test.json").write_text(json.dumps(vl, indent=4), encoding="utf-8")


# -- Beemo: the Hub repository layout (card with configs + data/train-*.parquet) ---------------
def make_beemo() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = HERE / "beemo"
    rows = []
    for i in range(3):
        mo = para(2100 + i)
        edits = lambda ed: repr([{"P1": f"{ed} rewrite one of {i}. " + sentence(2200 + i)},  # noqa: E731
                                 {"P2": f"{ed} rewrite two of {i}. " + sentence(2210 + i)},
                                 {"P3": f"{ed}'s \"third\" rewrite of {i}."}])
        rows.append({"id": 214 + i, "category": ["Generation", "Open QA", "Rewrite"][i],
                     "model": ["HuggingFaceH4/zephyr-7b-beta", "mistralai/Mistral-7B-Instruct-v0.1",
                               "allenai/tulu-2-13b"][i],
                     "prompt_id": uuid.UUID(int=RNG.getrandbits(128)).hex, "prompt": f"Write about {WORDS[i]}.",
                     "model_output": mo, "human_output": para(2300 + i), "human_edits": mo.replace(".", "!", 1),
                     "llama-3.1-70b_edits": edits("Llama"), "gpt-4o_edits": edits("GPT") if i != 2 else "[]"})
    table = pa.Table.from_pylist(rows, schema=pa.schema(
        [("id", pa.int64())] + [(c, pa.string()) for c in ["category", "model", "prompt_id", "prompt", "model_output",
                                                          "human_output", "human_edits", "llama-3.1-70b_edits",
                                                          "gpt-4o_edits"]]))
    (out / "data").mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out / "data" / "train-00000-of-00001.parquet")
    feats = "".join(f"  - name: {f.name}\n    dtype: {'int64' if f.name == 'id' else 'string'}\n" for f in table.schema)
    (out / "README.md").write_text(
        "---\nlanguage:\n- en\nlicense: mit\npretty_name: Beemo\ndataset_info:\n  features:\n" + feats +
        "  splits:\n  - name: train\n    num_examples: 3\nconfigs:\n- config_name: default\n  data_files:\n"
        "  - split: train\n    path: data/train-*\n---\n\n# Beemo format fixture (invented texts)\n", encoding="utf-8")


if __name__ == "__main__":
    make_raid()
    make_m4()
    make_semeval()
    make_mage()
    make_hc3()
    make_detectrl()
    make_beemo()
