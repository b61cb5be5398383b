"""The Crosstiles board and tile set as versioned data, with a content-derived id.

The shipped file is ``judge/data/crosstiles/board-1.json``. Its id covers only what can change
a verdict (the premium squares and each tile's count and value), so a new name or description
keeps it. Where CROSSTILES.md is silent, a board file must hold 28 to 1,000 tiles (four racks
can always be dealt; no game is absurdly long) and no tile may be worth more than 1,000.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Final

DEFAULT_BOARD = "board-1"
# Final, so that the compiled engine folds them into its code rather than looking them up.
SIZE: Final = 15
SQUARES: Final = 225
CENTER: Final = 112  # 8H: 7 x 15 + 7
TILE_NAMES: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZ?"  # the canonical bag order; a code is an index
TILE_KINDS: Final = 27
BLANK: Final = 26
PREMIUMS = {".": (1, 1), "DL": (2, 1), "TL": (3, 1), "DW": (1, 2), "TW": (1, 3)}
# Every game must be dealt (four racks of seven), and no file may make one absurdly long.
FEWEST_TILES = 4 * 7
MOST_TILES = 1_000
MOST_VALUE = 1_000


class BoardError(ValueError):
    """The bytes given are not a valid Crosstiles board file."""


@dataclass(frozen=True, slots=True)
class Board:
    """Premium squares and the tile set; the id is the SHA-256 of their canonical JSON.

    ``letter_multipliers`` and ``word_multipliers`` are the premiums as flat lists of 225
    squares (index = 15 x (row - 1) + column), which is how the engine reads them.
    """

    name: str
    premiums: tuple[tuple[str, ...], ...]
    counts: tuple[int, ...] = field(compare=False)  # by tile code, TILE_NAMES order
    values: tuple[int, ...] = field(compare=False)
    letter_multipliers: tuple[int, ...] = field(repr=False, compare=False)
    word_multipliers: tuple[int, ...] = field(repr=False, compare=False)
    id: str

    @classmethod
    def from_json(cls, data: bytes | str) -> Board:
        try:
            doc = json.loads(data)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise BoardError(f"not JSON: {exc}") from exc
        if not isinstance(doc, dict):
            raise BoardError("a board file is a JSON object")
        return cls.from_mapping(doc)

    @classmethod
    def from_mapping(cls, doc: dict[str, Any]) -> Board:
        premiums = _premiums(doc.get("premiums"))
        tiles = _tiles(doc.get("tiles"))
        flat = [PREMIUMS[square] for row in premiums for square in row]
        name = doc.get("name")
        canonical = {"premiums": [" ".join(row) for row in premiums], "tiles": tiles}
        return cls(
            name=name if isinstance(name, str) else "",
            premiums=premiums,
            counts=tuple(tiles[tile][0] for tile in TILE_NAMES),
            values=tuple(tiles[tile][1] for tile in TILE_NAMES),
            letter_multipliers=tuple(letter for letter, _ in flat),
            word_multipliers=tuple(word for _, word in flat),
            id=_digest(canonical),
        )

    def premium(self, square: str) -> str:
        """The premium of a square written as on the board (``8H``): TW, DW, TL, DL or '.'."""
        row, column = int(square[:-1]), TILE_NAMES.index(square[-1])
        return self.premiums[row - 1][column]


def default_board() -> Board:
    """The board shipped with the package: the classic layout and tiles of CROSSTILES.md."""
    return packaged_board(DEFAULT_BOARD)


def packaged_board(name: str) -> Board:
    path = resources.files("judge") / "data" / "crosstiles" / f"{name}.json"
    return Board.from_json(path.read_bytes())


def _premiums(rows: object) -> tuple[tuple[str, ...], ...]:
    if not isinstance(rows, list) or len(rows) != SIZE:
        raise BoardError(f"'premiums' must be a list of {SIZE} rows")
    parsed = []
    for number, row in enumerate(rows, 1):
        squares = row.split() if isinstance(row, str) else []
        if len(squares) != SIZE:
            raise BoardError(f"'premiums' row {number} must be a string of {SIZE} squares")
        for square in squares:
            if square not in PREMIUMS:
                raise BoardError(f"'premiums' row {number}: unknown square {square!r}")
        parsed.append(tuple(squares))
    return tuple(parsed)


def _tiles(tiles: object) -> dict[str, list[int]]:
    if not isinstance(tiles, dict) or sorted(tiles) != sorted(TILE_NAMES):
        raise BoardError("'tiles' must map each of A-Z and ? to [count, value]")
    for tile, pair in tiles.items():
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in pair)
            or pair[1] > MOST_VALUE
        ):
            raise BoardError(
                f"'tiles' {tile!r} must be [count, value], both >= 0, value <= {MOST_VALUE}"
            )
    total = sum(pair[0] for pair in tiles.values())
    if not FEWEST_TILES <= total <= MOST_TILES:
        raise BoardError(f"the tiles must number {FEWEST_TILES} to {MOST_TILES}, not {total}")
    return {tile: list(tiles[tile]) for tile in TILE_NAMES}


def _digest(canonical: dict[str, Any]) -> str:
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
