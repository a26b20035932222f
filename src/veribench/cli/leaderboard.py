"""CLI group ``leaderboard``: run a board (organiser) and submit to one (teams).

    veribench leaderboard launch --config board.toml --hidden-set FILE [--importer documents|fastdetectgpt]
    veribench leaderboard add-team NAME --config board.toml        # the token is the last line printed
    veribench leaderboard serve --config board.toml [--host 127.0.0.1] [--port 8200] [--root-path /board]
    veribench leaderboard reveal --config board.toml
    veribench leaderboard submit --url URL --predictions predictions.json [--metadata metadata.json]
                                 [--predictions-format raid|veribench] [-o receipt.json]
    veribench leaderboard check-receipt RECEIPT --public-key board.pem [--predictions predictions.json]
                                        [--commitment LAUNCH.json]

``submit`` reads the team's token from the environment variable ``VERIBENCH_BOARD_TOKEN``
only (never from the command line, where other users of the machine and the shell's
history would see it), never prints it, and saves the signed receipt the board returns.
``check-receipt`` works offline: it checks the Ed25519 signature against the board's public
key (``GET /public-key``) and, with ``--predictions``, that the receipt covers that file.
The organiser's commands (``launch``, ``add-team``, ``serve``, ``reveal``) live in
:mod:`veribench.cli.board`, loaded on its own: a team's ``submit`` and ``check-receipt`` need
neither the board's database stack nor the web stack. The organiser's guide is ``docs/leaderboard.md``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import httpx
import typer

from veribench.cli.common import choice, input_path, out_opt, write_json
from veribench.cli.grammar import CliError
from veribench.errors import InputError
from veribench.hashing import loads_strict, sha256_bytes
from veribench.leaderboard.receipts import check_receipt, commitment_sha256, launch_record_parts

#: What ``--predictions-format`` takes: the board's formats (``service.SubmissionFormat``; a test
#: checks they agree: this module, a team's client, never imports the board's service).
FORMATS: tuple[str, ...] = ("raid", "veribench")
#: The one place a team's token is read from.
TOKEN_ENV = "VERIBENCH_BOARD_TOKEN"
#: A submission id the receipt's default file name may carry (a hostile board cannot choose a path).
_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,80}")

leaderboard_app = typer.Typer(help="A leaderboard with a hidden test set committed in advance: launch, "
                                   "teams, serve, submit, receipts, reveal.", no_args_is_help=True)


def _url(value: str) -> str:
    if not re.match(r"https?://[^/\s]+", value or ""):
        raise typer.BadParameter("must be the board's http:// or https:// address, e.g. https://board.example.org",
                                 param_hint="--url")
    return value.rstrip("/")


def _read_json_file(path: Path, what: str) -> Any:
    try:
        return loads_strict(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as e:
        raise CliError(str(path), f"not a JSON {what}: {' '.join(str(e).split())}") from None


@leaderboard_app.command("submit")
def submit_cmd(url: str = typer.Option(..., "--url", help="The board's address (https://...).", callback=_url),
               predictions: Path = typer.Option(..., "--predictions", help="RAID's predictions.json (or a veribench "
                                                "run export with --predictions-format veribench).", callback=input_path("file")),
               metadata: Path | None = typer.Option(None, "--metadata", help="RAID's metadata.json.",
                                                    callback=input_path("file")),
               fmt: str = typer.Option("raid", "--predictions-format", help="raid|veribench: RAID's predictions.json "
                                       "or a veribench run export.", callback=choice(FORMATS, "format")),
               out: Path | None = out_opt("Where to save the signed receipt (default: receipt-<submission id>.json).",
                                          None)) -> None:
    """Send predictions to a board (token from VERIBENCH_BOARD_TOKEN) and save the signed receipt."""
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise CliError(TOKEN_ENV, "not set", f"export {TOKEN_ENV}=<your team token>; the token is never taken "
                                             "on the command line")
    files: dict[str, tuple[str, bytes, str]] = {
        "predictions": ("predictions.json", predictions.read_bytes(), "application/json")}
    if metadata is not None:
        files["metadata"] = ("metadata.json", metadata.read_bytes(), "application/json")
    try:
        r = httpx.post(f"{url}/submissions", headers={"Authorization": f"Bearer {token}"}, files=files,
                       data={"format": fmt}, timeout=httpx.Timeout(30.0, read=600.0))
    except httpx.HTTPError as e:
        raise CliError(f"--url {url}", f"the board could not be reached: {type(e).__name__}") from None
    try:
        body = r.json()
    except ValueError:
        body = None
    if r.status_code != 201 or not isinstance(body, dict):
        said = body.get("error") if isinstance(body, dict) else None
        raise CliError(f"--url {url}", f"the board refused the submission (HTTP {r.status_code}): "
                                       + " ".join(str(said or r.reason_phrase).split()))
    sid = str(body.get("submission_id", ""))
    if out is None:
        if not _SAFE_ID.fullmatch(sid):
            raise CliError(f"--url {url}", "the receipt's submission_id is not a plain id; nothing was saved",
                           "pass -o receipt.json")
        out = Path(f"receipt-{sid}.json")
    write_json(out, body)
    typer.echo(f"submitted: submission {sid}, predictions sha256 {body.get('predictions_sha256')}; receipt saved to "
               f"{out}")
    typer.echo(f"check it offline: veribench leaderboard check-receipt {out} --public-key board.pem "
               f"(the key: {url}/public-key)")


@leaderboard_app.command("check-receipt")
def check_receipt_cmd(receipt: Path = typer.Argument(..., help="The receipt (JSON) the board returned.",
                                                     callback=input_path("file")),
                      public_key: Path = typer.Option(..., "--public-key", help="The board's public key (PEM).",
                                                      callback=input_path("file")),
                      predictions: Path | None = typer.Option(None, "--predictions", help="Also check that the "
                                                              "receipt covers this predictions file.",
                                                              callback=input_path("file")),
                      commitment: Path | None = typer.Option(None, "--commitment", help="Also check that the "
                                                             "receipt signs this launch record (the JSON of GET "
                                                             "/commitment you saved at the launch).",
                                                             callback=input_path("file"))) -> None:
    """Check a receipt offline: its Ed25519 signature, the predictions file and the launch record it covers."""
    doc = _read_json_file(receipt, "receipt")
    try:
        pem = public_key.read_text(encoding="ascii")
    except UnicodeDecodeError:
        raise CliError(f"--public-key {public_key}", "not a PEM public key (not ASCII text)") from None
    try:
        check_receipt(doc, pem, source=str(receipt))
    except InputError as e:
        where = f"{receipt}" + (f", field {e.field!r}" if e.field else "")
        raise CliError(where, f"the receipt does not hold: {e.reason}") from None
    if predictions is not None:
        got = sha256_bytes(predictions.read_bytes())
        if got != doc["predictions_sha256"]:
            raise CliError(f"--predictions {predictions}", f"this file's SHA-256 is {got}; the receipt covers "
                                                           f"{doc['predictions_sha256']}")
    if commitment is not None:
        try:
            record, _ = launch_record_parts(_read_json_file(commitment, "launch record"))
        except InputError as e:
            raise CliError(f"--commitment {commitment}", e.reason) from None
        want = commitment_sha256(record)
        if doc["commitment_sha256"] != want:
            raise CliError(f"{receipt}, field 'commitment_sha256'", f"the receipt signs commitment {doc['commitment_sha256']}; "
                                                                    f"the launch record's is {want}")
    typer.echo(f"receipt OK: board {doc['board']}, team {doc['team']}, submission {doc['submission_id']}, received "
               f"{doc['received_at']}, predictions sha256 {doc['predictions_sha256']}, signed by key "
               f"{doc['key_id'][:16]}..." + (" (and it covers the predictions file given)" if predictions else "")
               + (" (and it signs the launch record given)" if commitment else ""))
    if json.dumps(doc.get("tsa_token_b64")) != "null":
        typer.echo("it carries an RFC 3161 time-stamp token (tsa_token_b64)")
