"""CLI: ``veribench rate serve`` and ``veribench write serve``, the two web apps' servers
(``leaderboard serve``, with the board's other commands, is :mod:`veribench.cli.board`).

A module of its own, loaded only when one of these two commands runs (``COMMANDS`` in
:mod:`veribench.cli.main`): the web stack (FastAPI, the ``web`` extra) is imported here
and nowhere else in the CLI, so every other ``rate`` and ``write`` command works without
it. ``uvicorn`` stays lazy, as every optional package does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from veribench.cli.common import WRITE_PORT, WorkspaceOpt, check_workspace, input_path
from veribench.cli.grammar import CliError
from veribench.rubric.app import create_app as rubric_app
from veribench.rubric.db import FILE_NAME as RUBRIC_STORE
from veribench.rubric.write.app import create_app as writing_app
from veribench.rubric.write.db import FILE_NAME as WRITE_STORE
from veribench.store.workspace import DB_NAME

HostOpt = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0: every interface).")
ForwardedOpt = typer.Option(None, "--forwarded-allow-ips", help="Proxy addresses whose X-Forwarded-For/-Proto "
                                                                 "headers are trusted (comma-separated, as uvicorn "
                                                                 "takes them). Default: none, not even 127.0.0.1.")


def _proxy(forwarded_allow_ips: str | None) -> dict[str, Any]:
    """uvicorn's proxy settings: X-Forwarded-* headers are read only from the proxies named
    with ``--forwarded-allow-ips``. Without it no header is read (``proxy_headers=False``;
    uvicorn would otherwise trust 127.0.0.1 and ``$FORWARDED_ALLOW_IPS``), so the address the
    sign-in limit counts (``request.client.host``, :mod:`veribench.rubric.limits`) is the
    socket's peer, and a local client cannot claim another address to dodge it."""
    if not forwarded_allow_ips or not forwarded_allow_ips.strip():
        return {"proxy_headers": False, "forwarded_allow_ips": ""}
    return {"proxy_headers": True, "forwarded_allow_ips": forwarded_allow_ips}


def _root_path(root_path: str, example: str) -> None:
    if root_path and not root_path.startswith("/"):
        raise typer.BadParameter(f"must start with '/', e.g. {example}", param_hint="--root-path")


def rate_serve_cmd(workspace: Path = WorkspaceOpt, host: str = HostOpt,
                   port: int = typer.Option(8000, "--port", min=1, max=65535, help="Port to listen on."),
                   secure_cookies: bool = typer.Option(False, "--secure-cookies",
                                                       help="Mark the session cookie Secure (HTTPS only): use "
                                                            "behind a TLS-terminating proxy."),
                   root_path: str = typer.Option("", "--root-path",
                                                 help="Path prefix the proxy serves the app under, e.g. /rubric "
                                                      "(links, redirects and the cookie path carry it)."),
                   forwarded_allow_ips: str | None = ForwardedOpt) -> None:
    """Serve the blind reading app (FastAPI + uvicorn). It never locks the workspace's DuckDB file."""
    import uvicorn  # optional (the web extra): imported only to serve

    _root_path(root_path, "/rubric")
    check_workspace(workspace, exists=False)
    if not (workspace / RUBRIC_STORE).is_file() and not (workspace / DB_NAME).is_file():
        raise CliError(f"--workspace {workspace}", "no rubric store here",
                       f"{RUBRIC_STORE} is missing; load pairs first: veribench rate assign -w {workspace} "
                       "--from-cycle DIR")
    app = rubric_app(workspace, secure_cookies=secure_cookies, root_path=root_path)
    scheme = "https" if secure_cookies else "http"
    typer.echo(f"serving the editors' reading app on http://{host}:{port}{root_path.rstrip('/')}/login"
               + (f" (behind the proxy: {scheme}://<your host>{root_path.rstrip('/')}/login; Secure cookies)"
                  if secure_cookies else ""))
    uvicorn.run(app, host=host, port=port, log_level="warning", **_proxy(forwarded_allow_ips))


def write_serve_cmd(workspace: Path = WorkspaceOpt, host: str = HostOpt,
                    port: int = typer.Option(WRITE_PORT, "--port", min=1, max=65535, help="Port to listen on."),
                    secure_cookies: bool = typer.Option(False, "--secure-cookies",
                                                        help="Secure cookie and HSTS: for HTTPS (or a TLS proxy in "
                                                             "front)."),
                    root_path: str = typer.Option("", "--root-path", help="Path prefix behind a proxy, e.g. /write."),
                    ssl_certfile: Path | None = typer.Option(None, "--ssl-certfile", help="Serve HTTPS with this "
                                                             "certificate.", callback=input_path("file")),
                    ssl_keyfile: Path | None = typer.Option(None, "--ssl-keyfile", help="The certificate's private "
                                                            "key.", callback=input_path("file")),
                    forwarded_allow_ips: str | None = ForwardedOpt) -> None:
    """Serve the writing app (FastAPI + uvicorn). It never holds the workspace."""
    import uvicorn  # optional (the web extra): imported only to serve

    _root_path(root_path, "/write")
    if (ssl_certfile is None) != (ssl_keyfile is None):
        raise typer.BadParameter("give --ssl-certfile and --ssl-keyfile together", param_hint="--ssl-certfile")
    check_workspace(workspace, store=WRITE_STORE,
                    fix=f"create invitations first: veribench write invite -w {workspace} --prompt-file FILE")
    tls = ssl_certfile is not None
    app = writing_app(workspace, secure_cookies=secure_cookies or tls, root_path=root_path)
    scheme = "https" if tls else "http"
    typer.echo(f"serving the writing app on {scheme}://{host}:{port}{root_path.rstrip('/')}/ "
               "(writers open their /i/<token> links)")
    if port != WRITE_PORT:
        typer.echo(f"links for this address: veribench write invite|reissue ... --port {port} (or --base-url); "
                   f"links printed without either point at port {WRITE_PORT}")
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False,
                ssl_certfile=str(ssl_certfile) if tls else None, ssl_keyfile=str(ssl_keyfile) if tls else None,
                **_proxy(forwarded_allow_ips))
