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
        return cls.from_mapping(doc)

    @classmethod
    def from_mapping(cls, doc: dict[str, Any]) -> Layout:
        period = doc.get("period")
        if not isinstance(period, int) or isinstance(period, bool) or not 1 <= period <= 64:
            raise LayoutError("'period' must be an integer from 1 to 64")
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

    def to_json(self) -> bytes:
        doc = {
            "name": self.name,
            "period": self.period,
            "bonus": [list(row) for row in self.bonus],
            "letters": {letter: [self.points[letter], self.bag[letter]] for letter in LETTERS},
        }
        return json.dumps(doc, indent=2).encode()

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
