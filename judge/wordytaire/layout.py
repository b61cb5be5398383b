"""The board's bonus squares and the tile set (points and bag counts), as versioned data."""

from __future__ import annotations

import hashlib
import json
import string
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

DEFAULT_LAYOUT = "spec-2026"
BONUSES = {".": (1, 1), "L2": (2, 1), "L3": (3, 1), "W2": (1, 2), "W3": (1, 3)}
LETTERS = string.ascii_lowercase

# Bounds that keep every figure a judge run stores inside its SQL column. The bag caps the tiles
# placed (the `tiles` and `legal` columns are 32-bit: 26 x 100,000 < 2**31) and the number of
# legal moves, since each one takes a tile. A move scores at most (word length) x (most points)
# x (most letter bonus), times the word bonuses of the squares it covers; `most_total` bounds
# that product for words up to `WORD_LENGTH_BOUND` letters, and a layout whose bound exceeds the
# 64-bit `score` column is refused.
MOST_LETTER_POINTS = 1_000
MOST_LETTER_TILES = 100_000
MOST_PERIOD = 64
WORD_LENGTH_BOUND = 64  # the shipped word list's longest word has 31 letters
SCORE_COLUMN_MOST = 2**63 - 1


class LayoutError(ValueError):
    """The bytes given are not a valid layout file."""


@dataclass(frozen=True, slots=True)
class Layout:
    """Bonus squares repeating every ``period`` cells (by |x|, |y|), plus letter points and bag.

    The id is the SHA-256 of the canonical JSON of exactly the judging data, so renaming a file
    or editing its description keeps its id, and any change that can alter a score changes it.
    """

    name: str
    period: int
    bonus: tuple[tuple[str, ...], ...]
    points: dict[str, int] = field(compare=False)
    bag: dict[str, int] = field(compare=False)
    id: str

    @classmethod
    def from_json(cls, data: bytes | str) -> Layout:
        try:
            doc = json.loads(data)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise LayoutError(f"not JSON: {exc}") from exc
        if not isinstance(doc, dict):
            raise LayoutError("a layout is a JSON object")
        return cls.from_mapping(doc).within_bounds()

    @classmethod
    def from_mapping(cls, doc: dict[str, Any]) -> Layout:
        period = doc.get("period")
        if (
            not isinstance(period, int)
            or isinstance(period, bool)
            or not 1 <= period <= MOST_PERIOD
        ):
            raise LayoutError(f"'period' must be an integer from 1 to {MOST_PERIOD}")
        rows = doc.get("bonus")
        if not isinstance(rows, list) or len(rows) != period:
            raise LayoutError(f"'bonus' must be a list of {period} rows")
        for number, row in enumerate(rows):
            if not isinstance(row, list) or len(row) != period:
                raise LayoutError(f"'bonus' row {number} must list {period} squares")
            for square in row:
                if not isinstance(square, str) or square not in BONUSES:
                    raise LayoutError(f"'bonus' row {number}: unknown square {square!r}")
        letters = doc.get("letters")
        if not isinstance(letters, dict) or sorted(letters) != list(LETTERS):
            raise LayoutError("'letters' must map each of a-z to [points, tiles in the bag]")
        for letter, pair in letters.items():
            if (
                not isinstance(pair, list)
                or len(pair) != 2
                or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in pair)
            ):
                raise LayoutError(f"'letters' {letter!r} must be [points, tiles], both >= 0")
        canonical = {"period": period, "bonus": rows, "letters": letters}
        name = doc.get("name")
        return cls(
            name=name if isinstance(name, str) else "",
            period=period,
            bonus=tuple(tuple(row) for row in rows),
            points={letter: pair[0] for letter, pair in letters.items()},
            bag={letter: pair[1] for letter, pair in letters.items()},
            id=_digest(canonical),
        )

    def within_bounds(self) -> Layout:
        """This layout, if every figure judged under it fits its result column; LayoutError
        if not. A layout file (`from_json`, what is registered and loaded) must pass;
        `from_mapping` leaves it to the caller, for tests that explore any table."""
        for letter in LETTERS:
            if self.points[letter] > MOST_LETTER_POINTS or self.bag[letter] > MOST_LETTER_TILES:
                raise LayoutError(
                    f"'letters' {letter!r}: at most {MOST_LETTER_POINTS} points and "
                    f"{MOST_LETTER_TILES} tiles a letter"
                )
        if self.most_total(WORD_LENGTH_BOUND) > SCORE_COLUMN_MOST:
            raise LayoutError(
                f"its word bonuses let a total exceed {SCORE_COLUMN_MOST} with words of "
                f"{WORD_LENGTH_BOUND} letters: fewer W2/W3 squares in a row or column"
            )
        return self

    def to_json(self) -> bytes:
        doc = {
            "name": self.name,
            "period": self.period,
            "bonus": [list(row) for row in self.bonus],
            "letters": {letter: [self.points[letter], self.bag[letter]] for letter in LETTERS},
        }
        return json.dumps(doc, indent=2).encode()

    def most_total(self, longest_word: int) -> int:
        """An upper bound on any total judged under this layout with words of at most
        `longest_word` letters.

        Every legal move takes a tile from the bag, so there are at most `tiles` of them. A move
        of L letters sums at most L x (most points) x (most letter bonus), times the product of
        the word bonuses it covers. A run of L cells along a row or column meets the squares of
        one lane of the table (`square` folds x and y by their absolute value), split at 0 into
        at most two runs of consecutive |x|: each of m cells covers at most ceil(m / period)
        periods of that lane, so it meets at most `word_squares x (L // period + 2)` squares
        with a word bonus, each at most the largest word bonus."""
        tiles = sum(self.bag.values())
        letter_sum = (
            longest_word
            * max(self.points.values())
            * max(BONUSES[square][0] for row in self.bonus for square in row)
        )
        lanes = [*self.bonus, *zip(*self.bonus, strict=True)]
        word_squares = max(sum(BONUSES[square][1] > 1 for square in lane) for lane in lanes)
        most_word_bonus = max(BONUSES[square][1] for lane in lanes for square in lane)
        covered = min(longest_word, word_squares * (longest_word // self.period + 2))
        product: int = most_word_bonus**covered
        return tiles * letter_sum * product

    def square(self, x: int, y: int) -> str:
        return self.bonus[abs(y) % self.period][abs(x) % self.period]


def default_layout() -> Layout:
    """The layout shipped with the package: SPEC's reconstruction."""
    return packaged_layout(DEFAULT_LAYOUT)


def packaged_layout(name: str) -> Layout:
    path = resources.files("judge") / "data" / "layouts" / f"{name}.json"
    return Layout.from_json(path.read_bytes())


def _digest(canonical: dict[str, Any]) -> str:
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
