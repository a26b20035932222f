"""The one progress reporter (veribench.progress): a bar on a terminal, a plain line every
few seconds elsewhere, also while no count moves; nested reporters name the step."""

from __future__ import annotations

import io
import time

import pytest

from veribench import progress as pm
from veribench.progress import Progress, default_interval, elapsed


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_come_every_interval_and_name_the_inner_step():
    out = io.StringIO()
    with Progress("cycle rescore", stream=out, interval=0.05):
        with Progress("score zippy", total=10, unit="texts", enabled=False, stream=out) as inner:
            for _ in range(5):
                time.sleep(0.06)
                inner.advance(2)
        time.sleep(0.2)  # no count moves here: lines still come
    lines = out.getvalue().splitlines()
    assert any(x.startswith("cycle rescore > score zippy: ") and "/10 texts (" in x and "texts/s" in x
               for x in lines), lines
    assert sum(x.startswith("cycle rescore: working") for x in lines) >= 2, lines
    assert lines[-1].startswith("cycle rescore: done in "), lines
    assert not pm._OPEN


def test_quick_or_disabled_work_prints_nothing():
    out = io.StringIO()
    with Progress("quick", total=3, unit="texts", stream=out, interval=5) as p:
        p.advance(3)
    with Progress("off", stream=out, interval=0.01, enabled=False):
        time.sleep(0.05)
    assert out.getvalue() == ""
    assert not pm._OPEN


def test_a_terminal_gets_one_shared_bar_and_no_plain_lines():
    out = Tty()
    with Progress("import raid", unit="records", stream=out, interval=0.01) as a:
        with Progress("score zippy", total=4, unit="texts", stream=out, interval=0.01) as b:
            assert pm._LIVE and pm._LIVE[1] == 2  # one display, a task each
            b.advance(4)
            a.advance(10)
            time.sleep(0.05)
    assert not pm._LIVE and not pm._OPEN
    assert "done in" not in out.getvalue()  # the plain lines are for pipes
    out2 = Tty()
    with Progress("whole command", stream=out2, bar=False, interval=0.01):
        time.sleep(0.03)
    assert out2.getvalue() == "" and not pm._LIVE


@pytest.mark.parametrize(("value", "expected"), [("0.5", 0.5), ("x", pm.DEFAULT_INTERVAL), ("-1", pm.DEFAULT_INTERVAL),
                                                 ("nan", pm.DEFAULT_INTERVAL), ("inf", pm.DEFAULT_INTERVAL)])
def test_interval_from_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv(pm.INTERVAL_ENV, value)
    assert default_interval() == expected


def test_elapsed():
    assert [elapsed(s) for s in (0, 42.9, 185, 7620)] == ["0 s", "42 s", "3 min 05 s", "2 h 07 min"]


def test_a_notice_prints_at_once_under_an_enabled_reporter_only():
    """A step that starts (a model load) is said at once, not at the next interval, named
    after the open reporters; nothing with --no-progress or outside any command."""
    out = io.StringIO()
    assert pm.notice("loading model x") is False  # no reporter open
    with Progress("off", stream=out, enabled=False):
        assert pm.notice("loading model x") is False
    with Progress("score", stream=out, interval=60):
        with Progress("scoring loglik", total=3, unit="texts", stream=out):
            assert pm.notice("loading model x (cpu, float32)") is True
            assert out.getvalue().splitlines() == ["score > scoring loglik: loading model x (cpu, float32)"]
    # the closing line follows, as after any plain line
    assert out.getvalue().splitlines()[-1].startswith("score: done in "), out.getvalue()
    assert not pm._OPEN
