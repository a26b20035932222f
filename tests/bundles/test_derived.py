"""Derived documents (RAID attacks) in a published run: every stored row is what its import
logged (``veribench log verify``), so a run with robustness rows publishes and verifies, and
the verifier re-derives those rows from the bundle alone."""

from __future__ import annotations

import json

import pytest

from veribench.cli.demo import demo_data_dir

PROTOCOL = """[protocol]
name = "derived-bundle"
tag = "DERIVED-1"
[selection]
corpora = ["fastdetectgpt"]
[split]
rule = "hash"
every = 5
corpora = ["fastdetectgpt"]
[[detectors]]
name = "zippy"
label = "ZipPy (brotli)"
settings = { engine = "brotli" }
rule = { field = "raw", op = ">=", threshold = 0.0, source = "thinkst-zippy default" }
"""


def test_attacked_documents_are_logged_as_stored_and_their_run_verifies(tmp_path, cli_run):
    pytest.importorskip("zippy.zippy")
    ws, out = tmp_path / "ws", tmp_path / "bundle"
    code, msg = cli_run("import", "fastdetectgpt", demo_data_dir() / "fastdetectgpt", "--workspace", ws)
    assert code == 0, msg
    for attack in ("homoglyph", "article_deletion"):
        code, msg = cli_run("attack", attack, "--workspace", ws, "--corpus", "fastdetectgpt", "--label", "ai",
                            "--seed", "0")
        assert code == 0 and "derived 60 document(s)" in msg, msg
        code, msg = cli_run("log", "verify", "--workspace", ws)
        assert code == 0, msg  # each derived row, with its source's corpus, is what its import logged
    proto = tmp_path / "p.toml"
    proto.write_text(PROTOCOL, encoding="utf-8")
    code, msg = cli_run("protocol", "commit", proto, "--workspace", ws)
    assert code == 0, msg
    code, msg = cli_run("evaluate", "--workspace", ws, "--protocol", proto, "--json", tmp_path / "r.json", "--quiet")
    assert code == 0, msg
    res = json.loads((tmp_path / "r.json").read_text())
    assert {r["attack"] for r in res["robustness"]} == {"homoglyph", "article_deletion"}
    code, msg = cli_run("publish", "--workspace", ws, "--run", "DERIVED-1", "--out", out)
    assert code == 0, msg
    code, msg = cli_run("verify", out)
    assert code == 0, msg
    assert json.loads((out / "results.json").read_text())["robustness"] == res["robustness"]
    # a forger who re-points an attacked text at another source (and fixes the manifest) is caught:
    # the derived import's fingerprints are checked like any other import of the selection
    import shutil

    from tests.bundles.bundle_helpers import corpus_lines, verify, write_corpus

    forged = tmp_path / "forged"
    shutil.copytree(out, forged)
    docs = corpus_lines(forged)
    d = next(x for x in docs if (x.get("provenance") or {}).get("source_id"))
    other = next(x["doc_id"] for x in docs if x["label"] == "ai" and not (x.get("provenance") or {}).get("source_id")
                 and x["doc_id"] != d["provenance"]["source_id"])
    d["provenance"] = {**d["provenance"], "source_id": other}
    write_corpus(forged, docs)
    rep = verify(forged)
    assert not rep.ok and rep.status("corpus") == "FAIL", "\n".join(rep.lines())
