"""Issue 27, remaining language items: the vendors' declared languages (from their own
documentation), the acceptance check on real texts in three languages (tests/data/udhr),
and the report site's language and length table."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from veribench import registry
from veribench.hashing import text_sha256
from veribench.records import ScoreResult
from veribench.spec import Spec
from veribench.store import writes

UDHR = Path(__file__).parents[1] / "data" / "udhr" / "udhr.jsonl"


def test_vendors_declare_the_languages_their_documentation_lists():
    """Copyleaks' API reference lists 30 languages (zh-CN and zh-TW are one ISO 639-1 code),
    Pangram's multilingual release English and 23 more, Sapling's API docs English; GPTZero,
    Originality, Winston and ZeroGPT document no list and stay "languages not declared"."""
    copyleaks = registry.declared_languages("copyleaks", {})
    assert copyleaks is not None and len(copyleaks) == 29 and {"en", "de", "zh", "ar", "vi"} <= set(copyleaks)
    pangram = registry.declared_languages("pangram", {})
    assert pangram is not None and len(pangram) == 24 and {"en", "ko", "ur", "fa"} <= set(pangram)
    assert registry.declared_languages("sapling", {}) == ("en",)
    for name in ("gptzero", "originality", "winston", "zerogpt"):
        assert registry.declared_languages(name, {}) is None, name
    # every declared code is ISO 639-1 (two lower-case letters), sorted output
    for name in registry.DECLARED_LANGUAGES:
        langs = registry.declared_languages(name, {})
        assert langs == tuple(sorted(langs)) and all(len(c) == 2 and c.islower() for c in langs)


def _udhr_workspace(ws, langs=("en", "de", "fr")) -> list[dict]:
    """The UDHR texts of ``langs`` (real human writing, tests/data/udhr, ATTRIBUTION.md) as
    human texts of arm A, plus each text reversed word by word as an AI text of arm C (the same
    language and length), written through the one write path."""
    recs = [json.loads(line) for line in UDHR.read_text(encoding="utf-8").splitlines()]
    docs = []
    for r in recs:
        if r["lang"] not in langs:
            continue
        for label, arm, text in (("human", "A", r["text"]), ("ai", "C", " ".join(reversed(r["text"].split())))):
            docs.append({"doc_id": f"{r['id']}-{label}", "corpus": "udhr", "text": text,
                         "text_sha256": text_sha256(text), "label": label, "arm": arm, "kind": "article",
                         "subgroup": None, "tags": None, "group_key": r["id"], "provenance": None,
                         "generation": None, "import_id": "imp1", "lang": r["lang"]})
    cols = {c: [d[c] for d in docs] for c in writes.DOCUMENT_COLUMNS}
    with ws.transaction() as con:
        writes.add_documents(con, pa.table({c: pa.array(v, pa.string()) for c, v in cols.items()}))
    return docs


def _put(ws, docs, name: str, p) -> None:
    """Scores ``p`` under the plug-in's own spec (a vendor's scores as a scan stores them), or a
    stored spec for a name the registry does not know."""
    spec = registry.create("detector", name).spec if name in registry.names("detector") else \
        Spec("detector", name, "v1", {})
    writes.put_scores(ws, spec, [(d["text_sha256"], ScoreResult(raw=float(x), ai_probability=float(x)))
                                 for d, x in zip(docs, p)], links=[(d["doc_id"], d["text_sha256"]) for d in docs])


def _protocol(tmp_path, names, extra: str = "") -> Path:
    rule = 'rule = { field = "ai_probability", op = ">", threshold = 0.5 }'
    dets = "".join(f'[[detectors]]\nname = "{n}"\n{rule}\n' for n in names)
    f = tmp_path / "p.toml"
    f.write_text('[protocol]\nname = "udhr"\n[split]\nrule = "none"\n[tables]\nslices = ["language", "length"]\n'
                 + extra + dets)
    return f


def _evaluate_udhr(workspace, tmp_path, extra: str = "") -> tuple[list[dict], list[float], dict]:
    """The acceptance corpus scored by Sapling (en), Pangram (en, de, fr ...) and OtherDet (no
    languages), evaluated under a committed protocol with the language and length slices."""
    from veribench.commit import commit
    from veribench.evaluate import evaluate_workspace
    from veribench.protocol.model import load_protocol

    docs = _udhr_workspace(workspace)
    p = [0.9 if d["label"] == "ai" else (0.7 if i % 5 == 0 else 0.2) for i, d in enumerate(docs)]
    for name in ("sapling", "pangram", "OtherDet"):
        _put(workspace, docs, name, p)
    f = _protocol(tmp_path, ("sapling", "pangram", "OtherDet"), extra)
    commit(workspace, f)
    return docs, p, evaluate_workspace(workspace, load_protocol(f), allow_scoring=False)


def test_acceptance_udhr_three_languages(workspace, tmp_path):
    """Issue 27's acceptance: a corpus of English, German and French (real UDHR texts) yields
    a language slice; each detector's out-of-scope texts are counted with the reason in every
    output (JSON, terminal, Markdown, HTML); a detector without declared languages is
    labelled "languages not declared". Sapling declares English (its API docs), Pangram all
    three, OtherDet nothing."""
    from rich.console import Console

    from veribench.evaluate.tables import html_page, markdown, print_tables

    docs, p, res = _evaluate_udhr(workspace, tmp_path)
    lang = [d["lang"] for d in docs]
    t1 = {r["detector"]: r for r in res["table1"]}
    reason = "language {} is outside the detector's declared languages"
    assert t1["sapling"]["languages"] == ["en"]
    assert t1["sapling"]["excluded"] == {reason.format("de"): lang.count("de"), reason.format("fr"): lang.count("fr")}
    assert t1["sapling"]["human_n"] == lang.count("en") // 2
    assert t1["pangram"]["excluded"] == {} and "de" in t1["pangram"]["languages"]
    assert t1["OtherDet"]["languages"] is None and t1["OtherDet"]["languages_reason"] == "languages not declared"
    # the language slice: one row per language for the detectors that evaluate it, FPR by a plain count
    t2 = {(r["detector"], r["slice"]): r for r in res["table2"] if r["slice_type"] == "language"}
    for code in ("en", "de", "fr"):
        hum = [x for d, x in zip(docs, p) if d["lang"] == code and d["label"] == "human"]
        r = t2[("OtherDet", code)]
        assert (r["human_n"], r["false_positives"]) == (len(hum), sum(x > 0.5 for x in hum))
    assert ("sapling", "de") not in t2 and ("sapling", "en") in t2
    # every output names the reason and the count, and the label
    con = Console(record=True, width=3000)
    print_tables(res, con)
    for text in (markdown(res), con.export_text(), html_page(res)):
        for code in ("de", "fr"):
            assert f"{reason.format(code)} {lang.count(code)}".replace("'", "") in text.replace("&#x27;", "").replace(
                "&#39;", "").replace("'", "")
        assert "languages not declared" in text
    json.dumps(res)


def test_detectgpt_languages_follow_its_mask_model_too():
    """DetectGPT's perturbations come from its mask-filling model: a mask model without declared
    languages leaves the detector's languages not declared; T5 (en, fr, ro, de) narrows the
    scoring model's to both models' common languages."""
    assert registry.declared_languages("detectgpt", {"model": "smollm2", "mask_model": "t5-large"}) == ("en",)
    assert registry.declared_languages("detectgpt", {"model": "tiiuae/falcon-7b", "mask_model": "t5-large"}) == (
        "en", "fr")
    assert registry.declared_languages("detectgpt", {"model": "smollm2", "mask_model": "google/mt5-base"}) is None


#: The entries every detector's section of docs/detectors.md holds (issue 27's acceptance).
DOC_ENTRIES = ("Source", "Default rule", "Languages declared", "Cost", "Checked against")


def _sections(page: str) -> dict[str, str]:
    """``{detector name: section text}`` for every ``## `name` — ...`` heading (the first one
    of a name: its own section)."""
    out: dict[str, str] = {}
    parts = page.split("\n## ")
    for part in parts[1:]:
        head, _, body = part.partition("\n")
        if head.startswith("`") and "`" in head[1:]:
            out.setdefault(head[1:head.index("`", 1)], body.split("\n# ")[0])
    return out


def test_docs_detail_every_registered_detector(monkeypatch):
    """docs/detectors.md has a section for every detector in ``registry.BUILTINS["detector"]``
    with its source, default rule, declared languages, cost and the reference it was checked
    against, each non-empty; the languages entry agrees with the registry's data."""
    monkeypatch.setenv("VERIBENCH_WATERMARK_KEY", "a test key")  # the watermark detector needs one to be built
    page = (Path(__file__).parents[2] / "docs" / "detectors.md").read_text(encoding="utf-8")
    sections = _sections(page)
    missing = sorted(set(registry.BUILTINS["detector"]) - set(sections))
    assert not missing, f"no section for {missing}"
    for name in registry.BUILTINS["detector"]:
        body = sections[name]
        entries = {}
        for line in body.split("\n- **")[1:]:
            key, _, rest = line.partition(".**")
            entries[key.strip()] = rest.strip()
        for key in DOC_ENTRIES:
            assert entries.get(key), f"{name}: no '{key}' entry"
        langs = entries["Languages declared"]
        declared = registry.declared_languages(name, dict(registry.create("detector", name).spec.settings)
                                                if name not in ("hf-classifier", "imported") else {})
        if declared is None:
            assert registry.NOT_DECLARED in langs, name
        elif name in registry.DECLARED_LANGUAGES:
            row = next(x for x in page.splitlines() if x.startswith(f"| `{name}` |"))
            assert row.split("|")[2].strip() == ", ".join(declared) or ", ".join(declared) == langs, name
        else:
            assert "follow" in langs, name


def test_report_site_shows_language_and_length_slices_and_out_of_scope_counts(workspace, tmp_path):
    """The run page of ``veribench report`` has a "Languages and lengths" section: per detector
    its declared languages (or "languages not declared") and its out-of-scope texts per
    language (null with the reason, never 0, for a detector without languages), and the
    language and length rows of Table 2; every cell points into the page JSON."""
    from tests.report.report_pagecheck import check_page
    from veribench.report import build_report

    docs, p, res = _evaluate_udhr(workspace, tmp_path)
    workspace.close()
    build_report([tmp_path / "ws"], tmp_path / "out")
    page = next((tmp_path / "out").glob("run-*.html"))
    data = json.loads((tmp_path / "out" / "data" / f"{page.stem}.json").read_text())
    check_page(page, tmp_path / "out" / "data" / f"{page.stem}.json")
    scope = {r["detector"]: r for r in data["language_scope"]}
    lang = [d["lang"] for d in docs]
    assert scope["sapling"]["languages"] == "en" and scope["sapling"]["out_of_scope_n"] == lang.count("de") * 2
    assert scope["sapling"]["out_of_scope"] == f"de {lang.count('de')}, fr {lang.count('fr')}"
    assert scope["pangram"]["out_of_scope_n"] == 0 and scope["pangram"]["out_of_scope"] is None
    other = scope["OtherDet"]
    assert other["languages"] is None and other["languages_reason"] == "languages not declared"
    assert other["out_of_scope_n"] is None and other["out_of_scope_n_reason"].startswith("languages not declared")
    kinds = {(r["detector"], r["slice_type"], r["slice"]) for r in data["language_slices"]}
    assert {("OtherDet", "language", c) for c in ("en", "de", "fr")} <= kinds
    assert ("OtherDet", "length", "under 100 words") in kinds
    want = {(r["detector"], r["slice_type"], r["slice"]): r["human_n"] for r in res["table2"]
            if r["slice_type"] in ("language", "length")}
    assert {(r["detector"], r["slice_type"], r["slice"]): r["human_n"] for r in data["language_slices"]} == want
    html = page.read_text()
    assert 'id="languages"' in html and "Out-of-scope texts" in html and "languages not declared" in html
    assert f"de {lang.count('de')}, fr {lang.count('fr')}" in html


def test_out_of_scope_slice_when_the_protocol_asks(workspace, tmp_path):
    """``[evaluation] out_of_scope = "slice"``: the texts outside a detector's declared languages
    are still excluded from its headline rates (and counted with the reason), and are evaluated
    in a Table 2 row of their own (``language_scope`` = "outside the declared languages"),
    judged by the same rule; FPR and catch rate equal plain counts. A detector with nothing
    out of scope, or without declared languages, has no such row; without the option no
    detector has one."""
    docs, p, res = _evaluate_udhr(workspace, tmp_path, '[evaluation]\nout_of_scope = "slice"\n')
    t1 = {r["detector"]: r for r in res["table1"]}
    assert sum(t1["sapling"]["excluded"].values()) == 28 and t1["sapling"]["human_n"] == 7
    rows = [r for r in res["table2"] if r["slice_type"] == "language_scope"]
    assert [r["detector"] for r in rows] == ["sapling"]
    r = rows[0]
    out = [(d, x) for d, x in zip(docs, p) if d["lang"] != "en"]
    hum = [x for d, x in out if d["label"] == "human"]
    ai = [x for d, x in out if d["label"] == "ai"]
    assert r["slice"] == "outside the declared languages"
    assert (r["human_n"], r["false_positives"]) == (len(hum), sum(x > 0.5 for x in hum))
    assert (r["ai_n"], r["detections"]) == (len(ai), sum(x > 0.5 for x in ai))
    assert r["fpr"] == pytest.approx(sum(x > 0.5 for x in hum) / len(hum))
    json.dumps(res)


def test_no_out_of_scope_slice_by_default(workspace, tmp_path):
    _, _, res = _evaluate_udhr(workspace, tmp_path)
    assert not [r for r in res["table2"] if r["slice_type"] == "language_scope"]


def test_out_of_scope_slice_uses_the_threshold_fitted_on_in_scope_texts(workspace, tmp_path):
    """With a fitted rule, the out-of-scope row is judged by the threshold fitted on the
    calibration split's in-scope (English) texts only, a plain best-balanced-accuracy loop here;
    the out-of-scope test texts' FPR and catch rate at that threshold are plain counts."""
    import hashlib

    import numpy as np

    from veribench.commit import commit
    from veribench.evaluate import evaluate_workspace
    from veribench.protocol.model import load_protocol

    docs = _udhr_workspace(workspace)
    p = [0.6 + 0.05 * (i % 7) if d["label"] == "ai" else 0.1 + 0.07 * (i % 9) for i, d in enumerate(docs)]
    _put(workspace, docs, "sapling", p)
    f = tmp_path / "p.toml"
    f.write_text('[protocol]\nname = "udhr-fit"\n[split]\nrule = "hash"\nevery = 2\n[evaluation]\n'
                 'out_of_scope = "slice"\n[[detectors]]\nname = "sapling"\nrule = { fit = "best_balanced_accuracy" }\n')
    commit(workspace, f)
    res = evaluate_workspace(workspace, load_protocol(f), allow_scoring=False)
    # docs/protocol.md: a group (group_key) is in calibration when int(sha256(salt NUL group)[:16], 16) % every == 0
    cal = np.array([int(hashlib.sha256(f"veribench-split-v1\0{d['group_key']}".encode()).hexdigest()[:16], 16) % 2 == 0
                    for d in docs])
    s_ = np.array(p)
    y = np.array([d["label"] == "ai" for d in docs], dtype=int)
    en = np.array([d["lang"] == "en" for d in docs])
    m = cal & en
    best, thr = -1.0, None
    for t in sorted(set(s_[m].tolist())):  # largest t among the best balanced accuracies
        flag = s_[m] > t
        ba = ((flag & (y[m] == 1)).sum() / (y[m] == 1).sum() + 1 - (flag & (y[m] == 0)).sum() / (y[m] == 0).sum()) / 2
        if ba >= best:
            best, thr = ba, t
    assert res["detectors"][0]["rule"]["threshold"] == pytest.approx(thr)
    row = next(r for r in res["table2"] if r["slice_type"] == "language_scope")
    out = ~cal & ~en
    assert (row["human_n"], row["false_positives"]) == (int((out & (y == 0)).sum()), int((out & (y == 0) & (s_ > thr)).sum()))
    assert (row["ai_n"], row["detections"]) == (int((out & (y == 1)).sum()), int((out & (y == 1) & (s_ > thr)).sum()))


def test_semeval_multilingual_file_evaluates_per_language_through_the_grid(workspace, tmp_path):
    """SemEval-2024 Task 8's multilingual track (subtask A) gives each text's language as its
    ``source``; ``evaluate --grid language --grid-threshold-by language`` gives one row per
    language over that language's own texts. Tested on a subtask-A multilingual file written
    from the real UDHR texts (German, Russian, Chinese and English; tests/data/udhr): the
    importer's language agrees with the language identified at import, and each row's AUROC
    equals scikit-learn's on that language's texts."""
    from sklearn.metrics import roc_auc_score

    from veribench.corpus.importers.semeval import import_semeval
    from veribench.evaluate import evaluate_workspace

    names = {"de": "german", "ru": "russian", "zh": "chinese", "en": "english"}
    recs = [json.loads(line) for line in UDHR.read_text(encoding="utf-8").splitlines() if json.loads(line)["lang"] in names]
    rows, k = [], 0
    for r in recs:
        for label, text in ((0, r["text"]), (1, r["text"][len(r["text"]) // 3:] + " " + r["text"][:len(r["text"]) // 3])):
            rows.append({"text": text, "label": label, "model": "human" if label == 0 else "chatGPT",
                         "source": names[r["lang"]], "id": k})
            k += 1
    f = tmp_path / "subtaskA_train_multilingual.jsonl"
    f.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in rows), encoding="utf-8")
    import_semeval(workspace, f, progress=False)
    docs = workspace.query("SELECT d.doc_id, d.text_sha256, d.label, json_extract_string(d.tags, '$.language'), "
                           "l.language FROM documents d JOIN document_languages l USING (doc_id) ORDER BY 1")
    assert len(docs) == len(rows) and {r[3] for r in docs} == set(names)
    # Chinese text cut at a third and moved keeps its language; a rare miss would be named here
    assert [r for r in docs if r[3] != r[4]] == []
    score = {r[0]: (0.3 + 0.4 * (int(r[1][:8], 16) % 1000) / 1000 + (0.3 if r[2] == "ai" else 0.0)) for r in docs}
    spec = Spec("detector", "GridDet", "v1", {})
    writes.put_scores(workspace, spec, [(r[1], ScoreResult(raw=score[r[0]], ai_probability=score[r[0]])) for r in docs],
                      links=[(r[0], r[1]) for r in docs])
    res = evaluate_workspace(workspace, None, allow_scoring=False, grid=["language"], grid_threshold_by="language")
    grid = {r["language"]: r for r in res["grid"] if r["detector"] == "GridDet"}
    for code in names:
        want = [r for r in docs if r[3] == code]
        g = grid[code]
        assert (g["n_ai"], g["n_human"]) == (sum(r[2] == "ai" for r in want), sum(r[2] == "human" for r in want))
        assert g["auroc"] == pytest.approx(roc_auc_score([r[2] == "ai" for r in want], [score[r[0]] for r in want]))
