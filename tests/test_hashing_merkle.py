"""RFC 6962 Merkle tree hash, audit paths and their verification (veribench.hashing)."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veribench.hashing import merkle_leaf_hash, merkle_proof, merkle_root, merkle_verify

# The Certificate Transparency reference vectors (RFC 6962 test data, as used by
# google/certificate-transparency and its ports): leaves as hex, root for each tree size 0..8.
CT_LEAVES = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"]
CT_ROOTS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
# Audit paths of the same reference data (leaf index 0-based, tree size 8).
CT_PATHS = {
    0: ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"],
    5: ["bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"],
}


def plain_root(leaves: list[bytes]) -> bytes:
    """An independent bottom-up MTH: hash leaves, then pair level by level, promoting an odd
    last node unchanged (equivalent to RFC 6962's largest-power-of-two split)."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    level = [hashlib.sha256(b"\x00" + x).digest() for x in leaves]
    while len(level) > 1:
        nxt = [hashlib.sha256(b"\x01" + level[i] + level[i + 1]).digest() for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


@pytest.mark.parametrize("n", range(9))
def test_root_matches_rfc6962_reference(n):
    assert merkle_root(CT_LEAVES[:n]) == CT_ROOTS[n]


def test_leaf_hash_prefixes_zero_byte():
    assert merkle_leaf_hash("") == CT_ROOTS[1]
    assert merkle_leaf_hash("00") == hashlib.sha256(b"\x00\x00").hexdigest()


@pytest.mark.parametrize("index", sorted(CT_PATHS))
def test_audit_path_matches_reference(index):
    assert merkle_proof(CT_LEAVES, index) == CT_PATHS[index]
    assert merkle_verify(CT_LEAVES[index], index, 8, CT_PATHS[index], CT_ROOTS[8])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=8), min_size=1, max_size=40), st.data())
def test_root_and_paths_agree_with_plain_loop(raw, data):
    leaves = [x.hex() for x in raw]
    root = merkle_root(leaves)
    assert root == plain_root(raw).hex()
    i = data.draw(st.integers(0, len(leaves) - 1))
    proof = merkle_proof(leaves, i)
    assert merkle_verify(leaves[i], i, len(leaves), proof, root)
    # a changed leaf, another index, a changed sibling or another size does not verify
    assert not merkle_verify(leaves[i] + "ff", i, len(leaves), proof, root)
    if len(leaves) > 1:
        j = (i + 1) % len(leaves)
        assert not merkle_verify(leaves[i], j, len(leaves), proof, root) or leaves[i] == leaves[j]
        bad = [*proof]
        bad[0] = ("0" if bad[0][0] != "0" else "1") + bad[0][1:]
        assert not merkle_verify(leaves[i], i, len(leaves), bad, root)
    assert not merkle_verify(leaves[i], i, len(leaves), proof, "00" * 32)


def test_root_changes_with_any_leaf_change():
    leaves = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(5)]
    base = merkle_root(leaves)
    assert merkle_root(leaves[:-1]) != base
    assert merkle_root([*leaves, leaves[0]]) != base
    assert merkle_root([leaves[1], leaves[0], *leaves[2:]]) != base


def test_bad_inputs():
    with pytest.raises(ValueError, match="not a hex string"):
        merkle_root(["zz"])
    with pytest.raises(ValueError, match="outside a tree of 2 leaves"):
        merkle_proof(["00", "01"], 2)
    assert not merkle_verify("00", 0, 1, ["zz"], CT_ROOTS[1])
    assert not merkle_verify("00", 3, 1, [], CT_ROOTS[1])
