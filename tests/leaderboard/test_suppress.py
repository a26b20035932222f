"""The board's minimum cell size on the per-slice keys of the bundle of all entries (issue 26:
"a minimum cell size for any slice shown"): :func:`suppress_slices` on a real revealed board,
checked against a plain re-count of each slice's human and AI texts in the published
``hidden_set.jsonl``."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.leaderboard.board_helpers import board_toml, hidden_set, labels_of, predictions
from veribench.leaderboard.service import Board
from veribench.leaderboard.suppress import COUNT_FIELDS, SLICE_KEYS, suppress_slices

ROWS = ("tiers", "comparisons", "significance", "gaps")
#: Cell sizes around the re-counted slice sizes (10, 20, 30, 60 texts of each label) and the
#: board's own (45).
SIZES = (1, 10, 11, 20, 21, 30, 31, 45, 60, 61)


@pytest.fixture(scope="module")
def revealed(tmp_path_factory) -> tuple[dict[str, Any], dict[str, int]]:
    """A revealed board (no canaries, two teams; domains uneven: books 10 + 10, news 30 + 30,
    reviews 20 + 20 human + AI texts): (the bundle of all entries' results.json, each slice's
    smallest label count re-counted from the reveal's hidden_set.jsonl)."""
    tmp = tmp_path_factory.mktemp("suppress")
    src = hidden_set(tmp / "hidden.jsonl", n=120)
    rows = [json.loads(x) for x in src.read_text().splitlines()]
    for i, r in enumerate(rows):
        if i < 60 and r["tags"]["domain"] == "books":
            r["tags"]["domain"] = "news"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = board_toml(tmp / "board", f"sqlite:///{tmp / 'board' / 'board.sqlite'}", canaries=0)
    with Board.open(cfg) as board:
        board.launch(src, "documents")
        ids = [json.loads(x)["id"] for x in board.texts_file().decode().splitlines()]
        labels = labels_of(cfg.parent, ids)
        for i, (team, skill) in enumerate([("alpha", 0.5), ("beta", 0.2)]):
            who = board.team_for_token(board.add_team(team))
            board.submit(who, predictions(ids, labels, skill=skill, seed=i))
        out = board.reveal(force=True)
    results = json.loads((out / "bundles" / "all" / "results.json").read_text())
    return results, _recount(out / "hidden_set.jsonl")


def _recount(path: Path) -> dict[str, int]:
    """Slice name -> min(human texts, AI texts), by a plain loop over the published set."""
    count: Counter[tuple[str, str]] = Counter()
    for line in path.read_text().splitlines():
        r = json.loads(line)
        assert r["canary_of"] is None and "derivation" not in r["tags"]
        for name in ("all", f"tag:domain={r['tags']['domain']}"):
            count[name, r["label"]] += 1
    names = {name for name, _ in count}
    return {name: min(count[name, "human"], count[name, "ai"]) for name in names}


def _numbers(v: Any, key: str = "") -> list[tuple[str, Any]]:
    """Every number in a JSON value with the key it sits under."""
    if isinstance(v, dict):
        return [x for k, sub in v.items() for x in _numbers(sub, k)]
    if isinstance(v, list):
        return [x for sub in v for x in _numbers(sub, key)]
    return [(key, v)] if isinstance(v, int | float) and not isinstance(v, bool) else []


def test_recount_has_slices_on_both_sides(revealed):
    _, sizes = revealed
    assert sizes == {"all": 60, "tag:domain=books": 10, "tag:domain=news": 30, "tag:domain=reviews": 20}


@pytest.mark.parametrize("k", SIZES)
def test_every_row_under_k_has_no_number_and_every_other_is_unchanged(revealed, k):
    results, sizes = revealed
    before = copy.deepcopy(results)
    out = suppress_slices(results, k)
    assert results == before  # the input is not changed
    assert list(out) == list(SLICE_KEYS)
    assert out["corrections"] == results["corrections"]
    shown = hidden = 0
    for key in ROWS:
        assert len(out[key]) == len(results[key])
        for got, row in zip(out[key], results[key]):
            assert got["slice"] == row["slice"] and got["metric"] == row["metric"]
            if sizes[row["slice"]] >= k:
                shown += 1
                assert got == row
                continue
            hidden += 1
            assert got["suppressed_reason"] == (f"fewer than {k} texts of a label in this slice (the board's "
                                                "minimum cell size)")
            assert all(name in COUNT_FIELDS for name, _ in _numbers(got)), _numbers(got)
            assert _numbers(got) == [x for x in _numbers(row) if x[0] in COUNT_FIELDS]
            assert list(got)[:-1] == list(row)  # every field kept, in its place
            for name in ("a", "b", "detectors"):
                assert got.get(name) == row.get(name)
            if key == "tiers":
                assert got["tiers"] is None and got["not_ranked"] is None
            if key == "significance":
                assert got["cells"] is None and got["undefined"] is None
            if key == "comparisons":
                assert got["value_a"] is got["value_b"] is got["p_value"] is got["ci95"] is None
    n_small = sum(1 for key in ROWS for r in results[key] if sizes[r["slice"]] < k)
    assert hidden == n_small and shown == sum(len(results[key]) for key in ROWS) - n_small
    if k == 45:  # the hostile tester's case: books under the board's minimum, all over it
        assert hidden and shown


def test_k_1_leaves_everything_unchanged(revealed):
    results, _ = revealed
    assert results["comparisons"] and results["tiers"] and results["significance"]
    assert suppress_slices(results, 1) == {k: results.get(k) for k in SLICE_KEYS}


def test_same_input_same_bytes(revealed):
    results, _ = revealed
    shuffled = dict(reversed(list(results.items())))
    a = json.dumps(suppress_slices(results, 30))
    assert a == json.dumps(suppress_slices(results, 30)) == json.dumps(suppress_slices(shuffled, 30))


def test_a_slice_not_in_table2_is_never_shown(revealed):
    results, _ = revealed
    res = copy.deepcopy(results)
    row = {**res["comparisons"][0], "slice": "tag:domain=poetry"}
    res["comparisons"].append(row)
    got = suppress_slices(res, 1)["comparisons"][-1]
    assert "'tag:domain=poetry' is unknown" in got["suppressed_reason"]
    assert got["value_a"] is None and got["estimate"] is None and got["a"] == row["a"]


def test_a_gap_row_is_shown_only_when_both_groups_are(revealed):
    results, sizes = revealed
    res = copy.deepcopy(results)
    gap = {"detector": "alpha", "metric": "fpr", "slice": "tag:domain", "group_a": "news", "group_b": "books",
           "label_a": "news", "label_b": "books", "estimate": 0.1, "ci95": [0.0, 0.2], "p_value": 0.3,
           "p_adjusted": 0.3, "test": "t", "interval": "i", "k_a": 3, "n_a": 30, "rate_a": 0.1, "k_b": 0,
           "n_b": 10, "rate_b": 0.0, "reason": None}
    res["gaps"] = [gap]
    assert suppress_slices(res, sizes["tag:domain=books"])["gaps"] == [gap]
    got = suppress_slices(res, sizes["tag:domain=books"] + 1)["gaps"][0]
    assert _numbers(got) == [("n_a", 30), ("n_b", 10)]
    assert got["k_a"] is None and got["rate_b"] is None and got["group_b"] == "books"


@pytest.mark.parametrize("k", [0, -3, 2.5, True, "45"])
def test_bad_min_cell_size_is_one_line(revealed, k):
    with pytest.raises(ValueError, match=r"^min_cell_size: must be an integer >= 1"):
        suppress_slices(revealed[0], k)


def test_a_row_that_is_not_an_object_is_named(revealed):
    res = {**revealed[0], "significance": [revealed[0]["significance"][0], 7]}
    with pytest.raises(ValueError, match=r"^significance\[1\]: a row must be an object"):
        suppress_slices(res, 1)
