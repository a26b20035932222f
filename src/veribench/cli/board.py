"""CLI: the organiser's ``leaderboard`` commands, each opening the board named by ``--config``
(:meth:`veribench.leaderboard.service.Board.open`):

    veribench leaderboard launch --config board.toml --hidden-set FILE [--importer documents|fastdetectgpt]
    veribench leaderboard add-team NAME --config board.toml        # the token is the last line printed
    veribench leaderboard serve --config board.toml [--host 127.0.0.1] [--port 8200] [--root-path /board]
                                [--secure-cookies] [--forwarded-allow-ips IPS]
    veribench leaderboard reveal --config board.toml [--force]
    veribench leaderboard check-reveal REVEAL_DIR (--commitment LAUNCH.json | --url URL)

A module of its own (``COMMANDS`` in :mod:`veribench.cli.main` loads each of these commands
from here), so a team's ``submit`` and ``check-receipt`` (:mod:`veribench.cli.leaderboard`)
import neither the database nor the web stack. ``serve`` binds 127.0.0.1 unless told, and
reads X-Forwarded-* headers only from the proxies named (:func:`veribench.cli.serve._proxy`).
The guide: ``docs/leaderboard.md``.
"""

from __future__ import annotations

import base64
import warnings
from pathlib import Path
from typing import Any

import httpx
import typer

from veribench.cli.common import choice, input_path, warn
from veribench.cli.grammar import CliError
from veribench.cli.leaderboard import TOKEN_ENV
from veribench.cli.serve import ForwardedOpt, HostOpt, _proxy, _root_path
from veribench.errors import InputError
from veribench.hashing import loads_strict
from veribench.leaderboard.app import create_app
from veribench.leaderboard.service import (
    IMPORTERS,
    Board,
    check_receipts_in_reveal,
    check_reveal_against_launch,
    teams_without_receipts,
)

ConfigOpt = typer.Option(..., "--config", help="The board's board.toml (docs/leaderboard.md).",
                         callback=input_path("file"))


def launch_cmd(config: Path = ConfigOpt,
               hidden_set: Path = typer.Option(..., "--hidden-set", help="The hidden test set: texts with labels, "
                                               "arms and tags, read by --importer.", callback=input_path("path")),
               importer: str = typer.Option("documents", "--importer", help="How the set is read: "
                                            + "|".join(IMPORTERS) + ".", callback=choice(IMPORTERS, "importer"))) -> None:
    """Commit the hidden set (Merkle root over texts, labels and a secret salt) and the protocol; publish the record."""
    with Board.open(config) as board:
        record = board.launch(hidden_set, importer)
    typer.echo(f"launched board {record.get('board')}: {record.get('n')} texts committed, root {record.get('root')}")
    stamp = record.get("timestamp") or {}
    typer.echo(f"time-stamped by {stamp['tsa_url']}: {config.parent / 'commitment.tsr'}" if stamp.get("tsa_url")
               else f"{stamp.get('reason')} (name one as tsa_url in board.toml)")
    for note in record.get("notes") or []:
        typer.echo(f"warning: {note}")
    typer.echo(f"the public record is {config.parent / 'commitment.json'} (served at /commitment); keep the board "
               "folder's signing_key.pem and the database secret (docs/leaderboard.md)")


def add_team_cmd(name: str = typer.Argument(..., help="Team name: 1-40 letters, digits, '-' or '_'."),
                 config: Path = ConfigOpt) -> None:
    """Register a team; its API token is printed once, on the last line (only its SHA-256 is stored)."""
    with Board.open(config) as board:
        token = board.add_team(name)
    typer.echo(f"team {name} added. Give the team this token privately; it is shown only now, and the team sends "
               f"it as 'Authorization: Bearer <token>' or sets {TOKEN_ENV} for `veribench leaderboard submit`:")
    typer.echo(token)


def reveal_cmd(config: Path = ConfigOpt,
               force: bool = typer.Option(False, "--force", help="Reveal before the board's reveal_at: this ends "
                                          "the cycle for every team (submissions close).")) -> None:
    """Publish the labels, the salt and one bundle per entry; `veribench verify` then re-derives every number.

    Each warning of the reveal (e.g. an entry's undefined canary test) is one line
    ``warning: <message>`` on standard error."""
    with Board.open(config) as board, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)  # each of the reveal's own (UndefinedMetricWarning...)
        out = board.reveal(force=force)
    for w in caught:
        warn(" ".join(str(w.message).split()))
    typer.echo(f"revealed: {out} (labels, salt, commitment, protocol, results.json, bundles/)")
    typer.echo(f"check it: veribench verify {out / 'bundles' / 'all'} (and each team's bundle in {out / 'bundles'})")


def serve_cmd(config: Path = ConfigOpt, host: str = HostOpt,
              port: int = typer.Option(8200, "--port", min=1, max=65535, help="Port to listen on."),
              secure_cookies: bool = typer.Option(False, "--secure-cookies", help="Mark the session cookie Secure "
                                                  "(HTTPS only): behind a TLS-terminating proxy."),
              root_path: str = typer.Option("", "--root-path", help="Path prefix behind a proxy, e.g. /board."),
              forwarded_allow_ips: str | None = ForwardedOpt) -> None:
    """Serve a leaderboard: the JSON API for submitters and the public pages (FastAPI + uvicorn)."""
    import uvicorn  # optional (the web extra): imported only to serve

    _root_path(root_path, "/board")
    with Board.open(config) as board:
        board.check_texts()  # /texts is never served truncated or altered
        name = board.cfg.board.name
        app = create_app(board, secure_cookies=secure_cookies, root_path=root_path, title=name)
        typer.echo(f"serving board {name} on http://{host}:{port}{root_path.rstrip('/')}/ "
                   "(behind a reverse proxy: docs/leaderboard.md)")
        uvicorn.run(app, host=host, port=port, log_level="warning", **_proxy(forwarded_allow_ips))


def check_reveal_cmd(reveal_dir: Path = typer.Argument(..., help="The reveal folder the board published.",
                                                       callback=input_path("folder")),
                     commitment: Path | None = typer.Option(None, "--commitment", help="The launch record you saved "
                                                            "from GET /commitment at the launch (JSON).",
                                                            callback=input_path("file")),
                     url: str | None = typer.Option(None, "--url", help="Fetch the launch record from the board's "
                                                    "GET /commitment (and /commitment.tsr) instead: trusts the "
                                                    "board now."),
                     receipts_dir: Path | None = typer.Option(None, "--receipts", help="A folder of receipts "
                                                              "(*.json) submitters saved: each must be in the "
                                                              "reveal.", callback=input_path("folder"))) -> None:
    """Check a reveal against the launch record: commitment, time stamp, set, bundles, Ladder; exit 1 on any problem."""
    if (commitment is None) == (url is None):
        raise CliError("--commitment/--url", "give exactly one: the saved launch record, or the board's address")
    where = f"--commitment {commitment}" if commitment is not None else f"--url {url}"
    try:
        if commitment is not None:
            launch = loads_strict(commitment.read_bytes())
        else:
            r = httpx.get(f"{str(url).rstrip('/')}/commitment", timeout=30.0)
            if r.status_code != 200:
                raise CliError(where, f"GET /commitment answered HTTP {r.status_code}")
            launch = loads_strict(r.content)
            t = httpx.get(f"{str(url).rstrip('/')}/commitment.tsr", timeout=30.0)
            if t.status_code == 200:
                launch = {"commitment": launch, "tsa_token_b64": base64.b64encode(t.content).decode("ascii")}
            elif t.status_code != 404:
                raise CliError(where, f"GET /commitment.tsr answered HTTP {t.status_code}")
    except (ValueError, UnicodeDecodeError) as e:
        raise CliError(where, f"not a JSON launch record: {' '.join(str(e).split())}") from None
    except httpx.HTTPError as e:
        raise CliError(where, f"the board could not be reached: {type(e).__name__}") from None
    try:
        problems = check_reveal_against_launch(reveal_dir, launch)
    except InputError as e:
        raise CliError(where, e.reason) from None
    saved: list[tuple[str, Any]] = []
    if receipts_dir is not None:
        for p_ in sorted(receipts_dir.glob("*.json")):
            try:
                saved.append((str(p_), loads_strict(p_.read_bytes())))
            except (OSError, ValueError, UnicodeDecodeError) as e:
                raise CliError(f"--receipts {p_}", f"not a JSON receipt: {' '.join(str(e).split())}") from None
        problems += check_receipts_in_reveal(reveal_dir, saved)
    for p in problems:
        typer.echo(" ".join(p.split()), err=True)
    if problems:
        raise typer.Exit(1)
    unchecked = teams_without_receipts(reveal_dir, saved)
    if unchecked:
        typer.echo(f"note: no receipt given for {', '.join(unchecked)}: which submissions and how many of theirs "
                   "ladder.json holds rests on the organiser's word (give all of a team's receipts with --receipts)")
    typer.echo(f"reveal OK: {reveal_dir} is the launch commitment's set and protocol; every bundle verifies; "
               "ladder.json and results.json are byte for byte their re-derivation under the committed rules "
               "(every headline, released value, grid cell and canary test)")
