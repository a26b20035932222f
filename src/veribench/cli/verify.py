"""CLI: ``veribench verify`` - detector-run bundles and humanizer cycle bundles, natively."""

from __future__ import annotations

import json
from pathlib import Path

import typer


def verify(
    paths: list[Path] = typer.Argument(..., help="Bundle folders (detector runs or cycles), or folders of them."),
    strict: bool = typer.Option(False, "--strict", help="Cycles: fail on gaps the bundle's own methodology allows."),
    json_out: Path | None = typer.Option(None, "--json", help="Write a machine-readable verdict to FILE "
                                                                 "('-' for standard output)."),
    tsa_root: Path | None = typer.Option(None, "--tsa-root", help="PEM root certificate(s) of the timestamp "
                                                                     "authority to trust (pins the bundle's own)."),
    max_file_mb: int | None = typer.Option(None, "--max-file-mb", help="Size cap (MiB) of a file read whole "
                                                                          "(default 256)."),
) -> None:
    """Verify bundles without executing anything in them.

    A detector-run bundle (from `veribench publish`) is told from a humanizer cycle by its
    manifest. Each check is reported by name; exit 0 when every bundle passes, 1 when any
    fails, 2 on a usage error.
    """
    from veribench.bundles.verify import is_detector_bundle, verify_bundle
    from veribench.cycles.bundle import discover
    from veribench.cycles.verify import check_rank_changes, verify_cycle

    roots = []
    if tsa_root is not None:
        from veribench.commit.tsa import TimestampError, load_certificates

        try:
            roots = load_certificates(tsa_root.read_bytes(), str(tsa_root))
        except (OSError, TimestampError) as e:
            typer.secho(f"error: --tsa-root {tsa_root}: {e}", fg="red", err=True)
            raise typer.Exit(2) from None
    cap = max_file_mb * 2**20 if max_file_mb else None
    runs, cycles = [], []
    for p in paths:
        if not p.exists():
            typer.secho(f"error: {p}: no such file or folder", fg="red", err=True)
            raise typer.Exit(2)
        if p.is_dir() and is_detector_bundle(p):
            runs.append(verify_bundle(p, tsa_roots=roots, max_file_bytes=cap))
            continue
        found_runs = sorted(c for c in p.iterdir() if c.is_dir() and not c.is_symlink() and is_detector_bundle(c)) \
            if p.is_dir() else []
        found_cycles = discover(p)
        if not found_runs and not found_cycles and p.is_dir() and (p / "manifest.json").is_file() \
                and not (p / "manifest.json").is_symlink():
            # a manifest that does not read as a detector bundle's: a failed bundle, said by its
            # manifest check (damaged, duplicate keys, nested too deep), not "not a bundle"
            runs.append(verify_bundle(p, tsa_roots=roots, max_file_bytes=cap))
            continue
        if not found_runs and not found_cycles:
            typer.secho(f"error: {p}: not a bundle: holds no cycle or detector-run bundle folders", fg="red",
                        err=True)
            raise typer.Exit(2)
        runs += [verify_bundle(c, tsa_roots=roots, max_file_bytes=cap) for c in found_runs]
        cycles += [verify_cycle(c, strict, max_file_bytes=cap) for c in found_cycles]
    check_rank_changes(cycles)
    ok = all(r.ok for r in runs) and all(r.ok for r in cycles)
    from veribench import __version__

    verdict = {"veribench_version": __version__, "strict": strict, "ok": ok,
               "detector_runs": [r.to_dict() for r in runs], "cycles": [r.to_dict() for r in cycles]}
    text = json.dumps(verdict, indent=2, default=str, ensure_ascii=False) + "\n"
    if json_out is not None and str(json_out) == "-":
        typer.echo(text, nl=False)
    else:
        for r in [*runs, *cycles]:
            for i, line in enumerate(r.lines()):
                typer.secho(line, fg=None if i else ("green" if r.ok else "red"))
        if json_out is not None:
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(text, encoding="utf-8")
    raise typer.Exit(0 if ok else 1)


def register(app: typer.Typer) -> None:
    app.command("verify")(verify)
