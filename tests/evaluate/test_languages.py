"""Issue 27, languages and length: each text's language is identified at import, a detector's
declared languages exclude the texts outside them (counted per detector with the reason),
and ``language`` and ``length`` are Table 2 slices with FPR gaps and intervals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from veribench import registry
from veribench.commit import commit
from veribench.evaluate import evaluate_workspace
from veribench.evaluate.slices import length_band
from veribench.evaluate.tables import markdown
from veribench.hashing import text_sha256
from veribench.protocol.model import load_protocol
from veribench.records import ScoreResult
from veribench.spec import Spec
from veribench.store import writes
from veribench.text.language import identify
from veribench.text.words import word_count

SENTENCES = {
    "en": "The committee discussed the new budget for the public library and agreed to open it on Sundays.",
    "de": "Der Ausschuss hat den neuen Haushalt der Stadtbibliothek besprochen und beschlossen, sonntags zu öffnen.",
    "es": "El comité discutió el nuevo presupuesto de la biblioteca pública y acordó abrirla los domingos.",
}
#: Sentences per text: three length bands (about 17, 136 and 340 words).
REPEATS = (1, 8, 20)


def _corpus(ws, per_lang: int = 12) -> list[dict]:
    """``per_lang`` texts per language, half human and half AI, over the three length bands,
    written through the one write path (``writes.add_documents``)."""
    docs = []
    for lang, sent in SENTENCES.items():
        for i in range(per_lang):
            text = " ".join([f"({i})"] + [sent] * REPEATS[i % 3])
            docs.append({"doc_id": f"{lang}{i:02d}", "corpus": "mix", "text": text, "text_sha256": text_sha256(text),
                         "label": "human" if i % 2 == 0 else "ai", "arm": "A" if i % 2 == 0 else "C",
                         "kind": "essay", "subgroup": lang, "tags": None, "group_key": None, "provenance": None,
                         "generation": None, "import_id": "imp1", "lang": lang})
    cols = {c: [d[c] for d in docs] for c in writes.DOCUMENT_COLUMNS}
    with ws.transaction() as con:
        writes.add_documents(con, pa.table({c: pa.array(v, pa.string()) for c, v in cols.items()}))
    return docs


def _scores(ws, docs, name: str, settings: dict | None = None) -> np.ndarray:
    """Probabilities that flag every AI text and the human texts whose index is 0 mod 4."""
    p = np.array([0.9 if d["label"] == "ai" or int(d["doc_id"][2:]) % 4 == 0 else 0.1 for d in docs])
    spec = Spec("detector", name, "v1", settings or {})
    writes.put_scores(ws, spec, [(d["text_sha256"], ScoreResult(raw=float(x), ai_probability=float(x)))
                                 for d, x in zip(docs, p)], links=[(d["doc_id"], d["text_sha256"]) for d in docs])
    return p


def test_language_is_identified_at_import_with_its_confidence(workspace):
    docs = _corpus(workspace)
    rows = {r[0]: r[1:] for r in workspace.query(
        "SELECT doc_id, language, confidence, method FROM document_languages")}
    assert len(rows) == len(docs)
    for d in docs:
        lang, conf, method = rows[d["doc_id"]]
        assert lang == d["lang"] and 0.5 < conf <= 1.0 and method.startswith("lingua")


def test_mixed_corpus_language_slice_exclusions_and_undeclared_label(workspace, tmp_path, monkeypatch):
    monkeypatch.setitem(registry.DECLARED_LANGUAGES, "EnOnly", ("en",))
    docs = _corpus(workspace)
    p_en_only = _scores(workspace, docs, "EnOnly")  # declared: English only
    p_other = _scores(workspace, docs, "OtherDet")  # no declared languages
    f = tmp_path / "p.toml"
    rule = 'rule = { field = "ai_probability", op = ">", threshold = 0.5 }'
    detectors = "".join(f'[[detectors]]\nname = "{name}"\n{rule}\n' for name in ("EnOnly", "OtherDet"))
    gaps = "".join(f'[[gaps]]\nslice = "{kind}"\ngroup_a = "{a}"\ngroup_b = "{b}"\n'
                   for kind, a, b in (("language", "de", "en"), ("length", "under 100 words", "over 300 words")))
    f.write_text('[protocol]\nname = "languages"\n[split]\nrule = "none"\n[tables]\nslices = ["language", "length"]\n'
                 + detectors + gaps)
    proto = load_protocol(f)
    commit(workspace, f)
    res = evaluate_workspace(workspace, proto)
    lang = np.array([d["lang"] for d in docs])
    hum = np.array([d["label"] == "human" for d in docs])
    t1 = {r["detector"]: r for r in res["table1"]}
    # EnOnly: the German and Spanish texts are excluded, counted with the reason, per language.
    z = t1["EnOnly"]
    assert z["languages"] == ["en"]
    assert z["excluded"] == {"language de is outside the detector's declared languages": 12,
                             "language es is outside the detector's declared languages": 12}
    en = lang == "en"
    assert z["human_n"] == int((en & hum).sum()) and z["false_positives"] == int((p_en_only[en & hum] > 0.5).sum())
    # a detector without declared languages: labelled so, nothing excluded for its language.
    o = t1["OtherDet"]
    assert o["languages"] is None and o["languages_reason"] == registry.NOT_DECLARED
    assert o["excluded"] == {} and o["human_n"] == int(hum.sum())
    md = markdown(res)
    assert "languages not declared" in md and "language de is outside the detector's declared languages 12" in md
    # Table 2: a language slice per language and a length slice per band, FPR from plain counts.
    t2 = {(r["detector"], r["slice_type"], r["slice"]): r for r in res["table2"]}
    for code in SENTENCES:
        m = (lang == code) & hum
        r = t2[("OtherDet", "language", code)]
        assert r["human_n"] == int(m.sum()) and r["false_positives"] == int((p_other[m] > 0.5).sum())
    assert ("EnOnly", "language", "de") not in t2 or t2[("EnOnly", "language", "de")]["human_n"] == 0
    bands = np.array([length_band(word_count(d["text"])) for d in docs])
    assert set(bands) == {"under 100 words", "100 to 300 words", "over 300 words"}
    for band in set(bands):
        m = (bands == band) & hum
        r = t2[("OtherDet", "length", band)]
        assert r["human_n"] == int(m.sum()) and r["false_positives"] == int((p_other[m] > 0.5).sum())
    # FPR gaps between languages and between lengths, with intervals (the [[gaps]] machinery).
    gaps = {(g["detector"], g["slice"], g["group_a"]): g for g in res["gaps"]}
    g = gaps[("OtherDet", "language", "de")]
    ka, na = int((p_other[(lang == "de") & hum] > 0.5).sum()), int(((lang == "de") & hum).sum())
    kb, nb = int((p_other[en & hum] > 0.5).sum()), int((en & hum).sum())
    assert (g["k_a"], g["n_a"], g["k_b"], g["n_b"]) == (ka, na, kb, nb)
    assert g["estimate"] == pytest.approx(ka / na - kb / nb)
    assert g["ci95"][0] <= g["estimate"] <= g["ci95"][1]
    assert ("OtherDet", "length", "under 100 words") in gaps
    json.dumps(res)


def test_declared_languages_follow_the_model_setting():
    assert registry.declared_languages("zippy") == ("en",)
    assert registry.declared_languages("loglik", {"model": "smollm2"}) == ("en",)
    assert registry.declared_languages("binoculars", {"observer": "tiiuae/falcon-7b",
                                                      "performer": "tiiuae/falcon-7b-instruct"}) == ("en", "fr")
    assert registry.declared_languages("loglik", {"model": "some/unknown-model"}) is None
    assert registry.declared_languages("gptzero", {}) is None


def test_length_bands_edges():
    assert [length_band(n) for n in (0, 99, 100, 300, 301)] == [
        "under 100 words", "under 100 words", "100 to 300 words", "100 to 300 words", "over 300 words"]


def test_docs_list_every_detector_and_its_declared_languages():
    page = (Path(__file__).parents[2] / "docs" / "detectors.md").read_text(encoding="utf-8")
    for name in registry.BUILTINS["detector"]:
        assert f"`{name}`" in page, name
    for name, langs in registry.DECLARED_LANGUAGES.items():
        row = next(line for line in page.splitlines() if line.startswith(f"| `{name}` |"))
        assert row.split("|")[2].strip() == ", ".join(langs)
    for model in ("smollm2", "gpt2", "tiiuae/falcon-7b"):
        assert f"`{model}`" in page and registry.MODEL_LANGUAGES[model]


def test_real_non_english_human_texts_are_identified():
    """The UDHR in six languages (tests/data/udhr, ATTRIBUTION.md): 41 of the 42 texts get
    their language. Spanish article 5 (14 words) reads as Portuguese (confidence 0.78): a
    short text can be misidentified, which is why every exclusion names the language."""
    path = Path(__file__).parents[1] / "data" / "udhr" / "udhr.jsonl"
    recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert {r["lang"] for r in recs} == {"en", "de", "fr", "es", "ru", "zh"}
    found = identify([r["text"] for r in recs])
    wrong = [(r["id"], f[0]) for r, f in zip(recs, found) if f[0] != r["lang"]]
    assert len(recs) == 42 and wrong == [("udhr-spa-5", "pt")]


def test_m4_multilingual_files_evaluate_per_language_through_the_grid(workspace):
    """M4's files carry the dataset's language (``tags.language``, from the file's domain);
    ``evaluate --grid language --grid-threshold-by language`` gives one row per language,
    each over its own human and AI texts, and the ``language`` slice (identified at import)
    agrees on these texts (M4 fixture: English arXiv, Chinese baike)."""
    from veribench.corpus.importers.m4 import import_m4

    import_m4(workspace, Path(__file__).parents[1] / "data" / "public" / "m4" / "data", progress=False)
    docs = workspace.query("SELECT d.doc_id, d.text_sha256, d.label, json_extract_string(d.tags, '$.language'), "
                           "l.language FROM documents d JOIN document_languages l USING (doc_id) ORDER BY 1")
    assert {r[3] for r in docs} == {"en", "zh"} and all(r[3] == r[4] for r in docs)
    spec = Spec("detector", "GridDet", "v1", {})
    p = {r[0]: 0.9 if r[2] == "ai" else 0.2 for r in docs}
    writes.put_scores(workspace, spec, [(r[1], ScoreResult(raw=p[r[0]], ai_probability=p[r[0]])) for r in docs],
                      links=[(r[0], r[1]) for r in docs])
    # the human side follows the threshold tag only: per-language FPRs need it to be the language
    res = evaluate_workspace(workspace, None, allow_scoring=False, grid=["language"], grid_threshold_by="language")
    rows = {r["language"]: r for r in res["grid"] if r["detector"] == "GridDet"}
    for lang in ("en", "zh"):
        want = [r for r in docs if r[3] == lang]
        assert rows[lang]["n_ai"] == sum(r[2] == "ai" for r in want)
        assert rows[lang]["n_human"] == sum(r[2] == "human" for r in want)
