"""C2SP tiles: paths (the spec's examples, round trips, strict refusals), which tiles a tree has,
their contents against the spec's formula, the reader that authenticates fetched tiles, and
entry bundles."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.tlog import (
    EntryBundle,
    InMemoryTree,
    ProofError,
    Tile,
    TileHashReader,
    bundles_for,
    decode_bundle,
    encode_bundle,
    entries_path,
    leaf_hash,
    parse_path,
    prove_record,
    read_tile_data,
    root,
    stored_hash_index,
    tile_path,
    tiles_for,
    tree_hash,
)
from core.tlog.tiles import MAX_TILE_INDEX

SIZE = 65537  # one past three levels' worth of full tiles
ENTRIES = [i.to_bytes(4, "big") for i in range(SIZE)]
LEAVES = [leaf_hash(entry) for entry in ENTRIES]


@pytest.fixture(scope="module")
def tree() -> InMemoryTree:
    """A tree of SIZE entries; its stored hashes serve every smaller size too."""
    built = InMemoryTree()
    for leaf in LEAVES:
        built.append_leaf_hash(leaf)
    return built


@cache
def root_of(size: int) -> bytes:
    """The root of the first `size` entries, from the RFC's definition."""
    return root(LEAVES[:size])


def served(size: int, tree: InMemoryTree) -> dict[Tile, bytes]:
    """The hash tiles a log of `size` entries serves."""
    return {tile: read_tile_data(tile, tree.read_hashes) for tile in tiles_for(size)}


def fetcher(tiles: dict[Tile, bytes], log: list[Tile] | None = None) -> Callable[[Tile], bytes]:
    def fetch(tile: Tile) -> bytes:
        if log is not None:
            log.append(tile)
        return tiles[tile]

    return fetch


@pytest.mark.parametrize(
    ("tile", "path"),
    [
        (Tile(0, 0), "tile/0/000"),
        (Tile(0, 1234067), "tile/0/x001/x234/067"),  # C2SP's example index
        (Tile(1, 67, 13), "tile/1/067.p/13"),
        (Tile(63, 1000), "tile/63/x001/000"),
        (Tile(2, 999, 255), "tile/2/999.p/255"),
        (EntryBundle(0, 1), "tile/entries/000.p/1"),
        (EntryBundle(1234067), "tile/entries/x001/x234/067"),
    ],
)
def test_paths_are_written_as_c2sp_specifies_and_parse_back(
    tile: Tile | EntryBundle, path: str
) -> None:
    assert tile_path(tile) == path
    assert parse_path(path) == tile


def test_entries_path_names_the_bundle() -> None:
    assert entries_path(5) == "tile/entries/005"
    assert entries_path(1000, 7) == "tile/entries/x001/000.p/7"


@given(
    st.one_of(
        st.builds(Tile, st.integers(0, 63), st.integers(0, MAX_TILE_INDEX), st.integers(1, 256)),
        st.builds(EntryBundle, st.integers(0, MAX_TILE_INDEX), st.integers(1, 256)),
    )
)
def test_every_tile_path_parses_back_to_its_tile(tile: Tile | EntryBundle) -> None:
    assert parse_path(tile_path(tile)) == tile


@pytest.mark.parametrize(
    "path",
    [
        "",
        "tile",
        "tile/0",
        "tile/0/",
        "tile/0/0",
        "tile/0/00",
        "tile/0/0000",
        "tile/0/1234",
        "/tile/0/000",
        "tile/0/000/",
        "tile/0//000",
        "tile/0/./000",
        "TILE/0/000",
        "tile/00/000",  # a leading zero in the level
        "tile/01/000",
        "tile/64/000",  # above the highest level
        "tile/-1/000",
        "tile/8/0/000",  # Go's sumdb layout, with the height
        "tile/data/000",  # Go's name for the entries level
        "tile/0/x000/123",  # a needless leading group
        "tile/0/x001",
        "tile/0/x1234/000",
        "tile/0/001/234",  # the leading group without its x
        "tile/0/x001/x234/067/",
        "tile/0/000.p",
        "tile/0/000.p/",
        "tile/0/000.p/0",
        "tile/0/000.p/256",  # a full tile is not partial
        "tile/0/000.p/007",
        "tile/0/000.p/1000",
        "tile/0/000.p/-1",
        "tile/0/000.P/5",
        "tile/0/000.p/5/",
        "tile/entries/000.p/300",
        "tile/entries/",
        "tile/0/000\n",
        "tile/0/000 ",
        "tile/0/٠٠٠",  # Arabic-Indic digits
        "tile/０/000",  # a fullwidth digit
        "tile/0/000?x=1",
        "tile/0/" + "x999/" * 6 + "999",  # beyond any int64 tree
        "tile/0/" + "x000/" * 20 + "000",
    ],
)
def test_malformed_paths_are_refused(path: str) -> None:
    with pytest.raises(ValueError, match="malformed tile path"):
        parse_path(path)


@pytest.mark.parametrize(
    "make",
    [
        lambda: Tile(64, 0),
        lambda: Tile(-1, 0),
        lambda: Tile(0, -1),
        lambda: Tile(0, 0, 0),
        lambda: Tile(0, 0, 257),
        lambda: EntryBundle(MAX_TILE_INDEX + 1),
    ],
)
def test_tiles_outside_the_layout_cannot_be_made(make: Callable[[], object]) -> None:
    with pytest.raises(ValueError):
        make()


def test_a_tree_of_70000_has_the_tiles_c2sp_lists() -> None:
    tiles = tiles_for(70_000)
    assert [t for t in tiles if t.level == 0 and not t.is_partial] == [
        Tile(0, n) for n in range(273)
    ]
    assert [t for t in tiles if t.is_partial or t.level > 0] == [
        Tile(0, 273, 112),
        Tile(1, 0),
        Tile(1, 1, 17),
        Tile(2, 0, 1),
    ]


def test_a_tree_of_256_has_a_full_tile_and_a_partial_one_above_it() -> None:
    assert tiles_for(256) == [Tile(0, 0), Tile(1, 0, 1)]
    assert tiles_for(255) == [Tile(0, 0, 255)]
    assert tiles_for(257) == [Tile(0, 0), Tile(0, 1, 1), Tile(1, 0, 1)]
    assert tiles_for(0) == []


def test_bundles_match_the_level_0_tiles() -> None:
    assert bundles_for(300) == [EntryBundle(0), EntryBundle(1, 44)]
    assert bundles_for(300, since=256) == [EntryBundle(1, 44)]
    assert bundles_for(512, since=300) == [EntryBundle(1)]


@given(st.integers(0, 70_000), st.integers(0, 70_000))
def test_tiles_new_since_a_size_are_those_the_smaller_tree_lacked(a: int, b: int) -> None:
    since, size = min(a, b), max(a, b)
    assert set(tiles_for(size, since)) == set(tiles_for(size)) - set(tiles_for(since))


@pytest.mark.parametrize("size", [1, 7, 255, 256, 257, 300, 511, 512, 513, 65535, 65536, 65537])
def test_tile_data_is_what_c2sp_defines(size: int, tree: InMemoryTree) -> None:
    # The i'th hash of tile n at level l is MTH(D[(n*256 + i) * 256**l : (n*256 + i + 1) * 256**l]).
    for tile, data in served(size, tree).items():
        span = 256**tile.level
        first = tile.n * 256
        expected = b"".join(
            root(LEAVES[(first + i) * span : (first + i + 1) * span]) for i in range(tile.width)
        )
        assert data == expected, tile


@pytest.mark.parametrize("size", [1, 2, 7, 255, 256, 257, 300, 511, 513, 65536, 65537])
def test_the_tile_reader_recomputes_the_root_and_every_stored_hash(
    size: int, tree: InMemoryTree
) -> None:
    tiles = served(size, tree)
    reader = TileHashReader(size, root_of(size), fetcher(tiles))
    assert tree_hash(size, reader) == root_of(size)
    sample = range(0, size, max(1, size // 97))
    for index in sample:
        assert prove_record(size, index, reader) == prove_record(size, index, tree.read_hashes)
    indexes = [stored_hash_index(0, i) for i in sample]
    assert reader(indexes) == tree.read_hashes(indexes)


@pytest.mark.parametrize("size", [2, 255, 256, 300, 513, 65537])
def test_a_forged_hash_in_any_tile_is_caught_when_a_hash_from_it_is_read(
    size: int, tree: InMemoryTree
) -> None:
    honest = served(size, tree)
    # Every tile above level 0, and the first, second and partial ones at level 0.
    for tile in [t for t in honest if t.level > 0 or t.n < 2 or t.is_partial]:
        for position in {0, tile.width // 2, tile.width - 1}:
            forged = dict(honest)
            data = bytearray(forged[tile])
            data[position * 32] ^= 1
            forged[tile] = bytes(data)
            reader = TileHashReader(size, root_of(size), fetcher(forged))
            index = stored_hash_index(tile.level * 8, tile.n * 256 + position)
            with pytest.raises(ProofError):
                reader([index])


def test_a_forged_full_tile_beside_a_shared_partial_tile_is_caught(tree: InMemoryTree) -> None:
    # Go's TileHashReader (x/mod v0.7.0) returns this forged hash unchecked: for a tree of 300,
    # three of the root's subtrees share tile/0/001.p/44, and the index arithmetic that picks the
    # tiles to check against their parents then skips tile/0/000.
    tiles = served(300, tree)
    data = bytearray(tiles[Tile(0, 0)])
    data[5 * 32] ^= 1
    tiles[Tile(0, 0)] = bytes(data)
    reader = TileHashReader(300, root_of(300), fetcher(tiles))
    with pytest.raises(ProofError, match=re.escape("tile/0/000 does not hash into tile/1/000.p/1")):
        reader([stored_hash_index(0, 5)])


def test_tiles_that_do_not_hash_to_the_signed_root_are_refused(tree: InMemoryTree) -> None:
    reader = TileHashReader(300, root_of(299), fetcher(served(300, tree)))
    with pytest.raises(ProofError, match="do not hash to the root"):
        tree_hash(300, reader)


def test_a_tile_of_the_wrong_length_is_refused(tree: InMemoryTree) -> None:
    tiles = served(300, tree)
    tiles[Tile(0, 1, 44)] += bytes(32)
    reader = TileHashReader(300, root_of(300), fetcher(tiles))
    with pytest.raises(ProofError, match=re.escape("tile/0/001.p/44 has 1440 bytes, not 1408")):
        tree_hash(300, reader)


def test_a_hash_outside_the_tree_is_not_read(tree: InMemoryTree) -> None:
    reader = TileHashReader(300, root_of(300), fetcher(served(300, tree)))
    with pytest.raises(ValueError, match="not in the tree"):
        reader([stored_hash_index(0, 300)])


def test_authenticated_tiles_are_fetched_once(tree: InMemoryTree) -> None:
    fetched: list[Tile] = []
    reader = TileHashReader(65537, root_of(SIZE), fetcher(served(65537, tree), fetched))
    for index in (0, 1, 70, 40000, 65535):
        prove_record(65537, index, reader)
    assert len(fetched) == len(set(fetched))


@given(st.lists(st.binary(max_size=300), max_size=256))
def test_bundles_round_trip(entries: list[bytes]) -> None:
    assert decode_bundle(encode_bundle(entries), count=len(entries)) == entries


def test_a_bundle_is_length_prefixed_big_endian() -> None:
    assert encode_bundle([b"ab", b"", b"x" * 258]) == b"\x00\x02ab\x00\x00\x01\x02" + b"x" * 258
    assert decode_bundle(b"") == []


def test_entries_too_long_or_too_many_are_refused() -> None:
    assert decode_bundle(encode_bundle([b"x" * 65535])) == [b"x" * 65535]
    with pytest.raises(ValueError, match="65535"):
        encode_bundle([b"x" * 65536])
    with pytest.raises(ValueError, match="at most 256"):
        encode_bundle([b""] * 257)
    with pytest.raises(ValueError, match="more than 256"):
        decode_bundle(b"\x00\x00" * 257)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\x00", "inside the length of entry 0"),
        (b"\x00\x02a", "inside entry 0"),
        (b"\x00\x01a\x00", "inside the length of entry 1"),
        (b"\x00\x01a\xff\xff" + b"x" * 100, "inside entry 1"),
    ],
)
def test_truncated_bundles_are_refused(data: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        decode_bundle(data)


def test_a_bundle_with_the_wrong_number_of_entries_is_refused() -> None:
    with pytest.raises(ValueError, match="holds 2 entries, not 3"):
        decode_bundle(encode_bundle([b"a", b"b"]), count=3)
