"""The bag of a Crosstiles game: its order follows from the game's seed (CROSSTILES.md)."""

from __future__ import annotations

import hashlib
import struct
from typing import Final

_FIRST_8_BYTES: Final = struct.Struct(">Q").unpack_from  # unsigned, big-endian
# k in decimal ASCII, made once: a game with a few exchanges uses a few hundred numbers.
_DECIMAL: Final = tuple(b"%d" % k for k in range(2048))


class Stream:
    """The random stream r(0), r(1), ... of one seed, used in order and never rewound.

    r(k) is the first 8 bytes, big-endian, of SHA-256(seed + ":" + str(k)).
    """

    def __init__(self, seed: str) -> None:
        # SHA-256 of the seed and the colon, taken once; each number copies it and adds k.
        self._prefix = hashlib.sha256(seed.encode("utf-8") + b":")
        self.used = 0

    def next(self) -> int:
        k = self.used
        self.used = k + 1
        digest = self._prefix.copy()
        digest.update(_DECIMAL[k] if k < len(_DECIMAL) else b"%d" % k)
        first: int = _FIRST_8_BYTES(digest.digest())[0]
        return first


def shuffle(tiles: list[int], stream: Stream) -> None:
    """Fisher-Yates from the end: for i from n-1 down to 1, swap t[i] and t[r mod (i+1)]."""
    for i in range(len(tiles) - 1, 0, -1):
        j = stream.next() % (i + 1)
        tiles[i], tiles[j] = tiles[j], tiles[i]


class Bag:
    """Tiles (codes) drawn from the front; ``left`` is how many remain."""

    def __init__(self, counts: list[int] | tuple[int, ...], seed: str) -> None:
        """The tiles in canonical order (``counts[code]`` of each code), shuffled once."""
        self.stream = Stream(seed)
        tiles: list[int] = []
        for code, count in enumerate(counts):
            tiles.extend([code] * count)
        shuffle(tiles, self.stream)
        self._tiles = tiles
        self._front = 0

    @property
    def left(self) -> int:
        return len(self._tiles) - self._front

    def contents(self) -> list[int]:
        """The tiles still in the bag, front first."""
        return self._tiles[self._front :]

    def draw(self, wanted: int) -> list[int]:
        """Up to ``wanted`` tiles from the front, fewer when the bag runs out."""
        front = self._front
        taken = min(wanted, len(self._tiles) - front)
        self._front = front + taken
        return self._tiles[front : front + taken]

    def exchange(self, aside: list[int]) -> list[int]:
        """Draw as many tiles as are set aside, put those at the back, shuffle the whole bag."""
        drawn = self.draw(len(aside))
        tiles = self._tiles[self._front :]
        tiles.extend(aside)
        shuffle(tiles, self.stream)
        self._tiles = tiles
        self._front = 0
        return drawn
