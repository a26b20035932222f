"""The public corpora's importers on format fixtures (``tests/data/public/``: the exact
released layouts with invented texts; see ``make_fixtures.py`` there).

Every importer maps each released field, reports the release's known faults, refuses a
renamed column with the file and the column, and leaves the workspace as it was on error.
Files published on the Hub are read through ``datasets`` from a local copy laid out as the
Hub repository, by the same call a user makes online (only the location differs).
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from veribench.errors import InputError

PUBLIC = Path(__file__).resolve().parents[1] / "data" / "public"
RAID_COLS = ["id", "adv_source_id", "source_id", "model", "decoding", "repetition_penalty", "attack", "domain",
             "title", "prompt", "generation"]


def docs(ws, where: str = "", params=None) -> dict[str, dict]:
    rows = ws.query("SELECT doc_id, label, arm, kind, subgroup, tags, group_key, provenance, generation, text, "
                    f"s.segments FROM documents LEFT JOIN document_segments s USING (doc_id) {where}", params or [])
    out = {}
    for r in rows:
        out[r[0]] = {"label": r[1], "arm": r[2], "kind": r[3], "subgroup": r[4], "tags": json.loads(r[5] or "{}"),
                     "group_key": r[6], "provenance": json.loads(r[7] or "{}"),
                     "generation": json.loads(r[8]) if r[8] else None, "text": r[9],
                     "segments": json.loads(r[10]) if r[10] else None}
    return out


def csv_rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def rename_column(src: Path, dst: Path, old: str, new: str) -> Path:
    text = src.read_text(encoding="utf-8")
    head, rest = text.split("\n", 1)
    dst.write_text(",".join(new if c == old else c for c in head.split(",")) + "\n" + rest, encoding="utf-8")
    return dst


# -- RAID -------------------------------------------------------------------------------------
def test_raid_maps_every_column(workspace):
    from veribench.corpus.importers.raid import import_raid

    rep = import_raid(workspace, PUBLIC / "raid" / "train.csv", progress=False)
    rows = csv_rows(PUBLIC / "raid" / "train.csv")
    d = docs(workspace)
    kept = [r for r in rows if r["generation"]]
    assert rep.documents == len(kept) == len(d) == len(rows) - 1
    assert any("empty generation" in n and "1 records" in n for n in rep.notes)  # the planted fault
    assert any("duplicate texts" in n for n in rep.notes) and rep.duplicates
    for r in kept:
        x = d[r["id"]]
        assert x["text"] == r["generation"]
        assert x["label"] == ("human" if r["model"] == "human" else "ai")
        assert x["arm"] == ("A" if r["model"] == "human" else "C")
        assert x["kind"] == x["subgroup"] == x["tags"]["domain"] == r["domain"]
        assert x["group_key"] == r["source_id"]
        assert x["provenance"]["raid_source_id"] == r["source_id"]
        assert x["provenance"]["adv_source_id"] == r["adv_source_id"]
        assert x["provenance"]["title"] == r["title"]
        assert x["provenance"]["licence"] == "MIT"
        assert x["tags"]["attack"] == r["attack"] and x["tags"]["split"] == "train"
        assert x["tags"]["model"] == r["model"] and x["tags"]["language"] == "en"
        if r["attack"] != "none":  # derived-document contract
            assert x["tags"]["derivation"] == "attack"
            assert x["provenance"]["source_id"] == r["adv_source_id"]
        else:
            assert "derivation" not in x["tags"] and "source_id" not in x["provenance"]
        if r["model"] == "human":
            assert x["generation"] is None and "decoding" not in x["tags"]
        else:
            g = x["generation"]
            assert g["model"] == r["model"] and g["prompt"] == r["prompt"]
            assert g["temperature"] == {"greedy": 0.0, "sampling": 1.0}[r["decoding"]]
            assert g["settings"]["decoding"] == r["decoding"] == x["tags"]["decoding"]
            assert g["settings"]["raid_repetition_penalty"] == r["repetition_penalty"] == x["tags"]["repetition_penalty"]
            assert g["settings"].get("repetition_penalty") == (1.2 if r["repetition_penalty"] == "yes" else None)
    stored = json.loads(workspace.query("SELECT report FROM imports")[0][0])
    assert stored["kind"] == "raid" and stored["documents"] == len(kept)


def test_raid_hub_layout_reads_both_splits_through_datasets(workspace):
    """A local copy of the Hub repository (card with configs + train.csv + extra.csv):
    the folder is read like ``hf://datasets/liamdugan/raid``."""
    from veribench.corpus.importers.raid import import_raid

    rep = import_raid(workspace, PUBLIC / "raid", progress=False)
    assert set(rep.sets) == {"train", "extra"}
    extra = docs(workspace, "WHERE json_extract_string(tags, '$.split') = 'extra'")
    assert extra and all(x["tags"]["language"] == "cs" for x in extra.values())
    # re-importing the same release stores nothing twice
    rep2 = import_raid(workspace, PUBLIC / "raid", progress=False)
    assert rep2.documents == 0 and rep2.already_present == rep.documents


def test_raid_renamed_column_fails_loudly(workspace, tmp_path):
    from veribench.corpus.importers.raid import import_raid

    bad = rename_column(PUBLIC / "raid" / "train.csv", tmp_path / "train.csv", "generation", "text")
    with pytest.raises(InputError) as e:
        import_raid(workspace, bad, progress=False)
    assert e.value.field == "generation" and "'text'" in str(e.value) and str(bad) in str(e.value)
    assert workspace.document_count() == 0


def test_raid_test_split_without_labels_is_refused(workspace, tmp_path):
    from veribench.corpus.importers.raid import import_raid

    rows = csv_rows(PUBLIC / "raid" / "train.csv")[:3]
    cols = [c for c in RAID_COLS if c not in ("model", "decoding", "repetition_penalty")]
    with open(tmp_path / "test.csv", "w", newline="") as f:
        w = csv.DictWriter(f, cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    with pytest.raises(InputError, match="without labels"):
        import_raid(workspace, tmp_path / "test.csv", progress=False)


def test_raid_error_mid_file_rolls_back_everything(workspace, tmp_path):
    """A bad record after several batches: nothing of the import stays."""
    from veribench.corpus.importers.raid import import_raid

    rows = csv_rows(PUBLIC / "raid" / "train.csv")
    rows[-1]["id"] = rows[0]["id"]  # the same id with another text: refused
    with open(tmp_path / "train.csv", "w", newline="") as f:
        w = csv.DictWriter(f, RAID_COLS)
        w.writeheader()
        w.writerows(rows)
    with pytest.raises(InputError, match="appears twice with a different text"):
        import_raid(workspace, tmp_path / "train.csv", batch_size=7, progress=False)
    assert workspace.document_count() == 0
    assert workspace.query("SELECT count(*) FROM imports")[0][0] == 0


def test_raid_predictions_import_as_scores(workspace):
    from veribench.corpus.importers import import_scores
    from veribench.corpus.importers.raid import import_raid

    import_raid(workspace, PUBLIC / "raid" / "train.csv", progress=False)
    rep = import_scores(workspace, PUBLIC / "raid" / "predictions.json", detector="my-detector", scale="score_higher_ai")
    preds = json.loads((PUBLIC / "raid" / "predictions.json").read_text())
    assert sum(rep.scores.values()) == len(preds)
    got = dict(workspace.query("SELECT u.doc_id, c.raw FROM submissions u JOIN scores c USING (spec_hash) "
                               "WHERE c.text_sha256 = u.submitted_sha256"))
    assert all(got[p["id"]] == pytest.approx(p["score"]) for p in preds)
    # scores are keyed by the submitted text: RAID's repeated texts share one stored score
    n_texts = workspace.query("SELECT count(DISTINCT text_sha256) FROM documents")[0][0]
    assert workspace.query("SELECT count(*) FROM scores")[0][0] == n_texts < len(preds)


# -- M4 -----------------------------------------------------------------------------------------
def test_m4_pairs_shared_humans_and_key_spellings(workspace):
    from veribench.corpus.importers.m4 import import_m4, parse_name

    assert parse_name("bulgarian_true_and_fake_news_chatGPT.jsonl") == ("bulgarian_true_and_fake_news", "chatGPT", None)
    assert parse_name("test_id-newspaper_llama2.jsonl") == ("id-newspaper", "llama2", "test")
    rep = import_m4(workspace, PUBLIC / "m4" / "data", progress=False)
    d = docs(workspace)
    humans = {k: v for k, v in d.items() if v["label"] == "human"}
    ais = {k: v for k, v in d.items() if v["label"] == "ai"}
    assert len(humans) == 3 + 2  # 3 arxiv humans shared by two generator files, 2 qazh
    assert len(ais) == 3 + 2 + 2  # one arxiv_davinci line has an empty machine_text
    assert any("repeated across generator files" in n and "3 records" in n for n in rep.notes)
    assert any("empty machine_text" in n for n in rep.notes)
    assert any("Unnamed: 0" in n for n in rep.notes)
    line = json.loads((PUBLIC / "m4" / "data" / "arxiv_davinci.jsonl").read_text().splitlines()[1])
    x = ais["m4:arxiv_davinci:2"]
    assert x["text"] == line["machine_text"] and x["generation"]["model"] == "text-davinci-003"
    assert x["generation"]["prompt"] == line["prompt"] and x["provenance"]["m4_source_id"] == str(line["source_id"])
    assert x["tags"]["generator_file"] == "davinci" and x["tags"]["source"] == "arxiv"
    h = humans[x["group_key"]]
    assert h["text"] == line["human_text"] and h["tags"]["model"] == "human"
    zh = [v for v in d.values() if v["tags"]["domain"] == "qazh"]
    assert zh and all(v["tags"]["language"] == "zh" and v["tags"]["split"] == "test" for v in zh)


def test_m4_renamed_key_fails_loudly(workspace, tmp_path):
    from veribench.corpus.importers.m4 import import_m4

    src = (PUBLIC / "m4" / "data" / "arxiv_chatGPT.jsonl").read_text().replace('"machine_text"', '"machine"')
    (tmp_path / "arxiv_chatGPT.jsonl").write_text(src)
    with pytest.raises(InputError) as e:
        import_m4(workspace, tmp_path / "arxiv_chatGPT.jsonl", progress=False)
    assert e.value.field == "machine_text" and e.value.record == "line 1" and "'machine'" in str(e.value)
    assert workspace.document_count() == 0


# -- SemEval-2024 Task 8 ------------------------------------------------------------------------
def test_semeval_a_b_labels_and_models(workspace):
    from veribench.corpus.importers.semeval import import_semeval

    rep = import_semeval(workspace, PUBLIC / "semeval" / "subtaskA" / "subtaskA_train_monolingual.jsonl",
                         progress=False)
    import_semeval(workspace, PUBLIC / "semeval" / "subtaskB" / "subtaskB_dev.jsonl", progress=False)
    d = docs(workspace)
    a = d["semeval2024t8:A:train:monolingual:1"]
    assert a["label"] == "ai" and a["generation"]["model"] == "chatGPT" and a["tags"]["source"] == "reddit"
    assert a["tags"]["class"] == "1" and a["provenance"]["semeval_id"] == "1"
    assert d["semeval2024t8:A:train:monolingual:0"]["label"] == "human"
    assert any("contradicts model 'davinci'" in n for n in rep.notes)  # the planted inconsistency
    b = {k: v for k, v in d.items() if ":B:" in k}
    assert [b[f"semeval2024t8:B:dev:{i}"]["tags"]["class"] for i in range(6)] == [str(i) for i in range(6)]
    assert b["semeval2024t8:B:dev:3"]["generation"]["model"] == "davinci"
    assert b["semeval2024t8:B:dev:0"]["label"] == "human"


def test_semeval_c_boundaries_become_character_segments(workspace):
    from veribench.corpus.importers.semeval import import_semeval
    from veribench.metrics.segmentation import boundary_word

    import_semeval(workspace, PUBLIC / "semeval" / "subtaskC" / "subtaskC_train.jsonl", progress=False)
    lines = [json.loads(x) for x in (PUBLIC / "semeval" / "subtaskC" / "subtaskC_train.jsonl").read_text().splitlines()]
    d = docs(workspace)
    for ln in lines:
        x = d[f"semeval2024t8:C:train:{ln['id']}"]
        assert x["tags"]["boundary_word"] == str(ln["label"])
        if ln["label"] == 0:
            assert x["label"] == "ai" and x["segments"] is None
            continue
        assert x["label"] == "mixed"
        (h, m) = x["segments"]
        assert (h["start"], h["label"], m["label"], m["end"]) == (0, "human", "ai", len(ln["text"]))
        assert h["end"] == m["start"]
        words = ln["text"].split(" ")
        assert ln["text"][m["start"]:] == " ".join(words[ln["label"]:])  # the machine part starts at the word
        assert boundary_word(ln["text"], m["start"]) == ln["label"]


def test_semeval_test_file_needs_its_gold_labels(workspace):
    from veribench.corpus.importers.semeval import import_semeval

    sub = PUBLIC / "semeval" / "subtaskC"
    with pytest.raises(InputError, match="gold"):
        import_semeval(workspace, sub / "subtaskC_test.jsonl", progress=False)
    rep = import_semeval(workspace, sub / "subtaskC_test.jsonl", gold=sub / "subtaskC_test_gold.jsonl", progress=False)
    assert rep.documents == 4


# -- MAGE ---------------------------------------------------------------------------------------
def test_mage_labels_src_and_known_duplicates(workspace):
    from veribench.corpus.importers.mage import import_mage, parse_src

    assert parse_src("roct_machine_continuation_flan_t5_large") == {
        "domain": "roct", "role": "machine", "prompt_type": "continuation", "model": "flan_t5_large"}
    assert parse_src("sci_gen_human")["domain"] == "sci_gen"
    rep = import_mage(workspace, PUBLIC / "mage", progress=False)
    assert set(rep.sets) == {"train", "validation", "test", "test_ood_gpt", "test_ood_gpt_para"}
    d = docs(workspace)
    assert d["mage:train:0"]["label"] == "human"  # MAGE: label 1 = human
    x = d["mage:train:5"]
    assert x["label"] == "ai" and x["generation"]["model"] == "flan_t5_large" and x["kind"] == "roct"
    assert x["tags"]["prompt_type"] == "continuation" and x["tags"]["src"] == "roct_machine_continuation_flan_t5_large"
    assert all(v["tags"]["derivation"] == "paraphrase" for k, v in d.items() if k.startswith("mage:test_ood_gpt_para:"))
    # the planted faults: within train, across train/test, and a group whose labels disagree
    note = next(n for n in rep.notes if n.startswith("duplicate texts"))
    assert "6 records in 3 groups" in note and "2 groups span several splits" in note
    assert "1 groups carry different labels" in note
    assert any(g.get("labels") == ["ai", "human"] for g in rep.duplicates)
    assert any("contradicts src 'eli5_machine_continuation_t0_3b'" in n for n in rep.notes)


def test_mage_renamed_column_fails_loudly(workspace, tmp_path):
    from veribench.corpus.importers.mage import import_mage

    bad = rename_column(PUBLIC / "mage" / "train.csv", tmp_path / "train.csv", "src", "source")
    with pytest.raises(InputError) as e:
        import_mage(workspace, bad, progress=False)
    assert e.value.field == "src" and "'source'" in str(e.value)


# -- HC3 ----------------------------------------------------------------------------------------
def test_hc3_every_answer_is_a_document(workspace):
    from veribench.corpus.importers.hc3 import import_hc3

    rep = import_hc3(workspace, PUBLIC / "hc3", progress=False)
    assert set(rep.sets) == {"finance", "open_qa"}  # all.jsonl (the union) is not read by default
    d = docs(workspace)
    fin = [json.loads(x) for x in (PUBLIC / "hc3" / "finance.jsonl").read_text().splitlines()]
    assert d["hc3:en:finance:0:c1"]["text"] == fin[0]["chatgpt_answers"][1]
    assert d["hc3:en:finance:0:c1"]["generation"]["prompt"] == fin[0]["question"]
    assert d["hc3:en:finance:0:h0"]["label"] == "human"
    assert d["hc3:en:finance:0:h0"]["group_key"] == d["hc3:en:finance:0:c0"]["group_key"] == "hc3:en:finance:0"
    assert "hc3:en:finance:1:h1" not in d and any("empty human_answers" in n for n in rep.notes)
    assert d["hc3:en:open_qa:1:h0"]["provenance"]["hc3_id"] == "1"
    assert sum(v["label"] == "ai" for v in d.values()) == 4 + 2


def test_hc3_renamed_key_fails_loudly(workspace, tmp_path):
    from veribench.corpus.importers.hc3 import import_hc3

    (tmp_path / "finance.jsonl").write_text((PUBLIC / "hc3" / "finance.jsonl").read_text().replace(
        '"chatgpt_answers"', '"gpt_answers"'))
    with pytest.raises(InputError) as e:
        import_hc3(workspace, tmp_path / "finance.jsonl", progress=False)
    assert e.value.field == "chatgpt_answers" and "'gpt_answers'" in str(e.value)


# -- DetectRL ------------------------------------------------------------------------------------
def test_detectrl_settings_domains_and_attacks(workspace):
    from veribench.corpus.importers.detectrl import import_detectrl

    import_detectrl(workspace, PUBLIC / "detectrl", progress=False)
    d = docs(workspace)
    md = {k: v for k, v in d.items() if k.startswith("detectrl:multi_domains_arxiv:test:")}
    assert len(md) == 6 and all(v["tags"]["domain"] == "arxiv" for v in md.values())
    assert md["detectrl:multi_domains_arxiv:test:0"]["label"] == "human"
    sico = md["detectrl:multi_domains_arxiv:test:3"]
    assert sico["tags"]["attack"] == "prompt_SICO" and "derivation" not in sico["tags"]
    assert sico["generation"]["model"] == "Google-PaLM"
    assert md["detectrl:multi_domains_arxiv:test:4"]["tags"]["derivation"] == "paraphrase"
    assert md["detectrl:multi_domains_arxiv:test:5"]["tags"]["derivation"] == "attack"
    polished = d["detectrl:paraphrase_polish_human:test:0"]
    assert polished["label"] == "human" and polished["tags"]["derivation"] == "paraphrase"  # DetectRL's label kept
    assert d["detectrl:cross_length_20:test:0"]["tags"]["text_length"] == "12"
    assert d["detectrl:cross_length_20:test:0"]["tags"]["domain"] == "writing_prompt"


# -- Beemo --------------------------------------------------------------------------------------
def test_beemo_hub_layout_gives_every_version(workspace):
    import pyarrow.parquet as pq

    from veribench.corpus.importers.beemo import import_beemo

    rep = import_beemo(workspace, PUBLIC / "beemo", progress=False)
    rows = pq.read_table(PUBLIC / "beemo" / "data" / "train-00000-of-00001.parquet").to_pylist()
    d = docs(workspace)
    # per row: human, model, expert, 3 llama rewrites, 3 gpt rewrites (the last row has no gpt rewrites)
    assert len(d) == 3 * 9 - 3 == rep.documents
    r = rows[0]
    rid = r["id"]
    assert d[f"beemo:{rid}:human"]["label"] == "human"
    m = d[f"beemo:{rid}:model"]
    assert m["label"] == "ai" and m["generation"]["model"] == r["model"] and m["generation"]["prompt"] == r["prompt"]
    ex = d[f"beemo:{rid}:expert"]
    assert ex["label"] == "ai-edited-human" and ex["arm"] == "C2" and ex["text"] == r["human_edits"]
    assert ex["tags"]["derivation"] == "edit" and ex["provenance"]["source_id"] == f"beemo:{rid}:model"
    ll = d[f"beemo:{rid}:llama-3.1-70b:P3"]
    assert ll["text"] == "Llama's \"third\" rewrite of 0." and ll["tags"]["attack"] == "llama-3.1-70b/P3"
    assert ll["tags"]["derivation"] == "humanize" and ll["generation"]["model"] == "llama-3.1-70b"
    assert len({v["group_key"] for v in d.values()}) == 3
    assert all(v["kind"] == v["tags"]["category"] for v in d.values())


def test_beemo_parquet_file_and_a_bad_edits_cell(workspace, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from veribench.corpus.importers.beemo import import_beemo

    t = pq.read_table(PUBLIC / "beemo" / "data" / "train-00000-of-00001.parquet")
    rep = import_beemo(workspace, PUBLIC / "beemo" / "data" / "train-00000-of-00001.parquet", progress=False)
    assert rep.documents == 24
    bad = t.set_column(t.schema.get_field_index("gpt-4o_edits"), "gpt-4o_edits",
                       pa.array(["__import__('os').system('true')"] * t.num_rows))
    pq.write_table(bad, tmp_path / "beemo.parquet")
    with pytest.raises(InputError, match="literal list"):
        import_beemo(workspace, tmp_path / "beemo.parquet", corpus="beemo2", progress=False)


# -- CLI ----------------------------------------------------------------------------------------
def test_cli_imports_each_public_corpus(tmp_path):
    from typer.testing import CliRunner

    from veribench.cli.main import app

    ws = str(tmp_path / "ws")
    run = CliRunner()
    for args in (["raid", str(PUBLIC / "raid" / "train.csv")], ["m4", str(PUBLIC / "m4" / "data")],
                 ["semeval", str(PUBLIC / "semeval" / "subtaskC" / "subtaskC_train.jsonl")],
                 ["mage", str(PUBLIC / "mage")], ["hc3", str(PUBLIC / "hc3")], ["detectrl", str(PUBLIC / "detectrl")],
                 ["beemo", str(PUBLIC / "beemo")]):
        r = run.invoke(app, ["import", *args, "-w", ws, "-q", "--no-progress"])
        assert r.exit_code == 0, r.output
        assert "documents" in r.output
    shutil.copy(PUBLIC / "mage" / "train.csv", tmp_path / "train.csv")
    rename_column(PUBLIC / "mage" / "train.csv", tmp_path / "train.csv", "label", "labels")
    r = run.invoke(app, ["import", "mage", str(tmp_path / "train.csv"), "-w", ws, "-q"])
    assert r.exit_code == 1 and "column 'label'" in r.output and "Traceback" not in r.output


def test_interrupted_streamed_import_leaves_nothing(workspace):
    """Batches are committed as they go; Ctrl-C (or any error) deletes the import's documents,
    and an import killed outright is removed by the next streamed import."""
    from veribench.corpus.importers._stream import StreamWriter
    from veribench.corpus.report import ImportReport

    # a document stored by another import is never touched
    workspace.con.execute("INSERT INTO documents (doc_id, text_sha256, label, import_id) VALUES ('kept', 'x', 'human', "
                          "'jsonl-1')")

    def docs_of(k):
        return [{"id": f"d{k}-{i}", "text": f"text {k} {i}", "label": "ai"} for i in range(25)]

    with pytest.raises(KeyboardInterrupt):
        with StreamWriter(workspace, ImportReport(kind="raid", source="x"), batch_size=10, progress=False) as w:
            for d in docs_of(1):
                w.add(d, record=d["id"], set_name="train", file="x")
            assert workspace.document_count() == 1 + 20  # two batches committed
            raise KeyboardInterrupt
    assert workspace.query("SELECT doc_id FROM documents") == [("kept",)]
    assert workspace.query("SELECT count(*) FROM imports")[0][0] == 0
    # a killed import: its in_progress row and committed batches stay until the next import
    w = StreamWriter(workspace, ImportReport(kind="raid", source="x"), batch_size=10, progress=False).__enter__()
    for d in docs_of(2):
        w.add(d, record=d["id"], set_name="train", file="x")
    assert workspace.document_count() == 21
    w.progress.close()  # a killed process ends its reporter with it; this one stays alive
    rep = ImportReport(kind="mage", source="y")
    with StreamWriter(workspace, rep, progress=False) as w2:
        w2.add({"id": "new", "text": "a new text", "label": "human"}, record=0, set_name="train", file="y")
    assert sorted(r[0] for r in workspace.query("SELECT doc_id FROM documents")) == ["kept", "new"]
    assert any("removed an interrupted import" in n and "20 documents" in n for n in rep.notes)
    assert workspace.query("SELECT kind, json_extract_string(report, '$.status') FROM imports") == [("mage", "done")]


@pytest.mark.parametrize("name,rel,old,new", [
    ("semeval", "semeval/subtaskC/subtaskC_train.jsonl", '"label"', '"labels"'),
    ("semeval", "semeval/subtaskA/subtaskA_train_monolingual.jsonl", '"model"', '"generator"'),
    ("detectrl", "detectrl/Benchmark/Benchmark_Data/Multi_Domain/multi_domains_arxiv_test.json", '"data_type"', '"type"'),
])
def test_renamed_keys_fail_loudly(workspace, tmp_path, name, rel, old, new):
    from veribench.corpus.importers.detectrl import import_detectrl
    from veribench.corpus.importers.semeval import import_semeval

    src = PUBLIC / rel
    dst = tmp_path / src.name
    dst.write_text(src.read_text().replace(old, new))
    with pytest.raises(InputError) as e:
        {"semeval": import_semeval, "detectrl": import_detectrl}[name](workspace, dst, progress=False)
    assert e.value.field == old.strip('"') and new.strip('"') in str(e.value) and str(dst) in str(e.value)
    assert workspace.document_count() == 0


def test_beemo_renamed_column_fails_loudly(workspace, tmp_path):
    import pyarrow.parquet as pq

    from veribench.corpus.importers.beemo import import_beemo

    t = pq.read_table(PUBLIC / "beemo" / "data" / "train-00000-of-00001.parquet")
    pq.write_table(t.rename_columns(["human_edit" if c == "human_edits" else c for c in t.column_names]),
                   tmp_path / "beemo.parquet")
    with pytest.raises(InputError) as e:
        import_beemo(workspace, tmp_path / "beemo.parquet", progress=False)
    assert e.value.field == "human_edits" and "'human_edit'" in str(e.value)


def test_segments_enter_through_jsonl_and_are_checked(workspace, tmp_path):
    """The corpus schema's ``segments`` (character offsets tiling a mixed text)."""
    from pydantic import ValidationError

    from veribench.corpus.document import Document, boundaries
    from veribench.corpus.importers import import_documents

    text = "Written by a person. Then a model went on."
    seg = [{"start": 0, "end": 21, "label": "human"}, {"start": 21, "end": len(text), "label": "ai"}]
    (tmp_path / "mixed.jsonl").write_text(json.dumps({"id": "m1", "text": text, "label": "mixed", "segments": seg})
                                          + "\n" + json.dumps({"id": "h1", "text": "Only a person.", "label": "human"})
                                          + "\n")
    import_documents(workspace, tmp_path / "mixed.jsonl")
    assert workspace.segments_for(["m1", "h1"]) == {"m1": seg}
    assert boundaries(Document(id="m1", text=text, label="mixed", segments=seg).segments) == [21]
    for bad, why in (([{"start": 0, "end": 10, "label": "human"}, {"start": 12, "end": len(text), "label": "ai"}], "tile"),
                     ([{"start": 0, "end": 21, "label": "human"}, {"start": 21, "end": 99, "label": "ai"}], "characters"),
                     ([{"start": 5, "end": len(text), "label": "ai"}], "character 0")):
        with pytest.raises(ValidationError, match=why):
            Document(id="x", text=text, label="mixed", segments=bad)
    with pytest.raises(ValidationError, match="mixed"):
        Document(id="x", text=text, label="ai", segments=seg)
