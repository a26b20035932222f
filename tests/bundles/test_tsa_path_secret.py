"""A secret in the time-stamp authority's URL path (issue 24): the shared bundle's protocol
was committed with ``--tsa http://127.0.0.1:PORT/S3CRETKEY123``. The key reached the
authority, and no output, no byte of the workspace (DuckDB file, log, commitments) and no
byte of the published bundle holds it; the bundle still names the authority and verifies."""

from __future__ import annotations

from tests.bundles.conftest import TSA_PATH_SECRET


def test_a_tsa_path_secret_is_in_no_output_workspace_or_bundle(liang_built, tsa_authority, cli_run):
    ws, bundle, ca = liang_built
    key = TSA_PATH_SECRET.strip("/")
    assert "/tsr" + TSA_PATH_SECRET in tsa_authority.seen_paths  # the request went to the full URL
    out = (ws.parent / "cli-output.txt").read_text(encoding="utf-8")
    assert "committed: " in out and key not in out
    for root in (ws, bundle):
        files = [p for p in root.rglob("*") if p.is_file()]
        assert files
        for p in files:
            assert key.encode() not in p.read_bytes(), p
    port = tsa_authority.url.split(":")[2].split("/")[0]
    readme = (bundle / "README.md").read_text(encoding="utf-8")
    assert f"127.0.0.1:{port}" in readme  # the authority is still named
    code, verdict = cli_run("verify", bundle, "--tsa-root", ca)
    assert code == 0 and key not in verdict, verdict
