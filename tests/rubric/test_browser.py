"""End to end in real headless Chromium (Playwright driving Debian's chromium): two editors
read the same outputs through the login form and the five-step pages, one pair disagrees by
2, the server restarts, the third read appears for a third editor, and ratings.csv and the
aggregates match values computed by hand."""

from __future__ import annotations

import csv
import io
import json
import shutil

import httpx
import pytest

from tests.rubric.rubric_helpers import ServerThread, real_pairs, words
from veribench.rubric import store
from veribench.rubric.app import create_app
from veribench.store import Workspace

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not shutil.which(CHROMIUM):
        pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium; .ci/run does)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def sign_in(browser, url: str, token: str):
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(f"{url}/assignments")
    assert page.url.endswith("/login")  # anonymous: sent to the login form
    page.fill("#token", token)
    page.click("#sign-in")
    page.wait_for_url(f"{url}/assignments")
    return ctx, page


def read(page, url: str, bid: str, *, claims: list[str], found: list[int], score: int, marks: list[str]) -> None:
    """One reading through the app's pages, in the rubric's order."""
    page.goto(f"{url}/assignments")
    page.click(f"a[href='/read/{bid}']")
    assert page.locator("#rating-form").count() == 0  # step 1: the output is not shown yet
    page.fill("#claims", "\n".join(claims))
    page.click("#save-claims")
    page.wait_for_selector("#rating-form")
    assert "never scored" in page.inner_text("#readability")
    for i in found:
        page.check(f"#found-{i}")
    for m in marks:
        page.check(f"input[name=mark][value='{m}']")
    page.check(f"#score-{score}")
    page.click("#submit-reading")
    page.wait_for_selector("#done-score")
    assert page.inner_text("#done-score") == str(score)


@pytest.mark.slow
def test_two_editors_third_read_export_and_aggregates(browser, tmp_path, july_tests):
    from typer.testing import CliRunner

    from veribench.cli.main import app as cli

    path = tmp_path / "ws"
    pairs = real_pairs(july_tests, [("humbot", 2), ("phrasly", 1)])
    with Workspace(path) as ws:
        store.add_pairs(ws, pairs)
        tok = {e: store.add_editor(ws, e) for e in ("alice", "bob")}
        store.ensure_assignments(ws)
        tok["carol"] = store.add_editor(ws, "carol")
        bid = dict(store.db(ws).query("SELECT pair_key, blind_id FROM rubric_items"))
        sents = {k: json.loads(s) for k, s in store.db(ws).query("SELECT pair_key, output_sentences FROM rubric_items")}
    x1, x2, y = (p.pair_key for p in pairs)
    X1, X2, Y = bid[x1], bid[x2], bid[y]

    srv = ServerThread(create_app(path)).start()
    try:
        actx, alice = sign_in(browser, srv.url, tok["alice"])
        bctx, bob = sign_in(browser, srv.url, tok["bob"])
        listed = sorted(a.get_attribute("href") for a in alice.locator("a.blind-id").all())
        assert listed == sorted(f"/read/{b}" for b in (X1, X2, Y))
        read(alice, srv.url, X1, claims=["c1", "c2", "c3"], found=[0, 1, 2], score=4,
             marks=["0:synonym_misfire", "1:fragment_run_on"])
        read(bob, srv.url, X1, claims=["c1", "c2"], found=[0], score=3, marks=["0:synonym_misfire"])
        read(alice, srv.url, X2, claims=["c"], found=[0], score=4, marks=["2:broken_reference"])
        read(bob, srv.url, X2, claims=["c", "d"], found=[], score=2,  # a gap of 2
             marks=["0:invented_fact", "1:invented_fact", "1:changed_number_name_date"])
        # the third output through the JSON API (Bearer), to keep the browser part short
        for e in ("alice", "bob"):
            r = httpx.post(f"{srv.url}/api/read/{Y}", headers={"authorization": f"Bearer {tok[e]}"},
                           json={"claims": ["x"], "found": [0], "score": 3, "marks": []})
            assert r.status_code == 200, r.text
        actx.close()
        bctx.close()
    finally:
        srv.stop()

    srv = ServerThread(create_app(path)).start()  # restart: everything above must still be there
    try:
        cctx, carol = sign_in(browser, srv.url, tok["carol"])
        assert [a.get_attribute("href") for a in carol.locator("a.blind-id").all()] == [f"/read/{X2}"]
        read(carol, srv.url, X2, claims=["c"], found=[0], score=3, marks=["2:broken_reference", "0:invented_fact"])
        carol.goto(f"{srv.url}/read/{X1}")
        assert "no such assignment" in carol.inner_text("#error-message")
        actx, alice = sign_in(browser, srv.url, tok["alice"])
        alice.goto(f"{srv.url}/read/{X1}")
        assert alice.inner_text("#done-score") == "4" and alice.inner_text("#done-marks") == "2"
        cctx.close()
        actx.close()
    finally:
        srv.stop()

    out = tmp_path / "ratings.csv"
    runner = CliRunner()
    r = runner.invoke(cli, ["rate", "export", "-w", str(path), "--out", str(out)])
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    r = runner.invoke(cli, ["rate", "results", "-w", str(path), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)

    # ratings.csv, by hand: 7 readings; rows = marks + dropped claims, or 1 for a clean reading
    assert len(rows) == 2 + (1 + 1) + 1 + (2 + 3) + 2 + 1 + 1
    by_read = {}
    for row in rows:
        by_read.setdefault((row["blind_id"], row["editor"]), row)
    assert {k: (v["score"], v["third_read"], v["dropped_claims"], v["invented_facts"], v["changed_facts"])
            for k, v in by_read.items()} == {
        (X1, "alice"): ("4", "false", "0", "0", "0"), (X1, "bob"): ("3", "false", "1", "0", "0"),
        (X2, "alice"): ("4", "false", "0", "0", "0"), (X2, "bob"): ("2", "false", "2", "2", "1"),
        (X2, "carol"): ("3", "true", "0", "1", "0"), (Y, "alice"): ("3", "false", "0", "0", "0"),
        (Y, "bob"): ("3", "false", "0", "0", "0")}
    marks = sorted((r["blind_id"], r["editor"], r["mark_class"], r["sentence_text"], r["mark_counted"])
                   for r in rows if r["mark_source"] == "output")
    s1, s2 = sents[x1], sents[x2]
    assert marks == sorted([
        (X1, "alice", "synonym_misfire", s1[0], "true"), (X1, "alice", "fragment_run_on", s1[1], "false"),
        (X1, "bob", "synonym_misfire", s1[0], "true"),
        (X2, "alice", "broken_reference", s2[2], "true"), (X2, "bob", "invented_fact", s2[0], ""),
        (X2, "bob", "invented_fact", s2[1], ""), (X2, "bob", "changed_number_name_date", s2[1], ""),
        (X2, "carol", "broken_reference", s2[2], "true"), (X2, "carol", "invented_fact", s2[0], "")])
    assert sorted(r["sentence_text"] for r in rows if r["mark_source"] == "claim") == ["c", "c2", "d"]

    # aggregates, by hand. humbot: X1 scores 4,3 -> 3.5; X2 4,2,3 -> median 3; mean 3.25.
    t = {x["tool"]: x for x in doc["tools"]}
    hb, ph = t["humbot"], t["phrasly"]
    w = words(pairs[0].output_text) + words(pairs[1].output_text)
    assert hb["meaning_score_mean"] == 3.25 and hb["outputs_complete"] == 2
    # dropped: X1 reads 0,1 -> 0.5, X2 reads 0,2,0 -> 0; invented: X1 0,0 -> 0, X2 0,2,1 -> 1
    assert hb["dropped_claims_total"] == 0.5 and hb["invented_facts_total"] == 1.0
    assert hb["changed_facts_total"] == 0
    assert hb["third_reads"] == 1 and ph["third_reads"] == 0
    assert hb["output_words"] == w
    assert hb["errors_per_100_words"]["synonym_misfire"] == pytest.approx(100 / w)
    assert hb["errors_per_100_words"]["broken_reference"] == pytest.approx(100 / w)
    assert hb["errors_per_100_words"]["fragment_run_on"] == 0  # one reader of two: contested, not counted
    assert hb["errors_per_100_words_total"] == pytest.approx(200 / w)
    # alpha, ordinal, units (4,3) and (4,2): n_2=1, n_3=1, n_4=2 (n=4); delta(3,4)=2.25,
    # delta(2,4)=6.25, delta(2,3)=1; D_o = (2*2.25 + 2*6.25)/4 = 4.25;
    # D_e = 2*(1*1*1 + 1*2*6.25 + 1*2*2.25)/(4*3) = 3; alpha = 1 - 4.25/3 = -5/12
    assert hb["krippendorff_alpha_ordinal"] == pytest.approx(-5 / 12)
    assert ph["meaning_score_mean"] == 3.0 and ph["krippendorff_alpha_ordinal"] is None
    assert ph["errors_per_100_words_total"] == 0


@pytest.mark.slow
def test_score_cap_is_checked_in_the_browser_before_the_form_is_sent(browser, tmp_path, july_tests):
    """Served below a root path (as behind a proxy): the form states the rubric's cap, shows
    the live limit for the ticks and marks made, and Chromium refuses to send a score above
    it (no request leaves the page); a score within it is sent and stored."""
    path = tmp_path / "ws"
    db = store.open_rubric(path)
    store.add_pairs(db, real_pairs(july_tests, [("humbot", 1)]))
    tok = store.add_editor(db, "alice")
    store.ensure_assignments(db)
    db.close()
    srv = ServerThread(create_app(path, root_path="/rubric")).start()
    try:
        ctx = browser.new_context()
        page = ctx.new_page()
        page.goto(f"{srv.url}/rubric/assignments")
        assert page.url.endswith("/rubric/login")
        page.fill("#token", tok)
        page.click("#sign-in")
        page.wait_for_url(f"{srv.url}/rubric/assignments")
        page.click("a.blind-id")
        page.fill("#claims", "c1\nc2\nc3")
        page.click("#save-claims")
        page.wait_for_selector("#rating-form")
        assert "scores at most 3" in page.inner_text("#score-rule") and "at most 2" in page.inner_text("#score-rule")
        assert "3 dropped claims" in page.inner_text("#score-limit") and "at most 2" in page.inner_text("#score-limit")
        for i in range(3):
            page.check(f"#found-{i}")
        assert "at most 5" in page.inner_text("#score-limit")
        page.check("input[name=mark][value='0:invented_fact']")
        assert "1 invented fact" in page.inner_text("#score-limit") and "at most 3" in page.inner_text("#score-limit")
        assert "over-limit" in page.get_attribute("#score-label-5", "class")
        assert "over-limit" not in (page.get_attribute("#score-label-3", "class") or "")
        posts = []
        page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
        page.check("#score-5")
        page.click("#submit-reading")
        page.wait_for_timeout(500)
        assert posts == [] and page.locator("#rating-form").count() == 1  # blocked in the browser
        assert "at most 3" in page.eval_on_selector("#score-5", "el => el.validationMessage")
        db = store.open_rubric(path)
        assert db.query("SELECT count(*) FROM rubric_ratings") == [(0,)]
        db.close()
        page.uncheck("#found-2")  # now one dropped claim and one invented fact: at most 2
        assert "at most 2" in page.inner_text("#score-limit")
        page.check("#score-2")
        page.click("#submit-reading")
        page.wait_for_selector("#done-score")
        assert page.inner_text("#done-score") == "2" and page.inner_text("#done-dropped") == "1"
        assert len(posts) == 1 and posts[0].startswith(f"{srv.url}/rubric/read/")
        assert page.get_attribute("header a.brand", "href") == "/rubric/assignments"
        ctx.close()
    finally:
        srv.stop()
