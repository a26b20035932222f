"""The README's command examples, run in order, in one workspace (issue 25).

Extraction (stable and documented here): every line of a ```` ```bash ```` block of
README.md that starts with ``veribench `` is a command example, in the order it appears.
The two ``make`` lines at the top are set-up, not examples (they install the package this
test runs). Each line runs through ``bash -c`` as written, in one temporary folder, with a
``veribench`` on PATH that is this checkout's (``python -m veribench.cli.main``), so
``$(veribench demo --show-data)`` and the comments behave as they do for a reader.

Placeholders (the ALL-CAPS words, and the input files a reader supplies) are replaced by
the fixtures of :data:`PLACEHOLDERS` (``tests/data/readme/``, the HumanizerBench July 2026
bundle); an ALL-CAPS placeholder the table lacks fails the test by name, and an input file
the table lacks fails its command ("no such file"), shown with the README line. Outputs
the examples write (``report/``, ``raw.parquet`` ...) land in the temporary folder, and
``score`` without ``--workspace`` caches in ``veribench-workspace/`` there, as documented.
:data:`SCALE` adds options that only shrink the work (``cycle rescore --limit 1``).
A commercial detector (``--detector gptzero``) is sent to a fake vendor server on
127.0.0.1 (``tests/api/vendor_fakes.py``) with a test key in its documented variable;
``rate serve`` and ``write serve`` are started on 127.0.0.1 on a free port, must answer
HTTP 200 on their front page, and are stopped.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.api.vendor_fakes import VENDOR_KEYS, FakeVendors

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
FIX = REPO / "tests" / "data" / "readme"

#: Placeholder → what stands for it (paths are absolute; outputs the examples write, such
#: as ``report/`` or ``raw.parquet``, need none: they land in the temporary folder).
PLACEHOLDERS: dict[str, str] = {
    "WS": "ws",
    "my_corpus.jsonl": str(FIX / "my_corpus.jsonl"),
    "vendor_scores.csv": str(FIX / "vendor_scores.csv"),
    "my_protocol.toml": str(FIX / "my_protocol.toml"),
    "TAG": "README-EXAMPLE",  # the [protocol] tag of my_protocol.toml
    "texts.jsonl": str(FIX / "texts.jsonl"),
    "CYCLE_DIR": str(REPO / "tests" / "data" / "humanizerbench" / "July 2026"),
    "NAME": "readme-cycle",
    "T": str(FIX / "templates.json"),
    "B": str(FIX / "banks.json"),
    "DIR": "my-new-cycle",
    "prompt.txt": str(FIX / "prompt.txt"),
    "tests/data/humanizerbench": str(REPO / "tests" / "data" / "humanizerbench"),  # relative to the checkout
}

#: ALL-CAPS words of a command line that are not placeholders (none yet).
NOT_PLACEHOLDERS: set[str] = set()

SERVE = ("rate serve", "write serve")

#: Options added to an example to keep the test near 2 minutes (the example as written
#: does the same work on the whole input): command prefix → options.
SCALE: dict[str, str] = {
    "veribench cycle rescore": "--limit 1",  # one sample's outputs, not the whole cycle (minutes)
}


def readme_commands(text: str) -> list[str]:
    """The command examples of a README text: the lines starting with ``veribench `` inside
    ```` ```bash ```` blocks, in order, stripped of surrounding blanks."""
    out, inside = [], False
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("```"):
            inside = s == "```bash" if not inside else False
            continue
        if inside and s.startswith("veribench "):
            out.append(s)
    return out


def _code(cmd: str) -> str:
    """The command without its trailing ``# comment``."""
    return re.split(r"\s#\s", cmd, maxsplit=1)[0].rstrip()


def substitute(cmd: str) -> str:
    """``cmd`` with each placeholder replaced (quoted for bash).

    Raises:
        AssertionError: an ALL-CAPS word that :data:`PLACEHOLDERS` lacks.
    """
    code = _code(cmd)
    unknown = {w for w in re.findall(r"(?<![\w$./=-])[A-Z][A-Z_]*(?![\w./-])", code)
               if w not in PLACEHOLDERS and w not in NOT_PLACEHOLDERS}
    assert not unknown, f"README placeholder(s) {sorted(unknown)} in {cmd!r}: add them to PLACEHOLDERS"
    for key, value in PLACEHOLDERS.items():
        code = re.sub(rf'"?(?<![\w./-]){re.escape(key)}(?![\w./-])"?', lambda _m, v=value: shlex.quote(v), code)
    return code


def test_extraction_finds_the_examples_and_every_placeholder_is_used():
    cmds = readme_commands(README.read_text(encoding="utf-8"))
    assert len(cmds) >= 20 and all(not c.startswith("make ") for c in cmds)
    assert any(c.startswith("veribench import jsonl") for c in cmds)
    joined = "\n".join(_code(c) for c in cmds)
    stale = [k for k in PLACEHOLDERS if not re.search(rf"(?<![\w./-]){re.escape(k)}(?![\w./-])", joined)]
    assert not stale, f"PLACEHOLDERS entries no README example uses: {stale}"
    for serve in SERVE:
        assert any(f"veribench {serve}" in _code(c) for c in cmds), serve
    with pytest.raises(AssertionError, match="NEWTHING"):
        substitute("veribench import jsonl NEWTHING --workspace WS")
    assert substitute('veribench cycle score "CYCLE_DIR" -w WS') == \
        f"veribench cycle score {shlex.quote(PLACEHOLDERS['CYCLE_DIR'])} -w ws"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(code: str, cwd: Path, env: dict, front: str = "/") -> None:
    """Start a ``serve`` command on a free 127.0.0.1 port, wait for HTTP 200 on its front
    page ``front`` (as a browser asks for it), then stop it."""
    port = _free_port()
    code = re.sub(r"--port \d+", "", code) + f" --port {port} --host 127.0.0.1"
    p = subprocess.Popen(["bash", "-c", f"exec {code}"], cwd=cwd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    try:
        deadline, last = time.monotonic() + 60, None
        while time.monotonic() < deadline:
            assert p.poll() is None, f"{code!r} exited {p.returncode}: {p.stdout.read() if p.stdout else ''}"
            req = urllib.request.Request(f"http://127.0.0.1:{port}{front}", headers={"Accept": "text/html"})  # a browser
            try:
                with urllib.request.urlopen(req, timeout=5) as r:
                    assert r.status == 200, (code, r.status)
                    return
            except urllib.error.HTTPError as e:
                pytest.fail(f"{code!r}: front page answered HTTP {e.code}")
            except OSError as e:  # not listening yet
                last = e
                time.sleep(0.3)
        pytest.fail(f"{code!r} did not answer on 127.0.0.1:{port}: {last}")
    finally:
        p.terminate()
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@pytest.mark.slow
def test_readme_examples_run_in_order_in_one_workspace(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "veribench"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m veribench.cli.main "$@"\n')
    shim.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}",
               PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO)]),
               VERIBENCH_SECRETS_DIR=str(tmp_path / "secrets"), NO_COLOR="1", COLUMNS="200")
    fake = FakeVendors()
    printed = ""
    try:
        for cmd in readme_commands(README.read_text(encoding="utf-8")):
            code = substitute(cmd)
            run_env = env
            code += "".join(f" {extra}" for prefix, extra in SCALE.items() if code.startswith(prefix))
            m = re.search(r"--detector (gptzero)\b", code)
            if m:  # the vendor: the fake on 127.0.0.1, a test key in the documented variable
                code += f" --set base_url={fake.url}"
                run_env = dict(env, VERIBENCH_GPTZERO_API_KEY=VENDOR_KEYS["gptzero"])
            if any(f"veribench {s}" in code for s in SERVE):
                # a writer's front page is the invitation link `write invite` printed; the
                # editors' app sends a browser to its sign-in page
                links = re.findall(r"https?://[^/\s]+(/i/[\w-]+)", printed)
                front = links[0] if "write serve" in code and links else "/"
                _serve(code, work, run_env, front)
                continue
            p = subprocess.run(["bash", "-c", code], cwd=work, env=run_env, capture_output=True, text=True,
                               timeout=300)
            printed += p.stdout
            assert p.returncode == 0, f"README example failed (exit {p.returncode}): {cmd}\n$ {code}\n" \
                                      f"{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    finally:
        fake.close()
    # what the examples say they write is there
    for out in ("report", "results.json", "raw.parquet", "rows.csv", "site/index.html", "leaderboard.json",
                "my-cycle", "out.jsonl", "scores.jsonl", "my-new-cycle"):
        assert (work / out).exists(), out
