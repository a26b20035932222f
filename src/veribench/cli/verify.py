"""CLI: ``veribench verify`` - detector-run bundles and humanizer cycle bundles, natively."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from veribench import __version__
from veribench.bundles.verify import is_detector_bundle, verify_bundle
from veribench.cli.common import FormatOpt, OutputFormat, ProgressOpt, input_path, json_opt, progress, write_json
from veribench.cli.grammar import CliError
from veribench.commit.tsa import TimestampError, TrustedRoots, load_certificates
from veribench.cycles.bundle import discover
from veribench.cycles.verify import check_rank_changes, verify_cycle


def verify_cmd(
    paths: list[Path] = typer.Argument(..., help="Bundle folders (detector runs or cycles), or folders of them.",
                                       callback=input_path("folder")),
    strict: bool = typer.Option(False, "--strict", help="Cycles: fail on gaps the bundle's own methodology allows."),
    json_out: Path | None = json_opt("Also write the machine-readable verdict to this file."),
    fmt: OutputFormat = FormatOpt,
    tsa_root: list[Path] | None = typer.Option(
        None, "--tsa-root", callback=input_path("file"),
        help="PEM root certificate(s) of a timestamp authority you trust; repeatable. A token's date counts as "
             "proven only when its chain ends at one of these or at a root of the pinned public list (certifi's "
             "Mozilla CA bundle); a certificate carried in a bundle is never trusted."),
    max_file_mb: int | None = typer.Option(None, "--max-file-mb", min=1, help="Size cap (MiB) of a file read whole "
                                           "(default 256)."),
    show_progress: bool = ProgressOpt,
) -> None:
    """Verify bundles without executing anything in them.

    A detector-run bundle (from `veribench publish`) is told from a humanizer cycle by its
    manifest. Each check is reported by name; exit 0 when every bundle passes, 1 when any
    fails or a path is not a bundle, 2 on a usage error.
    """
    roots = [_trusted(p) for p in tsa_root or []]
    cap = max_file_mb * 2**20 if max_file_mb else None
    runs, cycles = [], []
    with progress("verify", show_progress):
        for p in paths:
            if is_detector_bundle(p):
                runs.append(verify_bundle(p, tsa_roots=roots, max_file_bytes=cap))
                continue
            found_runs = sorted(c for c in p.iterdir() if c.is_dir() and not c.is_symlink() and is_detector_bundle(c))
            found_cycles = discover(p)
            if not found_runs and not found_cycles and (p / "manifest.json").is_file() \
                    and not (p / "manifest.json").is_symlink():
                # a manifest that does not read as a detector bundle's: a failed bundle, said by its
                # manifest check (damaged, duplicate keys, nested too deep), not "not a bundle"
                runs.append(verify_bundle(p, tsa_roots=roots, max_file_bytes=cap))
                continue
            if not found_runs and not found_cycles:
                raise CliError(str(p), "not a bundle: holds no cycle or detector-run bundle folders",
                               "give a folder written by `veribench publish` or a cycle bundle")
            runs += [verify_bundle(c, tsa_roots=roots, max_file_bytes=cap) for c in found_runs]
            cycles += [verify_cycle(c, strict, max_file_bytes=cap) for c in found_cycles]
    check_rank_changes(cycles)
    ok = all(r.ok for r in runs) and all(r.ok for r in cycles)
    verdict = {"veribench_version": __version__, "strict": strict, "ok": ok,
               "detector_runs": [r.to_dict() for r in runs], "cycles": [r.to_dict() for r in cycles]}
    if fmt == "json":
        typer.echo(json.dumps(verdict, indent=2, default=str, ensure_ascii=False))
    else:
        for r in [*runs, *cycles]:
            for i, line in enumerate(r.lines()):
                typer.secho(line, fg=None if i else ("green" if r.ok else "red"))
    if json_out is not None:
        write_json(json_out, verdict, default=str)
    raise typer.Exit(0 if ok else 1)


def _trusted(path: Path) -> TrustedRoots:
    """The roots of one ``--tsa-root`` file, named by the option and the path."""
    try:
        return TrustedRoots(f"--tsa-root {path}", tuple(load_certificates(path.read_bytes(), str(path))))
    except (OSError, TimestampError) as e:
        raise CliError(str(path), str(e), "give a PEM file of the authority's root certificate(s) to --tsa-root") \
            from None
