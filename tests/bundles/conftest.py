"""Fixtures for the bundle tests: a real detector-run bundle built from the Liang et al. data.

The bundle is built once per session through the CLI, the way a user would: import the
Liang corpus, commit a protocol with an RFC 3161 timestamp from a local authority,
evaluate, amend the protocol after results exist (renaming it and moving a threshold),
evaluate again, publish. Tests copy it before tampering.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.bundles.tsa_server import TSAServer

PROTOCOL_V1 = """# Liang et al. 2023 replication with a calibration split (veribench bundle tests)
[protocol]
name = "liang-bundle-test"
tag = "LIANG-BUNDLE-1"

[selection]
corpora = ["liang2023"]

[split]
rule = "hash"
every = 5
salt = "bundle-test"

[tables]
slices = ["subgroup", "tag:writer"]

[[detectors]]
name = "GPTZero"
rule = { field = "ai_probability", op = ">", threshold = 0.5, source = "Liang et al. 2023" }
[[detectors]]
name = "ZeroGPT"
rule = { fit = "best_balanced_accuracy" }
[[detectors]]
name = "Sapling"
rule = { field = "ai_probability", op = ">", threshold = 0.5, source = "Liang et al. 2023" }
"""


def amended(v1_hash: str) -> str:
    today = datetime.now(UTC).date()
    return (PROTOCOL_V1.replace('name = "liang-bundle-test"', 'name = "liang-bundle-test-renamed"')
            .replace('tag = "LIANG-BUNDLE-1"', 'tag = "LIANG-BUNDLE-2"')
            .replace('name = "Sapling"\nrule = { field = "ai_probability", op = ">", threshold = 0.5',
                     'name = "Sapling"\nrule = { field = "ai_probability", op = ">", threshold = 0.6')
            + f'\n[[amendments]]\ndate = "{today}"\nsupersedes = "{v1_hash}"\n'
              'summary = "Sapling threshold raised to 0.6 after the first results"\n')


#: The path the shared bundle's authority is reached at: it holds an account key.
TSA_PATH_SECRET = "/S3CRETKEY123"


@pytest.fixture(scope="session")
def cli_run():
    """Run the veribench CLI in-process; returns (exit code, combined output)."""
    from typer.testing import CliRunner

    from veribench.cli.main import app

    runner = CliRunner()

    def run(*args):
        res = runner.invoke(app, [str(a) for a in args], catch_exceptions=False)
        return res.exit_code, res.output

    return run


@pytest.fixture(scope="session")
def tsa_authority():
    """A real RFC 3161 authority on 127.0.0.1 for the whole session."""
    with TSAServer() as t:
        yield t


@pytest.fixture(scope="session")
def liang_built(tmp_path_factory, liang_dir, cli_run, tsa_authority):
    """(workspace, bundle folder, root CA PEM path) of the published second run."""
    from veribench.protocol.model import load_protocol

    base = tmp_path_factory.mktemp("liang-bundle")
    ws = base / "ws"
    proto = base / "liang-bundle.toml"
    proto.write_text(PROTOCOL_V1, encoding="utf-8")
    ca = base / "tsa-root.pem"
    ca.write_bytes(tsa_authority.authority.ca_pem)
    tsa = tsa_authority.url + TSA_PATH_SECRET  # an account key in the path: never stored (test_tsa_path_secret)
    outs = base / "cli-output.txt"

    def run(*args):
        code, out = cli_run(*args)
        with outs.open("a", encoding="utf-8") as fh:
            fh.write(out)
        assert code == 0, out

    run("import", "liang2023", liang_dir, "--workspace", ws)
    run("protocol", "commit", proto, "--workspace", ws, "--tsa", tsa, "--tsa-cert", ca)
    run("evaluate", "--workspace", ws, "--protocol", proto, "--quiet")
    v1 = load_protocol(proto).hash
    proto.write_text(amended(v1), encoding="utf-8")
    run("protocol", "commit", proto, "--workspace", ws, "--tsa", tsa, "--tsa-cert", ca)
    run("evaluate", "--workspace", ws, "--protocol", proto, "--quiet")
    bundle = base / "bundle"
    run("publish", "--workspace", ws, "--run", "LIANG-BUNDLE-2", "--out", bundle)
    return ws, bundle, ca


@pytest.fixture()
def bundle(liang_built, tmp_path) -> Path:
    """A writable copy of the published Liang bundle."""
    dst = tmp_path / "bundle"
    shutil.copytree(liang_built[1], dst)
    return dst


@pytest.fixture()
def site(liang_built, tmp_path) -> Path:
    """A folder holding one good detector-run bundle (``run-q4``) and a licence."""
    root = tmp_path / "site"
    root.mkdir()
    shutil.copytree(liang_built[1], root / "run-q4")
    (root / "LICENSE").write_text("CC BY 4.0\n", encoding="utf-8")
    return root
