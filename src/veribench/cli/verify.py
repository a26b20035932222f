"""CLI: ``veribench verify`` - detector-run bundles and humanizer cycle bundles, natively."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

from veribench import __version__
from veribench.bundles.verify import is_detector_bundle, verify_bundle
from veribench.cli.common import FormatOpt, OutputFormat, ProgressOpt, input_path, json_opt, progress, write_json
from veribench.cli.grammar import CliError, CliUsageError
from veribench.commit.tsa import TimestampError, TrustedRoots, is_self_issued, load_certificates
from veribench.cycles.bundle import Candidate, candidates, is_cycle_dir
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
    manifest. In a folder of bundles every candidate is reported with its verdict: each
    sub-folder (verified as a bundle or cycle when it holds one of their files, `manifest.json`,
    `cycle.json`, ...; otherwise reported "not a bundle or cycle" and failed), and each link or
    unreadable entry (refused, never followed); a file a bundle carries (`results.json`,
    `scores.csv`, ...) outside any bundle fails the folder ("looks like a bundle without
    manifest.json"), an archive fails (never unpacked); other plain files such as a licence
    are not candidates. Each check is reported by name; exit 0 when every candidate passes, 1 when
    any fails or is refused or a path is not a bundle, 2 on a usage error.
    """
    inodes = _inodes(paths) if tsa_root else {}
    roots = [_trusted(r, paths, inodes) for r in tsa_root or []]
    cap = max_file_mb * 2**20 if max_file_mb else None
    runs, cycles, refused = [], [], []
    with progress("verify", show_progress):
        for p in paths:
            if is_detector_bundle(p) or os.path.lexists(p / "manifest.json"):
                # a manifest that does not read as a detector bundle's is a failed bundle, said by
                # its reader or manifest check (a link, damaged, duplicate keys, nested too deep),
                # not "not a bundle"
                runs.append(verify_bundle(p, tsa_roots=roots, max_file_bytes=cap))
                continue
            if is_cycle_dir(p):
                cycles.append(verify_cycle(p, strict, max_file_bytes=cap))
                continue
            for c in _candidates(p):
                if c.kind == "detector-run":
                    runs.append(verify_bundle(c.path, tsa_roots=roots, max_file_bytes=cap))
                elif c.kind == "cycle":
                    cycles.append(verify_cycle(c.path, strict, max_file_bytes=cap))
                else:
                    refused.append(c)
    check_rank_changes(cycles)
    ok = all(r.ok for r in runs) and all(r.ok for r in cycles) and not refused
    verdict = {"veribench_version": __version__, "strict": strict, "ok": ok,
               "detector_runs": [r.to_dict() for r in runs], "cycles": [r.to_dict() for r in cycles],
               "refused": [c.to_dict() for c in refused]}
    if fmt == "json":
        typer.echo(json.dumps(verdict, indent=2, default=str, ensure_ascii=False))
    else:
        for r in [*runs, *cycles, *refused]:
            for i, line in enumerate(r.lines()):
                typer.secho(line, fg=None if i else ("green" if r.ok else "red"))
    if json_out is not None:
        write_json(json_out, verdict, default=str)
    raise typer.Exit(0 if ok else 1)


def _inodes(verified: list[Path]) -> dict[tuple[int, int], Path]:
    """Every regular file under the folders being verified, by ``(st_dev, st_ino)``.

    Walked without following links (a link is refused by the verifier anyway); an
    unreadable sub-folder is skipped here and refused by the verifier.
    """
    out: dict[tuple[int, int], Path] = {}
    for v in verified:
        for d, _dirs, files in os.walk(v, followlinks=False):
            for f in files:
                try:
                    st = os.lstat(os.path.join(d, f))
                except OSError:
                    continue
                out.setdefault((st.st_dev, st.st_ino), v)
    return out


def _trusted(path: Path, verified: list[Path], inodes: dict[tuple[int, int], Path]) -> TrustedRoots:
    """The roots of one ``--tsa-root`` file, named by the option and the path.

    Provenance is checked on the file, not on its bytes: the file must not lie inside a
    folder being verified, by path (symlinks, ``..`` resolved) nor by identity (a second
    hard link to a file under those folders, same ``(st_dev, st_ino)``). A file outside
    that holds the same certificate as one a bundle carries is accepted: a user may
    download the authority's root from its publisher and get the same bytes. The file may
    hold the root with its intermediates, in any order (the intermediates are links,
    :func:`veribench.commit.tsa.split_anchors`); a file holding no root (an intermediate
    alone) is refused: ``rfc3161-client`` checks a token's signature only up to a root.

    Raises:
        CliUsageError: the file is material under test: it is information, never a root
            the user supplies.
        CliError: the file cannot be read, holds no certificate, or holds no root.
    """
    where = path.resolve()
    try:
        st = os.stat(path)
        inside = inodes.get((st.st_dev, st.st_ino))
    except OSError:
        inside = None  # said by the read below
    for v in verified:
        if where.is_relative_to(v.resolve()):
            inside = v
    if inside is not None:
        raise CliUsageError(f"--tsa-root {path}", f"lies inside {inside}, which is being verified (by its path or as "
                            "a hard link to a file there): a certificate that comes with a bundle is information, "
                            "never trust",
                            "give the authority's root certificate from a source you trust, kept outside "
                            "the bundles")
    try:
        certs = tuple(load_certificates(path.read_bytes(), str(path)))
        if not any(is_self_issued(c) for c in certs):
            raise TimestampError("holds no root certificate (each certificate's issuer differs from its subject: an "
                                 "intermediate is not accepted as a trust anchor)")
        return TrustedRoots(f"--tsa-root {path}", certs)
    except (OSError, TimestampError) as e:
        what = (e.strerror or type(e).__name__) if isinstance(e, OSError) else str(e).removeprefix(f"{path}: ")
        raise CliError(str(path), what, "give a PEM file of the authority's root certificate(s) to --tsa-root") \
            from None


def _candidates(folder: Path) -> list[Candidate]:
    """The candidates of a folder of bundles (:func:`veribench.cycles.bundle.candidates`).

    Raises:
        CliError: the folder cannot be listed, or holds no candidate at all.
    """
    try:
        found = candidates(folder)
    except OSError as e:
        raise CliError(str(folder), f"cannot be listed ({e.strerror or type(e).__name__})",
                       "check the folder's permissions") from None
    if not found:
        raise CliError(str(folder), "not a bundle: holds no cycle or detector-run bundle folders",
                       "give a folder written by `veribench publish` or a cycle bundle")
    return found
