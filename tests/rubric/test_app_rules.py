"""The rating app's rules of issue 12, over HTTP: ASCII CSRF tokens (400, never 500), a
strictly typed JSON API, sign-out that revokes the session on the server, Secure cookies
and a root path for serving behind TLS, and the rubric's own score cap (one dropped claim
or invented fact: at most 3; two or more: at most 2), checked by the server on the form
and the JSON API alike."""

from __future__ import annotations

import re
import shutil

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.rubric.rubric_helpers import HTML, ServerThread, hidden, login, real_pairs
from veribench.rubric import rules, store
from veribench.rubric.app import create_app
from veribench.rubric.store import RatingError


@pytest.fixture(scope="module")
def template(tmp_path_factory, july_tests):
    path = tmp_path_factory.mktemp("rules") / "ws"
    db = store.open_rubric(path)
    store.add_pairs(db, real_pairs(july_tests, [("grammarly", 2), ("undetectable", 2)]))
    toks = {e: store.add_editor(db, e) for e in ("alice", "bob")}
    store.ensure_assignments(db)
    db.close()
    return path, toks


@pytest.fixture()
def setup(template, tmp_path):
    path, toks = template
    shutil.copytree(path, tmp_path / "ws")
    return tmp_path / "ws", toks


def bids(c, root: str = "") -> list[str]:
    return re.findall(r'href="[^"]*/read/(r-[a-z2-9]{10})"', c.get(f"{root}/assignments", headers=HTML).text)


def test_non_ascii_csrf_token_is_400_not_500(setup):
    path, toks = setup
    with TestClient(create_app(path), raise_server_exceptions=False) as c:
        r = c.get("/login", headers=HTML)
        r = c.post("/login", data={"token": toks["alice"], "csrf_token": "jeton-é-ü"}, headers=HTML)
        assert r.status_code == 400 and "not ASCII" in r.text
        login(c, toks["alice"])
        b = bids(c)[0]
        page = c.get(f"/read/{b}", headers=HTML)
        ft = hidden(page.text, "form_token")
        for tok in ("ключ", "x" * 42 + "é", "\u2028"):
            r = c.post(f"/read/{b}/claims", data={"claims": "a", "csrf_token": tok, "form_token": ft}, headers=HTML)
            assert r.status_code == 400 and "not ASCII" in r.text
            r = c.post(f"/read/{b}/claims", data={"claims": "a", "csrf_token": tok, "form_token": ft})
            assert r.status_code == 400 and r.json()["field"] == "csrf_token"
            r = c.post("/logout", data={"csrf_token": tok})
            assert r.status_code == 400
        # a header carrying non-ASCII bytes (latin-1 on the wire) on the cookie-authenticated JSON API
        r = c.post(f"/api/read/{b}", headers={"x-csrf-token": "t\xe9".encode("latin-1")}, json={"claims": ["a"], "score": 3})
        assert r.status_code == 400
        assert "claims" in c.get(f"/read/{b}", headers=HTML).text  # nothing was stored: still at step 1


@pytest.mark.parametrize("body,field", [
    ({"claims": ["a", "b"], "found": 5, "score": 3}, "found"),
    ({"claims": ["a", "b"], "found": [0, 1], "score": 5, "marks": 5}, "marks"),
    ({"claims": ["a"], "found": [0], "score": 5, "marks": [{"sentence_index": True, "class": "fragment_run_on"}]},
     "marks"),
    ({"claims": ["a"], "found": [True], "score": 5}, "found"),
    ({"claims": ["a"], "found": ["0"], "score": 5}, "found"),
    ({"claims": ["a"], "found": [0], "score": "5"}, "score"),
    ({"claims": ["a"], "found": [0], "score": 5.0}, "score"),
    ({"claims": ["a"], "found": [0], "score": True}, "score"),
    ({"claims": "a", "found": [0], "score": 5}, "claims"),
    ({"claims": [1], "found": [0], "score": 5}, "claims"),
    ({"claims": ["a"], "found": [0], "score": 5, "marks": [{"sentence_index": 0, "class": 3}]}, "marks"),
    ({"claims": ["a"], "found": [0], "score": 5, "marks": [{"sentence_index": 0, "class": "x", "extra": 1}]},
     "marks"),
    ({"claims": ["a"], "found": [0], "score": 5, "comment": "hi"}, "comment"),
    ({"claims": ["a"], "found": [0]}, "score"),
])
def test_json_api_is_strictly_typed(setup, body, field):
    path, toks = setup
    hb = {"authorization": f"Bearer {toks['bob']}"}
    with TestClient(create_app(path), raise_server_exceptions=False) as c:
        b = c.get("/api/assignments", headers=hb).json()["assignments"][0]["blind_id"]
        r = c.post(f"/api/read/{b}", headers=hb, json=body)
        assert r.status_code == 400, r.text
        assert r.json()["field"] == field and r.json()["error"].startswith(field)
        assert c.get("/api/assignments", headers=hb).json()["assignments"][0]["state"] == "claims"
        for raw in (b"[1, 2]", b"not json", b"5"):
            r = c.post(f"/api/read/{b}", headers={**hb, "content-type": "application/json"}, content=raw)
            assert r.status_code == 400 and "JSON object" in r.json()["error"]
        ok = c.post(f"/api/read/{b}", headers=hb, json={"claims": ["a"], "found": [0], "score": 5,
                                                         "marks": [{"sentence_index": 0, "class": "fragment_run_on"}]})
        assert ok.status_code == 200 and ok.json()["dropped_claims"] == 0


def test_logout_revokes_the_session_on_the_server(setup):
    path, toks = setup
    with TestClient(create_app(path)) as c:
        login(c, toks["alice"])
        stolen = dict(c.cookies)
        page = c.get("/assignments", headers=HTML)
        assert page.status_code == 200
        r = c.post("/logout", data={"csrf_token": hidden(page.text, "csrf_token")}, follow_redirects=False)
        assert r.status_code == 303
    # the copied cookie is refused afterwards, by this app and by a fresh one over the same store
    for app in (create_app(path), create_app(path)):
        with TestClient(app, cookies=stolen) as c2:
            r = c2.get("/assignments", headers=HTML, follow_redirects=False)
            assert r.status_code == 303 and r.headers["location"] == "/login"
            assert c2.get("/api/assignments").status_code == 401
    db = store.open_rubric(path)
    assert db.query("SELECT count(*) FROM rubric_sessions WHERE editor = 'alice' AND revoked_at IS NOT NULL") == [(1,)]
    db.close()
    # signing in again works, with a new session
    with TestClient(create_app(path)) as c:
        login(c, toks["alice"])
        assert c.get("/api/assignments").status_code == 200


def test_a_removed_or_expired_session_is_refused(setup):
    path, toks = setup
    with TestClient(create_app(path)) as c:
        login(c, toks["bob"])
        db = store.open_rubric(path)
        with db.transaction() as t:
            t.execute("UPDATE rubric_sessions SET expires_at = '2000-01-01T00:00:00+00:00'")
        db.close()
        assert c.get("/api/assignments").status_code == 401


def test_secure_cookies_and_root_path_over_a_real_server(setup):
    path, toks = setup
    srv = ServerThread(create_app(path, secure_cookies=True, root_path="/rubric")).start()
    try:
        with httpx.Client(base_url=srv.url) as c:
            r = c.get("/rubric/login", headers=HTML)
            assert r.status_code == 200
            assert 'href="/rubric/static/rubric.css"' in r.text and 'action="/rubric/login"' in r.text
            cookie = r.headers["set-cookie"]
            assert "secure" in cookie.lower() and "path=/rubric" in cookie.lower() and "samesite=strict" in cookie.lower()
            assert c.get("/rubric/static/rubric.css").status_code == 200
            # httpx keeps Secure cookies off plain http: hand the cookie over as a browser behind TLS would
            sess = r.cookies.get("vb_session")
            r = c.post("/rubric/login", data={"token": toks["alice"], "csrf_token": hidden(r.text, "csrf_token")},
                       headers={**HTML, "cookie": f"vb_session={sess}"}, follow_redirects=False)
            assert r.status_code == 303 and r.headers["location"] == "/rubric/assignments"
            sess = r.cookies.get("vb_session")
            page = c.get("/rubric/assignments", headers={**HTML, "cookie": f"vb_session={sess}"})
            assert page.status_code == 200 and re.search(r'href="/rubric/read/r-', page.text)
            assert 'action="/rubric/logout"' in page.text
            # a proxy that strips the prefix sends the bare path: served too, links still carry the prefix
            page = c.get("/assignments", headers={**HTML, "cookie": f"vb_session={sess}"})
            assert page.status_code == 200 and 'href="/rubric/assignments"' in page.text
            anon = c.get("/rubric/assignments", headers=HTML, follow_redirects=False)
            assert anon.status_code == 303 and anon.headers["location"] == "/rubric/login"
    finally:
        srv.stop()
    # the default: no Secure flag (plain http on a laptop), cookie path /
    with TestClient(create_app(path)) as c:
        cookie = c.get("/login", headers=HTML).headers["set-cookie"].lower()
        assert "secure" not in cookie and "path=/" in cookie


def _open_reading(c, b: str, claims: str) -> dict:
    page = c.get(f"/read/{b}", headers=HTML)
    c.post(f"/read/{b}/claims", data={"claims": claims, "csrf_token": hidden(page.text, "csrf_token"),
                                      "form_token": hidden(page.text, "form_token")}, headers=HTML)
    page = c.get(f"/read/{b}", headers=HTML)
    assert 'id="rating-form"' in page.text
    # the form states the rule before it accepts the reading, and loads the browser check
    assert rules.CONSISTENCY_RULE in page.text.replace("&#39;", "'") and 'src="/static/rubric.js"' in page.text
    return {"csrf_token": hidden(page.text, "csrf_token"), "form_token": hidden(page.text, "form_token")}


def test_score_cap_is_enforced_on_the_form_and_the_api(setup):
    path, toks = setup
    with TestClient(create_app(path)) as c:
        login(c, toks["alice"])
        b1, b2 = bids(c)[:2]
        form = _open_reading(c, b1, "one\ntwo\nthree")
        cases = [  # (found, marks, score refused, score accepted)
            (["0", "1"], [], "4", None),                                    # one dropped -> at most 3
            (["0", "1", "2"], ["0:invented_fact"], "4", None),             # one invented -> at most 3
            (["0"], [], "3", None),                                         # two dropped -> at most 2
            (["0", "1"], ["1:invented_fact"], "3", None),                   # one of each -> at most 2
            (["0", "1", "2"], ["0:invented_fact", "0:changed_qualifier"], "5", None),
        ]
        for found, marks, bad, _ in cases:
            r = c.post(f"/read/{b1}/rating", data={**form, "score": bad, "found": found, "mark": marks}, headers=HTML)
            assert r.status_code == 400 and "can be at most" in r.text and "Nothing stored was changed" in r.text
            j = c.post(f"/read/{b1}/rating", data={**form, "score": bad, "found": found, "mark": marks})
            assert j.status_code == 400 and j.json()["field"] == "score"
        # changed numbers are meaning faults but neither dropped nor added claims: no cap
        ok = c.post(f"/read/{b1}/rating", data={**form, "score": "4", "found": ["0", "1", "2"],
                                                "mark": ["0:changed_number_name_date"]}, headers=HTML)
        assert ok.status_code == 200 and 'id="done-score">4<' in ok.text
        # at the cap is accepted
        form = _open_reading(c, b2, "one\ntwo")
        ok = c.post(f"/read/{b2}/rating", data={**form, "score": "3", "found": ["0"]}, headers=HTML)
        assert ok.status_code == 200 and 'id="done-score">3<' in ok.text
    hb = {"authorization": f"Bearer {toks['bob']}"}
    with TestClient(create_app(path)) as c:
        b = c.get("/api/assignments", headers=hb).json()["assignments"][0]["blind_id"]
        r = c.post(f"/api/read/{b}", headers=hb, json={"claims": ["a", "b"], "found": [0], "score": 4})
        assert r.status_code == 400 and r.json()["field"] == "score" and "at most 3" in r.json()["error"]
        assert c.get("/api/assignments", headers=hb).json()["assignments"][0]["state"] == "claims"  # nothing stored
        r = c.post(f"/api/read/{b}", headers=hb, json={"claims": ["a", "b"], "found": [], "score": 3,
                                                       "marks": [{"sentence_index": 0, "class": "invented_fact"}]})
        assert r.status_code == 400 and "at most 2" in r.json()["error"]
        r = c.post(f"/api/read/{b}", headers=hb, json={"claims": ["a", "b"], "found": [], "score": 2})
        assert r.status_code == 200 and r.json()["dropped_claims"] == 2


def plain_cap(dropped: int, invented: int) -> int:
    """The rubric's score table read directly: 5/4 need every claim and nothing added; 3 is
    one claim missing or one fact added; 2 is two or more missing or added."""
    n = dropped + invented
    return 5 if n == 0 else (3 if n == 1 else 2)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 6), st.integers(0, 6), st.integers(1, 5))
def test_store_accepts_a_score_exactly_when_the_rubric_allows_it(dropped, invented, score):
    import tempfile
    from pathlib import Path

    from veribench.rubric.store import Pair

    assert rules.max_score(dropped, invented) == plain_cap(dropped, invented)
    with tempfile.TemporaryDirectory() as d:
        db = store.open_rubric(Path(d))
        out = " ".join(f"Sentence {i} ends." for i in range(max(1, invented)))
        store.add_pairs(db, [Pair("k", "t", "In.", out)])
        store.add_editor(db, "ed")
        store.ensure_assignments(db)
        (b,), = db.query("SELECT blind_id FROM rubric_items")
        claims = [f"c{i}" for i in range(dropped + 1)]
        store.save_claims(db, "ed", b, claims, None, require_form=False)
        marks = [f"{i}:invented_fact" for i in range(invented)]
        try:
            r = store.submit_reading(db, "ed", b, score=score, found=[0], marks=marks, form_token=None,
                                     require_form=False)
            accepted = True
            assert r["dropped_claims"] == dropped and r["invented_facts"] == invented
        except RatingError as e:
            accepted = False
            assert e.status == 400 and e.field == "score"
        db.close()
    assert accepted == (score <= plain_cap(dropped, invented))
