"""The leaderboard's pages in real headless Chromium (Playwright driving Debian's chromium):
the public board, the sign-in form, the team page's upload form (CSRF token from the page)
and the receipt it shows; at 390 px wide no page scrolls sideways (a table scrolls inside its
own wrapper), and the pages load nothing but their own stylesheet from 127.0.0.1."""

from __future__ import annotations

import json
from urllib.parse import urlparse

from tests.leaderboard.fake_board import FakeBoard
from tests.leaderboard.test_app_http import FULL, TEXTS
from tests.rubric.rubric_helpers import ServerThread
from tests.rubric.test_browser import browser  # noqa: F401 - the module's Chromium fixture
from veribench.leaderboard import receipts
from veribench.leaderboard.app import create_app

#: At a phone's width: how wide the document is, and what sticks out beyond it outside a table's wrapper.
PHONE = """() => ({
  width: document.documentElement.scrollWidth,
  wide: [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > 391
          && !e.closest('.tablewrap')).slice(0, 5).map(e => e.tagName + ' ' + (e.textContent || '').slice(0, 60)),
})"""


def test_pages_sign_in_upload_and_fit_a_phone(browser, tmp_path):  # noqa: F811 - the imported fixture
    board = FakeBoard(TEXTS)
    tokens = {n: board.add_team(n) for n in ("alpha", "a-team-with-a-rather-long-name-0123456789", "gamma")}
    srv = ServerThread(create_app(board, title="detect-2027")).start()
    (tmp_path / "predictions.json").write_bytes(FULL)
    (tmp_path / "metadata.json").write_text(json.dumps({"detector_name": "x"}))
    requested: list[str] = []
    try:
        ctx = browser.new_context(viewport={"width": 390, "height": 844})
        ctx.on("request", lambda r: requested.append(r.url))
        page = ctx.new_page()
        page.goto(f"{srv.url}/")
        assert page.title() == "detect-2027"
        assert "only through the Ladder" in page.inner_text("#state")
        cells = page.locator("#scores tbody tr").all_inner_texts()
        assert len(cells) == 3 and all("null (no score released yet)" in c for c in cells)
        facts = {"board": page.evaluate(PHONE)}
        page.click("text=Team sign-in")
        page.fill("#token", "not-a-token")
        page.click("#sign-in")
        assert "That token is not valid." in page.inner_text("main")
        page.fill("#token", tokens["a-team-with-a-rather-long-name-0123456789"])
        page.click("#sign-in")
        page.wait_for_url(f"{srv.url}/team")
        assert page.inner_text("#team-name") == "a-team-with-a-rather-long-name-0123456789"
        assert page.locator("#no-submissions").count() == 1
        facts["team"] = page.evaluate(PHONE)
        page.set_input_files("#predictions", str(tmp_path / "predictions.json"))
        page.click("#send")
        page.wait_for_selector("#receipt")
        receipt = json.loads(page.inner_text("#receipt pre"))
        receipts.check_receipt(receipt, board.public_key_pem)  # the page shows the receipt as signed
        assert receipt["team"] == "a-team-with-a-rather-long-name-0123456789" and len(board.stored) == 1
        assert page.locator("#submissions tbody tr").count() == 1
        facts["receipt"] = page.evaluate(PHONE)
        # a bad file: the one line on a page, nothing stored
        (tmp_path / "bad.json").write_text(json.dumps([{"id": "t0", "score": "high"}]))
        page.set_input_files("#predictions", str(tmp_path / "bad.json"))
        page.click("#send")
        msg = page.inner_text("#error-message")
        assert "field 'score'" in msg and "'t0'" in msg and len(board.stored) == 1
        facts["error"] = page.evaluate(PHONE)
        page.goto(f"{srv.url}/team")
        page.click("text=Sign out")
        page.wait_for_url(f"{srv.url}/login")
        page.goto(f"{srv.url}/team")
        assert page.url == f"{srv.url}/login"  # the session ended on the server
        facts["login"] = page.evaluate(PHONE)
        ctx.close()
    finally:
        srv.stop()
    for name, st in facts.items():
        assert st["width"] <= 390 and not st["wide"], (name, st)
    assert all(urlparse(u).hostname == "127.0.0.1" for u in requested)
    assert any(u.endswith("/static/board.css") for u in requested)
