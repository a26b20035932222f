"""The leaderboard's web app (FastAPI): a JSON API for submitters and a few HTML pages.

Routes (below the app's root path, ``--root-path`` behind a proxy)
------
JSON API (``Authorization: Bearer <team token>`` where marked; never a cookie):

- ``GET /texts`` (Bearer): the board's texts file (JSONL of ``{"id", "text"}``), no labels.
- ``POST /submissions`` (Bearer): ``multipart/form-data`` with the file field ``predictions``
  (RAID's ``predictions.json``, or a veribench run export with ``format=veribench``), the
  optional file field ``metadata`` (RAID's ``metadata.json``) and the optional text field
  ``format`` (``raid``, the default, or ``veribench``). Answers ``201`` with the signed
  receipt (:func:`veribench.leaderboard.receipts.sign_receipt`).
- ``GET /submissions`` (Bearer): the caller's own submissions, never another team's.
- ``GET /submissions/{submission_id}`` (Bearer): one of the caller's own submissions, with
  its receipt; any other id (another team's included) answers ``404``, the same answer.
- ``GET /board``: the public scores: before the reveal, one headline metric per entry and
  only through the Ladder (:attr:`Board.public_scores`); after it, the full results too.
- ``GET /commitment``: the launch record (its ``timestamp`` says whether it was time-stamped);
  ``GET /commitment.tsr``: its RFC 3161 token (``404`` with the reason when none was taken).
- ``GET /public-key``: the board's Ed25519 public key (PEM), for
  ``veribench leaderboard check-receipt``.

HTML pages: ``GET /`` (the public board), ``GET /login`` and ``POST /login`` (sign in with
the team token: a server-side session, held in this process's memory, so a restart signs
everyone out), ``GET /team`` (the team's own submissions and an upload form),
``POST /team/submit`` and ``POST /logout``. Every form carries a CSRF token bound to the
session; a form post without it, or with a wrong one, is refused (``403``) and changes
nothing. The pages never take a Bearer header, and the JSON API never takes the cookie, so a
cross-site request cannot act for a signed-in team.

Bounded work (:mod:`veribench.leaderboard.limits`): bodies are capped while they are read
(``413`` before the rest is read), and requests, failed sign-ins and submissions are rate
limited (``429`` with ``Retry-After``).

Errors: every refusal is ``{"error": "<one line>", "field": ..., "record": ...}`` (JSON) or
a page with the one line: the line names the file, the record (index and id) and the field
(:class:`veribench.errors.InputError`); nothing is stored by a refused request, and no
traceback or stored path is shown.

No path from a request reaches the file system: the only value a route takes from the URL
is a submission id, looked up among the caller's own submissions; an upload's file name is
never read (the board stores a file by its content hash); the stylesheet is one fixed file.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, get_args

import jinja2
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.sessions import SessionMiddleware

from veribench.errors import ECHO_MAX, InputError, VeribenchError, echo
from veribench.leaderboard.limits import Limits, RateLimited, TooLarge, read_body
from veribench.leaderboard.service import SubmissionFormat

HERE = Path(__file__).parent
SESSION_COOKIE = "vb_board"
SESSION_MAX_AGE = 12 * 3600
#: The stylesheet, read once: the one file the app serves besides its pages.
STYLE = (HERE / "static" / "board.css").read_text(encoding="utf-8")
#: Submission formats the API takes (``format`` field): the board's (RAID's, veribench's run export).
FORMATS: tuple[str, ...] = get_args(SubmissionFormat)

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class BoardLike(Protocol):
    """What the app needs of :class:`veribench.leaderboard.service.Board` (the contract)."""

    def team_for_token(self, token: str) -> Any: ...
    def texts_file(self) -> bytes: ...
    def submit(self, team: Any, predictions: bytes, metadata: bytes | None, fmt: str) -> dict[str, Any]: ...
    def public_scores(self) -> list[dict[str, Any]]: ...
    def team_submissions(self, team: Any) -> list[dict[str, Any]]: ...
    def results(self) -> dict[str, Any]: ...
    def commitment(self) -> dict[str, Any]: ...
    def commitment_token(self) -> bytes | None: ...
    @property
    def public_key_pem(self) -> str: ...


class Refused(Exception):
    """A request refused with one line: HTTP ``status``, the ``field`` and ``record`` named."""

    def __init__(self, message: str, status: int = 400, field: str | None = None, record: object | None = None):
        super().__init__(" ".join(message.split()))
        self.status, self.field, self.record = status, field, record


class _NotSignedIn(Exception):
    pass


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())


def _team_name(team: Any) -> str:
    return str(getattr(team, "name", team))


class Sessions:
    """Server-side page sessions in memory: id -> (team, expiry). Thread-safe."""

    def __init__(self, max_age: float = SESSION_MAX_AGE, clock: Callable[[], float] = time.monotonic):
        self.max_age, self.clock = max_age, clock
        self._by_id: dict[str, tuple[Any, float]] = {}
        self._lock = threading.Lock()

    def open(self, team: Any) -> str:
        sid = secrets.token_urlsafe(32)
        with self._lock:
            now = self.clock()
            for k in [k for k, (_, exp) in self._by_id.items() if exp <= now]:
                del self._by_id[k]
            self._by_id[sid] = (team, now + self.max_age)
        return sid

    def team(self, sid: Any) -> Any:
        if not isinstance(sid, str):
            return None
        with self._lock:
            got = self._by_id.get(sid)
        return got[0] if got is not None and got[1] > self.clock() else None

    def close(self, sid: Any) -> None:
        with self._lock:
            self._by_id.pop(sid, None) if isinstance(sid, str) else None


class RootPath:
    """ASGI wrapper: every request is served as if below ``root`` (``scope["root_path"]``)."""

    def __init__(self, app: Any, root: str):
        self.app, self.root = app, root

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            scope = {**scope, "root_path": self.root}
        await self.app(scope, receive, send)


async def _parse_form(request: Request, body: bytes, *, files: int, fields: int) -> FormData:
    """The multipart or urlencoded form in ``body`` (already read under its cap)."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    try:
        form = await Request(request.scope, receive).form(max_files=files, max_fields=fields)
    except StarletteHTTPException as e:
        raise Refused(f"the form could not be read: {e.detail}", 400) from None
    except Exception as e:  # any parser failure: the sender's malformed body
        raise Refused(f"the form could not be read: {_one_line(e) or type(e).__name__}", 400) from None
    seen: set[str] = set()
    for key, _ in form.multi_items():
        if key in seen:  # which one would count? neither: a form field is sent once
            raise Refused(f"the form has the field {echo(key)} more than once", 400, key[:ECHO_MAX])
        seen.add(key)
    return form


async def _file(form: FormData, name: str, *, required: bool) -> bytes | None:
    value = form.get(name)
    if value == "" or (isinstance(value, UploadFile) and not value.filename and not value.size):
        value = None  # a browser sends an empty part for a file input left empty
    if value is None:
        if required:
            raise Refused(f"the form has no file field {name!r}", 400, name)
        return None
    if not isinstance(value, UploadFile):
        raise Refused(f"the field {name!r} must be a file upload, not a text field", 400, name)
    return await value.read()


def _format(form: FormData) -> str:
    fmt = form.get("format") or "raid"
    if not isinstance(fmt, str) or fmt not in FORMATS:
        raise Refused(f"format must be one of {', '.join(FORMATS)}", 400, "format")
    return fmt


def create_app(board: BoardLike, *, limits: Limits | None = None, secure_cookies: bool = False,
               root_path: str = "", title: str = "Leaderboard") -> FastAPI:
    """Build the app over an open board.

    Args:
        board: the board service (:class:`veribench.leaderboard.service.Board`); the caller
            opens and closes it.
        limits: caps and rate limiters (:class:`~veribench.leaderboard.limits.Limits`; fresh
            defaults when None).
        secure_cookies: mark the session cookie ``Secure`` (HTTPS only): behind a TLS proxy.
        root_path: the path prefix the app is served under (``/board``) behind a proxy.
        title: the board's name, shown on the pages.

    Returns:
        The FastAPI app (serve it with uvicorn; ``veribench leaderboard serve``).
    """
    lim = limits or Limits()
    root = "/" + root_path.strip("/") if root_path.strip("/") else ""
    sessions = Sessions()
    lock = threading.Lock()  # one board call that writes at a time (submit)

    app = FastAPI(title=title, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.board, app.state.limits, app.state.sessions = board, lim, sessions
    app.add_middleware(SessionMiddleware, secret_key=secrets.token_urlsafe(32), session_cookie=SESSION_COOKIE,
                       max_age=SESSION_MAX_AGE, same_site="strict", https_only=secure_cookies, path=root or "/")
    if root:
        app.add_middleware(RootPath, root=root)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(HERE / "templates")), autoescape=True)
    templates = Jinja2Templates(env=env)

    def address(request: Request) -> str:
        return request.client.host if request.client else ""

    @app.middleware("http")
    async def guard(request: Request, call_next: Any) -> Response:
        try:
            lim.requests.take(address(request))
        except RateLimited as e:
            return JSONResponse({"error": str(e), "field": None, "record": None}, status_code=429,
                                headers={"Retry-After": str(e.retry_after), **SECURITY_HEADERS})
        resp: Response = await call_next(request)
        resp.headers.update({k: v for k, v in SECURITY_HEADERS.items() if k not in resp.headers})
        return resp

    def wants_html(request: Request) -> bool:
        p = request.url.path[len(root):] if root and request.url.path.startswith(root) else request.url.path
        return p in ("/", "/login", "/logout", "/team", "/team/submit")

    def go(path: str) -> RedirectResponse:
        return RedirectResponse(root + path, status_code=303)

    # -- authentication ------------------------------------------------------------------
    def token_team(request: Request, token: str) -> Any:
        """A sign-in attempt with ``token``: its team, or None (a counted failure)."""
        where = address(request)
        lim.signins.check(where)
        team = board.team_for_token(token) if token else None
        if team is None:
            try:
                lim.signins.take(where)
            except RateLimited:
                pass
        return team

    def bearer_team(request: Request) -> Any:
        auth = request.headers.get("authorization", "")
        if auth[:7].lower() != "bearer ":
            raise _NotSignedIn()
        token = auth[7:].strip()
        try:
            token.encode("ascii")
        except UnicodeEncodeError:
            token = ""
        team = token_team(request, token)
        if team is None:
            raise _NotSignedIn()
        return team

    def page_team(request: Request) -> Any:
        return sessions.team(request.session.get("sid"))

    def csrf(request: Request) -> str:
        """The session's CSRF token (made on first use; the session cookie is signed)."""
        return str(request.session.setdefault("csrf", secrets.token_urlsafe(32)))

    def check_csrf(request: Request, sent: Any) -> None:
        expected = request.session.get("csrf")
        ok = (isinstance(sent, str) and isinstance(expected, str) and sent.isascii() and expected != ""
              and hmac.compare_digest(expected.encode(), sent.encode()))
        if not ok:
            raise Refused("the form's CSRF token is missing or wrong; reload the page and try again", 403,
                          "csrf_token")

    def page(request: Request, name: str, ctx: dict[str, Any], status: int = 200) -> HTMLResponse:
        team = page_team(request)
        base = {"team": _team_name(team) if team is not None else None, "csrf_token": csrf(request),
                "root": root, "title": title}
        return templates.TemplateResponse(request, name, {**base, **ctx}, status_code=status)

    # -- errors: one line, never a traceback ----------------------------------------------
    def refusal(request: Request, status: int, message: str, field: str | None = None, record: object = None,
                headers: dict[str, str] | None = None) -> Response:
        if wants_html(request):
            resp: Response = page(request, "error.html", {"message": message}, status)
        else:
            resp = JSONResponse({"error": message, "field": field, "record": record}, status_code=status)
        if headers:
            resp.headers.update(headers)
        return resp

    @app.exception_handler(_NotSignedIn)
    async def not_signed_in(request: Request, exc: _NotSignedIn) -> Response:
        if wants_html(request) and request.method == "GET":
            return go("/login")
        return JSONResponse({"error": "sign in first: send 'Authorization: Bearer <team token>'", "field": None,
                             "record": None}, status_code=401, headers={"WWW-Authenticate": "Bearer"})

    @app.exception_handler(RateLimited)
    async def rate_limited(request: Request, exc: RateLimited) -> Response:
        return refusal(request, 429, str(exc), headers={"Retry-After": str(exc.retry_after)})

    @app.exception_handler(TooLarge)
    async def too_large(request: Request, exc: TooLarge) -> Response:
        return refusal(request, 413, str(exc), headers={"Connection": "close"})

    @app.exception_handler(Refused)
    async def refused(request: Request, exc: Refused) -> Response:
        return refusal(request, exc.status, str(exc), exc.field, exc.record)

    @app.exception_handler(InputError)
    async def input_error(request: Request, exc: InputError) -> Response:
        rec = exc.record if isinstance(exc.record, (str, int)) or exc.record is None else str(exc.record)
        return refusal(request, 400, _one_line(exc), exc.field, rec)

    @app.exception_handler(VeribenchError)
    async def veribench_error(request: Request, exc: VeribenchError) -> Response:
        return refusal(request, 409, _one_line(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        message = {404: "not found", 405: "method not allowed"}.get(exc.status_code, str(exc.detail))
        return refusal(request, exc.status_code, message)

    async def body(request: Request, cap: int) -> bytes:
        try:
            return await read_body(request.headers, request.stream(), cap)
        except ValueError as e:
            raise Refused(str(e), 400) from None

    async def submit(request: Request, team: Any, form: FormData) -> dict[str, Any]:
        fmt = _format(form)
        predictions = await _file(form, "predictions", required=True)
        metadata = await _file(form, "metadata", required=False)
        lim.submissions.take(_team_name(team))

        def work() -> dict[str, Any]:
            with lock:
                return board.submit(team, predictions or b"", metadata, fmt)

        return await run_in_threadpool(work)

    def own(team: Any, submission_id: str) -> dict[str, Any]:
        for s in board.team_submissions(team):
            if str(s.get("submission_id")) == submission_id:
                return s
        raise Refused("no such submission", 404, "submission_id")

    # -- JSON API ------------------------------------------------------------------------
    @app.get("/texts")
    def texts(request: Request) -> Response:
        bearer_team(request)
        return Response(board.texts_file(), media_type="application/x-ndjson",
                        headers={"Content-Disposition": 'attachment; filename="texts.jsonl"'})

    @app.post("/submissions", status_code=201)
    async def post_submission(request: Request) -> Response:
        team = bearer_team(request)
        lim.submissions.check(_team_name(team))
        form = await _parse_form(request, await body(request, lim.max_upload), files=2, fields=3)
        return JSONResponse(await submit(request, team, form), status_code=201)

    @app.get("/submissions")
    def list_submissions(request: Request) -> Response:
        team = bearer_team(request)
        return JSONResponse({"team": _team_name(team), "submissions": board.team_submissions(team)})

    @app.get("/submissions/{submission_id}")
    def get_submission(request: Request, submission_id: str) -> Response:
        return JSONResponse(own(bearer_team(request), submission_id))

    def public() -> dict[str, Any]:
        """The public board: the Ladder's scores, and the full results once revealed (the
        board refuses :meth:`results` before the reveal with a :class:`VeribenchError`)."""
        try:
            results: dict[str, Any] | None = board.results()
        except VeribenchError:
            results = None
        return {"revealed": results is not None, "scores": board.public_scores(), "results": results}

    @app.get("/board")
    def get_board() -> Response:
        return JSONResponse(public())

    @app.get("/commitment")
    def commitment() -> Response:
        return JSONResponse(board.commitment())

    @app.get("/commitment.tsr")
    def commitment_token(request: Request) -> Response:
        token = board.commitment_token()
        if token is None:  # the record's timestamp.reason says why
            reason = (board.commitment().get("timestamp") or {}).get("reason") or "no time-stamp"
            return refusal(request, 404, reason)
        return Response(token, media_type="application/timestamp-reply")

    @app.get("/public-key")
    def public_key() -> Response:
        return PlainTextResponse(board.public_key_pem, media_type="application/x-pem-file")

    @app.get("/static/board.css", include_in_schema=False)
    def style() -> Response:
        return Response(STYLE, media_type="text/css")

    # -- pages ---------------------------------------------------------------------------
    @app.get("/", response_class=HTMLResponse)
    def board_page(request: Request) -> Response:
        return page(request, "board.html", public())

    @app.get("/login", response_class=HTMLResponse)
    def login_page(request: Request) -> Response:
        return page(request, "login.html", {"error": None})

    @app.post("/login")
    async def login(request: Request) -> Response:
        form = await _parse_form(request, await body(request, lim.max_form), files=0, fields=2)
        check_csrf(request, form.get("csrf_token"))
        token = form.get("token")
        team = token_team(request, token if isinstance(token, str) and token.isascii() else "")
        if team is None:
            return page(request, "login.html", {"error": "That token is not valid."}, 401)
        request.session.clear()
        request.session["sid"] = sessions.open(team)
        request.session["csrf"] = secrets.token_urlsafe(32)
        return go("/team")

    @app.post("/logout")
    async def logout(request: Request) -> Response:
        form = await _parse_form(request, await body(request, lim.max_form), files=0, fields=1)
        check_csrf(request, form.get("csrf_token"))
        sessions.close(request.session.get("sid"))
        request.session.clear()
        return go("/login")

    def signed_in(request: Request) -> Any:
        team = page_team(request)
        if team is None:
            raise _NotSignedIn()
        return team

    @app.get("/team", response_class=HTMLResponse)
    def team_page(request: Request) -> Response:
        team = signed_in(request)
        return page(request, "team.html", {"submissions": board.team_submissions(team), "receipt": None})

    @app.post("/team/submit")
    async def team_submit(request: Request) -> Response:
        team = signed_in(request)
        lim.submissions.check(_team_name(team))
        form = await _parse_form(request, await body(request, lim.max_upload), files=2, fields=4)
        check_csrf(request, form.get("csrf_token"))
        receipt = await submit(request, team, form)
        return page(request, "team.html", {"submissions": board.team_submissions(team), "receipt": receipt}, 201)

    return app
