"""RAID's rule-based attacks on 1,000 real texts: seeded determinism, edit spans that
reproduce the output, and RAID's parameter semantics checked against counts computed
here independently (and, where the draw is random, within sampling error)."""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest

from veribench import attacks
from veribench.attacks.base import doc_seed
from veribench.corpus.edits import apply_edits, check_edits

Z = 4.0  # |z| bound for sampling checks (two-sided p ~ 6e-5)


def run(name, texts, params=None, seed=7):
    atk = attacks.create(name, params)
    seeds = [doc_seed(seed, name, str(i)) for i in range(len(texts))]
    return atk, atk.run(texts, seeds)


def common(name, texts, params=None):
    """Spans reproduce the output; the same seed gives the same output; another seed another."""
    atk, res = run(name, texts, params)
    assert len(res) == len(texts)
    for t, r in zip(texts, res):
        assert r.status == "ok"
        check_edits(r.edits, len(t))
        assert apply_edits(t, r.edits) == r.text
        assert r.stats["edited"] == len(r.edits)
    _, again = run(name, texts, params)
    assert [r.edits for r in again] == [r.edits for r in res]
    _, other = run(name, texts, params, seed=8)
    changed = [a.edits != b.edits for a, b in zip(res, other) if a.edits or b.edits]
    return atk, res, changed


def binom_z(k, n, p):
    return (k - n * p) / math.sqrt(n * p * (1 - p))


def test_homoglyph_default_replaces_every_mappable_character(texts):
    from veribench.attacks.rules import RAID_HOMOGLYPHS

    atk, res, changed = common("homoglyph", texts)
    assert atk.params.N == 1.0 and atk.params.table == "raid"
    for t, r in zip(texts, res):
        elig = sum(c in RAID_HOMOGLYPHS for c in t)
        assert r.stats["eligible"] == elig == r.stats["edited"]
        assert not any(c in RAID_HOMOGLYPHS for c in r.text)
        assert len(r.text) == len(t)
    # only the choice among two look-alikes varies with the seed
    assert sum(changed) / len(changed) > 0.95


def test_homoglyph_honours_n_and_draws_uniformly(texts):
    """RAID's fault fixed: N is honoured (int(N x mappable) replaced), positions uniform,
    and each look-alike is a Unicode confusable of its letter."""
    from confusable_homoglyphs import confusables

    from veribench.attacks.rules import RAID_HOMOGLYPHS

    _, res, changed = common("homoglyph", texts, {"N": 0.3})
    first_half = chosen = 0
    opt = Counter()
    for t, r in zip(texts, res):
        elig = [i for i, c in enumerate(t) if c in RAID_HOMOGLYPHS]
        assert r.stats["edited"] == int(0.3 * len(elig))
        pos = {s for s, _, _ in r.edits}
        assert pos <= set(elig)
        first_half += sum(1 for i in elig[: len(elig) // 2] if i in pos)
        chosen += len(pos) if len(elig) % 2 == 0 else sum(1 for i in elig[:-1] if i in pos)
        for s, _e, rep in r.edits:
            options = RAID_HOMOGLYPHS[t[s]]
            if len(options) == 2:
                opt[options.index(rep)] += 1
    assert abs(binom_z(first_half, chosen, 0.5)) < Z
    assert abs(binom_z(opt[0], opt[0] + opt[1], 0.5)) < Z
    assert sum(changed) / len(changed) > 0.95
    def looks(c):
        r = confusables.is_confusable(c, greedy=True, preferred_aliases=[])
        return {h["c"] for h in r[0]["homoglyphs"]} if r else set()

    for letter, reps in RAID_HOMOGLYPHS.items():  # Unicode confusables.txt: same or shared skeleton
        for rep in reps:
            assert rep in looks(letter) or letter in looks(rep) or looks(letter) & looks(rep), (letter, rep)


def test_homoglyph_unicode_table(texts):
    _, res, _ = common("homoglyph", texts[:100], {"table": "confusables"})
    from veribench.attacks.rules import unicode_homoglyphs

    table = unicode_homoglyphs()
    assert set("aeopcxy") <= set(table)
    for t, r in zip(texts[:100], res):
        assert r.stats["edited"] == sum(c in table for c in t)


def test_number(texts):
    from scipy.stats import chisquare

    _, res, changed = common("number", texts)
    digits = Counter()
    with_numbers = 0
    for t, r in zip(texts, res):
        spans = [m.span() for m in re.finditer(r"[0-9]+\.?[0-9]*", t)]
        with_numbers += bool(spans)
        assert r.stats["eligible"] == len(spans)
        assert r.stats["selected"] == int(0.5 * len(spans))
        assert r.stats["edited"] <= r.stats["selected"]
        for s, e, rep in r.edits:
            assert (s, e) in spans and len(rep) == e - s
            assert [c for c in rep if not c.isdigit()] == [c for c in t[s:e] if not c.isdigit()]
            digits.update(c for c in rep if c.isdigit())
    assert with_numbers > 200
    assert chisquare([digits[str(d)] for d in range(10)]).pvalue > 1e-4


def raid_article_indices(text, article):
    """RAID's ``find_article_indices`` (liamdugan/raid, MIT), copied as the reference."""
    start = 0
    while start < len(text):
        start = text.find(article, start)
        if start == -1:
            break
        yield start
        start += len(article) - 1


def test_article_deletion(texts):
    _, res, changed = common("article_deletion", texts)
    for t, r in zip(texts, res):
        found = [(i, a) for a in (" a ", " an ", " the ") for i in raid_article_indices(t, a)]
        assert r.stats["eligible"] == len(found)
        assert len(r.edits) == int(0.5 * len(found))
        for s, e, rep in r.edits:
            assert rep == "" and t[s:e] in (" a", " an", " the") and t[e] == " "
    assert sum(changed) / len(changed) > 0.9


def test_insert_paragraphs(texts):
    from veribench.corpus.edits import sentence_spans

    _, res, changed = common("insert_paragraphs", texts)
    for t, r in zip(texts, res):
        starts = [s for s, _ in sentence_spans(t)][1:]
        assert len(r.edits) == int(0.5 * len(starts))
        assert all(s == e and rep == "\n\n" and s in starts for s, e, rep in r.edits)
    assert sum(changed) / len(changed) > 0.9


def test_upper_lower(texts):
    from nltk.tokenize import NLTKWordTokenizer

    _, res, changed = common("upper_lower", texts)
    tk = NLTKWordTokenizer()
    first = total = 0
    for t, r in zip(texts, res):
        idx = [s for s, e in tk.span_tokenize(t) if t[s].isalpha() and t[s].swapcase() != t[s]]
        assert r.stats["eligible"] == len(idx)
        assert len(r.edits) == int(0.05 * len(idx))
        for s, e, rep in r.edits:
            assert s in idx and e == s + 1 and rep == t[s].swapcase()
        pos = {s for s, _, _ in r.edits}
        half = idx[: len(idx) // 2]
        first += sum(1 for i in half if i in pos)
        total += sum(1 for i in idx[: 2 * len(half)] if i in pos)
    assert abs(binom_z(first, total, 0.5)) < Z


def test_whitespace_draws_with_replacement(texts):
    _, res, changed = common("whitespace", texts)
    distinct = expected = 0.0
    for t, r in zip(texts, res):
        n = len(t.split(" "))
        k = int(0.2 * n)
        assert sum(len(rep) for _, _, rep in r.edits) == k
        assert all(s == e and set(rep) == {" "} for s, e, rep in r.edits)
        assert r.text.split() == t.split()
        distinct += len(r.edits)
        expected += n * (1 - (1 - 1 / n) ** k)
    assert abs(distinct - expected) / expected < 0.02


def test_zero_width_space(texts):
    _, res, _ = common("zero_width_space", texts[:200])
    for t, r in zip(texts[:200], res):
        assert r.text == "".join(c + "\u200b" for c in t)
    _, res, changed = common("zero_width_space", texts, {"N": 0.1})
    for t, r in zip(texts, res):
        assert len(r.edits) == int(0.1 * len(t))
        assert r.text.replace("\u200b", "") == t.replace("\u200b", "")
    assert sum(changed) / len(changed) > 0.99


def test_alternative_spelling(texts):
    """Every whole-word American spelling (lower, Capitalised, UPPER) found independently
    is swapped at N=1 (RAID's default); int(N x found) at N=0.5."""
    from breame.spelling import AMERICAN_ENGLISH_SPELLINGS as US

    def us_words(t):
        return [m.span() for m in re.finditer(r"\w+", t)
                if m.group().lower() in US and m.group() in (m.group().lower(), m.group().lower().capitalize(),
                                                             m.group().upper())]

    _, res, _ = common("alternative_spelling", texts)
    n_found = 0
    for t, r in zip(texts, res):
        spans = us_words(t)
        assert r.stats["eligible"] == len(spans) == len(r.edits)
        assert [(s, e) for s, e, _ in r.edits] == spans
        for s, e, rep in r.edits:
            assert rep.lower() == US[t[s:e].lower()]
            assert rep == {t[s:e].lower(): rep.lower(), t[s:e].upper(): rep.upper()}.get(t[s:e], rep.capitalize())
        assert us_words(r.text) == []
        n_found += len(spans)
    assert n_found > 100
    _, res, changed = common("alternative_spelling", texts, {"N": 0.5})
    for _t, r in zip(texts, res):
        assert len(r.edits) == int(0.5 * r.stats["eligible"])


def test_bad_parameters_are_one_line_errors():
    from veribench.attacks import AttackError
    from veribench.errors import RegistryError

    with pytest.raises(AttackError, match="did you mean 'N'"):
        attacks.create("homoglyph", {"n": 0.5})
    with pytest.raises(AttackError, match="N"):
        attacks.create("number", {"N": 1.5})
    with pytest.raises(RegistryError, match="homoglyph"):
        attacks.create("homoglyf")


RULES = ("homoglyph", "number", "article_deletion", "insert_paragraphs", "upper_lower", "whitespace",
         "zero_width_space", "alternative_spelling")


def test_any_text_gives_valid_reproducing_edits():
    """Every rule attack, on any text (quotes, digits of other scripts, ß, combining marks,
    emoji, control characters): valid spans over the source that reproduce the output."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    pieces = st.sampled_from([" a ", " the ", " an ", "color", "Color", "COLOR", "ß", "ǅ", "e\u0301", "😀", '"',
                              "''", "``", "٣", "1.5", "42", ". ", "? ", "\n\n", "\t", "\x00", "Mr. ", "U.S. ",
                              "I", "i", "x", " ", "Dr"])
    text = st.lists(st.one_of(pieces, st.text(max_size=3)), max_size=30).map("".join)
    built = {n: attacks.create(n, {"N": 0.5}) for n in RULES}

    @settings(max_examples=150, deadline=None)
    @given(text, st.integers(0, 2**32))
    def prop(t, seed):
        for _n, atk in built.items():
            r = atk.apply(t, seed)
            assert r.status == "ok"
            check_edits(r.edits, len(t))
            assert apply_edits(t, r.edits) == r.text
            assert atk.apply(t, seed).edits == r.edits

    prop()
