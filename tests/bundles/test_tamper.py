"""The tamper suite: one class per test on the real Liang detector bundle, each caught and named.

Every tamper below is made the way a careful forger would make it: after the edit the
manifest is recomputed (every file's SHA-256 and the root hash), so the manifest check
passes and the named check has to catch it on its own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.bundles.bundle_helpers import (
    corpus_lines,
    edit_json,
    edit_scores,
    edit_text,
    events,
    rehash,
    verify,
    write_corpus,
    write_events,
)


def caught(bundle: Path, check: str, *needles: str):
    rep = verify(bundle)
    assert not rep.ok, "\n".join(rep.lines())
    assert rep.status(check) == "FAIL", "\n".join(rep.lines())
    text = "\n".join(rep.lines())
    assert f"FAIL     {check}: " in text
    for n in needles:
        assert n in text, text
    return rep


# -- the twelve classes of the issue ----------------------------------------------------------------

def test_changed_score(bundle):
    def edit(c):
        i = next(i for i, s in enumerate(c["status"]) if s == "ok" and c["detector"][i] == "GPTZero")
        c["ai_probability"][i] = 0.99 if c["ai_probability"][i] < 0.5 else 0.01
        c["raw"][i] = c["ai_probability"][i]
    edit_scores(bundle, edit)
    caught(bundle, "scores", "scan batch", "changed, added or dropped")


def test_dropped_document(bundle):
    docs = corpus_lines(bundle)
    gone = next(d for d in docs if d["label"] == "human")["doc_id"]
    write_corpus(bundle, [d for d in docs if d["doc_id"] != gone], update_manifest=False)
    edit_scores(bundle, lambda c: [c[k].__setitem__(slice(None), [v for v, d in zip(c[k], list(c["doc_id"]))
                                                                  if d != gone]) for k in list(c)[::-1]])
    caught(bundle, "corpus", "differ from what it logged")


def test_added_document(bundle):
    docs = corpus_lines(bundle)
    new = dict(docs[0], doc_id="liang2023/forged/0", text="A forged essay that nobody wrote.", label="human")
    from veribench.hashing import text_sha256

    new["text_sha256"] = text_sha256(new["text"])
    write_corpus(bundle, docs + [new])
    caught(bundle, "corpus", "added, dropped or edited")


def test_changed_label(bundle):
    docs = corpus_lines(bundle)
    d = next(d for d in docs if d["label"] == "human")
    d["label"] = "ai"
    write_corpus(bundle, docs)
    caught(bundle, "corpus", "label")


def test_changed_protocol_bytes(bundle):
    edit_text(bundle, "protocol/v2.toml", lambda s: s.replace("threshold = 0.6", "threshold = 0.7"))
    caught(bundle, "commitment", "protocol bytes do not hash to the committed SHA-256")


def test_commitment_after_the_first_scan_presented_as_preregistered(bundle):
    """The Liang scores predate the commitment; a results.json claiming otherwise is caught."""
    def edit(r):
        p = r["run"]["protocol"]
        p["scores_before_commit"] = p["scores_logged_before_commit"] = p["scores_dated_before_commit"] = 0
    edit_json(bundle, "results.json", edit)
    caught(bundle, "timing", "must be declared")


def test_backdated_amendment(bundle):
    edit_json(bundle, "amendments.json", lambda a: a[0].__setitem__("date", "2020-01-01"))
    caught(bundle, "amendments", "amendments.json differs from the log")


def test_backdated_amendment_in_the_log(bundle):
    """Moving the amendment's logged time before the first run breaks the chain (and the time order)."""
    evs = events(bundle)
    amend = next(e for e in evs if e["type"] == "protocol_amend")
    amend["at"] = "2020-01-01T00:00:00.000000Z"
    amend["payload"]["amendment"]["date"] = "2020-01-01"
    write_events(bundle, evs)
    caught(bundle, "chain", "event hash does not recompute")


def test_backdated_amendment_with_the_whole_log_rewritten(bundle):
    """A forger who backdates the amendment and then rewrites every hash, and every commitment
    record derived from them, is caught by the RFC 3161 token: it stamps the true record."""
    from veribench.store.commitments import commitment_record, record_bytes

    evs = events(bundle)
    amend = next(e for e in evs if e["type"] == "protocol_amend")
    amend["payload"]["amendment"]["date"] = "2020-01-01"
    write_events(bundle, evs, rechain=True, update_manifest=False)
    for e in evs:
        if e["type"] in ("protocol_commit", "protocol_amend"):
            (bundle / f"commitments/v{e['payload']['version']}.json").write_bytes(record_bytes(commitment_record(e)))
    rehash(bundle)
    caught(bundle, "timestamp", "commitments/v2.tsr", "token stamps other bytes")


def test_renamed_protocol(bundle):
    edit_json(bundle, "results.json", lambda r: r["run"]["protocol"].__setitem__("name", "a-fresh-protocol"))
    caught(bundle, "commitment", "run's protocol.name differs from the log")


def test_renamed_protocol_file(bundle):
    edit_text(bundle, "protocol/v2.toml", lambda s: s.replace('"liang-bundle-test-renamed"', '"brand-new-protocol"'))
    caught(bundle, "commitment", "protocol bytes do not hash")


def test_broken_chain_link(bundle):
    evs = events(bundle)
    evs[3]["prev"] = "f" * 64
    write_events(bundle, evs)
    caught(bundle, "chain", "link broken")


def test_moved_split_assignment(bundle):
    def edit(c):
        i = c["split"].index("calibration")
        d = c["doc_id"][i]
        for j, x in enumerate(c["doc_id"]):
            if x == d:
                c["split"][j] = "test"
    edit_scores(bundle, edit)
    caught(bundle, "split", "a moved split assignment")


def test_changed_published_number(bundle):
    def edit(r):
        row = next(x for x in r["table1"] if x["detector"] == "GPTZero")
        row["fpr"] = row["fpr"] / 2
    edit_json(bundle, "results.json", edit)
    rep = caught(bundle, "results", "results.table1[0].fpr")
    assert rep.status("tables") == "ok"  # tables.md still shows the true number: it is re-derived, not trusted


def test_plus_one_in_a_published_last_digit(bundle):
    """tables.md prints rates to one decimal; a +1 in that digit fails, with the line and column."""
    import re

    md = (bundle / "tables.md").read_text()
    line = next(x for x in md.splitlines() if x.startswith("| GPTZero |"))
    m = re.search(r"(\d+)\.(\d)% \[", line)
    bumped = line[:m.start(2)] + str((int(m.group(2)) + 1) % 10) + line[m.end(2):]
    edit_text(bundle, "tables.md", lambda s: s.replace(line, bumped))
    caught(bundle, "tables", "tables.md", "compared at its printed rounding", "column")


# -- further classes -----------------------------------------------------------------------------------

def test_file_changed_without_the_manifest(bundle):
    edit_text(bundle, "table1.csv", lambda s: s.replace("GPTZero", "GPTZer0", 1), update_manifest=False)
    caught(bundle, "manifest", "table1.csv", "SHA-256 of raw bytes differs from the manifest")


def test_unlisted_file(bundle):
    (bundle / "notes.txt").write_text("added later")
    caught(bundle, "manifest", "notes.txt", "not covered by the manifest")


def test_table_csv_edited(bundle):
    edit_text(bundle, "table2.csv", lambda s: s.replace(",0.", ",0.0", 1))
    caught(bundle, "tables", "table2.csv")


def test_csv_and_parquet_disagree(bundle):
    original = (bundle / "scores.parquet").read_bytes()

    def edit(c):
        c["ai_probability"][c["status"].index("ok")] = 0.123456
    edit_scores(bundle, edit, update_manifest=False)
    (bundle / "scores.parquet").write_bytes(original)  # the CSV is forged, the Parquet file is not
    rehash(bundle)
    caught(bundle, "scores", "scores.csv and scores.parquet differ")


def test_dropped_score_row(bundle):
    def edit(c):
        i = next(i for i, d in enumerate(c["detector"]) if d == "ZeroGPT")
        for k in c:
            del c[k][i]
    edit_scores(bundle, edit)
    caught(bundle, "scores", "scan batch")


def test_flipped_flag(bundle):
    def edit(c):
        i = next(i for i, f in enumerate(c["flag"]) if f is not None)
        c["flag"][i] = not c["flag"][i]
    edit_scores(bundle, edit)
    caught(bundle, "results", "flag differs from the decision rule")


def test_edited_event_payload(bundle):
    evs = events(bundle)
    b = next(e for e in evs if e["type"] == "scan_batch")
    b["payload"]["n_score"] += 1
    write_events(bundle, evs)
    caught(bundle, "chain", "payload differs from its recorded SHA-256")


def test_commitment_record_edited(bundle):
    edit_json(bundle, "commitments/v1.json", lambda r: r.__setitem__("committed_at", "2020-01-01T00:00:00.000000Z"))
    caught(bundle, "commitment", "commitments/v1.json")


def test_timestamp_token_for_other_bytes(bundle):
    """The token of version 1 put in place of version 2's: it stamps other bytes and is refused."""
    (bundle / "commitments/v2.tsr").write_bytes((bundle / "commitments/v1.tsr").read_bytes())
    rehash(bundle)
    caught(bundle, "timestamp", "token stamps other bytes")


def test_timestamp_token_forged_signature(bundle):
    raw = bytearray((bundle / "commitments/v1.tsr").read_bytes())
    raw[-10] ^= 0xFF  # inside the ECDSA signature
    (bundle / "commitments/v1.tsr").write_bytes(bytes(raw))
    rehash(bundle)
    caught(bundle, "timestamp", "v1.tsr")


def test_fingerprint_only_document_with_text(bundle):
    docs = corpus_lines(bundle)
    d = next(d for d in docs if "text" in d)
    d["fingerprint_only"] = True
    write_corpus(bundle, docs)
    caught(bundle, "corpus", "a fingerprint-only document carries its text")


def test_corpus_text_swapped(bundle):
    docs = corpus_lines(bundle)
    d = next(d for d in docs if "text" in d)
    d["text"] = d["text"] + " (edited)"
    write_corpus(bundle, docs)
    caught(bundle, "corpus", "text does not hash to its text_sha256")


@pytest.mark.parametrize("edit", [
    lambda x: x.replace(',"in_run":true', ',"in_run":true,"in_run":true', 1),  # a duplicate key
    lambda x: x.replace(',"doc_seq":', ', "doc_seq":', 1),  # other spacing
    lambda x: x.replace('"label":"human"', '"label":"hu\\u006dan"', 1),  # another escape of the same text
])
def test_corpus_line_not_canonical(bundle, edit):
    lines = (bundle / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    i = next(i for i, x in enumerate(lines) if '"label":"human"' in x)
    lines[i] = edit(lines[i])
    (bundle / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rehash(bundle)
    rep = caught(bundle, "corpus")
    assert "canonical JSON form" in "\n".join(rep.lines()) or "differ from what it logged" in "\n".join(rep.lines())


def test_run_event_replaced(bundle):
    edit_json(bundle, "manifest.json", lambda m: m["run_event"].__setitem__("hash", "0" * 64), update_manifest=False)
    rehash(bundle)
    caught(bundle, "chain", "run event differs from the manifest's")


def test_symlink_to_a_file_outside(bundle, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the bundle")
    (bundle / "README.md").unlink()
    os.symlink(secret, bundle / "README.md")
    rep = caught(bundle, "reader", "README.md", "symbolic link")
    assert "outside the bundle" not in json.dumps(rep.to_dict())


def test_deeply_nested_results(bundle):
    (bundle / "results.json").write_text("[" * 100_000 + "]" * 100_000)
    rehash(bundle)
    caught(bundle, "reader", "results.json", "nested 100000 levels deep, beyond the cap of 64")


def test_oversized_file_is_not_read(bundle):
    """A 2 GB (sparse) results.json is refused from its size alone: no read, no memory."""
    import resource

    with open(bundle / "results.json", "r+b") as f:
        f.truncate(2 * 1024**3)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rep = verify(bundle)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert rep.status("reader") == "FAIL" and "exceeds the size cap of 256 MiB; not read" in "\n".join(rep.lines())
    assert (after - before) < 200 * 1024  # kB: nowhere near the file's 2 GB


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_is_refused_without_blocking(bundle):
    (bundle / "README.md").unlink()
    os.mkfifo(bundle / "README.md")
    caught(bundle, "reader", "README.md", "a FIFO")


@pytest.mark.parametrize("content,why", [
    (b'{"format": "veribench-detector-bundle/1", "tag": 1, "tag": 2}', "duplicate"),
    (b"", "unparsable"),
    (b"[]", "expected an object"),
    (b"null", "expected an object, got null"),  # was read as "no manifest" and passed with every check not run
    (b"0", "expected an object, got int"),
    (b"[" * 100_000 + b"]" * 100_000, "nested"),
    (b"\xff\xfe garbage", ""),
])
def test_a_damaged_manifest_is_a_failed_bundle_not_a_usage_error(bundle, cli_run, content, why):
    """`veribench verify` on a folder whose manifest.json is damaged: exit 1 with the manifest
    check failed and its reason, never "not a bundle" (exit 2) or a traceback."""
    (bundle / "manifest.json").write_bytes(content)
    code, out = cli_run("verify", bundle)
    assert code == 1, out
    first = out.splitlines()[0]
    assert first.startswith("[FAIL]") and ("manifest" in first or "reader" in first), out
    assert why.lower() in out.lower(), out


def test_a_bundle_passes_only_when_every_check_ran(bundle):
    """The verdict is "ok" only if each of the checks ran and passed: a report with a check
    that did not run is a failure that names it (the class of the null-manifest pass)."""
    from veribench.bundles.verify_report import CHECKS, BundleReport

    rep = verify(bundle)
    assert rep.ok and set(rep.checks) >= set(CHECKS)
    partial = BundleReport(path=str(bundle), checks={k: v for k, v in rep.checks.items() if k != "results"})
    assert not partial.ok and partial.lines()[0].endswith("checks that did not run: results")


@pytest.mark.parametrize("rel", ["results.json", "amendments.json"])
def test_a_bundle_file_holding_json_null_fails(bundle, rel):
    """JSON null is never "absent": with the manifest re-hashed to match, the file still fails."""
    from tests.bundles.bundle_helpers import rehash

    (bundle / rel).write_text("null", encoding="utf-8")
    rehash(bundle)
    rep = verify(bundle)
    assert not rep.ok and "got null" in "\n".join(rep.lines()), "\n".join(rep.lines())


# -- time anchors: a token's date counts only at a root the verifying user trusts (issue 24) --------

def _timestamp(rep) -> tuple[str, str]:
    """(status, detail) of the timestamp check, the detail being the failure's line when it failed."""
    text = "\n".join(rep.lines())
    line = next(x for x in text.splitlines() if x.startswith("    ") and " timestamp: " in x[:30])
    return rep.status("timestamp"), line


def _not_proven(rep) -> str:
    """The timestamp check is a note that says the date is NOT proven (never ok, never silent)."""
    from veribench.bundles.verify_commitment import NOT_PROVEN

    status, line = _timestamp(rep)
    assert status == "note", "\n".join(rep.lines())
    assert NOT_PROVEN in line and "ok       timestamp" not in "\n".join(rep.lines())
    assert not any(f.check == "timestamp" for f in rep.failures)
    return line


def _forger(days: int = 0, **kw):
    """A time-stamp authority anyone can make, its certificates valid from before its (moved) clock."""
    from datetime import UTC, datetime, timedelta

    from tests.bundles.tsa_server import Authority

    return Authority(cn=kw.pop("cn", "forger TSA"), valid_from=datetime.now(UTC) - timedelta(days=days + 2), **kw)


class TestTimeAnchorsTrustedRootsOnly:
    """A self-made authority: its root (and intermediate) in the bundle never makes a date proven.

    A token counts as an anchor only when its chain ends at a root the verifying user
    supplied (``--tsa-root``) or at one of the pinned public list (certifi's Mozilla CA
    bundle, named with its version); a certificate carried in the bundle is information.
    """

    def test_backdated_commitment_with_a_private_authority_and_its_root_in_the_bundle(self, bundle, liang_built,
                                                                                      cli_run, tmp_path):
        """Issue 24, class 2 as reported: the log moved 30 days back and every commitment re-stamped
        by a private authority at those dates, its root put in the bundle. Everything else is
        consistent (trusting the forger's root makes the check pass); the date stays unproven."""
        from datetime import UTC, datetime, timedelta

        import certifi

        from tests.bundles.timestamp_helpers import restamp
        from veribench.evaluate.honesty import LOG_ALONE

        forger = _forger(30)
        restamp(bundle, forger, carry=forger.ca_pem, days=30)
        rep = verify(bundle)
        line = _not_proven(rep)
        assert f"certifi {certifi.__version__} (Mozilla CA bundle)" in line  # the public list, named with its version
        gen = json.loads((bundle / "results.json").read_text())["run"]["protocol"]["timestamp"]["gen_time"]
        assert datetime.fromisoformat(gen.replace("Z", "+00:00")) < datetime.now(UTC) - timedelta(days=29)
        for md in ("README.md", "tables.md"):  # the published statements keep the caveat
            text = (bundle / md).read_text(encoding="utf-8")
            assert "Timestamp: RFC 3161 token from 127.0.0.1:" in text and f" at {gen}, a date NOT proven" in text
            assert LOG_ALONE in text
        # trusting the genuine authority of the original bundle does not anchor the forger's tokens
        code, out = cli_run("verify", bundle, "--tsa-root", liang_built[2])
        assert "note     timestamp: token present, authority not trusted: the date is NOT proven" in out, out
        assert f"--tsa-root {liang_built[2]}" in out
        # a user who does trust the forger's root gets its dates (the forgery is otherwise complete)
        own = tmp_path / "forger-root.pem"
        own.write_bytes(forger.ca_pem)
        code, out = cli_run("verify", bundle, "--tsa-root", own, "--format", "json")
        ts = json.loads(out)["detector_runs"][0]["checks"]["timestamp"]
        assert ts["status"] == "ok" and f"--tsa-root {own}" in ts["detail"], ts
        assert {a["root"] for a in ts["anchors"]} == {"O=veribench tests,CN=forger TSA root"}

    @pytest.mark.parametrize("embed_chain", [False, True], ids=["intermediate-in-bundle", "intermediate-in-token"])
    def test_private_authority_with_an_intermediate_root_and_intermediate_in_the_bundle(self, bundle, embed_chain):
        """Variant: root -> intermediate -> signer, the root and the intermediate carried in
        ``vK.roots.pem`` (the intermediate also inside the token, or not): never an anchor."""
        from tests.bundles.timestamp_helpers import restamp

        forger = _forger(intermediate=True, embed_chain=embed_chain)
        restamp(bundle, forger, carry=forger.chain_pem)
        _not_proven(verify(bundle))
        # nor when the user trusts an unrelated root: carried certificates are never roots for the chain
        from tests.bundles.tsa_server import make_authority
        from veribench.commit.tsa import load_certificates

        other = make_authority("another authority")[0]
        _not_proven(verify(bundle, tsa_roots=[other]))
        # the same bundle, with the forger's root trusted by the user: the carried intermediate
        # only helps build the path to it
        rep = verify(bundle, tsa_roots=load_certificates(forger.ca_pem))
        assert rep.status("timestamp") == "ok", "\n".join(rep.lines())

    def test_private_authority_without_any_certificate_in_the_bundle(self, bundle):
        """Variant: no ``vK.roots.pem`` at all (the signer's certificate only inside the token)."""
        from tests.bundles.timestamp_helpers import restamp

        restamp(bundle, _forger(), carry=None)
        assert not list((bundle / "commitments").glob("*.roots.pem"))
        _not_proven(verify(bundle))

    def test_self_made_root_named_like_the_trusted_one(self, bundle, liang_built):
        """Variant: the forger names its authority exactly like the one the user trusts; the chain
        names the trusted root but does not verify against it: refused, not a note."""
        from tests.bundles.timestamp_helpers import restamp
        from veribench.commit.tsa import load_certificates

        forger = _forger(cn="veribench test TSA")  # the names of the session's genuine authority
        restamp(bundle, forger, carry=forger.ca_pem)
        rep = verify(bundle, tsa_roots=load_certificates(liang_built[2].read_bytes()))
        assert rep.status("timestamp") == "FAIL"
        assert "names 'O=veribench tests,CN=veribench test TSA root', a root you trust (--tsa-root)" in \
            "\n".join(rep.lines())

    def test_forged_token_beside_the_genuine_root(self, bundle, liang_built):
        """Variant: the genuine authority's root is left in the bundle, the tokens come from the
        forger: they verify against no carried certificate (refused) and name no trusted root."""
        from tests.bundles.timestamp_helpers import restamp
        from veribench.commit.tsa import load_certificates

        restamp(bundle, _forger(), carry=liang_built[2].read_bytes())
        rep = verify(bundle)
        assert rep.status("timestamp") == "FAIL" and "the certificate carried with the token" in "\n".join(rep.lines())
        rep = verify(bundle, tsa_roots=load_certificates(liang_built[2].read_bytes()))
        assert rep.status("timestamp") == "FAIL" and "a root you trust (--tsa-root)" in "\n".join(rep.lines())

    def test_the_genuine_bundle_is_proven_only_for_a_user_who_trusts_its_root(self, bundle, liang_built):
        """The session's bundle is itself stamped by a private authority: without --tsa-root its
        date is not proven; an unrelated pinned root changes nothing; the authority's own root,
        given by the user, anchors both versions."""
        from tests.bundles.tsa_server import make_authority
        from veribench.commit.tsa import TrustedRoots, load_certificates

        _not_proven(verify(bundle))
        _not_proven(verify(bundle, tsa_roots=[make_authority("another authority")[0]]))
        mine = TrustedRoots("--tsa-root mine.pem", tuple(load_certificates(liang_built[2].read_bytes())))
        rep = verify(bundle, tsa_roots=[mine])
        status, line = _timestamp(rep)
        assert status == "ok" and "2 RFC 3161 token(s)" in line and "--tsa-root mine.pem" in line
        assert [a["proven"] for a in rep.checks["timestamp"]["anchors"]] == [True, True]

    def test_the_pinned_public_list_is_certifis_and_anchors_like_a_user_root(self, bundle, liang_built,
                                                                              monkeypatch):
        """The public list is certifi's Mozilla bundle, named with certifi's version; a root in
        it anchors a token as a --tsa-root does (here the list is swapped for one holding the
        test authority's root: no public authority can be reached from a test)."""
        import certifi

        from veribench.commit import tsa

        pub = tsa.public_roots()
        assert pub.name == f"certifi {certifi.__version__} (Mozilla CA bundle)" and len(pub.certificates) > 100
        assert not any(c.subject.rfc4514_string().endswith("veribench test TSA root") for c in pub.certificates)
        pinned = tsa.TrustedRoots("certifi 0000.00.00 (test list)",
                                  tuple(tsa.load_certificates(liang_built[2].read_bytes())))
        monkeypatch.setattr(tsa, "public_roots", lambda: pinned)
        status, line = _timestamp(verify(bundle))
        assert status == "ok" and "verify up to a root you trust (certifi 0000.00.00 (test list))" in line, line

    def test_trusted_token_over_other_bytes_is_refused(self, bundle, liang_built):
        """Kept: a token of the trusted authority moved onto another record stamps other bytes."""
        from veribench.commit.tsa import load_certificates

        (bundle / "commitments/v2.tsr").write_bytes((bundle / "commitments/v1.tsr").read_bytes())
        rehash(bundle)
        rep = verify(bundle, tsa_roots=load_certificates(liang_built[2].read_bytes()))
        assert rep.status("timestamp") == "FAIL" and "token stamps other bytes" in "\n".join(rep.lines())

    @pytest.mark.parametrize("rel,why", [
        ("commitments/v7.tsr", "version 7, which the log does not define"),
        ("commitments/v7.roots.pem", "version 7, which the log does not define"),
    ])
    def test_token_or_certificate_of_a_version_the_log_lacks(self, bundle, rel, why):
        (bundle / rel).write_bytes((bundle / "commitments/v1.roots.pem").read_bytes())
        rehash(bundle)
        caught(bundle, "timestamp", rel, why)

    def test_certificate_without_its_token(self, bundle):
        (bundle / "commitments/v2.tsr").unlink()
        rehash(bundle)
        rep = caught(bundle, "timestamp", "commitments/v2.roots.pem", "an authority certificate without its token")
        assert "the log records a timestamp token that the bundle lacks" in "\n".join(rep.lines())

    def test_published_statements_keep_the_caveat(self, liang_built, cli_run, tmp_path):
        """README.md, tables.md and the report's run page of a time-stamped run keep the caveat."""
        from veribench.evaluate.honesty import LOG_ALONE

        ws, bundle, _ = liang_built
        for md in ("README.md", "tables.md"):
            text = (bundle / md).read_text(encoding="utf-8")
            assert "Timestamp: RFC 3161 token from 127.0.0.1:" in text and LOG_ALONE in text
            assert "No timestamp token" not in text
        code, out = cli_run("report", "-w", ws, bundle, "--out", tmp_path / "site")
        assert code == 0, out
        import html

        pages = [html.unescape(p.read_text(encoding="utf-8")) for p in (tmp_path / "site").glob("run-*.html")]
        assert pages and all("a date NOT proven" in p and LOG_ALONE in p for p in pages if "Timestamp: RFC" in p)
        assert any("Timestamp: RFC" in p for p in pages)
