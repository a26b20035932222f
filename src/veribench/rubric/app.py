"""The editors' rating web app (FastAPI, server-rendered Jinja2 pages, one small script).

Routes (all below the app's root path, ``--root-path`` when served behind a proxy)
------
GET  /login, POST /login          sign in with the editor token; starts a server-side session
POST /logout                      sign out: the session is revoked on the server
GET  /assignments                 the signed-in editor's own assignments (blind ids only)
GET  /read/{blind_id}             step 1 (claims) or steps 2-5 (reading) or the submitted reading
POST /read/{blind_id}/claims      save step 1
POST /read/{blind_id}/rating      submit steps 2-5
GET  /api/assignments             JSON list of own assignments
POST /api/read/{blind_id}         JSON: a whole reading in one request (claims, found, score, marks),
                                  validated by a strict pydantic model (:class:`ReadingIn`)

Authentication: ``Authorization: Bearer <token>`` on any request, or the session cookie set
by /login. The cookie is signed (secret kept in the rubric store) and names a server-side
session; it is honoured only while that session is stored, unexpired and not revoked, so a
copied cookie dies at sign-out. Cookie-authenticated form posts carry a CSRF token bound to
the session; every reading form also carries a one-time form token, so a replayed form is
refused (409) and changes nothing. An editor reaches only their own assignments (others
answer 404), and no page, URL or response names a tool: outputs are known by random blind
ids only.

The rubric's consistency rule (a reading with one dropped claim or invented fact scores at
most 3, with two or more at most 2; :func:`veribench.rubric.rules.max_score`) is checked by
the server on every reading, stated on the form, and checked in the browser before the form
is sent (``static/rubric.js``; the page works without it, the server still refuses).

Storage: the app's own SQLite store (:mod:`veribench.rubric.db`); it never opens the
workspace's DuckDB file, so every other command keeps working while it serves.
"""

from __future__ import annotations

import hmac
import secrets
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import jinja2
from fastapi import FastAPI, Form, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.middleware.sessions import SessionMiddleware

from veribench.rubric import rules, store
from veribench.rubric.db import RubricDB
from veribench.rubric.limits import AttemptLimiter, BodyLimit, TooManyAttempts
from veribench.rubric.store import RatingError
from veribench.store.workspace import Workspace

HERE = Path(__file__).parent
SESSION_COOKIE = "vb_session"
SESSION_MAX_AGE = 14 * 24 * 3600

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; script-src 'self'; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class _NotSignedIn(Exception):
    pass


# -- the JSON API's input, strictly typed ------------------------------------------------------
class MarkIn(BaseModel):
    """One mark: an output sentence (by 0-based index, or by its exact text) and a class id."""

    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=True)
    sentence_index: int | None = Field(None, ge=0)
    sentence: str | None = None
    class_: str = Field(alias="class")


class ReadingIn(BaseModel):
    """A whole reading: ``{"claims": [str], "found": [int], "score": int, "marks": [MarkIn]}``.

    Strict: no coercion (``"found": 5``, ``"marks": 5``, ``"score": "3"`` and
    ``"sentence_index": true`` are refused), no unknown keys.
    """

    model_config = ConfigDict(strict=True, extra="forbid")
    claims: list[str] | None = None
    found: list[int] = Field(default_factory=list)
    score: int
    marks: list[MarkIn] = Field(default_factory=list)


def _validation_error(e: ValidationError) -> RatingError:
    first = e.errors()[0]
    loc = ".".join(str(x) for x in first.get("loc", ())) or None
    msg = first.get("msg", "invalid")
    return RatingError(f"{loc or 'body'}: {msg}" + (f" (and {len(e.errors()) - 1} more problem(s))"
                                                     if len(e.errors()) > 1 else ""), 400,
                       str(first["loc"][0]) if first.get("loc") else None)


def _ascii_token(value: Any) -> str | None:
    """A token as sent, or None when it cannot be one (tokens are URL-safe ASCII)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        value.encode("ascii")
    except UnicodeEncodeError:
        raise RatingError("the form's CSRF token is not ASCII text (tokens are); reload the page and try again",
                          400, "csrf_token") from None
    return value


class RootPath:
    """ASGI wrapper: every request is served as if below ``root`` (``scope["root_path"]``), so
    routing works for paths that carry the prefix and for paths a proxy has stripped."""

    def __init__(self, app: Any, root: str):
        self.app, self.root = app, root

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            scope = {**scope, "root_path": self.root}
        await self.app(scope, receive, send)


def create_app(workspace: Workspace | RubricDB | str | Path, *, secure_cookies: bool = False,
               root_path: str = "", limiter: AttemptLimiter | None = None) -> FastAPI:
    """Build the app.

    Args:
        workspace: the workspace folder (its rubric store is opened, and closed at shutdown),
            an open :class:`Workspace`, or an open rubric store.
        secure_cookies: mark the session cookie ``Secure`` (sent over HTTPS only): for
            serving behind a TLS-terminating proxy.
        root_path: the path prefix the app is served under (``/rubric``), when a proxy
            forwards ``https://host/rubric/...`` to it; links, redirects and the cookie
            path carry it.
        limiter: the count of failed sign-ins (a fresh :class:`~veribench.rubric.limits.AttemptLimiter`
            by default: 20 failures a minute per address, 100 for the app).

    Every request body is capped (:class:`~veribench.rubric.limits.BodyLimit`, 413), and sign-in
    attempts (the login form, a Bearer header) are rate-limited (429 with ``Retry-After``); see
    :mod:`veribench.rubric.limits`.

    On start-up every output is given its readers as far as the registered editors allow.
    """
    if isinstance(workspace, (str, Path)):
        db = store.open_rubric(workspace)
        owns = True
    else:
        db = store.db(workspace)
        owns = False
    root = "/" + root_path.strip("/") if root_path.strip("/") else ""
    store.ensure_assignments(db)
    secret = store.session_secret(db)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        if owns:
            db.close()

    app = FastAPI(title="Editors' reading", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.rubric = db
    app.add_middleware(SessionMiddleware, secret_key=secret, session_cookie=SESSION_COOKIE,
                       max_age=SESSION_MAX_AGE, same_site="strict", https_only=secure_cookies, path=root or "/")
    if root:
        app.add_middleware(RootPath, root=root)
    app.add_middleware(BodyLimit)  # outermost: a body over the cap never reaches the app
    attempts = limiter or AttemptLimiter()
    app.state.attempts = attempts
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(HERE / "templates")), autoescape=True)
    templates = Jinja2Templates(env=env)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    @app.middleware("http")
    async def headers(request: Request, call_next):
        resp = await call_next(request)
        for k, v in SECURITY_HEADERS.items():
            resp.headers.setdefault(k, v)
        return resp

    def go(path: str) -> RedirectResponse:
        return RedirectResponse(root + path, status_code=303)

    # -- auth helpers --------------------------------------------------------------------
    def who(request: Request) -> tuple[str | None, bool]:
        """(editor, via_session)."""
        auth = request.headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            return token_editor(request, auth[7:]), False
        editor = store.session_editor(db, request.session.get("sid"))
        if editor is not None and editor == request.session.get("editor"):
            return editor, True
        return None, False

    def token_editor(request: Request, token: str) -> str | None:
        """A sign-in attempt: the token's editor, or None (counted as a failure); raises
        TooManyAttempts when this address or the app is over its limit."""
        address = request.client.host if request.client else None
        attempts.check(address)
        editor = store.editor_for_token(db, token)
        if editor is None:
            attempts.fail(address)
        return editor

    def csrf(request: Request) -> str:
        tok = request.session.get("csrf")
        if not tok:
            tok = request.session["csrf"] = secrets.token_urlsafe(32)
        return tok

    def csrf_ok(request: Request, sent: Any) -> bool:
        sent = _ascii_token(sent)
        expected = request.session.get("csrf")
        return bool(expected and sent and hmac.compare_digest(expected.encode(), sent.encode()))

    def check_csrf(request: Request, sent: Any, via_session: bool) -> None:
        if not via_session and request.headers.get("authorization", "")[:7].lower() == "bearer ":
            return  # a Bearer header is never sent by a browser on its own
        if not csrf_ok(request, sent):
            raise RatingError("the form's CSRF token is missing or wrong; reload the page and try again", 403,
                              "csrf_token")

    def wants_html(request: Request) -> bool:
        return "text/html" in request.headers.get("accept", "") and "/api/" not in request.url.path

    def need_editor(request: Request) -> tuple[str, bool]:
        editor, via = who(request)
        if editor is None:
            raise _NotSignedIn()
        return editor, via

    def page(request: Request, name: str, ctx: dict[str, Any], status: int = 200) -> HTMLResponse:
        editor, via = who(request)
        base = {"editor": editor, "via_session": via, "csrf_token": csrf(request), "root": root}
        return templates.TemplateResponse(request, name, {**base, **ctx}, status_code=status)

    @app.exception_handler(_NotSignedIn)
    async def not_signed_in(request: Request, exc: _NotSignedIn) -> Response:
        if request.method == "GET" and wants_html(request):
            return go("/login")
        return JSONResponse({"error": "sign in first: send 'Authorization: Bearer <token>' or use /login"},
                            status_code=401, headers={"WWW-Authenticate": "Bearer"})

    @app.exception_handler(TooManyAttempts)
    async def too_many(request: Request, exc: TooManyAttempts) -> Response:
        headers = {"Retry-After": str(exc.retry_after)}
        if (request.method == "POST" and request.url.path.endswith("/login")
                and "authorization" not in request.headers):
            resp = page(request, "login.html", {"error": f"Too many failed sign-ins. Try again in {exc.retry_after} s."},
                        429)
            resp.headers.update(headers)
            return resp
        return JSONResponse({"error": str(exc), "field": None}, status_code=429, headers=headers)

    @app.exception_handler(RatingError)
    async def rating_error(request: Request, exc: RatingError) -> Response:
        if not wants_html(request):
            return JSONResponse({"error": str(exc), "field": exc.field}, status_code=exc.status)
        p = request.url.path
        parts = (p[len(root):] if root and p.startswith(root + "/") else p).split("/")
        back = f"{root}/read/{parts[2]}" if len(parts) > 2 and parts[1] == "read" and exc.status != 404 else None
        title = {404: "Not found", 409: "Not saved: already submitted", 403: "Not saved"}.get(exc.status, "Not saved")
        return page(request, "error.html", {"title": title, "message": str(exc), "back": back}, exc.status)

    # -- pages ---------------------------------------------------------------------------
    @app.get("/", include_in_schema=False)
    def index() -> Response:
        return go("/assignments")

    @app.get("/login", response_class=HTMLResponse)
    def login_page(request: Request) -> Response:
        return page(request, "login.html", {"error": None})

    @app.post("/login")
    def login(request: Request, token: str = Form(""), csrf_token: str = Form("")) -> Response:
        try:
            ok = csrf_ok(request, csrf_token)
        except RatingError as e:
            return page(request, "login.html", {"error": str(e)}, 400)
        if not ok:
            return page(request, "login.html", {"error": "The form expired; please sign in again."}, 403)
        editor = token_editor(request, token)
        if editor is None:
            return page(request, "login.html", {"error": "That token is not valid."}, 401)
        request.session.clear()
        request.session["editor"] = editor
        request.session["sid"] = store.open_session(db, editor, SESSION_MAX_AGE)
        request.session["csrf"] = secrets.token_urlsafe(32)
        return go("/assignments")

    @app.post("/logout")
    def logout(request: Request, csrf_token: str = Form("")) -> Response:
        editor, via = need_editor(request)
        check_csrf(request, csrf_token, via)
        store.revoke_session(db, request.session.get("sid"))
        request.session.clear()
        return go("/login")

    @app.get("/assignments", response_class=HTMLResponse)
    def assignments_page(request: Request) -> Response:
        editor, _ = need_editor(request)
        items = store.assignments_for(db, editor)
        counts = {"submitted": sum(1 for a in items if a["state"] == "submitted")}
        return page(request, "assignments.html", {"items": items, "counts": counts})

    def own_assignment(editor: str, blind_id: str) -> dict[str, Any]:
        a = store.assignment(db, editor, blind_id)
        if a is None:  # not assigned to this editor, or no such output: the same answer
            raise RatingError("no such assignment", 404)
        return a

    @app.get("/read/{blind_id}", response_class=HTMLResponse)
    def read_page(request: Request, blind_id: str) -> Response:
        editor, _ = need_editor(request)
        a = own_assignment(editor, blind_id)
        if a["rating"] is not None:
            sents = a["sentences"]
            marks = [{"label": rules.CLASS_BY_ID[c]["label"], "sentence": sents[i]} for i, c in a["rating"]["marks"]]
            return page(request, "read_done.html", {"item": a, "marks": marks})
        if a["claims"] is None:
            tok = store.issue_form(db, editor, blind_id, "claims")
            return page(request, "read_claims.html", {"item": a, "form_token": tok})
        tok = store.issue_form(db, editor, blind_id, "rating")
        return page(request, "read_output.html", {
            "item": a, "form_token": tok, "scale": sorted(rules.SCORE_SCALE.items(), reverse=True),
            "max_by_faults": sorted(rules.MAX_SCORE_BY_FAULTS.items()), "consistency_rule": rules.CONSISTENCY_RULE,
            "meaning_classes": [rules.CLASS_BY_ID[c] for c in rules.SENTENCE_MEANING_CLASSES],
            "writing_classes": [rules.CLASS_BY_ID[c] for c in rules.WRITING_CLASSES]})

    @app.post("/read/{blind_id}/claims")
    def post_claims(request: Request, blind_id: str, claims: str = Form(""), csrf_token: str = Form(""),
                    form_token: str = Form("")) -> Response:
        editor, via = need_editor(request)
        check_csrf(request, csrf_token, via)
        own_assignment(editor, blind_id)
        store.save_claims(db, editor, blind_id, store.parse_claims(claims), form_token)
        return go(f"/read/{blind_id}")

    @app.post("/read/{blind_id}/rating")
    def post_rating(request: Request, blind_id: str, score: str = Form(""), found: list[str] = Form([]),
                    mark: list[str] = Form([]), csrf_token: str = Form(""), form_token: str = Form("")) -> Response:
        editor, via = need_editor(request)
        check_csrf(request, csrf_token, via)
        store.submit_reading(db, editor, blind_id, score=score, found=found, marks=mark, form_token=form_token)
        return go(f"/read/{blind_id}")

    # -- JSON API (Bearer) ---------------------------------------------------------------
    @app.get("/api/assignments")
    def api_assignments(request: Request) -> Response:
        editor, _ = need_editor(request)
        return JSONResponse({"editor": editor, "assignments": store.assignments_for(db, editor)})

    @app.post("/api/read/{blind_id}")
    async def api_read(request: Request, blind_id: str) -> Response:
        editor, via = need_editor(request)
        if via:
            check_csrf(request, request.headers.get("x-csrf-token"), via)
        raw = await request.body()
        try:
            body = ReadingIn.model_validate_json(raw)
        except ValidationError as e:
            if any(err.get("type") in ("json_invalid", "model_type") for err in e.errors()):
                raise RatingError("the body must be a JSON object", 400) from None
            raise _validation_error(e) from None
        from starlette.concurrency import run_in_threadpool

        marks = [m.model_dump(by_alias=True, exclude_none=True) for m in body.marks]

        def work() -> dict[str, Any]:
            a = own_assignment(editor, blind_id)
            if a["claims"] is None:
                if body.claims is None:
                    raise RatingError("claims must be a list of strings", 400, "claims")
                parsed = store.parse_claims("\n".join(body.claims))
                # validate the rest before storing anything, so a bad request stores nothing
                s = store.parse_score(body.score)
                idx = [store.parse_mark(m, a["sentences"]) for m in marks]
                for f in body.found:
                    if not 0 <= f < len(parsed):
                        raise RatingError(f"ticked claim {f!r} does not exist (you listed {len(parsed)})", 400,
                                          "found")
                cap = rules.max_score(len(parsed) - len(set(body.found)),
                                      len({i for i, c in idx if c == "invented_fact"}))
                if s > cap:
                    raise RatingError(f"the meaning score can be at most {cap}, not {s}: {rules.CONSISTENCY_RULE}",
                                      400, "score")
                store.save_claims(db, editor, blind_id, parsed, None, require_form=False)
            elif body.claims is not None and body.claims != a["claims"]:
                raise RatingError("the claims for this output were already listed; nothing was changed", 409, "claims")
            return store.submit_reading(db, editor, blind_id, score=body.score, found=body.found, marks=marks,
                                        form_token=None, require_form=False)

        return JSONResponse(await run_in_threadpool(work))

    return app
