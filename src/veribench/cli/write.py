"""CLI group ``write``: arm B, fresh human text written in an editor that keeps its history.

    veribench write invite --workspace WS --prompt-file P [--register academic|professional|casual]
                           [--count N] [--base-url URL]       # one line per link: id, link
    veribench write serve --workspace WS --host 127.0.0.1 --port 8100 [--secure-cookies] [--root-path /write]
    veribench write status --workspace WS [--format json]
    veribench import arm-b --workspace WS [--corpus arm-b]    # submitted texts -> arm-B documents
    veribench write withdraw INVITATION --workspace WS        # on a contributor's request
    veribench write revoke INVITATION --workspace WS          # end the link and every session
    veribench write reissue INVITATION --workspace WS         # a new link to the same draft
    veribench write export --workspace WS --out arm-b.jsonl   # what is published for arm B
    veribench write fingerprint FILE [--workspace WS]         # the SHA-256 that proves a text

``invite``, ``serve``, ``status``, ``revoke`` and ``reissue`` use only the writing store
(``WS/write.sqlite``), so they work while other commands use the workspace; ``withdraw``
and ``export`` open the workspace, as ``import arm-b`` does (it was ``write import``: one
verb per source of imports, docs/cli.md). ``invite`` creates the writing store; the other
commands refuse a workspace without one and create nothing. ``serve`` lives in
:mod:`veribench.cli.serve`. See ``docs/arm-b.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import typer
from rich.console import Console
from rich.table import Table

from veribench.cli.common import (
    WRITE_PORT,
    FormatOpt,
    OutputFormat,
    WorkspaceOpt,
    check_filters,
    check_workspace,
    input_path,
    open_workspace,
    out_opt,
    print_json,
    remove_if_new,
)
from veribench.cli.grammar import CliError
from veribench.rubric.write import armb, rules, store
from veribench.rubric.write.db import FILE_NAME as WRITE_STORE
from veribench.rubric.write.db import WriteDB, open_store
from veribench.rubric.write.fingerprint import file_fingerprint
from veribench.store.workspace import DB_NAME

write_app = typer.Typer(help="Arm B: invite volunteers to write fresh human text with attestation and revision "
                             "history; import it; publish full text or a fingerprint only.", no_args_is_help=True)


InvitationArg = typer.Argument(..., help="Invitation id (inv-...).")
BaseUrlOpt = typer.Option(None, "--base-url", help="Where `write serve` is reached, with any root path (default "
                          f"http://127.0.0.1:{WRITE_PORT}, or the port of --port).")
PortOpt = typer.Option(None, "--port", min=1, max=65535,
                       help=f"The port `write serve --port` listens on, on 127.0.0.1 (default {WRITE_PORT}).")


def link_base(base_url: str | None, port: int | None) -> str:
    """The start of every printed link: ``--base-url`` (trailing ``/`` dropped), else
    ``http://127.0.0.1:<--port or WRITE_PORT>``.

    Raises:
        CliError: both options given, or a base URL that is not http(s).
    """
    if base_url is not None and port is not None:
        raise CliError("--port", "given with --base-url", "give one: --base-url holds the port already")
    if base_url is None:
        return f"http://127.0.0.1:{port or WRITE_PORT}"
    if not base_url.startswith(("http://", "https://")):
        raise CliError("--base-url", f"not an http(s) URL: {base_url!r}", "e.g. --base-url https://bench.example.org/write")
    return base_url.rstrip("/")


def check_write_store(workspace: Path, *, create: bool = False) -> None:
    """Refuse a workspace path that is a file and (unless ``create``) one without a writing
    store, in one wording for every command that needs it (``write status|revoke|...``,
    ``import arm-b``)."""
    check_workspace(workspace, exists=not create, store=WRITE_STORE,
                    fix=f"create invitations first: veribench write invite -w {workspace} --prompt-file FILE")


def _db(workspace: Path, *, create: bool = False) -> WriteDB:
    """The writing store; without ``create``, a workspace without one is refused (nothing
    created); one that ``create`` makes is removed again if the command fails before
    anything is stored in it (:func:`veribench.cli.common.remove_if_new`)."""
    check_write_store(workspace, create=create)
    holder: list[WriteDB] = []
    if create:
        remove_if_new(workspace / WRITE_STORE, close=lambda: [d.close() for d in holder])
    db = open_store(workspace)
    holder.append(db)
    return db


@write_app.command("invite")
def invite(
    workspace: Path = WorkspaceOpt,
    prompt_file: Path = typer.Option(..., "--prompt-file", help="UTF-8 text file holding the writing prompt.",
                                     callback=input_path("file")),
    register: Literal["academic", "professional", "casual"] = typer.Option("academic", "--register",
                                                                            help="Register of the writing."),
    count: int = typer.Option(1, "--count", min=1, max=1000, help="How many personal links."),
    base_url: str | None = BaseUrlOpt,
    port: int | None = PortOpt,
    min_words: int | None = typer.Option(None, "--min-words", min=1, help="Target length, lower end (default 300)."),
    max_words: int | None = typer.Option(None, "--max-words", min=1, help="Target length, upper end (default 1200)."),
) -> None:
    """Create one-time personal links (tokens stored hashed) to write on a prompt."""
    base = link_base(base_url, port)
    try:
        prompt = prompt_file.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise CliError(str(prompt_file), f"not UTF-8 text (byte {e.start})", "save the prompt as UTF-8") from None
    with _db(workspace, create=True) as db:
        made = store.create_invitations(db, prompt, register=register, count=count, min_words=min_words,
                                        max_words=max_words, prompt_file=str(prompt_file))
        inv = store.get_invitation(db, made[0][0])
    lo, hi = inv["min_words"], inv["max_words"]  # type: ignore[index]
    typer.echo(f"{len(made)} invitation(s): prompt {inv['prompt_id']}, register {register} "  # type: ignore[index]
               f"({rules.REGISTERS[register]}), {lo}-{hi} words. Each link works once; it is shown only now:",
               err=True)
    for inv_id, tok in made:
        typer.echo(f"{inv_id}\t{base}/i/{tok}")
    if base_url is None and port is None:
        typer.echo(f"The links assume `veribench write serve -w {workspace}` on port {WRITE_PORT} of this machine; "
                   "serving elsewhere, make them with --port N or --base-url URL.", err=True)


@write_app.command("status")
def status(workspace: Path = WorkspaceOpt, fmt: OutputFormat = FormatOpt) -> None:
    """Every invitation: state, revisions, words, publication and its process evidence in one line."""
    with _db(workspace) as db:
        rows = store.list_invitations(db)
    if fmt == "json":
        print_json(rows)
        return
    t = Table(title="arm B invitations")
    for h in ("invitation", "register", "state", "English", "words", "publication", "imported", "evidence"):
        t.add_column(h)
    for r in rows:
        t.add_row(r["invitation_id"], r["register"], r["state"], r["english"] or "-", str(r["words"] or "-"),
                  r["publication"] or "-", "yes" if r["imported"] else "no", r["evidence"])
    Console(width=200).print(t)


@write_app.command("withdraw")
def withdraw_cmd(invitation: str = InvitationArg,
                 workspace: Path = WorkspaceOpt,
                 yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation.")) -> None:
    """Withdraw a contributor's text (on their request): delete it everywhere, log the deletion."""
    check_write_store(workspace)
    if not yes:
        typer.confirm(f"Delete the text and every revision of {invitation}?", abort=True)
    with _db(workspace) as db:
        res = store.withdraw(db, invitation, via="cli")
        removed = []
        if res["doc_id"] and (workspace / DB_NAME).is_file():
            ws = open_workspace(workspace)
            try:
                removed = armb.apply_withdrawals(ws, db)
            except BaseException:
                ws.close()
                raise
            armb.close_after(ws, removed)
        elif res["doc_id"]:
            store.mark_withdrawal_applied(db, invitation)
    typer.echo(f"withdrawn: {invitation} (was {res['state_before']}); text and revisions deleted from the writing store")
    for p in removed:
        typer.echo(f"removed from the workspace: {', '.join(p['documents_removed'])} ({p['scores_removed']} scores); "
                   f"logged as {p['withdrawal_id']}")


@write_app.command("revoke")
def revoke_cmd(invitation: str = InvitationArg, workspace: Path = WorkspaceOpt) -> None:
    """Revoke an invitation's link and every session (the draft is kept)."""
    with _db(workspace) as db:
        store.revoke_invitation(db, invitation)
    typer.echo(f"revoked: {invitation}")


@write_app.command("reissue")
def reissue_cmd(invitation: str = InvitationArg, workspace: Path = WorkspaceOpt,
                base_url: str | None = BaseUrlOpt, port: int | None = PortOpt) -> None:
    """A new one-time link to the same draft (the old link and sessions stop working)."""
    base = link_base(base_url, port)
    with _db(workspace) as db:
        tok = store.reissue(db, invitation)
    typer.echo(f"{invitation}\t{base}/i/{tok}")


@write_app.command("export")
def export_cmd(workspace: Path = WorkspaceOpt,
               out: Path = out_opt("JSON Lines file to write."),
               corpus: str | None = typer.Option(None, "--corpus", help="Only this corpus (default: every arm-B "
                                                                            "document).")) -> None:
    """Write the publishable arm-B records: the text only where its writer chose full publication."""
    with open_workspace(workspace, read_only=True) as ws:
        check_filters(ws, corpus=corpus)
        where, params = ("WHERE corpus = ?", [corpus]) if corpus else ("WHERE arm = 'B'", [])
        docs = ws.published_documents(where, params)
    out.parent.mkdir(parents=True, exist_ok=True)
    keep = ("doc_id", "text", "text_sha256", "fingerprint_only", "words", "label", "arm", "kind", "subgroup", "tags",
            "group_key", "provenance", "corpus")
    with out.open("w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps({k: d.get(k) for k in keep}, ensure_ascii=False, sort_keys=True, default=str) + "\n")
    n_fp = sum(1 for d in docs if d["fingerprint_only"])
    typer.echo(f"wrote {len(docs)} records to {out} ({n_fp} fingerprint-only, without text)")


@write_app.command("fingerprint")
def fingerprint_cmd(file: Path = typer.Argument(..., help="A UTF-8 text file.", callback=input_path("file")),
                    workspace: Path | None = typer.Option(None, "--workspace", "-w",
                                                          help="Also check that this workspace's corpus holds the "
                                                               "text (exit 1 when it does not).")
                    ) -> None:
    """Print the text's fingerprint: SHA-256 of its UTF-8 bytes after line endings become LF and
    outer spaces, tabs and line feeds are removed (docs/arm-b.md)."""
    fp = file_fingerprint(file)
    typer.echo(fp)
    if workspace is not None:
        with open_workspace(workspace, read_only=True) as ws:
            rows = ws.query("SELECT doc_id FROM documents WHERE text_sha256 = ? ORDER BY doc_id", [fp])
        if rows:
            typer.echo("in the corpus: " + ", ".join(r[0] for r in rows), err=True)
        else:
            raise CliError(str(file), f"not in the corpus of workspace {workspace}",
                           "the fingerprint above matches no document there")
