"""A child process that a test kills with SIGKILL: started, read, killed, always reaped."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager


@contextmanager
def child(args: Sequence[str], env: Mapping[str, str]) -> Iterator[subprocess.Popen[str]]:
    """``args`` running with text pipes for stdout and stderr; on exit it is killed if still
    running, reaped, and its pipes closed."""
    p = subprocess.Popen(list(args), env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield p
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for f in (p.stdout, p.stderr):
            if f is not None:
                f.close()


def sigkill(p: subprocess.Popen[str]) -> None:
    """Kill ``p`` with SIGKILL (no cleanup of any kind runs in it) and check that it died of it."""
    p.send_signal(signal.SIGKILL)
    assert p.wait(timeout=60) == -signal.SIGKILL
