"""Arm B as data: registers, target length, subgroups, the evidence thresholds and the
consent and attestation texts.

Source: the open detector-test protocol, ``docs/spec/002_*.txt`` ("Arm B — fresh volunteer
human text (n = 75). Newly written prose from adult volunteers who attest, in writing, that
no AI touched the draft, composed in an editor whose version history we retain. Volunteers
span native and non-native English writers, and we will report those subgroups
separately"). The registers and the 300-1,200 word length are the protocol's corpus
rules (arm A: "Fifty documents each from three registers — academic/student prose,
professional/journalistic prose, and casual web writing — at 300 to 1,200 words, since
most detectors state minimums around 300 words"); arm B uses the same so its false-positive
rates are comparable with arm A's. ``docs/arm-b.md`` quotes the texts below; a test keeps
the two identical.
"""

from __future__ import annotations

import re

from veribench.hashing import text_sha256

#: The protocol's three registers, with the description shown to writers.
REGISTERS: dict[str, str] = {
    "academic": "academic or student prose (an essay, a report, an argued answer)",
    "professional": "professional or journalistic prose (an article, a briefing, a column)",
    "casual": "casual web writing (a blog post, a forum post, a review)",
}
DEFAULT_REGISTER = "academic"

#: Target length in words, inclusive (protocol: "at 300 to 1,200 words"). A text outside
#: it cannot be submitted; the invitation may name another range (``write invite``).
TARGET_WORDS: tuple[int, int] = (300, 1200)
#: A length a prompt states in words: "200 words", "a 200-word essay", "300-500 words",
#: "300 to 500 words" (numbers may carry thousands commas: "1,200 words").
STATED_WORDS = re.compile(r"\b(\d{1,3}(?:,\d{3})+|\d+)(?:\s*(?:-|\u2013|\u2014|to)\s*(\d{1,3}(?:,\d{3})+|\d+))?"
                          r"[\s-]*words?\b", re.IGNORECASE)


def stated_word_counts(prompt: str) -> list[int]:
    """Every word count the prompt states (each end of a stated range), in order of
    appearance; ``[]`` when it states none. The invitation page shows the prompt and the
    invitation's length beside it, so ``write invite`` refuses a prompt whose stated length
    falls outside the invitation's range (two limits on one page)."""
    out: list[int] = []
    for m in STATED_WORDS.finditer(prompt):
        out += [int(g.replace(",", "")) for g in m.groups() if g]
    return out


#: Hard bounds on any invitation's range, and on the characters of one draft.
WORDS_LIMITS: tuple[int, int] = (1, 5000)
MAX_TEXT_CHARS = 60_000
#: Saved revisions kept per draft at most (autosave every few seconds gives a few hundred to a
#: few thousand for one text; the cap bounds what one link can store).
MAX_REVISIONS = 10_000

#: The protocol arm of every text written in the app, and the corpus name by default.
ARM = "B"
CORPUS = "arm-b"
#: Collection method recorded in each document's provenance.
METHOD = "attested, with revision history"

#: Self-report -> Table 2 slice. The document's ``subgroup`` is the protocol's slice name
#: ("native volunteers", "non-native volunteers"); arm A (pre-2022 archive text) is the
#: slice ``arm = A``. See ``examples/protocols/arm-b.toml``.
ENGLISH = ("native", "non-native")
SUBGROUPS: dict[str, str] = {"native": "native volunteers", "non-native": "non-native volunteers"}
#: Years writing in English -> tag ``years_writing_english`` (exact years stay in provenance).
YEARS_BUCKETS: tuple[tuple[int, int, str], ...] = ((0, 4, "0-4"), (5, 9, "5-9"), (10, 19, "10-19"),
                                                    (20, 120, "20+"))
MAX_YEARS = 120
FIRST_LANGUAGE_MAX_CHARS = 64

#: Process evidence. A step (one saved revision) that inserts one contiguous block of at
#: least this many words is listed as a large insertion (a pasted block, or text typed
#: while saving was interrupted: the seconds since the previous save are shown beside it).
#: Why 25: the editor saves 1.5 s after typing pauses and at least every 10 s while typing;
#: at 100 words a minute (fast typing) one step holds at most about 17 new words.
LARGE_INSERTION_WORDS = 25
#: Sustained insertion faster than human typing: more than FAST_INSERTION_WORDS_PER_SECOND x
#: FAST_INSERTION_WINDOW_SECONDS words (75) inserted by the saves of any stretch of at most
#: that many seconds. Why 2.5 words a second (150 words a minute, about 15 characters a second
#: at 6 characters a word with its space): fast typists sustain 70 to 100 words a minute, and
#: 150 for half a minute is beyond all but record typists; why 30 s: the editor saves at
#: least every 10 s while typing, so a window holds three saves or more of ordinary typing.
FAST_INSERTION_WORDS_PER_SECOND = 2.5
FAST_INSERTION_WINDOW_SECONDS = 30
#: A gap between two saves longer than this is a break: not counted as writing time.
IDLE_GAP_SECONDS = 300
#: Autosave timing in the browser (milliseconds): after a pause, and at most this long
#: while typing without a pause. A paste is saved on its own step at once.
AUTOSAVE_PAUSE_MS = 1500
AUTOSAVE_MAX_MS = 10_000

#: How long a writer's sign-in lasts (seconds) unless revoked.
SESSION_MAX_AGE = 30 * 24 * 3600

PUBLICATION = {
    "full": "Publish my full text (under CC BY 4.0), with the record below.",
    "fingerprint_only": "Publish only a fingerprint of my text (its SHA-256), with the record below; "
                        "never the text.",
}

CONSENT_TITLE = "Consent to contribute a text (veribench arm B)"
CONSENT_TEXT = """\
You are invited to write a new text in English for an open benchmark of AI-text detectors. \
The benchmark measures how often detectors wrongly flag human writing as AI-generated (false \
positives), and reports native and non-native writers of English separately.

1. You must be 18 or older to take part. Taking part is voluntary.
2. Write the text yourself, in this editor. Do not use any AI tool for any part of it: no \
chatbot, no AI writing assistant, no AI paraphraser, no AI rewriting or translation. You may \
plan on paper or in your own notes.
3. The editor saves your draft as you write: every saved revision is kept on the server with \
its time. From these revisions we compute process evidence: how many revisions, over how \
long, how many words each one added, and any large block of text that arrived in one step \
(for example, pasted from your notes). This evidence is recorded and published with your \
text's record so readers can see how the corpus was made. It is never used to accuse anyone.
4. You will tell us whether English is your native language, what your first language is \
and for how many years you have written in English. These answers are published as tags of \
your text. We do not publish your name; the name you type to sign the attestation is kept \
by the organiser only.
5. Your text will be scored by AI detectors, including commercial services that receive the \
text over the internet under their own terms.
6. When you submit, you choose: publish the full text (under the CC BY 4.0 licence), or \
publish only its fingerprint (a SHA-256 hash, from which the text cannot be recovered) with \
its length, register, tags, process evidence and detector scores.
7. You may withdraw at any time before the benchmark run that includes your text is \
published. Your text and all its revisions are then deleted, and the deletion is logged \
(without the text). After publication a withdrawal removes the text from every later run, \
but a published release cannot be recalled."""

ATTESTATION_TEXT = """\
I attest that I wrote this text myself, in this editor, and that no AI tool generated, \
rewrote, paraphrased, translated or edited any part of it. I understand that it will be \
used as human-written text in a public benchmark of AI-text detectors."""

#: Versions recorded with each consent and attestation (SHA-256 of the exact texts).
CONSENT_VERSION = text_sha256(CONSENT_TITLE + "\n" + CONSENT_TEXT)
ATTESTATION_VERSION = text_sha256(ATTESTATION_TEXT)


def years_bucket(years: int) -> str:
    """The ``years_writing_english`` tag of a whole number of years (0..``MAX_YEARS``)."""
    for lo, hi, name in YEARS_BUCKETS:
        if lo <= years <= hi:
            return name
    raise ValueError(f"years writing in English must be 0-{MAX_YEARS} (got {years})")
