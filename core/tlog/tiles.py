"""C2SP tlog-tiles: the static files a log is served as (hash tiles of height 8, entry bundles),
their paths, which of them a tree of a given size has, and a reader that trusts a fetched tile
only once it hashes up to a signed root.

The tiling is Go's sumdb tiling at height 8, but the paths differ: C2SP writes `tile/<L>/<N>`
and `tile/entries/<N>` where Go writes `tile/8/<L>/<N>` and `tile/8/data/<N>`, and an entry
bundle holds length-prefixed entries where Go's data tiles hold the records back to back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core.tlog.merkle import (
    HASH_SIZE,
    MAX_TREE_SIZE,
    HashReader,
    ProofError,
    node_hash,
    root,
    split_stored_hash_index,
    stored_hash_index,
    subtree_indexes,
)

TILE_HEIGHT = 8
TILE_WIDTH = 1 << TILE_HEIGHT
MAX_LEVEL = 63
# The last tile of level 0 in the largest tree an int64 size can describe.
MAX_TILE_INDEX = MAX_TREE_SIZE >> TILE_HEIGHT
MAX_ENTRY_SIZE = 0xFFFF  # an entry's length is a big-endian uint16 in a bundle

_PATH = re.compile(
    r"tile/(?P<level>entries|0|[1-9][0-9]?)/(?P<n>(?:x[0-9]{3}/)*[0-9]{3})"
    r"(?:\.p/(?P<width>[1-9][0-9]{0,2}))?"
)
_MAX_PATH_LENGTH = 64  # the longest valid path is under 50 characters


@dataclass(frozen=True)
class Tile:
    """The n'th tile of a level: `width` consecutive hashes, each the root of 256**level
    entries; a full tile has 256 of them, a partial one (the right-most) fewer."""

    level: int
    n: int
    width: int = TILE_WIDTH

    def __post_init__(self) -> None:
        if not 0 <= self.level <= MAX_LEVEL:
            raise ValueError(f"tile level {self.level} is outside 0..{MAX_LEVEL}")
        _check_coordinates(self.n, self.width)

    @property
    def is_partial(self) -> bool:
        return self.width < TILE_WIDTH


@dataclass(frozen=True)
class EntryBundle:
    """The entries whose leaf hashes make up the level-0 tile with the same n and width."""

    n: int
    width: int = TILE_WIDTH

    def __post_init__(self) -> None:
        _check_coordinates(self.n, self.width)

    @property
    def is_partial(self) -> bool:
        return self.width < TILE_WIDTH


def _check_coordinates(n: int, width: int) -> None:
    if not 0 <= n <= MAX_TILE_INDEX:
        raise ValueError(f"tile index {n} is outside 0..{MAX_TILE_INDEX}")
    if not 1 <= width <= TILE_WIDTH:
        raise ValueError(f"tile width {width} is outside 1..{TILE_WIDTH}")


def tile_path(tile: Tile | EntryBundle) -> str:
    """The C2SP path of a hash tile (`tile/1/x001/234.p/7`) or entry bundle (`tile/entries/…`).

    The index is written in groups of three digits, all but the last prefixed with `x`, so no
    directory holds more than 3000 names and no name is both a file and a directory.
    """
    level = str(tile.level) if isinstance(tile, Tile) else "entries"
    groups = [f"{tile.n % 1000:03d}"]
    n = tile.n // 1000
    while n > 0:
        groups.append(f"x{n % 1000:03d}")
        n //= 1000
    partial = f".p/{tile.width}" if tile.is_partial else ""
    return f"tile/{level}/{'/'.join(reversed(groups))}{partial}"


def entries_path(n: int, width: int = TILE_WIDTH) -> str:
    """The C2SP path of the n'th entry bundle."""
    return tile_path(EntryBundle(n, width))


def parse_path(path: str) -> Tile | EntryBundle:
    """The tile or entry bundle a C2SP path names; ValueError unless the path is exactly the
    canonical one `tile_path` writes (no leading zeros, no `x000` group, no `.p/256`)."""
    match = _PATH.fullmatch(path) if len(path) <= _MAX_PATH_LENGTH else None
    if match is None:
        raise ValueError(f"malformed tile path {path[:_MAX_PATH_LENGTH]!r}")
    n = 0
    for group in match["n"].split("/"):
        n = n * 1000 + int(group.removeprefix("x"))
    width = int(match["width"]) if match["width"] else TILE_WIDTH
    try:
        if match["level"] == "entries":
            parsed: Tile | EntryBundle = EntryBundle(n, width)
        else:
            parsed = Tile(int(match["level"]), n, width)
    except ValueError as error:
        raise ValueError(f"malformed tile path {path!r}: {error}") from None
    if tile_path(parsed) != path:
        raise ValueError(f"malformed tile path {path!r}: not in canonical form")
    return parsed


def tiles_for(tree_size: int, since: int = 0) -> list[Tile]:
    """The hash tiles a tree of `tree_size` entries is served as, leaving out those a tree of
    `since` entries already had: the full tiles (immutable) and, at each level, the right-most
    partial tile if that level's width is not a multiple of 256."""
    if not 0 <= since <= tree_size <= MAX_TREE_SIZE:
        raise ValueError(f"no tiles from size {since} to size {tree_size}")
    tiles = []
    level = 0
    while tree_size >> (TILE_HEIGHT * level) > 0:
        new_count = tree_size >> (TILE_HEIGHT * level)  # hashes at this level of the tiling
        old_count = since >> (TILE_HEIGHT * level)
        for n in range(old_count >> TILE_HEIGHT, new_count >> TILE_HEIGHT):
            tiles.append(Tile(level, n))
        width = new_count % TILE_WIDTH
        if width and new_count != old_count:
            tiles.append(Tile(level, new_count >> TILE_HEIGHT, width))
        level += 1
    return tiles


def bundles_for(tree_size: int, since: int = 0) -> list[EntryBundle]:
    """The entry bundles a tree of `tree_size` entries is served as, leaving out those a tree
    of `since` entries already had."""
    return [EntryBundle(t.n, t.width) for t in tiles_for(tree_size, since) if t.level == 0]


def read_tile_data(tile: Tile, read_hashes: HashReader) -> bytes:
    """A tile's contents: its hashes back to back, read from a log's stored hashes."""
    start = tile.n << TILE_HEIGHT
    level = TILE_HEIGHT * tile.level
    indexes = [stored_hash_index(level, start + i) for i in range(tile.width)]
    hashes = read_hashes(indexes)
    if len(hashes) != len(indexes):
        raise ValueError(f"read_hashes({len(indexes)} indexes) returned {len(hashes)} hashes")
    return b"".join(hashes)


def tile_for_index(index: int) -> Tile:
    """The narrowest tile from which the stored hash at `index` can be computed."""
    return _tile_for_index(index)[0]


def _tile_for_index(index: int) -> tuple[Tile, int, int]:
    """The narrowest tile holding what the stored hash at `index` is computed from, and the byte
    range of its data the hash is the subtree hash of."""
    level, n = split_stored_hash_index(index)
    tile_level = level // TILE_HEIGHT
    level -= tile_level * TILE_HEIGHT  # the level inside the tile
    tile_n = n << level >> TILE_HEIGHT
    n -= tile_n << TILE_HEIGHT >> level  # the hash's position at that level inside the tile
    tile = Tile(tile_level, tile_n, (n + 1) << level)
    return tile, (n << level) * HASH_SIZE, ((n + 1) << level) * HASH_SIZE


def hash_from_tile(tile: Tile, data: bytes, index: int) -> bytes:
    """The stored hash at `index`, computed from the data of `tile`, which must be the tile
    `tile_for_index` names for it or a wider version of that tile."""
    if len(data) < tile.width * HASH_SIZE:
        raise ValueError(f"{len(data)} bytes are too few for {tile_path(tile)}")
    narrowest, start, end = _tile_for_index(index)
    if (tile.level, tile.n) != (narrowest.level, narrowest.n) or tile.width < narrowest.width:
        raise ValueError(f"stored hash {index} is in {tile_path(narrowest)}, not {tile_path(tile)}")
    return _tile_hash(data[start:end])


def _tile_hash(data: bytes) -> bytes:
    """The root of the subtree whose 2**k leaves are the hashes in data."""
    return root([data[i : i + HASH_SIZE] for i in range(0, len(data), HASH_SIZE)])


def _tile_parent(tile: Tile, k: int, tree_size: int) -> Tile | None:
    """The tile k levels above `tile` in the tiling of a tree of `tree_size` entries (None if
    the tree has none): full, or as wide as the tree makes it."""
    level = tile.level + k
    n = tile.n >> (k * TILE_HEIGHT)
    count = tree_size >> (level * TILE_HEIGHT)  # hashes at this level of the tiling
    start = n << TILE_HEIGHT
    if start >= count:
        return None
    return Tile(level, n, min(TILE_WIDTH, count - start))


class TileHashReader:
    """A HashReader over a remote log's tiles (Go's TileHashReader): every hash it returns comes
    from a tile that hashes, through its parent tiles, up to the tree root the caller trusts
    (from a signed checkpoint). A tile that does not raises ProofError.

    Every tile fetched is authenticated. Go's (x/mod v0.7.0 and master at fe2ec04) skips the
    parent check of some tiles when several of the root's subtrees share one tile (its loop
    starts at the number of those subtrees, not of their tiles), so its callers must catch a
    forged tile with a proof check; here the hashes returned are safe to use as they are.
    """

    def __init__(self, tree_size: int, tree_root: bytes, fetch_tile: Callable[[Tile], bytes]):
        if not 0 <= tree_size <= MAX_TREE_SIZE:
            raise ValueError(f"tree size {tree_size} is out of range")
        self.tree_size = tree_size
        self.tree_root = tree_root
        self._fetch_tile = fetch_tile
        self._trusted: dict[Tile, bytes] = {}  # tiles already authenticated against the root

    def __call__(self, indexes: Sequence[int]) -> list[bytes]:
        if not indexes:
            return []
        end = stored_hash_index(0, self.tree_size)
        if any(not 0 <= index < end for index in indexes):
            raise ValueError(f"a stored hash asked for is not in the tree of size {self.tree_size}")
        root_indexes = subtree_indexes(0, self.tree_size)
        root_tiles = [self._parent(tile_for_index(index), 0) for index in root_indexes]
        # Parents come before their children, so each is checked before it vouches for a child;
        # a chain of parents stops at a tile planned already or authenticated by an earlier call.
        planned = dict.fromkeys(root_tiles)
        index_tiles = []
        for index in indexes:
            chain = [self._parent(tile_for_index(index), 0)]
            while chain[-1] not in planned and chain[-1] not in self._trusted:
                chain.append(self._parent(chain[0], len(chain)))
            planned.update(dict.fromkeys(reversed(chain)))
            index_tiles.append(chain[0])
        data = {tile: self._fetch(tile) for tile in planned}
        self._authenticate(root_indexes, root_tiles, data)
        self._trusted.update(data)
        return [hash_from_tile(t, data[t], i) for t, i in zip(index_tiles, indexes)]

    def _parent(self, tile: Tile, k: int) -> Tile:
        parent = _tile_parent(tile, k, self.tree_size)
        assert parent is not None, "a stored hash of the tree lies outside the tree's tiles"
        return parent

    def _fetch(self, tile: Tile) -> bytes:
        if tile in self._trusted:
            return self._trusted[tile]
        data = self._fetch_tile(tile)
        if len(data) != tile.width * HASH_SIZE:
            raise ProofError(
                f"{tile_path(tile)} has {len(data)} bytes, not {tile.width * HASH_SIZE}"
            )
        return data

    def _authenticate(
        self, root_indexes: list[int], root_tiles: list[Tile], data: dict[Tile, bytes]
    ) -> None:
        """Raises ProofError unless the tiles hash up to the trusted root: those holding the
        root's subtrees directly, the others through the tile above each. Tiles an earlier call
        authenticated are not checked again."""
        if any(tile not in self._trusted for tile in root_tiles):
            hashes = [hash_from_tile(t, data[t], i) for t, i in zip(root_tiles, root_indexes)]
            computed = hashes[-1]
            for sibling in reversed(hashes[:-1]):
                computed = node_hash(sibling, computed)
            if computed != self.tree_root:
                raise ProofError(
                    f"the tiles do not hash to the root of the tree of size {self.tree_size}"
                )
        for tile, tile_data in data.items():
            if tile in root_tiles or tile in self._trusted:
                continue
            parent = self._parent(tile, 1)
            expected = hash_from_tile(
                parent, data[parent], stored_hash_index(parent.level * TILE_HEIGHT, tile.n)
            )
            if _tile_hash(tile_data) != expected:
                raise ProofError(f"{tile_path(tile)} does not hash into {tile_path(parent)}")


def encode_bundle(entries: Sequence[bytes]) -> bytes:
    """An entry bundle: each entry as a big-endian uint16 length, then its bytes."""
    if len(entries) > TILE_WIDTH:
        raise ValueError(f"a bundle holds at most {TILE_WIDTH} entries, not {len(entries)}")
    parts = []
    for entry in entries:
        if len(entry) > MAX_ENTRY_SIZE:
            raise ValueError(f"an entry of {len(entry)} bytes exceeds {MAX_ENTRY_SIZE}")
        parts += [len(entry).to_bytes(2, "big"), entry]
    return b"".join(parts)


def decode_bundle(data: bytes, count: int | None = None) -> list[bytes]:
    """The entries of a bundle; ValueError if it is truncated, holds more than 256 entries, or
    (when `count` is given) holds a different number of entries."""
    entries: list[bytes] = []
    offset = 0
    while offset < len(data):
        if len(entries) == TILE_WIDTH:
            raise ValueError(f"the bundle holds more than {TILE_WIDTH} entries")
        if offset + 2 > len(data):
            raise ValueError(f"the bundle ends inside the length of entry {len(entries)}")
        size = int.from_bytes(data[offset : offset + 2], "big")
        offset += 2
        if offset + size > len(data):
            raise ValueError(f"the bundle ends inside entry {len(entries)}")
        entries.append(bytes(data[offset : offset + size]))
        offset += size
    if count is not None and len(entries) != count:
        raise ValueError(f"the bundle holds {len(entries)} entries, not {count}")
    return entries
