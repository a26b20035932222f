"""The one progress reporter (veribench.progress): a bar on a terminal, a plain line every
few seconds elsewhere, also while no count moves; nested reporters name the step."""

from __future__ import annotations

import io
import re
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


def test_a_batch_counts_as_the_code_inside_reports_it():
    """Issue 25 walk: a model detector gets 256 texts in one call, so the scoring count sat
    at 0% until the call returned. Inside :func:`batch`, :func:`batch_progress` moves the
    count by the share done (floor(size * done / total), never backwards, never past the
    batch); :meth:`Batch.finish` counts the rest once; outside a batch nothing happens."""
    assert pm.batch_progress(1, 2) == 0
    with Progress("score", total=10, unit="texts", enabled=False) as p:
        with pm.batch(p, 6) as b:
            assert pm.batch_progress(1, 4) == 1 and p.completed == 1  # floor(6 * 1/4)
            assert pm.batch_progress(1, 4) == 0 and p.completed == 1  # the same share again: no change
            assert pm.batch_progress(3, 4) == 3 and p.completed == 4  # floor(6 * 3/4) = 4
            assert pm.batch_progress(9, 4) == 2 and p.completed == 6  # capped at the batch
            assert pm.batch_progress(1, 0) == 0
        assert b.finish(6) == 0 and p.completed == 6
        with pm.batch(p, 4) as b2:
            pm.batch_progress(1, 2)
        assert b2.finish(4) == 2 and p.completed == 10
    assert pm.batch_progress(1, 1) == 0  # no batch open any more


def test_scoring_count_moves_while_a_slow_detector_works_through_one_batch(workspace, capsys, monkeypatch):
    """Issue 25 walk: ``scoring loglik[...]: 0/145 texts (0%), 1 min 39 s`` until the end.
    A detector that scores one big batch text by text and reports through
    ``veribench.progress.batch_progress`` shows intermediate counts in the redirected
    (non-terminal) progress lines of the one scoring path."""
    from veribench.detectors.pipeline import score_texts
    from veribench.records import ScoreResult
    from veribench.spec import Spec

    class SlowDetector:
        spec = Spec("detector", "slow", "1", {})
        batch_size = 256

        def score_batch(self, texts):
            out = []
            for i, t in enumerate(texts):
                time.sleep(0.03)
                out.append(ScoreResult(raw=float(len(t)), scale="p_ai", ai_probability=0.5))
                pm.batch_progress(i + 1, len(texts))
            return out

    monkeypatch.setenv("VERIBENCH_PROGRESS_INTERVAL", "0.01")
    res = score_texts(workspace, SlowDetector(), [f"text number {i}" for i in range(12)], progress=True)
    assert len(res) == 12
    err = capsys.readouterr().err.splitlines()
    counts = [int(m.group(1)) for line in err if (m := re.match(r"scoring slow\S*: (\d+)/12 texts", line))]
    assert any(0 < c < 12 for c in counts), err
    assert counts == sorted(counts), err
    assert err[-1].startswith("scoring slow") and "done, 12/12 texts" in err[-1], err
