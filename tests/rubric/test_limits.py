"""Bounded work in both web apps (veribench.rubric.limits): one body-size cap enforced while
the body is read (a real server on 127.0.0.1 in its own process, an oversized body streamed
chunked and with a Content-Length, the server's peak RSS measured), and failed sign-ins
limited per address and per app (429 with Retry-After, the same answer for every guess)."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.rubric.rubric_helpers import HTML, free_port, hidden
from tests.rubric.write_helpers import PROMPT
from veribench.rubric import store as rating_store
from veribench.rubric.app import create_app as rating_app
from veribench.rubric.limits import FAILURES_PER_ADDRESS, MAX_BODY_BYTES, AttemptLimiter, TooManyAttempts
from veribench.rubric.write import store as write_store
from veribench.rubric.write.app import create_app as writing_app
from veribench.rubric.write.db import open_store
from veribench.store import Workspace

REPO = Path(__file__).resolve().parents[2]
#: What the client offers to send: 300 MB, the body that took the writing app to 670 MB RSS.
OFFERED = 300 * 1024 * 1024
#: Allowed growth of the server's peak RSS while refusing: the cap (0.7 MB) held twice (the
#: chunks and their join) plus uvicorn's 64 KiB read buffer and Python's allocator slack; an
#: app that buffered the body would grow by at least the bytes it read (tens of MB here).
RSS_BOUND = 24 * 1024 * 1024


def _serve(kind: str, path: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    code = textwrap.dedent(f"""
        import uvicorn
        from veribench.rubric{'.write' if kind == 'write' else ''}.app import create_app
        uvicorn.run(create_app({str(path)!r}), host="127.0.0.1", port={port}, log_level="warning")
    """)
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    t0 = time.time()
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/static/nothing", timeout=2)
            return proc, port
        except httpx.TransportError:
            assert proc.poll() is None and time.time() - t0 < 60, proc.stdout.read() if proc.poll() else "timeout"
            time.sleep(0.1)


def _kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} for {pid}")


def _stream(port: int, path: str, *, chunked: bool, offered: int = OFFERED,
            headers: str = "Content-Type: application/json\r\n") -> tuple[int, dict, int]:
    """POST up to ``offered`` bytes to ``path`` (with the extra header lines ``headers``) while
    watching for the answer; returns (status, JSON body, bytes of body sent before the answer
    came). The leaderboard's tests use it too."""
    s = socket.create_connection(("127.0.0.1", port))
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}"
    head += "Transfer-Encoding: chunked\r\n\r\n" if chunked else f"Content-Length: {offered}\r\n\r\n"
    s.sendall(head.encode())
    s.setblocking(False)
    piece = b"[" * 65536
    frame = b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece
    sent, pending, got, stopped = 0, b"", b"", False
    deadline = time.time() + 120
    try:
        while time.time() < deadline:
            want_write = sent < offered and not stopped
            r, w, _ = select.select([s], [s] if want_write else [], [], 1.0)
            if r:
                try:
                    data = s.recv(65536)
                except ConnectionResetError:
                    break
                if not data:
                    break
                got += data
                if b"\r\n\r\n" in got:
                    head_part, _, body = got.partition(b"\r\n\r\n")
                    length = [int(x.split(b":")[1]) for x in head_part.split(b"\r\n")
                              if x.lower().startswith(b"content-length:")]
                    if length and len(body) >= length[0]:
                        break
            elif w:
                pending = pending or frame
                try:
                    n = s.send(pending)
                except (BrokenPipeError, ConnectionResetError):
                    # the server refused and closed while we were still sending: what counts is
                    # what it took before (``sent``); its answer may still be read. (Counting this
                    # as "all sent" failed the test at random on a loaded machine.)
                    stopped = True
                    continue
                pending = pending[n:]
                sent += n
    finally:
        s.close()
    head_part, _, body = got.partition(b"\r\n\r\n")
    assert head_part, "no answer from the server"
    return int(head_part.split(b" ")[1]), json.loads(body), sent


@pytest.mark.parametrize("kind", ["write", "rate"])
def test_oversized_bodies_are_refused_while_read_with_bounded_memory(kind, tmp_path):
    path = tmp_path / "ws"
    if kind == "write":
        with open_store(path) as db:
            write_store.create_invitations(db, PROMPT, count=1)
        routes = ["/api/w/inv-x/revisions", "/w/inv-x/save", "/i/some-token", "/logout"]
    else:
        with Workspace(path) as ws:
            rating_store.add_editor(ws, "alice")
        routes = ["/api/read/x", "/login", "/read/x/rating", "/logout"]
    proc, port = _serve(kind, path)
    try:
        base = _kib(proc.pid, "VmHWM")
        for i, route in enumerate(routes):
            status, body, sent = _stream(port, route, chunked=i % 2 == 0)
            assert status == 413, (route, status, body)
            assert body == {"error": f"the request body is larger than {MAX_BODY_BYTES} bytes", "field": None}
            assert sent < OFFERED // 4, (route, sent)  # refused long before the body ended
        # a declared length over the cap is refused before any of the body is read
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(f"POST {routes[0]} HTTP/1.1\r\nHost: x\r\nContent-Length: {MAX_BODY_BYTES + 1}\r\n\r\n{{}}"
                      .encode())
            assert s.recv(65536).startswith(b"HTTP/1.1 413 ")
        growth = _kib(proc.pid, "VmHWM") - base
        assert growth < RSS_BOUND, f"peak RSS grew by {growth / 2**20:.1f} MiB"
        # the server still answers, and a body within the cap reaches the app as before
        r = httpx.post(f"http://127.0.0.1:{port}{routes[0]}", json={"text": "x" * 1000, "base": 0})
        assert r.status_code == 401  # not signed in: the app saw the request
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_body_at_the_cap_still_reaches_the_app(tmp_path):
    """The cap is the writing app's largest legitimate draft: a full-length draft of 4-byte
    characters sent as JSON escapes is within it, one byte more is not."""
    with open_store(tmp_path / "ws") as db:
        write_store.create_invitations(db, PROMPT, count=1)
        with TestClient(writing_app(db)) as c:
            ok = b" " * MAX_BODY_BYTES
            assert c.post("/api/w/inv-x/revisions", content=ok, headers={"content-type": "application/json"}
                          ).status_code == 401
            r = c.post("/api/w/inv-x/revisions", content=ok + b" ", headers={"content-type": "application/json"})
            assert r.status_code == 413 and r.json()["field"] is None


# -- sign-in attempts ------------------------------------------------------------------------
class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_the_limiter_counts_per_address_and_per_app_in_a_sliding_window():
    clock = Clock()
    lim = AttemptLimiter(per_address=3, per_app=5, window=60, clock=clock)
    for _ in range(3):
        lim.check("a")
        lim.fail("a")
        clock.t += 1
    with pytest.raises(TooManyAttempts) as e:
        lim.check("a")
    assert e.value.retry_after == 57  # the first failure (t=1000) leaves the window at t=1060; now 1003
    lim.check("b")  # another address is not blocked by a's failures
    lim.fail("b")
    lim.fail("c")
    with pytest.raises(TooManyAttempts):  # 5 failures in the app: every address waits
        lim.check("d")
    clock.t = 1061  # a keeps one failure in the window (t=1002), the app three
    lim.check("a")
    lim.check("d")


@pytest.fixture()
def rating_ws(tmp_path):
    path = tmp_path / "ws"
    with Workspace(path) as ws:
        tok = rating_store.add_editor(ws, "alice")
    return path, tok


def test_rating_login_guesses_are_limited_per_address(rating_ws):
    path, tok = rating_ws
    clock = Clock()
    app = rating_app(path, limiter=AttemptLimiter(per_address=5, per_app=50, window=60, clock=clock))
    with TestClient(app) as c:
        page = c.get("/login", headers=HTML)
        csrf = hidden(page.text, "csrf_token")
        answers = set()
        for i in range(5):
            r = c.post("/login", data={"token": f"guess-{i}", "csrf_token": csrf}, headers=HTML)
            assert r.status_code == 401
            answers.add(r.text.replace(csrf, ""))
        assert len(answers) == 1  # every wrong guess gets the same page
        # the sixth attempt is refused without being checked: even the right token
        r = c.post("/login", data={"token": tok, "csrf_token": csrf}, headers=HTML, follow_redirects=False)
        assert r.status_code == 429 and r.headers["retry-after"] == "60" and "Try again in 60 s" in r.text
        assert c.get("/api/assignments", headers={"authorization": f"Bearer {tok}"}).status_code == 429
        assert c.get("/api/assignments", headers={"authorization": "Bearer nope"}).json()["field"] is None
        clock.t += 61
        r = c.post("/login", data={"token": tok, "csrf_token": csrf}, headers=HTML, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/assignments"
        # a signed-in session is not a sign-in attempt: it keeps working while guesses are blocked
        for i in range(5):
            assert c.get("/api/assignments", headers={"authorization": f"Bearer wrong-{i}"}).status_code == 401
        assert c.get("/api/assignments", headers={"authorization": "Bearer wrong"}).status_code == 429
        assert c.get("/api/assignments").status_code == 200


def test_rating_guesses_from_many_addresses_meet_the_app_limit(rating_ws):
    path, tok = rating_ws
    lim = AttemptLimiter(per_address=20, per_app=30, window=60)
    codes = []
    for k in range(4):  # four clients (addresses), ten guesses each
        with TestClient(rating_app(path, limiter=lim), client=(f"10.0.0.{k}", 5000)) as c:
            codes += [c.get("/api/assignments", headers={"authorization": f"Bearer g{k}-{i}"}).status_code
                      for i in range(10)]
    assert codes.count(401) == 30 and codes.count(429) == 10 and codes[-10:] == [429] * 10


def test_writing_app_unknown_links_are_limited(tmp_path):
    with open_store(tmp_path / "ws") as db:
        [(inv, tok)] = write_store.create_invitations(db, PROMPT, count=1)
        clock = Clock()
        app = writing_app(db, limiter=AttemptLimiter(per_address=4, per_app=50, window=30, clock=clock))
        with TestClient(app) as c:
            page = c.get(f"/i/{tok}", headers=HTML)
            assert page.status_code == 200  # a real link is not a failure
            csrf = hidden(page.text, "csrf_token")
            for i in range(2):
                assert c.get(f"/i/guess-{i}", headers=HTML).status_code == 404
                assert c.post(f"/i/guess-{i}", data={"csrf_token": csrf}, headers=HTML).status_code == 404
            r = c.get(f"/i/{tok}", headers=HTML)
            assert r.status_code == 429 and r.headers["retry-after"] == "30"
            r = c.post(f"/i/{tok}", data={"csrf_token": csrf}, headers=HTML, follow_redirects=False)
            assert r.status_code == 429 and write_store.get_invitation(db, inv)["state"] == "invited"
            clock.t += 30
            r = c.post(f"/i/{tok}", data={"csrf_token": csrf}, headers=HTML, follow_redirects=False)
            assert r.status_code == 303 and r.headers["location"] == f"/w/{inv}"


def _cli_serve(args: list[str]) -> tuple[subprocess.Popen, str]:
    """``veribench rate|write serve`` (the real command) on 127.0.0.1 in its own process."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"}
    env.pop("FORWARDED_ALLOW_IPS", None)
    proc = subprocess.Popen([sys.executable, "-m", "veribench.cli.main", *args, "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    t0 = time.time()
    while True:
        try:
            httpx.get(url + "/static/nothing", timeout=2)
            return proc, url
        except httpx.TransportError:
            assert proc.poll() is None and time.time() - t0 < 60, proc.stdout.read() if proc.poll() else "timeout"
            time.sleep(0.2)


def _spoofed_guesses(url: str, path: str, n: int, **kw) -> list[int]:
    """``n`` wrong sign-in attempts, each claiming another client address in X-Forwarded-For."""
    with httpx.Client(base_url=url, timeout=10) as c:
        return [c.get(path.format(i=i), headers={"x-forwarded-for": f"10.{i // 250}.{i % 250}.7", **kw}).status_code
                for i in range(n)]


@pytest.mark.parametrize("kind", ["rate", "write"])
def test_spoofed_forwarded_for_from_loopback_is_one_address(kind, tmp_path, rating_ws):
    """Issue 24: uvicorn trusts X-Forwarded-For from 127.0.0.1 by default, so a local client
    claiming a new address per guess was never limited. Without --forwarded-allow-ips no
    header is read: 20 guesses (FAILURES_PER_ADDRESS), then 429 whatever address is claimed."""
    if kind == "rate":
        ws, _ = rating_ws
        path, auth = "/api/assignments", {"authorization": "Bearer wrong"}
    else:
        ws = tmp_path / "wws"
        with open_store(ws) as db:
            write_store.create_invitations(db, PROMPT, count=1)
        path, auth = "/i/guess-{i}", {}
    proc, url = _cli_serve([kind, "serve", "-w", str(ws)])
    try:
        codes = _spoofed_guesses(url, path, FAILURES_PER_ADDRESS + 5, **auth)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    wrong = 401 if kind == "rate" else 404
    assert codes == [wrong] * FAILURES_PER_ADDRESS + [429] * 5


def test_a_named_proxy_still_forwards_the_client_address(rating_ws):
    """With --forwarded-allow-ips naming the proxy (here 127.0.0.1) its X-Forwarded-For is the
    client address: 25 guesses from 25 claimed addresses are 25 addresses, none over its limit."""
    ws, _ = rating_ws
    proc, url = _cli_serve(["rate", "serve", "-w", str(ws), "--forwarded-allow-ips", "127.0.0.1"])
    try:
        codes = _spoofed_guesses(url, "/api/assignments", 25, authorization="Bearer wrong")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert codes == [401] * 25
