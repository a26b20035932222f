"""Acceptance in real headless Chromium (Playwright driving Debian's chromium): every page of
the report of the Liang corpus run and both HumanizerBench cycles loads with no console
error and no request leaving the machine; tables and pictures are present; screenshot."""

from __future__ import annotations

import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlparse

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *a):  # keep the test output clean
        pass


@pytest.fixture()
def served(site: Path):
    """The site on a local HTTP server bound to 127.0.0.1 (so every request passes the router)."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/"
    srv.shutdown()
    srv.server_close()


#: One round trip per page: headings, tables (header cells, captions), images (natural width).
STATS = """() => ({
  h1: document.querySelectorAll('main h1').length,
  tables: [...document.querySelectorAll('table')].map(t => [t.querySelectorAll('thead th').length,
                                                           t.querySelectorAll('caption').length]),
  imgs: [...document.images].map(i => [i.getAttribute('src'), i.naturalWidth]),
  leaderboard_rows: document.querySelectorAll('#leaderboard table tbody tr').length,
})"""


def _local(url: str) -> bool:
    u = urlparse(url)
    return u.scheme in ("file", "data", "about") or (u.scheme in ("http", "https") and u.hostname == "127.0.0.1")


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_every_page_in_headless_chromium(site: Path, served: str, tmp_path: Path):
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium; .ci/run does)")
    pages = sorted(site.glob("*.html"))
    assert len(pages) >= 18
    problems: list[str] = []
    requested: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        ctx = browser.new_context(viewport={"width": 1280, "height": 900}, java_script_enabled=False)

        def route(r):
            requested.append(r.request.url)
            if _local(r.request.url):
                r.continue_()
            else:
                problems.append(f"external request {r.request.url}")
                r.abort()

        ctx.route("**/*", route)
        page = ctx.new_page()
        page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: problems.append(f"failed {r.url}: {r.failure}"))
        loaded_imgs = 0
        for f in pages:
            resp = page.goto(served + f.name, wait_until="load")
            assert resp is not None and resp.ok, f.name
            st = page.evaluate(STATS)
            assert st["h1"] == 1, f.name
            assert all(th > 0 and cap == 1 for th, cap in st["tables"]), (f.name, st["tables"])
            sizes = st["imgs"]
            assert all(w > 0 for _, w in sizes), (f.name, sizes)
            loaded_imgs += len(sizes)
            if f.stem == "run-adhoc":
                assert len(st["tables"]) >= 5, "run page tables"
                assert len(sizes) >= 3, "run page pictures"
                # the native/non-native gap is on the first screen
                box = page.locator("#gap").bounding_box()
                assert box is not None and box["y"] < 900
                page.screenshot(path=str(tmp_path / "run.png"))
            if f.stem == "cycle-july-2026":
                assert st["leaderboard_rows"] == 13
                page.screenshot(path=str(tmp_path / "cycle.png"), full_page=True)
        browser.close()
    assert not problems, problems[:10]
    assert loaded_imgs >= 3 + 3 + 2
    assert all(_local(u) for u in requested)
    assert sum(u.endswith(".svg") for u in requested) == loaded_imgs and any(u.endswith(".css") for u in requested)
    assert (tmp_path / "run.png").stat().st_size > 10_000 and (tmp_path / "cycle.png").stat().st_size > 10_000
