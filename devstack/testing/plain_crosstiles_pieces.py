"""The pieces of the plain Crosstiles verifier (`devstack/testing/plain_crosstiles.py`), copied
from the spec's text: the tiles, the premium squares, the bag, the forms of a log's fields and
the reading of one move line. Like the verifier, it shares no code with ``judge/crosstiles``.
Standard library only.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

# ---------------------------------------------------------------------------
# The pieces, copied from the spec.
# ---------------------------------------------------------------------------

TILE_TEXT = (
    "A 9 1, B 2 3, C 2 3, D 4 2, E 12 1, F 2 4, G 3 2, H 2 4, I 9 1, J 1 8, K 1 5, L 4 1, "
    "M 2 3, N 6 1, O 8 1, P 2 3, Q 1 10, R 6 1, S 4 1, T 6 1, U 4 1, V 2 4, W 2 4, X 1 8, "
    "Y 2 4, Z 1 10, ? 2 0"
)
TILE_COUNT: dict[str, int] = {}
TILE_VALUE: dict[str, int] = {}
for _entry in TILE_TEXT.split(", "):
    _tile, _count, _value = _entry.split()
    TILE_COUNT[_tile] = int(_count)
    TILE_VALUE[_tile] = int(_value)

PREMIUM_TABLE = """
     A  B  C  D  E  F  G  H  I  J  K  L  M  N  O
 1  TW .  .  DL .  .  .  TW .  .  .  DL .  .  TW
 2  .  DW .  .  .  TL .  .  .  TL .  .  .  DW .
 3  .  .  DW .  .  .  DL .  DL .  .  .  DW .  .
 4  DL .  .  DW .  .  .  DL .  .  .  DW .  .  DL
 5  .  .  .  .  DW .  .  .  .  .  DW .  .  .  .
 6  .  TL .  .  .  TL .  .  .  TL .  .  .  TL .
 7  .  .  DL .  .  .  DL .  DL .  .  .  DL .  .
 8  TW .  .  DL .  .  .  DW .  .  .  DL .  .  TW
 9  .  .  DL .  .  .  DL .  DL .  .  .  DL .  .
10  .  TL .  .  .  TL .  .  .  TL .  .  .  TL .
11  .  .  .  .  DW .  .  .  .  .  DW .  .  .  .
12  DL .  .  DW .  .  .  DL .  .  .  DW .  .  DL
13  .  .  DW .  .  .  DL .  DL .  .  .  DW .  .
14  .  DW .  .  .  TL .  .  .  TL .  .  .  DW .
15  TW .  .  DL .  .  .  TW .  .  .  DL .  .  TW
"""
COLUMNS = "ABCDEFGHIJKLMNO"
PREMIUM: dict[tuple[int, str], str] = {}  # (row, column letter) -> "TW", "DL", ... or "."
for _line in PREMIUM_TABLE.strip().splitlines()[1:]:
    _cells = _line.split()
    for _column, _premium in zip(COLUMNS, _cells[1:], strict=True):
        PREMIUM[int(_cells[0]), _column] = _premium
LETTER_FACTOR = {"DL": 2, "TL": 3}
WORD_FACTOR = {"DW": 2, "TW": 3}

# ---------------------------------------------------------------------------
# The forms of the log's fields.
# ---------------------------------------------------------------------------

NICK = re.compile(rb"[A-Za-z0-9_-]{1,32}")
NICK_FIELD = re.compile(rb">([A-Za-z0-9_-]{1,32}):")
TILES = re.compile(rb"[A-Z?]+")
IN_PARENS = re.compile(rb"\(([A-Z?]+)\)")
EXCHANGE = re.compile(rb"-([A-Z?]+)")
PLUS = re.compile(rb"\+([0-9]{1,9})")
MINUS = re.compile(rb"-([0-9]{1,9})")
TOTAL = re.compile(rb"-?[0-9]{1,9}")
ROW_FIRST = re.compile(rb"([0-9]{1,2})([A-Z])")
COLUMN_FIRST = re.compile(rb"([A-Z])([0-9]{1,2})")
PLAY = re.compile(rb"[A-Za-z.]+")
SEED = re.compile(rb"[\x21-\x7e]{1,128}")
PLAYER_PRAGMA = re.compile(rb"#player([0-9]+)")


Square = tuple[int, int]  # (row 1-15, column 1-15)
NewTile = tuple[Square, str, bool]  # where, the letter in lower case, whether it is a blank


class Failure(Exception):
    """The first failing line: ends the check."""

    def __init__(self, line: int, reason: str, detail: str) -> None:
        super().__init__(reason)
        self.line = line
        self.reason = reason
        self.detail = detail


def random_number(seed: str, k: int) -> int:
    """r(k): the first 8 bytes of SHA-256(seed + ":" + str(k)), big-endian."""
    digest = hashlib.sha256((seed + ":" + str(k)).encode()).digest()
    return int.from_bytes(digest[:8], "big")


class Bag:
    def __init__(self, seed: str) -> None:
        self.seed = seed
        self.k = 0
        self.tiles = [
            tile for tile in "ABCDEFGHIJKLMNOPQRSTUVWXYZ?" for _ in range(TILE_COUNT[tile])
        ]
        self.shuffle()

    def shuffle(self) -> None:
        for i in range(len(self.tiles) - 1, 0, -1):
            j = random_number(self.seed, self.k) % (i + 1)
            self.k += 1
            self.tiles[i], self.tiles[j] = self.tiles[j], self.tiles[i]

    def draw(self, how_many: int) -> list[str]:
        taken = []
        while how_many > 0 and self.tiles:
            taken.append(self.tiles.pop(0))
            how_many -= 1
        return taken


def same_tiles(a: list[str] | str, b: list[str] | str) -> bool:
    return sorted(a) == sorted(b)


def has_tiles(rack: list[str], wanted: list[str]) -> bool:
    left = list(rack)
    for tile in wanted:
        if tile not in left:
            return False
        left.remove(tile)
    return True


# ---------------------------------------------------------------------------
# Reading one move line into a dict (None when it has none of the forms).
# ---------------------------------------------------------------------------


def parse_move(fields: list[bytes]) -> dict[str, Any] | None:
    if len(fields) < 4 or len(fields) > 6:
        return None
    nick = NICK_FIELD.fullmatch(fields[0])
    if nick is None or not TOTAL.fullmatch(fields[-1]):
        return None
    move: dict[str, Any] = {"nick": nick.group(1).decode(), "total": int(fields[-1])}
    if len(fields) == 4:
        tiles, points = IN_PARENS.fullmatch(fields[1]), PLUS.fullmatch(fields[2])
        if tiles is None or points is None:
            return None
        return move | {
            "kind": "gain",
            "tiles": tiles.group(1).decode(),
            "points": int(points.group(1)),
        }
    if not TILES.fullmatch(fields[1]):
        return None
    move["rack"] = fields[1].decode()
    if len(fields) == 6:
        place = ROW_FIRST.fullmatch(fields[2]) or COLUMN_FIRST.fullmatch(fields[2])
        score = PLUS.fullmatch(fields[4])
        if place is None or not PLAY.fullmatch(fields[3]) or score is None:
            return None
        move |= {"kind": "placement", "play": fields[3].decode(), "score": int(score.group(1))}
        if fields[2][:1].isdigit():
            move |= {"row": int(place.group(1)), "column": place.group(2).decode(), "across": True}
        else:
            move |= {"row": int(place.group(2)), "column": place.group(1).decode(), "across": False}
        return move
    third, score = fields[2], PLUS.fullmatch(fields[3])
    penalty = IN_PARENS.fullmatch(third)
    if penalty is not None:
        points = MINUS.fullmatch(fields[3])
        if points is None:
            return None
        return move | {
            "kind": "penalty",
            "tiles": penalty.group(1).decode(),
            "points": int(points.group(1)),
        }
    if score is None:
        return None
    move["score"] = int(score.group(1))
    if third == b"-":
        return move | {"kind": "pass"}
    if third == b"(timeout)":
        return move | {"kind": "timeout"}
    exchange = EXCHANGE.fullmatch(third)
    if exchange is not None:
        return move | {"kind": "exchange", "tiles": exchange.group(1).decode()}
    return None
