"""Arm B through the CLI: invitations, import with process evidence, Table 2's split under
examples/protocols/arm-b.toml (checked against statsmodels' Wilson interval), fingerprints,
withdrawal of a document and everything derived from it, and no byte of a fingerprint-only
text in any export."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.rubric.write_helpers import PROMPT, liang_texts, sentences, words, write_directly
from veribench.cli.main import app as cli
from veribench.rubric.write import rules, store
from veribench.rubric.write.db import open_store
from veribench.store import Workspace

REPO = Path(__file__).resolve().parents[2]
PROTOCOL = REPO / "examples" / "protocols" / "arm-b.toml"
runner = CliRunner()


def run(*args: str, code: int = 0) -> str:
    r = runner.invoke(cli, list(args))
    assert r.exit_code == code, (args, r.output, r.exception)
    return r.output


@pytest.fixture(scope="module")
def armb(tmp_path_factory, data_dir, liang_dir):
    """Arm A and C (fast-detect-gpt 'writing' pairs), and arm B: three native volunteers
    (real college essays) and three non-native ones (real TOEFL essays, on an invitation of
    50-1,200 words); one of each chose fingerprint-only."""
    path = tmp_path_factory.mktemp("armb") / "ws"
    run("import", "fastdetectgpt", str(data_dir / "fastdetectgpt"), "--sets", "writing_gpt2-xl", "--pairs", "12",
        "-w", str(path), "-q")
    college = [t for t in liang_texts(liang_dir, "CollegeEssay_real_70") if 300 <= len(t.split()) <= 1100][:3]
    toefl = liang_texts(liang_dir, "TOEFL_real_91")[:3]
    texts: dict[str, str] = {}
    with open_store(path) as db:
        for i, t in enumerate(college):
            inv = write_directly(db, t, english="native", first_language="English", years=20 + i,
                                 publication="fingerprint_only" if i == 0 else "full")
            texts[inv] = t
        for i, t in enumerate(toefl):
            inv = write_directly(db, t, english="non-native", first_language=["Korean", "Arabic", "Spanish"][i],
                                 years=4 + 5 * i, register="professional", min_words=50, step_words=7,
                                 publication="fingerprint_only" if i == 0 else "full")
            texts[inv] = t
        pubs = {i: store.submission(db, i)["publication"] for i in texts}
    out = run("import", "arm-b", "-w", str(path))
    return {"path": path, "texts": texts, "pubs": pubs, "import_output": out}


def test_invite_prints_one_time_links_and_stores_only_hashes(tmp_path):
    p = tmp_path / "prompt.txt"
    p.write_text(PROMPT + "\n", encoding="utf-8")
    r = runner.invoke(cli, ["write", "invite", "-w", str(tmp_path / "ws"), "--prompt-file", str(p), "--register",
                            "professional", "--count", "3", "--base-url", "https://example.org/write/"])
    assert r.exit_code == 0, r.output
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("inv-")]
    assert len(lines) == 3
    toks = []
    for ln in lines:
        inv, url = ln.split("\t")
        m = re.fullmatch(r"https://example\.org/write/i/([A-Za-z0-9_-]{43})", url)
        assert m, url
        toks.append((inv, m.group(1)))
    raw = (tmp_path / "ws" / "write.sqlite").read_bytes() + b"".join(
        f.read_bytes() for f in (tmp_path / "ws").glob("write.sqlite-*"))
    with open_store(tmp_path / "ws") as db:
        for inv, tok in toks:
            assert tok.encode() not in raw  # only the hash is stored
            assert store.sha256_hex(tok).encode() in raw or db.query(
                "SELECT 1 FROM write_invitations WHERE token_sha256 = ?", [store.sha256_hex(tok)])
            got, problem = store.link_status(db, tok)
            assert problem is None and got["invitation_id"] == inv and got["register"] == "professional"
            assert (got["min_words"], got["max_words"]) == rules.TARGET_WORDS and got["prompt"] == PROMPT
    out = run("write", "status", "-w", str(tmp_path / "ws"))
    assert out.count("invited") == 3
    # bad input: one line, no traceback, nothing stored
    r = runner.invoke(cli, ["write", "invite", "-w", str(tmp_path / "ws"), "--prompt-file", str(p), "--register",
                            "poetry"])
    assert r.exit_code == 2 and "'poetry' is not one of" in r.output and "Traceback" not in r.output
    r = runner.invoke(cli, ["write", "invite", "-w", str(tmp_path / "ws"), "--prompt-file", str(tmp_path / "no.txt")])
    assert r.exit_code == 1 and "no such file" in r.output
    r = runner.invoke(cli, ["write", "invite", "-w", str(tmp_path / "ws"), "--prompt-file", str(p), "--min-words",
                            "900", "--max-words", "300"])
    assert r.exit_code == 1 and "word range" in r.output
    assert run("write", "status", "-w", str(tmp_path / "ws")).count("invited") == 3


def test_import_makes_arm_b_documents_with_provenance_and_evidence(armb):
    path, texts = armb["path"], armb["texts"]
    out = armb["import_output"]
    assert "process evidence per text" in out and "non-native volunteers" in out and "native volunteers" in out
    assert "2 of 6 texts are fingerprint-only" in out
    with Workspace(path, read_only=True) as ws:
        rows = {d: (t, a, lab, sg, json.loads(tags), json.loads(prov), kind, gk) for d, t, a, lab, sg, tags, prov, kind, gk in ws.query(
            "SELECT doc_id, text, arm, label, subgroup, tags, provenance, kind, group_key FROM documents WHERE arm = 'B'")}
        rep = json.loads(ws.query("SELECT report FROM imports WHERE kind = 'write'")[0][0])
    assert len(rows) == 6
    for inv, text in texts.items():
        t, arm, label, sg, tags, prov, kind, gk = rows[f"arm-b/{inv}"]
        assert t == text.strip(" \t\n")  # kept for scoring, even when only its fingerprint is published
        assert (arm, label) == ("B", "human")
        native = tags["english"] == "native"
        assert sg == ("native volunteers" if native else "non-native volunteers")
        assert kind == tags["register"] == prov["register"] == ("academic" if native else "professional")
        assert gk == prov["prompt_id"] and prov["prompt"] == PROMPT
        assert prov["method"] == "attested, with revision history" and prov["attestation"].startswith("att-")
        assert prov["fingerprint_only"] == (armb["pubs"][inv] == "fingerprint_only")
        assert prov.get("licence") == (None if prov["fingerprint_only"] else "CC BY 4.0")
        assert prov["consent_version"] == rules.CONSENT_VERSION and prov["attestation_version"] == rules.ATTESTATION_VERSION
        assert prov["self_report"]["english"] == tags["english"]
        assert tags["first_language"] == prov["self_report"]["first_language"].lower()
        assert tags["years_writing_english"] == rules.years_bucket(prov["self_report"]["years_writing_english"])
        ev = prov["process_evidence"]
        step = 10 if native else 7
        respaced = " ".join(text.split()) != text.strip(" \t\n")  # the last save restores the line breaks
        assert ev["revisions"] == -(-len(text.split()) // step) + respaced and ev["words"] == words(text)
        assert ev["large_insertions"] == [] and len(ev["history"]) == ev["revisions"]
        assert "A. Writer" not in json.dumps(prov)  # the typed name stays with the organiser
    assert len(rep["process_evidence"]) == 6 and {r["doc_id"] for r in rep["process_evidence"]} == set(rows)
    assert all(r["large_insertions"] == [] for r in rep["process_evidence"])
    # a second import finds nothing new
    assert "write: 0 documents, 0 withdrawn" in run("import", "arm-b", "-w", str(path), "-q")
    st = json.loads(run("write", "status", "-w", str(path), "--format", "json"))
    assert [s["imported"] for s in st] == [True] * 6 and all("revision" in s["evidence"] for s in st)


def test_table2_splits_native_non_native_and_archive_text(armb, tmp_path):
    from statsmodels.stats.proportion import proportion_confint

    path = armb["path"]
    run("protocol", "commit", str(PROTOCOL), "-w", str(path))
    out_dir = tmp_path / "run"
    run("evaluate", "-w", str(path), "-p", str(PROTOCOL), "--out", str(out_dir), "-q")
    res = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
    t2 = {(r["slice_type"], r["slice"]): r for r in res["table2"] if r["detector"] == "ZipPy"}
    with Workspace(path, read_only=True) as ws:
        got = ws.query("SELECT d.arm, d.subgroup, c.raw FROM documents d JOIN submissions u USING (doc_id) "
                       "JOIN scores c ON c.spec_hash = u.spec_hash AND c.text_sha256 = u.submitted_sha256 "
                       "WHERE d.label = 'human' AND c.status = 'ok'")
    groups = {("subgroup", "native volunteers"): [r for a, s, r in got if s == "native volunteers"],
              ("subgroup", "non-native volunteers"): [r for a, s, r in got if s == "non-native volunteers"],
              ("arm", "A"): [r for a, s, r in got if a == "A"]}
    assert [len(v) for v in groups.values()] == [3, 3, 12]
    for key, raws in groups.items():
        row = t2[key]
        k = sum(1 for x in raws if x >= 0.0)  # ZipPy's default boundary, as the protocol says
        lo, hi = proportion_confint(k, len(raws), alpha=0.05, method="wilson")
        assert (row["human_n"], row["false_positives"]) == (len(raws), k), key
        assert row["fpr"] == pytest.approx(k / len(raws))
        assert row["fpr_ci95"] == pytest.approx([lo, hi], abs=1e-9)
    assert ("arm", "C") in t2 and t2[("arm", "C")]["ai_n"] == 12
    t2csv = list(csv.DictReader((out_dir / "table2.csv").open(encoding="utf-8")))
    assert {"native volunteers", "non-native volunteers", "A"} <= {r["slice"] for r in t2csv}


def _files_hold(root: Path, needles: list[str]) -> list[tuple[str, str]]:
    """(file, needle) for each needle found in any file under root: raw bytes, and every
    string cell of Parquet files."""
    import pyarrow.parquet as pq

    hits = []
    files = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
    for f in files:
        blobs = [f.read_bytes()]
        if f.suffix == ".parquet":
            t = pq.read_table(f)
            blobs.append("\n".join(str(v) for c in t.columns for v in c.to_pylist()).encode("utf-8"))
        for n in needles:
            if any(n.encode("utf-8") in b for b in blobs):
                hits.append((str(f), n))
    return hits


def test_no_export_holds_a_byte_of_a_fingerprint_only_text(armb, tmp_path):
    path, texts, pubs = armb["path"], armb["texts"], armb["pubs"]
    hidden_texts = [t for i, t in texts.items() if pubs[i] == "fingerprint_only"]
    public = [t for i, t in texts.items() if pubs[i] == "full"]
    secret = [s for t in hidden_texts for s in sentences(t)]
    assert len(secret) >= 10
    out = tmp_path / "out"
    out.mkdir()
    assert "2 fingerprint-only, without text" in run("write", "export", "-w", str(path), "--out", str(out / "arm-b.jsonl"))
    run("protocol", "commit", str(PROTOCOL), "-w", str(path))
    run("evaluate", "-w", str(path), "-p", str(PROTOCOL), "--out", str(out / "run"), "--json", str(out / "r.json"),
        "-q")
    # after the scan, whichever test of this module ran first (the fixture is shared)
    run("export", "scores", "--out", str(out / "scores.csv"), "-w", str(path))
    run("export", "scores", "--out", str(out / "scores.parquet"), "-w", str(path))
    r = runner.invoke(cli, ["report", "-w", str(path), "--out", str(out / "site")])
    assert r.exit_code == 0, r.output
    assert _files_hold(out, secret) == []
    # the checker sees text that is there: the full-text volunteers are in the arm-B export
    assert _files_hold(out / "arm-b.jsonl", [sentences(public[0])[0]])
    recs = [json.loads(x) for x in (out / "arm-b.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(recs) == 6
    by_id = {r["doc_id"]: r for r in recs}
    from veribench.rubric.write.fingerprint import fingerprint

    for inv, t in texts.items():
        rec = by_id[f"arm-b/{inv}"]
        assert rec["text_sha256"] == fingerprint(t) and rec["words"] == words(t)
        assert rec["fingerprint_only"] == (pubs[inv] == "fingerprint_only")
        assert (rec["text"] is None) == rec["fingerprint_only"]
        assert rec["tags"]["register"] and rec["tags"]["english"]
    rows = list(csv.DictReader((out / "scores.csv").open(encoding="utf-8")))
    fp_ids = {f"arm-b/{i}" for i in texts if pubs[i] == "fingerprint_only"}
    assert {r["doc_id"] for r in rows} >= fp_ids  # their scores are published, with their hash
    assert all(r["text_sha256"] for r in rows if r["doc_id"] in fp_ids)


def test_fingerprint_command_proves_a_text_belongs(armb, tmp_path):
    path, texts, pubs = armb["path"], armb["texts"], armb["pubs"]
    inv = next(i for i in texts if pubs[i] == "fingerprint_only")
    f = tmp_path / "my-text.txt"
    f.write_bytes(("\ufeff" + texts[inv].replace("\n", "\r\n") + "\r\n").encode("utf-8"))  # as Notepad saves it
    r = runner.invoke(cli, ["write", "fingerprint", str(f), "-w", str(path)])
    assert r.exit_code == 0, r.output
    with Workspace(path, read_only=True) as ws:
        sha = ws.query("SELECT text_sha256 FROM documents WHERE doc_id = ?", [f"arm-b/{inv}"])[0][0]
    assert r.stdout.strip() == sha and f"in the corpus: arm-b/{inv}" in r.output
    import hashlib

    plain = texts[inv].replace("\r\n", "\n").replace("\r", "\n").strip(" \t\n")  # the documented one-liner
    assert hashlib.sha256(plain.encode("utf-8")).hexdigest() == sha
    f.write_text(texts[inv] + " One more sentence.", encoding="utf-8")
    r = runner.invoke(cli, ["write", "fingerprint", str(f), "-w", str(path)])
    assert r.exit_code == 1 and "not in the corpus of workspace" in r.output


def test_withdraw_removes_the_document_its_derivatives_and_their_scores(armb, tmp_path):
    path = tmp_path / "ws"
    shutil.copytree(armb["path"], path)
    texts, pubs = armb["texts"], armb["pubs"]
    inv = next(i for i in texts if pubs[i] == "fingerprint_only")
    src = f"arm-b/{inv}"
    # a derived document (a paraphrase attack of the fingerprint-only text) and its score
    j = tmp_path / "derived.jsonl"
    derived = texts[inv].replace("I ", "I really ", 3)
    j.write_text(json.dumps({"id": "attack/1", "text": derived, "label": "human", "arm": "B",
                             "tags": {"derivation": "attack", "attack": "intensifier"},
                             "provenance": {"source_id": src}}) + "\n", encoding="utf-8")
    run("import", "jsonl", str(j), "-w", str(path), "-q")
    with Workspace(path) as ws:
        assert {"attack/1", src} <= ws.fingerprint_only_ids()  # derived from a fingerprint-only text
        assert [d["text"] for d in ws.published_documents("WHERE doc_id = 'attack/1'")] == [None]
        from veribench import registry
        from veribench.detectors.pipeline import score_documents

        score_documents(ws, registry.get("detector", "zippy")(engine="brotli"), ["attack/1"])
        n_scores = ws.query("SELECT count(*) FROM scores")[0][0]
    out = run("write", "withdraw", inv, "-w", str(path), "--yes")
    assert "attack/1" in out and src in out
    with Workspace(path, read_only=True) as ws:
        assert ws.query("SELECT count(*) FROM documents WHERE doc_id IN (?, ?)", [src, "attack/1"]) == [(0,)]
        assert ws.query("SELECT count(*) FROM scores")[0][0] < n_scores
        (wd,) = ws.query("SELECT doc_id, via, removed FROM withdrawals")
        assert wd[0] == src and wd[1] == "cli" and json.loads(wd[2])["documents_removed"] == [src, "attack/1"]
        assert texts[inv][:40] not in json.dumps(ws.query("SELECT * FROM withdrawals"), default=str)
        assert ws.query("SELECT count(*) FROM documents") == [(29,)]  # everything else is still there
    raw = (path / "veribench.duckdb").read_bytes()  # the file was rewritten: no byte of the text is left
    assert not [s for s in sentences(texts[inv]) + sentences(derived) if s.encode("utf-8") in raw]
    other = next(t for i, t in texts.items() if i != inv and len(t.split()) > 300)
    assert sentences(other)[0].encode("utf-8") in raw
    with open_store(path) as db:
        assert store.get_invitation(db, inv)["state"] == "withdrawn" and store.pending_withdrawals(db) == []
    r = runner.invoke(cli, ["write", "withdraw", inv, "-w", str(path), "--yes"])
    assert r.exit_code == 1 and "already withdrawn" in r.output


def test_docs_give_the_consent_and_attestation_texts_verbatim():
    lines = (REPO / "docs" / "arm-b.md").read_text(encoding="utf-8").splitlines()
    doc = " ".join(" ".join(re.sub(r"^>\s?", "", ln) for ln in lines).split())
    for text in (rules.CONSENT_TEXT, rules.ATTESTATION_TEXT, rules.CONSENT_TITLE):
        assert " ".join(text.split()) in doc
    for word in ("fingerprint_only", "write fingerprint", "process_evidence", "withdraw_document", "arm-b.toml"):
        assert word in doc


def test_reissue_and_revoke_end_old_links_and_sessions(tmp_path):
    ws = tmp_path / "ws"
    with open_store(ws) as db:
        [(inv, tok)] = store.create_invitations(db, PROMPT)
        _, sid = store.redeem(db, tok)
        assert store.session_invitation(db, sid) == inv
    out = run("write", "reissue", inv, "-w", str(ws), "--base-url", "https://x.example/w")
    new = out.strip().split("\t")[1].rsplit("/", 1)[1]
    with open_store(ws) as db:
        assert store.session_invitation(db, sid) is None  # the old sign-in is dead
        assert store.link_status(db, tok) == (None, "No invitation has this link.")
        got, problem = store.link_status(db, new)
        assert problem is None and got["invitation_id"] == inv
        _, sid2 = store.redeem(db, new)
    run("write", "revoke", inv, "-w", str(ws))
    with open_store(ws) as db:
        assert store.session_invitation(db, sid2) is None
        assert "revoked" in store.link_status(db, new)[1]
    r = runner.invoke(cli, ["write", "revoke", "inv-nope", "-w", str(ws)])
    assert r.exit_code == 1 and "no invitation 'inv-nope'" in r.output


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (cryptography; valid for one day)."""
    import datetime
    import ipaddress

    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    c, k = folder / "cert.pem", folder / "key.pem"
    c.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    k.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    return c, k


def test_serve_over_tls_in_its_own_process_never_locks_the_workspace(tmp_path, liang_dir):
    """`write serve` as a real process with a certificate: writers sign in over HTTPS while
    the organiser imports into the workspace from another process."""
    import os
    import ssl
    import subprocess
    import sys
    import time

    import httpx

    from tests.rubric.rubric_helpers import free_port
    from tests.rubric.write_helpers import HttpWriter, first_words

    cert, key = _self_signed(tmp_path)
    ws = tmp_path / "ws"
    with open_store(ws) as db:
        [(inv, tok)] = store.create_invitations(db, PROMPT)
        done = write_directly(db, liang_texts(liang_dir, "CollegeEssay_real_70")[2], english="native",
                              first_language="English", years=30)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "veribench.cli.main", "write", "serve", "-w", str(ws), "--port",
                             str(port), "--ssl-certfile", str(cert), "--ssl-keyfile", str(key)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"https://127.0.0.1:{port}"
    trust = ssl.create_default_context(cafile=str(cert))
    try:
        t0 = time.time()
        while True:
            try:
                httpx.get(url + "/static/write.css", verify=trust, timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.time() - t0 < 30, proc.stdout.read() if proc.poll() else "timeout"
                time.sleep(0.2)
        w = HttpWriter(url, tok)
        w.c.close()
        w.c = httpx.Client(base_url=url, headers={"accept": "text/html"}, follow_redirects=True, verify=trust)
        page = w.c.get(f"/i/{tok}")
        assert "secure" in page.headers["set-cookie"].lower() and "strict-transport-security" in page.headers
        w.start()
        w.consent()
        w.about()
        assert w.save(first_words(liang_texts(liang_dir, "CollegeEssay_real_70")[4], 50)).status_code == 200
        # meanwhile the workspace is free for every other command (another process)
        out = run("import", "arm-b", "-w", str(ws), "-q")
        assert "write: 1 documents" in out
        with Workspace(ws, read_only=True) as wsp:
            assert wsp.query("SELECT doc_id FROM documents") == [(f"arm-b/{done}",)]
        with pytest.raises(httpx.TransportError):  # no plain HTTP on the TLS port
            httpx.get(f"http://127.0.0.1:{port}/i/{tok}", timeout=5).raise_for_status()
        w.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_invite_links_follow_the_port_write_serve_uses(tmp_path):
    """Issue 25 walk: `write invite` printed links on port 8100 whatever port `write serve`
    would use. ``--port N`` prints links on port N (``reissue`` too); without either option
    the links' port is said on standard error with how to change it; ``--port`` with
    ``--base-url`` and a base URL that is not http(s) are refused in one line, nothing stored."""
    p = tmp_path / "prompt.txt"
    p.write_text(PROMPT + "\n", encoding="utf-8")
    ws = tmp_path / "ws"
    r = runner.invoke(cli, ["write", "invite", "-w", str(ws), "--prompt-file", str(p), "--count", "2",
                            "--port", "8765"])
    assert r.exit_code == 0, r.output
    links = [ln.split("\t") for ln in r.stdout.splitlines() if ln.startswith("inv-")]
    assert len(links) == 2 and all(re.fullmatch(r"http://127\.0\.0\.1:8765/i/[A-Za-z0-9_-]{43}", u) for _, u in links)
    r = runner.invoke(cli, ["write", "reissue", links[0][0], "-w", str(ws), "--port", "8765"])
    assert r.exit_code == 0 and re.fullmatch(rf"{links[0][0]}\thttp://127\.0\.0\.1:8765/i/[A-Za-z0-9_-]{{43}}",
                                             r.stdout.strip()), r.output
    r = runner.invoke(cli, ["write", "invite", "-w", str(ws), "--prompt-file", str(p)])
    assert r.exit_code == 0 and "http://127.0.0.1:8100/i/" in r.stdout, r.output
    assert "port 8100" in r.stderr and "--port N or --base-url URL" in r.stderr, r.stderr
    for extra, msg in ((["--port", "9000", "--base-url", "https://x.org/write"], "--port: given with --base-url"),
                       (["--base-url", "x.org:9000"], "--base-url: not an http(s) URL")):
        r = runner.invoke(cli, ["write", "invite", "-w", str(ws), "--prompt-file", str(p), *extra])
        assert r.exit_code == 1 and msg in r.output and "Traceback" not in r.output, r.output
        assert len(r.output.strip().splitlines()) == 1, r.output
    assert run("write", "status", "-w", str(ws)).count("invited") == 3  # the refused ones stored nothing


@pytest.mark.parametrize("stated", ["Write 200 words about a habit.", "A 2,000-word essay on your town.",
                                    "Write 150 to 400 words."])
def test_invite_refuses_a_prompt_whose_stated_length_is_outside_the_range(tmp_path, stated):
    """Issue 25 walk: the invitation page showed the prompt's "Write 200 words" beside the
    register's "Length: 300-1200 words". A prompt that states a word count outside the
    invitation's range is refused in one line naming the file and field, nothing stored; a
    range that includes it is accepted."""
    p = tmp_path / "prompt.txt"
    p.write_text(stated, encoding="utf-8")
    ws = tmp_path / "ws"
    r = runner.invoke(cli, ["write", "invite", "-w", str(ws), "--prompt-file", str(p)])
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert f"file {p}, field 'prompt': the prompt asks for " in r.output and "300-1,200 words" in r.output, r.output
    assert "--min-words/--max-words" in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert not (ws / "write.sqlite").exists()  # nothing stored (the store it would have created is gone)
    r = runner.invoke(cli, ["write", "invite", "-w", str(ws), "--prompt-file", str(p), "--min-words", "100",
                            "--max-words", "2000"])
    assert r.exit_code == 0, r.output
    assert rules.stated_word_counts(stated) and rules.stated_word_counts(PROMPT) == []
