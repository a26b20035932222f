"""CLI group: ``veribench protocol commit|timestamp|show``."""

from __future__ import annotations

from pathlib import Path

import typer

from veribench.cli.common import WorkspaceOpt, input_path, open_workspace, output_path
from veribench.cli.grammar import CliError
from veribench.commit import add_timestamp, commit
from veribench.detectors.rules import default_rule
from veribench.evaluate.run import plugin_factory
from veribench.protocol.model import Protocol, load_protocol
from veribench.store.commitments import versions

protocol_app = typer.Typer(help="Commit scoring rules before any scan; amend them in the open.", no_args_is_help=True)

TsaOpt = typer.Option(None, "--tsa", help="RFC 3161 timestamp authority URL: stamp the commitment record.")
TsaCertOpt = typer.Option(None, "--tsa-cert", help="The authority's root certificate (PEM): check the token's "
                                                   "signature now and keep the certificate for verifiers.",
                          callback=input_path("file"))
ProtocolArg = typer.Argument(..., help="Protocol file (.toml or .yaml).", callback=input_path("file"))


def _read_cert(p: Path | None) -> bytes | None:
    if p is None:
        return None
    try:
        return p.read_bytes()
    except OSError as e:
        raise CliError(str(p), f"cannot read ({e.strerror})", "check the file given to --tsa-cert") from None


@protocol_app.command("commit")
def commit_cmd(file: Path = ProtocolArg, workspace: Path = WorkspaceOpt,
               tsa: str | None = TsaOpt, tsa_cert: Path | None = TsaCertOpt,
               new_protocol: bool = typer.Option(False, "--new-protocol", help="Declare an unrelated protocol in a "
                                                 "workspace that already holds runs (logged and shown)."),
               record_dir: Path | None = typer.Option(None, "--record-dir", help="Where to write the commitment "
                                                         "record (default WS/commitments).",
                                                         callback=output_path("folder"))):
    """Commit the protocol's exact bytes to the event log before any scan, and write the record to publish.

    Warns when the selected corpus is too small for the comparisons or gaps the protocol
    declares (a Wilson half-width above 5 points at a 5% FPR, or a gap that cannot detect
    10 points with 80% power; `veribench plan` gives the sizes). A missing workspace is
    created (a protocol may be committed before any corpus is imported)."""
    with open_workspace(workspace, create=True) as ws:
        rec = commit(ws, file, tsa_url=tsa, tsa_roots=_read_cert(tsa_cert), new_protocol=new_protocol,
                     record_dir=record_dir)
    state = "committed" if rec.new else "already committed"
    typer.echo(f"{state}: {rec.name} sha256={rec.hash} at {rec.committed_at:%Y-%m-%dT%H:%M:%SZ}")
    typer.echo(f"  protocol id {rec.protocol_id}, version {rec.version}, event {rec.seq} (chain head "
               f"{rec.event_hash})")
    if rec.record_path:
        typer.echo(f"  commitment record to publish now: {rec.record_path}")
    if rec.timestamp:
        t = rec.timestamp
        typer.echo(f"  timestamp: {t['gen_time']} by {t.get('signer') or 'the authority'}"
                   + ("" if t["signature_checked"] else " (signature not checked: pass --tsa-cert)"))
    for a in rec.amendments:
        typer.echo(f"  amendment v{a.get('version')} {a.get('date')} (logged {a.get('committed_at')}): "
                   f"{a.get('summary')} (supersedes {a.get('supersedes')})")
    for line in rule_lines(load_protocol(file)):
        typer.echo(line)
    for w in rec.warnings:
        typer.echo(f"warning: {w}")


def rule_lines(proto: Protocol) -> list[str]:
    """One line per detector of ``proto``: the rule it will be judged by. A stated rule is
    shown as written; otherwise the detector's default (:func:`veribench.detectors.rules.default_rule`,
    the rule ``veribench list detectors`` shows and evaluation applies)."""
    out = []
    for e in proto.detectors:
        if e.rule.given:
            out.append(f"  rule for {e.display}: {e.rule.describe()} (stated in the protocol)")
            continue
        factory = plugin_factory(e.name)
        if factory is None:
            rule = default_rule("detector", "imported", None)[0]
        else:
            rule = default_rule("detector", e.name, getattr(factory, "__wrapped__", factory))[0]
        out.append(f"  rule for {e.display}: {rule} (no rule stated: the detector's default; state one to fix it)")
    return out


@protocol_app.command("timestamp")
def timestamp_cmd(file: Path = typer.Argument(..., help="A committed protocol file.", callback=input_path("file")),
                  workspace: Path = WorkspaceOpt,
                  tsa: str = typer.Option(..., "--tsa", help="RFC 3161 timestamp authority URL."),
                  tsa_cert: Path | None = TsaCertOpt):
    """Add an RFC 3161 token to an existing commitment (it proves the record existed from the token's time on)."""
    with open_workspace(workspace) as ws:
        proto = load_protocol(file)
        t = add_timestamp(ws, proto.hash or "", tsa, tsa_roots=_read_cert(tsa_cert))
    typer.echo(f"timestamped {proto.name} ({proto.hash}): {t['gen_time']}")


@protocol_app.command("show")
def show_cmd(workspace: Path = WorkspaceOpt) -> None:
    """List committed protocol versions from the event log: id, version, hash, log time, amendment."""
    with open_workspace(workspace, read_only=True) as ws:
        vs = sorted(versions(ws.con).values(), key=lambda e: e["seq"])
    for e in vs:
        p = e["payload"]
        a = p.get("amendment") or {}
        typer.echo(f"{e['at']}  {p['protocol_id']} v{p.get('version')}  {p['name']}  {p['protocol_sha256']}"
                   + (f"  amends {p.get('supersedes', '')[:12]}…: {a.get('summary')}" if a else ""))
