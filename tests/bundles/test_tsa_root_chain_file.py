"""A ``--tsa-root`` file holding the root and its intermediate (hostile-test class 2 of issue 24).

A PEM file with root + intermediate, kept outside the bundle, used to give FAIL "its signature
does not verify against that root (a forged token ...)": the path ended at the intermediate
(it was in the trust store), which the CMS check cannot use as a root. Now a certificate of
the file issued by another one of it is a link, not an anchor, in either order; a file
holding only an intermediate proves nothing (library: not proven; CLI: refused, one line).
Tokens come from the loopback authority of ``tests/bundles/tsa_server.py`` signing through
an intermediate.
"""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.serialization import Encoding

from tests.bundles.tsa_server import Authority
from veribench.commit import tsa

MESSAGE = b"a commitment record\n"


@pytest.fixture(scope="module")
def chain_tsa() -> Authority:
    return Authority(cn="chain TSA", intermediate=True, embed_chain=True)


@pytest.mark.parametrize("order", ["root-then-intermediate", "intermediate-then-root"])
@pytest.mark.parametrize("carried", [True, False], ids=["carried", "none-carried"])
def test_a_root_and_intermediate_file_anchors_at_the_root(chain_tsa, order, carried):
    certs = (chain_tsa.ca, chain_tsa.intermediate)
    trusted = tsa.TrustedRoots("--tsa-root chain.pem", certs if order.startswith("root") else certs[::-1])
    token = chain_tsa.stamp(MESSAGE)
    a = tsa.anchor_token(token, MESSAGE, [trusted], carried=[chain_tsa.ca, chain_tsa.intermediate] if carried else [])
    assert a.proven and a.trusted_by == "--tsa-root chain.pem", a.to_dict()
    assert a.root == chain_tsa.ca.subject.rfc4514_string() == "O=veribench tests,CN=chain TSA root"


def test_an_intermediate_alone_is_no_anchor_and_no_forgery(chain_tsa):
    """Decision (docs/bundles.md): an intermediate is never an anchor; the date is not proven."""
    token = chain_tsa.stamp(MESSAGE)
    a = tsa.anchor_token(token, MESSAGE, [tsa.TrustedRoots("--tsa-root inter.pem", (chain_tsa.intermediate,))],
                         carried=[chain_tsa.ca, chain_tsa.intermediate])
    assert not a.proven and a.root is None and a.carried_signature is True, a.to_dict()


def test_split_anchors_in_either_order(chain_tsa):
    ca, inter = chain_tsa.ca, chain_tsa.intermediate
    for certs in ((ca, inter), (inter, ca)):
        anchors, links = tsa.split_anchors(certs)
        assert anchors == [ca] and links == [inter]
    assert tsa.split_anchors((inter,)) == ([inter], [])


def test_the_cli_refuses_an_intermediate_only_file(liang_built, cli_run, tmp_path, chain_tsa):
    inter = tmp_path / "inter.pem"
    inter.write_bytes(chain_tsa.intermediate.public_bytes(Encoding.PEM))
    code, out = cli_run("verify", liang_built[1], "--tsa-root", inter)
    assert code == 1 and out.startswith(f"error: {inter}: holds no root certificate"), out
    assert len(out.strip().splitlines()) == 1 and "[ok]" not in out, out
