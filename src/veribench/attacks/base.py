"""The attack interface, seeded randomness, and RAID's tokenisation helpers.

An attack is a plug-in of kind ``"attack"``: a pydantic settings model (its parameters,
RAID's defaults, each overridable), a :class:`~veribench.spec.Spec`
(``Spec("attack", name, version, params)``), and
``run(texts, seeds) -> list[AttackResult]``, one result per text, whose ``edits`` are
spans over that text (:mod:`veribench.corpus.edits`).

Randomness
----------
RAID draws from Python's global ``random`` state (its pipeline seeds it once with 42,
so a text's attack depends on every row processed before it). Here each document gets
its own stream, ``random.Random(doc_seed)`` with
``doc_seed = first 8 bytes of SHA-256("veribench-attack-v1|{seed}|{attack}|{doc_id}")``
(:func:`doc_seed`), so the same seed gives the same output whatever else is attacked.
Sampling uses only ``Random.random()`` (:func:`sample`, :func:`choice`,
:func:`choices`), the one method whose sequence Python promises to keep across
versions; ``random.sample``/``choice`` may change between releases.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from veribench import registry
from veribench.corpus.edits import Edit, check_edits, drop_noops, sentence_spans, splice
from veribench.errors import InputError, unknown_key
from veribench.spec import Spec

#: Source of the attacks (RAID, ACL 2024): repository and the commit read.
RAID_SOURCE = "liamdugan/raid generation/adversarial/ @ d1b12c0a58f565c0b889b6b72e840e10e3178ccb (MIT)"
SEED_SCHEME = "veribench-attack-v1"


class AttackError(InputError):
    """Bad attack name or parameters (one line, with the known names or fields)."""


class Params(BaseModel):
    """Base of every attack's parameters: ``N`` is RAID's strength in [0, 1]."""

    model_config = ConfigDict(extra="forbid")
    N: float = Field(1.0, ge=0.0, le=1.0)


def share_params(name: str, default: float, what: str) -> type[Params]:
    """A :class:`Params` model whose only parameter is ``N`` (RAID's share, in [0, 1])."""
    from pydantic import create_model

    return create_model(name, __base__=Params, N=(float, Field(default, ge=0.0, le=1.0, description=what)))


@dataclass
class AttackResult:
    """One text's attack.

    Attributes:
        edits: valid spans over the source text (see :mod:`veribench.corpus.edits`).
        text: the attacked text (``apply_edits(source, edits)``); ``None`` when not ok.
        status: ``"ok"`` or a reason code (``refused``, ``bad_response``, ``no_credits``, ...).
        stats: counts behind RAID's semantics: ``eligible`` (candidates), ``selected``
            (chosen), ``edited`` (spans that changed the text), and attack-specific ones.
        detail: anything else to keep (e.g. the model used, the humanizer's vendor version).
    """

    edits: list[Edit] = field(default_factory=list)
    text: str | None = None
    status: str = "ok"
    stats: dict[str, Any] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None


def doc_seed(seed: int, attack: str, doc_id: str) -> int:
    """The per-document seed (64-bit, from SHA-256; see the module docstring)."""
    h = hashlib.sha256(f"{SEED_SCHEME}|{int(seed)}|{attack}|{doc_id}".encode()).digest()
    return int.from_bytes(h[:8], "big")


def sample(rng: random.Random, n: int, k: int) -> list[int]:
    """``k`` distinct indices of ``range(n)``, uniformly, sorted (random keys; stable across Pythons)."""
    if k <= 0 or n <= 0:
        return []
    keys = [rng.random() for _ in range(n)]
    return sorted(sorted(range(n), key=keys.__getitem__)[: min(k, n)])


def choice(rng: random.Random, seq: Sequence[Any]) -> Any:
    """One element of ``seq``, uniformly."""
    return seq[min(int(rng.random() * len(seq)), len(seq) - 1)]


def choices(rng: random.Random, n: int, k: int) -> list[int]:
    """``k`` indices of ``range(n)`` drawn uniformly *with* replacement."""
    return [min(int(rng.random() * n), n - 1) for _ in range(k)] if n > 0 else []


def n_of(share: float, count: int) -> int:
    """RAID's count of items to change: ``int(count * share)`` (floor)."""
    return int(count * share)


class Attack:
    """Base class of attacks. Subclasses set ``name``, ``version``, ``Settings`` and
    implement :meth:`attack_one` (or override :meth:`run` for batched ones).

    Args:
        **params: overrides of ``Settings``' defaults (RAID's).

    Raises:
        AttackError: an unknown parameter or a bad value (one line, naming it).
    """

    name: ClassVar[str] = ""
    version: ClassVar[str] = "1"
    Settings: ClassVar[type[Params]] = Params
    #: Where the attack comes from, and what differs from RAID (docs/robustness.md repeats it).
    source: ClassVar[str] = RAID_SOURCE
    deviations: ClassVar[tuple[str, ...]] = ()
    #: Parameters that change nothing in the output (devices, batch sizes): kept out of the spec.
    operational: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **params: Any):
        ops = {k: params.pop(k) for k in list(params) if k in self.operational}
        try:
            self.params = self.Settings.model_validate(params)
        except ValidationError as e:
            first = e.errors()[0]
            loc = ".".join(str(x) for x in first.get("loc", ())) or None
            msg = first.get("msg", str(e)).removeprefix("Value error, ")
            if first.get("type") == "extra_forbidden":
                known = sorted(self.Settings.model_fields) + sorted(self.operational)
                msg = unknown_key("parameter", str(loc), known, f"attack {self.name!r}")
            raise AttackError(msg, field=loc) from None
        self.ops = ops
        self.setup()

    def setup(self) -> None:
        """Load resources (word lists, models); called once after validation."""

    @property
    def spec(self) -> Spec:
        return Spec("attack", self.name, self.version, self.params.model_dump(mode="json"))

    def record(self, seed: int | None) -> dict[str, Any]:
        """The attack as stored with each derived document: ``{name, version, params, seed}``."""
        return {"name": self.name, "version": self.version, "params": self.params.model_dump(mode="json"),
                "seed": seed}

    def describe_model(self) -> dict[str, Any] | None:
        """The model an attack used (name, kind, upstream), or ``None`` for rule-based attacks."""
        return None

    # -- running ----------------------------------------------------------------------
    def attack_one(self, text: str, rng: random.Random) -> AttackResult:
        raise NotImplementedError

    def run(self, texts: Sequence[str], seeds: Sequence[int], **ctx: Any) -> list[AttackResult]:
        """Attack each text with its own seeded stream; returns checked results in order."""
        return [self.finish(t, self.attack_one(t, random.Random(s))) for t, s in zip(texts, seeds)]

    def finish(self, text: str, res: AttackResult) -> AttackResult:
        """Drop no-op edits, validate the spans, fill ``text`` and ``stats["edited"]``."""
        if res.status != "ok":
            res.edits, res.text = [], None
            return res
        res.edits = check_edits(drop_noops(text, res.edits), len(text))
        res.text = splice(text, res.edits)  # checked on the line above
        res.stats.setdefault("edited", len(res.edits))
        return res

    def apply(self, text: str, seed: int = 0) -> AttackResult:
        """Attack one text with ``random.Random(seed)`` (library use; the corpus layer
        passes :func:`doc_seed`)."""
        return self.run([text], [seed])[0]


# --------------------------------------------------------------------------- RAID's tokenisation
def nltk_word_spans(text: str) -> list[tuple[int, int]]:
    """Token spans from NLTK's Treebank word tokenizer (``NLTKWordTokenizer``), as RAID's
    ``upper_lower`` uses it on the whole text. Falls back to ``\\w+|[^\\w\\s]`` spans if
    NLTK cannot align a token (it raises on some quote sequences)."""
    import re

    try:
        from nltk.tokenize import NLTKWordTokenizer
    except ImportError as e:
        raise AttackError("this attack needs nltk: pip install 'veribench[attacks]'") from e
    try:
        return [(int(s), int(e)) for s, e in NLTKWordTokenizer().span_tokenize(text)]
    except (ValueError, LookupError):
        return [m.span() for m in re.finditer(r"\w+|[^\w\s]", text)]


def sentence_word_spans(text: str) -> list[tuple[int, int]]:
    """RAID's ``get_nltk_span_tokens``: sentences first, then NLTK word tokens inside each.
    Sentences come from pysbd (RAID: NLTK punkt, whose model is not shipped offline)."""

    out: list[tuple[int, int]] = []
    for s, e in sentence_spans(text):
        out.extend((s + a, s + b) for a, b in nltk_word_spans(text[s:e]))
    return out


def names() -> list[str]:
    """Every attack name: built-ins (:data:`veribench.registry.BUILTINS`) and third-party
    entry points (group ``veribench.attacks``)."""
    return registry.names("attack")


def create(name: str, params: dict[str, Any] | None = None) -> Attack:
    """Build attack ``name`` with ``params`` (RAID's defaults for the rest).

    Raises:
        RegistryError: unknown name (with "did you mean").
        AttackError: an unknown parameter or a bad value.
    """
    return registry.create("attack", name, dict(params or {}))
