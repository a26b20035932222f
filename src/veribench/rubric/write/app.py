"""The arm-B writing app (FastAPI, server-rendered Jinja2 pages, one small script for autosave).

Routes (below the app's root path, ``--root-path`` when served behind a proxy)
------
GET  /i/{token}                   an invitation link: the prompt and a Start button
POST /i/{token}                   exchange the one-time link token for a server-side session
GET  /                            the signed-in writer's current step
GET  /w/{inv}                     the same, for one's own invitation
GET  /w/{inv}/consent  + POST     1. the consent text and the attestation; two ticks
GET  /w/{inv}/about    + POST     2. self-report: English native or not, first language, years
GET  /w/{inv}/write               3. the editor (autosaves through the JSON API)
POST /w/{inv}/save                   the editor's Save button (works without JavaScript)
GET  /w/{inv}/submit   + POST     4. the text as saved, typed-name attestation, publication choice
GET  /w/{inv}/done                the submitted text's fingerprint and process evidence
GET  /w/{inv}/text.txt            one's own latest text, as a file (to keep and prove later)
GET  /w/{inv}/withdraw + POST     withdraw: delete the text and every revision
POST /logout                      end the session on the server
GET  /api/w/{inv}/draft           JSON: the latest revision, its number and the evidence so far
POST /api/w/{inv}/revisions       JSON ``{"text": str, "base": int}``: save a revision
                                  (strict pydantic model :class:`RevisionIn`)

Security (as the editors' rating app): a writer is known only by a server-side session,
started by exchanging the link's token once (the store keeps the token's SHA-256); the
signed cookie names the session, which dies at sign-out, withdrawal, ``write revoke`` or
``write reissue``. Every form carries the session's CSRF token and a one-time form token
(a replayed form is refused with 409 and changes nothing); every JSON write carries the
CSRF token in ``X-CSRF-Token``, and a save names the revision it builds on, so a replayed
save is refused too. A writer reaches only their own invitation: any other id answers
404, the same as an unknown one. Anonymous requests get 401 on every route except the
invitation link itself. Cookies are ``SameSite=Strict`` and, with ``secure_cookies``,
``Secure`` (with HSTS). The app never holds the workspace: it keeps everything in its own
SQLite store (:mod:`.db`) and opens the workspace only for a moment after a withdrawal.
"""

from __future__ import annotations

import hmac
import secrets
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import jinja2
from fastapi import FastAPI, Form, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.middleware.sessions import SessionMiddleware

from veribench.rubric.app import SECURITY_HEADERS, RootPath
from veribench.rubric.limits import MAX_BODY_BYTES, AttemptLimiter, BodyLimit, TooManyAttempts
from veribench.rubric.write import rules, store
from veribench.rubric.write.armb import try_apply_withdrawals
from veribench.rubric.write.db import WriteDB, open_store
from veribench.rubric.write.evidence import describe
from veribench.rubric.write.store import WriteError
from veribench.text.words import js_blank_class

HERE = Path(__file__).parent
SESSION_COOKIE = "vb_write_session"
#: Scripts and fetches from the app's own origin only (autosave); nothing inline.
CSP = ("default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
#: Largest body accepted (bytes), for every route: the apps' one limit (:mod:`veribench.rubric.limits`).
MAX_BODY = MAX_BODY_BYTES


class _NotSignedIn(Exception):
    pass


class _OtherStep(Exception):
    """The page asked for is not the writer's step now: answer with a redirect to it."""

    def __init__(self, response: Response):
        self.response = response


class RevisionIn(BaseModel):
    """One autosave: the whole draft and the revision it builds on (0 before the first).

    Strict: ``"base": "3"``, ``"base": true``, ``"text": 5`` and unknown keys are refused.
    """

    model_config = ConfigDict(strict=True, extra="forbid")
    text: str = Field(max_length=rules.MAX_TEXT_CHARS * 2)
    base: int = Field(ge=0)


def _validation_error(e: ValidationError) -> WriteError:
    errs = e.errors()
    first = errs[0]
    if first.get("type") in ("json_invalid", "model_type", "json_type"):
        return WriteError("the body must be a JSON object {\"text\": string, \"base\": integer}", 400)
    loc = ".".join(str(x) for x in first.get("loc", ())) or "body"
    more = f" (and {len(errs) - 1} more problem(s))" if len(errs) > 1 else ""
    return WriteError(f"{loc}: {first.get('msg', 'invalid')}{more}", 400, loc)


def _whole(value: str, field: str) -> int:
    """A form's revision number (ASCII digits), or WriteError (400) naming the field."""
    if not (value.isascii() and value.isdigit()) or len(value) > 9:
        raise WriteError(f"the form does not name a saved revision ({field}); reload the page", 400, field)
    return int(value)


def _ascii(value: Any) -> bytes | None:
    if not isinstance(value, str) or not value or not value.isascii():
        return None
    return value.encode("ascii")


def create_app(workspace: str | Path | WriteDB, *, secure_cookies: bool = False, root_path: str = "",
               limiter: AttemptLimiter | None = None) -> FastAPI:
    """Build the writing app.

    Args:
        workspace: the workspace folder (its ``write.sqlite`` is opened, and closed at
            shutdown), or an open :class:`~.db.WriteDB` (left open).
        secure_cookies: mark the session cookie ``Secure`` and send HSTS: for serving over
            HTTPS (directly or behind a TLS-terminating proxy).
        root_path: the path prefix the app is served under (``/write``) when a proxy
            forwards ``https://host/write/...``; links, redirects and the cookie path carry it.
        limiter: the count of failed sign-ins (a fresh :class:`~veribench.rubric.limits.AttemptLimiter`
            by default).

    Every request body is capped (:class:`~veribench.rubric.limits.BodyLimit`, 413 while it is
    read), and opening an unknown invitation link counts as a failed sign-in: past the limits
    of :mod:`veribench.rubric.limits` every link answers 429 with ``Retry-After``.
    """
    if isinstance(workspace, WriteDB):
        db, owns = workspace, False
    else:
        db, owns = open_store(workspace), True
    folder = db.folder
    root = "/" + root_path.strip("/") if root_path.strip("/") else ""
    secret = store.session_secret(db)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        if owns:
            db.close()

    app = FastAPI(title="Write for the benchmark", lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)
    app.state.db = db
    app.add_middleware(SessionMiddleware, secret_key=secret, session_cookie=SESSION_COOKIE,
                       max_age=rules.SESSION_MAX_AGE, same_site="strict", https_only=secure_cookies,
                       path=root or "/")
    if root:
        app.add_middleware(RootPath, root=root)
    app.add_middleware(BodyLimit)  # outermost: a body over the cap never reaches the app
    attempts = limiter or AttemptLimiter()
    app.state.attempts = attempts
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(HERE / "templates")), autoescape=True)
    templates = Jinja2Templates(env=env)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    headers_out = {**SECURITY_HEADERS, "Content-Security-Policy": CSP}
    if secure_cookies:
        headers_out["Strict-Transport-Security"] = "max-age=31536000"

    @app.middleware("http")
    async def headers(request: Request, call_next):
        resp = await call_next(request)
        for k, v in headers_out.items():
            resp.headers.setdefault(k, v)
        return resp

    def go(path: str) -> RedirectResponse:
        return RedirectResponse(root + path, status_code=303)

    # -- auth helpers --------------------------------------------------------------------
    def who(request: Request) -> str | None:
        return store.session_invitation(db, request.session.get("sid"))

    def csrf(request: Request) -> str:
        tok = request.session.get("csrf")
        if not isinstance(tok, str) or not tok:
            tok = request.session["csrf"] = secrets.token_urlsafe(32)
        return tok

    def csrf_ok(request: Request, sent: Any) -> bool:
        exp, got = _ascii(request.session.get("csrf")), _ascii(sent)
        return bool(exp and got and hmac.compare_digest(exp, got))

    def check_csrf(request: Request, sent: Any) -> None:
        if not csrf_ok(request, sent):
            raise WriteError("the form's CSRF token is missing or wrong; reload the page and try again", 403,
                             "csrf_token")

    def is_api(request: Request) -> bool:
        p = request.url.path
        return (p[len(root):] if root and p.startswith(root) else p).startswith("/api/")

    def own(request: Request, inv: str) -> dict[str, Any]:
        """The signed-in writer's invitation ``inv``; another writer's (or none) is 404."""
        mine = who(request)
        if mine is None:
            raise _NotSignedIn()
        if inv != mine:
            raise WriteError("no such draft", 404)
        got = store.get_invitation(db, inv)
        if got is None:
            raise WriteError("no such draft", 404)
        return got

    def posted(request: Request, inv: str, csrf_token: str) -> dict[str, Any]:
        """A form post of the signed-in writer on their own invitation, with the session's CSRF token."""
        got = own(request, inv)
        check_csrf(request, csrf_token)
        return got

    def page(request: Request, name: str, ctx: dict[str, Any], status: int = 200) -> HTMLResponse:
        base = {"root": root, "csrf_token": csrf(request), "signed_in": who(request), "rules": rules,
                "word_blank": js_blank_class()}
        return templates.TemplateResponse(request, name, {**base, **ctx}, status_code=status)

    STEP = {"started": "consent", "consented": "about", "writing": "write", "submitted": "done"}

    def to_step(inv: dict[str, Any]) -> RedirectResponse:
        return go(f"/w/{inv['invitation_id']}/{STEP.get(inv['state'], 'consent')}")

    def at(request: Request, inv: str, states: tuple[str, ...]) -> dict[str, Any]:
        """The writer's own invitation when it is in one of ``states``; else to its current step."""
        i = own(request, inv)
        if i["state"] not in states:
            raise _OtherStep(to_step(i))
        return i

    def form_page(request: Request, name: str, inv: dict[str, Any], purpose: str, **ctx: Any) -> HTMLResponse:
        """A page holding one form, with a fresh one-time token for it."""
        return page(request, name, {"inv": inv, "form_token": store.issue_form(db, inv["invitation_id"], purpose),
                                    **ctx})

    @app.exception_handler(_OtherStep)
    async def other_step(request: Request, exc: _OtherStep) -> Response:
        return exc.response

    @app.exception_handler(_NotSignedIn)
    async def not_signed_in(request: Request, exc: _NotSignedIn) -> Response:
        if is_api(request) or "text/html" not in request.headers.get("accept", ""):
            return JSONResponse({"error": "not signed in: open your personal invitation link"}, status_code=401)
        return page(request, "error.html", {"title": "Not signed in", "message": "Open your personal invitation "
                    "link to start or continue writing. If you signed out or lost it, ask the organiser for a new "
                    "link to the same draft."}, 401)

    @app.exception_handler(TooManyAttempts)
    async def too_many(request: Request, exc: TooManyAttempts) -> Response:
        headers = {"Retry-After": str(exc.retry_after)}
        if is_api(request) or "text/html" not in request.headers.get("accept", ""):
            return JSONResponse({"error": str(exc), "field": None}, status_code=429, headers=headers)
        resp = page(request, "error.html", {"title": "Too many attempts", "message": str(exc)}, 429)
        resp.headers.update(headers)
        return resp

    def address(request: Request) -> str | None:
        return request.client.host if request.client else None

    @app.exception_handler(WriteError)
    async def write_error(request: Request, exc: WriteError) -> Response:
        if is_api(request) or "text/html" not in request.headers.get("accept", ""):
            return JSONResponse({"error": str(exc), "field": exc.field}, status_code=exc.status)
        title = {404: "Not found", 409: "Not saved", 403: "Not saved", 410: "Link no longer valid"}.get(
            exc.status, "Not saved")
        mine = who(request)
        return page(request, "error.html", {"title": title, "message": str(exc),
                                            "back": f"{root}/w/{mine}" if mine else None}, exc.status)

    # -- the invitation link -------------------------------------------------------------
    @app.get("/i/{token}", response_class=HTMLResponse)
    def invitation_page(request: Request, token: str) -> Response:
        attempts.check(address(request))
        inv, problem = store.link_status(db, token)
        if inv is None:
            attempts.fail(address(request))
            raise WriteError(problem or "no such invitation", 404)
        if problem:
            raise WriteError(problem, 410)
        return page(request, "start.html", {"inv": inv, "token": token})

    @app.post("/i/{token}")
    def invitation_start(request: Request, token: str, csrf_token: str = Form("")) -> Response:
        check_csrf(request, csrf_token)
        attempts.check(address(request))
        try:
            inv_id, sid = store.redeem(db, token)
        except WriteError as e:
            if e.status == 404:  # an unknown link: a failed sign-in
                attempts.fail(address(request))
            raise
        request.session.clear()
        request.session["sid"] = sid
        request.session["csrf"] = secrets.token_urlsafe(32)
        return go(f"/w/{inv_id}")

    @app.post("/logout")
    def logout(request: Request, csrf_token: str = Form("")) -> Response:
        if who(request) is None:
            raise _NotSignedIn()
        check_csrf(request, csrf_token)
        store.revoke_session(db, request.session.get("sid"))
        request.session.clear()
        return page(request, "error.html", {"title": "Signed out", "message": "You are signed out. Your draft is "
                    "kept. To continue, ask the organiser for a new link to the same draft."})

    # -- the writer's steps --------------------------------------------------------------
    @app.get("/", include_in_schema=False)
    def index(request: Request) -> Response:
        mine = who(request)
        if mine is None:
            raise _NotSignedIn()
        return to_step(store.get_invitation(db, mine))  # type: ignore[arg-type]

    @app.get("/w/{inv}")
    def current_step(request: Request, inv: str) -> Response:
        return to_step(own(request, inv))

    @app.get("/w/{inv}/consent", response_class=HTMLResponse)
    def consent_page(request: Request, inv: str) -> Response:
        return form_page(request, "consent.html", at(request, inv, ("started", "consented", "writing")), "consent")

    @app.post("/w/{inv}/consent")
    def consent_post(request: Request, inv: str, csrf_token: str = Form(""), form_token: str = Form(""),
                     adult: str = Form(""), agree: str = Form("")) -> Response:
        posted(request, inv, csrf_token)
        store.record_consent(db, inv, adult=adult == "yes", agree=agree == "yes", form_token=form_token)
        return to_step(store.get_invitation(db, inv))  # type: ignore[arg-type]

    @app.get("/w/{inv}/about", response_class=HTMLResponse)
    def about_page(request: Request, inv: str) -> Response:
        return form_page(request, "about.html", at(request, inv, ("consented", "writing")), "about")

    @app.post("/w/{inv}/about")
    def about_post(request: Request, inv: str, csrf_token: str = Form(""), form_token: str = Form(""),
                   english: str = Form(""), first_language: str = Form(""),
                   years_writing_english: str = Form("")) -> Response:
        posted(request, inv, csrf_token)
        rep = store.parse_self_report(english, first_language, years_writing_english)
        store.record_self_report(db, inv, rep, form_token=form_token)
        return go(f"/w/{inv}/write")

    @app.get("/w/{inv}/write", response_class=HTMLResponse)
    def write_page(request: Request, inv: str) -> Response:
        i = at(request, inv, ("writing",))
        store.mark_editor_opened(db, inv)
        last = store.latest_revision(db, inv) or {"text": "", "revision": 0, "words": 0}
        return form_page(request, "write.html", i, "save", text=last["text"], base=last["revision"],
                         words=last["words"], evidence_line=describe(store.evidence_for(db, inv, history=False)))

    @app.post("/w/{inv}/save")
    def save_post(request: Request, inv: str, csrf_token: str = Form(""), form_token: str = Form(""),
                  text: str = Form(""), base: str = Form("")) -> Response:
        posted(request, inv, csrf_token)
        store.save_revision(db, inv, text, _whole(base, "base"), via="form", form_token=form_token,
                            require_form=True)
        return go(f"/w/{inv}/write")

    @app.get("/w/{inv}/submit", response_class=HTMLResponse)
    def submit_page(request: Request, inv: str) -> Response:
        i = at(request, inv, ("writing",))
        last = store.latest_revision(db, inv)
        return form_page(request, "submit.html", i, "submit", last=last,
                         in_range=bool(last) and i["min_words"] <= last["words"] <= i["max_words"])

    @app.post("/w/{inv}/submit")
    def submit_post(request: Request, inv: str, csrf_token: str = Form(""), form_token: str = Form(""),
                    revision: str = Form(""), attestation_name: str = Form(""), attest: str = Form(""),
                    publication: str = Form("")) -> Response:
        posted(request, inv, csrf_token)
        store.submit(db, inv, revision=_whole(revision, "revision"), name=attestation_name, attest=attest == "yes",
                     publication=publication, form_token=form_token)
        return go(f"/w/{inv}/done")

    @app.get("/w/{inv}/done", response_class=HTMLResponse)
    def done_page(request: Request, inv: str) -> Response:
        i = at(request, inv, ("submitted",))
        sub = store.submission(db, inv)
        return page(request, "done.html", {"inv": i, "sub": sub, "evidence_line": describe(sub["evidence"])})

    @app.get("/w/{inv}/text.txt")
    def own_text(request: Request, inv: str) -> Response:
        i = own(request, inv)
        sub = store.submission(db, inv) if i["state"] == "submitted" else None
        last = store.latest_revision(db, inv)
        text = sub["text"] if sub else (last["text"] if last else "")
        return PlainTextResponse(text + "\n", headers={
            "Content-Disposition": f'attachment; filename="{inv}.txt"'})

    @app.get("/w/{inv}/withdraw", response_class=HTMLResponse)
    def withdraw_page(request: Request, inv: str) -> Response:
        return form_page(request, "withdraw.html", own(request, inv), "withdraw")

    @app.post("/w/{inv}/withdraw")
    def withdraw_post(request: Request, inv: str, csrf_token: str = Form(""), form_token: str = Form(""),
                      confirm: str = Form("")) -> Response:
        posted(request, inv, csrf_token)
        res = store.withdraw(db, inv, via="app", confirm=confirm == "yes", form_token=form_token, require_form=True)

        removed = try_apply_withdrawals(folder, db) if res["doc_id"] else True
        request.session.clear()
        return page(request, "withdrawn.html", {"res": res, "removed": removed})

    # -- JSON API (autosave) -------------------------------------------------------------
    @app.get("/api/w/{inv}/draft")
    def api_draft(request: Request, inv: str) -> Response:
        i = own(request, inv)
        last = store.latest_revision(db, inv)
        return JSONResponse({"invitation_id": inv, "state": i["state"], "revision": last["revision"] if last else 0,
                             "saved_at": last["saved_at"] if last else None, "text": last["text"] if last else "",
                             "words": last["words"] if last else 0,
                             "evidence": store.evidence_for(db, inv, history=False)})

    @app.post("/api/w/{inv}/revisions")
    async def api_save(request: Request, inv: str) -> Response:
        await run_in_threadpool(own, request, inv)
        check_csrf(request, request.headers.get("x-csrf-token"))
        if "application/json" not in request.headers.get("content-type", ""):
            raise WriteError("send the draft as application/json", 415)
        raw = await request.body()  # at most MAX_BODY bytes: BodyLimit refused anything larger
        try:
            body = RevisionIn.model_validate_json(raw)
        except ValidationError as e:
            raise _validation_error(e) from None
        res = await run_in_threadpool(store.save_revision, db, inv, body.text, body.base, via="autosave")
        res["evidence_line"] = describe(res["evidence"])
        return JSONResponse(res)

    return app
