"""CLI group ``write``: arm B, fresh human text written in an editor that keeps its history.

    veribench write invite --workspace WS --prompt-file P [--register academic|professional|casual]
                           [--count N] [--base-url URL]       # one line per link: id, link
    veribench write serve --workspace WS --host 127.0.0.1 --port 8100 [--secure-cookies] [--root-path /write]
    veribench write status --workspace WS
    veribench write import --workspace WS [--corpus arm-b]    # submitted texts -> arm-B documents
    veribench write withdraw INVITATION --workspace WS        # on a contributor's request
    veribench write revoke INVITATION --workspace WS          # end the link and every session
    veribench write reissue INVITATION --workspace WS         # a new link to the same draft
    veribench write export --workspace WS --out arm-b.jsonl   # what is published for arm B
    veribench write fingerprint FILE [--workspace WS]         # the SHA-256 that proves a text

``invite``, ``serve``, ``status``, ``revoke`` and ``reissue`` use only the writing store
(``WS/write.sqlite``), so they work while other commands use the workspace; ``import``,
``withdraw`` and ``export`` open the workspace. See ``docs/arm-b.md``.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from veribench.cli.common import WorkspaceOpt, friendly_errors

write_app = typer.Typer(help="Arm B: invite volunteers to write fresh human text with attestation and revision "
                             "history; import it; publish full text or a fingerprint only.", no_args_is_help=True)


def _db(workspace: Path):
    from veribench.rubric.write.db import open_store

    return open_store(workspace)


def _ws(workspace: Path):
    """The workspace; another process holding it gives :class:`WorkspaceBusy`'s one line."""
    from veribench.store.workspace import Workspace

    return Workspace(workspace)


@write_app.command("invite")
@friendly_errors
def invite(
    workspace: Path = WorkspaceOpt,
    prompt_file: Path = typer.Option(..., "--prompt-file", help="UTF-8 text file holding the writing prompt."),
    register: str = typer.Option("academic", "--register", help="academic | professional | casual."),
    count: int = typer.Option(1, "--count", min=1, max=1000, help="How many personal links."),
    base_url: str = typer.Option("http://127.0.0.1:8100", "--base-url",
                                 help="Where `write serve` is reached, with any root path."),
    min_words: int | None = typer.Option(None, "--min-words", help="Target length, lower end (default 300)."),
    max_words: int | None = typer.Option(None, "--max-words", help="Target length, upper end (default 1200)."),
) -> None:
    """Create one-time personal links (tokens stored hashed) to write on a prompt."""
    from veribench.errors import InputError
    from veribench.rubric.write import rules, store

    if not prompt_file.is_file():
        raise InputError("no such file", file=str(prompt_file))
    try:
        prompt = prompt_file.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text (byte {e.start})", file=str(prompt_file)) from None
    with _db(workspace) as db:
        made = store.create_invitations(db, prompt, register=register, count=count, min_words=min_words,
                                        max_words=max_words, prompt_file=str(prompt_file))
        inv = store.get_invitation(db, made[0][0])
    lo, hi = inv["min_words"], inv["max_words"]  # type: ignore[index]
    typer.echo(f"{len(made)} invitation(s): prompt {inv['prompt_id']}, register {register} "  # type: ignore[index]
               f"({rules.REGISTERS[register]}), {lo}-{hi} words. Each link works once; it is shown only now:",
               err=True)
    for inv_id, tok in made:
        typer.echo(f"{inv_id}\t{base_url.rstrip('/')}/i/{tok}")


@write_app.command("serve")
@friendly_errors
def serve(workspace: Path = WorkspaceOpt, host: str = typer.Option("127.0.0.1", "--host"),
          port: int = typer.Option(8100, "--port"),
          secure_cookies: bool = typer.Option(False, "--secure-cookies",
                                              help="Secure cookie and HSTS: for HTTPS (or a TLS proxy in front)."),
          root_path: str = typer.Option("", "--root-path", help="Path prefix behind a proxy, e.g. /write."),
          ssl_certfile: Path | None = typer.Option(None, "--ssl-certfile", help="Serve HTTPS with this certificate."),
          ssl_keyfile: Path | None = typer.Option(None, "--ssl-keyfile", help="The certificate's private key."),
          forwarded_allow_ips: str | None = typer.Option(None, "--forwarded-allow-ips",
                                                            help="Proxy addresses whose X-Forwarded-* headers are "
                                                                 "trusted (uvicorn's option; default 127.0.0.1).")
          ) -> None:
    """Serve the writing app (FastAPI + uvicorn). It never holds the workspace."""
    import uvicorn

    from veribench.errors import InputError
    from veribench.rubric.write.app import create_app

    if root_path and not root_path.startswith("/"):
        raise InputError("--root-path must start with '/', e.g. /write", field="--root-path")
    if (ssl_certfile is None) != (ssl_keyfile is None):
        raise InputError("give --ssl-certfile and --ssl-keyfile together", field="--ssl-certfile")
    tls = ssl_certfile is not None
    app = create_app(workspace, secure_cookies=secure_cookies or tls, root_path=root_path)
    scheme = "https" if tls else "http"
    typer.echo(f"serving the writing app on {scheme}://{host}:{port}{root_path.rstrip('/')}/ "
               "(writers open their /i/<token> links)")
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False,
                ssl_certfile=str(ssl_certfile) if tls else None, ssl_keyfile=str(ssl_keyfile) if tls else None,
                forwarded_allow_ips=forwarded_allow_ips)


@write_app.command("status")
@friendly_errors
def status(workspace: Path = WorkspaceOpt,
           as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Every invitation: state, revisions, words, publication and its process evidence in one line."""
    from rich.console import Console
    from rich.table import Table

    from veribench.rubric.write import store

    with _db(workspace) as db:
        rows = store.list_invitations(db)
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
        return
    t = Table(title="arm B invitations")
    for h in ("invitation", "register", "state", "English", "words", "publication", "imported", "evidence"):
        t.add_column(h)
    for r in rows:
        t.add_row(r["invitation_id"], r["register"], r["state"], r["english"] or "-", str(r["words"] or "-"),
                  r["publication"] or "-", "yes" if r["imported"] else "no", r["evidence"])
    Console(width=200).print(t)


@write_app.command("import")
@friendly_errors
def import_cmd(workspace: Path = WorkspaceOpt,
               corpus: str = typer.Option("arm-b", "--corpus", help="Corpus name of the documents."),
               quiet: bool = typer.Option(False, "--quiet", "-q", help="One summary line.")) -> None:
    """Import submitted texts as arm-B human documents; apply pending withdrawals."""
    from veribench.rubric.write import armb

    with _db(workspace) as db:
        ws = _ws(workspace)
        try:
            report, removed = armb.sync(ws, db, corpus=corpus)
        except BaseException:
            ws.close()
            raise
        armb.close_after(ws, removed)
    if quiet:
        typer.echo(f"write: {report.documents} documents, {len(removed)} withdrawn (import {report.import_id})")
        return
    report.print()
    typer.echo(f"import id: {report.import_id}")
    for p in removed:
        typer.echo(f"withdrawn: {p['doc_id']} ({len(p['documents_removed'])} documents, {p['scores_removed']} "
                   f"scores removed; logged as {p['withdrawal_id']})")


@write_app.command("withdraw")
@friendly_errors
def withdraw_cmd(invitation: str = typer.Argument(..., help="Invitation id (inv-...)."),
                 workspace: Path = WorkspaceOpt,
                 yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation.")) -> None:
    """Withdraw a contributor's text (on their request): delete it everywhere, log the deletion."""
    from veribench.rubric.write import armb, store

    if not yes:
        typer.confirm(f"Delete the text and every revision of {invitation}?", abort=True)
    with _db(workspace) as db:
        res = store.withdraw(db, invitation, via="cli")
        removed = []
        if res["doc_id"] and (workspace / "veribench.duckdb").is_file():
            ws = _ws(workspace)
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
@friendly_errors
def revoke_cmd(invitation: str = typer.Argument(...), workspace: Path = WorkspaceOpt) -> None:
    """Revoke an invitation's link and every session (the draft is kept)."""
    from veribench.rubric.write import store

    with _db(workspace) as db:
        store.revoke_invitation(db, invitation)
    typer.echo(f"revoked: {invitation}")


@write_app.command("reissue")
@friendly_errors
def reissue_cmd(invitation: str = typer.Argument(...), workspace: Path = WorkspaceOpt,
                base_url: str = typer.Option("http://127.0.0.1:8100", "--base-url")) -> None:
    """A new one-time link to the same draft (the old link and sessions stop working)."""
    from veribench.rubric.write import store

    with _db(workspace) as db:
        tok = store.reissue(db, invitation)
    typer.echo(f"{invitation}\t{base_url.rstrip('/')}/i/{tok}")


@write_app.command("export")
@friendly_errors
def export_cmd(workspace: Path = WorkspaceOpt,
               out: Path = typer.Option(..., "--out", "-o", help="JSON Lines file to write."),
               corpus: str | None = typer.Option(None, "--corpus", help="Only this corpus (default: every arm-B "
                                                                            "document).")) -> None:
    """Write the publishable arm-B records: the text only where its writer chose full publication."""
    from veribench.errors import InputError
    from veribench.store import Workspace

    if not (workspace / "veribench.duckdb").is_file():
        raise InputError("no workspace here", file=str(workspace))
    with Workspace(workspace, read_only=True) as ws:
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
@friendly_errors
def fingerprint_cmd(file: Path = typer.Argument(..., help="A UTF-8 text file."),
                    workspace: Path | None = typer.Option(None, "--workspace", "-w",
                                                             help="Also say whether the corpus holds this text.")
                    ) -> None:
    """Print the text's fingerprint: SHA-256 of its UTF-8 bytes after line endings become LF and
    outer spaces, tabs and line feeds are removed (docs/arm-b.md)."""
    from veribench.rubric.write.fingerprint import file_fingerprint
    from veribench.store import Workspace

    fp = file_fingerprint(file)
    typer.echo(fp)
    if workspace is not None:
        if not (workspace / "veribench.duckdb").is_file():
            typer.echo("no workspace there", err=True)
            raise typer.Exit(1)
        with Workspace(workspace, read_only=True) as ws:
            rows = ws.query("SELECT doc_id FROM documents WHERE text_sha256 = ? ORDER BY doc_id", [fp])
        if rows:
            typer.echo("in the corpus: " + ", ".join(r[0] for r in rows), err=True)
        else:
            typer.echo("not in this workspace's corpus", err=True)
            raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    """Add the ``write`` sub-app to the root app."""
    app.add_typer(write_app, name="write")
