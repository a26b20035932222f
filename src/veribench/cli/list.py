"""CLI group ``list``: every plug-in with its settings, its default decision rule and the rule's source.

    veribench list detectors [--format json]
    veribench list humanizers [--format json]
    veribench list attacks [--format json]
    veribench list corpora [-w WS] [--format json]

Nothing here restates a rule: settings come from each plug-in's signature and setting
tables (``vendor_settings``, ``OPERATIONAL``), and rules from the data they live in: the
no-protocol default of :mod:`veribench.protocol.model` and :mod:`veribench.evaluate.run`
(``ai_probability > 0.5``, else the detector's own verdict), each vendor's
:class:`~veribench.detectors.api.base.VendorInfo`, :data:`BINOCULARS_THRESHOLDS`,
:data:`FAST_DETECTGPT_CALIBRATION`, :data:`STATISTICS`, :data:`KNOWN_CLASSIFIERS`. A
third-party plug-in may declare ``default_rule = {"rule": ..., "source": ...}`` on its factory.
"""

from __future__ import annotations

import importlib
import inspect
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import typer
from typer.main import get_command

from veribench import attacks, registry
from veribench.cli.common import FormatOpt, OutputFormat, check_workspace, print_json
from veribench.cli.corpus import import_app
from veribench.detectors.api.base import OPERATIONAL
from veribench.detectors.api.http import env_var
from veribench.detectors.rules import default_rule
from veribench.store.workspace import DB_NAME, DEFAULT_WORKSPACE, Workspace
from veribench.text.hazards import CANONICALIZE_MODES, SETTING

list_app = typer.Typer(help="List plug-ins and corpora: settings, default decision rule and where it comes from.",
                       no_args_is_help=True)


@dataclass
class PluginInfo:
    """What ``veribench list`` shows for one plug-in."""

    kind: str
    name: str
    target: str
    summary: str
    settings: list[dict[str, Any]] = field(default_factory=list)
    rule: str = ""
    rule_source: str = ""
    notes: list[str] = field(default_factory=list)
    #: Detectors: the declared languages at the default settings (:func:`detector_languages`),
    #: ``None`` with ``languages_reason`` when not declared; other kinds: ``None``, no reason.
    languages: list[str] | None = None
    languages_reason: str | None = None


def _jsonable(v: Any) -> Any:
    if v is inspect.Parameter.empty:
        return "(required)"
    try:
        json.dumps(v)
        return v
    except TypeError:
        return repr(v)


def _first_line(doc: str | None) -> str:
    return (inspect.cleandoc(doc).split("\n\n")[0].replace("\n", " ") if doc else "").strip()


def settings_of(factory: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """The settings a factory takes, with defaults; ``spec`` says whether a setting enters the spec
    (``False`` for operational settings), where the plug-in says so. The generic case is
    :func:`veribench.registry.settings_of` (the one reading of a factory's settings, also
    behind the "did you mean" of a misspelled ``--set`` key)."""
    notes: list[str] = []
    if isinstance(factory, type) and hasattr(factory, "vendor_settings"):  # HTTP adapters
        info = getattr(factory, "info", None)
        base = info.base_url if info is not None else getattr(factory, "default_base_url", None)
        lo = info.min_chars if info is not None else getattr(factory, "min_chars", None)
        hi = info.max_chars if info is not None else getattr(factory, "max_chars", None)
        rows = [{"name": "base_url", "default": base, "spec": True}, {"name": "min_chars", "default": lo, "spec": True},
                {"name": "max_chars", "default": hi, "spec": True}]
        extra, _ = registry.settings_of(factory)
        rows += [{"name": p.name, "default": _jsonable(p.default), "spec": True} for p in extra
                 if p.name not in ("base_url", "min_chars", "max_chars")]
        rows += [{"name": k, "default": _jsonable(v), "spec": True} for k, v in factory.vendor_settings.items()]
        rows += [{"name": k, "default": _jsonable(v), "spec": False} for k, v in OPERATIONAL.items()]
        notes.append("keys come only from the environment: " + _env_var(factory))
        return rows, notes
    params, var = registry.settings_of(factory)
    rows = [{"name": p.name, "default": _jsonable(p.default)} for p in params]
    if var:
        notes.append("further settings are passed on as **kwargs")
    return rows, notes


def _env_var(factory: Any) -> str:
    name = factory.info.name if hasattr(factory, "info") else getattr(factory, "name", "")
    return env_var(name)




def plugin_infos(kind: str) -> list[PluginInfo]:
    """:class:`PluginInfo` of every registered plug-in of ``kind`` (built-ins, runtime, entry points)."""
    out = []
    for name in registry.names(kind):
        target = registry.BUILTINS.get(kind, {}).get(name) or "entry point / runtime"
        try:
            factory = registry.get(kind, name)
        except Exception as e:  # a third-party plug-in that fails to import: listed with the reason
            out.append(PluginInfo(kind, name, str(target), f"cannot be loaded: {type(e).__name__}: {e}"))
            continue
        base = getattr(factory, "__wrapped__", factory)  # detectors: the canonicalize wrapper
        settings, notes = settings_of(base)
        if base is not factory:
            settings.append({"name": SETTING, "default": "none", "spec": True,
                             "choices": list(CANONICALIZE_MODES)})
            notes.append(f"{SETTING} (every detector): {' | '.join(CANONICALIZE_MODES)}; docs/hazards.md")
        rule, source, more = default_rule(kind, name, base)
        info = PluginInfo(kind, name, str(target), _first_line(getattr(factory, "__doc__", None)), settings,
                          rule, source, notes + more)
        if kind == "detector":
            langs = detector_languages(name, settings)
            info.languages = list(langs) if langs is not None else None
            info.languages_reason = None if langs is not None else registry.NOT_DECLARED
        out.append(info)
    return out


def detector_languages(name: str, settings: list[dict[str, Any]]) -> tuple[str, ...] | None:
    """The languages detector ``name`` declares at its default settings
    (:func:`veribench.registry.declared_languages` of the spec it builds with no settings, so a
    zero-shot detector's follow its default model); a detector that cannot be built without
    settings (``hf-classifier`` needs a ``model``) is read from its listed defaults."""
    try:
        spec_settings = dict(registry.create("detector", name).spec.settings)
    except Exception:  # a required setting: the listed defaults are all there is
        spec_settings = {s["name"]: s.get("default") for s in settings if isinstance(s.get("default"), str)}
    return registry.declared_languages(name, spec_settings)


def corpus_infos(ws_path: Path | None) -> dict[str, Any]:
    """The corpus importers (the ``import`` commands, with their options) and, when a
    workspace exists, the corpora stored in it with documents per label and arm."""
    grp = get_command(import_app)
    importers = []
    for name, cmd in sorted(grp.commands.items()):  # type: ignore[attr-defined]
        opts = []
        for p in cmd.params:
            if p.name in ("workspace", "quiet", "help"):
                continue
            flags = [o for o in (getattr(p, "opts", None) or []) if o.startswith("--")]
            opts.append({"name": flags[0] if flags else p.name,
                         "default": "(required)" if p.required else _jsonable(p.default)})
        try:  # an importer module named like its command may declare the rule its recorded scores follow
            mod = importlib.import_module(f"veribench.corpus.importers.{name}")
        except ImportError:
            mod = None
        declared = getattr(mod, "DECISION_RULE", None)
        if isinstance(declared, dict):
            rule, source = declared.get("rule", ""), declared.get("source", "")
        elif name == "scores":
            rule, source = "the detector's default rule (veribench list detectors)", "the score's scale and verdict"
        else:
            rule, source = "none: documents only, no recorded verdicts", ""
        importers.append({"name": name, "summary": _first_line(cmd.help), "settings": opts, "rule": rule,
                          "rule_source": source})
    stored: list[dict[str, Any]] = []
    if ws_path is not None and (ws_path / DB_NAME).is_file():
        with Workspace(ws_path, read_only=True) as ws:
            rows = ws.query("SELECT coalesce(corpus, '(none)'), label, coalesce(arm, '(none)'), count(*) "
                            "FROM documents GROUP BY 1, 2, 3 ORDER BY 1, 2, 3")
        by: dict[str, dict[str, Any]] = {}
        for corpus, label, arm, n in rows:
            e = by.setdefault(corpus, {"corpus": corpus, "documents": 0, "labels": {}, "arms": {}})
            e["documents"] += n
            e["labels"][label] = e["labels"].get(label, 0) + n
            e["arms"][arm] = e["arms"].get(arm, 0) + n
        stored = list(by.values())
    return {"importers": importers, "workspace": str(ws_path) if ws_path else None, "corpora": stored}


def _fmt_settings(rows: list[dict[str, Any]]) -> str:
    parts = []
    for r in rows:
        s = f"{r['name']}={json.dumps(r['default'], ensure_ascii=False) if r['default'] != '(required)' else '(required)'}"
        if r.get("spec") is False:
            s += " (operational)"
        parts.append(s)
    return ", ".join(parts) or "(none)"


def _show_plugins(kind: str, fmt: str) -> None:
    infos = plugin_infos(kind)
    if fmt == "json":
        print_json([asdict(i) for i in infos])
        return
    for i in infos:
        typer.secho(f"{i.name}", bold=True)
        typer.echo(f"  {i.summary}" if i.summary else "  (no description)")
        typer.echo(f"  plug-in:  {i.target}")
        typer.echo(f"  settings: {_fmt_settings(i.settings)}")
        typer.echo(f"  default decision rule: {i.rule}")
        if i.rule_source:
            typer.echo(f"  rule from: {i.rule_source}")
        if i.kind == "detector":
            typer.echo(f"  languages: {', '.join(i.languages) if i.languages else i.languages_reason}"
                       " (docs/detectors.md)")
        for n in i.notes:
            typer.echo(f"  note: {n}")
        typer.echo("")


def attack_infos() -> list[dict[str, Any]]:
    """Every attack with RAID's default parameters (``veribench list attacks``)."""
    out = []
    for n in attacks.names():
        cls = registry.get("attack", n)
        out.append({"name": n, "defaults": {k: f.default for k, f in cls.Settings.model_fields.items()}})
    return out


def show_attacks(fmt: str) -> None:
    """Print :func:`attack_infos`: one line per attack, or JSON."""
    infos = attack_infos()
    if fmt == "json":
        print_json(infos, default=str)
        return
    for a in infos:
        typer.echo(f"{a['name']}: {json.dumps(a['defaults'], default=str)}")


@list_app.command("detectors")
def list_detectors(fmt: OutputFormat = FormatOpt) -> None:
    """Every detector: settings (with defaults), default decision rule and where it comes from."""
    _show_plugins("detector", fmt)


@list_app.command("humanizers")
def list_humanizers(fmt: OutputFormat = FormatOpt) -> None:
    """Every humanizer: settings (with defaults) and where its facts come from."""
    _show_plugins("humanizer", fmt)


@list_app.command("attacks")
def list_attacks(fmt: OutputFormat = FormatOpt) -> None:
    """Every attack (RAID's eleven) with its default parameters (`veribench attack NAME --set k=v` changes them)."""
    show_attacks(fmt)


@list_app.command("corpora")
def list_corpora(workspace: Path | None = typer.Option(None, "--workspace", "-w",
                                                       help="Also list the corpora stored in this workspace "
                                                            "(default: ./veribench-workspace when it exists)."),
                 fmt: OutputFormat = FormatOpt) -> None:
    """The corpus importers with their options, and the corpora stored in a workspace."""
    if workspace is not None:
        check_workspace(workspace)
    ws_path = workspace if workspace is not None else (Path(DEFAULT_WORKSPACE) if Path(DEFAULT_WORKSPACE).is_dir()
                                                        else None)
    info = corpus_infos(ws_path)
    if fmt == "json":
        print_json(info)
        return
    for imp in info["importers"]:
        typer.secho(f"import {imp['name']}", bold=True)
        typer.echo(f"  {imp['summary']}")
        typer.echo(f"  settings: {_fmt_settings(imp['settings'])}")
        typer.echo(f"  default decision rule: {imp['rule']}")
        if imp["rule_source"]:
            typer.echo(f"  rule from: {imp['rule_source']}")
    if info["workspace"]:
        typer.echo(f"\ncorpora in {info['workspace']}:")
        for c in info["corpora"] or [{"corpus": "(none)", "documents": 0, "labels": {}, "arms": {}}]:
            typer.echo(f"  {c['corpus']}: {c['documents']} documents; labels "
                       + ", ".join(f"{k} {v}" for k, v in c["labels"].items()) + "; arms "
                       + ", ".join(f"{k} {v}" for k, v in c["arms"].items()))
