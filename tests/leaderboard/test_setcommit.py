"""The hidden-set commitment (veribench.leaderboard.setcommit): every change to the set or the
salt changes the root, and check_reveal names the problem."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from veribench.errors import InputError
from veribench.hashing import merkle_root
from veribench.leaderboard.setcommit import (
    COMMITMENT_FORMAT,
    HiddenRow,
    check_reveal,
    commitment_record,
    new_salt,
    set_leaves,
)

SALT = bytes(range(32))
ROWS = [HiddenRow(f"d{i}", f"text number {i}", "ai" if i % 2 else "human", "A" if i % 2 else "H",
                  {"domain": "news" if i < 3 else "wiki"}) for i in range(6)]


def record(rows=ROWS, salt=SALT):
    return commitment_record(rows, salt, protocol_sha256="c" * 64, board="b", created_at="2026-12-05T00:00:00Z")


def test_leaf_is_sha256_of_canonical_json_and_root_rfc6962():
    leaves = set_leaves(ROWS, SALT)
    r = ROWS[0]
    body = json.dumps({"salt_hex": SALT.hex(), "doc_id": r.doc_id,
                       "text_sha256": hashlib.sha256(r.text.encode()).hexdigest(), "label": r.label, "arm": r.arm,
                       "tags": dict(r.tags), "canary_of": None, "record": {}}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert leaves[0] == hashlib.sha256(body.encode()).hexdigest()
    rec = record()
    assert rec["root"] == merkle_root(leaves) and rec["n"] == 6 and rec["format"] == COMMITMENT_FORMAT
    assert rec["salt_sha256"] == hashlib.sha256(SALT).hexdigest()
    assert check_reveal(rec, ROWS, SALT) == []
    assert check_reveal(rec, list(reversed(ROWS)), SALT) == []  # order of the revealed file does not matter


def changed(i, **kw):
    rows = list(ROWS)
    rows[i] = dataclasses.replace(rows[i], **kw)
    return rows


@pytest.mark.parametrize(("rows", "salt", "expect"), [
    (changed(2, label="ai"), SALT, "a label, arm, tag, canary marking or stored field (record) differs"),
    (changed(3, arm="X"), SALT, "a label, arm, tag, canary marking or stored field (record) differs"),
    (changed(4, tags={"domain": "news"}), SALT, "a label, arm, tag, canary marking or stored field (record) differs"),
    (changed(5, canary_of="d0"), SALT, "a label, arm, tag, canary marking or stored field (record) differs"),
    # format /3: the other stored fields (a group key decides the calibration split)
    (changed(0, record={"group_key": "g9"}), SALT, "a label, arm, tag, canary marking or stored field (record) differs"),
    (changed(1, text="text number 1."), SALT, "doc ids or texts differ"),
    (ROWS, bytes(reversed(range(32))), "salt is not the committed one"),
    ([*ROWS, HiddenRow("d9", "new", "human")], SALT, "has 7 rows, the commitment 6"),
    (ROWS[1:], SALT, "has 5 rows, the commitment 6"),
])
def test_each_change_moves_root_and_is_named(rows, salt, expect):
    rec = record()
    assert record(rows, salt)["root"] != rec["root"]
    problems = check_reveal(rec, rows, salt)
    assert problems, "a changed set passed the reveal check"
    assert any(expect in p for p in problems), problems
    assert all("\n" not in p for p in problems)
    assert any("root of the revealed set" in p for p in problems)


def test_record_problems_and_bad_rows():
    rec = record()
    assert any("format" in p for p in check_reveal({**rec, "format": "x"}, ROWS, SALT))
    assert any("lacks texts_root" in p for p in check_reveal({k: v for k, v in rec.items() if k != "texts_root"},
                                                              ROWS, SALT))
    assert check_reveal([], ROWS, SALT)  # type: ignore[arg-type]
    assert any("cannot be hashed" in p and "duplicate doc_id" in p for p in check_reveal(rec, [*ROWS, ROWS[0]], SALT))
    with pytest.raises(InputError, match="at least 16") as e:
        set_leaves(ROWS, b"short")
    assert "'salt'" in str(e.value)
    with pytest.raises(InputError, match="duplicate doc_id") as e:
        set_leaves([*ROWS, ROWS[0]], SALT)
    assert "record 6 ('d0')" in str(e.value)
    with pytest.raises(InputError, match="not canonical JSON") as e:
        set_leaves([HiddenRow("x", "t", "ai", None, {"v": float("nan")})], SALT)
    assert "'tags'" in str(e.value)
    with pytest.raises(InputError, match="empty"):
        record([])
    assert len(new_salt()) == 32 and new_salt() != new_salt()


def test_a_format_1_record_is_still_checked_without_canary_marking():
    """Issue 26 (F2): format /2 leaves commit canary_of (above: a real text marked a canary after
    the launch fails); a /1 record (leaves without canary_of) still checks labels, arms and tags."""
    v1 = {**record(), "format": "veribench-board-commitment/1",
          "root": merkle_root(set_leaves(ROWS, SALT, fmt="veribench-board-commitment/1"))}
    assert COMMITMENT_FORMAT == "veribench-board-commitment/3" and v1["root"] != record()["root"]
    v2 = {**record(), "format": "veribench-board-commitment/2",  # /3 adds the rules and the record leaf field
          "root": merkle_root(set_leaves(ROWS, SALT, fmt="veribench-board-commitment/2"))}
    assert v2["root"] != record()["root"] and check_reveal(v2, ROWS, SALT) == []
    assert "canary marking or stored field (record) differs" in check_reveal(v2, changed(5, canary_of="d0"), SALT)[0]
    assert check_reveal(v1, ROWS, SALT) == []
    assert check_reveal(v1, changed(5, canary_of="d0"), SALT) == []  # /1 never committed the marking
    assert "a label, arm, tag, canary marking or stored field (record) differs" in check_reveal(v1, changed(2, label="ai"), SALT)[0]
    assert "format is 'veribench-board-commitment/9'" in check_reveal({**v1, "format": "veribench-board-commitment/9"},
                                                                       ROWS, SALT)[0]
