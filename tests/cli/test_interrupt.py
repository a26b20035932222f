"""Ctrl-C in any command: one line that says what is kept, exit code 130, no traceback."""

from __future__ import annotations

import pytest
import typer

from veribench.cli.common import friendly_errors


def test_ctrl_c_gives_one_line_and_exit_130(capsys):
    @friendly_errors
    def cmd() -> None:
        raise KeyboardInterrupt

    with pytest.raises(typer.Exit) as e:
        cmd()
    assert e.value.exit_code == 130
    err = capsys.readouterr().err.strip()
    assert err.startswith("interrupted:") and "\n" not in err and "Traceback" not in err
