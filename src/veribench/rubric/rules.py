"""The editors' rubric as data: the 1-5 meaning scale, the 12 error classes, and the
rules that settle disagreements.

Source: the editors' reading rubric, ``shared/spec/001_*.txt`` ("How to judge humanized
text quality: the editors' reading rubric"). Every threshold used by the rating app and
by the aggregation lives here, once.
"""

from __future__ import annotations

#: Meaning scale (whole numbers). Text quoted from the rubric's score table.
SCORE_MIN, SCORE_MAX = 1, 5
SCORE_SCALE: dict[int, str] = {
    5: "Every claim in the input is present in the output, nothing has been added, and every qualifier, "
    "number and name is unchanged",
    4: "Every claim is present, with one qualifier softened or sharpened, or one minor detail reworded in a "
    "way that slightly shifts emphasis",
    3: "One claim is missing or one fact has been added that the input did not contain; the argument still stands",
    2: "Two or more claims are missing or added, or one central claim now says something different",
    1: "The output argues a different point from the input, or a reader could not recover the input's main "
    "claims from it",
}

#: A gap of this many points or more between the two readers sends the output to a
#: blind third reader ("Scores differ by 2 or more: Third blind read").
THIRD_READ_GAP = 2

#: Readers per output before any third read ("Two editors judge ...").
READERS_PER_OUTPUT = 2

#: A marked sentence counts only if this many readers mark it ("counted only if two of
#: three readers mark it"). The unit is (sentence, class).
MARK_QUORUM = 2

#: Words per unit of the error rate ("errors per 100 words of output").
WORDS_PER_UNIT = 100

MEANING, WRITING = "meaning", "writing"

#: The 12 classes, in the rubric's order. ``count`` names the per-reading count a
#: meaning class feeds (dropped claims are counted from unticked claims, not marks).
CLASSES: list[dict[str, str | None]] = [
    {"id": "dropped_claim", "label": "Dropped claim", "group": MEANING, "count": "dropped_claims",
     "what": "A statement in the input that has no counterpart in the output"},
    {"id": "invented_fact", "label": "Invented fact", "group": MEANING, "count": "invented_facts",
     "what": "A statement in the output with no source in the input"},
    {"id": "changed_qualifier", "label": "Changed qualifier", "group": MEANING, "count": None,
     "what": "\"may\" becomes \"will\", \"some\" becomes \"most\", a hedge is removed or added"},
    {"id": "changed_number_name_date", "label": "Changed number, name or date", "group": MEANING,
     "count": "changed_facts", "what": "A figure, proper noun or date differs from the input"},
    {"id": "reversed_relation", "label": "Reversed relation", "group": MEANING, "count": None,
     "what": "Cause and effect, before and after, or more and less are swapped"},
    {"id": "lost_attribution", "label": "Lost attribution", "group": MEANING, "count": None,
     "what": "A claim the input credited to a source is now stated as the writer's own"},
    {"id": "agreement_tense", "label": "Agreement and tense fault", "group": WRITING, "count": None,
     "what": "Subject and verb disagree, or tense shifts inside a sentence without reason"},
    {"id": "synonym_misfire", "label": "Synonym misfire", "group": WRITING, "count": None,
     "what": "A replacement word that is not a synonym in this context"},
    {"id": "technical_term_replaced", "label": "Technical term replaced", "group": WRITING, "count": None,
     "what": "A term of art swapped for an everyday word that does not mean the same thing"},
    {"id": "fragment_run_on", "label": "Fragment or run-on", "group": WRITING, "count": None,
     "what": "A sentence with no main verb, or two sentences joined with no punctuation"},
    {"id": "broken_reference", "label": "Broken reference", "group": WRITING, "count": None,
     "what": "A pronoun or \"this\" with no clear referent in the output"},
    {"id": "broken_punctuation_structure", "label": "Broken punctuation or structure", "group": WRITING,
     "count": None, "what": "Lost list structure, unpaired quotation marks, a colon with nothing after it"},
]
CLASS_BY_ID = {c["id"]: c for c in CLASSES}

#: Classes an editor marks on an output sentence (a dropped claim has no output sentence:
#: it is an unticked claim line).
SENTENCE_MEANING_CLASSES = [c["id"] for c in CLASSES if c["group"] == MEANING and c["id"] != "dropped_claim"]
WRITING_CLASSES = [c["id"] for c in CLASSES if c["group"] == WRITING]
MARKABLE_CLASSES = SENTENCE_MEANING_CLASSES + WRITING_CLASSES

#: How the readings of one output become one number (score, dropped, invented, changed):
#: the median of its reads. With two reads that is their average (the rubric's "Scores
#: differ by 1: Average used in the run table"); with a third read it is the score two of
#: the three readers are closest to. The rubric does not state the three-read rule; this
#: is veribench's choice, published in every results document.
OUTPUT_COMBINE_RULE = "median of the output's reads (two reads: their mean)"

#: The scale's own consistency: the most a reading may score for its count of dropped
#: claims plus invented facts. The rubric's score table: 3 is "One claim is missing or one
#: fact has been added", 2 is "Two or more claims are missing or added" (and 4 and 5 need
#: "Every claim is present" / "nothing has been added"). Keys are fault counts; the last
#: entry holds for every count at or above it. Changed numbers, names or dates are meaning
#: faults too, but neither a dropped nor an added claim, so they do not enter the count.
MAX_SCORE_BY_FAULTS: dict[int, int] = {0: 5, 1: 3, 2: 2}
CONSISTENCY_RULE = ("a reading with one dropped claim or invented fact scores at most 3; with two or more, at most 2 "
                    "(the rubric's score table)")


def max_score(dropped_claims: int, invented_facts: int) -> int:
    """The highest meaning score the rubric allows for these counts (see :data:`MAX_SCORE_BY_FAULTS`).

    Args:
        dropped_claims: unticked claim lines (>= 0).
        invented_facts: output sentences marked ``invented_fact`` (>= 0).
    """
    faults = dropped_claims + invented_facts
    top = max(MAX_SCORE_BY_FAULTS)
    return MAX_SCORE_BY_FAULTS[min(faults, top)]
