"""Reruns that re-measure (issue 25): a protocol version declaring ``rescan = true`` (or
``score --rescan``) scans every text again after its commitment, keeps the earlier scores
stored, reads pre-registered, and compares the two runs in ``trends``."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from veribench.cli.main import app
from veribench.metrics.paired import MCNEMAR_TEST
from veribench.store import Workspace
from veribench.store.logcheck import verify_workspace

sys.path.insert(0, str(Path(__file__).parents[1] / "api"))
from vendor_fakes import FAST, VENDOR_KEYS, FakeVendors

N = 20  # 10 human, 10 AI texts
TEXTS = {f"d{i:02d}": f"An invented essay number {i} about rivers, written for the rescan test." for i in range(N)}
LABEL = {d: ("human" if i % 2 == 0 else "ai") for i, d in enumerate(TEXTS)}
#: P(AI) the fake vendor reports: first scan, then the rescan (the vendor retrained).
FIRST = {d: (0.1 if LABEL[d] == "human" else (0.9 if i < 8 else 0.2)) for i, d in enumerate(TEXTS)}
SECOND = {d: ((0.8 if i in (0, 2, 4) else 0.1) if LABEL[d] == "human" else 0.9) for i, d in enumerate(TEXTS)}


def run(*args: str, code: int = 0):
    r = CliRunner().invoke(app, list(args))
    assert r.exit_code == code, r.output
    return r


@pytest.fixture
def srv(monkeypatch):
    monkeypatch.setenv("VERIBENCH_SAPLING_API_KEY", VENDOR_KEYS["sapling"])
    s = FakeVendors(script={TEXTS[d]: [{"value": FIRST[d]}, {"value": SECOND[d]}] for d in TEXTS})
    yield s
    s.close()


def _corpus(tmp_path: Path) -> Path:
    f = tmp_path / "corpus.jsonl"
    f.write_text("".join(json.dumps({"id": d, "text": t, "label": LABEL[d], "arm": "A" if LABEL[d] == "human"
                                     else "C"}) + "\n" for d, t in TEXTS.items()), encoding="utf-8")
    return f


def _protocol(tmp_path: Path, srv: FakeVendors, *, rescan: bool | None, supersedes: str | None = None) -> Path:
    settings = ", ".join(f"{k} = {json.dumps(v)}" for k, v in {"base_url": srv.url, **FAST}.items())
    head = '[protocol]\nname = "quarterly"\ntag = "Q"\n' + (f"rescan = {str(rescan).lower()}\n" if rescan is not None
                                                              else "")
    body = (head + f'[[detectors]]\nname = "sapling"\nsettings = {{ {settings} }}\n'
            'rule = { field = "ai_probability", op = ">=", threshold = 0.5 }\n')
    if supersedes:
        body += (f'[[amendments]]\ndate = "{dt.date.today().isoformat()}"\nsupersedes = "{supersedes}"\n'
                 'summary = "quarterly rerun"\n')
    f = tmp_path / ("p2.toml" if supersedes else "p1.toml")
    f.write_text(body, encoding="utf-8")
    return f


def _first_run(tmp_path: Path, srv: FakeVendors) -> tuple[Path, Path, str]:
    ws = tmp_path / "ws"
    run("import", "jsonl", str(_corpus(tmp_path)), "--corpus", "essays", "-w", str(ws), "-q")
    p1 = _protocol(tmp_path, srv, rescan=None)
    run("protocol", "commit", str(p1), "-w", str(ws))
    out = tmp_path / "r1.json"
    run("evaluate", "-w", str(ws), "-p", str(p1), "--allow-paid", "--max-spend", "10000", "--json", str(out), "-q")
    assert sum(srv.counter.values()) == N
    r1 = json.loads(out.read_text())
    assert r1["run"]["protocol"]["scores_before_commit"] == 0
    return ws, p1, hashlib.sha256(p1.read_bytes()).hexdigest()


def _rates(res: dict) -> tuple[float, float]:
    t = res["table1"][0]
    return t["catch_rate"], t["fpr"]


def _stored(ws: Path) -> tuple[int, int]:
    with Workspace(ws, read_only=True) as w:
        return (w.query("SELECT count(*) FROM scores")[0][0], w.query("SELECT count(*) FROM scores_superseded")[0][0])


def test_a_rescan_protocol_scans_again_keeps_both_and_reads_pre_registered_with_trends(tmp_path, srv):
    ws, p1, h1 = _first_run(tmp_path, srv)
    p2 = _protocol(tmp_path, srv, rescan=True, supersedes=h1)
    run("protocol", "commit", str(p2), "-w", str(ws))
    # without paying, the rerun refuses in one line naming how many texts lack a new score
    r = run("evaluate", "-w", str(ws), "-p", str(p2), "-q", code=1)
    assert f"{N} selected documents have no stored score taken after the commitment" in r.output
    assert "veribench score --rescan" in r.output and sum(srv.counter.values()) == N
    r = run("evaluate", "-w", str(ws), "-p", str(p2), "-q", "--no-score", code=1)
    assert f"{N} of {N} texts have no score taken after the commitment" in r.output
    assert "veribench score --rescan" in r.output and sum(srv.counter.values()) == N
    out = tmp_path / "r2.json"
    r = run("evaluate", "-w", str(ws), "-p", str(p2), "--allow-paid", "--max-spend", "10000", "--json", str(out),
            "--out", str(tmp_path / "rep"))
    assert sum(srv.counter.values()) == 2 * N  # the vendor was called again for every text
    assert _stored(ws) == (N, N)  # the new scores beside the earlier ones
    res = json.loads(out.read_text())
    assert res["run"]["protocol"]["scores_before_commit"] == 0
    assert "Pre-registered" in r.output and "NOT PRE-REGISTERED" not in r.output
    assert _rates(res) == (1.0, 0.3)
    tr = res["trends"]
    assert tr["earlier_run"]["run_id"] != res["run"]["run_id"]
    row = tr["rows"][0]
    assert row["detector"] == "sapling" and row["paired_texts"] == {"ai": 10, "human": 10}
    cr, fpr = row["catch_rate"], row["fpr"]
    assert (cr["then"], cr["now"]) == (pytest.approx(0.4), 1.0) and cr["difference"] == pytest.approx(0.6)
    assert (fpr["then"], fpr["now"]) == (0.0, pytest.approx(0.3)) and fpr["difference"] == pytest.approx(0.3)
    # paired test on the same texts: McNemar exact (6 discordant AI texts all one way: p = 2 * 0.5**6)
    assert cr["test"] == MCNEMAR_TEST and cr["p_value"] == pytest.approx(2 * 0.5 ** 6)
    assert "Trends" in r.output and "sapling" in r.output
    md = (tmp_path / "rep" / "tables.md").read_text()
    assert "Trends" in md and "+60.0" in md
    with Workspace(ws) as w:
        rep = verify_workspace(w)
        assert rep.ok, rep.lines()
        assert rep.counts["scores_superseded"] == N


def test_an_identical_rerun_is_an_estimate_of_zero_with_no_interval(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIBENCH_SAPLING_API_KEY", VENDOR_KEYS["sapling"])
    srv = FakeVendors(script={TEXTS[d]: [{"value": FIRST[d]}, {"value": FIRST[d]}] for d in TEXTS})
    try:
        ws, p1, h1 = _first_run(tmp_path, srv)
        p2 = _protocol(tmp_path, srv, rescan=True, supersedes=h1)
        run("protocol", "commit", str(p2), "-w", str(ws))
        out = tmp_path / "r2.json"
        run("evaluate", "-w", str(ws), "-p", str(p2), "--allow-paid", "--max-spend", "10000", "--json", str(out),
            "-q")
        row = json.loads(out.read_text())["trends"]["rows"][0]
        for k in ("catch_rate", "fpr"):
            assert row[k]["difference"] == 0.0 and row[k]["ci"] is None and row[k]["ci_reason"] == "no variation"
    finally:
        srv.close()


def test_without_rescan_the_cache_is_reused(tmp_path, srv):
    ws, p1, h1 = _first_run(tmp_path, srv)
    p2 = _protocol(tmp_path, srv, rescan=False, supersedes=h1)
    run("protocol", "commit", str(p2), "-w", str(ws))
    out = tmp_path / "r2.json"
    r = run("evaluate", "-w", str(ws), "-p", str(p2), "--json", str(out))
    assert sum(srv.counter.values()) == N and _stored(ws) == (N, 0)
    assert "NOT PRE-REGISTERED" in r.output
    assert json.loads(out.read_text())["run"]["protocol"]["scores_before_commit"] == N


def test_score_rescan_on_the_command_line_does_the_same(tmp_path, srv):
    ws, p1, h1 = _first_run(tmp_path, srv)
    p2 = _protocol(tmp_path, srv, rescan=False, supersedes=h1)
    run("protocol", "commit", str(p2), "-w", str(ws))
    texts = tmp_path / "texts.jsonl"
    texts.write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in TEXTS.items()), encoding="utf-8")
    settings = [x for k, v in {"base_url": srv.url, **FAST}.items() for x in ("--set", f"{k}={v}")]
    run("score", "-d", "sapling", *settings, "-i", str(texts), "-o", str(tmp_path / "s.jsonl"), "-w", str(ws),
        "--rescan", "--max-spend", "10000")
    assert sum(srv.counter.values()) == 2 * N and _stored(ws) == (N, N)
    out = tmp_path / "r2.json"
    r = run("evaluate", "-w", str(ws), "-p", str(p2), "--json", str(out))  # links the new scores: calls nothing
    assert sum(srv.counter.values()) == 2 * N
    res = json.loads(out.read_text())
    assert res["run"]["protocol"]["scores_before_commit"] == 0 and "NOT PRE-REGISTERED" not in r.output
    assert _rates(res) == (1.0, 0.3)


def test_a_rescan_run_publishes_and_verifies(tmp_path, srv):
    """The rescan's scores are scan-batch rows the log defines: the bundle re-derives its run."""
    from veribench.bundles.publish import publish
    from veribench.bundles.verify import verify_bundle

    ws, p1, h1 = _first_run(tmp_path, srv)
    p2 = _protocol(tmp_path, srv, rescan=True, supersedes=h1)
    run("protocol", "commit", str(p2), "-w", str(ws))
    out = tmp_path / "r2.json"
    run("evaluate", "-w", str(ws), "-p", str(p2), "--allow-paid", "--max-spend", "10000", "--json", str(out), "-q")
    run_id = json.loads(out.read_text())["run"]["run_id"]
    with Workspace(ws) as w:
        pub = publish(w, run_id, tmp_path / "bundle")
    rep = verify_bundle(pub.out)
    assert rep.ok, (rep.failures, rep.not_run())


def test_a_version_2_workspace_migrates_to_3_keeping_every_row(tmp_path):
    """Step 2 -> 3 adds ``scores_superseded`` (empty) and changes no stored row."""
    import duckdb

    from veribench.store import schema

    ws = tmp_path / "ws"
    run("import", "jsonl", str(_corpus(tmp_path)), "--corpus", "essays", "-w", str(ws), "-q")
    db = ws / "veribench.duckdb"
    con = duckdb.connect(str(db))
    con.execute("DROP TABLE scores_superseded")
    schema.set_version(con, 2)
    before = {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in ("documents", "events")}
    con.close()
    with Workspace(ws) as w:
        assert w.migration_notes[0] == f"migrated workspace {ws} from schema version 2 to {schema.VERSION}"
        assert schema.stored_version(w.con) == schema.VERSION
        assert w.query("SELECT count(*) FROM scores_superseded")[0][0] == 0
        for t, rows in before.items():
            assert sorted(w.con.execute(f"SELECT * FROM {t}").fetchall(), key=repr) == rows
        assert verify_workspace(w).ok


def test_rescan_is_validated_like_every_protocol_field(tmp_path):
    from veribench.errors import ProtocolError
    from veribench.protocol.model import load_protocol

    f = tmp_path / "p.toml"
    f.write_text('[protocol]\nname = "q"\nrescan = "yes"\n', encoding="utf-8")
    with pytest.raises(ProtocolError) as e:
        load_protocol(f)
    assert "\n" not in str(e.value) and "protocol.rescan" in str(e.value)
    f.write_text('[protocol]\nname = "q"\nrescan = true\n', encoding="utf-8")
    assert load_protocol(f).rescan is True
    f.write_text('[protocol]\nname = "q"\n', encoding="utf-8")
    assert load_protocol(f).rescan is False


def test_a_replaced_scan_is_kept_and_checked_against_its_own_scan_batch(tmp_path):
    """``put_scores(replace=True)`` keeps the earlier row in ``scores_superseded``; ``log
    verify`` accepts it as logged, and names it once edited."""
    from veribench.records import ScoreResult
    from veribench.spec import Spec
    from veribench.store import writes

    spec = Spec("detector", "hand", "1", {})
    sha = "a" * 64
    with Workspace(tmp_path / "ws") as w:
        writes.put_scores(w, spec, [(sha, ScoreResult(raw=0.2, ai_probability=0.2))])
        writes.put_scores(w, spec, [(sha, ScoreResult(raw=0.9, ai_probability=0.9))], replace=True)
        assert w.query("SELECT ai_probability FROM scores") == [(0.9,)]
        assert w.query("SELECT ai_probability FROM scores_superseded") == [(0.2,)]
        rep = verify_workspace(w)
        assert rep.ok and rep.counts["scores_superseded"] == 1, rep.lines()
        w.con.execute("UPDATE scores_superseded SET ai_probability = 0.1")
        rep = verify_workspace(w)
        assert not rep.ok and any(f.table == "scores_superseded" for f in rep.findings), rep.lines()


def _imported_protocol(tmp_path: Path, name: str, *, rescan: bool = False, supersedes: str | None = None,
                       settings: str = "") -> Path:
    body = ('[protocol]\nname = "quarterly"\ntag = "Q"\n' + ("rescan = true\n" if rescan else "")
            + f'[[detectors]]\nname = "mydet"\n{settings}rule = {{ field = "ai_probability", op = ">=", '
              'threshold = 0.5 }\n')
    if supersedes:
        body += (f'[[amendments]]\ndate = "{dt.date.today().isoformat()}"\nsupersedes = "{supersedes}"\n'
                 'summary = "quarterly rerun"\n')
    f = tmp_path / name
    f.write_text(body, encoding="utf-8")
    return f


def _score_file(tmp_path: Path, name: str, values: dict[str, float]) -> Path:
    f = tmp_path / name
    f.write_text("".join(json.dumps({"doc_id": d, "score": v}) + "\n" for d, v in values.items()), encoding="utf-8")
    return f


def test_a_rescan_of_hand_imported_scores_is_a_new_import_with_rescan(tmp_path):
    ws = tmp_path / "ws"
    run("import", "jsonl", str(_corpus(tmp_path)), "--corpus", "essays", "-w", str(ws), "-q")
    run("import", "scores", str(_score_file(tmp_path, "s1.jsonl", FIRST)), "--detector", "mydet", "-w", str(ws), "-q")
    p1 = _imported_protocol(tmp_path, "p1.toml")
    run("protocol", "commit", str(p1), "-w", str(ws))
    run("evaluate", "-w", str(ws), "-p", str(p1), "-q")
    p2 = _imported_protocol(tmp_path, "p2.toml", rescan=True, supersedes=hashlib.sha256(p1.read_bytes()).hexdigest())
    run("protocol", "commit", str(p2), "-w", str(ws))
    # the refusal names what works for an imported detector (score --rescan does not know it)
    r = run("evaluate", "-w", str(ws), "-p", str(p2), "-q", code=1)
    assert f"{N} of {N} texts have no score taken after the commitment" in r.output
    assert "veribench import scores FILE --detector mydet --rescan" in r.output, r.output
    assert "veribench score --rescan" not in r.output and len(r.output.strip().splitlines()) == 1
    # without --rescan a new value is a conflict and the stored score is kept; with it, the new scan replaces
    s2 = _score_file(tmp_path, "s2.jsonl", SECOND)
    r = run("import", "scores", str(s2), "--detector", "mydet", "-w", str(ws))
    assert "score conflicts" in r.output and _stored(ws) == (N, 0)
    run("import", "scores", str(s2), "--detector", "mydet", "--rescan", "-w", str(ws), "-q")
    assert _stored(ws) == (N, N)  # the new scores, the earlier ones kept in scores_superseded
    out = tmp_path / "r2.json"
    r = run("evaluate", "-w", str(ws), "-p", str(p2), "--json", str(out))
    res = json.loads(out.read_text())
    assert res["run"]["protocol"]["scores_before_commit"] == 0
    assert "Pre-registered" in r.output and "NOT PRE-REGISTERED" not in r.output
    # rates from the new values, by a plain count: AI caught (>= 0.5) and humans flagged
    ai = [d for d in TEXTS if LABEL[d] == "ai"]
    hu = [d for d in TEXTS if LABEL[d] == "human"]
    assert _rates(res) == (pytest.approx(sum(SECOND[d] >= 0.5 for d in ai) / len(ai)),
                           pytest.approx(sum(SECOND[d] >= 0.5 for d in hu) / len(hu)))
    row = res["trends"]["rows"][0]
    assert row["detector"] == "mydet" and row["catch_rate"]["then"] == pytest.approx(
        sum(FIRST[d] >= 0.5 for d in ai) / len(ai))
    with Workspace(ws) as w:
        rep = verify_workspace(w)
        assert rep.ok, rep.lines()


def test_two_imported_versions_are_told_apart_by_their_version(tmp_path):
    ws = tmp_path / "ws"
    run("import", "jsonl", str(_corpus(tmp_path)), "--corpus", "essays", "-w", str(ws), "-q")
    run("import", "scores", str(_score_file(tmp_path, "s1.jsonl", FIRST)), "--detector", "mydet", "-w", str(ws), "-q")
    run("import", "scores", str(_score_file(tmp_path, "s2.jsonl", SECOND)), "--detector", "mydet", "--version", "q4",
        "-w", str(ws), "-q")
    r = run("protocol", "commit", str(_imported_protocol(tmp_path, "p.toml")), "-w", str(ws), code=1)
    assert 'settings = { version = "q4" }' in r.output and "no setting tells it apart" not in r.output, r.output
    picked = _imported_protocol(tmp_path, "q4.toml", settings='settings = { version = "q4" }\n')
    run("protocol", "commit", str(picked), "-w", str(ws))
    out = tmp_path / "q4.json"
    run("evaluate", "-w", str(ws), "-p", str(picked), "--json", str(out), "-q")
    ai = [d for d in TEXTS if LABEL[d] == "ai"]
    assert _rates(json.loads(out.read_text()))[0] == pytest.approx(sum(SECOND[d] >= 0.5 for d in ai) / len(ai))
