"""End to end in real headless Chromium (Playwright driving Debian's chromium): one writer
opens an invitation, types and autosaves, submits; a second pastes a block from the clipboard
and chooses fingerprint-only. After `import arm-b` both are arm-B documents with their tags,
and no export (scores CSV/Parquet, the run's files, the arm-B JSON Lines, the report site)
holds a byte of the second text."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.rubric.rubric_helpers import ServerThread
from tests.rubric.test_browser import browser  # noqa: F401 - the rating app's Chromium fixture, same launch flags
from tests.rubric.test_write_cli import PROTOCOL, _files_hold
from tests.rubric.write_helpers import PROMPT, first_words, liang_texts, sentences, words
from veribench.cli.main import app as cli
from veribench.rubric.write import store
from veribench.rubric.write.app import create_app
from veribench.rubric.write.db import open_store
from veribench.rubric.write.fingerprint import fingerprint
from veribench.store import Workspace


def onboard(page, url: str, token: str, *, english: str, language: str, years: str) -> str:
    page.goto(f"{url}/i/{token}")
    assert PROMPT in page.inner_text("#prompt")
    page.click("#start")
    page.wait_for_url("**/consent")
    assert "no AI tool generated" in page.inner_text("#attestation-text")
    page.check("#adult")
    page.check("#agree")
    page.click("#consent-submit")
    page.wait_for_url("**/about")
    page.check(f"#english-{english}")
    page.fill("#first-language", language)
    page.fill("#years", years)
    page.click("#about-submit")
    page.wait_for_url("**/write")
    return page.url.split("/w/")[1].split("/")[0]


def wait_saved(page, revision: int) -> None:
    page.wait_for_function("(n) => document.getElementById('autosave-status').textContent.includes('(revision ' + n + ')')",
                           arg=revision, timeout=20_000)


def submit(page, name: str, publication: str) -> str:
    page.click("#to-submit")
    page.wait_for_url("**/submit")
    page.check("#attest")
    page.fill("#attestation-name", name)
    page.check(f"#pub-{publication}")
    page.click("#submit")
    page.wait_for_url("**/done")
    return page.inner_text("#done-fingerprint")


@pytest.mark.slow
def test_two_writers_autosave_submit_import_and_fingerprint_only_export(browser,  # noqa: F811
        tmp_path, data_dir, liang_dir):
    runner = CliRunner()
    path = tmp_path / "ws"
    r = runner.invoke(cli, ["import", "fastdetectgpt", str(data_dir / "fastdetectgpt"), "--sets", "writing_gpt2-xl",
                            "--pairs", "6", "-w", str(path), "-q"])  # arm A (pre-2020) and arm C beside arm B
    assert r.exit_code == 0, r.output
    with open_store(path) as db:
        (inv1, tok1), (inv2, tok2) = store.create_invitations(db, PROMPT, register="casual", count=2)
    essays = [t for t in liang_texts(liang_dir, "CollegeEssay_real_70") if len(t.split()) >= 420]
    text1 = first_words(essays[0], 360)
    typed2, pasted2 = first_words(essays[1], 20), first_words(" ".join(essays[1].split()[20:]), 320)
    srv = ServerThread(create_app(path)).start()
    try:
        # writer 1: types a first paragraph key by key (autosave after the pause), then the rest
        ctx1 = browser.new_context()
        p1 = ctx1.new_page()
        assert onboard(p1, srv.url, tok1, english="native", language="English", years="22") == inv1
        assert p1.inner_text("#autosave-status") == "not saved yet"
        first = first_words(text1, 25)
        p1.click("#draft")
        p1.keyboard.type(first)
        wait_saved(p1, 1)
        assert p1.inner_text("#word-count") == str(words(first))
        rest = text1.split()[25:]
        for n, chunk in enumerate((rest[:110], rest[110:220], rest[220:]), start=2):
            p1.keyboard.insert_text(" " + " ".join(chunk))
            wait_saved(p1, n)
        assert "4 revisions" in p1.inner_text("#evidence-line")
        fp1 = submit(p1, "First Writer", "full")
        assert fp1 == fingerprint(text1)
        assert p1.inner_text("#done-publication") == "full"

        # writer 2: types, then pastes a block from the clipboard, and keeps the text private
        ctx2 = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
        p2 = ctx2.new_page()
        assert onboard(p2, srv.url, tok2, english="non-native", language="Portuguese", years="8") == inv2
        p2.click("#draft")
        p2.keyboard.type(typed2)
        p2.evaluate("(t) => navigator.clipboard.writeText(t)", " " + pasted2)
        p2.keyboard.press("Control+V")
        wait_saved(p2, 2)
        assert p2.input_value("#draft") == typed2 + " " + pasted2
        ev = p2.inner_text("#evidence-line")
        assert "1 large insertion (320 words)" in ev, ev
        # writer 2 cannot open writer 1's draft, in the browser either
        p2.goto(f"{srv.url}/w/{inv1}/write")
        assert p2.inner_text("#error-message") == "no such draft"
        p2.goto(f"{srv.url}/w/{inv2}/write")
        assert p2.input_value("#draft") == typed2 + " " + pasted2  # the saved draft comes back
        fp2 = submit(p2, "Second Writer", "fingerprint_only")
        text2 = typed2 + " " + pasted2
        assert fp2 == fingerprint(text2)
        ctx1.close()
        ctx2.close()

        # the organiser imports while the app keeps serving
        r = runner.invoke(cli, ["import", "arm-b", "-w", str(path)])
        assert r.exit_code == 0, r.output
        assert "1 of 2 texts are fingerprint-only" in r.output
    finally:
        srv.stop()

    with Workspace(path, read_only=True) as ws:
        docs = {d["doc_id"]: d for d in ws.published_documents("WHERE arm = 'B'")}
        stored = dict(ws.query("SELECT doc_id, text FROM documents WHERE arm = 'B'"))
    d1, d2 = docs[f"arm-b/{inv1}"], docs[f"arm-b/{inv2}"]
    assert (d1["label"], d1["arm"], d1["subgroup"], d1["text"]) == ("human", "B", "native volunteers", text1)
    assert d1["tags"] == {"register": "casual", "english": "native", "first_language": "english",
                          "years_writing_english": "20+"}
    assert d2["tags"] == {"register": "casual", "english": "non-native", "first_language": "portuguese",
                          "years_writing_english": "5-9"}
    assert d2["subgroup"] == "non-native volunteers" and d2["text"] is None and d2["fingerprint_only"]
    assert stored[f"arm-b/{inv2}"] == text2  # kept for scoring
    assert d1["text_sha256"] == fp1 and d2["text_sha256"] == fp2
    ev2 = d2["provenance"]["process_evidence"]
    assert [x["words"] for x in ev2["large_insertions"]] == [320] and ev2["revisions"] == 2
    assert d1["provenance"]["process_evidence"]["revisions"] == 4

    out = tmp_path / "out"
    for args in (["protocol", "commit", str(PROTOCOL), "-w", str(path)],
                 ["evaluate", "-w", str(path), "-p", str(PROTOCOL), "--out", str(out / "run"), "-q"],
                 ["export", "scores", "--out", str(out / "scores.csv"), "-w", str(path)],
                 ["export", "scores", "--out", str(out / "scores.parquet"), "-w", str(path)],
                 ["write", "export", "-w", str(path), "--out", str(out / "arm-b.jsonl")],
                 ["report", "-w", str(path), "--out", str(out / "site")]):
        r = runner.invoke(cli, args)
        assert r.exit_code == 0, (args, r.output)
    secret = sentences(text2)
    assert len(secret) >= 10
    assert _files_hold(out, secret) == []
    assert _files_hold(out / "arm-b.jsonl", sentences(text1)[:3])  # the grep finds text that is there
    res = json.loads((out / "run" / "results.json").read_text(encoding="utf-8"))
    slices = {(r["slice_type"], r["slice"]) for r in res["table2"]}
    assert {("subgroup", "native volunteers"), ("subgroup", "non-native volunteers"), ("arm", "A")} <= slices
