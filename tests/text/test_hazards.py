"""Input hazards and canonicalisation (cases c08 and c26), against plain per-character counts."""

from __future__ import annotations

import unicodedata

import pytest
from confusable_homoglyphs import categories, confusables
from hypothesis import given, settings
from hypothesis import strategies as st

from veribench.text import hazards as hz

C08 = ("plain", "homoglyph", "zero_width")


def _c08(cases_dir) -> dict[str, str]:
    return {n: (cases_dir / "c08" / f"{n}.txt").read_text(encoding="utf-8") for n in C08}


# -- a plain per-character reference, written from the definitions in docs/hazards.md ---------
def _is_letter(ch: str) -> bool:
    return unicodedata.category(ch).startswith("L")


def _latin_look(s: str) -> bool:
    d = unicodedata.normalize("NFD", s)
    return any(c.isascii() for c in d) and all((c.isascii() and c.isalpha()) or unicodedata.category(c) == "Mn"
                                               for c in d)


def _look_alike(ch: str) -> bool:
    """A non-Latin letter that the Unicode confusables data maps to ASCII letters (+ marks)."""
    return (_is_letter(ch) and categories.alias(ch) != "LATIN"
            and any(_latin_look(d["c"]) for d in confusables.confusables_data.get(ch, [])))


def _words(text: str) -> list[str]:
    """Runs of letters, marks and Cf characters."""
    out, cur = [], ""
    for ch in text:
        if unicodedata.category(ch)[0] in "LM" or unicodedata.category(ch) == "Cf":
            cur += ch
        else:
            if cur:
                out.append(cur)
            cur = ""
    return out + ([cur] if cur else [])


def reference_counts(text: str) -> tuple[int, int]:
    """(non-Latin confusables, invisible) counted character by character."""
    invisible = sum(1 for ch in text if unicodedata.category(ch) == "Cf")
    letters = [ch for ch in text if _is_letter(ch)]
    latin_text = bool(letters) and sum(categories.alias(ch) == "LATIN" for ch in letters) / len(letters) > 0.5
    n = 0
    for w in _words(text):
        ls = [ch for ch in w if _is_letter(ch)]
        mixed = any(categories.alias(ch) == "LATIN" for ch in ls)
        whole = bool(ls) and all(_look_alike(ch) for ch in ls)
        if mixed or (whole and latin_text):
            n += sum(1 for ch in ls if _look_alike(ch))
    return n, invisible


def reference_ratio(text: str) -> float | None:
    import re

    w = re.findall(r"\w+", hz.canonicalize(text).casefold())
    grams = list(zip(w, w[1:], w[2:]))
    return len(set(grams)) / len(grams) if grams else None


# -- the cases ------------------------------------------------------------------------------
def test_c08_counts_and_skeleton(cases_dir):
    t = _c08(cases_dir)
    assert {n: hz.text_hazards(x)["confusables"] for n, x in t.items()} == {"plain": 0, "homoglyph": 30,
                                                                            "zero_width": 0}
    assert {n: hz.text_hazards(x)["invisible"] for n, x in t.items()} == {"plain": 0, "homoglyph": 0,
                                                                          "zero_width": 20}
    for x in t.values():
        assert reference_counts(x) == (hz.confusable_count(x), hz.invisible_count(x))
    canon = {n: hz.canonicalize(x).encode("utf-8") for n, x in t.items()}
    assert canon["plain"] == canon["homoglyph"] == canon["zero_width"] == t["plain"].encode("utf-8")
    assert hz.canonicalize(t["homoglyph"], "none") == t["homoglyph"]


def test_c26_degenerate_repetition(cases_dir):
    once = hz.text_hazards((cases_dir / "c26/once.txt").read_text(encoding="utf-8"))
    rep = hz.text_hazards((cases_dir / "c26/repeated30.txt").read_text(encoding="utf-8"))
    assert once["distinct_word_trigram_ratio"] == 1.0 and once["degenerate_repetition"] is False
    assert rep["distinct_word_trigram_ratio"] == pytest.approx(0.0335, abs=5e-5)
    assert rep["distinct_word_trigram_ratio"] == pytest.approx(11 / 328)  # 11 distinct of 328 trigrams
    assert rep["degenerate_repetition"] is True
    assert hz.REPETITION.min_distinct_ratio == 0.5 and "Welleck" in hz.REPETITION.source


def test_repetition_survives_sprinkled_hazards():
    """Zero-width spaces and homoglyphs inside a repeated text do not make its trigrams distinct."""
    base = "the cat sat on the mat " * 20
    noisy = base.replace("cat", "c\u200bаt", 7)  # ZWSP and a Cyrillic a, in 7 of 20 copies
    assert hz.text_hazards(noisy)["distinct_word_trigram_ratio"] == hz.text_hazards(base)[
        "distinct_word_trigram_ratio"] < 0.5


@pytest.mark.parametrize("text,conf", [
    ("Вчера вечером мы гуляли по набережной и обсуждали планы на лето.", 0),  # Russian: not Latin-script text
    ("Καλημέρα σας, ο καιρός είναι καλός σήμερα.", 0),  # Greek
    ("She said Спасибо and left.", 0),  # a quoted Russian word with letters that have no Latin look-alike
    ("The pаper is on the tаble.", 2),  # Cyrillic а inside Latin words
    ("I like the соре of this plan, as the essay says.", 4),  # a whole word of look-alikes in Latin text
    ("𝐁𝐨𝐥𝐝 maths letters in a sentence that is otherwise plain.", 4),
    ("", 0), ("12345 !!!", 0),
])
def test_confusables_only_in_latin_script_text(text, conf):
    assert hz.confusable_count(text) == conf == reference_counts(text)[0]


def test_short_texts_and_settings():
    assert hz.text_hazards("two words") == {"confusables": 0, "invisible": 0, "degenerate_repetition": False,
                                            "distinct_word_trigram_ratio": None}
    assert hz.any_hazard(hz.text_hazards("a\u200bb c d")) and not hz.any_hazard(hz.text_hazards("a b c d"))
    assert hz.canonicalize_setting(None) == hz.canonicalize_setting(False) == "none"
    assert hz.canonicalize_setting("Skeleton") == "skeleton"
    with pytest.raises(ValueError, match="Did you mean 'skeleton'"):
        hz.canonicalize_setting("skeletn")
    with pytest.raises(ValueError, match="canonicalize"):
        hz.canonicalize("x", "nfc")
    assert hz.canonicalize("ｆｕｌｌ ﬁne caf\u0065\u0301 \u00a0x") == "full fine café  x"  # NFKC


# -- properties ----------------------------------------------------------------------------
_LOOKALIKES = "аеорсухіјѕԁһӏοΑΒΕΗΙΚΜΝΟΡΤΧΥΖνӕ𝐚𝐛𝑎"
_CF = "\u200b\u200c\u200d\u2060\ufeff\u00ad\u202a\u202c\u2066\u2069"
_pieces = st.sampled_from(list("abcdefghij klmnop.,ABC\n") + list(_LOOKALIKES) + list(_CF)
                          + list("éüçñßøıｆﬁ") + list("жбдлщ東京") + ["e\u0301", "\u0308", "\u00a0"])
texts = st.one_of(st.lists(_pieces, max_size=80).map("".join), st.text(max_size=60))


@settings(max_examples=300, deadline=None)
@given(texts)
def test_canonicalize_is_idempotent_and_leaves_no_hazard(text):
    c = hz.canonicalize(text)
    assert hz.canonicalize(c) == c
    assert hz.invisible_count(c) == 0 and hz.confusable_count(c) == 0


@settings(max_examples=300, deadline=None)
@given(texts, st.lists(st.tuples(st.integers(0, 200), st.sampled_from(list(_CF))), max_size=10))
def test_inserted_cf_characters_do_not_change_the_skeleton(text, inserts):
    noisy = text
    for pos, ch in inserts:
        i = pos % (len(noisy) + 1)
        noisy = noisy[:i] + ch + noisy[i:]
    assert hz.canonicalize(noisy) == hz.canonicalize(text)
    assert hz.invisible_count(noisy) == hz.invisible_count(text) + len(inserts)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_counts_equal_a_per_character_count(text):
    h = hz.text_hazards(text)
    assert (h["confusables"], h["invisible"]) == reference_counts(text)
    r = reference_ratio(text)
    assert h["distinct_word_trigram_ratio"] == r
    assert h["degenerate_repetition"] == (r is not None and r < 0.5)


@settings(max_examples=300, deadline=None)
@given(st.one_of(texts, st.text(alphabet="abc xyz.\u2019\u201c\u201d\u00e9\u00a0\u2014", max_size=60)))
def test_the_distinct_character_shortcut_equals_the_walk(text):
    """``_scan`` skips the per-character walk when no distinct character is a confusable or
    invisible (curly quotes, accents, dashes: most real essays); the walk gives the same."""
    assert hz._scan(text) == hz._scan_chars(text)
    assert hz._strip_invisible(text) == "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def test_hazards_memo_returns_fresh_dicts_and_skips_long_texts():
    from veribench.text import hazards as hz

    t = "Th\u0435 same t\u200bext " * 3
    a = hz.text_hazards(t)
    a["confusables"] = -1
    a["extra"] = 1
    b = hz.text_hazards(t)
    assert b == {"confusables": 3, "invisible": 3, "degenerate_repetition": b["degenerate_repetition"],
                 "distinct_word_trigram_ratio": b["distinct_word_trigram_ratio"]}
    long = "word " * (hz.MEMO_MAX_CHARS // 5 + 1) + "\u0430"
    before = hz._hazard_values.cache_info().currsize
    h = hz.text_hazards(long)
    assert h["confusables"] == 1 and h["degenerate_repetition"] is True
    assert hz._hazard_values.cache_info().currsize == before  # not kept
