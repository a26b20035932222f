"""fast-detect-gpt importer, the bundled example slices, and the import/export CLI."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from veribench.cli.main import app
from veribench.corpus.importers import import_fastdetectgpt
from veribench.errors import InputError
from veribench.hashing import text_sha256

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "src" / "veribench" / "data" / "demo"  # demo data shipped in the package


def test_pairs_labels_arms_generation(data_dir, workspace):
    src = data_dir / "fastdetectgpt"
    rep = import_fastdetectgpt(workspace, src, ["xsum_gpt-3.5-turbo", "writing_gpt2-xl"], pairs=7)
    assert rep.documents == 28
    rows = workspace.query("SELECT doc_id, text_sha256, label, arm, subgroup, tags, group_key, generation, provenance "
                           "FROM documents ORDER BY doc_id")
    by = {r[0]: r for r in rows}
    for s in ("xsum_gpt-3.5-turbo", "writing_gpt2-xl"):
        raw = json.loads((src / f"{s}.raw_data.json").read_text())
        args = json.loads((src / f"{s}.args.json").read_text())
        for i in range(7):
            h, a = by[f"fastdetectgpt/{s}/{i}/original"], by[f"fastdetectgpt/{s}/{i}/sampled"]
            assert h[1] == text_sha256(raw["original"][i]) and a[1] == text_sha256(raw["sampled"][i])
            assert (h[2], h[3], a[2], a[3]) == ("human", "A", "ai", "C")
            assert h[4] == a[4] == s and h[6] == a[6]  # the pair shares one calibration group
            assert json.loads(a[5])["generator"] == (args["openai_model"] or args["base_model_name"])
            assert json.loads(h[5])["dataset"] == args["dataset"]
            assert h[7] is None
            gen = json.loads(a[7])
            assert gen["model"] == (args["openai_model"] or args["base_model_name"])
            assert gen["provider"] == ("openai" if args["openai_model"] else "huggingface")
            assert gen["seed"] == args["seed"]
            assert "openai_key" not in gen["settings"]  # never a key, even a placeholder
            prov = json.loads(h[8])
            assert prov["licence"].startswith("MIT") and prov["dataset"] in ("XSum", "WritingPrompts")
            assert int(prov["published"]) < 2020
    g = json.loads(by["fastdetectgpt/xsum_gpt-3.5-turbo/0/sampled"][7])
    assert g["temperature"] == 0.8 and g["settings"]["sampling"] == "temperature"  # do_temperature set
    g2 = json.loads(by["fastdetectgpt/writing_gpt2-xl/0/sampled"][7])
    assert g2.get("temperature") is None and g2["settings"]["sampling"] == "default"  # no do_* flag set


def test_group_keys_span_sets_built_from_the_same_article(data_dir, workspace):
    src = data_dir / "fastdetectgpt"
    import_fastdetectgpt(workspace, src, ["xsum_gpt2-xl", "xsum_gpt-j-6B"], pairs=40)
    a = json.loads((src / "xsum_gpt2-xl.raw_data.json").read_text())["original"][:40]
    b = json.loads((src / "xsum_gpt-j-6B.raw_data.json").read_text())["original"][:40]
    g = dict(workspace.query("SELECT doc_id, group_key FROM documents"))
    for i in range(40):
        same_article = a[i].split()[:20] == b[i].split()[:20]
        assert (g[f"fastdetectgpt/xsum_gpt2-xl/{i}/original"] == g[f"fastdetectgpt/xsum_gpt-j-6B/{i}/original"]) \
            == same_article


def test_bad_input(tmp_path, data_dir, workspace):
    d = tmp_path / "fdg"
    d.mkdir()
    shutil.copy(data_dir / "fastdetectgpt/pubmed_davinci.args.json", d)
    raw = json.loads((data_dir / "fastdetectgpt/pubmed_davinci.raw_data.json").read_text())
    raw["sampled"][4] = " "
    (d / "pubmed_davinci.raw_data.json").write_text(json.dumps(raw))
    with pytest.raises(InputError) as ei:
        import_fastdetectgpt(workspace, d)
    assert ei.value.record == 4 and ei.value.field == "sampled" and ei.value.file.endswith("raw_data.json")
    raw["sampled"] = raw["sampled"][:-1]
    (d / "pubmed_davinci.raw_data.json").write_text(json.dumps(raw))
    with pytest.raises(InputError, match="pair up"):
        import_fastdetectgpt(workspace, d)
    with pytest.raises(InputError, match="unknown set"):
        import_fastdetectgpt(workspace, d, ["xsum_nothing"])
    (d / "pubmed_davinci.args.json").unlink()
    with pytest.raises(InputError, match="generation settings"):
        import_fastdetectgpt(workspace, d)
    assert workspace.document_count() == 0


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_bundled_examples_are_faithful_copies(liang_dir, data_dir):
    """The bundled corpora equal the upstream files, checked against SHA-256 digests recorded
    from the upstream releases (``tests/data/upstream_sha256.json``), so no outside folder
    is needed."""
    up = json.loads((data_dir / "upstream_sha256.json").read_text())
    files = sorted(str(p.relative_to(liang_dir)) for p in liang_dir.rglob("*") if p.is_file())
    assert set(files) - {"LICENSE.md"} == set(up["liang2023"])
    assert all(_sha(liang_dir / f) == up["liang2023"][f] for f in up["liang2023"])
    ex = EXAMPLES / "fastdetectgpt"
    sets = sorted(p.name[: -len(".raw_data.json")] for p in ex.glob("*.raw_data.json"))
    assert len(sets) >= 3
    gens = set()
    for s in sets:
        mine = json.loads((ex / f"{s}.raw_data.json").read_text())
        n = len(mine["original"])
        assert n == len(mine["sampled"]) == 12
        blob = json.dumps({"original": mine["original"], "sampled": mine["sampled"]}, ensure_ascii=False,
                          sort_keys=True).encode()
        assert hashlib.sha256(blob).hexdigest() == up["fastdetectgpt_first12"][s]
        assert _sha(ex / f"{s}.args.json") == up["fastdetectgpt_args"][s]
        args = json.loads((ex / f"{s}.args.json").read_text())
        gens.add(args["openai_model"] or args["base_model_name"])
    assert len(gens) >= 3  # several generators
    assert _sha(ex / "LICENSE.txt") == up["fastdetectgpt_license"] == _sha(data_dir / "fastdetectgpt/LICENSE.txt")
    attribution = (EXAMPLES / "ATTRIBUTION.md").read_text()
    assert "Patterns* 4(7), 2023" in attribution and "baoguangsheng/fast-detect-gpt" in attribution
    assert sum(p.stat().st_size for p in ex.iterdir()) < 400_000


def test_repository_copies_match_the_optional_shared_folder(shared_extra, data_dir, liang_dir):
    """When a ``shared/`` folder is present, the repository's copies equal it byte for byte."""
    for p in (shared_extra / "data" / "liang2023").rglob("*"):
        if p.is_file():
            assert _sha(p) == _sha(liang_dir / p.relative_to(shared_extra / "data" / "liang2023"))
    for p in (data_dir / "fastdetectgpt").glob("*.json"):
        assert _sha(p) == _sha(shared_extra / "data" / "fastdetectgpt" / p.name)
    for p in (data_dir / "cases").rglob("*"):
        if p.is_file():
            assert _sha(p) == _sha(shared_extra / "cases" / p.relative_to(data_dir / "cases"))



def test_cli_import_and_export(tmp_path):
    ws = tmp_path / "ws"
    run = CliRunner().invoke
    r = run(app, ["import", "fastdetectgpt", str(EXAMPLES / "fastdetectgpt"), "--sets",
                  "xsum_gpt-3.5-turbo,pubmed_davinci", "--pairs", "3", "--workspace", str(ws)])
    assert r.exit_code == 0, r.output
    assert "documents stored: 12" in r.output
    f = tmp_path / "docs.csv"
    f.write_text("id,text,label\nmine-1,my own text,human\n")
    r = run(app, ["import", "csv", str(f), "--corpus", "own", "-w", str(ws), "-q"])
    assert r.exit_code == 0, r.output
    s = tmp_path / "s.csv"
    s.write_text("doc_id,raw\nmine-1,12\nfastdetectgpt/pubmed_davinci/0/sampled,97\n")
    r = run(app, ["import", "scores", str(s), "--detector", "Hand", "--version", "v1", "--scale", "percent_ai",
                  "-w", str(ws)])
    assert r.exit_code == 0, r.output
    for out in ("raw.csv", "raw.parquet"):
        r = run(app, ["export", "scores", "--workspace", str(ws), "--out", str(tmp_path / out)])
        assert r.exit_code == 0, r.output
    t = pq.read_table(tmp_path / "raw.parquet").to_pylist()
    assert {(x["doc_id"], x["detector"], x["detector_version"], x["ai_probability"]) for x in t} == {
        ("mine-1", "Hand", "v1", 0.12), ("fastdetectgpt/pubmed_davinci/0/sampled", "Hand", "v1", 0.97)}
    assert "human_likelihood" in (tmp_path / "raw.csv").read_text().splitlines()[0]
    # bad input: one-line error, exit code 1, nothing written
    s.write_text("doc_id,raw\nmine-1,120\n")
    r = run(app, ["import", "scores", str(s), "--detector", "Hand2", "--scale", "percent_ai", "-w", str(ws)])
    assert r.exit_code == 1 and "record line 2" in r.output and "'raw'" in r.output
    r = run(app, ["import", "liang2023", str(tmp_path / "nowhere"), "-w", str(ws)])
    assert r.exit_code == 1 and "no such file or folder" in r.output
