"""Commitments that can be shown to a third party: protocol ids, amendments that cannot be
skipped, renamed or backdated, and RFC 3161 timestamps from a real authority on 127.0.0.1."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from tests.bundles.tsa_server import TSAServer
from veribench.cli.main import app
from veribench.commit import commit
from veribench.commit.tsa import PASSWORD_ENV, USER_ENV
from veribench.errors import ProtocolError
from veribench.protocol.model import load_protocol
from veribench.store import Workspace
from veribench.store.commitments import commitment_record, record_bytes, require_committed, versions
from veribench.store.events import read_events

BASE = """[protocol]
name = "commit-test"
tag = "C-1"
[[detectors]]
name = "DetA"
rule = { field = "ai_probability", op = ">", threshold = 0.5 }
"""
TODAY = datetime.now(UTC).date()


def _fill(ws, n=40):
    from tests.bundles.bundle_helpers import store_documents
    from veribench.corpus.document import Document
    from veribench.records import ScoreResult

    docs = [Document(id=f"d{i:03d}", text=f"text number {i} " + "y" * i, label="human" if i % 2 else "ai")
            for i in range(n)]
    store_documents(ws, docs, "DetA", [ScoreResult(raw=((i * 37) % 100) / 100, ai_probability=((i * 37) % 100) / 100)
                                       for i in range(n)], source="/private/path/synthetic.jsonl")


def amend(text: str, supersedes: str, date=None, summary="threshold raised") -> str:
    return text + f'\n[[amendments]]\ndate = "{date or TODAY}"\nsupersedes = "{supersedes}"\nsummary = "{summary}"\n'


def test_protocol_id_is_fixed_at_first_commit_and_survives_renaming(workspace, tmp_path):
    _fill(workspace)
    f = tmp_path / "p.toml"
    f.write_text(BASE)
    v1 = commit(workspace, f)
    assert v1.protocol_id == "vbp-" + v1.hash[:16] and v1.version == 1
    assert v1.record_path and v1.record_path.is_file()
    rec = json.loads(v1.record_path.read_text())
    assert rec["protocol_sha256"] == v1.hash and rec["chain_head"] == v1.event_hash and rec["protocol_id"] == v1.protocol_id
    # the record is derived from the log alone (a verifier re-derives it from a bundle)
    assert v1.record_path.read_bytes() == record_bytes(commitment_record(versions(workspace.con)[v1.hash]))
    f.write_text(amend(BASE.replace("commit-test", "renamed-test").replace("0.5", "0.6"), v1.hash))
    v2 = commit(workspace, f)
    assert (v2.protocol_id, v2.version, v2.name) == (v1.protocol_id, 2, "renamed-test")
    assert v2.amendments[0]["renamed_from"] == "commit-test" and v2.amendments[0]["supersedes"] == v1.hash


def test_amendment_cannot_be_skipped_by_evaluating_the_old_file(workspace, tmp_path):
    from veribench.evaluate import evaluate_workspace

    _fill(workspace)
    f1, f2 = tmp_path / "v1.toml", tmp_path / "v2.toml"
    f1.write_text(BASE)
    v1 = commit(workspace, f1)
    evaluate_workspace(workspace, load_protocol(f1))
    f2.write_text(amend(BASE.replace("0.5", "0.7"), v1.hash))
    commit(workspace, f2)
    with pytest.raises(ProtocolError, match="superseded.*cannot skip an amendment"):
        require_committed(workspace, load_protocol(f1))
    res = evaluate_workspace(workspace, load_protocol(f2))
    p = res["run"]["protocol"]
    assert p["version"] == 2 and p["amendments"][0]["after_results"] is True  # the run that follows shows it
    assert [r["protocol_sha256"] for r in p["earlier_runs"]] == [v1.hash]  # earlier runs stay listed


def test_renaming_does_not_skip_the_amendment_check(workspace, tmp_path):
    from veribench.evaluate import evaluate_workspace

    _fill(workspace)
    f = tmp_path / "p.toml"
    f.write_text(BASE)
    commit(workspace, f)
    evaluate_workspace(workspace, load_protocol(f))
    g = tmp_path / "q.toml"
    g.write_text(BASE.replace("commit-test", "a-new-name").replace("0.5", "0.8"))  # raised after seeing results
    with pytest.raises(ProtocolError, match="already holds runs under protocol id.*--new-protocol"):
        commit(workspace, g)
    rec = commit(workspace, g, new_protocol=True)  # declared: logged and shown beside its results
    res = evaluate_workspace(workspace, load_protocol(g))
    assert rec.payload["declared_new_protocol"] is True
    from veribench.evaluate import honesty

    assert any(x.startswith("DECLARED NEW PROTOCOL") for x in honesty.lines(res))
    # the same name with other bytes still needs an amendment
    h = tmp_path / "r.toml"
    h.write_text(BASE.replace("0.5", "0.9"))
    with pytest.raises(ProtocolError, match="amendments"):
        commit(workspace, h, new_protocol=True)


@pytest.mark.parametrize("date,match", [
    (TODAY - timedelta(days=30), "backdated amendment is refused"),
    (TODAY + timedelta(days=2), "in the future"),
    ("soon", "not an ISO date"),
])
def test_amendment_dates_follow_the_log(workspace, tmp_path, date, match):
    f = tmp_path / "p.toml"
    f.write_text(BASE)
    v1 = commit(workspace, f)
    f.write_text(amend(BASE.replace("0.5", "0.7"), v1.hash, date=date))
    with pytest.raises(ProtocolError, match=match):
        commit(workspace, f)


def test_amending_an_outdated_version_is_refused(workspace, tmp_path):
    f = tmp_path / "p.toml"
    f.write_text(BASE)
    v1 = commit(workspace, f)
    f.write_text(amend(BASE.replace("0.5", "0.7"), v1.hash))
    v2 = commit(workspace, f)
    f.write_text(amend(BASE.replace("0.5", "0.9"), v1.hash, summary="a branch from version 1"))
    with pytest.raises(ProtocolError, match=f"has since been amended to {v2.hash}"):
        commit(workspace, f)


def test_scores_before_commit_are_counted_and_shown(workspace, tmp_path):
    from veribench.evaluate import evaluate_workspace
    from veribench.evaluate.tables import markdown

    _fill(workspace)  # scores first: the commitment is not a pre-registration
    f = tmp_path / "p.toml"
    f.write_text(BASE)
    commit(workspace, f)
    res = evaluate_workspace(workspace, load_protocol(f))
    p = res["run"]["protocol"]
    assert p["scores_total"] == p["scores_before_commit"] == p["scores_logged_before_commit"] == 40
    head = markdown(res).split("## Table 1")[0]
    assert "NOT PRE-REGISTERED: 40 of 40 scores predate the protocol commitment" in head


def test_scores_after_commit_are_preregistered(workspace, tmp_path):
    from veribench.evaluate import evaluate_workspace
    from veribench.evaluate.tables import markdown

    f = tmp_path / "p.toml"
    f.write_text(BASE)
    commit(workspace, f)
    _fill(workspace)
    res = evaluate_workspace(workspace, load_protocol(f))
    assert res["run"]["protocol"]["scores_before_commit"] == 0
    assert "Pre-registered: all 40 scores were logged and dated after" in markdown(res)


# -- RFC 3161 against a real authority on 127.0.0.1 -------------------------------------------------

def test_timestamp_end_to_end(workspace, tmp_path):
    from veribench.commit import tsa
    from veribench.store.events import read_events

    f = tmp_path / "p.toml"
    f.write_text(BASE)
    with TSAServer() as t:
        rec = commit(workspace, f, tsa_url=t.url, tsa_roots=t.authority.ca_pem)
        assert t.authority.requests == 1
        roots = tsa.load_certificates(t.authority.ca_pem)
    assert rec.timestamp["signature_checked"] is True
    token = rec.record_path.with_suffix(".tsr").read_bytes()
    record = rec.record_path.read_bytes()
    info = tsa.check_token(token, record, roots=roots)  # offline, after the authority is gone
    assert info.signature_checked and info.imprint_sha256 == __import__("hashlib").sha256(record).hexdigest()
    assert datetime.fromisoformat(info.gen_time.replace("Z", "+00:00")) >= rec.committed_at - timedelta(seconds=5)
    with pytest.raises(tsa.TimestampError, match="token stamps other bytes"):
        tsa.check_token(token, record + b" ", roots=roots)
    (stamp,) = read_events(workspace.con, types=("timestamp",))
    assert stamp["payload"]["record_sha256"] == __import__("hashlib").sha256(record).hexdigest()
    assert stamp["payload"]["authority"].startswith("127.0.0.1:")  # the host only, never a full URL with a key


def test_authority_stamping_other_bytes_is_refused(workspace, tmp_path):
    from veribench.commit.tsa import TimestampError
    from veribench.store.events import read_events

    f = tmp_path / "p.toml"
    f.write_text(BASE)
    with TSAServer(mode="wrong_imprint") as t:
        with pytest.raises(TimestampError, match="token stamps other bytes"):
            commit(workspace, f, tsa_url=t.url, tsa_roots=t.authority.ca_pem)
    # with --tsa the commitment and its token are recorded together or not at all
    assert not read_events(workspace.con, types=("timestamp",))
    assert load_protocol(f).hash not in versions(workspace.con)
    assert workspace.query("SELECT count(*) FROM protocols")[0][0] == 0
    assert not (workspace.path / "commitments").exists()
    # committed again once the authority answers: one commitment, with its token
    with TSAServer() as t:
        rec = commit(workspace, f, tsa_url=t.url, tsa_roots=t.authority.ca_pem)
    assert rec.new and rec.timestamp["signature_checked"]
    assert [e["type"] for e in read_events(workspace.con)] == ["protocol_commit", "timestamp"]


def test_authority_rejection_and_unreachable_authority(workspace, tmp_path):
    from veribench.commit import add_timestamp
    from veribench.commit.tsa import TimestampError

    f = tmp_path / "p.toml"
    f.write_text(BASE)
    with TSAServer(mode="rejection") as t:
        with pytest.raises(TimestampError, match="did not grant"):
            commit(workspace, f, tsa_url=t.url)
    assert load_protocol(f).hash not in versions(workspace.con)  # nothing recorded without its token
    with TSAServer() as t:
        url = t.url
    with pytest.raises(TimestampError, match="no answer"):  # the authority is gone: nothing recorded again
        commit(workspace, f, tsa_url=url)
    assert load_protocol(f).hash not in versions(workspace.con)
    commit(workspace, f)  # committed without --tsa; a token added later
    with pytest.raises(TimestampError, match="no answer"):
        add_timestamp(workspace, load_protocol(f).hash, url)
    assert not workspace.query("SELECT count(*) FROM events WHERE type = 'timestamp'")[0][0]


@pytest.mark.parametrize("url", ["http://user:s3cr3t-pw@127.0.0.1:{port}/tsr", "http://s3cr3t-pw@127.0.0.1:{port}/tsr",
                                 "http://user:s3cr3t%2Dpw@127.0.0.1:{port}/tsr", "ftp://127.0.0.1:{port}/tsr"])
def test_a_tsa_url_with_credentials_is_refused_before_anything_is_written(workspace, tmp_path, url):
    """Credentials in a URL would reach the workspace, the log and every bundle (they cannot
    be removed from a hash chain): refused at once, without echoing them, nothing written."""
    from veribench.commit import add_timestamp
    from veribench.commit.tsa import TimestampError

    f = tmp_path / "p.toml"
    f.write_text(BASE)
    with TSAServer() as t:
        u = url.format(port=t.url.split(":")[2].split("/")[0])
        with pytest.raises(TimestampError) as e:
            commit(workspace, f, tsa_url=u)
        assert t.authority.requests == 0
    assert "s3cr3t" not in str(e.value) and "\n" not in str(e.value)
    assert workspace.query("SELECT count(*) FROM events")[0][0] == 0
    commit(workspace, f)
    with pytest.raises(TimestampError) as e:
        add_timestamp(workspace, load_protocol(f).hash, u)
    assert "s3cr3t" not in str(e.value)
    assert workspace.query("SELECT count(*) FROM events WHERE type = 'timestamp'")[0][0] == 0


def test_tsa_credentials_come_from_the_environment_and_stay_out_of_the_workspace(workspace, tmp_path, monkeypatch):
    import base64

    from veribench.commit.tsa import PASSWORD_ENV, USER_ENV, TimestampError

    f = tmp_path / "p.toml"
    f.write_text(BASE)
    want = "Basic " + base64.b64encode(b"alice:s3cr3t-pw").decode()
    with TSAServer(basic_auth=want) as t:
        with pytest.raises(TimestampError, match="HTTP 401"):
            commit(workspace, f, tsa_url=t.url)
        monkeypatch.setenv(USER_ENV, "alice")
        monkeypatch.setenv(PASSWORD_ENV, "s3cr3t-pw")
        rec = commit(workspace, f, tsa_url=t.url, tsa_roots=t.authority.ca_pem)
        assert t.seen_auth[-1] == want
    assert rec.timestamp["signature_checked"]
    dump = "\n".join(str(r) for table in ("events", "commitments", "protocols")
                     for r in workspace.query(f"SELECT * FROM {table}"))
    files = b"".join(p.read_bytes() for p in (workspace.path / "commitments").iterdir())
    for secret in ("s3cr3t", "alice", base64.b64encode(b"alice:s3cr3t-pw").decode()):
        assert secret not in dump and secret.encode() not in files


def test_cli_commit_with_tsa_and_timestamp_later(tmp_path):
    from typer.testing import CliRunner

    from veribench.cli.main import app

    f = tmp_path / "p.toml"
    f.write_text(BASE)
    ws = tmp_path / "ws"
    with TSAServer() as t:
        ca = tmp_path / "ca.pem"
        ca.write_bytes(t.authority.ca_pem)
        r = CliRunner().invoke(app, ["protocol", "commit", str(f), "--workspace", str(ws)])
        assert r.exit_code == 0 and "commitment record to publish now" in r.output
        r = CliRunner().invoke(app, ["protocol", "timestamp", str(f), "--workspace", str(ws), "--tsa", t.url,
                                     "--tsa-cert", str(ca)])
        assert r.exit_code == 0 and "timestamped commit-test" in r.output
        g = tmp_path / "q.toml"
        g.write_text(BASE.replace("commit-test", "second"))
        r = CliRunner().invoke(app, ["protocol", "commit", str(g), "--workspace", str(ws), "--tsa", t.url,
                                     "--tsa-cert", str(ca)])
        assert r.exit_code == 0 and "timestamp: " in r.output and "signature not checked" not in r.output
    assert sorted(p.name for p in (ws / "commitments").iterdir())[:2] == [
        f"vbp-{load_protocol(f).hash[:16]}-v1.json", f"vbp-{load_protocol(f).hash[:16]}-v1.tsr"]


def test_a_committed_amendment_cannot_be_reworded_by_a_later_version(workspace, tmp_path):
    """Version 3 keeps version 2's amendment but rewords its summary: refused, naming the
    amendment as it was committed; keeping it verbatim (or leaving it out) is accepted."""
    f = tmp_path / "p.toml"
    f.write_text(BASE)
    v1 = commit(workspace, f)
    v2_text = amend(BASE.replace("0.5", "0.6"), v1.hash)
    f.write_text(v2_text)
    v2 = commit(workspace, f)
    f.write_text(amend(v2_text.replace("threshold raised", "harmless typo fix").replace("0.6", "0.7"), v2.hash))
    with pytest.raises(ProtocolError, match="cannot be reworded or redated"):
        commit(workspace, f)
    f.write_text(amend(v2_text.replace("0.6", "0.7"), v2.hash, summary="threshold raised again"))
    v3 = commit(workspace, f)
    assert [a["summary"] for a in v3.amendments] == ["threshold raised", "threshold raised again"]


#: TSA URLs that hide a secret somewhere veribench would store or print ({port}: a live loopback TSA).
SECRET_URLS = {
    "query": "http://127.0.0.1:{port}/tsr?api_key=S3CRET",
    "query-upper-scheme": "HTTP://127.0.0.1:{port}/tsr?Token=S3CRET",
    "fragment": "http://127.0.0.1:{port}/tsr#S3CRET",
    "empty-query": "http://127.0.0.1:{port}/S3CRET?",
    "percent-encoded-userinfo": "http://%55ser%3AS3CRET%40127.0.0.1:{port}/",
    "backslash-userinfo": "http://127.0.0.1:{port}\\@S3CRET/",
    "scheme": "S3CRET://127.0.0.1:{port}/x",
    "port-out-of-range": "http://127.0.0.1:99999/S3CRET",
    "broken-ipv6": "http://[::1/?k=S3CRET",
    "space": "http://127.0.0.1:{port}/tsr S3CRET",
}


@pytest.mark.parametrize("command", ["commit", "timestamp"])
@pytest.mark.parametrize("case", sorted(SECRET_URLS))
def test_cli_refuses_a_tsa_url_hiding_a_secret_without_echoing_or_storing_it(tmp_path, case, command):
    """``--tsa`` with user information (even percent-encoded or behind a backslash), a query, a
    fragment, another scheme or a bad port: one line naming --tsa, a usage/user error (never
    an internal error), the secret neither printed nor written anywhere in the workspace."""
    from typer.testing import CliRunner

    from veribench.cli.main import app

    f = tmp_path / "p.toml"
    f.write_text(BASE)
    ws = tmp_path / "ws"
    if command == "timestamp":
        assert CliRunner().invoke(app, ["protocol", "commit", str(f), "--workspace", str(ws)]).exit_code == 0
    with TSAServer() as t:
        url = SECRET_URLS[case].format(port=t.url.split(":")[2].split("/")[0])
        r = CliRunner().invoke(app, ["protocol", command, str(f), "--workspace", str(ws), "--tsa", url])
        assert t.authority.requests == 0
    out = r.output.strip()
    assert r.exit_code in (1, 2), out
    assert "internal error" not in out and "S3CRET" not in out and "s3cret" not in out.lower(), out
    assert "--tsa" in out and len(out.splitlines()) == 1, out
    for p in ws.rglob("*"):
        if p.is_file():
            assert b"S3CRET" not in p.read_bytes(), p


def test_a_plain_loopback_tsa_url_is_stored_as_scheme_host_port(workspace, tmp_path):
    """The accepted form is normalised (lower-case scheme and host): the token is requested
    from it, path included, and ``commitments.tsa_url`` holds scheme://host:port only."""
    from veribench.commit.tsa import check_url

    assert check_url("HTTPS://FreeTSA.org/tsr") == "https://freetsa.org/tsr"
    assert check_url("http://[::1]:8080") == "http://[::1]:8080/"
    f = tmp_path / "p.toml"
    f.write_text(BASE)
    with TSAServer() as t:
        port = t.url.split(":")[2].split("/")[0]
        rec = commit(workspace, f, tsa_url=f"HTTP://127.0.0.1:{port}/tsr", tsa_roots=t.authority.ca_pem)
        assert t.authority.requests == 1 and t.seen_paths == ["/tsr"]
    assert rec.timestamp["signature_checked"]
    assert workspace.query("SELECT tsa_url FROM commitments")[0][0] == f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("secret_path", ["/tsr/S3CRETKEY123", "/api_key=S3CRETKEY123/tsr", "/S3CRETKEY123"])
def test_a_secret_in_the_tsa_path_reaches_the_authority_and_nothing_stored_or_printed(tmp_path, monkeypatch,
                                                                                     secret_path):
    """Issue 24: the path of an accepted URL was stored (``commitments.tsa_url``) and could hold
    an account key. The request goes to the full path, with the environment's credentials;
    stdout/stderr, every byte of the workspace (the DuckDB file, its log, commitments/) hold
    neither the path's key nor the credentials, and the authority is still named."""
    monkeypatch.setenv(USER_ENV, "alice")
    monkeypatch.setenv(PASSWORD_ENV, "pw-S3CRETPASS")
    want = "Basic " + base64.b64encode(b"alice:pw-S3CRETPASS").decode()
    f, g = tmp_path / "p.toml", tmp_path / "q.toml"
    f.write_text(BASE)
    g.write_text(BASE.replace("commit-test", "second"))
    ws = tmp_path / "ws"
    runner = CliRunner()
    with TSAServer(basic_auth=want) as t:
        ca = tmp_path / "ca.pem"
        ca.write_bytes(t.authority.ca_pem)
        url = t.url.rsplit("/", 1)[0] + secret_path
        outs = [runner.invoke(app, ["protocol", "commit", str(f), "-w", str(ws), "--tsa", url, "--tsa-cert", str(ca)]),
                runner.invoke(app, ["protocol", "commit", str(g), "-w", str(ws)]),
                runner.invoke(app, ["protocol", "timestamp", str(g), "-w", str(ws), "--tsa", url,
                                    "--tsa-cert", str(ca)]),
                runner.invoke(app, ["protocol", "show", "-w", str(ws)]), runner.invoke(app, ["log", "verify", "-w", str(ws)])]
        assert t.seen_paths == [secret_path, secret_path] and t.seen_auth == [want, want]
    assert [r.exit_code for r in outs] == [0, 0, 0, 0, 0], [r.output for r in outs]
    assert "timestamp: " in outs[0].output and "timestamped second" in outs[2].output
    text = "".join(r.output for r in outs)  # stdout and stderr (click's runner mixes them)
    stored = b"".join(p.read_bytes() for p in ws.rglob("*") if p.is_file())
    assert (ws / "veribench.duckdb").is_file() and len(stored) > 10_000  # the workspace and its log were read
    for secret in ("S3CRETKEY123", "S3CRETPASS", base64.b64encode(b"alice:pw-S3CRETPASS").decode()):
        assert secret not in text and secret.encode() not in stored, secret
    with Workspace(ws) as w:
        port = t.url.split(":")[2].split("/")[0]
        assert {r[0] for r in w.query("SELECT tsa_url FROM commitments")} == {f"http://127.0.0.1:{port}"}
        assert [e["payload"]["authority"] for e in read_events(w.con, types=("timestamp",))] == [f"127.0.0.1:{port}"] * 2
