"""One registry for every plug-in kind (detector, humanizer, embedder, judge, ...).

Built-ins are declared here as lazy ``"module:attr"`` references, so importing
veribench never imports torch or an HTTP stack it does not need. Third parties
register through entry points in the group ``veribench.<kind>s`` (for example
``veribench.detectors``), whose value is a factory ``"module:attr"``.

A factory is called with the user's settings as keyword arguments (strings from
the command line are already parsed to JSON values where possible) and returns a
plug-in object that has a ``spec`` attribute (:class:`veribench.spec.Spec`).

Every detector also accepts the shared setting ``canonicalize`` (``"none"`` | ``"skeleton"``,
see ``docs/hazards.md``), handled here rather than by each factory: ``skeleton`` wraps the
built detector in :class:`veribench.detectors.base.Canonicalized`, whose spec carries it.
"""

from __future__ import annotations

import difflib
import importlib
from importlib import metadata
from typing import Any, Callable

from .errors import RegistryError

# Built-ins: each package declares its plug-ins as data in a ``PLUGINS`` dict of
# ``{kind: {name: "module:attr"}}`` in its (import-light) ``__init__``. The registry
# reads them lazily, so no heavy dependency is imported until a plug-in is built.
_PLUGIN_PACKAGES = [
    "veribench.detectors.local",
    "veribench.detectors.api",
    "veribench.detectors.imported_plugins",
    "veribench.humanizers",
    "veribench.llm",
    "veribench.cycles",
    "veribench.corpus.attacks",
]
_BUILTINS: dict[str, dict[str, str]] = {"detector": {}, "humanizer": {}, "embedder": {}, "judge": {}, "generator": {}}
_LOADED = False


def _load_builtins() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for pkg in _PLUGIN_PACKAGES:
        try:
            mod = importlib.import_module(pkg)
        except ModuleNotFoundError as e:  # a package not yet present
            if e.name and pkg.startswith(e.name):
                continue
            raise
        for kind, table in getattr(mod, "PLUGINS", {}).items():
            _BUILTINS.setdefault(kind, {}).update(table)


_REGISTERED: dict[str, dict[str, Any]] = {}


def register(kind: str, name: str, factory: Any) -> None:
    """Register ``factory`` (a callable or ``"module:attr"``) as plug-in ``name`` of ``kind``."""
    _REGISTERED.setdefault(kind, {})[name] = factory


def register_builtin(kind: str, name: str, target: str) -> None:
    """Declare a built-in plug-in by dotted path (used by veribench's own modules)."""
    _BUILTINS.setdefault(kind, {})[name] = target


def _entry_points(kind: str) -> dict[str, Any]:
    try:
        eps = metadata.entry_points(group=f"veribench.{kind}s")
    except Exception:  # pragma: no cover - broken metadata
        return {}
    return {ep.name: ep for ep in eps}


def names(kind: str) -> list[str]:
    """All registered names of ``kind``: built-ins, runtime registrations and entry points."""
    _load_builtins()
    out = set(_BUILTINS.get(kind, {})) | set(_REGISTERED.get(kind, {})) | set(_entry_points(kind))
    return sorted(out)


def _resolve(target: Any) -> Callable[..., Any]:
    if isinstance(target, metadata.EntryPoint):
        return target.load()
    if isinstance(target, str):
        mod, _, attr = target.partition(":")
        obj: Any = importlib.import_module(mod)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj
    return target


def get(kind: str, name: str) -> Callable[..., Any]:
    """The factory for plug-in ``name`` of ``kind``.

    Raises:
        RegistryError: unknown name; the message lists close matches ("did you mean").
    """
    _load_builtins()
    for table in (_REGISTERED.get(kind, {}), _BUILTINS.get(kind, {}), _entry_points(kind)):
        if name in table:
            factory = _resolve(table[name])
            return _canonicalizing(name, factory) if kind == "detector" else factory
    known = names(kind)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise RegistryError(f"unknown {kind} {name!r}.{hint} Known {kind}s: {', '.join(known) or '(none)'}")


def _canonicalizing(name: str, factory: Callable[..., Any]) -> Callable[..., Any]:
    """``factory`` plus the shared detector setting ``canonicalize`` (``none`` | ``skeleton``).

    ``none`` (or absent) builds the detector as it is, with its spec unchanged; ``skeleton``
    wraps it in :class:`veribench.detectors.base.Canonicalized`, whose spec carries the
    setting (docs/hazards.md).
    """
    import functools

    @functools.wraps(factory)
    def build(*args: Any, **settings: Any) -> Any:
        from .corpus.hazards import SETTING, canonicalize_setting

        mode = canonicalize_setting(settings.pop(SETTING, None))
        det = factory(*args, **settings)
        if mode == "none":
            return det
        if name == "imported":
            raise ValueError(f"{SETTING} does not apply to imported scores: they were computed elsewhere, on the "
                             "text the tool saw")
        from .detectors.base import Canonicalized

        return Canonicalized(det, mode)

    return build


def create(kind: str, name: str, settings: dict[str, Any] | None = None) -> Any:
    """Build plug-in ``name`` of ``kind`` with ``settings``; the result has a ``spec``."""
    return get(kind, name)(**(settings or {}))


def parse_settings(pairs: list[str] | None) -> dict[str, Any]:
    """Parse ``key=value`` strings (from ``--set``) into a settings dict.

    Values are read as JSON when they parse (numbers, booleans, null, lists), else kept
    as strings, so ``--set batch_size=8`` gives an int and ``--set model=gpt2`` a string.

    Raises:
        ValueError: an item without ``=``.
    """
    import json

    out: dict[str, Any] = {}
    for item in pairs or []:
        if "=" not in item:
            raise ValueError(f"--set expects key=value, got {item!r}")
        k, v = item.split("=", 1)
        try:
            out[k.strip()] = json.loads(v)
        except ValueError:
            out[k.strip()] = v
    return out
