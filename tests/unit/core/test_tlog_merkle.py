"""The RFC 6962 tree: the published test vectors, then properties over random sizes (proofs made
by the stored-hash code check, and tampered ones do not; the stored-hash tree hash equals the
hash computed straight from the RFC's definition)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.tlog import (
    EMPTY_ROOT,
    InMemoryTree,
    ProofError,
    check_record,
    check_tree,
    leaf_hash,
    node_hash,
    prove_record,
    prove_tree,
    root,
    split_stored_hash_index,
    stored_hash_count,
    stored_hash_index,
    stored_hashes,
    tree_hash,
)

# The RFC 6962 test vectors as transparency-dev/merkle publishes them (testonly/constants.go,
# commit 417fb0c314750d94e53942e9f92e79b6d35915db; the same values as google/certificate-
# transparency's C++ tests): eight leaves, and the root of each prefix of them.
LEAVES = [
    bytes.fromhex(h)
    for h in [
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    ]
]
ROOTS = {
    0: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    1: "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    2: "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    3: "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    4: "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    5: "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    6: "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    7: "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    8: "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
}
# The leaf hashes of LEAVES, from the same file (NodeHashes, level 0).
LEAF_HASHES = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
    "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
    "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
    "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    "4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
    "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
    "46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1",
]
# Inclusion proofs as (leaf index, tree size, audit path): transparency-dev/merkle's
# testdata/inclusion/{0..4}/happy-path.json (same commit; base64 there, hex here).
INCLUSION = [
    (0, 1, []),
    (
        0,
        8,
        [
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        5,
        8,
        [
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (2, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
    (
        1,
        5,
        [
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
]
# Consistency proofs as (old size, new size, proof): testdata/consistency/{0..4}/happy-path.json.
CONSISTENCY = [
    (1, 1, []),
    (
        1,
        8,
        [
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        [
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        5,
        [
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
    (
        6,
        7,
        [
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
]

BIG = 300  # the largest tree the properties draw sizes from


def vector_tree() -> InMemoryTree:
    tree = InMemoryTree()
    for entry in LEAVES:
        tree.append(entry)
    return tree


def hexes(hashes: Sequence[bytes]) -> list[str]:
    return [h.hex() for h in hashes]


# A tree's stored hashes are a prefix of any larger tree's, so one tree serves every size.
BIG_ENTRIES = [f"entry {i}".encode() for i in range(BIG)]
BIG_TREE = InMemoryTree()
for _entry in BIG_ENTRIES:
    BIG_TREE.append(_entry)
BIG_LEAVES = [leaf_hash(entry) for entry in BIG_ENTRIES]


def flip_bit(hashes: list[bytes], which: int, bit: int) -> list[bytes]:
    tampered = list(hashes)
    h = bytearray(tampered[which])
    h[bit // 8] ^= 1 << (bit % 8)
    tampered[which] = bytes(h)
    return tampered


def test_leaf_hashes_match_the_published_ones() -> None:
    assert [leaf_hash(entry).hex() for entry in LEAVES] == LEAF_HASHES


def test_the_root_of_each_prefix_of_the_vector_leaves_is_the_published_one() -> None:
    tree = InMemoryTree()
    assert tree.root().hex() == ROOTS[0]
    for size, entry in enumerate(LEAVES, start=1):
        tree.append(entry)
        assert tree.root().hex() == ROOTS[size]
        assert root([leaf_hash(e) for e in LEAVES[:size]]).hex() == ROOTS[size]


def test_the_empty_tree_hashes_to_sha256_of_nothing_as_rfc_6962_says() -> None:
    assert EMPTY_ROOT.hex() == ROOTS[0]
    assert root([]) == EMPTY_ROOT
    assert tree_hash(0, lambda indexes: []) == EMPTY_ROOT


@pytest.mark.parametrize(("index", "size", "path"), INCLUSION)
def test_inclusion_proofs_equal_the_published_ones_and_check(
    index: int, size: int, path: list[str]
) -> None:
    tree = vector_tree()
    proof = prove_record(size, index, tree.read_hashes)
    assert hexes(proof) == path
    check_record(proof, size, bytes.fromhex(ROOTS[size]), index, leaf_hash(LEAVES[index]))


@pytest.mark.parametrize(("old", "new", "path"), CONSISTENCY)
def test_consistency_proofs_equal_the_published_ones_and_check(
    old: int, new: int, path: list[str]
) -> None:
    tree = vector_tree()
    proof = prove_tree(new, old, tree.read_hashes)
    assert hexes(proof) == path
    check_tree(proof, new, bytes.fromhex(ROOTS[new]), old, bytes.fromhex(ROOTS[old]))


@pytest.mark.parametrize(("index", "size", "path"), [v for v in INCLUSION if v[2]])
def test_a_published_inclusion_proof_with_any_bit_flipped_fails(
    index: int, size: int, path: list[str]
) -> None:
    proof = [bytes.fromhex(h) for h in path]
    for which in range(len(proof)):
        for bit in (0, 7, 100, 255):
            with pytest.raises(ProofError):
                check_record(
                    flip_bit(proof, which, bit),
                    size,
                    bytes.fromhex(ROOTS[size]),
                    index,
                    leaf_hash(LEAVES[index]),
                )


@pytest.mark.parametrize(("old", "new", "path"), [v for v in CONSISTENCY if v[2]])
def test_a_published_consistency_proof_with_any_bit_flipped_fails(
    old: int, new: int, path: list[str]
) -> None:
    proof = [bytes.fromhex(h) for h in path]
    for which in range(len(proof)):
        with pytest.raises(ProofError):
            check_tree(
                flip_bit(proof, which, 3),
                new,
                bytes.fromhex(ROOTS[new]),
                old,
                bytes.fromhex(ROOTS[old]),
            )


def test_a_proof_against_the_wrong_root_size_or_leaf_fails() -> None:
    proof = [bytes.fromhex(h) for h in INCLUSION[2][2]]
    good_root, leaf = bytes.fromhex(ROOTS[8]), leaf_hash(LEAVES[5])
    check_record(proof, 8, good_root, 5, leaf)
    for args in [
        (8, bytes.fromhex(ROOTS[7]), 5, leaf),
        (7, bytes.fromhex(ROOTS[7]), 5, leaf),
        (8, good_root, 4, leaf),
        (8, good_root, 5, leaf_hash(LEAVES[4])),
    ]:
        with pytest.raises(ProofError):
            check_record(proof, *args)


def test_a_proof_with_a_hash_added_or_removed_fails() -> None:
    proof = [bytes.fromhex(h) for h in INCLUSION[1][2]]
    args = (8, bytes.fromhex(ROOTS[8]), 0, leaf_hash(LEAVES[0]))
    for tampered in [proof[:-1], [*proof, proof[0]], [proof[0], *proof], []]:
        with pytest.raises(ProofError):
            check_record(tampered, *args)
    tree_proof = [bytes.fromhex(h) for h in CONSISTENCY[2][2]]
    tree_args = (8, bytes.fromhex(ROOTS[8]), 6, bytes.fromhex(ROOTS[6]))
    for tampered in [tree_proof[:-1], [*tree_proof, tree_proof[0]], []]:
        with pytest.raises(ProofError):
            check_tree(tampered, *tree_args)


def test_a_consistency_proof_for_the_same_size_must_be_empty_and_the_roots_equal() -> None:
    check_tree([], 8, bytes.fromhex(ROOTS[8]), 8, bytes.fromhex(ROOTS[8]))
    with pytest.raises(ProofError):
        check_tree([], 8, bytes.fromhex(ROOTS[8]), 8, bytes.fromhex(ROOTS[7]))
    with pytest.raises(ProofError):
        check_tree([EMPTY_ROOT], 8, bytes.fromhex(ROOTS[8]), 8, bytes.fromhex(ROOTS[8]))


@pytest.mark.parametrize(
    "proof",
    [[b"\x00" * 31], [b"\x00" * 33], [EMPTY_ROOT] * 65],
    ids=["short hash", "long hash", "too many hashes"],
)
def test_a_malformed_proof_is_refused_before_it_is_run(proof: list[bytes]) -> None:
    with pytest.raises(ProofError, match="malformed"):
        check_record(proof, 1 << 62, EMPTY_ROOT, 0, EMPTY_ROOT)


@pytest.mark.parametrize(("t", "n"), [(0, 0), (5, 5), (5, -1), (1 << 63, 0)])
def test_impossible_record_coordinates_fail_both_to_prove_and_to_check(t: int, n: int) -> None:
    with pytest.raises(ValueError):
        prove_record(t, n, BIG_TREE.read_hashes)
    with pytest.raises(ProofError):
        check_record([], t, EMPTY_ROOT, n, EMPTY_ROOT)


@pytest.mark.parametrize(("t", "n"), [(0, 0), (5, 0), (5, 6), (1 << 63, 1)])
def test_impossible_tree_sizes_fail_both_to_prove_and_to_check(t: int, n: int) -> None:
    with pytest.raises(ValueError):
        prove_tree(t, n, BIG_TREE.read_hashes)
    with pytest.raises(ProofError):
        check_tree([], t, EMPTY_ROOT, n, EMPTY_ROOT)


def test_a_hash_reader_that_returns_the_wrong_number_of_hashes_is_an_error() -> None:
    with pytest.raises(ValueError, match="returned 1 hashes"):
        tree_hash(3, lambda indexes: [EMPTY_ROOT])
    with pytest.raises(ValueError, match="returned 0 hashes"):
        stored_hashes(1, EMPTY_ROOT, lambda indexes: [])


def test_the_stored_hash_tree_hash_equals_the_rfc_definition_for_every_size_up_to_300() -> None:
    for size in range(BIG + 1):
        assert tree_hash(size, BIG_TREE.read_hashes) == root(BIG_LEAVES[:size]), size


def test_the_stored_hashes_of_a_tree_are_counted_by_stored_hash_count() -> None:
    tree = InMemoryTree()
    for size in range(1, 600):
        tree.append_leaf_hash(leaf_hash(size.to_bytes(2, "big")))
        assert len(tree.hashes) == stored_hash_count(size)


def test_stored_hashes_of_a_record_are_its_leaf_then_the_subtrees_it_completes() -> None:
    tree = vector_tree()
    # Record 7 completes the subtrees of 2, 4 and 8 leaves.
    hashes = stored_hashes(7, leaf_hash(LEAVES[7]), tree.read_hashes)
    assert hexes(hashes) == [
        LEAF_HASHES[7],
        node_hash(bytes.fromhex(LEAF_HASHES[6]), bytes.fromhex(LEAF_HASHES[7])).hex(),
        root([bytes.fromhex(h) for h in LEAF_HASHES[4:]]).hex(),
        ROOTS[8],
    ]


@given(st.integers(min_value=0, max_value=10**7))
def test_split_stored_hash_index_inverts_stored_hash_index(index: int) -> None:
    level, n = split_stored_hash_index(index)
    assert stored_hash_index(level, n) == index


def test_stored_hash_index_places_hashes_as_go_tlog_does() -> None:
    # Go's layout: record 0's leaf, record 1's leaf, their parent, record 2's leaf, ...
    assert [stored_hash_index(0, n) for n in range(5)] == [0, 1, 3, 4, 7]
    assert [stored_hash_index(1, n) for n in range(3)] == [2, 5, 9]
    assert stored_hash_index(2, 0) == 6
    assert stored_hash_index(3, 0) == 14


@st.composite
def record_in_tree(draw: st.DrawFn) -> tuple[int, int]:
    size = draw(st.integers(min_value=1, max_value=BIG))
    return size, draw(st.integers(min_value=0, max_value=size - 1))


@given(record_in_tree(), st.data())
def test_inclusion_proofs_check_for_any_size_and_tampered_ones_do_not(
    coordinates: tuple[int, int], data: st.DataObject
) -> None:
    size, index = coordinates
    proof = prove_record(size, index, BIG_TREE.read_hashes)
    tree_root = root(BIG_LEAVES[:size])
    check_record(proof, size, tree_root, index, BIG_LEAVES[index])
    if proof:
        which = data.draw(st.integers(0, len(proof) - 1))
        bit = data.draw(st.integers(0, 255))
        with pytest.raises(ProofError):
            check_record(flip_bit(proof, which, bit), size, tree_root, index, BIG_LEAVES[index])
    other = data.draw(st.integers(0, size - 1).filter(lambda i: i != index)) if size > 1 else None
    if other is not None:
        with pytest.raises(ProofError):
            check_record(proof, size, tree_root, other, BIG_LEAVES[index])


@given(record_in_tree(), st.data())
def test_consistency_proofs_check_for_any_sizes_and_tampered_ones_do_not(
    sizes: tuple[int, int], data: st.DataObject
) -> None:
    new, old = sizes[0], sizes[1] + 1
    proof = prove_tree(new, old, BIG_TREE.read_hashes)
    new_root, old_root = root(BIG_LEAVES[:new]), root(BIG_LEAVES[:old])
    check_tree(proof, new, new_root, old, old_root)
    if proof:
        which = data.draw(st.integers(0, len(proof) - 1))
        with pytest.raises(ProofError):
            check_tree(
                flip_bit(proof, which, data.draw(st.integers(0, 255))), new, new_root, old, old_root
            )
    if old < new:
        # A forked history: the same size, another last entry.
        forked = root([*BIG_LEAVES[: old - 1], leaf_hash(b"rewritten")])
        with pytest.raises(ProofError):
            check_tree(proof, new, new_root, old, forked)
