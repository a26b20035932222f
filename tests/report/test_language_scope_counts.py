"""The run page's "Languages and lengths" counts: a language whose texts stand under several
exclusion reasons (their scoring statuses differ) is counted once with all of them
(a fresh user found zh 5 on the site where Table 1 said 2 + 5)."""

from __future__ import annotations

from veribench.evaluate.reasons import OUTSIDE_LANGUAGES, out_of_scope_reason
from veribench.report.runs import language_scope


def test_out_of_scope_counts_sum_every_reason_of_a_language():
    zh = OUTSIDE_LANGUAGES.format(language="zh")
    de = OUTSIDE_LANGUAGES.format(language="de")
    excluded = {de: 7, out_of_scope_reason(zh, "unscorable"): 2, out_of_scope_reason(zh, "unsupported"): 5,
                "not scored": 3}
    row = language_scope([{"detector": "ZipPy", "languages": ["en"], "excluded": excluded}])[0]
    assert row["out_of_scope_n"] == 14  # 7 + 2 + 5: the Table 1 counts, "not scored" is not a language reason
    assert row["out_of_scope"] == "de 7, zh 7"


def test_undeclared_languages_give_null_with_the_reason_never_zero():
    row = language_scope([{"detector": "GPTZero", "languages": None, "excluded": {}}])[0]
    assert row["out_of_scope_n"] is None and "languages not declared" in row["out_of_scope_n_reason"]
