"""The leaderboard app's request handling over real HTTP (uvicorn on 127.0.0.1, httpx):
authorisation between teams, upload caps enforced while reading, one-line refusals, rate
limits, CSRF on the page forms, and no path from a request to the file system. The board
behind it is a stand-in with the contract's methods (tests/leaderboard/fake_board.py)."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.leaderboard.fake_board import FakeBoard
from tests.rubric.rubric_helpers import HTML, ServerThread, hidden
from tests.rubric.test_limits import _stream
from veribench.errors import InputError
from veribench.leaderboard import receipts
from veribench.leaderboard.app import create_app
from veribench.leaderboard.limits import Limits, RateLimiter
from veribench.leaderboard.service import BoardError

TEXTS = [{"id": f"t{i}", "text": f"text number {i}"} for i in range(6)]


def preds(scores: dict[str, float]) -> bytes:
    return json.dumps([{"id": k, "score": v} for k, v in scores.items()]).encode()


#: A full, valid predictions.json for TEXTS (RAID's format).
FULL = preds({t["id"]: 0.5 for t in TEXTS})


def upload(client: httpx.Client, token: str, body: bytes, **extra) -> httpx.Response:
    return client.post("/submissions", headers={"authorization": f"Bearer {token}"},
                       files={"predictions": ("predictions.json", body, "application/json")}, **extra)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def served():
    started = []

    def start(board: FakeBoard, **kw):
        srv = ServerThread(create_app(board, **kw)).start()
        started.append(srv)
        return srv, httpx.Client(base_url=srv.url, timeout=30)

    yield start
    for s in started:
        s.stop()


def test_three_teams_each_reach_only_their_own_submissions(served):
    board = FakeBoard(TEXTS)
    tokens = {name: board.add_team(name) for name in ("alpha", "beta", "gamma")}
    srv, c = served(board)
    ids = {}
    for name, tok in tokens.items():
        r = upload(c, tok, FULL)
        assert r.status_code == 201, r.text
        assert r.json()["team"] == name
        ids[name] = r.json()["submission_id"]
    # every receipt holds offline against the board's public key, and only unaltered
    pem = c.get("/public-key").text
    for name, tok in tokens.items():
        (sub,) = c.get("/submissions", headers={"authorization": f"Bearer {tok}"}).json()["submissions"]
        receipts.check_receipt(sub, pem)
        with pytest.raises(InputError, match="signature"):
            receipts.check_receipt({**sub, "team": "alpha" if name != "alpha" else "beta"}, pem)
    for name, tok in tokens.items():
        auth = {"authorization": f"Bearer {tok}"}
        mine = c.get("/submissions", headers=auth).json()
        assert mine["team"] == name and [s["submission_id"] for s in mine["submissions"]] == [ids[name]]
        assert c.get(f"/submissions/{ids[name]}", headers=auth).json()["team"] == name
        for other, sid in ids.items():
            if other != name:
                r = c.get(f"/submissions/{sid}", headers=auth)
                assert r.status_code == 404 and r.json() == {"error": "no such submission",
                                                             "field": "submission_id", "record": None}
                assert other not in r.text
    # texts need a token, and carry no labels
    assert c.get("/texts").status_code == 401
    assert c.get("/texts", headers={"authorization": "Bearer wrong"}).status_code == 401
    got = c.get("/texts", headers={"authorization": f"Bearer {tokens['alpha']}"})
    assert got.status_code == 200 and [json.loads(x) for x in got.text.splitlines()] == TEXTS
    assert got.headers["content-type"] == "application/x-ndjson"
    # the JSON API never takes the page cookie, and a missing token is a 401 naming the header
    r = c.get("/submissions")
    assert r.status_code == 401 and "Authorization: Bearer" in r.json()["error"]
    assert r.headers["www-authenticate"] == "Bearer"


def test_bad_predictions_are_refused_with_one_line_naming_id_and_field(served):
    board = FakeBoard(TEXTS)
    tok = board.add_team("alpha")
    srv, c = served(board, limits=Limits(submissions=RateLimiter(600)))  # refusals count too
    r = upload(c, tok, preds({"t0": 0.1, "nope": 0.2}))
    assert r.status_code == 400
    e = r.json()
    assert e["field"] == "id" and "'nope'" in e["record"] and "\n" not in e["error"]
    assert "predictions.json" in e["error"] and "'nope'" in e["error"] and "'id'" in e["error"]
    rows = [{"id": t["id"], "score": 0.5} for t in TEXTS]
    for bad, field, named in [
        ([*rows[:1], {"id": "t1", "score": 1e999}, *rows[2:]], "score", "'t1'"),  # overflows to infinity
        ([*rows[:1], {"id": "t1", "score": "0.5"}, *rows[2:]], "score", "'t1'"),
        ([*rows[:1], {"id": "t1", "score": None}, *rows[2:]], "score", "'t1'"),
        ([*rows, {"id": "t2", "score": 0.1}], "id", "'t2'"),  # twice
        (rows[:-1], "id", "'t5'"),  # missing
        ([*rows[:1], {"id": "t1", "score": 0.5, "label": "ai"}, *rows[2:]], "label", "'t1'"),
    ]:
        r = upload(c, tok, json.dumps(bad).replace('"score": Infinity', '"score": 1e999').encode())
        e = r.json()
        assert r.status_code == 400 and e["field"] == field and named in e["error"], (bad, e)
        assert "\n" not in e["error"] and e["error"].startswith("file predictions.json, record ")
    # no predictions field, a text where a file belongs, an unknown format: one line each, field named
    auth = {"authorization": f"Bearer {tok}"}
    r = c.post("/submissions", headers=auth, files={"metadata": ("m.json", b"{}")})
    assert r.status_code == 400 and r.json()["field"] == "predictions"
    r = c.post("/submissions", headers=auth, data={"predictions": "[]"}, files={"x": ("x", b"")})
    assert r.status_code == 400 and r.json()["field"] == "predictions"
    r = c.post("/submissions", headers=auth, data={"format": "csv"},
               files={"predictions": ("p.json", FULL)})
    assert r.status_code == 400 and r.json()["field"] == "format"
    r = c.post("/submissions", headers={**auth, "content-type": "multipart/form-data; boundary=zz"},
               content=b"--zz\r\ngarbage")
    assert r.status_code == 400 and "\n" not in r.json()["error"]
    # a field sent twice (two prediction files, two formats): which would count? refused, named
    for files, data in (([("predictions", ("a.json", FULL)), ("predictions", ("b.json", preds({"t0": 1})))], None),
                        ([("predictions", ("a.json", FULL))], {"format": ["raid", "veribench"]})):
        r = c.post("/submissions", headers=auth, files=files, data=data)
        e = r.json()
        assert r.status_code == 400 and e["error"].endswith("more than once") and e["field"] in ("predictions",
                                                                                                 "format"), e
    assert board.stored == []


def _post_streaming(port: int, token: str, *, offered: int, chunked: bool) -> tuple[int, int]:
    """POST ``offered`` bytes to /submissions while watching for the answer: (status, bytes sent)."""
    head = f"Authorization: Bearer {token}\r\nContent-Type: multipart/form-data; boundary=zz\r\n"
    status, _, sent = _stream(port, "/submissions", chunked=chunked, offered=offered, headers=head)
    return status, sent


def test_uploads_over_the_cap_are_refused_while_reading(served):
    board = FakeBoard(TEXTS)
    tok = board.add_team("alpha")
    cap = 256 * 1024
    srv, c = served(board, limits=Limits(max_upload=cap))
    offered = 64 * 1024 * 1024
    # a declared length over the cap: refused before a byte of the body is sent
    status, sent = _post_streaming(srv.port, tok, offered=offered, chunked=False)
    assert status == 413 and sent < offered // 4
    # chunked, no length: refused once the bytes received pass the cap, long before the end
    status, sent = _post_streaming(srv.port, tok, offered=offered, chunked=True)
    assert status == 413 and sent < offered // 4
    r = upload(c, tok, b"[" + b" " * cap + b"]")
    assert r.status_code == 413 and r.json()["error"] == f"the request body is larger than {cap} bytes; nothing " \
                                                         "was stored"
    assert board.stored == [] and board.calls == []
    assert upload(c, tok, FULL).status_code == 201  # within the cap: taken


def test_rate_limits_answer_429_with_retry_after(served):
    clock = Clock()
    board = FakeBoard(TEXTS)
    tok = board.add_team("alpha")
    other = board.add_team("beta")
    lim = Limits(submissions=RateLimiter(2, burst=2, what="submissions", clock=clock),
                 signins=RateLimiter(3, burst=3, what="failed sign-ins", clock=clock),
                 requests=RateLimiter(600, burst=40, clock=clock))
    srv, c = served(board, limits=lim)
    body = FULL
    assert [upload(c, tok, body).status_code for _ in range(3)] == [201, 201, 429]
    r = upload(c, tok, body)
    assert r.status_code == 429 and r.headers["retry-after"] == "30" and "submissions" in r.json()["error"]
    assert upload(c, other, body).status_code == 201  # per team
    clock.t += 30  # one token back (2 a minute)
    assert [upload(c, tok, body).status_code for _ in range(2)] == [201, 429]
    # failed sign-ins: three wrong tokens, then even the right one is refused unseen
    bad = [c.get("/submissions", headers={"authorization": f"Bearer wrong{i}"}).status_code for i in range(4)]
    assert bad == [401, 401, 401, 429]
    r = c.get("/submissions", headers={"authorization": f"Bearer {tok}"})
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    clock.t += 60
    assert c.get("/submissions", headers={"authorization": f"Bearer {tok}"}).status_code == 200
    # every request, per address
    codes = [c.get("/board").status_code for _ in range(45)]
    assert codes[-1] == 429 and 200 in codes
    assert len(board.stored) == 4


def test_rate_limiter_matches_a_plain_token_bucket_loop():
    """RateLimiter against a token bucket written as a plain loop over 1-second steps."""
    clock = Clock()
    lim = RateLimiter(12, burst=3, clock=clock)  # 0.2 tokens a second
    tokens, got, want = 3.0, [], []
    for step in range(120):
        for _ in range(step % 3):
            try:
                lim.take("k")
                got.append(True)
            except Exception:
                got.append(False)
            if tokens >= 1:
                tokens -= 1
                want.append(True)
            else:
                want.append(False)
        clock.t += 1
        tokens = min(3.0, tokens + 0.2)
    assert got == want and 24 <= sum(got) <= 27  # 3 at once, then about 0.2 a second for 120 s
    with pytest.raises(ValueError):
        RateLimiter(0)


def test_page_forms_need_the_csrf_token(served):
    board = FakeBoard(TEXTS)
    tok = board.add_team("alpha")
    srv, c = served(board)
    page = c.get("/login", headers=HTML)
    csrf = hidden(page.text, "csrf_token")
    r = c.post("/login", data={"token": tok}, headers=HTML)  # no CSRF token: refused, not signed in
    assert r.status_code == 403 and "CSRF" in r.text
    r = c.post("/login", data={"token": tok, "csrf_token": csrf + "x"}, headers=HTML)
    assert r.status_code == 403
    assert c.get("/team", headers=HTML, follow_redirects=False).headers["location"] == "/login"
    r = c.post("/login", data={"token": tok, "csrf_token": csrf}, headers=HTML, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/team"
    team_page = c.get("/team", headers=HTML)
    assert team_page.status_code == 200 and "alpha" in team_page.text
    csrf = hidden(team_page.text, "csrf_token")
    files = {"predictions": ("predictions.json", FULL, "application/json")}
    r = c.post("/team/submit", files=files, headers=HTML)
    assert r.status_code == 403 and "CSRF token is missing or wrong" in r.text and board.stored == []
    r = c.post("/team/submit", files=files, data={"csrf_token": "é"}, headers=HTML)
    assert r.status_code == 403 and board.stored == []
    r = c.post("/team/submit", files=files, data={"csrf_token": csrf}, headers=HTML)
    assert r.status_code == 201 and "receipt" in r.text and len(board.stored) == 1
    # the API never takes the cookie; the pages never take a Bearer header
    assert c.get("/submissions").status_code == 401
    fresh = httpx.Client(base_url=srv.url)
    assert fresh.get("/team", headers={**HTML, "authorization": f"Bearer {tok}"},
                     follow_redirects=False).status_code == 303
    # sign-out needs the token too, and ends the session on the server
    assert c.post("/logout", data={}, headers=HTML).status_code == 403
    r = c.post("/logout", data={"csrf_token": csrf}, headers=HTML, follow_redirects=False)
    assert r.status_code == 303
    assert c.get("/team", headers=HTML, follow_redirects=False).status_code == 303


@pytest.mark.parametrize("path", [
    "/static/../../../../etc/passwd", "/static/..%2f..%2f..%2fetc%2fpasswd", "/static/%2fetc%2fpasswd",
    "/submissions/..%2f..%2f..%2fetc%2fpasswd", "/submissions/%2fetc%2fpasswd", "/submissions/board.sqlite",
    "/submissions/%00", "/submissions/a%00b", "/static/board.css%00", "//etc/passwd", "/texts/../../etc/passwd",
    "/%2e%2e/%2e%2e/etc/passwd", "/static/board.css/..%2f..%2fapp.py",
])
def test_no_request_reaches_a_file_path(served, path):
    board = FakeBoard(TEXTS)
    tok = board.add_team("alpha")
    srv, c = served(board)
    r = c.get(path, headers={"authorization": f"Bearer {tok}"})
    assert r.status_code in (400, 404), (path, r.status_code)
    assert "root:" not in r.text and "import" not in r.text and "Traceback" not in r.text
    assert r.headers["content-type"].startswith("application/json") and "\n" not in r.json()["error"]


def test_upload_file_names_are_never_read(served, tmp_path, monkeypatch):
    """A hostile upload name (../, absolute, NUL) changes nothing on disk: the name is never used."""
    monkeypatch.chdir(tmp_path)
    board = FakeBoard(TEXTS)
    tok = board.add_team("alpha")
    srv, c = served(board)
    for name in ("../../evil.json", "/tmp/evil.json", "evil\x00.json", str(tmp_path / "evil.json")):
        r = c.post("/submissions", headers={"authorization": f"Bearer {tok}"},
                   files={"predictions": (name, FULL, "application/json")})
        assert r.status_code == 201, r.text
    assert list(tmp_path.iterdir()) == [] and not (tmp_path.parent / "evil.json").exists()


def test_behind_a_proxy_path_and_the_boards_refusals(served):
    """--root-path: pages, links, redirects and the form work below the prefix; a refusal of
    the board's state (its submission limit, not launched) is one line, 409, nothing stored."""
    board = FakeBoard(TEXTS)
    tok = board.add_team("alpha")
    srv, c = served(board, root_path="/lb")
    page = c.get("/lb/", headers=HTML)
    assert page.status_code == 200 and 'href="/lb/static/board.css"' in page.text and 'href="/lb/login"' in page.text
    assert c.get("/lb/static/board.css").headers["content-type"].startswith("text/css")
    login = c.get("/lb/login", headers=HTML)
    r = c.post("/lb/login", data={"token": tok, "csrf_token": hidden(login.text, "csrf_token")}, headers=HTML,
               follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/lb/team"
    assert "path=/lb" in r.headers["set-cookie"].lower() and "samesite=strict" in r.headers["set-cookie"].lower()
    assert c.get("/lb/team", headers=HTML).status_code == 200

    def over_limit(*a, **k):
        raise BoardError("team alpha has used its 5 submissions")

    board.submit = over_limit  # type: ignore[method-assign]
    r = c.post("/lb/submissions", headers={"authorization": f"Bearer {tok}"},
               files={"predictions": ("p.json", FULL)})
    assert r.status_code == 409 and r.json() == {"error": "team alpha has used its 5 submissions", "field": None,
                                                 "record": None}
    board.commitment = lambda: (_ for _ in ()).throw(BoardError("board x is not launched yet"))  # type: ignore
    r = c.get("/lb/commitment")
    assert r.status_code == 409 and r.json()["error"] == "board x is not launched yet"


def test_hostile_json_is_refused_over_http_in_one_line(served):
    """Deep nesting (a RecursionError in the parser) and a 400-digit integer score (an
    OverflowError in float()), in predictions.json and in metadata.json: each a 400 with one
    line naming the file (and the record and field where there is one), nothing stored."""
    board = FakeBoard(TEXTS)
    tok = board.add_team("alpha")
    srv, c = served(board, limits=Limits(submissions=RateLimiter(600)))
    rows = [{"id": t["id"], "score": 0.5} for t in TEXTS]
    huge = json.dumps([*rows[:1], {"id": "t1", "score": 10 ** 400}, *rows[2:]]).encode()
    cases = [(b"[" * 100000, None, None, None), (b"[" * 100000 + b"]" * 100000, None, None, None),
             (huge, None, "score", "'t1'"),
             (FULL, b'{"additional_metadata": ' + b"{\"a\": " * 5000 + b"1" + b"}" * 5000 + b"}", None, None),
             (FULL, b"[" * 100000, None, None)]
    for body, meta, field, named in cases:
        files = {"predictions": ("predictions.json", body, "application/json")}
        if meta is not None:
            files["metadata"] = ("metadata.json", meta, "application/json")
        r = c.post("/submissions", headers={"authorization": f"Bearer {tok}"}, files=files)
        e = r.json()
        assert r.status_code == 400, (body[:30], meta and meta[:30], r.text[:200])
        assert "\n" not in e["error"] and e["field"] == field, e
        assert e["error"].startswith("file metadata.json" if meta else "file predictions.json"), e
        assert named is None or named in e["error"]
    assert board.stored == []
