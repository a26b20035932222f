"""The editors' rating web app (FastAPI, server-rendered Jinja2 pages, no JavaScript).

Routes
------
GET  /login, POST /login          sign in with the editor token; sets a signed session cookie
POST /logout                      sign out
GET  /assignments                 the signed-in editor's own assignments (blind ids only)
GET  /read/{blind_id}             step 1 (claims) or steps 2-5 (reading) or the submitted reading
POST /read/{blind_id}/claims      save step 1
POST /read/{blind_id}/rating      submit steps 2-5
GET  /api/assignments             JSON list of own assignments
POST /api/read/{blind_id}         JSON: a whole reading in one request (claims, found, score, marks)

Authentication: ``Authorization: Bearer <token>`` on any request, or the session cookie set
by /login (signed with a secret kept in the workspace, so sessions survive a restart).
Cookie-authenticated form posts carry a CSRF token bound to the session; every reading form
also carries a one-time form token, so a replayed form is refused (409) and changes nothing.
An editor reaches only their own assignments (others answer 404), and no page, URL or
response names a tool: outputs are known by random blind ids only.
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
from starlette.middleware.sessions import SessionMiddleware

from ..store.workspace import Workspace
from . import rules, store
from .store import RatingError

HERE = Path(__file__).parent
SESSION_COOKIE = "vb_session"
SESSION_MAX_AGE = 14 * 24 * 3600

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class _NotSignedIn(Exception):
    pass


def create_app(workspace: Workspace | str | Path) -> FastAPI:
    """Build the app over a workspace (a :class:`Workspace`, or a folder path to open; an
    opened-here workspace is closed when the app shuts down). On start-up every output is
    given its readers as far as the registered editors allow."""
    owns_ws = not isinstance(workspace, Workspace)
    ws = Workspace(workspace) if owns_ws else workspace
    store.ensure_schema(ws)
    store.ensure_assignments(ws)
    secret = store.session_secret(ws)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        if owns_ws:
            ws.close()

    app = FastAPI(title="Editors' reading", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.workspace = ws
    app.add_middleware(SessionMiddleware, secret_key=secret, session_cookie=SESSION_COOKIE,
                       max_age=SESSION_MAX_AGE, same_site="strict", https_only=False)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(HERE / "templates")), autoescape=True)
    templates = Jinja2Templates(env=env)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    @app.middleware("http")
    async def headers(request: Request, call_next):
        resp = await call_next(request)
        for k, v in SECURITY_HEADERS.items():
            resp.headers.setdefault(k, v)
        return resp

    # -- auth helpers --------------------------------------------------------------------
    def who(request: Request) -> tuple[str | None, bool]:
        """(editor, via_session)."""
        auth = request.headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            return store.editor_for_token(ws, auth[7:]), False
        name = request.session.get("editor")
        if name and store.editor_exists(ws, name):
            return name, True
        return None, False

    def csrf(request: Request) -> str:
        tok = request.session.get("csrf")
        if not tok:
            tok = request.session["csrf"] = secrets.token_urlsafe(32)
        return tok

    def check_csrf(request: Request, sent: str | None, via_session: bool) -> None:
        if not via_session and request.headers.get("authorization", "")[:7].lower() == "bearer ":
            return  # a Bearer header is never sent by a browser on its own
        expected = request.session.get("csrf")
        if not expected or not sent or not hmac.compare_digest(expected, sent):
            raise RatingError("the form's CSRF token is missing or wrong; reload the page and try again", 403,
                              "csrf_token")

    def wants_html(request: Request) -> bool:
        return "text/html" in request.headers.get("accept", "") and not request.url.path.startswith("/api/")

    def need_editor(request: Request) -> tuple[str, bool]:
        editor, via = who(request)
        if editor is None:
            raise _NotSignedIn()
        return editor, via

    def page(request: Request, name: str, ctx: dict[str, Any], status: int = 200) -> HTMLResponse:
        editor, via = who(request)
        base = {"editor": editor, "via_session": via, "csrf_token": csrf(request)}
        return templates.TemplateResponse(request, name, {**base, **ctx}, status_code=status)

    @app.exception_handler(_NotSignedIn)
    async def not_signed_in(request: Request, exc: _NotSignedIn) -> Response:
        if request.method == "GET" and wants_html(request):
            return RedirectResponse("/login", status_code=303)
        return JSONResponse({"error": "sign in first: send 'Authorization: Bearer <token>' or use /login"},
                            status_code=401, headers={"WWW-Authenticate": "Bearer"})

    @app.exception_handler(RatingError)
    async def rating_error(request: Request, exc: RatingError) -> Response:
        if not wants_html(request):
            return JSONResponse({"error": str(exc), "field": exc.field}, status_code=exc.status)
        parts = request.url.path.split("/")
        back = f"/read/{parts[2]}" if len(parts) > 2 and parts[1] == "read" and exc.status != 404 else None
        title = {404: "Not found", 409: "Not saved: already submitted", 403: "Not saved"}.get(exc.status, "Not saved")
        return page(request, "error.html", {"title": title, "message": str(exc), "back": back}, exc.status)

    # -- pages ---------------------------------------------------------------------------
    @app.get("/", include_in_schema=False)
    def root() -> Response:
        return RedirectResponse("/assignments", status_code=303)

    @app.get("/login", response_class=HTMLResponse)
    def login_page(request: Request) -> Response:
        return page(request, "login.html", {"error": None})

    @app.post("/login")
    def login(request: Request, token: str = Form(""), csrf_token: str = Form("")) -> Response:
        expected = request.session.get("csrf")
        if not expected or not hmac.compare_digest(expected, csrf_token):
            return page(request, "login.html", {"error": "The form expired; please sign in again."}, 403)
        editor = store.editor_for_token(ws, token)
        if editor is None:
            return page(request, "login.html", {"error": "That token is not valid."}, 401)
        request.session.clear()
        request.session["editor"] = editor
        request.session["csrf"] = secrets.token_urlsafe(32)
        return RedirectResponse("/assignments", status_code=303)

    @app.post("/logout")
    def logout(request: Request, csrf_token: str = Form("")) -> Response:
        editor, via = need_editor(request)
        check_csrf(request, csrf_token, via)
        request.session.clear()
        return RedirectResponse("/login", status_code=303)

    @app.get("/assignments", response_class=HTMLResponse)
    def assignments_page(request: Request) -> Response:
        editor, _ = need_editor(request)
        items = store.assignments_for(ws, editor)
        counts = {"submitted": sum(1 for a in items if a["state"] == "submitted")}
        return page(request, "assignments.html", {"items": items, "counts": counts})

    def own_assignment(editor: str, blind_id: str) -> dict[str, Any]:
        a = store.assignment(ws, editor, blind_id)
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
            tok = store.issue_form(ws, editor, blind_id, "claims")
            return page(request, "read_claims.html", {"item": a, "form_token": tok})
        tok = store.issue_form(ws, editor, blind_id, "rating")
        return page(request, "read_output.html", {
            "item": a, "form_token": tok, "scale": sorted(rules.SCORE_SCALE.items(), reverse=True),
            "meaning_classes": [rules.CLASS_BY_ID[c] for c in rules.SENTENCE_MEANING_CLASSES],
            "writing_classes": [rules.CLASS_BY_ID[c] for c in rules.WRITING_CLASSES]})

    @app.post("/read/{blind_id}/claims")
    def post_claims(request: Request, blind_id: str, claims: str = Form(""), csrf_token: str = Form(""),
                    form_token: str = Form("")) -> Response:
        editor, via = need_editor(request)
        check_csrf(request, csrf_token, via)
        own_assignment(editor, blind_id)
        store.save_claims(ws, editor, blind_id, store.parse_claims(claims), form_token)
        return RedirectResponse(f"/read/{blind_id}", status_code=303)

    @app.post("/read/{blind_id}/rating")
    def post_rating(request: Request, blind_id: str, score: str = Form(""), found: list[str] = Form([]),
                    mark: list[str] = Form([]), csrf_token: str = Form(""), form_token: str = Form("")) -> Response:
        editor, via = need_editor(request)
        check_csrf(request, csrf_token, via)
        store.submit_reading(ws, editor, blind_id, score=score, found=found, marks=mark, form_token=form_token)
        return RedirectResponse(f"/read/{blind_id}", status_code=303)

    # -- JSON API (Bearer) ---------------------------------------------------------------
    @app.get("/api/assignments")
    def api_assignments(request: Request) -> Response:
        editor, _ = need_editor(request)
        return JSONResponse({"editor": editor, "assignments": store.assignments_for(ws, editor)})

    @app.post("/api/read/{blind_id}")
    async def api_read(request: Request, blind_id: str) -> Response:
        editor, via = need_editor(request)
        if via:
            check_csrf(request, request.headers.get("x-csrf-token"), via)
        try:
            body = await request.json()
        except ValueError:
            raise RatingError("the body must be a JSON object", 400)
        if not isinstance(body, dict):
            raise RatingError("the body must be a JSON object", 400)
        from starlette.concurrency import run_in_threadpool

        def work() -> dict[str, Any]:
            a = own_assignment(editor, blind_id)
            if a["claims"] is None:
                claims = body.get("claims")
                if not isinstance(claims, list) or not all(isinstance(c, str) for c in claims):
                    raise RatingError("claims must be a list of strings", 400, "claims")
                parsed = store.parse_claims("\n".join(claims))
                # validate the rest before storing anything, so a bad request stores nothing
                store.parse_score(body.get("score"))
                for m in body.get("marks") or []:
                    store.parse_mark(m, a["sentences"])
                for f in body.get("found") or []:
                    if not isinstance(f, int) or isinstance(f, bool) or not 0 <= f < len(parsed):
                        raise RatingError(f"ticked claim {f!r} does not exist (you listed {len(parsed)})", 400,
                                          "found")
                store.save_claims(ws, editor, blind_id, parsed, None, require_form=False)
            elif body.get("claims") is not None and body.get("claims") != a["claims"]:
                raise RatingError("the claims for this output were already listed; nothing was changed", 409, "claims")
            return store.submit_reading(ws, editor, blind_id, score=body.get("score"), found=body.get("found") or [],
                                        marks=body.get("marks") or [], form_token=None, require_form=False)

        return JSONResponse(await run_in_threadpool(work))

    return app
