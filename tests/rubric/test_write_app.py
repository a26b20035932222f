"""The arm-B writing app over real HTTP (uvicorn on 127.0.0.1 in a thread): anonymous access,
one-time links, cross-writer isolation, CSRF, replayed forms and saves, strict types,
revocable sessions, revisions across a restart, a 500-word paste, withdrawal, TLS options."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.rubric.rubric_helpers import ServerThread
from tests.rubric.write_helpers import (
    HTML,
    PROMPT,
    HttpWriter,
    first_words,
    hidden,
    liang_texts,
    sentences,
    words,
    write_directly,
)
from veribench.rubric.write import armb, store
from veribench.rubric.write.app import create_app
from veribench.rubric.write.db import open_store
from veribench.store import Workspace


@pytest.fixture()
def site(tmp_path):
    """A workspace folder with three invitations and the app serving it."""
    path = tmp_path / "ws"
    with open_store(path) as db:
        links = store.create_invitations(db, PROMPT, register="casual", count=3)
    srv = ServerThread(create_app(path)).start()
    yield path, srv, links
    srv.stop()


@pytest.fixture(scope="module")
def essays(liang_dir):
    return [t for t in liang_texts(liang_dir, "CollegeEssay_real_70") if len(t.split()) >= 560]


def _routes(app):
    out = []
    for r in app.routes:
        for m in sorted(getattr(r, "methods", None) or []):
            if m != "HEAD":
                out.append((m, r.path))
    return out


def test_anonymous_access_is_refused_on_every_route(site):
    path, srv, links = site
    inv, tok = links[0]
    routes = _routes(srv.server.config.app)
    assert len(routes) == 19
    hit = 0
    for method, route in routes:
        if route.startswith("/static"):
            continue
        url = route.replace("{inv}", inv).replace("{token}", "not-a-real-token")
        for headers in (HTML, {"accept": "application/json"}):
            r = httpx.request(method, srv.url + url, headers=headers, data={"csrf_token": "x"}, follow_redirects=False)
            hit += 1
            if route.startswith("/i/"):
                assert r.status_code == (404 if method == "GET" else 403), (method, url, r.status_code)  # no link
            else:
                assert r.status_code == 401, (method, url, r.status_code)
            assert PROMPT not in r.text
    assert hit == 38
    # a real invitation id and a forged cookie do not help either
    r = httpx.get(f"{srv.url}/api/w/{inv}/draft", cookies={"vb_write_session": "eyJzaWQiOiAieCJ9.forged.sig"})
    assert r.status_code == 401
    # the static files are public, and nothing else is
    assert httpx.get(f"{srv.url}/static/write.js").status_code == 200


def test_the_link_works_once_and_a_preview_does_not_use_it(site):
    _, srv, links = site
    inv, tok = links[0]
    for _ in range(2):  # a mail scanner's GET shows the page without using the link
        r = httpx.get(f"{srv.url}/i/{tok}", headers=HTML)
        assert r.status_code == 200 and PROMPT in r.text and "300–1200 words" in r.text
    w = HttpWriter(srv.url, tok)
    w.start()
    assert w.inv == inv
    r = httpx.get(f"{srv.url}/i/{tok}", headers=HTML)
    assert r.status_code == 410 and "already used" in r.text
    other = httpx.Client(base_url=srv.url, headers=HTML)
    page = other.get(f"/i/{links[1][1]}")
    r = other.post(f"/i/{tok}", data={"csrf_token": hidden(page.text, "csrf_token")})
    assert r.status_code == 410  # a second browser cannot start on a used link
    assert other.get(f"/w/{inv}/consent").status_code == 401
    # without the CSRF token of the page, a link cannot be used (no sign-in CSRF)
    assert httpx.post(f"{srv.url}/i/{links[1][1]}", data={"csrf_token": "forged"}, headers=HTML).status_code == 403
    w.close()
    other.close()


def test_writer_a_cannot_reach_writer_b(site, essays):
    _, srv, links = site
    a, b = HttpWriter(srv.url, links[0][1]), HttpWriter(srv.url, links[1][1])
    a.onboard()
    b.onboard(english="non-native", first_language="Polish", years="9")
    secret = first_words(essays[0], 120)
    assert b.save(secret).status_code == 200
    for method, route in _routes(srv.server.config.app):
        if "{inv}" not in route:
            continue
        url = route.replace("{inv}", b.inv)
        data = {"csrf_token": a.csrf, "form_token": "x", "text": "overwrite", "base": "1", "confirm": "yes"}
        if method == "POST" and route.startswith("/api/"):
            r = a.c.post(url, json={"text": "overwrite", "base": 1}, headers={"x-csrf-token": a.csrf})
        else:
            r = a.c.request(method, url, data=data if method == "POST" else None)
        assert r.status_code == 404, (method, url, r.status_code)
        assert "overwrite" not in r.text and secret[:60] not in r.text
    unknown = a.c.get("/w/inv-aaaaaaaaaaaa/write")
    assert unknown.status_code == 404  # the same answer as for b's id
    d = b.c.get(f"/api/w/{b.inv}/draft").json()
    assert d["text"] == secret and d["revision"] == 1  # b's draft is untouched
    a.close()
    b.close()


def test_csrf_and_replayed_forms_are_refused(site, essays):
    path, srv, links = site
    w = HttpWriter(srv.url, links[0][1])
    w.start()
    _, f = w.form("consent")
    for bad in ({}, {"csrf_token": "x" * 43}, {"csrf_token": "é" * 10}):
        r = w.c.post(f"/w/{w.inv}/consent", data={"form_token": f["form_token"], "adult": "yes", "agree": "yes", **bad})
        assert r.status_code == 403 and "CSRF" in r.text
    assert "/consent" in str(w.c.get(f"/w/{w.inv}").url)  # nothing recorded
    ok = w.c.post(f"/w/{w.inv}/consent", data={**f, "adult": "yes", "agree": "yes"})
    assert ok.status_code == 200 and str(ok.url).endswith("/about")
    again = w.c.post(f"/w/{w.inv}/consent", data={**f, "adult": "yes", "agree": "yes"})
    assert again.status_code == 409 and "replayed" in again.text
    _, f = w.form("about")
    about = {"english": "native", "first_language": "English", "years_writing_english": "30"}
    assert w.c.post(f"/w/{w.inv}/about", data={**f, **about}).status_code == 200
    r = w.c.post(f"/w/{w.inv}/about", data={**f, **about, "english": "non-native"})
    assert r.status_code == 409
    # JSON writes: the CSRF header is required, and a replayed save (stale base) changes nothing
    text = first_words(essays[1], 320)
    assert w.c.post(f"/api/w/{w.inv}/revisions", json={"text": text, "base": 0}).status_code == 403
    assert w.c.post(f"/api/w/{w.inv}/revisions", json={"text": text, "base": 0},
                    headers={"x-csrf-token": "nope"}).status_code == 403
    assert w.save(text).status_code == 200 and w.base == 1
    replay = w.c.post(f"/api/w/{w.inv}/revisions", json={"text": text + " more", "base": 0},
                      headers={"x-csrf-token": w.csrf})
    assert replay.status_code == 409 and replay.json()["field"] == "base"
    # the Save button's form (no JavaScript): one-time too
    html, f = w.form("write")
    r = w.c.post(f"/w/{w.inv}/save", data={**f, "text": text + " Saved by form.", "base": "1"})
    assert r.status_code == 200
    r = w.c.post(f"/w/{w.inv}/save", data={**f, "text": text + " Saved by form twice.", "base": "2"})
    assert r.status_code == 409
    # submission: CSRF, then replay
    html, f = w.form("submit")
    sub = {"revision": "2", "attest": "yes", "attestation_name": "Test Writer", "publication": "full"}
    assert w.c.post(f"/w/{w.inv}/submit", data={**sub, "form_token": f["form_token"]}).status_code == 403
    assert w.c.post(f"/w/{w.inv}/submit", data={**f, **sub}).status_code == 200
    r = w.c.post(f"/w/{w.inv}/submit", data={**f, **sub, "publication": "fingerprint_only"})
    assert r.status_code == 409
    assert w.save(text + " after").status_code == 409  # a submitted text takes no more revisions
    with open_store(path) as db:
        assert store.submission(db, w.inv)["publication"] == "full"
        assert db.query("SELECT count(*) FROM write_revisions") == [(2,)]
    # sign-out needs the CSRF token too
    assert w.c.post("/logout", data={"csrf_token": "nope"}).status_code == 403
    w.close()


def test_strict_types_refuse_and_store_nothing(site):
    path, srv, links = site
    w = HttpWriter(srv.url, links[0][1])
    w.onboard()
    url, h = f"/api/w/{w.inv}/revisions", {"x-csrf-token": w.csrf}
    for body, field in (({"text": "a b c", "base": "0"}, "base"), ({"text": "a b c", "base": True}, "base"),
                        ({"text": "a b c", "base": 0.0}, "base"), ({"text": 5, "base": 0}, "text"),
                        ({"text": ["a"], "base": 0}, "text"), ({"text": "a", "base": 0, "extra": 1}, "extra"),
                        ({"text": "a b"}, "base"), ({"text": "a", "base": -1}, "base")):
        r = w.c.post(url, json=body, headers=h)
        assert r.status_code == 400 and r.json()["field"] == field, (body, r.text)
    for raw in (b"[1, 2]", b"not json", b'"text"', b"{"):
        r = w.c.post(url, content=raw, headers={**h, "content-type": "application/json"})
        assert r.status_code == 400, raw
    assert w.c.post(url, data={"text": "a", "base": "0"}, headers=h).status_code == 415
    r = w.c.post(url, json={"text": "bad \u0000 byte", "base": 0}, headers=h)
    assert r.status_code == 400 and "U+0000" in r.json()["error"]
    r = w.c.post(url, content=b'{"text": "\\ud800 lone", "base": 0}', headers={**h, "content-type": "application/json"})
    assert r.status_code == 400
    # forms: the self-report is checked field by field
    _, f = w.form("about")
    for data, msg in (({"english": "maybe", "first_language": "English", "years_writing_english": "3"}, "native"),
                      ({"english": "native", "first_language": "123", "years_writing_english": "3"}, "first language"),
                      ({"english": "native", "first_language": "English", "years_writing_english": "3.5"}, "whole"),
                      ({"english": "native", "first_language": "English", "years_writing_english": "500"}, "whole")):
        r = w.c.post(f"/w/{w.inv}/about", data={**f, **data})
        assert r.status_code == 400 and msg in r.text
    with open_store(path) as db:
        assert db.query("SELECT count(*) FROM write_revisions") == [(0,)]
        assert store.get_invitation(db, w.inv)["years_writing_english"] == 20  # from onboard, unchanged
    w.close()


def test_a_draft_can_be_withdrawn_and_revisions_are_capped(site, essays, monkeypatch):
    path, srv, links = site
    w = HttpWriter(srv.url, links[0][1])
    w.onboard(english="non-native", first_language="Tagalog", years="6")
    monkeypatch.setattr("veribench.rubric.write.rules.MAX_REVISIONS", 3)
    for n in (10, 20, 30):
        assert w.save(first_words(essays[7], n)).status_code == 200
    r = w.save(first_words(essays[7], 40))
    assert r.status_code == 409 and "3 saved revisions" in r.json()["error"]
    assert w.save(first_words(essays[7], 30)).status_code == 200  # the same text again is no new revision
    r = w.withdraw()
    assert r.status_code == 200 and 'id="withdrawn-workspace"' not in r.text  # a draft never reached the workspace
    with open_store(path) as db:
        assert db.query("SELECT count(*) FROM write_revisions") == [(0,)]
        assert db.query("SELECT state_before, doc_id FROM write_withdrawals") == [("writing", None)]
        assert store.get_invitation(db, w.inv)["first_language"] is None
    assert not (path / "veribench.duckdb").exists()  # the app never created or opened a workspace
    w.close()


def test_sign_out_revokes_the_session_on_the_server(site):
    _, srv, links = site
    w = HttpWriter(srv.url, links[0][1])
    w.onboard()
    copied = dict(w.c.cookies)
    html = w.c.get(f"/w/{w.inv}/write").text
    r = w.c.post("/logout", data={"csrf_token": hidden(html, "csrf_token")})
    assert r.status_code == 200 and "signed out" in r.text
    thief = httpx.Client(base_url=srv.url, cookies=copied, headers=HTML)
    assert thief.get(f"/w/{w.inv}/write").status_code == 401  # the copied cookie is dead
    assert thief.get(f"/api/w/{w.inv}/draft").status_code == 401
    thief.close()
    w.close()


def test_revisions_and_sessions_survive_a_restart(tmp_path, essays):
    path = tmp_path / "ws"
    with open_store(path) as db:
        [(inv, tok)] = store.create_invitations(db, PROMPT)
    srv = ServerThread(create_app(path)).start()
    try:
        w = HttpWriter(srv.url, tok)
        w.onboard(english="non-native", first_language="Hindi", years="12")
        essay = essays[2]
        w.type_in(first_words(essay, 120), step_words=12)
        before = w.c.get(f"/api/w/{inv}/draft").json()
        assert before["revision"] == 10
    finally:
        srv.stop()
    srv = ServerThread(create_app(path), port=srv.port).start()  # the same address, a new app and store
    try:
        after = w.c.get(f"/api/w/{inv}/draft").json()  # the old cookie still signs in
        assert after == before
        assert after["evidence"]["revisions"] == 10 and after["evidence"]["words"] == 120
        assert w.save(first_words(essay, 130)).status_code == 200 and w.base == 11
        page = w.c.get(f"/w/{inv}/write")
        assert first_words(essay, 130) in page.text and 'data-base="11"' in page.text
    finally:
        w.close()
        srv.stop()


def test_a_500_word_paste_is_recorded_as_one_large_insertion(site, essays):
    path, srv, links = site
    w = HttpWriter(srv.url, links[0][1])
    w.onboard()
    essay = essays[0]
    typed = first_words(essay, 24)
    w.type_in(typed, step_words=6)
    pasted = typed + "\n\n" + first_words(" ".join(essay.split()[24:]), 500)
    r = w.save(pasted)
    assert r.status_code == 200
    ev = r.json()["evidence"]
    assert ev["revisions"] == 5 and ev["words"] == words(pasted) == 524
    assert [(x["revision"], x["words"]) for x in ev["large_insertions"]] == [(5, 500)]
    assert "1 large insertion (500 words)" in r.json()["evidence_line"]
    assert w.submit(publication="full").status_code == 200
    done = w.c.get(f"/w/{w.inv}/done").text
    assert "1 large insertion (500 words)" in done
    with open_store(path) as db, Workspace(path) as ws:
        rep = armb.import_submissions(ws, db)
        (row,) = rep.process_evidence
        assert row["large_insertions"] == [500] and row["revisions"] == 5 and row["words"] == 524
        prov = ws.published_documents()[0]["provenance"]
        assert prov["process_evidence"]["large_insertions"][0]["words"] == 500
        assert prov["method"] == "attested, with revision history"
    w.close()


def test_chunked_pastes_are_recorded_as_faster_than_typing(site, essays):
    """420 words pasted in 20-word steps through the app (the server's clock: seconds apart at
    most) hold no large insertion, and are flagged as sustained insertion faster than typing."""
    path, srv, links = site
    w = HttpWriter(srv.url, links[0][1])
    w.onboard()
    w.type_in(first_words(essays[1], 420), step_words=20)
    ev = w.c.get(f"/api/w/{w.inv}/draft").json()["evidence"]
    assert ev["revisions"] == 21 and ev["large_insertions"] == []
    assert [(x["from_revision"], x["to_revision"], x["words"]) for x in ev["fast_insertions"]] == [(1, 21, 420)]
    assert w.submit(publication="full").status_code == 200
    assert "420 words inserted faster than typing (1 stretch)" in w.c.get(f"/w/{w.inv}/done").text
    with open_store(path) as db, Workspace(path) as ws:
        (row,) = armb.import_submissions(ws, db).process_evidence
        assert row["fast_insertion_words"] == 420 and row["large_insertions"] == []
    w.close()


def test_withdrawal_deletes_the_text_from_workspace_and_store(site, essays):
    path, srv, links = site
    keep, leave = HttpWriter(srv.url, links[0][1]), HttpWriter(srv.url, links[1][1])
    for w, essay in ((keep, essays[3]), (leave, essays[4])):
        w.onboard()
        w.type_in(first_words(essay, 340), step_words=40)
        assert w.submit().status_code == 200
    text = first_words(essays[4], 340)
    from veribench import registry
    from veribench.detectors.pipeline import score_documents

    with open_store(path) as db, Workspace(path) as ws:
        armb.import_submissions(ws, db)
        score_documents(ws, registry.get("detector", "zippy")(engine="brotli"), [f"arm-b/{keep.inv}",
                                                                                  f"arm-b/{leave.inv}"])
        assert ws.query("SELECT count(*) FROM scores") == [(2,)]
    r = leave.withdraw()  # the workspace is free, so the app removes the document at once
    assert r.status_code == 200 and "withdrawn" in r.text and "removed from the benchmark workspace" in r.text
    assert leave.c.get(f"/w/{leave.inv}/write").status_code == 401  # signed out for good
    with Workspace(path) as ws:
        assert ws.query("SELECT doc_id FROM documents") == [(f"arm-b/{keep.inv}",)]
        assert ws.query("SELECT count(*) FROM scores") == [(1,)] and ws.query("SELECT count(*) FROM submissions") == [(1,)]
        (log,) = ws.query("SELECT doc_id, invitation_id, via, removed FROM withdrawals")
        assert log[:3] == (f"arm-b/{leave.inv}", leave.inv, "app") and '"scores_removed": 1' in log[3]
        assert not ws.query("SELECT 1 FROM documents WHERE text LIKE ?", [f"%{sentences(text)[0]}%"])
    with open_store(path) as db:
        inv = store.get_invitation(db, leave.inv)
        assert inv["state"] == "withdrawn" and inv["english"] is None
        assert db.query("SELECT count(*) FROM write_revisions WHERE invitation_id = ?", [leave.inv]) == [(0,)]
        assert store.submission(db, leave.inv) is None
        assert db.query("SELECT state_before, workspace_removed_at IS NOT NULL FROM write_withdrawals") == [
            ("submitted", 1)]
    kept = sentences(first_words(essays[3], 340))[0].encode()
    for files in (list(path.glob("write.sqlite*")), list(path.glob("veribench.duckdb*"))):
        raw = b"".join(p.read_bytes() for p in files)
        for s in sentences(text)[:8]:  # no byte of the withdrawn text is left in the files
            assert s.encode("utf-8") not in raw, (files, s)
        assert kept in raw  # (the check sees a text that is there)
    assert not (path / "veribench.duckdb.wal").exists() and not (path / "veribench.duckdb.compact").exists()
    keep.close()
    leave.close()


def test_withdrawal_while_the_workspace_is_busy_waits_for_the_next_import(tmp_path, essays):
    """Another process holding the workspace: the app deletes its own copy at once and the
    document goes at the next `write import`."""
    import subprocess
    import sys
    import textwrap

    path = tmp_path / "ws"
    with open_store(path) as db:
        inv = write_directly(
            db, first_words(essays[5], 330), english="native", first_language="English", years=25)
        with Workspace(path) as ws:
            armb.import_submissions(ws, db)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time, duckdb
        con = duckdb.connect({str(path / 'veribench.duckdb')!r})
        print('held', flush=True)
        sys.stdin.readline()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with open_store(path) as db:
            store.withdraw(db, inv, via="app")
            assert armb.try_apply_withdrawals(path, db) is False
            assert len(store.pending_withdrawals(db)) == 1
    finally:
        holder.communicate("\n", timeout=30)
    with open_store(path) as db, Workspace(path) as ws:
        rep, removed = armb.sync(ws, db)
        assert [p["doc_id"] for p in removed] == [f"arm-b/{inv}"] and rep.documents == 0
        assert ws.document_count() == 0 and store.pending_withdrawals(db) == []


def test_tls_options_root_path_and_headers(tmp_path):
    path = tmp_path / "ws"
    with open_store(path) as db:
        [(inv, tok)] = store.create_invitations(db, PROMPT)
    srv = ServerThread(create_app(path, secure_cookies=True, root_path="/write")).start()
    try:
        r = httpx.get(f"{srv.url}/write/i/{tok}", headers=HTML)
        assert r.status_code == 200 and f'action="/write/i/{tok}"' in r.text and "/write/static/write.css" in r.text
        cookie = r.headers["set-cookie"].lower()
        assert "secure" in cookie and "path=/write" in cookie and "samesite=strict" in cookie and "httponly" in cookie
        assert r.headers["strict-transport-security"].startswith("max-age=")
        csp = r.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
        assert r.headers["x-frame-options"] == "DENY" and r.headers["referrer-policy"] == "no-referrer"
        assert r.headers["cache-control"] == "no-store"
        # a proxy that strips the prefix reaches the same routes
        assert httpx.get(f"{srv.url}/i/{tok}", headers=HTML).status_code == 200
        # a client that honours Secure (httpx, browsers) never sends the cookie back over plain
        # HTTP, so the CSRF check fails and no sign-in happens without TLS
        c = httpx.Client(base_url=srv.url, headers=HTML)
        page = c.get(f"/write/i/{tok}")
        r = c.post(f"/write/i/{tok}", data={"csrf_token": hidden(page.text, "csrf_token")}, follow_redirects=False)
        assert r.status_code == 403
        c.close()
    finally:
        srv.stop()
    srv = ServerThread(create_app(path, root_path="/write")).start()
    try:
        w = HttpWriter(srv.url + "/write", tok)
        r = w.c.get(f"/i/{tok}")
        r = w.c.post(f"/i/{tok}", data={"csrf_token": hidden(r.text, "csrf_token")}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == f"/write/w/{inv}"
        w.close()
    finally:
        srv.stop()


def test_submission_rules(site, essays, liang_dir):
    path, srv, links = site
    w = HttpWriter(srv.url, links[0][1])
    w.onboard()
    short = first_words(essays[6], 120)
    w.type_in(short, step_words=60)
    html = w.c.get(f"/w/{w.inv}/submit").text
    assert 'id="submit-problem"' in html and "300–1200" in html and "submit-form" not in html
    r = w.c.post(f"/w/{w.inv}/submit", data={"csrf_token": w.csrf, "form_token": store_form(path, w.inv),
                                              "revision": str(w.base), "attest": "yes", "attestation_name": "T W",
                                              "publication": "full"})
    assert r.status_code == 400 and f"has {words(short)} words; the invitation asks for 300-1200 words" in r.text
    w.save(first_words(essays[6], 330))
    html, f = w.form("submit")
    base = {**f, "revision": str(w.base), "attest": "yes", "attestation_name": "Test Writer", "publication": "full"}
    for change, msg in (({"attest": ""}, "attestation"), ({"attestation_name": "  "}, "full name"),
                        ({"publication": "both"}, "choose how"), ({"revision": str(w.base - 1)}, "changed since")):
        html, f = w.form("submit")
        r = w.c.post(f"/w/{w.inv}/submit", data={**base, **f, **change})
        assert r.status_code in (400, 409) and msg in r.text, (change, r.status_code)
    html, f = w.form("submit")
    r = w.c.post(f"/w/{w.inv}/submit", data={**base, **f, "publication": "fingerprint_only"})
    assert r.status_code == 200 and "fingerprint_only" in r.text
    fp = re.search(r'id="done-fingerprint">([0-9a-f]{64})<', r.text).group(1)
    own = w.c.get(f"/w/{w.inv}/text.txt")
    from veribench.rubric.write.fingerprint import fingerprint

    assert fingerprint(own.text) == fp and own.text.strip() == first_words(essays[6], 330)
    w.close()


def store_form(path, inv: str) -> str:
    with open_store(path) as db:
        return store.issue_form(db, inv, "submit")
