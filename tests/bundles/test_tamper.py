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
    evaluate_publish_verify,
    events,
    read_leaves,
    read_scores,
    rederive,
    rehash,
    row_leaves,
    store_documents,
    verify,
    write_corpus,
    write_events,
    write_leaves,
    write_scores,
)
from tests.bundles.test_publish_verify import _fingerprint_ws
from veribench.commit import commit
from veribench.corpus.document import Document
from veribench.hashing import canonical_json
from veribench.hashing import text_sha256 as sha256_hex
from veribench.records import ScoreResult
from veribench.spec import Spec
from veribench.store import Workspace, writes
from veribench.store.events import DOC_FIELDS, doc_leaf_text


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

    forged = {}

    def edit(c):
        i = c["status"].index("ok")
        forged.update(row=i + 1, doc=c["doc_id"][i], was=c["ai_probability"][i])
        c["ai_probability"][i] = 0.123456
    edit_scores(bundle, edit, update_manifest=False)
    (bundle / "scores.parquet").write_bytes(original)  # the CSV is forged, the Parquet file is not
    rehash(bundle)
    # issue 25 walk: "differ (expected 80, got 80)" named only the equal row counts; the first
    # differing row, its document, the column and both values are named
    caught(bundle, "scores", f"scores: scores.parquet, row {forged['row']}, column ai_probability: scores.parquet "
           f"differs from scores.csv, whose value is expected, in the row of document {forged['doc']!r} "
           f"(expected 0.123456, got {forged['was']!r})")


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
    # issue 25 walk: a check shown as "not run" says why
    assert "    not run  results: skipped: the verification stopped before this check" in partial.lines(), \
        partial.lines()
    assert partial.to_dict()["checks"]["results"]["reason"].startswith("skipped: ")
    (bundle / "manifest.json").write_text("[]", encoding="utf-8")  # the reader or manifest fails: the rest is skipped
    broken = verify(bundle)
    skipped = [ln for ln in broken.lines() if ln.startswith("    not run")]
    assert skipped and all(f"skipped: an earlier check failed ({broken.failures[0].check})" in ln
                           for ln in skipped), broken.lines()


@pytest.mark.parametrize("rel", ["results.json", "amendments.json"])
def test_a_bundle_file_holding_json_null_fails(bundle, rel):
    """JSON null is never "absent": with the manifest re-hashed to match, the file still fails."""
    from tests.bundles.bundle_helpers import rehash

    (bundle / rel).write_text("null", encoding="utf-8")
    rehash(bundle)
    rep = verify(bundle)
    assert not rep.ok and "got null" in "\n".join(rep.lines()), "\n".join(rep.lines())


# -- issue 24: a bundle verifies only when every published byte follows from the log ----------------
#
# Each class below was a lie `verify` accepted: each variant is a careful forger's full rewrite
# (rows, leaves, results and tables re-derived with veribench's own code, the run event re-hashed,
# the manifest recomputed), so only the rule of its class can catch it.

def _gptzero_false_positives(bundle: Path) -> tuple[dict[str, list], list[int]]:
    """The score rows of GPTZero's false positives (human texts it flagged)."""

    labels = {d["doc_id"]: d["label"] for d in corpus_lines(bundle)}
    c = read_scores(bundle)
    fp = [i for i, (lab, f, d) in enumerate(zip(c["detector"], c["flag"], c["doc_id"]))
          if lab == "GPTZero" and f and labels[d] == "human"]
    assert fp
    return c, fp


def _fpr(results: dict, detector: str = "GPTZero") -> float:
    return next(r for r in results["table1"] if r["detector"] == detector)["fpr"]


def _small(tmp_path: Path, cli_run, *, withdraw: bool = False, correct: bool = False) -> tuple[Path, Path]:
    """A committed protocol over corpus ``s`` and two imports into it (``d00``-``d11``, then
    ``e00``-``e11``), scored by ``DetA``; optionally a withdrawn document of another corpus
    (``x``, scored by ``DetB``, not in the run) and a correction of ``e03``. Returns
    (workspace folder, bundle folder), the bundle published and verified."""

    proto = tmp_path / "p.toml"
    proto.write_text('[protocol]\nname = "small"\ntag = "S-1"\n[selection]\ncorpora = ["s"]\n[[detectors]]\n'
                     'name = "DetA"\nrule = { field = "ai_probability", op = ">", threshold = 0.5 }\n')
    ws = Workspace(tmp_path / "ws")
    commit(ws, proto)
    for prefix in ("d", "e"):
        docs = [Document(id=f"{prefix}{i:02d}", text=f"essay {prefix} {i} " + "w" * i,
                         label="human" if i % 2 else "ai") for i in range(12)]
        store_documents(ws, docs, "DetA", [ScoreResult(raw=(i % 5) / 5 + 0.1, ai_probability=(i % 5) / 5 + 0.1)
                                           for i in range(12)], corpus="s", source=f"{prefix}.jsonl")
    if withdraw:
        other = [Document(id=f"x{i}", text=f"another corpus {i}", label="human") for i in range(3)]
        store_documents(ws, other, "DetB", [ScoreResult(raw=0.2, ai_probability=0.2)] * 3, corpus="x",
                        source="x.jsonl")
        with ws.transaction() as con:
            writes.withdraw_document(con, "x1")
    if correct:
        with ws.transaction() as con:
            writes.update_documents(con, None, [{"doc_id": "e03", "field": "subgroup", "old": None, "new": "late"}])
    out = tmp_path / "bundle"
    evaluate_publish_verify(ws, proto, "S-1", out, cli_run)
    return tmp_path / "ws", out


class TestLeavesFromTheLog:
    """Issue 24, item 1: the (document, detector) leaves a run covers follow from the log's
    events and the committed selection; no leaf key the log does not define is accepted."""

    def test_false_positives_dropped_behind_invented_leaf_keys(self, bundle):
        """The exact case: GPTZero's false positives dropped from scores.csv, their leaves added
        to log/leaves.csv under invented k1/k2 keys, results re-derived, the run event re-hashed."""

        before = json.loads((bundle / "results.json").read_text())
        c, fp = _gptzero_false_positives(bundle)
        leaves = read_leaves(bundle)
        for n, i in enumerate(fp):
            link, score = row_leaves(c, i)
            leaves.append({"kind": "link", "seq": link[1], "k1": f"liang2023/invented/{n}", "k2": c["spec_hash"][i],
                           "leaf": link[0]})
            leaves.append({"kind": "score", "seq": score[1], "k1": c["spec_hash"][i], "k2": f"{n:064x}",
                           "leaf": score[0]})
        gone = set(fp)
        write_scores(bundle, {k: [v for j, v in enumerate(col) if j not in gone] for k, col in c.items()},
                     update_manifest=False)
        write_leaves(bundle, leaves, update_manifest=False)
        after = rederive(bundle)
        assert _fpr(before) > 0.1 and _fpr(after) == 0.0  # the lie the bundle would tell
        caught(bundle, "scores", "log/leaves.csv")

    def test_scores_blanked_behind_invented_text_keys(self, bundle):
        """Another way to the same lie: the rows stay, but the false positives' scores are
        blanked (no score: not counted) and their score leaves filed under invented text hashes."""

        c, fp = _gptzero_false_positives(bundle)
        leaves = read_leaves(bundle)
        for n, i in enumerate(fp):
            _, score = row_leaves(c, i)
            leaves.append({"kind": "score", "seq": score[1], "k1": c["spec_hash"][i], "k2": f"{n:064x}",
                           "leaf": score[0]})
            for k in ("status", "reason", "raw", "scale", "direction", "ai_probability", "verdict", "vendor_version",
                      "scanned_at", "hazards", "score_seq"):
                c[k][i] = None
        write_scores(bundle, c, update_manifest=False)
        write_leaves(bundle, leaves, update_manifest=False)
        assert _fpr(rederive(bundle)) == 0.0
        caught(bundle, "scores", "log/leaves.csv")

    def test_document_dropped_behind_the_key_of_a_later_import(self, tmp_path, cli_run):
        """The same rule on the corpus index: a flagged human document dropped, its fingerprint
        filed in log/leaves.csv as an earlier version of a document of a later import."""

        _, b = _small(tmp_path, cli_run)
        docs = corpus_lines(b)
        c = read_scores(b)
        i = next(i for i, (d, f) in enumerate(zip(c["doc_id"], c["flag"])) if d.startswith("d") and f
                 and next(x for x in docs if x["doc_id"] == d)["label"] == "human")
        gone = c["doc_id"][i]
        doc = next(x for x in docs if x["doc_id"] == gone)

        leaf = sha256_hex(doc_leaf_text(*(doc[k] for k in DOC_FIELDS)))
        leaves = read_leaves(b)
        leaves.append({"kind": "doc", "seq": doc["doc_seq"], "k1": "e05", "k2": None, "leaf": leaf})
        link, score = row_leaves(c, i)
        leaves.append({"kind": "link", "seq": link[1], "k1": "x/invented", "k2": c["spec_hash"][i], "leaf": link[0]})
        leaves.append({"kind": "score", "seq": score[1], "k1": c["spec_hash"][i], "k2": "f" * 64, "leaf": score[0]})
        write_leaves(b, leaves, update_manifest=False)
        write_corpus(b, [x for x in docs if x["doc_id"] != gone], update_manifest=False)
        write_scores(b, {k: [v for j, v in enumerate(col) if j != i] for k, col in c.items()}, update_manifest=False)
        rederive(b)
        rep = verify(b)
        assert not rep.ok and rep.status("corpus") == "FAIL", "\n".join(rep.lines())

    def test_leaf_text_that_does_not_hash_to_its_leaf(self, bundle):
        """A leaf published with its canonical text must hash to it: a row's leaf carried in
        leaves.csv under another document's text is refused."""

        c, fp = _gptzero_false_positives(bundle)
        i = fp[0]
        link, _ = row_leaves(c, i)
        other = next(j for j, d in enumerate(c["detector"]) if d == "GPTZero" and j not in fp)
        fake = row_leaves(c, other)[0]
        leaves = read_leaves(bundle)
        leaves.append({"kind": "link", "seq": link[1], "k1": c["doc_id"][other], "k2": c["spec_hash"][i],
                       "leaf": link[0], "fields": fake[2]})
        write_leaves(bundle, leaves, update_manifest=False)
        write_scores(bundle, {k: [v for j, v in enumerate(col) if j != i] for k, col in c.items()},
                     update_manifest=False)
        rederive(bundle)
        caught(bundle, "scores")

    def test_row_dropped_and_its_leaves_shown_with_their_true_text(self, bundle):
        """Another way: the false positives' rows dropped and their leaves carried in leaves.csv
        under their true keys and texts (as if the documents were outside the run): a selected
        document's logged link must have its one score row."""
        c, fp = _gptzero_false_positives(bundle)
        leaves = read_leaves(bundle)
        for i in fp:
            for kind, (leaf, seq, text) in zip(("link", "score"), row_leaves(c, i)):
                k1, k2 = (c["doc_id"][i], c["spec_hash"][i]) if kind == "link" else (c["spec_hash"][i],
                                                                                        c["submitted_sha256"][i])
                leaves.append({"kind": kind, "seq": seq, "k1": k1, "k2": k2, "leaf": leaf, "fields": text})
        gone = set(fp)
        write_scores(bundle, {k: [v for j, v in enumerate(col) if j not in gone] for k, col in c.items()},
                     update_manifest=False)
        write_leaves(bundle, leaves, update_manifest=False)
        assert _fpr(rederive(bundle)) == 0.0
        caught(bundle, "scores", "has no row")

    def test_leaf_filed_under_another_detectors_key(self, bundle):
        """Another way: the dropped scores filed as replaced values of a real text scored by
        another detector (a key that has a later fingerprint in the bundle, but of a detector
        other than the scan batch that logged the leaf)."""
        c, fp = _gptzero_false_positives(bundle)
        other = next(j for j, d in enumerate(c["detector"]) if d != "GPTZero" and c["status"][j] is not None)
        leaves = read_leaves(bundle)
        for i in fp:
            link, score = row_leaves(c, i)
            leaves.append({"kind": "link", "seq": link[1], "k1": c["doc_id"][other], "k2": c["spec_hash"][other],
                           "leaf": link[0]})
            leaves.append({"kind": "score", "seq": score[1], "k1": c["spec_hash"][other],
                           "k2": c["submitted_sha256"][other], "leaf": score[0]})
        gone = set(fp)
        write_scores(bundle, {k: [v for j, v in enumerate(col) if j not in gone] for k, col in c.items()},
                     update_manifest=False)
        write_leaves(bundle, leaves, update_manifest=False)
        rederive(bundle)
        caught(bundle, "scores", "another detector")

    @pytest.mark.parametrize("version,why", [(1, "carries no fields"), (2, "without their text")])
    def test_an_older_bundle_format_is_refused_with_its_reason(self, bundle, version, why):
        """A bundle of format 1 (no leaf texts) cannot show its leaf keys follow from the log; one
        of format 2 files replaced fingerprints by key without their text."""
        edit_json(bundle, "manifest.json", lambda m: m.__setitem__("format", f"veribench-detector-bundle/{version}"),
                  update_manifest=False)
        rehash(bundle)
        caught(bundle, "manifest", "older version of the bundle format", why)



class TestNothingShownUnchecked:
    """Issue 24, items 4: every field of manifest.json and results.json is re-derived from the log
    and the protocol, or refused."""

    def test_manifest_tag_and_run_id_relabelled(self, bundle):
        """The exact case: manifest tag and run_id relabelled, the root hash recomputed."""
        def edit(m):
            m["tag"] = "OFFICIAL-2026-Q4"
            m["run_id"] = "OFFICIAL-2026-Q4-20261001T000000Z-000000"
        edit_json(bundle, "manifest.json", edit, update_manifest=False)
        rehash(bundle)
        rep = caught(bundle, "manifest", "tag")
        assert rep.tag != "OFFICIAL-2026-Q4" and "OFFICIAL" not in rep.lines()[0].split(":")[0]

    def test_text_injected_into_results_files(self, bundle):
        """The exact case: text in results.json ``files`` (outside the logged results hash)."""
        edit_json(bundle, "results.json", lambda r: r["files"].__setitem__("note", "OFFICIAL results, audited"))
        caught(bundle, "results", "results.json")

    def test_tag_relabelled_in_the_results_and_the_run_event(self, bundle):
        """Another way to the same lie: the tag and run id changed in results.json too, the run
        event re-hashed to match: the tag is the committed protocol's, so it is refused."""

        old = json.loads((bundle / "manifest.json").read_text())["run_id"]
        rederive(bundle, relabel={"tag": "OFFICIAL-2026-Q4", "run_id": old.replace("LIANG-BUNDLE-2", "OFFICIAL-2026-Q4")})
        assert json.loads((bundle / "manifest.json").read_text())["tag"] == "OFFICIAL-2026-Q4"
        rep = caught(bundle, "results", "tag")
        assert "OFFICIAL" not in rep.lines()[0].split(":")[0]

    @pytest.mark.parametrize("where", ["run", "protocol"])
    def test_a_field_added_to_the_run_block(self, bundle, where):
        """A key the run never computed (carried through the re-derivation before): refused."""

        res = json.loads((bundle / "results.json").read_text())
        run = res["run"]
        if where == "run":
            rederive(bundle, relabel={"audited_by": "an independent lab"})
        else:
            rederive(bundle, relabel={"protocol": {**run["protocol"], "audited_by": "an independent lab"}})
        caught(bundle, "results", "audited_by")

    def test_protocol_file_name_and_version_relabelled(self, bundle):

        run = json.loads((bundle / "results.json").read_text())["run"]
        rederive(bundle, relabel={"protocol": {**run["protocol"], "path": "OFFICIAL-audited.toml"},
                                  "veribench_version": "0.1.0 (audited, OFFICIAL)"})
        rep = caught(bundle, "results", "path")
        assert "veribench_version" in "\n".join(f.line() for f in rep.failures)

    @pytest.mark.parametrize("key,value", [("note", "OFFICIAL"), ("veribench_version", "9.9 OFFICIAL")])
    def test_a_free_field_in_the_manifest(self, bundle, key, value):
        edit_json(bundle, "manifest.json", lambda m: m.__setitem__(key, value), update_manifest=False)
        rehash(bundle)
        caught(bundle, "manifest", key)

    def test_a_field_added_to_a_logged_event(self, bundle):
        """events.jsonl is the log's canonical lines: a key the hash does not cover is refused."""
        evs = events(bundle)
        evs[0]["note"] = "OFFICIAL"

        (bundle / "log/events.jsonl").write_text("".join(canonical_json(e) + "\n" for e in evs), encoding="utf-8")
        rehash(bundle)
        caught(bundle, "chain", "events.jsonl")

    def test_results_json_reformatted(self, bundle):
        """The same values in another byte form (spacing, key order): not the file publish writes."""
        res = json.loads((bundle / "results.json").read_text())
        (bundle / "results.json").write_text(json.dumps(res, indent=2, sort_keys=True), encoding="utf-8")
        rehash(bundle)
        caught(bundle, "results", "results.json")


class TestDocumentStatus:
    """Issue 24, item 5: a document's status (fingerprint-only, withdrawn) comes from the log."""

    def test_normal_document_marked_fingerprint_only(self, bundle):
        """The exact case: a normal document marked fingerprint-only, its text withheld."""
        docs = corpus_lines(bundle)
        d = next(d for d in docs if "text" in d)
        d["fingerprint_only"] = True
        del d["text"]
        write_corpus(bundle, docs)
        caught(bundle, "corpus", d["doc_id"], "fingerprint-only")

    def test_fingerprint_only_document_shown_as_normal(self, tmp_path, cli_run):
        """The other direction: a document whose logged provenance says fingerprint-only,
        published as a normal one with its text (the publisher holds it)."""

        _fingerprint_ws(tmp_path / "ws", tmp_path / "p.toml")
        code, out = cli_run("publish", "--workspace", tmp_path / "ws", "--run", "FP-1", "--out", tmp_path / "b")
        assert code == 0, out
        with Workspace(tmp_path / "ws") as w:
            text = w.query("SELECT text FROM documents WHERE doc_id = 'v01'")[0][0]
        docs = corpus_lines(tmp_path / "b")
        d = next(d for d in docs if d["doc_id"] == "v01")
        d["fingerprint_only"], d["text"] = False, text
        write_corpus(tmp_path / "b", docs)
        caught(tmp_path / "b", "corpus", "v01", "fingerprint-only")

    def test_normal_document_presented_as_withdrawn(self, tmp_path, cli_run):
        """A withdrawal of another corpus's document leaves room in the log's count of detached
        fingerprints; a flagged human document dropped and its fingerprints presented as
        detached is refused: every detached fingerprint is placed in its logged event."""

        _, b = _small(tmp_path, cli_run, withdraw=True)
        docs = corpus_lines(b)
        c = read_scores(b)
        i = next(i for i, (d, f) in enumerate(zip(c["doc_id"], c["flag"])) if f
                 and next(x for x in docs if x["doc_id"] == d)["label"] == "human")
        gone = c["doc_id"][i]
        doc = next(x for x in docs if x["doc_id"] == gone)
        leaves = [x for x in read_leaves(b) if x["k1"] is not None]  # the real detached ones are left out
        leaves.append({"kind": "doc", "seq": doc["doc_seq"], "k1": None, "k2": None,
                       "leaf": sha256_hex(doc_leaf_text(*(doc[k] for k in DOC_FIELDS)))})
        link, score = row_leaves(c, i)
        leaves.append({"kind": "link", "seq": link[1], "k1": None, "k2": None, "leaf": link[0]})
        leaves.append({"kind": "score", "seq": score[1], "k1": None, "k2": None, "leaf": score[0]})
        write_leaves(b, leaves, update_manifest=False)
        write_corpus(b, [x for x in docs if x["doc_id"] != gone], update_manifest=False)
        write_scores(b, {k: [v for j, v in enumerate(col) if j != i] for k, col in c.items()}, update_manifest=False)
        rederive(b)
        rep = verify(b)
        assert not rep.ok, "\n".join(rep.lines())


class TestUnloggedProtocolVersion:
    """Issue 24, item 6: every protocol file matches a logged commitment or amendment, by
    SHA-256 and version number."""

    def test_extra_protocol_version_listed(self, bundle):
        """The exact case: an extra protocol/v3.toml, listed in the manifest."""
        (bundle / "protocol/v3.toml").write_bytes((bundle / "protocol/v2.toml").read_bytes() + b"\n# v3\n")
        rehash(bundle)
        caught(bundle, "commitment", "protocol/v3.toml")

    def test_later_real_amendment_added_to_a_run_of_version_1(self, liang_built, cli_run, tmp_path):
        """The run of version 1, with version 2 (committed after it, byte for byte as logged)
        added: that version is not in the run's log, so it is refused."""
        ws, full, _ = liang_built
        b = tmp_path / "v1"
        code, out = cli_run("publish", "--workspace", ws, "--run", "LIANG-BUNDLE-1", "--out", b)
        assert code == 0, out
        assert verify(b).ok
        (b / "protocol/v2.toml").write_bytes((full / "protocol/v2.toml").read_bytes())
        rehash(b)
        caught(b, "commitment", "protocol/v2.toml")

    def test_committed_bytes_under_another_file_kind(self, bundle):
        """Version 1's bytes as protocol/v1.yaml: the hash matches, the logged file does not."""
        (bundle / "protocol/v1.toml").rename(bundle / "protocol/v1.yaml")
        rehash(bundle)
        caught(bundle, "commitment", "protocol/v1.yaml")

    def test_commitment_record_of_an_unlogged_version(self, bundle):
        (bundle / "commitments/v3.json").write_bytes((bundle / "commitments/v2.json").read_bytes())
        rehash(bundle)
        caught(bundle, "commitment", "commitments/v3.json")

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


# -- issue 24, leaves from the log: replaced and withdrawn fingerprints are attributed, not counted --

_SMALL = ('[protocol]\nname = "small"\ntag = "S-1"\n[selection]\ncorpora = ["s"]\n[[detectors]]\n'
          'name = "DetA"\nrule = { field = "ai_probability", op = ">", threshold = 0.5 }\n')


def _essays(prefix: str) -> list[Document]:
    return [Document(id=f"{prefix}{i:02d}", text=f"essay {prefix} {i} " + "w" * i, label="human" if i % 2 else "ai")
            for i in range(12)]


def _history(tmp_path: Path, cli_run, *, relink: bool = False, withdraw: str | None = None) -> tuple[Path, Path]:
    """Corpus ``s`` of two imports (``d00``-``d11``, ``e00``-``e11``) scored by ``DetA``, then
    genuine replacements: e04's score retried (a new value, later batch) and, with ``relink``,
    e07 re-linked to e08's text. With ``withdraw``, the run is published first to ``before/`` (the forger's copy
    of the rows), the document is withdrawn, and the run evaluated again. Returns (the bundle
    published last, the ``before/`` bundle or the same bundle)."""

    proto = tmp_path / "p.toml"
    proto.write_text(_SMALL)
    ws = Workspace(tmp_path / "ws")
    commit(ws, proto)
    results = [ScoreResult(raw=(i % 5) / 5 + 0.1, ai_probability=(i % 5) / 5 + 0.1) for i in range(12)]
    for prefix in ("d", "e"):
        store_documents(ws, _essays(prefix), "DetA", results, corpus="s", source=f"{prefix}.jsonl")
    e = _essays("e")
    spec = Spec("detector", "DetA", "v1")
    writes.put_scores(ws, spec, [(e[4].text_sha256, ScoreResult(raw=0.35, ai_probability=0.35))], replace=True)
    if relink:
        writes.link_submissions(ws, spec, [("e07", e[8].text_sha256)])
    out = tmp_path / "bundle"
    if withdraw is None:
        evaluate_publish_verify(ws, proto, "S-1", out, cli_run)
        return out, out
    before = tmp_path / "before"
    evaluate_publish_verify(ws, proto, "S-1", before, cli_run)
    ws = Workspace(tmp_path / "ws")
    with ws.transaction() as con:
        writes.withdraw_document(con, withdraw)
    evaluate_publish_verify(ws, proto, "S-1", out, cli_run)
    return out, before


def _file_as_replaced(b: Path, i: int, c: dict[str, list], *, link_to: str | None, score_to: str | None) -> None:
    """File row ``i``'s link and score fingerprints in leaves.csv as replaced values (keys, no
    text) of the real keys of e07's link and e04's score, which a later fingerprint replaced."""
    e = _essays("e")
    link, score = row_leaves(c, i)
    leaves = read_leaves(b)
    if link_to is not None:
        leaves.append({"kind": "link", "seq": link[1], "k1": link_to, "k2": c["spec_hash"][i], "leaf": link[0]})
    if score_to is not None:
        leaves.append({"kind": "score", "seq": score[1], "k1": c["spec_hash"][i],
                       "k2": next(x.text_sha256 for x in e if x.id == score_to), "leaf": score[0]})
    write_leaves(b, leaves, update_manifest=False)


def _fp_row(b: Path, doc_id: str) -> tuple[dict[str, list], int]:
    c = read_scores(b)
    i = c["doc_id"].index(doc_id)
    assert c["flag"][i] and next(x for x in corpus_lines(b) if x["doc_id"] == doc_id)["label"] == "human"
    return c, i


class TestReplacedLeavesCarryTheirText:
    """Issue 24, leaves from the log (hole 1): a fingerprint shown as replaced must prove its key
    (its canonical text, which hashes to it and holds the key) and a later logged fingerprint
    of that key; a dropped row cannot be filed as an older value of a real, re-scored key."""

    def test_false_positive_row_filed_as_older_values_of_real_replaced_keys(self, tmp_path, cli_run):
        """d09's row (a false positive) dropped; its link filed as an older link of e07 (really
        re-linked later) and its score as an older score of e04's text (really retried later)."""
        b, _ = _history(tmp_path, cli_run, relink=True)
        before = json.loads((b / "results.json").read_text())
        c, i = _fp_row(b, "d09")
        _file_as_replaced(b, i, c, link_to="e07", score_to="e04")
        write_scores(b, {k: [v for j, v in enumerate(col) if j != i] for k, col in c.items()}, update_manifest=False)
        after = rederive(b)
        assert after["table1"][0]["fpr"] < before["table1"][0]["fpr"]  # the lie
        caught(b, "scores", "log/leaves.csv")

    def test_false_positive_score_blanked_and_filed_as_a_retried_keys_older_value(self, tmp_path, cli_run):
        """The row stays but its score is blanked (not counted) and the score fingerprint filed as
        an older value of e04's retried score: a current score relabelled replaced."""
        b, _ = _history(tmp_path, cli_run)
        c, i = _fp_row(b, "d09")
        _file_as_replaced(b, i, c, link_to=None, score_to="e04")
        for k in ("status", "reason", "raw", "scale", "direction", "ai_probability", "verdict", "vendor_version",
                  "scanned_at", "hazards", "score_seq"):
            c[k][i] = None
        write_scores(b, c, update_manifest=False)
        rederive(b)
        caught(b, "scores", "log/leaves.csv")

    def test_genuine_replaced_values_carry_their_text(self, tmp_path, cli_run):
        """The bundle shows each replaced value with the text it hashes, keyed as the text says
        (and a re-linked document's older link is no 'dropped row': it verifies)."""
        b, _ = _history(tmp_path, cli_run, relink=True)
        keyed = [x for x in read_leaves(b) if x["k1"] is not None]
        e04 = _essays("e")[4].text_sha256
        assert {(x["kind"], x["k1"]) for x in keyed if x["kind"] == "link"} == {("link", "e07")}
        assert e04 in [x["k2"] for x in keyed if x["kind"] == "score"]
        assert all(x["fields"] is not None for x in keyed)
        score = next(x for x in keyed if x["kind"] == "score")
        assert sha256_hex(score["fields"]) == score["leaf"] and json.loads(score["fields"])[1] == e04
        link = next(x for x in keyed if x["kind"] == "link" and x["k1"] == "e07")
        assert sha256_hex(link["fields"]) == link["leaf"] and json.loads(link["fields"])[0] == "e07"


def _swap_withdrawal(b: Path, before: Path, withdrawn: str, instead: str) -> None:
    """Un-withdraw ``withdrawn`` (its rows put back from the forger's ``before/`` copy) and
    present ``instead`` (a false positive) as the withdrawn document: same counts per kind."""
    docs = corpus_lines(b)
    gone = next(x for x in corpus_lines(before) if x["doc_id"] == withdrawn)
    old = read_scores(before)
    j = old["doc_id"].index(withdrawn)
    c, i = _fp_row(b, instead)
    out_doc = next(x for x in docs if x["doc_id"] == instead)
    back = {(x["kind"], x["leaf"]) for x in [
        {"kind": "doc", "leaf": sha256_hex(doc_leaf_text(*(gone[k] for k in DOC_FIELDS)))},
        *({"kind": k, "leaf": v[0]} for k, v in zip(("link", "score"), row_leaves(old, j)))]}
    leaves = [x for x in read_leaves(b) if not (x["k1"] is None and (x["kind"], x["leaf"]) in back)]
    assert len(leaves) == len(read_leaves(b)) - 3
    link, score = row_leaves(c, i)
    leaves += [{"kind": "doc", "seq": out_doc["doc_seq"], "k1": None, "k2": None,
                "leaf": sha256_hex(doc_leaf_text(*(out_doc[k] for k in DOC_FIELDS)))},
               {"kind": "link", "seq": link[1], "k1": None, "k2": None, "leaf": link[0]},
               {"kind": "score", "seq": score[1], "k1": None, "k2": None, "leaf": score[0]}]
    write_leaves(b, leaves, update_manifest=False)
    write_corpus(b, sorted([x for x in docs if x["doc_id"] != instead] + [gone], key=lambda x: x["doc_id"]),
                 update_manifest=False)
    rows = {k: [v for n, v in enumerate(col) if n != i] for k, col in c.items()}
    for k in rows:
        rows[k].append(old[k][j])
    order = sorted(range(len(rows["doc_id"])), key=lambda n: (rows["doc_id"][n], rows["detector"][n]))
    write_scores(b, {k: [col[n] for n in order] for k, col in rows.items()}, update_manifest=False)
    rederive(b)


class TestWithdrawnLeavesAttributed:
    """Issue 24, leaves from the log (hole 2): each detached fingerprint is the one a logged
    withdrawal names, not just one of as many as the withdrawals counted."""

    def test_withdrawal_swapped_to_a_false_positive_of_the_same_import(self, tmp_path, cli_run):
        """d05 was withdrawn; the forger puts d05 back and presents d09 (a false positive of the
        same import and detector) as the withdrawn one: every count per kind is unchanged."""
        b, before = _history(tmp_path, cli_run, withdraw="d05")
        _swap_withdrawal(b, before, "d05", "d09")
        caught(b, "scores", "withdrawal")

    def test_withdrawal_moved_to_a_document_of_another_import(self, tmp_path, cli_run):
        """The same lie across events: the withdrawal of d05 moved to e09 (another import's
        false positive, scored by the same detector)."""
        b, before = _history(tmp_path, cli_run, withdraw="d05")
        _swap_withdrawal(b, before, "d05", "e09")
        caught(b, "scores", "withdrawal")

    def test_the_withdrawal_names_what_it_detached(self, tmp_path, cli_run):
        """The withdrawal event lists each fingerprint it detached (kind, event, leaf)."""
        b, _ = _history(tmp_path, cli_run, withdraw="d05")
        w = next(e for e in events(b) if e["type"] == "withdrawal")["payload"]
        detached = sorted([x["kind"], int(x["seq"]), x["leaf"]] for x in read_leaves(b) if x["k1"] is None)
        assert w["detached"] == detached and len(detached) == 3
