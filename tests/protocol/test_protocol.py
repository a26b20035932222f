"""Protocol files: validation errors, commit, amendments and the calibration split."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from veribench.commit import commit
from veribench.errors import ProtocolError
from veribench.protocol.model import load_protocol
from veribench.protocol.split import calibration_mask
from veribench.store.commitments import require_committed

BASE = """
[protocol]
name = "p1"
tag = "BENCH-2026-Q4"
[split]
rule = "hash"
[[detectors]]
name = "GPTZero"
rule = { field = "ai_probability", op = ">", threshold = 0.5 }
"""


def test_load_and_hash(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text(BASE)
    p = load_protocol(f)
    assert p.name == "p1" and p.tag == "BENCH-2026-Q4" and p.split_rule == "hash"
    assert p.detectors[0].rule.threshold == 0.5
    import hashlib

    assert p.hash == hashlib.sha256(f.read_bytes()).hexdigest()


@pytest.mark.parametrize("bad,field", [
    ('rule = { field = "ai_probability", op = "=>", threshold = 0.5 }', "detectors[0].rule.op"),
    ('rule = { field = "ai_probability", op = ">" }', "detectors[0].rule.threshold"),
    ('rule = { fit = "magic" }', "detectors[0].rule.fit"),
])
def test_bad_rules_name_the_field(tmp_path, bad, field):
    f = tmp_path / "p.toml"
    f.write_text(BASE.replace('rule = { field = "ai_probability", op = ">", threshold = 0.5 }', bad))
    with pytest.raises(ProtocolError) as e:
        load_protocol(f)
    assert str(f) in str(e.value) and field in str(e.value)


def test_syntax_error_names_file(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text("[protocol\nname=")
    with pytest.raises(ProtocolError, match="syntax error"):
        load_protocol(f)


def test_commit_then_amend(workspace, tmp_path):
    f = tmp_path / "p.toml"
    f.write_text(BASE)
    rec = commit(workspace, f)
    assert rec.new and len(rec.hash) == 64
    assert not commit(workspace, f).new  # idempotent
    # Changing the rules without an amendment is refused.
    f.write_text(BASE.replace("0.5", "0.7"))
    with pytest.raises(ProtocolError, match="amendments"):
        commit(workspace, f)
    with pytest.raises(ProtocolError, match="not committed"):
        require_committed(workspace, load_protocol(f))
    today = datetime.now(UTC).date()  # an amendment may not predate the version it supersedes
    f.write_text(BASE.replace("0.5", "0.7") + f'\n[[amendments]]\ndate = "{today}"\nsupersedes = "{rec.hash}"\n'
                 'summary = "threshold raised to the vendor default"\n')
    rec2 = commit(workspace, f)
    assert rec2.new and rec2.amendments[0]["supersedes"] == rec.hash


def test_calibration_split_rule():
    n = 2000
    ids = [f"doc{i}" for i in range(n)]
    is_human = np.array([i % 2 == 0 for i in range(n)])
    groups = [f"pair{i // 2}" for i in range(n)]  # each human paired with the next AI text
    m = calibration_mask(ids, is_human, groups, every=5, salt="s")
    # Deterministic and about 1 in 5 human texts.
    assert np.array_equal(m, calibration_mask(ids, is_human, groups, every=5, salt="s"))
    share = m[is_human].mean()
    assert 0.15 < share < 0.25
    # Every AI text follows its human pair.
    for i in range(1, n, 2):
        assert m[i] == m[i - 1]
    # A different salt gives a different draw.
    assert not np.array_equal(m, calibration_mask(ids, is_human, groups, every=5, salt="t"))


def test_yaml_alias_bomb_and_deep_nesting_are_refused_in_one_line(tmp_path):
    """An alias bomb (nine levels of nine aliases each) is refused before anything is expanded,
    and deep nesting gives a one-line error, not a hang or a traceback."""
    import time

    from veribench.errors import ProtocolError
    from veribench.protocol.model import load_protocol

    lines = ['a0: &a0 ["lol"]'] + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\nprotocol:\n  name: x\n  description: *a9\n", encoding="utf-8")
    t0 = time.perf_counter()
    with pytest.raises(ProtocolError, match="YAML aliases"):
        load_protocol(bomb)
    assert time.perf_counter() - t0 < 5
    deep = tmp_path / "deep.yaml"
    deep.write_text("protocol: " + "[" * 10_000 + "]" * 10_000 + "\n", encoding="utf-8")
    with pytest.raises(ProtocolError) as e:
        load_protocol(deep)
    assert "\n" not in str(e.value)
