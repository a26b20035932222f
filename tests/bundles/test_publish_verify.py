"""``veribench publish`` then ``veribench verify`` on the real Liang et al. data: the bundle verifies,
says what it is, and reports every check by name."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bundles.bundle_helpers import (
    corpus_lines,
    evaluate_publish_verify,
    events,
    read_scores,
    store_documents,
    verify,
)


def test_published_bundle_verifies_every_check(liang_built, cli_run, tmp_path):
    _, bundle, ca = liang_built
    code, out = cli_run("verify", bundle, "--json", tmp_path / "v.json")
    assert code == 0, out
    assert out.startswith("[ok] LIANG-BUNDLE-2 (run LIANG-BUNDLE-2-")
    for check in ("reader", "manifest", "chain", "commitment", "amendments", "corpus", "scores", "timing", "split",
                  "results", "tables", "timestamp"):
        assert f" {check}: " in out, check
    v = json.loads((tmp_path / "v.json").read_text())
    assert v["ok"] is True and v["cycles"] == []
    (run,) = v["detector_runs"]
    assert run["kind"] == "detector-run" and run["checks"]["results"]["status"] == "ok"
    # the tokens come from a private authority whose root only the bundle carries: never trusted
    assert run["checks"]["timestamp"]["status"] == "note"
    assert "authority not trusted: the date is NOT proven" in run["checks"]["timestamp"]["detail"]
    assert run["checks"]["timing"]["status"] == "note"  # the Liang scores are from 2023: declared, not hidden
    assert run["checks"]["amendments"]["status"] == "note"  # amended after results existed: shown
    # the user trusts the authority's root (given from outside the bundle): the tokens anchor the dates,
    # checked offline; --format json prints the verdict
    code, out = cli_run("verify", bundle, "--tsa-root", ca, "--format", "json")
    v = json.loads(out)
    assert code == 0 and v["ok"] is True, out
    ts = v["detector_runs"][0]["checks"]["timestamp"]
    assert ts["status"] == "ok" and f"--tsa-root {ca}" in ts["detail"], ts
    assert [a["proven"] for a in ts["anchors"]] == [True, True]


def test_bundle_contents_follow_the_format(liang_built):
    _, bundle, _ = liang_built
    m = json.loads((bundle / "manifest.json").read_text())
    assert m["format"] == "veribench-detector-bundle/3" and m["protocol_file"] == "protocol/v2.toml"
    for f in ("protocol/v1.toml", "protocol/v2.toml", "commitments/v1.json", "commitments/v2.json",
              "commitments/v1.tsr", "commitments/v2.tsr", "commitments/v1.roots.pem", "corpus.jsonl", "scores.csv",
              "scores.parquet", "log/events.jsonl", "log/leaves.csv", "results.json", "tables.md", "amendments.json",
              "README.md"):
        assert f in m["files"], f
    scores = read_scores(bundle)
    assert set(scores) >= {"doc_id", "raw", "scale", "ai_probability", "status", "reason", "detector_name",
                           "detector_version", "detector_settings", "scanned_at", "submitted_sha256", "split", "flag"}
    assert set(scores["split"]) == {"calibration", "test"}
    docs = corpus_lines(bundle)
    assert len(docs) == 490 and all("text" in d for d in docs if d["in_run"] and not d["fingerprint_only"])
    evs = events(bundle)
    assert evs[0]["seq"] == 1 and evs[-1]["type"] == "run" and evs[-1]["seq"] == m["run_event"]["seq"]
    res = json.loads((bundle / "results.json").read_text())
    p = res["run"]["protocol"]
    assert p["name"] == "liang-bundle-test-renamed" and p["version"] == 2 and p["id"].startswith("vbp-")
    assert p["amendments"][0]["after_results"] is True and p["amendments"][0]["renamed_from"] == "liang-bundle-test"
    assert [r["tag"] for r in p["earlier_runs"]] == ["LIANG-BUNDLE-1"]
    assert p["scores_before_commit"] == p["scores_total"] > 0  # imported 2023 scores predate any commitment
    # honest display, first thing in tables.md and README.md
    md = (bundle / "tables.md").read_text()
    assert "NOT PRE-REGISTERED" in md.split("## Table 1")[0] and "AMENDED AFTER RESULTS" in md.split("## Table 1")[0]
    assert "Earlier run under protocol id" in (bundle / "README.md").read_text()


def test_log_verify_and_renamed_run_listing(liang_built, cli_run):
    ws, _, _ = liang_built
    code, out = cli_run("log", "verify", "--workspace", ws)
    assert code == 0 and out.startswith("[ok] event log"), out
    code, out = cli_run("protocol", "show", "--workspace", ws)
    assert code == 0 and "v1  liang-bundle-test " in out and "v2  liang-bundle-test-renamed" in out


def test_report_shows_integrity_and_runs_over_time(liang_built, cli_run, tmp_path):
    ws, bundle, _ = liang_built
    code, out = cli_run("report", "-w", ws, bundle, "--out", tmp_path / "site")
    assert code == 0, out
    site = tmp_path / "site"
    trends = json.loads((site / "data" / "run-trends.json").read_text())
    assert trends["tags"] == ["LIANG-BUNDLE-1", "LIANG-BUNDLE-2"]
    row = next(r for r in trends["rows"] if r["detector"] == "Sapling")
    assert row["by_tag"]["LIANG-BUNDLE-1"]["fpr_ci95"] and row["by_tag"]["LIANG-BUNDLE-2"]["catch_rate_ci95"]
    assert trends["changelog"][1]["amendments"][0]["summary"].startswith("Sapling threshold raised")
    assert (site / "run-trends.html").is_file() and list((site / "img").glob("run-trends-*.svg"))
    page = next(p for p in site.glob("run-*.html") if "bundle" in json.loads(
        (site / "data" / f"{p.stem}.json").read_text()).get("source", ""))
    html = page.read_text()
    assert "NOT PRE-REGISTERED" in html and "Published bundle: <strong>" in html
    data = json.loads((site / "data" / f"{page.stem}.json").read_text())
    assert data["verification"]["status"] == "verified"


FP_PROTO = """[protocol]
name = "fingerprints"
tag = "FP-1"
[[detectors]]
name = "DetA"
rule = { field = "ai_probability", op = ">", threshold = 0.5 }
"""


def _fingerprint_ws(ws_path: Path, proto: Path):
    """Volunteer texts published only as fingerprints (issue 15's case): SHA-256 and metadata, no text."""
    from veribench.commit import commit
    from veribench.corpus.document import Document
    from veribench.evaluate import evaluate_workspace
    from veribench.hashing import text_sha256
    from veribench.protocol.model import load_protocol
    from veribench.records import ScoreResult
    from veribench.store import Workspace

    docs = []
    for i in range(30):
        text = f"volunteer essay {i} " + "z" * i
        if i % 3 == 0:  # declined publication: the fingerprint only
            docs.append(Document(id=f"v{i:02d}", text_sha256=text_sha256(text), label="human", arm="B",
                                 provenance={"attestation": "signed", "fingerprint_only": True}))
        elif i % 3 == 1:  # text held, but flagged fingerprint-only: never published
            docs.append(Document(id=f"v{i:02d}", text=text, label="human", arm="B",
                                 provenance={"attestation": "signed", "fingerprint_only": True}))
        else:
            docs.append(Document(id=f"a{i:02d}", text=text, label="ai", arm="C"))
    proto.write_text(FP_PROTO)
    with Workspace(ws_path) as ws:
        commit(ws, proto)
        store_documents(ws, docs, "DetA", [ScoreResult(raw=(i % 10) / 10, ai_probability=(i % 10) / 10)
                                           for i in range(30)], corpus="volunteers", source="volunteers.jsonl")
        evaluate_workspace(ws, load_protocol(proto))


def test_fingerprint_only_documents_carry_no_text(tmp_path, cli_run):
    _fingerprint_ws(tmp_path / "ws", tmp_path / "p.toml")
    code, out = cli_run("publish", "--workspace", tmp_path / "ws", "--run", "FP-1", "--out", tmp_path / "b")
    assert code == 0, out
    assert "Pre-registered: all 30 scores" in out  # committed before the scores were imported
    docs = corpus_lines(tmp_path / "b")
    fp = [d for d in docs if d["fingerprint_only"]]
    assert len(fp) == 20 and not any("text" in d for d in fp) and all(len(d["text_sha256"]) == 64 for d in fp)
    assert all("text" in d for d in docs if not d["fingerprint_only"])
    raw = (tmp_path / "b" / "corpus.jsonl").read_text()
    assert "volunteer essay 1 z" not in raw and "volunteer essay 2 zz" in raw
    rep = verify(tmp_path / "b")
    assert rep.ok, rep.lines()
    assert rep.checks["timing"]["status"] == "ok" and "fingerprint-only" in rep.checks["corpus"]["detail"]


def test_publish_refusals_are_one_line_errors(liang_built, cli_run, tmp_path):
    ws, bundle, _ = liang_built
    code, out = cli_run("publish", "--workspace", ws, "--run", "NO-SUCH-TAG", "--out", tmp_path / "x")
    assert code == 1 and "no run with id or tag 'NO-SUCH-TAG'" in out and "LIANG-BUNDLE-1" in out
    # issue 25 walk: the option is named, as `export` does, not the workspace file and its table
    assert "--run: no run with id or tag 'NO-SUCH-TAG'" in out and "veribench.duckdb" not in out and "'runs'" not in out, out
    code, out = cli_run("publish", "--workspace", ws, "--run", "LIANG-BUNDLE-2", "--out", bundle)
    assert code == 1 and "not empty" in out
    assert "Traceback" not in out


def test_publish_refuses_a_workspace_edited_behind_the_log(liang_built, cli_run, tmp_path):
    import shutil

    from veribench.store import Workspace

    ws = tmp_path / "ws"
    shutil.copytree(liang_built[0], ws)
    with Workspace(ws) as w:
        w.con.execute("UPDATE scores SET ai_probability = 0.99 WHERE text_sha256 = (SELECT min(text_sha256) FROM scores)")
    code, out = cli_run("publish", "--workspace", ws, "--run", "LIANG-BUNDLE-2", "--out", tmp_path / "b")
    assert code == 1 and "event log does not verify" in out and not (tmp_path / "b").exists()


def test_verify_usage_errors(cli_run, tmp_path):
    code, out = cli_run("verify", tmp_path / "nope")
    assert code == 1 and "nope: no such file or folder" in out  # refused input (docs/cli.md)
    (tmp_path / "empty").mkdir()
    code, out = cli_run("verify", tmp_path / "empty")
    assert code == 1 and "holds no cycle or detector-run bundle" in out


def test_folder_of_bundles_and_cycles(liang_built, cli_run, tmp_path, data_dir):
    import shutil

    root = tmp_path / "all"
    root.mkdir()
    shutil.copytree(liang_built[1], root / "run-bundle")
    shutil.copytree(data_dir / "humanizerbench" / "July 2026", root / "July 2026")
    code, out = cli_run("verify", root)
    assert code == 0, out
    assert "[ok] LIANG-BUNDLE-2" in out and "[ok] July 2026" in out


ODD_PROTO = """[protocol]
name = "odd-ids"
tag = "ODD-1"
[[detectors]]
name = "DetÄ"
rule = { field = "verdict", ai_values = ["ai \\"sure\\""] }
"""


def test_ids_and_values_that_need_escaping(tmp_path, cli_run):
    """Quotes, backslashes, control characters and non-ASCII in ids and values: the bundle's
    leaves, re-computed from its rows, equal the log's."""
    from veribench.commit import commit
    from veribench.corpus.document import Document
    from veribench.records import ScoreResult
    from veribench.store import Workspace

    ids = ['plain-1', 'quote"d', 'back\\slash', 'tab\there', 'ünïcödé', 'emoji 🙂', 'line\u2028sep', 'del\x7f']
    docs = [Document(id=x, text=f"text of {x!r} " * 3, label="human" if i % 2 else "ai", tags={"w": "é\"x"})
            for i, x in enumerate(ids)]
    results = [ScoreResult(raw=[0.1, 1e-7, 12345678.0, 2.5e16][i % 4], scale="x\"y", ai_probability=None,
                           verdict='ai "sure"' if i % 3 else "hüman", vendor_version=None if i % 2 else "v\n2",
                           detail={"hazards": {"confusables": i, "invisible": 0, "degenerate_repetition": False},
                                   "raw_response": {"x": i}} if i % 2 else {}) for i in range(len(docs))]
    p = tmp_path / "p.toml"
    p.write_text(ODD_PROTO, encoding="utf-8")
    ws = Workspace(tmp_path / "ws")
    commit(ws, p)
    store_documents(ws, docs, "DetÄ", results, version="v\u00e9", corpus="odd", source="odd.jsonl")
    evaluate_publish_verify(ws, p, "ODD-1", tmp_path / "b", cli_run)
    from tests.bundles.bundle_helpers import edit_scores

    assert any(h and '"confusables":' in h for h in read_scores(tmp_path / "b")["hazards"])
    import shutil

    shutil.copytree(tmp_path / "b", tmp_path / "c")
    edit_scores(tmp_path / "b", lambda c: c["verdict"].__setitem__(1, "hüman"))  # one escaped value changed
    rep = verify(tmp_path / "b")
    assert rep.status("scores") == "FAIL", rep.lines()

    def hz(c):  # a hazard count lowered (Table 1 counts them): bound to the scan batch like the score
        i = next(i for i, h in enumerate(c["hazards"]) if h and '"confusables":3' in h)
        c["hazards"][i] = c["hazards"][i].replace('"confusables":3', '"confusables":0')
    edit_scores(tmp_path / "c", hz)
    rep = verify(tmp_path / "c")
    assert rep.status("scores") == "FAIL", rep.lines()


def test_yaml_protocol_aliases_are_refused_before_expansion():
    import pytest

    from veribench.bundles.snapshot import protocol_from_bytes
    from veribench.errors import ProtocolError

    bomb = b"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n" \
           b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nprotocol: {name: p}\n"
    with pytest.raises(ProtocolError, match="YAML aliases are not accepted"):
        protocol_from_bytes(bomb, "v1.yaml")
    ok = protocol_from_bytes(b"protocol: {name: p, tag: T}\ndetectors: [{name: D}]\n", "v1.yaml")
    assert ok.name == "p" and ok.detectors[0].name == "D"


def _small_ws(path: Path, proto_text: str, n: int = 24):
    """A committed protocol, then n documents with one detector's scores (a pre-registered run)."""
    from veribench.commit import commit
    from veribench.corpus.document import Document
    from veribench.records import ScoreResult
    from veribench.store import Workspace

    (path.parent / "p.toml").write_text(proto_text)
    docs = [Document(id=f"d{i:02d}", text=f"essay {i} " + "w" * i, label="human" if i % 2 else "ai",
                     subgroup="A" if i % 3 else "B") for i in range(n)]
    ws = Workspace(path)
    commit(ws, path.parent / "p.toml")
    store_documents(ws, docs, "DetA", [ScoreResult(raw=(i % 7) / 7, ai_probability=(i % 7) / 7) for i in range(n)],
                    corpus="s")
    return ws, docs


SMALL = FP_PROTO.replace('"fingerprints"', '"small"').replace('"FP-1"', '"S-1"')


def test_corrected_document_publishes_and_verifies(tmp_path, cli_run):
    """A correction written by ``writes.update_documents`` (re-imports with --update), which logs
    it with ``log_document_update`` and keeps the replaced row's leaf text for the bundle."""
    from veribench.store import logcheck, writes

    ws, docs = _small_ws(tmp_path / "ws", SMALL)
    with ws.transaction() as con:
        writes.update_documents(con, "fix", [{"doc_id": "d05", "field": "subgroup", "old": "A", "new": "C"}])
    assert logcheck.verify_workspace(ws).ok
    evaluate_publish_verify(ws, tmp_path / "p.toml", "S-1", tmp_path / "b", cli_run)
    d05 = next(d for d in corpus_lines(tmp_path / "b") if d["doc_id"] == "d05")
    assert d05["subgroup"] == "C" and d05["doc_seq"] > 1
    # presenting the document as it was before the correction is caught
    from tests.bundles.bundle_helpers import write_corpus

    docs_ = corpus_lines(tmp_path / "b")
    for d in docs_:
        if d["doc_id"] == "d05":
            d["subgroup"] = "A"
    write_corpus(tmp_path / "b", docs_)
    rep = verify(tmp_path / "b")
    assert rep.status("corpus") == "FAIL", rep.lines()


def test_withdrawn_document_leaves_no_trace_of_its_text(tmp_path, cli_run):
    """A withdrawal logged with ``log_withdrawal`` (the hook of arm-B withdrawals): the log still
    verifies, the bundle verifies, and the withdrawn text's hash appears in no published file."""
    from veribench.store import events as ev
    from veribench.store import logcheck

    ws, docs = _small_ws(tmp_path / "ws", SMALL)
    gone = next(d for d in docs if d.id == "d07")
    with ws.transaction() as con:
        con.execute("DELETE FROM submissions WHERE doc_id = 'd07'")
        con.execute("DELETE FROM documents WHERE doc_id = 'd07'")
        con.execute("DELETE FROM scores WHERE text_sha256 = ?", [gone.text_sha256])
        ev.log_withdrawal(con, {"withdrawal_id": "wd-1", "doc_id": "d07", "documents_removed": ["d07"],
                                "scores_removed": 1}, text_shas=[gone.text_sha256])
    assert logcheck.verify_workspace(ws).ok, logcheck.verify_workspace(ws).lines()
    assert not ws.query("SELECT count(*) FROM log_items WHERE k2 = ?", [gone.text_sha256])[0][0]
    evaluate_publish_verify(ws, tmp_path / "p.toml", "S-1", tmp_path / "b", cli_run)
    for f in (tmp_path / "b").rglob("*"):
        if f.is_file():
            assert gone.text_sha256.encode() not in f.read_bytes(), f
    # a deletion with no withdrawal behind it is not one
    from veribench.store import Workspace

    with Workspace(tmp_path / "ws") as w:
        w.con.execute("UPDATE log_items SET k1 = NULL WHERE kind = 'doc' AND k1 = 'd03'")
        assert "1 detached doc fingerprints that no logged withdrawal names" in "\n".join(
            f.line() for f in logcheck.verify_workspace(w).findings)


def test_report_of_a_tampered_bundle_leads_with_its_failure(liang_built, cli_run, tmp_path):
    """A bundle whose results.json was edited: its page (and the index) open with the failed
    verification, saying the numbers are the bundle's claims; the workspace copy of the same run
    is told apart by where it was read from."""
    import shutil

    ws, bundle, _ = liang_built
    bad = tmp_path / "tampered"
    shutil.copytree(bundle, bad)
    res = json.loads((bad / "results.json").read_text())
    res["table1"][0]["false_positives"] += 1
    (bad / "results.json").write_text(json.dumps(res), encoding="utf-8")
    code, out = cli_run("report", "-w", ws, bad, "--out", tmp_path / "site")
    assert code == 0, out
    site = tmp_path / "site"
    pages = {p.stem: json.loads((site / "data" / f"{p.stem}.json").read_text()) for p in site.glob("run-*.html")
             if p.stem != "run-trends"}
    (name, d), = [(n, d) for n, d in pages.items() if d.get("source") == "tampered"]
    assert d["verification"]["status"] == "FAILED" and d["source_kind"] == "published bundle"
    assert d["integrity"]["status"] == "bundle FAILED" and d["integrity"]["lines"][0]["alert"]
    html = (site / f"{name}.html").read_text()
    assert "did not verify" in html and html.index("did not verify") < html.index('id="table1"')
    assert {x["source_kind"] for x in pages.values()} == {"published bundle", "workspace"}
    idx = json.loads((site / "data" / "index.json").read_text())
    entry = next(r for r in idx["runs"] if r["name"] == name)
    assert "did not verify" in entry["integrity"] and entry["source_kind"] == "published bundle"
