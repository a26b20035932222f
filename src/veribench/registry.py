"""One registry for every plug-in kind (detector, humanizer, embedder, judge, ...).

Built-ins are declared here, in :data:`BUILTINS`, as lazy ``"module:attr"`` references,
so importing veribench never imports torch or an HTTP stack it does not need. Third parties
register through entry points in the group ``veribench.<kind>s`` (for example
``veribench.detectors``), whose value is a factory ``"module:attr"``.

A factory is called with the user's settings as keyword arguments (strings from
the command line are already parsed to JSON values where possible) and returns a
plug-in object that has a ``spec`` attribute (:class:`veribench.spec.Spec`).

Every detector also accepts the shared setting ``canonicalize`` (``"none"`` | ``"skeleton"``,
see ``docs/hazards.md``), handled once for every detector rather than by each factory: the wrapper named in
:data:`WRAPPERS` (:func:`veribench.detectors.base.canonicalizing`) wraps the built detector in
:class:`veribench.detectors.base.Canonicalized` for ``skeleton``, whose spec carries it.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import typing
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Any, TypeAlias, cast

from veribench.errors import RegistryError, SettingError, close_matches, unknown_key

#: What a registry entry holds: a factory, a ``"module:attr"`` reference to one, or an entry point.
Target: TypeAlias = Callable[..., Any] | str | metadata.EntryPoint

#: Built-in plug-ins, the one table of them (data): kind -> name -> ``"module:attr"`` of the
#: factory. Nothing is imported until a plug-in is built, so importing veribench never
#: imports torch or an HTTP stack it does not need.
BUILTINS: dict[str, dict[str, str]] = {
    "detector": {
        # local (run on this machine): ZipPy, the zero-shot LM engine, HF classifiers
        "zippy": "veribench.detectors.local.zippy:ZippyDetector",
        "loglik": "veribench.detectors.local.zeroshot:loglik",
        "rank": "veribench.detectors.local.zeroshot:rank",
        "logrank": "veribench.detectors.local.zeroshot:logrank",
        "entropy": "veribench.detectors.local.zeroshot:entropy",
        "gltr": "veribench.detectors.local.zeroshot:gltr",
        "lrr": "veribench.detectors.local.zeroshot:lrr",
        "fast-detectgpt": "veribench.detectors.local.zeroshot:FastDetectGPT",
        "binoculars": "veribench.detectors.local.zeroshot:Binoculars",
        "detectgpt": "veribench.detectors.local.detectgpt:DetectGPT",
        "hf-classifier": "veribench.detectors.local.hf_classifier:HFClassifier",
        "boundary-loglik": "veribench.detectors.local.boundary:BoundaryDetector",
        # watermarks (kgw: Kirchenbauer et al. 2023 via transformers; unigram: Zhao et al. 2023); key never stored
        "watermark": "veribench.detectors.local.watermark:WatermarkDetector",
        # commercial adapters (HTTP; keys only from VERIBENCH_<VENDOR>_API_KEY, docs/vendors.md)
        "gptzero": "veribench.detectors.api.vendors:GPTZero",
        "originality": "veribench.detectors.api.vendors:Originality",
        "copyleaks": "veribench.detectors.api.vendors:Copyleaks",
        "winston": "veribench.detectors.api.vendors:Winston",
        "zerogpt": "veribench.detectors.api.vendors:ZeroGPT",
        "sapling": "veribench.detectors.api.vendors:Sapling",
        "pangram": "veribench.detectors.api.vendors:Pangram",
        # scores recorded elsewhere (by hand, or in a published dataset)
        "imported": "veribench.scales:ImportedDetector",
    },
    "humanizer": {
        "undetectable": "veribench.humanizers.api.vendors:Undetectable",
        "stealthgpt": "veribench.humanizers.api.vendors:StealthGPT",
        "writehuman": "veribench.humanizers.api.vendors:WriteHuman",
        "hix": "veribench.humanizers.api.vendors:HIX",
        "humbot": "veribench.humanizers.api.vendors:Humbot",
        "llm-humanizer": "veribench.humanizers.llm:LLMHumanizer",
        "manual": "veribench.humanizers.manual:ManualHumanizer",
        "llm-paraphraser": "veribench.attacks.paraphrase:LLMParaphraser",
    },
    "embedder": {
        "minilm": "veribench.llm.embedders:MiniLMEmbedder",
        "openai-3-large": "veribench.llm.embedders:OpenAIEmbedder",
    },
    "judge": {"llm-readability": "veribench.llm.judge:ReadabilityJudge"},
    "generator": {"openai-chat": "veribench.llm.client:ChatClient"},
    # RAID's eleven attacks (Dugan et al., ACL 2024; liamdugan/raid generation/adversarial/),
    # at RAID's default parameters, under RAID's names
    "attack": {
        "homoglyph": "veribench.attacks.rules:Homoglyph",
        "number": "veribench.attacks.rules:AlterNumbers",
        "article_deletion": "veribench.attacks.rules:ArticleDeletion",
        "insert_paragraphs": "veribench.attacks.rules:InsertParagraphs",
        "perplexity_misspelling": "veribench.attacks.lm:PerplexityMisspelling",
        "upper_lower": "veribench.attacks.rules:UpperLowerFlip",
        "whitespace": "veribench.attacks.rules:WhiteSpace",
        "zero_width_space": "veribench.attacks.rules:ZeroWidthSpace",
        "synonym": "veribench.attacks.lm:Synonym",
        "paraphrase": "veribench.attacks.paraphrase:Paraphrase",
        "alternative_spelling": "veribench.attacks.rules:AlternativeSpelling",
    },
}
#: Per-kind wrappers applied to every factory of that kind (data, ``"module:attr"``): a
#: wrapper takes ``(name, factory)`` and returns the factory to use. Detectors take the
#: shared ``canonicalize`` setting this way (docs/hazards.md).
WRAPPERS: dict[str, str] = {"detector": "veribench.detectors.base:canonicalizing"}
_REGISTERED: dict[str, dict[str, Target]] = {}

#: The languages each built-in detector's authors document it for (ISO 639-1), data; the
#: source of each entry is cited in ``docs/detectors.md``. A detector absent here and from
#: :data:`MODEL_LANGUAGES` has no declared languages (:data:`NOT_DECLARED`).
DECLARED_LANGUAGES: dict[str, tuple[str, ...]] = {
    "zippy": ("en",),  # thinkst/zippy README: its compression prelude is English AI text
    # Vendors, from their own documentation (docs/detectors.md cites each page); a vendor that
    # documents no list (gptzero, originality, winston, zerogpt) stays "languages not declared".
    # Copyleaks API reference, "AI Detection Supported Languages" (30; zh-CN and zh-TW are zh):
    "copyleaks": ("ar", "bg", "bn", "cs", "de", "el", "en", "es", "fr", "he", "hi", "hr", "hu", "it", "ja", "ko",
                  "nl", "no", "pl", "pt", "ro", "ru", "sr", "sv", "th", "tr", "uk", "vi", "zh"),
    # Pangram, "Pangram Text AI Detector now supports Arabic, Japanese, Korean, Hindi, and more"
    # (pangram.com/resources/pangram-multilingual-v2): English and the 22 languages of its table
    # (its text names Korean too):
    "pangram": ("ar", "cs", "de", "el", "en", "es", "fa", "fr", "hi", "hu", "it", "ja", "ko", "nl", "pl", "pt",
                "ro", "ru", "sv", "tr", "uk", "ur", "vi", "zh"),
    # Sapling API docs, AI Detector overview: "It is optimized for English text":
    "sapling": ("en",),
}
#: A zero-shot detector's languages follow its model (the spec's model settings,
#: :data:`MODEL_SETTINGS`): model -> languages its model card declares (docs/detectors.md).
MODEL_LANGUAGES: dict[str, tuple[str, ...]] = {
    "smollm2": ("en",),  # SmolLM2 model card: "primarily understand and generate content in English"
    "HuggingFaceTB/SmolLM2-135M": ("en",),
    "HuggingFaceTB/SmolLM2-135M-Instruct": ("en",),
    "HuggingFaceTB/SmolLM2-360M": ("en",),
    "HuggingFaceTB/SmolLM2-1.7B": ("en",),
    "gpt2": ("en",),  # GPT-2 model card: "Language(s): English"
    "tiiuae/falcon-7b": ("en", "fr"),  # Falcon-7B model card: "Language(s) (NLP): English and French"
    "tiiuae/falcon-7b-instruct": ("en", "fr"),
    # DetectGPT's mask-filling model: T5 model cards, "Language(s) (NLP): English, French, Romanian, German"
    "t5-small": ("de", "en", "fr", "ro"),
    "t5-base": ("de", "en", "fr", "ro"),
    "t5-large": ("de", "en", "fr", "ro"),
    "t5-3b": ("de", "en", "fr", "ro"),
    "t5-11b": ("de", "en", "fr", "ro"),
}
#: The settings that name a detector's language model(s), the mask-filling model included.
MODEL_SETTINGS = ("model", "scoring_model", "sampling_model", "observer", "performer", "mask_model")
#: How every output labels a detector without declared languages.
NOT_DECLARED = "languages not declared"


def declared_languages(name: str, settings: dict[str, Any] | None = None) -> tuple[str, ...] | None:
    """The languages detector ``name`` with ``settings`` is declared for (sorted ISO 639-1
    codes), or ``None`` when not declared (:data:`NOT_DECLARED`).

    A detector in :data:`DECLARED_LANGUAGES` has its own list. Otherwise its model settings
    (:data:`MODEL_SETTINGS`) decide: the languages every named model declares
    (:data:`MODEL_LANGUAGES`; an intersection when it names several); ``None`` when it
    names no model or a model without declared languages.
    """
    if name in DECLARED_LANGUAGES:
        return tuple(sorted(DECLARED_LANGUAGES[name]))
    models = [str(v) for k, v in (settings or {}).items() if k in MODEL_SETTINGS and v]
    if not models or any(m not in MODEL_LANGUAGES for m in models):
        return None
    common = set(MODEL_LANGUAGES[models[0]])
    for m in models[1:]:
        common &= set(MODEL_LANGUAGES[m])
    return tuple(sorted(common))


def register(kind: str, name: str, factory: Callable[..., Any] | str) -> None:
    """Register ``factory`` (a callable or ``"module:attr"``) as plug-in ``name`` of ``kind``."""
    _REGISTERED.setdefault(kind, {})[name] = factory


def _entry_points(kind: str) -> dict[str, metadata.EntryPoint]:
    try:
        eps = metadata.entry_points(group=f"veribench.{kind}s")
    except Exception:  # pragma: no cover - broken metadata
        return {}
    return {ep.name: ep for ep in eps}


def names(kind: str) -> list[str]:
    """All registered names of ``kind``: built-ins, runtime registrations and entry points."""
    out = set(BUILTINS.get(kind, {})) | set(_REGISTERED.get(kind, {})) | set(_entry_points(kind))
    return sorted(out)


def _resolve(target: Target) -> Callable[..., Any]:
    """The factory ``target`` names: an entry point is loaded, ``"module:attr"`` imported."""
    if isinstance(target, metadata.EntryPoint):
        return cast("Callable[..., Any]", target.load())  # an entry point's value is a factory
    if isinstance(target, str):
        mod, _, attr = target.partition(":")
        obj: Any = importlib.import_module(mod)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return cast("Callable[..., Any]", obj)  # a reference names a factory (the registry's contract)
    return target


def get(kind: str, name: str) -> Callable[..., Any]:
    """The factory for plug-in ``name`` of ``kind``.

    Raises:
        RegistryError: unknown name; the message lists close matches ("did you mean").
    """
    for table in (_REGISTERED.get(kind, {}), BUILTINS.get(kind, {}), _entry_points(kind)):
        if name in table:
            factory = _resolve(table[name])
            wrapper = WRAPPERS.get(kind)
            return _resolve(wrapper)(name, factory) if wrapper else factory
    raise RegistryError(unknown_message(kind, name))


def unknown_message(kind: str, name: str, also_known: Sequence[str] = ()) -> str:
    """The one-line "unknown name" message of every plug-in look-up: ``"unknown detector
    'zipy'. Did you mean 'zippy'? Known detectors: ..."``. ``also_known`` adds names that
    resolve elsewhere (e.g. a workspace's stored detector specs) to the plug-ins of ``kind``;
    the close matches are :func:`veribench.errors.close_matches`."""
    known = sorted(set(names(kind)) | set(also_known))
    close = close_matches(name, known)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown {kind} {name!r}.{hint} Known {kind}s: {', '.join(known) or '(none)'}"


def create(kind: str, name: str, settings: dict[str, Any] | None = None) -> Any:
    """Build plug-in ``name`` of ``kind`` with ``settings``; the result has a ``spec``.

    Raises:
        RegistryError: unknown name ("did you mean").
        SettingError: a setting the factory does not take, named with the closest known
            ones ("did you mean", :func:`veribench.errors.unknown_key`), in place of
            Python's ``TypeError`` (``__init__() got an unexpected keyword argument``).
    """
    factory = get(kind, name)
    settings = dict(settings or {})
    try:
        return factory(**settings)
    except TypeError as e:
        m = re.search(r"unexpected keyword argument '([^']+)'", str(e))
        if m is None or m.group(1) not in settings:
            raise
        params, _ = settings_of(getattr(factory, "__wrapped__", factory))
        known = [p.name for p in params] + list(getattr(factory, "shared_settings", ()))
        raise SettingError(unknown_key("setting", m.group(1), known, f"{kind} {name!r}")) from None


def _keyword_params(fn: Any, skip: set[str]) -> tuple[list[inspect.Parameter], bool]:
    """Keyword-capable parameters of ``fn`` (not in ``skip``), and whether it takes ``**kwargs``."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return [], False
    out, var = [], False
    for p in sig.parameters.values():
        if p.kind == p.VAR_KEYWORD:
            var = True
        elif p.kind not in (p.VAR_POSITIONAL, p.POSITIONAL_ONLY) and p.name not in skip and p.name != "self":
            out.append(p)
    return out, var


def settings_of(factory: Any) -> tuple[list[inspect.Parameter], bool]:
    """The settings a factory takes, as ``inspect.Parameter``s (name, default), and whether
    it still takes any other keyword at the end (``**kwargs`` that nothing below names).

    A factory's ``**kwargs`` is followed into the class it builds: a class's ``__init__``
    up its bases, a function's return annotation when it names a class (a factory such
    as ``loglik(**settings) -> ZeroShotDetector`` passes its settings on, and the class
    names them). A factory that validates its own settings (vendor adapters) may take
    more than its signature shows.
    """
    params, var = _keyword_params(factory, set())
    seen = {p.name for p in params}
    target = factory if isinstance(factory, type) else None
    skip: set[str] = set()
    if target is None and var:
        try:
            ret = typing.get_type_hints(factory).get("return")
        except Exception:  # an annotation that does not resolve: the signature is all we know
            ret = None
        target = ret if isinstance(ret, type) else None
        skip = {"statistic"}  # set by the factory itself, never by the user
    if target is not None and var:
        for cls in target.__mro__:
            if cls is object or "__init__" not in vars(cls):
                continue
            more, var = _keyword_params(vars(cls)["__init__"], skip | seen)
            params += more
            seen |= {p.name for p in more}
            if not var:
                break
    return params, var


def parse_settings(pairs: list[str] | None) -> dict[str, Any]:
    """Parse ``key=value`` strings (from ``--set``) into a settings dict.

    Values are read as JSON when they parse (numbers, booleans, null, lists), else kept
    as strings, so ``--set batch_size=8`` gives an int and ``--set model=gpt2`` a string.

    Raises:
        ValueError: an item without ``=``.
    """
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
