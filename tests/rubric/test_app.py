"""The rating app over HTTP: sign-in, CSRF, own assignments only, no tool names anywhere
(crawled as an editor), bad input, replayed forms, and ratings surviving a restart."""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser
from urllib.parse import urljoin, urlparse

import pytest
from fastapi.testclient import TestClient

from tests.rubric.rubric_helpers import HTML, hidden, login, real_pairs, tool_variants
from veribench.rubric import store
from veribench.rubric.app import create_app
from veribench.store import Workspace


class Page(HTMLParser):
    """Links and forms of one page."""

    def __init__(self):
        super().__init__()
        self.links, self.forms, self._form = [], [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("a", "link") and a.get("href"):
            self.links.append(a["href"])
        elif tag == "form":
            self._form = {"action": a.get("action", ""), "method": a.get("method", "get").lower(), "fields": []}
            self.forms.append(self._form)
        elif tag in ("input", "textarea", "select", "button") and self._form is not None and a.get("name"):
            self._form["fields"].append((tag, a))

    def handle_endtag(self, tag):
        if tag == "form":
            self._form = None


def parse(html: str) -> Page:
    p = Page()
    p.feed(html)
    return p


@pytest.fixture(scope="module")
def template(tmp_path_factory, july_tests):
    """Six real outputs of three tools; alice and bob read them all; carol is registered later."""
    path = tmp_path_factory.mktemp("template") / "ws"
    with Workspace(path) as ws:
        pairs = real_pairs(july_tests, [("grammarly", 2), ("stealth-writer", 2), ("undetectable", 2)])
        store.add_pairs(ws, pairs)
        toks = {e: store.add_editor(ws, e) for e in ("alice", "bob")}
        store.ensure_assignments(ws)
        toks["carol"] = store.add_editor(ws, "carol")
        tools = store.tool_names(ws)
    return path, toks, tools


@pytest.fixture()
def setup(template, tmp_path):
    """A fresh copy of the template workspace for each test."""
    path, toks, tools = template
    shutil.copytree(path, tmp_path / "ws")
    return tmp_path / "ws", toks, tools


def test_anonymous_is_refused(setup):
    path, toks, _ = setup
    with TestClient(create_app(path)) as c:
        r = c.get("/assignments", headers=HTML, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/login"
        assert c.get("/assignments").status_code == 401
        assert c.get("/api/assignments").status_code == 401
        assert c.get("/assignments", headers={"authorization": "Bearer nope"}).status_code == 401
        r = c.get("/api/assignments", headers={"authorization": f"Bearer {toks['alice']}"})
        assert r.status_code == 200 and r.json()["editor"] == "alice" and len(r.json()["assignments"]) == 6
        bid = r.json()["assignments"][0]["blind_id"]
        assert c.post(f"/read/{bid}/claims", data={"claims": "x"}).status_code == 401
        assert c.get(f"/read/{bid}", headers=HTML, follow_redirects=False).status_code == 303
        assert c.post(f"/api/read/{bid}", json={"claims": ["x"], "score": 3}).status_code == 401


def test_login_csrf_and_isolation(setup):
    path, toks, _ = setup
    with TestClient(create_app(path)) as c:
        r = c.get("/login", headers=HTML)
        assert c.post("/login", data={"token": toks["alice"], "csrf_token": "forged"}).status_code == 403
        assert c.post("/login", data={"token": "wrong", "csrf_token": hidden(r.text, "csrf_token")}).status_code == 401
        login(c, toks["alice"])
        page = c.get("/assignments", headers=HTML)
        assert page.status_code == 200 and "alice" in page.text
        bids = re.findall(r'href="/read/(r-[a-z2-9]{10})"', page.text)
        assert len(bids) == 6
        # a form posted without the session's CSRF token is refused and stores nothing
        r = c.get(f"/read/{bids[0]}", headers=HTML)
        ft = hidden(r.text, "form_token")
        r = c.post(f"/read/{bids[0]}/claims", data={"claims": "a\nb", "form_token": ft}, headers=HTML)
        assert r.status_code == 403 and "CSRF" in r.text
        r = c.post(f"/read/{bids[0]}/claims", data={"claims": "a\nb", "form_token": ft, "csrf_token": "x" * 43})
        assert r.status_code == 403
        assert "claims" in c.get(f"/read/{bids[0]}", headers=HTML).text  # still at step 1
        # carol has nothing; she cannot open alice's outputs (404, same as a missing id)
        hc = {"authorization": f"Bearer {toks['carol']}"}
        assert c.get("/api/assignments", headers=hc).json()["assignments"] == []
        assert c.get(f"/read/{bids[0]}", headers={**hc, **HTML}).status_code == 404
        assert c.get("/read/r-aaaaaaaaaa", headers={**hc, **HTML}).status_code == 404
        r = c.post(f"/api/read/{bids[0]}", headers=hc, json={"claims": ["a"], "found": [0], "score": 3})
        assert r.status_code == 404
        # sign out needs the CSRF token too
        assert c.post("/logout", data={"csrf_token": "nope"}).status_code == 403
        page = c.get("/assignments", headers=HTML)
        r = c.post("/logout", data={"csrf_token": hidden(page.text, "csrf_token")}, follow_redirects=False)
        assert r.status_code == 303
        assert c.get("/assignments", headers=HTML, follow_redirects=False).status_code == 303


def _fill(form) -> dict[str, list[str]]:
    data: dict[str, list[str]] = {}
    for tag, a in form["fields"]:
        name = a["name"]
        if tag == "textarea":
            data.setdefault(name, []).append("The input makes a claim.\nIt makes a second claim.")
        elif a.get("type") == "radio":
            if name not in data:
                data[name] = [a["value"]]
        elif a.get("type") == "checkbox":
            if name == "found" or a["value"].endswith(":synonym_misfire"):
                data.setdefault(name, []).append(a["value"])
        elif a.get("type") in ("hidden",) or (tag == "input" and a.get("type") not in ("submit",)):
            data.setdefault(name, []).append(a.get("value", ""))
    return data


def test_crawl_as_editor_never_names_a_tool(setup):
    """Follow every link and submit every form an editor can reach (as alice, by cookie),
    and check every URL, header, cookie and body for any spelling of any tool name."""
    path, toks, tools = setup
    bad = tool_variants(tools)
    assert len(tools) == 3

    def check(where: str, *texts: str) -> None:
        for t in texts:
            low = t.lower()
            hit = [b for b in bad if b in low]
            assert not hit, f"{where} names a tool: {hit}"

    with pytest.raises(AssertionError):  # the checker itself catches a leak
        check("control", f"made by {tools[0].upper().replace('-', ' ')}")
    with TestClient(create_app(path)) as c:
        login(c, toks["alice"])
        seen, queue, posted, n_pages = set(), ["/assignments"], 0, 0
        while queue:
            url = queue.pop(0)
            if url in seen or urlparse(url).netloc not in ("", "testserver"):
                continue
            seen.add(url)
            r = c.get(url, headers=HTML)
            n_pages += 1
            check(url, url, str(r.url), r.text, *(f"{k}: {v}" for k, v in r.headers.items()))
            assert r.status_code == 200, (url, r.status_code)
            if "text/html" not in r.headers.get("content-type", ""):
                continue
            p = parse(r.text)
            queue += [urljoin(url, h) for h in p.links]
            for f in p.forms:
                if f["action"] == "/logout":
                    continue
                resp = c.post(f["action"], data=_fill(f), headers=HTML)
                posted += 1
                check(f["action"], f["action"], str(resp.url), resp.text,
                      *(f"{k}: {v}" for k, v in resp.headers.items()))
                assert resp.status_code == 200, (f["action"], resp.status_code, resp.text[:300])
                queue.append(str(resp.url).replace("http://testserver", ""))
                seen.discard(str(resp.url).replace("http://testserver", ""))
        for k, v in c.cookies.items():
            check("cookie", k, v)
            import base64

            check("cookie payload", base64.b64decode(v.split(".")[0] + "==").decode("utf-8", "replace"))
        # every output went through both steps and was submitted
        api = c.get("/api/assignments", headers={"authorization": f"Bearer {toks['alice']}"}).json()
        check("api", str(api))
        assert [a["state"] for a in api["assignments"]] == ["submitted"] * 6
        assert posted == 12 and n_pages >= 14


def test_bad_input_and_replay_over_http(setup):
    path, toks, _ = setup
    with TestClient(create_app(path)) as c:
        login(c, toks["bob"])
        page = c.get("/assignments", headers=HTML)
        bid = re.findall(r'href="/read/(r-[a-z2-9]{10})"', page.text)[0]
        r = c.get(f"/read/{bid}", headers=HTML)
        c.post(f"/read/{bid}/claims", data={"claims": "- one\n- two", "csrf_token": hidden(r.text, "csrf_token"),
                                            "form_token": hidden(r.text, "form_token")}, headers=HTML)
        r = c.get(f"/read/{bid}", headers=HTML)
        assert "name=\"score\"" in r.text and "one" in r.text and "Flesch" in r.text
        n_sent = len(re.findall(r'id="m-s\d+"', r.text))
        form = {"csrf_token": hidden(r.text, "csrf_token"), "form_token": hidden(r.text, "form_token")}
        for data, msg in (({"score": "7"}, "whole number from 1 to 5"), ({"score": "0"}, "whole number from 1 to 5"),
                          ({"score": ""}, "whole number from 1 to 5"),
                          ({"score": "3", "mark": f"{n_sent}:synonym_misfire"}, "not in the output"),
                          ({"score": "3", "mark": "0:not_a_class"}, "unknown mark class")):
            resp = c.post(f"/read/{bid}/rating", data={**form, **data}, headers=HTML)
            assert resp.status_code == 400 and msg in resp.text and "Nothing stored was changed" in resp.text
            j = c.post(f"/read/{bid}/rating", data={**form, **data})  # non-browser clients get JSON
            assert j.status_code == 400 and msg in j.json()["error"]
        ok = c.post(f"/read/{bid}/rating", data={**form, "score": "2", "found": ["0"], "mark": ["0:invented_fact"]},
                    headers=HTML)
        assert ok.status_code == 200 and 'id="done-score">2<' in ok.text and 'id="done-dropped">1<' in ok.text
        replay = c.post(f"/read/{bid}/rating", data={**form, "score": "5", "found": ["0", "1"]}, headers=HTML)
        assert replay.status_code == 409 and "replayed" in replay.text
        again = c.get(f"/read/{bid}", headers=HTML)
        assert 'id="done-score">2<' in again.text and 'id="done-invented">1<' in again.text
        # the JSON API: a whole reading in one request
        hb = {"authorization": f"Bearer {toks['bob']}"}
        other = [a["blind_id"] for a in c.get("/api/assignments", headers=hb).json()["assignments"]
                 if a["state"] == "claims"][0]
        r = c.post(f"/api/read/{other}", headers=hb, json={"claims": ["a", "b"], "found": [0], "score": 9})
        assert r.status_code == 400 and "whole number" in r.json()["error"]
        assert c.get("/api/assignments", headers=hb).json()["assignments"][1]["state"] in ("claims", "submitted")
        states = {a["blind_id"]: a["state"] for a in c.get("/api/assignments", headers=hb).json()["assignments"]}
        assert states[other] == "claims"  # the bad request stored nothing, not even the claims
        r = c.post(f"/api/read/{other}", headers=hb, json={"claims": ["a", "b"], "found": [0], "score": 3,
                                                           "marks": [{"sentence_index": 0, "class": "fragment_run_on"}]})
        assert r.status_code == 200 and r.json()["dropped_claims"] == 1
        r = c.post(f"/api/read/{other}", headers=hb, json={"claims": ["a", "b"], "found": [0], "score": 3})
        assert r.status_code == 409


def test_ratings_survive_a_restart(setup):
    path, toks, _ = setup
    with TestClient(create_app(path)) as c:
        login(c, toks["alice"])
        bid = re.findall(r'href="/read/(r-[a-z2-9]{10})"', c.get("/assignments", headers=HTML).text)[0]
        hb = {"authorization": f"Bearer {toks['alice']}"}
        assert c.post(f"/api/read/{bid}", headers=hb, json={"claims": ["x"], "found": [0], "score": 5}).status_code == 200
        cookies = dict(c.cookies)
    # the app closed its workspace on shutdown; a new process-equivalent opens it afresh
    with TestClient(create_app(path), cookies=cookies) as c2:
        page = c2.get(f"/read/{bid}", headers=HTML)  # the old session cookie still works
        assert page.status_code == 200 and 'id="done-score">5<' in page.text
    with store.open_rubric(path) as db:
        assert db.query("SELECT editor, score FROM rubric_ratings") == [("alice", 5)]


def test_app_over_an_open_workspace_leaves_it_open(setup):
    path, toks, _ = setup
    with Workspace(path) as ws:
        with TestClient(create_app(ws)) as c:
            assert c.get("/api/assignments", headers={"authorization": f"Bearer {toks['bob']}"}).status_code == 200
        assert store.db(ws).query("SELECT count(*) FROM rubric_items") == [(6,)]  # the caller's workspace is still open
