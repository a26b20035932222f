"""Acceptance (issue 23): every importer, streamed or not, goes through the one logged write
path, so that a public corpus can be published as a bundle anyone can verify.

For every importer of ``veribench import`` (the public corpora's streamed importers and the
generic ones) one test runs the whole chain through the CLI, the way a researcher would:

1. import small files in the real format (``tests/data/public/``: the released layouts,
   written by ``make_fixtures.py`` there; ``tests/data/`` and the demo data for the rest);
2. ``log verify`` (every stored row is covered by the log);
3. ``protocol commit`` with an RFC 3161 token from a local authority on 127.0.0.1;
4. ``evaluate``: the protocol names ZipPy, which scores every selected document offline
   (or, where the corpus carries recorded scores, the recorded detector);
5. ``log verify`` again (scores and the run are logged too);
6. ``publish``;
7. ``verify``: exit 0 and every check of :data:`veribench.bundles.verify_report.CHECKS`
   ran and passed (the timestamp check included: the commitment is stamped; ``timing``
   passes with its note where the scores were recorded before the commitment).

The streamed importers' all-or-nothing contract is proved beside it: an import that fails
inside a batch, and one killed outright (its documents left behind, its ``imports`` row
still ``in_progress``); ``log verify`` names the unfinished import, the next streamed import
removes it, and then ``log verify`` and ``publish`` pass. A re-import of the same files
stores nothing twice and logs nothing that would break verification.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer.main
from typer.testing import CliRunner

from tests.api.vendor_fakes import VENDOR_KEYS, FakeVendors
from tests.bundles.tsa_server import TSAServer
from veribench.bundles.verify_report import CHECKS
from veribench.cli.main import app
from veribench.corpus.edits import word_spans
from veribench.corpus.importers import _stream
from veribench.corpus.importers.raid import import_raid
from veribench.errors import InputError
from veribench.store import Workspace

pytest.importorskip("zippy.zippy")

TESTS = Path(__file__).resolve().parents[1]
PUBLIC = TESTS / "data" / "public"
FDG = TESTS / "data" / "fastdetectgpt"
JULY = TESTS / "data" / "humanizerbench" / "July 2026"
LIANG = TESTS.parent / "src" / "veribench" / "data" / "demo" / "liang2023"
#: Operational settings of the fake vendors: no rate limit, fast retries (not part of any spec).
FAST = ["--set", "rate_per_minute=0", "--set", "backoff=0.01", "--set", "max_attempts=1"]

ZIPPY = """[[detectors]]
name = "zippy"
settings = { engine = "brotli" }
rule = { field = "raw", op = ">=", threshold = 0.0, source = "thinkst-zippy default" }
"""


def run(*args: object) -> str:
    """Run one CLI command in-process; assert exit 0 and return its output."""
    res = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    assert res.exit_code == 0, f"veribench {' '.join(str(a) for a in args)}\n{res.output}"
    return res.output


def run_code(*args: object) -> tuple[int, str]:
    res = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    return res.exit_code, res.output


@pytest.fixture(scope="module")
def tsa():
    """A real RFC 3161 authority on 127.0.0.1 (its root certificate: ``tsa.authority.ca_pem``)."""
    with TSAServer() as t:
        yield t


@pytest.fixture()
def fake(monkeypatch):
    """The fake vendor servers on 127.0.0.1 (generation and humanizing), with their test keys."""
    for v, k in VENDOR_KEYS.items():
        monkeypatch.setenv(f"VERIBENCH_{v.upper()}_API_KEY", k)
    srv = FakeVendors()
    yield srv
    srv.close()


# -- the import step of each importer ------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """How one importer's chain imports its data: ``imports(tmp, ws, fake)`` runs the import
    command(s); ``detectors`` is the protocol's detector block (ZipPy unless the corpus carries
    recorded scores); ``recorded``: those scores were recorded before the protocol was committed
    (the timing check then passes with a note: the run declares them, it is not pre-registered);
    ``vendors``: the step needs the fake vendor servers."""

    imports: Callable[[Path, Path, FakeVendors | None], None]
    detectors: str = ZIPPY
    recorded: bool = False
    vendors: bool = False


def _fdg_records(n: int = 12) -> list[dict]:
    """``n`` human and ``n`` AI texts of the real fast-detect-gpt xsum_gpt2-xl pairs, in the corpus schema."""
    raw = json.loads((FDG / "xsum_gpt2-xl.raw_data.json").read_text(encoding="utf-8"))
    out = []
    for i in range(n):
        out.append({"id": f"xsum-{i}-human", "text": raw["original"][i], "label": "human", "arm": "A",
                    "kind": "news", "group_key": f"pair-{i}", "tags": {"writer": "journalist"}})
        out.append({"id": f"xsum-{i}-ai", "text": raw["sampled"][i], "label": "ai", "arm": "C", "kind": "news",
                    "group_key": f"pair-{i}", "tags": {"writer": "gpt2-xl"},
                    "generation": {"model": "gpt2-xl", "provider": "huggingface"}})
    return out


def _jsonl(tmp: Path, ws: Path, _f) -> None:
    f = tmp / "xsum.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in _fdg_records()), encoding="utf-8")
    run("import", "jsonl", f, "--workspace", ws, "-q")


def _csv(tmp: Path, ws: Path, _f) -> None:
    f = tmp / "xsum.csv"
    cols = ["id", "text", "label", "arm", "kind", "group_key", "tags.writer", "generation.model"]
    with open(f, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for r in _fdg_records():
            w.writerow([r["id"], r["text"], r["label"], r["arm"], r["kind"], r["group_key"], r["tags"]["writer"],
                        (r.get("generation") or {}).get("model", "")])
    run("import", "csv", f, "--workspace", ws, "-q")


def _parquet(tmp: Path, ws: Path, _f) -> None:
    f = tmp / "xsum.parquet"
    recs = _fdg_records()
    pq.write_table(pa.table({k: [r[k] for r in recs] for k in ("id", "text", "label", "arm", "kind", "group_key")}),
                   f)
    run("import", "parquet", f, "--workspace", ws, "-q")


def _scores(tmp: Path, ws: Path, _f) -> None:
    """RAID's documents, then a detector's predictions recorded elsewhere (RAID's ``[{id, score}]``)."""
    run("import", "raid", PUBLIC / "raid" / "train.csv", "--workspace", ws, "-q", "--no-progress")
    run("import", "scores", PUBLIC / "raid" / "predictions.json", "--detector", "raid-predictions",
        "--scale", "score_higher_ai", "--workspace", ws, "-q")


def _edited(tmp: Path, ws: Path, _f) -> None:
    """Drafts (fast-detect-gpt's AI texts), then one human edit of each: a word replaced."""
    run("import", "fastdetectgpt", FDG, "--sets", "xsum_gpt2-xl", "--pairs", "10", "--workspace", ws, "-q")
    with Workspace(ws, read_only=True) as w:
        drafts = w.query("SELECT doc_id, text FROM documents WHERE label = 'ai' AND arm = 'C' "
                         "ORDER BY doc_id")
    rows = []
    for did, text in drafts:
        s, e = word_spans(text)[1]
        rows.append({"draft_id": did, "text": text[:s] + "zebra" + text[e:], "editor": "ed1"})
    f = tmp / "edited.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    run("import", "edited", f, "--workspace", ws, "-q")


def _generated(tmp: Path, ws: Path, fake: FakeVendors | None) -> None:
    """Texts generated from the July 2026 cycle's prompts by the fake vendor, imported with their spec."""
    assert fake is not None
    pf = tmp / "prompts.json"
    pf.write_text(json.dumps(json.loads((JULY / "prompts.json").read_text(encoding="utf-8"))[:4]), encoding="utf-8")
    out = tmp / "gen.jsonl"
    run("generate", "--prompts", pf, "--set", f"base_url={fake.url}/v1", "--set", "model=m-7b", "--set",
        "provider=openai", *FAST, "--samples", "2", "--seed", "5", "-o", out, "--workspace", ws)
    run("import", "generated", out, "--corpus", "gen", "--workspace", ws, "-q")


def _humanized(tmp: Path, ws: Path, fake: FakeVendors | None) -> None:
    """Source texts (the July 2026 samples), humanized by the fake vendor, imported as derived documents."""
    assert fake is not None
    samples = json.loads((JULY / "samples.json").read_text(encoding="utf-8"))[:5]
    src = tmp / "src.jsonl"
    src.write_text("".join(json.dumps({"id": f"src-{i}", "text": s["input_text"], "label": "ai", "arm": "C",
                                       "group_key": f"topic-{i}"}) + "\n" for i, s in enumerate(samples)),
                   encoding="utf-8")
    run("import", "jsonl", src, "--workspace", ws, "-q")
    inp = tmp / "in.jsonl"
    inp.write_text("".join(json.dumps({"id": f"src-{i}", "text": s["input_text"]}) + "\n"
                           for i, s in enumerate(samples)), encoding="utf-8")
    out = tmp / "stealth.jsonl"
    run("humanize", "--humanizer", "stealthgpt", "--set", f"base_url={fake.url}", *FAST, "-i", inp, "-o", out,
        "--workspace", ws, "--no-progress")
    run("import", "humanized", out, "--workspace", ws, "-q")


def _armb(tmp: Path, ws: Path, _f) -> None:
    """The writing app's submitted texts (the version-1 writing store kept in
    tests/data/rubric_stores: one submission, one withdrawal), imported as arm-B documents."""
    import gzip

    ws.mkdir(parents=True, exist_ok=True)
    (ws / "write.sqlite").write_bytes(gzip.decompress((TESTS / "data" / "rubric_stores" / "writing-v1.sqlite.gz")
                                                      .read_bytes()))
    run("import", "arm-b", "--workspace", ws, "-q")


STEPS: dict[str, Step] = {
    # the public corpora (streamed through corpus/importers/_stream.py)
    "raid": Step(lambda t, w, f: run("import", "raid", PUBLIC / "raid", "--workspace", w, "-q", "--no-progress")),
    "m4": Step(lambda t, w, f: run("import", "m4", PUBLIC / "m4" / "data", "--workspace", w, "-q", "--no-progress")),
    "semeval": Step(lambda t, w, f: [run("import", "semeval", *p, "--workspace", w, "-q", "--no-progress") for p in (
        [PUBLIC / "semeval" / "subtaskA" / "subtaskA_train_monolingual.jsonl"],
        [PUBLIC / "semeval" / "subtaskB" / "subtaskB_dev.jsonl"],
        [PUBLIC / "semeval" / "subtaskC" / "subtaskC_train.jsonl"],
        [PUBLIC / "semeval" / "subtaskC" / "subtaskC_test.jsonl", "--gold",
         PUBLIC / "semeval" / "subtaskC" / "subtaskC_test_gold.jsonl"])]),
    "mage": Step(lambda t, w, f: run("import", "mage", PUBLIC / "mage", "--workspace", w, "-q", "--no-progress")),
    "hc3": Step(lambda t, w, f: run("import", "hc3", PUBLIC / "hc3" / "all.jsonl", "--workspace", w, "-q",
                                    "--no-progress")),
    "detectrl": Step(lambda t, w, f: run("import", "detectrl", PUBLIC / "detectrl" / "Benchmark" / "Benchmark_Data",
                                         "--workspace", w, "-q", "--no-progress")),
    "beemo": Step(lambda t, w, f: run("import", "beemo", PUBLIC / "beemo", "--workspace", w, "-q", "--no-progress")),
    # the generic importers (one transaction each)
    "jsonl": Step(_jsonl),
    "csv": Step(_csv),
    "parquet": Step(_parquet),
    "liang2023": Step(lambda t, w, f: run("import", "liang2023", LIANG, "--workspace", w, "-q"),
                      detectors='[[detectors]]\nname = "GPTZero"\nrule = { field = "ai_probability", op = ">", '
                                'threshold = 0.5, source = "Liang et al. 2023" }\n', recorded=True),
    "fastdetectgpt": Step(lambda t, w, f: run("import", "fastdetectgpt", FDG, "--sets", "xsum_gpt2-xl,pubmed_davinci",
                                              "--pairs", "15", "--workspace", w, "-q")),
    "scores": Step(_scores, detectors='[[detectors]]\nname = "raid-predictions"\nrule = { field = "raw", op = ">", '
                                      'threshold = 1.0, source = "chain test" }\n', recorded=True),
    "edited": Step(_edited),
    "generated": Step(_generated, vendors=True),
    "humanized": Step(_humanized, vendors=True),
    "cycle": Step(lambda t, w, f: run("import", "cycle", JULY, "--workspace", w, "-q")),
    "arm-b": Step(_armb),
}


def test_every_import_command_has_a_chain():
    """The table above covers every ``veribench import`` command (a new importer needs its chain)."""
    root = typer.main.get_command(app)
    ctx = typer.Context(root, info_name="veribench")
    group = root.get_command(ctx, "import")
    assert set(group.list_commands(typer.Context(group, info_name="import", parent=ctx))) == set(STEPS)


def _corpora(ws: Path) -> list[str]:
    with Workspace(ws, read_only=True) as w:
        return [r[0] for r in w.query("SELECT DISTINCT corpus FROM documents ORDER BY 1")]


def _selected(ws: Path, corpora: list[str]) -> int:
    with Workspace(ws, read_only=True) as w:
        return int(w.query("SELECT count(*) FROM documents WHERE corpus IN (SELECT unnest(?::VARCHAR[]))",
                           [corpora])[0][0])


def commit_evaluate_publish_verify(tmp: Path, ws: Path, tsa: TSAServer, detectors: str, tag: str,
                                   recorded: bool = False) -> dict:
    """Steps 2-7 of the chain; returns the verifier's JSON report of the bundle."""
    run("log", "verify", "--workspace", ws)
    corpora = _corpora(ws)
    proto = tmp / f"{tag.lower()}.toml"
    proto.write_text(f'[protocol]\nname = "{tag.lower()}"\ntag = "{tag}"\n\n[selection]\ncorpora = {json.dumps(corpora)}'
                     f"\n\n{detectors}", encoding="utf-8")
    ca = tmp / "tsa-root.pem"
    ca.write_bytes(tsa.authority.ca_pem)
    run("protocol", "commit", proto, "--workspace", ws, "--tsa", tsa.url, "--tsa-cert", ca)
    results = tmp / f"{tag}.results.json"
    run("evaluate", "--workspace", ws, "--protocol", proto, "--json", results, "--quiet")
    run("log", "verify", "--workspace", ws)
    bundle = tmp / f"bundle-{tag}"
    run("publish", "--workspace", ws, "--run", tag, "--out", bundle)
    verdict = tmp / f"{tag}.verdict.json"
    # the verifier trusts the test authority's root, given from outside the bundle (a root the
    # bundle carries proves no date: tests/bundles/test_tamper.py::TestTimeAnchorsTrustedRootsOnly)
    out = run("verify", bundle, "--json", verdict, "--tsa-root", ca)
    rep = json.loads(verdict.read_text(encoding="utf-8"))
    assert rep["ok"], out
    (b,) = rep["detector_runs"]
    assert b["ok"] and not b["failures"], out
    # every check ran and passed: the timestamp too (stamped, and anchored at the root the verifier
    # trusts), none merely "not run"
    assert list(b["checks"]) == list(CHECKS)
    res = json.loads(results.read_text(encoding="utf-8"))
    want = dict.fromkeys(CHECKS, "ok")
    if recorded:  # scores recorded before the commitment: passed, and declared as not pre-registered
        want["timing"] = "note"
        assert res["run"]["protocol"]["scores_before_commit"] == res["run"]["protocol"]["scores_total"] > 0
    assert {c: s["status"] for c, s in b["checks"].items()} == want, out
    n = _selected(ws, corpora)
    assert b["counts"]["documents"] == res["run"]["n_documents"] == n > 0
    for d in res["detectors"]:  # every selected document was scored
        assert d["n_scored"] == n, d
    return b


@pytest.mark.parametrize("kind", sorted(STEPS))
def test_import_log_verify_evaluate_publish_verify(kind, tmp_path, tsa, request):
    step = STEPS[kind]
    fake = request.getfixturevalue("fake") if step.vendors else None
    ws = tmp_path / "ws"
    step.imports(tmp_path, ws, fake)
    commit_evaluate_publish_verify(tmp_path, ws, tsa, step.detectors, f"CHAIN-{kind.upper()}", step.recorded)


# -- the streamed importers' all-or-nothing contract ---------------------------------------------

def _imports(ws: Path) -> list[tuple[str, str]]:
    with Workspace(ws, read_only=True) as w:
        return [(r[0], r[1]) for r in w.query("SELECT import_id, json_extract_string(report, '$.status') FROM imports "
                                              "ORDER BY import_id")]


def _doc_count(ws: Path) -> int:
    with Workspace(ws, read_only=True) as w:
        return w.document_count()


def _one_file(tmp: Path) -> list[Path]:
    """Six real pairs as a JSONL file: documents of another import, which must stay."""
    f = tmp / "xsum.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in _fdg_records(6)), encoding="utf-8")
    return [f]


def test_a_failure_inside_a_batch_stores_nothing(tmp_path, monkeypatch):
    """An exception raised while a later batch is written (earlier batches already committed)
    removes every document of the import: the workspace is as it was and its log verifies."""
    ws = tmp_path / "ws"
    run("import", "jsonl", *_one_file(tmp_path), "--workspace", ws, "-q")
    before = _doc_count(ws)
    calls = {"n": 0}
    real = _stream.writes.add_documents

    def failing(con, documents, segments=()):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("disk full (simulated)")
        return real(con, documents, segments)

    monkeypatch.setattr(_stream.writes, "add_documents", failing)
    with Workspace(ws) as w, pytest.raises(RuntimeError, match="disk full"):
        import_raid(w, PUBLIC / "raid" / "train.csv", batch_size=40, progress=False)
    assert calls["n"] == 3  # two batches were committed before the failure
    assert _doc_count(ws) == before
    assert [s for _, s in _imports(ws)] == ["done"]
    run("log", "verify", "--workspace", ws)


def test_a_failure_whose_undo_fails_too_is_named_then_removed(tmp_path, monkeypatch, tsa):
    """A failure inside a batch whose clean-up fails as well (a broken connection): the first
    error is the one raised; the import's committed batches stay behind, ``log verify`` names
    the unfinished import, and the next streamed import removes them, after which ``log
    verify``, ``publish`` and ``verify`` pass."""
    ws = tmp_path / "ws"
    run("import", "jsonl", *_one_file(tmp_path), "--workspace", ws, "-q")
    before = _doc_count(ws)
    calls = {"n": 0}
    real = _stream.writes.add_documents

    def failing(con, documents, segments=()):
        calls["n"] += 1
        if calls["n"] == 2:
            raise InputError("a bad record (simulated)", file="train.csv", record="row 41", field="generation")
        return real(con, documents, segments)

    def broken(con, import_id):
        raise OSError("connection lost (simulated)")

    monkeypatch.setattr(_stream.writes, "add_documents", failing)
    monkeypatch.setattr(_stream.writes, "discard_import", broken)
    with Workspace(ws) as w, pytest.raises(InputError, match="a bad record") as e:
        import_raid(w, PUBLIC / "raid" / "train.csv", batch_size=40, progress=False)
    (left,) = [i for i, st in _imports(ws) if st == "in_progress"]
    assert any(left in n and "could not be undone" in n for n in e.value.__notes__)
    assert _doc_count(ws) == before + 40
    monkeypatch.undo()
    code, out = run_code("log", "verify", "--workspace", ws)
    assert code == 1 and f"import {left} (raid) has not finished: its 40 documents are not logged" in out, out
    out = run("import", "raid", PUBLIC / "raid" / "extra.csv", "--workspace", ws, "--no-progress")
    assert f"removed an interrupted import {left} (40 documents)" in out, out
    commit_evaluate_publish_verify(tmp_path, ws, tsa, ZIPPY, "CHAIN-UNDONE")


#: A streamed import of RAID's train.csv in batches of 50, killed (``os._exit``: no cleanup of
#: any kind runs) when its second batch is written; prints the import id first.
KILLED = """
import os, sys
from veribench.corpus.importers import _stream
from veribench.corpus.importers.raid import import_raid
from veribench.errors import InputError
from veribench.store import Workspace

real, calls = _stream.writes.add_documents, []

def add_then_die(con, documents, segments=()):
    calls.append(1)
    if len(calls) == 2:
        print(con.execute("SELECT import_id FROM imports WHERE json_extract_string(report, '$.status') = "
                          "'in_progress'").fetchone()[0], flush=True)
        os._exit(137)
    return real(con, documents, segments)

_stream.writes.add_documents = add_then_die
import_raid(Workspace(sys.argv[1]), sys.argv[2], batch_size=50, progress=False)
"""


def _killed_import(ws: Path) -> str:
    """Run a streamed import in another process and kill it mid-way: its ``imports`` row stays
    ``in_progress`` and its first batch (committed) stays behind. Returns the import's id."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent / "src"), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, "-c", KILLED, str(ws), str(PUBLIC / "raid" / "train.csv")], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 137, p.stderr
    return p.stdout.strip()


def test_a_killed_streamed_import_is_named_then_removed_by_the_next(tmp_path, tsa):
    ws = tmp_path / "ws"
    run("import", "jsonl", *_one_file(tmp_path), "--workspace", ws, "-q")
    kept = _doc_count(ws)
    killed = _killed_import(ws)
    assert _doc_count(ws) == kept + 50  # one batch was committed before the kill
    assert (killed, "in_progress") in _imports(ws)
    code, out = run_code("log", "verify", "--workspace", ws)
    assert code == 1 and f"import {killed} (raid) has not finished: its 50 documents are not logged" in out, out
    # the next streamed import removes them and says so
    out = run("import", "raid", PUBLIC / "raid" / "train.csv", "--workspace", ws, "--no-progress")
    assert f"removed an interrupted import {killed} (50 documents)" in out, out
    assert killed not in {i for i, _ in _imports(ws)}
    assert all(s == "done" for _, s in _imports(ws))
    commit_evaluate_publish_verify(tmp_path, ws, tsa, ZIPPY, "CHAIN-KILLED")


def test_publish_refuses_while_an_import_is_unfinished(tmp_path, tsa):
    ws = tmp_path / "ws"
    run("import", "raid", PUBLIC / "raid" / "train.csv", "--workspace", ws, "-q", "--no-progress")
    proto = tmp_path / "p.toml"
    proto.write_text('[protocol]\nname = "unfinished"\ntag = "UNFINISHED"\n\n' + ZIPPY, encoding="utf-8")
    run("protocol", "commit", proto, "--workspace", ws)
    run("evaluate", "--workspace", ws, "--protocol", proto, "--quiet")
    killed = _killed_import(ws)
    code, out = run_code("publish", "--workspace", ws, "--run", "UNFINISHED", "--out", tmp_path / "b")
    assert code == 1 and killed in out, out
    assert not (tmp_path / "b").exists() or not any((tmp_path / "b").iterdir())


def _counts(ws: Path) -> dict[str, int]:
    with Workspace(ws, read_only=True) as w:
        return {t: int(w.query(f"SELECT count(*) FROM {t}")[0][0])
                for t in ("documents", "document_segments", "scores", "submissions", "submitted_texts", "events")}


@pytest.mark.parametrize("kind", sorted(STEPS))
def test_reimport_stores_nothing_twice(kind, tmp_path, request):
    """The same import run again stores no row twice; what it logs is one import event over
    no document (nothing that could break verification), and ``log verify`` passes."""
    step = STEPS[kind]
    fake = request.getfixturevalue("fake") if step.vendors else None
    ws = tmp_path / "ws"
    step.imports(tmp_path, ws, fake)
    before = _counts(ws)
    step.imports(tmp_path, ws, fake)
    after = _counts(ws)
    assert {k: v for k, v in after.items() if k != "events"} == {k: v for k, v in before.items() if k != "events"}
    with Workspace(ws, read_only=True) as w:
        new = [json.loads(p) for (p,) in w.query("SELECT payload FROM events WHERE seq > ? ORDER BY seq",
                                                 [before["events"]])]
        types = [t for (t,) in w.query("SELECT type FROM events WHERE seq > ? ORDER BY seq", [before["events"]])]
    assert new and set(types) == {"import"}, types
    assert all(p["n_doc"] == 0 for p in new), new
    run("log", "verify", "--workspace", ws)


def test_reimport_then_publish_verifies(tmp_path, tsa):
    """A corpus imported twice (the second import stores nothing) publishes a bundle that verifies."""
    ws = tmp_path / "ws"
    run("import", "raid", PUBLIC / "raid", "--workspace", ws, "-q", "--no-progress")
    run("import", "raid", PUBLIC / "raid", "--workspace", ws, "-q", "--no-progress")
    commit_evaluate_publish_verify(tmp_path, ws, tsa, ZIPPY, "CHAIN-REIMPORT")
